//! Recursive blocked Cholesky factorisation A = L Lᵀ: the matrix is halved, the
//! first half factored, the panel to its right solved, the second half's trailing
//! matrix updated, the second half factored. Most of the work is then GEMM updates
//! of depth n/2, n/4, … (the deeper the update, the closer the GEMM runs to its
//! peak), the rest triangular solves that run many right-hand sides to a vector
//! (`kernels::solve_lower_columns`) and, for blocks of at most [`LEAF`] rows,
//! scalar row operations.
//!
//! It works on the upper factor R = Lᵀ of a row-major copy of Aᵀ (made by the
//! transposed copy that reads A's lower triangle), where every operand — the
//! panel to solve, both operands of each update — is a block of contiguous rows, so
//! no step transposes anything; L is Rᵀ, returned as a transposed view.
//!
//! A large single matrix is factored in a team's region
//! ([`parallel::with_team`](crate::parallel::with_team)): the other threads stay
//! awake between the steps, so solves and updates split from [`TEAM_WORK`]
//! multiply-adds rather than from [`PAR_WORK`], where waking rayon's workers for
//! each would cost more than it saves.

use super::{lower_not_finite, per_matrix, square_order};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::kernels::gemm::{self, pack_transposed, Strided};
use crate::kernels::{solve_lower_columns, MAX_ORDER};
use crate::layout::Layout;
use crate::parallel;
use crate::storage;
use crate::tensor::Tensor;
use std::sync::atomic::{AtomicBool, Ordering};

/// Rows per block of a trailing update split into blocks of rows.
const NB: usize = 64;
/// Rows of A per tile of the transposed copy ([`transpose_lower`]): the tile's
/// 256 lines of A and the band's 256 columns (16 KiB each) stay in the L1 cache.
const TILE_WIDTH: usize = 256;
/// Rows of R per task of the final pass that zeroes what lies below its diagonal.
const ZERO_ROWS: usize = 32;
/// Diagonal blocks up to this order are factored by scalar row operations.
const LEAF: usize = 16;
/// Multiply-adds of an update or solve below which it stays on one thread, outside a
/// team's region (a single matrix of order 448 or more runs in one). Set by
/// measurement (see `benches/RESULTS.md`): below this, the time a second core saves
/// is less than what the parallel region costs — waking the workers, moving the
/// block between the cores' caches, and the idle workers' spinning against the
/// calling thread's serial work that follows. At this threshold only the top update
/// of n ≥ 2048 is split.
const PAR_WORK: usize = 1 << 27;

/// Multiply-adds of an update or solve from which it is split inside a team's
/// region ([`parallel::with_team`]), where the other threads stay awake between
/// steps and a split costs about a microsecond to start.
const TEAM_WORK: usize = 1 << 16;

/// Whether an update or solve of `work` multiply-adds is split across the threads.
fn split(work: usize) -> bool {
    work >= if parallel::in_team() {
        TEAM_WORK
    } else {
        PAR_WORK
    }
}

/// A block of rows of R as a GEMM operand: rows `row..row + depth`, columns
/// `col..col + width` of the row-major `r` with row stride `ld`.
fn rows_of<T: Element>(
    r: &[T],
    ld: usize,
    row: usize,
    depth: usize,
    col: usize,
    width: usize,
) -> Strided<'_, T> {
    Strided {
        data: r,
        offset: row * ld + col,
        depth,
        width,
        depth_stride: ld as isize,
        width_stride: 1,
    }
}

/// Upper Cholesky in place of the size-`size` diagonal block at (`at`, `at`) of the
/// row-major `r` (row stride `ld`), whose upper triangle holds A's (A is
/// symmetric: the transposed copy of its lower triangle); what lies below the
/// diagonal afterwards is meaningless. On failure returns the pivot index and the
/// value that was not positive (the pivots are finished in order, so it is the
/// first).
///
/// With the block split after `h` rows (R₁₁, R₁₂ above, R₂₂ below):
/// 1. R₁₁ is factored (recursively);
/// 2. the rows of R₁₂ solve `R₁₁ᵀ R₁₂ = A₁₂` ([`solve_panel`]);
/// 3. the upper triangle of A₂₂ takes `A₂₂ −= R₁₂ᵀ R₁₂` ([`update_trailing`]);
/// 4. R₂₂ is factored (recursively).
///
/// Every element is computed by the same operations whatever the thread count: the
/// blocks and columns only decide who computes what.
fn factor<T: Element>(
    r: &mut [T],
    ld: usize,
    at: usize,
    size: usize,
) -> std::result::Result<(), (usize, T)> {
    if size <= LEAF {
        return factor_leaf(r, ld, at, size);
    }
    // Halves on whole blocks of 64 rows for the large ones (so that the updates
    // below work on aligned blocks), of 8 below.
    let align = if size > 2 * NB { NB } else { 8 };
    let h = (size / 2).div_ceil(align) * align;
    let w = size - h;
    factor(r, ld, at, h)?;
    solve_panel(r, ld, at, h, at + h, w);
    update_trailing(r, ld, at, h, at + h, w);
    factor(r, ld, at + h, w)
}

/// Solves `R₁₁ᵀ X = B` in place, with R₁₁ the finished upper factor of order `h` at
/// (`at`, `at`) and B the `h × w` block of rows `at..at + h`, columns
/// `col..col + w`: directly against blocks of at most [`MAX_ORDER`] rows, by
/// halves above that (the second half's rows updated by a GEMM with the first's
/// solution).
fn solve_panel<T: Element>(r: &mut [T], ld: usize, at: usize, h: usize, col: usize, w: usize) {
    let par = split(h * h * w);
    if h <= MAX_ORDER {
        let l11 = lower_copy(r, ld, at, h);
        solve_lower_columns(&l11, h, h, &mut r[at * ld + col..], ld, w, par);
        return;
    }
    let h1 = (h / 2).div_ceil(8) * 8;
    let h2 = h - h1;
    solve_panel(r, ld, at, h1, col, w);
    let (top, rest) = r.split_at_mut((at + h1) * ld);
    // Rows at + h1.. of B −= (R₁₁'s rows at..at + h1, columns at + h1..at + h)ᵀ · X₁.
    gemm::gemm(
        -T::one(),
        &rows_of(top, ld, at, h1, at + h1, h2),
        &rows_of(top, ld, at, h1, col, w),
        T::one(),
        &mut rest[col..],
        ld,
        split(h1 * h2 * w),
    );
    solve_panel(r, ld, at + h1, h2, col, w);
}

/// `A₂₂ −= R₁₂ᵀ R₁₂` on the upper triangle of the order-`w` block at (`col`, `col`),
/// with R₁₂ the `h × w` block of rows `at..at + h`, columns `col..col + w`: one
/// GEMM over the tiles that reach the upper triangle ([`gemm::gemm_upper`]; what
/// it writes below the diagonal is never read), its operands packed once. (One
/// GEMM per block of 64 rows, as before, packed the columns of R₁₂ again for each
/// block: 4.5 times over at n = 512, a tenth of the factorisation's time.)
fn update_trailing<T: Element>(r: &mut [T], ld: usize, at: usize, h: usize, col: usize, w: usize) {
    let (top, rest) = r.split_at_mut(col * ld);
    let panel = rows_of(top, ld, at, h, col, w);
    let par = split(h * w * w / 2);
    gemm::gemm_upper(
        -T::one(),
        &panel,
        &panel,
        T::one(),
        &mut rest[col..],
        ld,
        par,
    );
}

/// R₁₁ᵀ of the `nb`-row diagonal block at `k0`, as a compact lower-triangular copy
/// (the triangular solves read it by rows).
fn lower_copy<T: Element>(r: &[T], ld: usize, k0: usize, nb: usize) -> Vec<T> {
    let mut l = vec![T::zero(); nb * nb];
    for q in 0..nb {
        for j in q..nb {
            l[j * nb + q] = r[(k0 + q) * ld + k0 + j];
        }
    }
    l
}

/// Upper Cholesky of a small diagonal block by row operations: row j of R is
/// finished, then subtracted from the rows below it. The rows are sliced to the
/// block's end so that the loops vectorise (rather than run as scalar loops with a
/// bounds check per element), compiled for AVX2 where the CPU has it
/// (`simd_scope`; no contraction into FMA, so the same bits as the baseline build).
fn factor_leaf<T: Element>(
    r: &mut [T],
    n: usize,
    k: usize,
    nb: usize,
) -> std::result::Result<(), (usize, T)> {
    crate::kernels::simd_scope(|| {
        let end = k + nb;
        for j in k..end {
            let (top, bottom) = r.split_at_mut((j + 1) * n);
            // Row j from its diagonal to the block's end.
            let rj = &mut top[j * n + j..j * n + end];
            let d = rj[0];
            if !(d > T::zero()) {
                return Err((j, d));
            }
            let d = d.sqrt();
            rj[0] = d;
            for v in &mut rj[1..] {
                *v = *v / d;
            }
            let rj = &*rj;
            for (q, i) in (j + 1..end).enumerate() {
                let f = rj[i - j];
                let row = &mut bottom[q * n + i..q * n + end];
                for (x, &y) in row.iter_mut().zip(&rj[i - j..]) {
                    *x = *x - f * y;
                }
            }
        }
        Ok(())
    })
}

/// Copies the lower triangle of the row-major n×n `a` into the upper triangle of
/// `r` (row stride `ld`), transposed, by bands of [`band_rows`] rows of R: each
/// reads one cache line of every row of A below the band's top, in tiles of
/// [`TILE_WIDTH`] rows of A (the tile's lines of A and of R's band together fit in
/// the L1 cache). The band's diagonal block is copied whole: what lands below R's
/// diagonal is never read. Returns whether the copied triangle is finite, each
/// band checked right after it is written.
///
/// Bands of one line rather than square tiles of 32 × 32, which read 256 bytes of
/// each of 32 rows (4 KiB apart for a 512 × 512 `f64` matrix) at a time, and were
/// slower.
fn transpose_lower<T: Element>(a: &[T], n: usize, r: &mut [T], ld: usize) -> bool {
    let band = band_rows::<T>();
    let finite = AtomicBool::new(true);
    parallel::for_each_chunk_if(r, band * ld, parallel::in_team(), |start, out| {
        let pb = start / ld;
        let depth = band.min(n - pb);
        for jb in (pb..n).step_by(TILE_WIDTH) {
            let cols = TILE_WIDTH.min(n - jb);
            pack_transposed(a, jb * n + pb, n as isize, cols, depth, &mut out[jb..], ld);
        }
        // Row i of the band holds A's column i from the diagonal down.
        let ok = crate::kernels::simd_scope(|| {
            out.chunks(ld).enumerate().all(|(q, row)| {
                let i = pb + q;
                row[i..n].iter().fold(true, |ok, v| ok & v.is_finite())
            })
        });
        if !ok {
            finite.store(false, Ordering::Relaxed);
        }
    });
    finite.into_inner()
}

/// Rows of R per band of the transposed copy: one 64-byte cache line of `T`.
fn band_rows<T>() -> usize {
    (64 / std::mem::size_of::<T>()).max(1)
}

/// A row stride of at least `n` that is an odd multiple of 8 elements (64 bytes of
/// `f64`, 32 of `f32`): rows fewer than 64 apart then never lie a multiple of 4 KiB
/// apart, so the rows a kernel walks together fall in different L1 sets. (Rounding
/// `n` up to a multiple of 8 and adding 8 would give exactly 4 KiB at n = 504.)
fn row_stride(n: usize) -> usize {
    (n.div_ceil(8) | 1) * 8
}

/// R = Lᵀ of the row-major n × n `a` (only its lower triangle read), row-major with
/// row stride `ld`, zero below the diagonal and in the padding.
fn factor_matrix<T: Element>(a: &[T], n: usize, ld: usize) -> Result<Vec<T>> {
    // Aᵀ: its upper triangle is A's lower one. Its rows are padded so that their
    // stride is not a multiple of 4 KiB, at which the rows a solve or a
    // transposition walks together would all fall in one set of the L1 cache
    // (measured: a 512 × 512 f64 factorisation took 2.6× as long).
    let mut r = storage::scratch(n * ld, T::zero());
    if !transpose_lower(a, n, &mut r, ld) {
        return Err(lower_not_finite("cholesky"));
    }
    factor(&mut r, ld, 0, n).map_err(|(j, d)| {
        Error::numerical(
            "cholesky",
            format!("the matrix is not positive definite: pivot {j} is {d}"),
        )
    })?;
    // Zeros below R's diagonal (above L's), and in the padding.
    parallel::for_each_chunk_if(
        &mut r,
        ZERO_ROWS * ld,
        parallel::in_team(),
        |start, rows| {
            for (i, row) in rows.chunks_exact_mut(ld).enumerate() {
                let i = start / ld + i;
                row[..i].fill(T::zero());
                row[n..].fill(T::zero());
            }
        },
    );
    Ok(r)
}

impl<T: Element> Tensor<T> {
    /// The lower Cholesky factor L of each symmetric positive-definite matrix
    /// (A = L Lᵀ; only A's lower triangle is read: a NaN or infinity there is an
    /// error, one above the diagonal changes nothing). A matrix that is not positive
    /// definite fails with the first non-positive pivot and its value.
    ///
    /// L comes back as a transposed view of the factorisation's own buffer (its
    /// columns contiguous, as LAPACK's and PyTorch's are), which costs no copy;
    /// `contiguous()` gives it row by row.
    ///
    /// ```
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let a = Tensor::<f64>::from_vec(vec![4.0, 2.0, 2.0, 3.0], &[2, 2])?;
    /// let l = a.cholesky()?;
    /// let r2 = 2.0_f64.sqrt();
    /// assert_eq!(l.to_vec(), vec![2.0, 0.0, 1.0, r2]);
    /// assert!(l.matmul(&l.t()?)?.sub(&a)?.abs().max_all()? < 1e-15); // A = L Lᵀ
    /// // Not positive definite: the error names the op and the failing pivot.
    /// let e = Tensor::<f64>::from_vec(vec![1.0, 2.0, 2.0, 1.0], &[2, 2])?.cholesky().unwrap_err();
    /// assert!(e.to_string().starts_with("cholesky"), "{e}");
    /// # Ok(())
    /// # }
    /// ```
    pub fn cholesky(&self) -> Result<Tensor<T>> {
        // Only the shape here: the lower triangle's finiteness is checked on its
        // transposed copy, band by band while each is in cache (a pass of its own
        // over A took 4 % of the factorisation at n = 512).
        let n = square_order("cholesky", self)?;
        let ld = row_stride(n);
        // One matrix: its factorisation may use a team; several: one a thread.
        let single = self.numel() == n * n;
        let factors = per_matrix(self, n * n * n / 3, |a| {
            super::in_team_if(single, n, || factor_matrix(a, n, ld))
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
