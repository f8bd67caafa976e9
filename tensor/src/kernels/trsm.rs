//! The triangular solve of a blocked Cholesky's panel: `L·X = B` by forward
//! substitution for many right-hand sides, the columns of B (the rows below a
//! factored diagonal block, stored transposed), several columns at a time in the
//! lanes of a vector (8 or 4 `f64`, 16 or 8 `f32`), so that the work runs at close
//! to multiply-add throughput rather than one dependent chain per right-hand side.
//!
//! For each column, `x_j = (b_j − Σ_{q<j} L[j][q]·x_q) · (1 / L[j][j])`, the terms
//! subtracted one after the other in order of q, as plain substitution does, and
//! the sum scaled by the pivot's reciprocal (computed once per call, as optimised
//! BLAS triangular solves do, rather than a division per element). The SIMD paths
//! fuse each multiply-subtract (so their bits agree with each other, and with the
//! portable path's to rounding; they solve four rows of four vectors of columns at
//! a time with AVX-512, four rows of two with AVX2, sixteen or eight chains in
//! flight for their latency); the columns past the last whole vector are solved one
//! at a time with the same fused operations, so a column's bits do not depend on
//! the vector width.

use super::gemm::Scalar;
#[cfg(target_arch = "x86_64")]
use std::any::TypeId;

/// The largest block the kernel solves against.
pub const MAX_ORDER: usize = 64;

/// Solves `L·X = B` in place for the `nb × cols` block `B` at the start of `b` (row
/// stride `ldb`): each column is one right-hand side (the columns of the block are
/// the rows of a Cholesky panel, stored transposed), with `L` the `nb × nb`
/// lower-triangular matrix at the start of `l` (row stride `ldl`; its upper
/// triangle is not read). A zero on L's diagonal gives infinities. With `parallel`,
/// blocks of columns are solved on the threads (each column's operations are the
/// same either way).
///
/// # Panics
/// When `nb` exceeds [`MAX_ORDER`] or a slice is too short.
pub fn solve_lower_columns<T: Scalar + num_traits::Float>(
    l: &[T],
    ldl: usize,
    nb: usize,
    b: &mut [T],
    ldb: usize,
    cols: usize,
    parallel: bool,
) {
    assert!(
        nb <= MAX_ORDER,
        "solve_lower_columns: order {nb} above {MAX_ORDER}"
    );
    if nb == 0 || cols == 0 {
        return;
    }
    assert!(
        ldb >= cols && l.len() >= (nb - 1) * ldl + nb && b.len() >= (nb - 1) * ldb + cols,
        "solve_lower_columns: slices too short"
    );
    let split = if crate::parallel::in_team() {
        TEAM_SPLIT
    } else {
        SPLIT
    };
    if parallel && cols > split {
        let base = super::SharedMut::new(b);
        crate::parallel::for_each_index(cols.div_ceil(split), true, |i| {
            let c0 = i * split;
            let w = split.min(cols - c0);
            // SAFETY: the tasks own disjoint column ranges c0..c0+w of the nb rows of
            // B, which lie inside `b` (checked above); this one is a slice starting at
            // column c0 that reaches row nb − 1's column c0 + w, touched only here.
            let part = unsafe { std::slice::from_raw_parts_mut(base.at(c0), (nb - 1) * ldb + w) };
            solve_block(l, ldl, nb, part, ldb, w);
        });
        return;
    }
    solve_block(l, ldl, nb, b, ldb, cols);
}

/// Columns per task of a parallel solve (a whole number of four-vector blocks on
/// every instruction set).
const SPLIT: usize = 128;

/// Columns per task of a parallel solve inside a team's region
/// ([`crate::parallel::with_team`]), where a task starts in about a microsecond:
/// still whole four-vector blocks of `f64` on every instruction set, and whole
/// vectors of `f32`.
const TEAM_SPLIT: usize = 64;

/// [`solve_lower_columns`] on the calling thread (bounds already checked).
fn solve_block<T: Scalar + num_traits::Float>(
    l: &[T],
    ldl: usize,
    nb: usize,
    b: &mut [T],
    ldb: usize,
    cols: usize,
) {
    // Each row is scaled by its pivot's reciprocal, computed once: with a vector
    // division per row and vector instead, a 64 × 256 solve took 29–33 µs against
    // 25 (one division result every 16 cycles, against two multiply-adds a cycle).
    let mut inv = [T::zero(); MAX_ORDER];
    for (j, v) in inv[..nb].iter_mut().enumerate() {
        *v = T::one() / l[j * ldl + j];
    }
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        let f32_ = TypeId::of::<T>() == TypeId::of::<f32>();
        let (lp, bp, ip) = (l.as_ptr(), b.as_mut_ptr(), inv.as_ptr());
        // SAFETY: the CPU has the called function's features (AVX-512 checked here,
        // AVX2 and FMA above); L holds nb rows of nb at stride ldl and b nb rows of
        // `cols` at stride ldb (checked above), `inv` nb ≤ MAX_ORDER elements; T is
        // f32 or f64 as the type test says.
        done = unsafe {
            match (super::has_avx512(), f32_) {
                (true, true) => avx512_f32(lp.cast(), ldl, nb, bp.cast(), ldb, cols, ip.cast()),
                (true, false) => avx512_f64(lp.cast(), ldl, nb, bp.cast(), ldb, cols, ip.cast()),
                (false, true) => avx2_f32(lp.cast(), ldl, nb, bp.cast(), ldb, cols, ip.cast()),
                (false, false) => avx2_f64(lp.cast(), ldl, nb, bp.cast(), ldb, cols, ip.cast()),
            }
        };
        // The columns past the last whole vector take the lanes' fused
        // multiply-subtracts too: which columns those are depends on the vector
        // width (AVX-512 leaves up to 7 `f64` columns, AVX2 up to 3), and a column's
        // bits must not.
        // SAFETY: FMA is present (checked above); the bounds were checked by the
        // caller.
        unsafe { fused_columns(l, ldl, nb, b, ldb, done..cols, &inv[..nb]) };
        return;
    }
    substitute(l, ldl, nb, b, ldb, done..cols, &inv[..nb], false);
}

/// Plain substitution for the columns in `columns`: x_j = (b_j − Σ_{q<j} L[j][q]·x_q)
/// · inv_j, the terms subtracted in order of q, each multiply-subtract fused
/// (`(−L[j][q])·x_q + s` rounds once, exactly as the vector paths' `fnmadd`) with
/// `fused`, or multiplied and subtracted apart (the portable path) without.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn substitute<T: Scalar + num_traits::Float>(
    l: &[T],
    ldl: usize,
    nb: usize,
    b: &mut [T],
    ldb: usize,
    columns: std::ops::Range<usize>,
    inv: &[T],
    fused: bool,
) {
    for c in columns {
        for j in 0..nb {
            let lj = &l[j * ldl..j * ldl + j + 1];
            let mut s = b[j * ldb + c];
            for q in 0..j {
                s = if fused {
                    (-lj[q]).mul_add(b[q * ldb + c], s)
                } else {
                    s - lj[q] * b[q * ldb + c]
                };
            }
            b[j * ldb + c] = s * inv[j];
        }
    }
}

/// [`substitute`] with fused multiply-subtracts, compiled for FMA, so that these
/// columns get the bits they would get in a vector's lane.
///
/// # Safety
/// The CPU has FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn fused_columns<T: Scalar + num_traits::Float>(
    l: &[T],
    ldl: usize,
    nb: usize,
    b: &mut [T],
    ldb: usize,
    columns: std::ops::Range<usize>,
    inv: &[T],
) {
    substitute(l, ldl, nb, b, ldb, columns, inv, true);
}

/// Defines the vector solve for one element type and instruction set: blocks of
/// `$vecs` vectors of columns, `$rows` rows at a time, then single vectors; returns
/// how many columns it solved. The rows of a group share each solved row's loads,
/// and their `$rows × $vecs` accumulators are independent chains in flight for the
/// multiply-add's latency; they must fit in the registers with the solved row's
/// `$vecs` vectors and a broadcast. With AVX-512 (32 registers), 4 × 4: one row at a
/// time (four chains) was slower. With AVX2 (16 registers) 4 × 4 spills its
/// accumulators to the stack on every multiply-add, so it is 4 rows × 2 vectors (8
/// accumulators, 2 solved vectors, a broadcast), which was also faster than 2 × 4.
/// The shape changes only which columns are solved together: each column's
/// operations, and so its bits, are the same.
#[cfg(target_arch = "x86_64")]
macro_rules! simd_solve {
    ($name:ident, $feature:literal, $t:ty, $lanes:literal, $rows:expr, $vecs:expr,
     $load:ident, $store:ident, $set:ident, $mul:ident, $fnmadd:ident) => {
        /// # Safety
        /// The CPU has the function's features; `l` addresses `nb` rows of `nb` at
        /// stride `ldl`, `b` `nb` rows of `cols` at stride `ldb`, writable; `inv`
        /// addresses `nb` elements (the reciprocals of L's diagonal).
        #[target_feature(enable = $feature)]
        unsafe fn $name(
            l: *const $t,
            ldl: usize,
            nb: usize,
            b: *mut $t,
            ldb: usize,
            cols: usize,
            inv: *const $t,
        ) -> usize {
            use std::arch::x86_64::*;
            let mut c = 0;
            while c + $vecs * $lanes <= cols {
                // SAFETY (every access): rows q, j < nb of B, columns c.. c + vecs·lanes
                // ≤ cols; row j of L holds j + 1 elements.
                unsafe {
                    let x = |q: usize, g: usize| $load(b.add(q * ldb + c + g * $lanes));
                    let mut j = 0;
                    while j + $rows <= nb {
                        // Rows j..j + rows: every solved row q < j first, shared.
                        let mut acc: [[_; $vecs]; $rows] =
                            std::array::from_fn(|r| std::array::from_fn(|g| x(j + r, g)));
                        for q in 0..j {
                            let xq: [_; $vecs] = std::array::from_fn(|g| x(q, g));
                            for (r, acc) in acc.iter_mut().enumerate() {
                                let f = $set(*l.add((j + r) * ldl + q));
                                for g in 0..$vecs {
                                    acc[g] = $fnmadd(f, xq[g], acc[g]);
                                }
                            }
                        }
                        // Then the group's own rows, in order.
                        for r in 0..$rows {
                            for s in 0..r {
                                let f = $set(*l.add((j + r) * ldl + j + s));
                                for g in 0..$vecs {
                                    acc[r][g] = $fnmadd(f, x(j + s, g), acc[r][g]);
                                }
                            }
                            let d = $set(*inv.add(j + r));
                            for g in 0..$vecs {
                                $store(b.add((j + r) * ldb + c + g * $lanes), $mul(acc[r][g], d));
                            }
                        }
                        j += $rows;
                    }
                    for j in j..nb {
                        let lj = l.add(j * ldl);
                        let mut acc: [_; $vecs] = std::array::from_fn(|g| x(j, g));
                        for q in 0..j {
                            let f = $set(*lj.add(q));
                            for g in 0..$vecs {
                                acc[g] = $fnmadd(f, x(q, g), acc[g]);
                            }
                        }
                        let d = $set(*inv.add(j));
                        for g in 0..$vecs {
                            $store(b.add(j * ldb + c + g * $lanes), $mul(acc[g], d));
                        }
                    }
                }
                c += $vecs * $lanes;
            }
            while c + $lanes <= cols {
                // SAFETY: as above, one vector of columns.
                unsafe {
                    for j in 0..nb {
                        let lj = l.add(j * ldl);
                        let mut acc = $load(b.add(j * ldb + c));
                        for q in 0..j {
                            acc = $fnmadd($set(*lj.add(q)), $load(b.add(q * ldb + c)), acc);
                        }
                        $store(b.add(j * ldb + c), $mul(acc, $set(*inv.add(j))));
                    }
                }
                c += $lanes;
            }
            c
        }
    };
}

#[cfg(target_arch = "x86_64")]
simd_solve!(
    avx512_f64,
    "avx512f",
    f64,
    8,
    4,
    4,
    _mm512_loadu_pd,
    _mm512_storeu_pd,
    _mm512_set1_pd,
    _mm512_mul_pd,
    _mm512_fnmadd_pd
);
#[cfg(target_arch = "x86_64")]
simd_solve!(
    avx512_f32,
    "avx512f",
    f32,
    16,
    4,
    4,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_set1_ps,
    _mm512_mul_ps,
    _mm512_fnmadd_ps
);
#[cfg(target_arch = "x86_64")]
simd_solve!(
    avx2_f64,
    "avx2,fma",
    f64,
    4,
    4,
    2,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_set1_pd,
    _mm256_mul_pd,
    _mm256_fnmadd_pd
);
#[cfg(target_arch = "x86_64")]
simd_solve!(
    avx2_f32,
    "avx2,fma",
    f32,
    8,
    4,
    2,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_set1_ps,
    _mm256_mul_ps,
    _mm256_fnmadd_ps
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the equations themselves (the residual of L·X = B), for orders across
    /// the chain remainders, column counts across the vector widths, strided rows.
    #[test]
    fn columns_solve_against_a_lower_triangle() {
        for &(nb, cols) in &[
            (1, 1),
            (3, 5),
            (7, 9),
            (17, 33),
            (64, 19),
            (13, 77),
            (64, 70),
        ] {
            let (ldl, ldb) = (nb + 3, cols + 2);
            let l: Vec<f64> = (0..nb * ldl)
                .map(|i| {
                    let (r, c) = (i / ldl, i % ldl);
                    if r == c {
                        2.0 + (r % 3) as f64
                    } else {
                        ((i * 37 % 17) as f64 - 8.0) / 20.0
                    }
                })
                .collect();
            let b: Vec<f64> = (0..nb * ldb)
                .map(|i| ((i * 29 % 23) as f64 - 11.0) / 7.0)
                .collect();
            let mut got = b.clone();
            solve_lower_columns(&l, ldl, nb, &mut got, ldb, cols, false);
            let l32: Vec<f32> = l.iter().map(|&v| v as f32).collect();
            let mut got32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
            solve_lower_columns(&l32, ldl, nb, &mut got32, ldb, cols, false);
            for c in 0..cols {
                for j in 0..nb {
                    let lhs: f64 = (0..=j).map(|q| l[j * ldl + q] * got[q * ldb + c]).sum();
                    assert!(
                        (lhs - b[j * ldb + c]).abs() < 1e-12,
                        "f64 column {c}, row {j}"
                    );
                    let lhs32: f64 = (0..=j)
                        .map(|q| l32[j * ldl + q] as f64 * got32[q * ldb + c] as f64)
                        .sum();
                    assert!(
                        (lhs32 - b[j * ldb + c]).abs() < 1e-4,
                        "f32 column {c}, row {j}"
                    );
                }
            }
            // Past `cols`, each row's padding is untouched.
            for j in 0..nb {
                for c in cols..ldb {
                    assert_eq!(got[j * ldb + c], b[j * ldb + c]);
                }
            }
        }
    }

    /// A column's bits do not depend on the columns solved with it: a block of 37
    /// columns (whole vectors and a remainder, on every vector width) gives each
    /// column the bits it gets solved alone (the remainder path) — so AVX-512, which
    /// leaves other columns to the remainder than AVX2, gives AVX2's bits.
    #[test]
    fn a_column_gets_the_same_bits_alone_or_in_a_vector() {
        let (nb, cols) = (29, 37);
        let l: Vec<f64> = (0..nb * nb)
            .map(|i| {
                let (r, c) = (i / nb, i % nb);
                if r == c {
                    1.5 + (r % 5) as f64 / 3.0
                } else {
                    ((i * 41 % 19) as f64 - 9.0) / 13.0
                }
            })
            .collect();
        let b: Vec<f64> = (0..nb * cols)
            .map(|i| ((i * 31 % 29) as f64 - 14.0) / 9.0)
            .collect();
        let mut all = b.clone();
        solve_lower_columns(&l, nb, nb, &mut all, cols, cols, false);
        for c in 0..cols {
            let mut one: Vec<f64> = (0..nb).map(|j| b[j * cols + c]).collect();
            solve_lower_columns(&l, nb, nb, &mut one, 1, 1, false);
            for j in 0..nb {
                assert_eq!(
                    one[j].to_bits(),
                    all[j * cols + c].to_bits(),
                    "column {c}, row {j}: {} alone, {} in the block",
                    one[j],
                    all[j * cols + c]
                );
            }
        }
    }
}
