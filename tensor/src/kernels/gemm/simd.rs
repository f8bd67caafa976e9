//! The register-tiled micro-kernels for x86-64: AVX-512 (tiles of 8 rows × 32
//! `f32` or 16 `f64` columns, 16 accumulator registers) and AVX2/FMA (6 rows × 16
//! `f32` or 8 `f64` columns, 12 accumulators).
//!
//! Every kernel computes each element of its tile as one fused multiply-add chain
//! over the depth, in order, from zero, then applies the same epilogue
//! (`α·acc`, or `fma(α, acc, β·c)`): the AVX-512 and AVX2 kernels give the same bits.
//! Each has two twins that read an operand where it lies instead of from a packed
//! panel — B's rows as runs of memory ([`RowKernel`]), or A's values by row and
//! column offsets ([`GatherKernel`]) — with the same chain and so the same bits.

use super::{GatherKernel, MicroKernel, RowKernel};
use std::arch::x86_64::*;

/// Defines one micro-kernel: `$mr` rows of two `$lanes`-wide vectors.
macro_rules! micro_kernel {
    ($name:ident, $feature:literal, $t:ty, $v:ty, $lanes:literal, $mr:literal,
     $zero:ident, $load:ident, $store:ident, $splat:ident, $fma:ident, $mul:ident) => {
        /// `C[..MR, ..NR] ← α·(A·B) + β·C` for one tile (β = 0: C is not read).
        ///
        /// # Safety
        /// The CPU has the kernel's features; `a` holds `kc·MR` and `b` `kc·NR`
        /// readable elements; `c` addresses MR rows of NR writable elements at row
        /// stride `ldc`.
        #[target_feature(enable = $feature)]
        unsafe fn $name(
            kc: usize,
            a: *const $t,
            b: *const $t,
            c: *mut $t,
            ldc: usize,
            alpha: $t,
            beta: $t,
        ) {
            const NR: usize = 2 * $lanes;
            let mut acc = [[$zero(); 2]; $mr];
            for p in 0..kc {
                // SAFETY: p < kc, so the row p of each panel is inside the buffers.
                let (b0, b1) = unsafe { ($load(b.add(p * NR)), $load(b.add(p * NR + $lanes))) };
                for i in 0..$mr {
                    let ai = $splat(unsafe { *a.add(p * $mr + i) });
                    acc[i][0] = $fma(ai, b0, acc[i][0]);
                    acc[i][1] = $fma(ai, b1, acc[i][1]);
                }
            }
            store_tile!(acc, c, ldc, alpha, beta, $lanes, $mr, $load, $store, $splat, $fma, $mul);
        }
    };
}

/// The epilogue every kernel shares: `C ← α·acc` (β = 0, C unread) or
/// `fma(α, acc, β·C)` for the `MR × 2` vectors of `acc`.
macro_rules! store_tile {
    ($acc:ident, $c:ident, $ldc:ident, $alpha:ident, $beta:ident, $lanes:literal, $mr:literal,
     $load:ident, $store:ident, $splat:ident, $fma:ident, $mul:ident) => {
        let va = $splat($alpha);
        for i in 0..$mr {
            for h in 0..2 {
                // SAFETY: row i < MR, columns h·lanes.. < NR of the tile.
                let at = unsafe { $c.add(i * $ldc + h * $lanes) };
                let r = if $beta == 0.0 {
                    $mul(va, $acc[i][h])
                } else {
                    let old = unsafe { $load(at) };
                    $fma(va, $acc[i][h], $mul($splat($beta), old))
                };
                unsafe { $store(at, r) };
            }
        }
    };
}

/// Defines one kernel that reads B in place ([`RowKernel`]): row p of the tile's
/// B is the `$lanes` values at `b[0] + offs[p]` then the `$lanes` at
/// `b[1] + offs[p]`; otherwise the kernel of the same tile, operation for operation.
macro_rules! row_kernel {
    ($name:ident, $feature:literal, $t:ty, $lanes:literal, $mr:literal,
     $zero:ident, $load:ident, $store:ident, $splat:ident, $fma:ident, $mul:ident) => {
        /// `C[..MR, ..NR] ← α·(A·B) + β·C` for one tile, B read where it lies.
        ///
        /// # Safety
        /// The CPU has the kernel's features; `a` holds `kc·MR` readable elements,
        /// `offs` holds `kc` offsets, and `b[h] + offs[p]` starts `$lanes` readable
        /// elements for every p < kc and h < 2; `c` addresses MR rows of NR
        /// writable elements at row stride `ldc`.
        #[target_feature(enable = $feature)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $name(
            kc: usize,
            a: *const $t,
            offs: *const usize,
            b: [*const $t; 2],
            c: *mut $t,
            ldc: usize,
            alpha: $t,
            beta: $t,
        ) {
            let mut acc = [[$zero(); 2]; $mr];
            for p in 0..kc {
                // SAFETY: p < kc; the offsets and B rows are readable as required.
                let (b0, b1) = unsafe {
                    let o = *offs.add(p);
                    ($load(b[0].add(o)), $load(b[1].add(o)))
                };
                for i in 0..$mr {
                    let ai = $splat(unsafe { *a.add(p * $mr + i) });
                    acc[i][0] = $fma(ai, b0, acc[i][0]);
                    acc[i][1] = $fma(ai, b1, acc[i][1]);
                }
            }
            store_tile!(acc, c, ldc, alpha, beta, $lanes, $mr, $load, $store, $splat, $fma, $mul);
        }
    };
}

micro_kernel!(
    f32_avx512,
    "avx512f",
    f32,
    __m512,
    16,
    8,
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_mul_ps
);
micro_kernel!(
    f64_avx512,
    "avx512f",
    f64,
    __m512d,
    8,
    8,
    _mm512_setzero_pd,
    _mm512_loadu_pd,
    _mm512_storeu_pd,
    _mm512_set1_pd,
    _mm512_fmadd_pd,
    _mm512_mul_pd
);
micro_kernel!(
    f32_avx2,
    "avx2,fma",
    f32,
    __m256,
    8,
    6,
    _mm256_setzero_ps,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    _mm256_mul_ps
);
micro_kernel!(
    f64_avx2,
    "avx2,fma",
    f64,
    __m256d,
    4,
    6,
    _mm256_setzero_pd,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_set1_pd,
    _mm256_fmadd_pd,
    _mm256_mul_pd
);

/// The AVX-512 `f32` kernel.
pub(super) const F32_AVX512: MicroKernel<f32> = MicroKernel {
    name: "avx512",
    mr: 8,
    nr: 32,
    fused: true,
    run: f32_avx512,
};
/// The AVX-512 `f64` kernel.
pub(super) const F64_AVX512: MicroKernel<f64> = MicroKernel {
    name: "avx512",
    mr: 8,
    nr: 16,
    fused: true,
    run: f64_avx512,
};
/// The AVX2/FMA `f32` kernel.
pub(super) const F32_AVX2: MicroKernel<f32> = MicroKernel {
    name: "avx2",
    mr: 6,
    nr: 16,
    fused: true,
    run: f32_avx2,
};
/// The AVX2/FMA `f64` kernel.
pub(super) const F64_AVX2: MicroKernel<f64> = MicroKernel {
    name: "avx2",
    mr: 6,
    nr: 8,
    fused: true,
    run: f64_avx2,
};

/// Defines one kernel that reads A in place ([`GatherKernel`]): A's value at row i,
/// depth p is `a[rows[i] + cols[p]]`; B is a packed panel. Otherwise the kernel of
/// the same tile, operation for operation.
macro_rules! gather_kernel {
    ($name:ident, $feature:literal, $t:ty, $lanes:literal, $mr:literal,
     $zero:ident, $load:ident, $store:ident, $splat:ident, $fma:ident, $mul:ident) => {
        /// `C[..MR, ..NR] ← α·(A·B) + β·C` for one tile, A read where it lies.
        ///
        /// # Safety
        /// The CPU has the kernel's features; `rows` holds MR offsets and `cols`
        /// `kc`, every `a + rows[i] + cols[p]` is readable; `b` holds `kc·NR`
        /// readable elements; `c` addresses MR rows of NR writable elements at row
        /// stride `ldc`.
        #[target_feature(enable = $feature)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $name(
            kc: usize,
            a: *const $t,
            rows: *const usize,
            cols: *const usize,
            b: *const $t,
            c: *mut $t,
            ldc: usize,
            alpha: $t,
            beta: $t,
        ) {
            const NR: usize = 2 * $lanes;
            // SAFETY: rows holds MR offsets; each row start is inside `a`'s reach.
            let starts: [*const $t; $mr] = std::array::from_fn(|i| unsafe { a.add(*rows.add(i)) });
            let mut acc = [[$zero(); 2]; $mr];
            for p in 0..kc {
                // SAFETY: p < kc; the panel row and the A values are readable.
                let (b0, b1, o) = unsafe {
                    (
                        $load(b.add(p * NR)),
                        $load(b.add(p * NR + $lanes)),
                        *cols.add(p),
                    )
                };
                for i in 0..$mr {
                    let ai = $splat(unsafe { *starts[i].add(o) });
                    acc[i][0] = $fma(ai, b0, acc[i][0]);
                    acc[i][1] = $fma(ai, b1, acc[i][1]);
                }
            }
            store_tile!(acc, c, ldc, alpha, beta, $lanes, $mr, $load, $store, $splat, $fma, $mul);
        }
    };
}

row_kernel!(
    f32_avx512_rows,
    "avx512f",
    f32,
    16,
    8,
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_mul_ps
);
row_kernel!(
    f64_avx512_rows,
    "avx512f",
    f64,
    8,
    8,
    _mm512_setzero_pd,
    _mm512_loadu_pd,
    _mm512_storeu_pd,
    _mm512_set1_pd,
    _mm512_fmadd_pd,
    _mm512_mul_pd
);
row_kernel!(
    f32_avx2_rows,
    "avx2,fma",
    f32,
    8,
    6,
    _mm256_setzero_ps,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    _mm256_mul_ps
);
row_kernel!(
    f64_avx2_rows,
    "avx2,fma",
    f64,
    4,
    6,
    _mm256_setzero_pd,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_set1_pd,
    _mm256_fmadd_pd,
    _mm256_mul_pd
);

/// [`F32_AVX512`] reading B in place.
pub(super) const F32_AVX512_ROWS: RowKernel<f32> = RowKernel {
    tile: F32_AVX512,
    run: f32_avx512_rows,
};
/// [`F64_AVX512`] reading B in place.
pub(super) const F64_AVX512_ROWS: RowKernel<f64> = RowKernel {
    tile: F64_AVX512,
    run: f64_avx512_rows,
};
/// [`F32_AVX2`] reading B in place.
pub(super) const F32_AVX2_ROWS: RowKernel<f32> = RowKernel {
    tile: F32_AVX2,
    run: f32_avx2_rows,
};
/// [`F64_AVX2`] reading B in place.
pub(super) const F64_AVX2_ROWS: RowKernel<f64> = RowKernel {
    tile: F64_AVX2,
    run: f64_avx2_rows,
};

gather_kernel!(
    f32_avx512_gather,
    "avx512f",
    f32,
    16,
    8,
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_mul_ps
);
gather_kernel!(
    f64_avx512_gather,
    "avx512f",
    f64,
    8,
    8,
    _mm512_setzero_pd,
    _mm512_loadu_pd,
    _mm512_storeu_pd,
    _mm512_set1_pd,
    _mm512_fmadd_pd,
    _mm512_mul_pd
);
gather_kernel!(
    f32_avx2_gather,
    "avx2,fma",
    f32,
    8,
    6,
    _mm256_setzero_ps,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    _mm256_mul_ps
);
gather_kernel!(
    f64_avx2_gather,
    "avx2,fma",
    f64,
    4,
    6,
    _mm256_setzero_pd,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_set1_pd,
    _mm256_fmadd_pd,
    _mm256_mul_pd
);

/// [`F32_AVX512`] reading A in place.
pub(super) const F32_AVX512_GATHER: GatherKernel<f32> = GatherKernel {
    tile: F32_AVX512,
    run: f32_avx512_gather,
};
/// [`F64_AVX512`] reading A in place.
pub(super) const F64_AVX512_GATHER: GatherKernel<f64> = GatherKernel {
    tile: F64_AVX512,
    run: f64_avx512_gather,
};
/// [`F32_AVX2`] reading A in place.
pub(super) const F32_AVX2_GATHER: GatherKernel<f32> = GatherKernel {
    tile: F32_AVX2,
    run: f32_avx2_gather,
};
/// [`F64_AVX2`] reading A in place.
pub(super) const F64_AVX2_GATHER: GatherKernel<f64> = GatherKernel {
    tile: F64_AVX2,
    run: f64_avx2_gather,
};
