//! Dense linear algebra in pure Rust: blocked Cholesky (the bulk in GEMM), blocked
//! triangular solves, SPD solve, inverse and log-determinant, LU with partial
//! pivoting for general solve, inverse and (sign, log|det|), the symmetric
//! eigendecomposition and functions of SPD matrices through it, Householder QR and
//! least squares. Every operation works on the last two axes and is batched over the
//! leading ones (batch entries in parallel).
//!
//! Symmetric inputs: `cholesky`, the SPD routines and `eigh` read only the lower
//! triangle (diagonal included); the strict upper triangle is ignored.
//!
//! Precision: Cholesky and triangular solves run in the element type; `eigh` and `qr`
//! compute in f64 whatever the input type (an f32 input is widened and the results
//! rounded back).

mod cholesky;
mod eigh;
mod lu;
mod qr;
mod reflector;
mod spd;
mod triangular;

pub use triangular::Triangular;

use crate::element::Element;
use crate::error::{fmt_shape, Error, Result};
use crate::kernels::{Kernels, MatRef};
use crate::parallel;
use crate::tensor::Tensor;

/// Checks that `t` is a batch of square matrices with finite entries; returns n.
pub(crate) fn square(op: &'static str, t: &Tensor<impl Element>) -> Result<usize> {
    let s = t.shape();
    if s.len() < 2 || s[s.len() - 1] != s[s.len() - 2] {
        return Err(Error::shape(
            op,
            format!(
                "needs square matrices in the last two axes, got {}",
                fmt_shape(s)
            ),
        ));
    }
    finite(op, t)?;
    Ok(s[s.len() - 1])
}

/// Checks that every entry is finite.
pub(crate) fn finite(op: &'static str, t: &Tensor<impl Element>) -> Result<()> {
    if t.all_finite() {
        Ok(())
    } else {
        Err(Error::non_finite(op, "the input has a NaN or infinity"))
    }
}

/// Applies `f` to every `rows × cols` matrix of a contiguous batch (in parallel),
/// returning the results in batch order, or the first error in batch order.
pub(crate) fn per_matrix<T: Element, R: Send>(
    t: &Tensor<T>,
    work: usize,
    f: impl Fn(&[T]) -> Result<R> + Sync + Send,
) -> Result<Vec<R>> {
    let s = t.shape();
    let (r, c) = (s[s.len() - 2], s[s.len() - 1]);
    let x = t.contiguous();
    let data = x.as_slice().expect("contiguous");
    let count: usize = s[..s.len() - 2].iter().product();
    let size = r * c;
    parallel::map_collect(count, count * work, |i| f(&data[i * size..(i + 1) * size]))
        .into_iter()
        .collect()
}

/// Products below this many multiply-adds stay on one thread (waking a worker costs
/// about the time of a 2²²-multiply-add product here).
const PAR_GEMM_WORK: usize = 1 << 22;

/// `C ← α·A·B + β·C` for the `a.rows × b.cols` matrix C at the start of `c` (row
/// stride `ldc`), split into blocks of 8-aligned rows across the threads when large.
/// matrixmultiply computes each element with the same operations whatever block it
/// is in, so the result does not depend on the thread count.
pub(crate) fn gemm_rows(
    alpha: f64,
    a: MatRef<'_, f64>,
    b: MatRef<'_, f64>,
    beta: f64,
    c: &mut [f64],
    ldc: usize,
) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    if m == 0 || n == 0 {
        return;
    }
    let c = &mut c[..(m - 1) * ldc + n];
    let threads = parallel::threads();
    let rows = m.div_ceil(2 * threads).div_ceil(8) * 8;
    let parallel = m * n * k >= PAR_GEMM_WORK && m > rows;
    parallel::for_each_chunk_if(c, rows * ldc, parallel, |start, chunk| {
        let r0 = start / ldc;
        let sub = MatRef {
            offset: (a.offset as isize + r0 as isize * a.row_stride) as usize,
            rows: (chunk.len() + ldc - n) / ldc,
            ..a
        };
        f64::gemm_update(alpha, sub, b, beta, chunk, ldc);
    });
}
