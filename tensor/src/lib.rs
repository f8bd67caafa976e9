//! Strided `f32`/`f64` tensors for the engine: shared storage with zero-copy views,
//! NumPy broadcasting, element-wise and reduction kernels, matrix products, and a
//! seeded, splittable RNG.
//!
//! Contracts (see `DESIGN.md`): every operation whose validity depends on the
//! caller's values returns [`Result`] with an error naming the operation and the
//! values; results are bitwise identical whatever the number of threads; `unsafe`
//! lives only in [`kernels`].

#![deny(unsafe_op_in_unsafe_fn)]

pub mod element;
pub mod error;
pub mod fft;
// The one module allowed `unsafe` (the workspace denies it everywhere else).
#[allow(unsafe_code)]
pub mod kernels;
pub mod layout;
pub mod limits;
pub mod linalg;
pub mod ops;
pub mod parallel;
pub mod rng;
pub mod special;
pub mod storage;
#[cfg(feature = "proptest")]
pub mod strategies;
mod tensor;
mod view;

pub use element::{DType, Element};
pub use error::{Error, Result};
pub use layout::Layout;
pub use ops::conv::Conv2dSpec;
pub use rng::Rng;
pub use tensor::Tensor;
