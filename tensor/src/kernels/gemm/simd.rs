//! The register-tiled micro-kernels for x86-64: AVX-512 (tiles of 8 rows × 32
//! `f32` or 16 `f64` columns, 16 accumulator registers) and AVX2/FMA (6 rows × 16
//! `f32` or 8 `f64` columns, 12 accumulators).
//!
//! Every kernel computes each element of its tile as one fused multiply-add chain
//! over the depth, in order, from zero, then applies the same epilogue
//! (`α·acc`, or `fma(α, acc, β·c)`): the AVX-512 and AVX2 kernels give the same bits.

use super::MicroKernel;
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
            let va = $splat(alpha);
            for i in 0..$mr {
                for h in 0..2 {
                    // SAFETY: row i < MR, columns h·lanes.. < NR of the tile.
                    let at = unsafe { c.add(i * ldc + h * $lanes) };
                    let r = if beta == 0.0 {
                        $mul(va, acc[i][h])
                    } else {
                        let old = unsafe { $load(at) };
                        $fma(va, acc[i][h], $mul($splat(beta), old))
                    };
                    unsafe { $store(at, r) };
                }
            }
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
