//! Blocked lower Cholesky factorisation A = L Lᵀ, most of whose work is a GEMM
//! update of the trailing matrix.

use super::{per_matrix, square};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::kernels::MatRef;
use crate::linalg::triangular::solve_lower;
use crate::parallel;
use crate::storage;
use crate::tensor::Tensor;

/// Diagonal blocks up to this size are factored directly.
const LEAF: usize = 64;

/// Factors the n×n row-major matrix `a` in place (reading its lower triangle), leaving
/// L in the lower triangle and zeros above. On failure returns the pivot index and
/// the value that was not positive.
///
/// Internally it computes the upper factor R = Lᵀ (A = RᵀR), where every row of the
/// matrix is contiguous, by recursive halving: factor the leading block, solve for the
/// block row to its right (a lower-triangular solve with Rᵀ, mostly GEMM), update the
/// trailing block with one GEMM whose inner dimension is half the size (so it runs at
/// GEMM speed rather than streaming memory), recurse. The result is mirrored into the
/// lower triangle at the end.
pub(crate) fn cholesky_in_place<T: Element>(
    a: &mut [T],
    n: usize,
) -> std::result::Result<(), (usize, T)> {
    // The upper triangle of the working copy is Aᵀ's: mirror the lower triangle up.
    mirror_lower_to_upper(a, n);
    factor_upper(a, n, 0, n)?;
    // L = Rᵀ; zeros above the diagonal.
    mirror_upper_to_lower(a, n);
    for i in 0..n {
        a[i * n + i + 1..(i + 1) * n].fill(T::zero());
    }
    Ok(())
}

/// Upper Cholesky of the size-`size` diagonal block at (`at`, `at`) of the n×n `a`.
fn factor_upper<T: Element>(
    a: &mut [T],
    n: usize,
    at: usize,
    size: usize,
) -> std::result::Result<(), (usize, T)> {
    if size <= LEAF {
        return diagonal_block(a, n, at, size);
    }
    let n1 = (size / 2).div_ceil(8) * 8;
    let (c0, w) = (at + n1, size - n1);
    factor_upper(a, n, at, n1)?;
    // R12 = R11⁻ᵀ A12: solve R11ᵀ X = A12 (R11ᵀ is lower; it shares rows with A12, so
    // it is copied out).
    let mut r11t = storage::scratch(n1 * n1, T::zero());
    for i in 0..n1 {
        for j in 0..=i {
            r11t[i * n1 + j] = a[(at + j) * n + at + i];
        }
        r11t[i * n1 + i + 1..(i + 1) * n1].fill(T::zero());
    }
    let view = MatRef {
        data: &r11t,
        offset: 0,
        rows: n1,
        cols: n1,
        row_stride: n1 as isize,
        col_stride: 1,
    };
    solve_in_place(view, a, n, at, c0, n1, w).map_err(|i| (at + i, T::zero()))?;
    // A22 −= R12ᵀ R12 on the upper triangle, by blocks of rows, inner dimension n1.
    let (top, rows) = a.split_at_mut(c0 * n);
    let r12 = &top[at * n..];
    let rows = &mut rows[..w * n];
    let block = w.div_ceil(2 * parallel::threads()).div_ceil(8).max(1) * 8;
    parallel::for_each_chunk_if(rows, n * block, w * w * n1 >= 1 << 22, |start, chunk| {
        let i0 = start / n;
        let m = chunk.len() / n;
        let lhs = MatRef {
            data: r12,
            offset: c0 + i0,
            rows: m,
            cols: n1,
            row_stride: 1,
            col_stride: n as isize,
        };
        let rhs = MatRef {
            data: r12,
            offset: c0 + i0,
            rows: n1,
            cols: w - i0,
            row_stride: n as isize,
            col_stride: 1,
        };
        T::gemm_update(-T::one(), lhs, rhs, T::one(), &mut chunk[c0 + i0..], n);
    });
    factor_upper(a, n, c0, w)
}

/// Solves L X = B for the n1×w block B at rows `r0`.., columns `c0`.. of the n×n
/// `a`, in place; large systems are split into column blocks solved in parallel.
fn solve_in_place<T: Element>(
    l: MatRef<'_, T>,
    a: &mut [T],
    n: usize,
    r0: usize,
    c0: usize,
    n1: usize,
    w: usize,
) -> std::result::Result<(), usize> {
    const COLS: usize = 64;
    if w <= COLS || parallel::threads() == 1 || n1 * n1 * w < 1 << 22 {
        return solve_lower(l, &mut a[r0 * n + c0..], n, n1, w, false);
    }
    let blocks = w.div_ceil(COLS);
    let src = &*a;
    let parts = parallel::map_collect(blocks, n1 * n1 * w, |j| {
        let (j0, cols) = (c0 + j * COLS, COLS.min(w - j * COLS));
        let mut part = Vec::with_capacity(n1 * cols);
        for r in 0..n1 {
            part.extend_from_slice(&src[(r0 + r) * n + j0..(r0 + r) * n + j0 + cols]);
        }
        solve_lower(l, &mut part, cols, n1, cols, false).map(|_| part)
    });
    for (j, part) in parts.into_iter().enumerate() {
        let part = part?;
        let (j0, cols) = (c0 + j * COLS, COLS.min(w - j * COLS));
        for r in 0..n1 {
            a[(r0 + r) * n + j0..(r0 + r) * n + j0 + cols]
                .copy_from_slice(&part[r * cols..(r + 1) * cols]);
        }
    }
    Ok(())
}

/// Tile edge of the triangle mirrors (two 32×32 tiles of f64 fit in L1).
const TILE: usize = 32;

/// a[j][i] = a[i][j] for i > j, tile by tile so that reads and writes stay in cache.
fn mirror_lower_to_upper<T: Element>(a: &mut [T], n: usize) {
    for i0 in (0..n).step_by(TILE) {
        for j0 in (0..=i0).step_by(TILE) {
            for j in j0..(j0 + TILE).min(n) {
                for i in i0.max(j + 1)..(i0 + TILE).min(n) {
                    a[j * n + i] = a[i * n + j];
                }
            }
        }
    }
}

/// a[i][j] = a[j][i] for i > j, tile by tile.
fn mirror_upper_to_lower<T: Element>(a: &mut [T], n: usize) {
    for i0 in (0..n).step_by(TILE) {
        for j0 in (0..=i0).step_by(TILE) {
            for i in i0..(i0 + TILE).min(n) {
                for j in j0..(j0 + TILE).min(i) {
                    a[i * n + j] = a[j * n + i];
                }
            }
        }
    }
}

/// Upper Cholesky of the nb×nb diagonal block at (k, k), by row operations: row j of R
/// is finished, then subtracted from the rows below it.
fn diagonal_block<T: Element>(
    a: &mut [T],
    n: usize,
    k: usize,
    nb: usize,
) -> std::result::Result<(), (usize, T)> {
    for j in k..k + nb {
        let d = a[j * n + j];
        if !(d > T::zero()) {
            return Err((j, d));
        }
        let d = d.sqrt();
        a[j * n + j] = d;
        let inv = T::one() / d;
        for c in j + 1..k + nb {
            a[j * n + c] = a[j * n + c] * inv;
        }
        let (top, bottom) = a.split_at_mut((j + 1) * n);
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

impl<T: Element> Tensor<T> {
    /// The lower Cholesky factor L of each symmetric positive-definite matrix
    /// (A = L Lᵀ; only A's lower triangle is read). A matrix that is not positive
    /// definite fails with the first non-positive pivot and its value.
    pub fn cholesky(&self) -> Result<Tensor<T>> {
        let n = square("cholesky", self)?;
        let mut out = per_matrix(self, n * n * n / 3, |m| {
            let mut a = storage::scratch(m.len(), T::zero());
            a.copy_from_slice(m);
            crate::kernels::simd_scope(|| cholesky_in_place(&mut a, n)).map_err(|(j, d)| {
                Error::numerical(
                    "cholesky",
                    format!("the matrix is not positive definite: pivot {j} is {d}"),
                )
            })?;
            Ok(a)
        })?;
        let data = if out.len() == 1 {
            out.pop().expect("one matrix")
        } else {
            out.concat()
        };
        Tensor::from_vec(data, self.shape())
    }
}
