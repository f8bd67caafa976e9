//! The register-tiled micro-kernels for aarch64 NEON: tiles of 8 rows × 8 `f32` or
//! 4 `f64` columns (two 128-bit vectors a row, 16 accumulator registers of the 32).
//!
//! The bodies are the x86 kernels' (`tiles.rs`): each element of a tile is one
//! fused multiply-add chain over the depth, in order, from zero, then the same
//! epilogue, so an aarch64 GEMM gives the AVX-512 and AVX2 GEMMs' bits. The
//! wrappers below only put NEON's intrinsics in x86's argument order
//! (`vfmaq(c, a, b)` is c + a·b).

use super::{GatherKernel, MicroKernel, RowKernel};
use std::arch::aarch64::*;

/// Defines the wrappers for one vector type.
macro_rules! wrappers {
    ($t:ty, $v:ty, $zero:ident, $load:ident, $store:ident, $splat:ident, $fma:ident, $mul:ident,
     $vdup:ident, $vld:ident, $vst:ident, $vfma:ident, $vmul:ident) => {
        /// The zero vector.
        #[inline(always)]
        #[allow(unused_unsafe)]
        fn $zero() -> $v {
            // SAFETY: NEON is part of the aarch64 baseline.
            unsafe { $vdup(0.0) }
        }
        /// Loads a vector from `p`.
        ///
        /// # Safety
        /// `p` starts a vector's worth of readable elements.
        #[inline(always)]
        unsafe fn $load(p: *const $t) -> $v {
            // SAFETY: the caller guarantees the vector's reach.
            unsafe { $vld(p) }
        }
        /// Stores `v` at `p`.
        ///
        /// # Safety
        /// `p` starts a vector's worth of writable elements.
        #[inline(always)]
        unsafe fn $store(p: *mut $t, v: $v) {
            // SAFETY: the caller guarantees the vector's reach.
            unsafe { $vst(p, v) }
        }
        /// `x` in every lane.
        #[inline(always)]
        #[allow(unused_unsafe)]
        fn $splat(x: $t) -> $v {
            // SAFETY: NEON is part of the aarch64 baseline.
            unsafe { $vdup(x) }
        }
        /// a·b + c, fused.
        #[inline(always)]
        #[allow(unused_unsafe)]
        fn $fma(a: $v, b: $v, c: $v) -> $v {
            // SAFETY: NEON is part of the aarch64 baseline.
            unsafe { $vfma(c, a, b) }
        }
        /// a·b.
        #[inline(always)]
        #[allow(unused_unsafe)]
        fn $mul(a: $v, b: $v) -> $v {
            // SAFETY: NEON is part of the aarch64 baseline.
            unsafe { $vmul(a, b) }
        }
    };
}

wrappers!(
    f32,
    float32x4_t,
    zero_f32,
    load_f32,
    store_f32,
    splat_f32,
    fma_f32,
    mul_f32,
    vdupq_n_f32,
    vld1q_f32,
    vst1q_f32,
    vfmaq_f32,
    vmulq_f32
);
wrappers!(
    f64,
    float64x2_t,
    zero_f64,
    load_f64,
    store_f64,
    splat_f64,
    fma_f64,
    mul_f64,
    vdupq_n_f64,
    vld1q_f64,
    vst1q_f64,
    vfmaq_f64,
    vmulq_f64
);

micro_kernel!(
    f32_neon,
    "neon",
    f32,
    float32x4_t,
    4,
    8,
    zero_f32,
    load_f32,
    store_f32,
    splat_f32,
    fma_f32,
    mul_f32
);
micro_kernel!(
    f64_neon,
    "neon",
    f64,
    float64x2_t,
    2,
    8,
    zero_f64,
    load_f64,
    store_f64,
    splat_f64,
    fma_f64,
    mul_f64
);
row_kernel!(
    f32_neon_rows,
    "neon",
    f32,
    4,
    8,
    zero_f32,
    load_f32,
    store_f32,
    splat_f32,
    fma_f32,
    mul_f32
);
row_kernel!(
    f64_neon_rows,
    "neon",
    f64,
    2,
    8,
    zero_f64,
    load_f64,
    store_f64,
    splat_f64,
    fma_f64,
    mul_f64
);
gather_kernel!(
    f32_neon_gather,
    "neon",
    f32,
    4,
    8,
    zero_f32,
    load_f32,
    store_f32,
    splat_f32,
    fma_f32,
    mul_f32
);
gather_kernel!(
    f64_neon_gather,
    "neon",
    f64,
    2,
    8,
    zero_f64,
    load_f64,
    store_f64,
    splat_f64,
    fma_f64,
    mul_f64
);

/// The NEON `f32` kernel.
pub(super) const F32_NEON: MicroKernel<f32> = MicroKernel {
    name: "neon",
    mr: 8,
    nr: 8,
    fused: true,
    run: f32_neon,
};
/// The NEON `f64` kernel.
pub(super) const F64_NEON: MicroKernel<f64> = MicroKernel {
    name: "neon",
    mr: 8,
    nr: 4,
    fused: true,
    run: f64_neon,
};
/// [`F32_NEON`] reading B in place.
pub(super) const F32_NEON_ROWS: RowKernel<f32> = RowKernel {
    tile: F32_NEON,
    run: f32_neon_rows,
};
/// [`F64_NEON`] reading B in place.
pub(super) const F64_NEON_ROWS: RowKernel<f64> = RowKernel {
    tile: F64_NEON,
    run: f64_neon_rows,
};
/// [`F32_NEON`] reading A in place.
pub(super) const F32_NEON_GATHER: GatherKernel<f32> = GatherKernel {
    tile: F32_NEON,
    run: f32_neon_gather,
};
/// [`F64_NEON`] reading A in place.
pub(super) const F64_NEON_GATHER: GatherKernel<f64> = GatherKernel {
    tile: F64_NEON,
    run: f64_neon_gather,
};
