//! Strided `f32`/`f64` tensors for the engine: shared storage with zero-copy views,
//! NumPy broadcasting, element-wise and reduction kernels, matrix products, and a
//! seeded, splittable RNG.
//!
//! Contracts (see `docs/DESIGN.md` in the repository): every operation whose
//! validity depends on the caller's values returns [`Result`] with an error naming
//! the operation and the values; results are bitwise identical whatever the number
//! of threads; `unsafe` lives only in the private `kernels` module.
//!
//! ```
//! use tensor::Tensor;
//! # fn main() -> tensor::Result<()> {
//! let a = Tensor::<f64>::from_vec(vec![2.0, 1.0, 1.0, 3.0], &[2, 2])?;
//! let gram = a.t()?.matmul(&a)?; // AᵀA through a zero-copy transpose
//! assert_eq!(gram.to_vec(), vec![5.0, 5.0, 5.0, 10.0]);
//! // Solve (AᵀA) x = e₁ by Cholesky and check the residual.
//! let e1 = Tensor::from_vec(vec![1.0, 0.0], &[2, 1])?;
//! let x = gram.solve_spd(&e1)?;
//! let r = gram.matmul(&x)?.sub(&e1)?.to_vec();
//! assert!(r.iter().all(|v| v.abs() < 1e-12));
//! // Shapes that do not fit are an error naming them, never a panic.
//! let e = a.matmul(&Tensor::zeros(&[3, 1])?).unwrap_err();
//! assert!(e.to_string().contains("matmul"));
//! # Ok(())
//! # }
//! ```

#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(feature = "proptest")]
pub mod differential;
mod dims;
pub mod element;
pub mod error;
pub mod fft;
// The one module allowed `unsafe` (the workspace denies it everywhere else). Its
// API is the engine's own, not a stable one: public only with the `internals`
// feature (the benchmarks and the GEMM's integration tests); what other crates
// need is in `fused` and `platform`.
#[cfg(feature = "internals")]
#[allow(unsafe_code)]
pub mod kernels;
#[cfg(not(feature = "internals"))]
#[allow(unsafe_code)]
pub(crate) mod kernels;
pub mod layout;
pub mod limits;
pub mod linalg;
pub mod nan_semantics;
pub mod ops;
pub mod parallel;
#[cfg(feature = "proptest")]
pub mod reference;
pub mod rng;
pub mod special;
pub mod storage;
#[cfg(feature = "proptest")]
pub mod strategies;
mod tensor;
mod threads;
mod view;

/// Fused update kernels that other crates drive: Adam's one-pass update of a
/// parameter and its two moments (`optim::Adam`), and its check for a step that
/// would overflow, made before the moments are rewritten in place.
pub mod fused {
    pub use crate::kernels::{adam_first_non_finite, adam_update, AdamSlices, AdamStep};
}

/// Which kernels run on this machine: the SIMD path chosen at run time, the CPU
/// features seen, the switch that forces the portable path and the one that keeps
/// AVX-512 off (for manifests, audit traces and tests of each path).
pub mod platform {
    pub use crate::kernels::{
        avx512_disabled, cpu_features, kernel_path, portable_forced, NO_AVX512_ENV, PORTABLE_ENV,
    };
}

pub use element::{DType, Element};
pub use error::{Error, ErrorKind, Result};
pub use layout::Layout;
pub use ops::conv::Conv2dSpec;
pub use rng::Rng;
pub use tensor::Tensor;
