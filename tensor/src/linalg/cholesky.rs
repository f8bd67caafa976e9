//! Blocked Cholesky factorisation A = L Lᵀ, right-looking: most of its work is GEMM
//! updates of the trailing matrix, the rest triangular solves that run many
//! right-hand sides to a vector (`kernels::solve_lower_columns`).
//!
//! It works on the upper factor R = Lᵀ of a row-major copy of Aᵀ (made by the
//! transposed copy that reads A's lower triangle), where every operand — the
//! panel to solve, both operands of each update — is a block of contiguous rows, so
//! no step transposes anything; L is Rᵀ, returned as a transposed view.

use super::{per_matrix, square};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::kernels::gemm::{self, pack_transposed, Strided};
use crate::kernels::solve_lower_columns;
use crate::layout::Layout;
use crate::parallel;
use crate::storage;
use crate::tensor::Tensor;

/// Rows per block step (the depth of the trailing updates; at most
/// `kernels::MAX_ORDER`).
const NB: usize = 64;
/// Diagonal blocks up to this order are factored by scalar row operations.
const LEAF: usize = 16;
/// Multiply-adds of a step's trailing update below which it stays on one thread.
const PAR_UPDATE: usize = 1 << 20;

/// Factors in place the n×n row-major `r` (row stride `ld`), whose upper triangle
/// holds A's (A is symmetric: the transposed copy of its lower triangle), into R
/// (A = RᵀR) in the upper triangle; what lies below the diagonal afterwards is
/// meaningless. On failure returns the pivot index and the value that was not
/// positive.
///
/// Block step k, with the rows `k0..k0 + nb` of the block:
/// 1. the diagonal block is factored (recursively: halves, a panel solve and a
///    GEMM update between them, scalar leaves);
/// 2. the block's rows to the right of it solve `R₁₁ᵀ R₁₂ = A₁₂`, the columns in
///    parallel;
/// 3. the trailing upper triangle takes `A₂₂ −= R₁₂ᵀ R₁₂`, one GEMM per block of
///    rows (columns from its diagonal block on), the blocks in parallel.
///
/// Every element is computed by the same operations whatever the thread count: the
/// blocks and columns only decide who computes what.
fn factor_upper<T: Element>(
    r: &mut [T],
    n: usize,
    ld: usize,
) -> std::result::Result<(), (usize, T)> {
    let mut k0 = 0;
    while k0 < n {
        let nb = NB.min(n - k0);
        factor_diagonal(r, ld, k0, nb)?;
        let r1 = k0 + nb;
        let right = n - r1;
        if right > 0 {
            let par = right * right * nb >= PAR_UPDATE;
            let l11 = lower_copy(r, ld, k0, nb);
            solve_lower_columns(&l11, nb, nb, &mut r[k0 * ld + r1..], ld, right, par);
            let (top, rest) = r.split_at_mut(r1 * ld);
            let r12 = |from: usize, width: usize| Strided {
                data: &*top,
                offset: k0 * ld + r1 + from,
                depth: nb,
                width,
                depth_stride: ld as isize,
                width_stride: 1,
            };
            parallel::for_each_chunk_if(&mut rest[..right * ld], NB * ld, par, |start, rows| {
                let (i0, m) = (start / ld, rows.len() / ld);
                // Rows i0..i0+m of the trailing matrix, columns i0.. (from their
                // diagonal block on, whose lower part is never read).
                let c = &mut rows[r1 + i0..];
                gemm::gemm(
                    -T::one(),
                    &r12(i0, m),
                    &r12(i0, right - i0),
                    T::one(),
                    c,
                    ld,
                    false,
                );
            });
        }
        k0 = r1;
    }
    Ok(())
}

/// R₁₁ᵀ of the `nb`-row diagonal block at `k0`, as a compact lower-triangular copy
/// (the triangular solves read it by rows).
fn lower_copy<T: Element>(r: &[T], n: usize, k0: usize, nb: usize) -> Vec<T> {
    let mut l = vec![T::zero(); nb * nb];
    for q in 0..nb {
        for j in q..nb {
            l[j * nb + q] = r[(k0 + q) * n + k0 + j];
        }
    }
    l
}

/// Upper Cholesky of the size-`size` diagonal block at (`at`, `at`) of the n×n `r`
/// (its upper triangle; the lower part of the block may be overwritten): halves
/// until [`LEAF`], the second half updated by the first's panel.
fn factor_diagonal<T: Element>(
    r: &mut [T],
    n: usize,
    at: usize,
    size: usize,
) -> std::result::Result<(), (usize, T)> {
    if size <= LEAF {
        return factor_leaf(r, n, at, size);
    }
    let h = (size / 2).div_ceil(8) * 8;
    let w = size - h;
    factor_diagonal(r, n, at, h)?;
    let l11 = lower_copy(r, n, at, h);
    solve_lower_columns(&l11, h, h, &mut r[at * n + at + h..], n, w, false);
    let (top, rest) = r.split_at_mut((at + h) * n);
    let r12 = Strided {
        data: &*top,
        offset: at * n + at + h,
        depth: h,
        width: w,
        depth_stride: n as isize,
        width_stride: 1,
    };
    gemm::gemm(
        -T::one(),
        &r12,
        &r12,
        T::one(),
        &mut rest[at + h..],
        n,
        false,
    );
    factor_diagonal(r, n, at + h, w)
}

/// Upper Cholesky of a small diagonal block by row operations: row j of R is
/// finished, then subtracted from the rows below it.
fn factor_leaf<T: Element>(
    r: &mut [T],
    n: usize,
    k: usize,
    nb: usize,
) -> std::result::Result<(), (usize, T)> {
    for j in k..k + nb {
        let d = r[j * n + j];
        if !(d > T::zero()) {
            return Err((j, d));
        }
        let d = d.sqrt();
        r[j * n + j] = d;
        for c in j + 1..k + nb {
            r[j * n + c] = r[j * n + c] / d;
        }
        let (top, bottom) = r.split_at_mut((j + 1) * n);
        let rj = &top[j * n..];
        for i in j + 1..k + nb {
            let f = rj[i];
            let row = &mut bottom[(i - j - 1) * n..];
            for c in i..k + nb {
                row[c] = row[c] - f * rj[c];
            }
        }
    }
    Ok(())
}

/// A row stride of at least `n` that is an odd multiple of 64 bytes' worth of
/// `f64` plus one line: consecutive rows then fall in different L1 sets.
fn row_stride(n: usize) -> usize {
    n.div_ceil(8) * 8 + 8
}

impl<T: Element> Tensor<T> {
    /// The lower Cholesky factor L of each symmetric positive-definite matrix
    /// (A = L Lᵀ; only A's lower triangle is read). A matrix that is not positive
    /// definite fails with the first non-positive pivot and its value.
    ///
    /// L comes back as a transposed view of the factorisation's own buffer (its
    /// columns contiguous, as LAPACK's and PyTorch's are), which costs no copy;
    /// `contiguous()` gives it row by row.
    pub fn cholesky(&self) -> Result<Tensor<T>> {
        let n = square("cholesky", self)?;
        let ld = row_stride(n);
        let factors = per_matrix(self, n * n * n / 3, |a| {
            // Aᵀ: its upper triangle is A's lower one. Its rows are padded so that
            // their stride is not a multiple of 4 KiB, at which the rows a solve or
            // a transposition walks together would all fall in one set of the L1
            // cache (measured: a 512 × 512 f64 factorisation took 2.6× as long).
            let mut r = storage::scratch(n * ld, T::zero());
            pack_transposed(a, 0, n as isize, n, n, &mut r, ld);
            factor_upper(&mut r, n, ld).map_err(|(j, d)| {
                Error::numerical(
                    "cholesky",
                    format!("the matrix is not positive definite: pivot {j} is {d}"),
                )
            })?;
            // Zeros below R's diagonal (above L's), and in the padding.
            for (i, row) in r.chunks_exact_mut(ld).enumerate() {
                row[..i].fill(T::zero());
                row[n..].fill(T::zero());
            }
            Ok(r)
        })?;
        let count = factors.len();
        let data = if count == 1 {
            factors.into_iter().next().expect("one matrix")
        } else {
            factors.concat()
        };
        let stored = Tensor::from_contiguous(data, &[count, n, ld]);
        let batch = &self.shape()[..self.ndim() - 2];
        let mut shape = batch.to_vec();
        shape.extend([n, n]);
        let mut strides = crate::layout::contiguous_strides(batch)
            .into_iter()
            .map(|s| s * (n * ld) as isize)
            .collect::<Vec<_>>();
        strides.extend([1, ld as isize]);
        Ok(stored.with_layout(Layout::from_parts(shape, strides, 0)))
    }
}
