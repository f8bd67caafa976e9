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
