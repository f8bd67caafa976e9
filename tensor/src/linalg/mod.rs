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
use crate::kernels::{gemm, MatRef};
use crate::parallel;
use crate::tensor::Tensor;

/// Checks that `t` is a batch of square matrices; returns n.
pub(crate) fn square_order(op: &'static str, t: &Tensor<impl Element>) -> Result<usize> {
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
    Ok(s[s.len() - 1])
}

/// Checks that `t` is a batch of square matrices with finite entries; returns n.
pub(crate) fn square(op: &'static str, t: &Tensor<impl Element>) -> Result<usize> {
    let n = square_order(op, t)?;
    finite(op, t)?;
    Ok(n)
}

/// The error of a routine that reads only the lower triangle when a NaN or infinity
/// lies there.
pub(crate) fn lower_not_finite(op: &'static str) -> Error {
    Error::non_finite(op, "the lower triangle has a NaN or infinity")
}

/// As [`square`], for the routines that read only the lower triangle (diagonal
/// included): only it must be finite, what lies above is never read (LAPACK's
/// convention, as the module documentation says). Half the pass of [`square`].
pub(crate) fn square_lower(op: &'static str, t: &Tensor<impl Element>) -> Result<usize> {
    let n = square_order(op, t)?;
    let x = t.contiguous();
    let data = x.as_slice().expect("contiguous");
    let finite = crate::kernels::simd_scope(|| {
        data.chunks_exact((n * n).max(1)).all(|a| {
            (0..n).all(|i| {
                a[i * n..=i * n + i]
                    .iter()
                    .fold(true, |ok, v| ok & v.is_finite())
            })
        })
    });
    if finite {
        Ok(n)
    } else {
        Err(lower_not_finite(op))
    }
}

/// Refuses a result that is not finite although its input was: `what` (a name for
/// the result) overflowed `T`, the input being too large, or too close to
/// singular, for its scale. The routines end with it so that finite input never
/// gives a silent infinity or NaN.
pub(crate) fn finite_result<T: Element>(op: &'static str, what: &str, values: &[T]) -> Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(j) => Err(Error::numerical(
            op,
            format!(
                "{what} overflows {} at element {j}: the input is too large, or too close to \
                 singular, for its scale",
                std::any::type_name::<T>()
            ),
        )),
    }
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

/// Multiply-adds below which a factorisation's product stays on the calling
/// thread. Its products are thin (a panel of 32–64 reflectors against the trailing
/// matrix) and follow one another with serial work between them, so a split costs
/// a wake-up and a move of the block between the cores' caches each time: hence a
/// threshold above the GEMM's own (2²²).
const PAR_WORK: usize = 1 << 26;

/// Multiply-adds from which a product is split inside a team's region
/// ([`parallel::with_team`]), where a parallel loop starts in about a microsecond.
const TEAM_WORK: usize = 1 << 16;

/// Runs the factorisation `f` of one matrix whose smaller side is `order` in a team's
/// region when the matrix is alone (`single`: a batch runs one matrix a thread) and
/// `order` reaches [`TEAM_MIN_ORDER`]; otherwise directly.
pub(crate) fn in_team_if<R: Send>(single: bool, order: usize, f: impl FnOnce() -> R + Send) -> R {
    if single && order >= TEAM_MIN_ORDER {
        parallel::with_team(f)
    } else {
        f()
    }
}

/// The order from which a single matrix's factorisation runs in a team's region.
/// Set by measurement (see `benches/RESULTS.md`): below it, the team's start (a
/// rayon worker's wake-up) and its smaller tasks cost more than they save.
const TEAM_MIN_ORDER: usize = 448;

/// `C ← α·A·B + β·C` for the `a.rows × b.cols` matrix C at the start of `c` (row
/// stride `ldc`), split across the threads from [`PAR_WORK`] multiply-adds; the
/// GEMM computes each element with the same operations whatever the split, so the
/// result does not depend on the thread count.
pub(crate) fn gemm_rows(
    alpha: f64,
    a: MatRef<'_, f64>,
    b: MatRef<'_, f64>,
    beta: f64,
    c: &mut [f64],
    ldc: usize,
) {
    gemm::gemm(
        alpha,
        &a.transposed_operand(),
        &b.operand(),
        beta,
        c,
        ldc,
        a.rows * a.cols * b.cols
            >= if parallel::in_team() {
                TEAM_WORK
            } else {
                PAR_WORK
            },
    );
}
