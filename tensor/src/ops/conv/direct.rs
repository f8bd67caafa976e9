//! Convolutions whose patches are read where they lie in the padded image rather
//! than packed into GEMM panels (which copies every value of the patch matrix,
//! nine times the image at 3×3, once per image).
//!
//! The forward, with unit stride along the width: row r of the patch matrix, at
//! output positions `(oy, ox..ox+l)`, is the run of the padded image at
//! `taps[r] + oy·sh·Wp + ox`, which a [`RowKernel`] reads in place. The weights
//! are packed once per convolution, as the GEMM packs A.
//!
//! The weight gradient, any geometry up to 256 output channels a group:
//! `dWᵀ = patches · gyᵀ`, the patch value at
//! (r, q) being the padded image at `taps[r] + position[q]`, which a
//! [`GatherKernel`] reads in place; only gy is packed.
//!
//! Either way the depth is cut into the GEMM's blocks and each kernel is its packed
//! twin, so every element is the same chain as through the packed path: the same
//! bits.

use super::operand::block;
use super::patches::Padded;
use super::Geometry;
use crate::element::Element;
use crate::kernels::gemm::{depth_blocks, GatherKernel, Offsets, PanelSource, RowKernel};
use crate::parallel;
use crate::storage::Scratch;

/// The kernel a convolution's forward can run with in place, if any: the CPU's
/// SIMD kernel, for geometries with unit stride along the width whose output rows
/// are whole runs (`W_out` a multiple of the run) and whose images are whole tiles
/// (`P` a multiple of the tile's width). Others take the packed path.
pub(super) fn row_kernel<T: Element>(geo: &Geometry) -> Option<RowKernel<T>> {
    let rk = T::row_kernel()?;
    let fits = geo.spec.stride.1 == 1
        && geo.wo.is_multiple_of(rk.lanes())
        && geo.p().is_multiple_of(rk.tile.nr)
        && geo.k() > 0;
    fits.then_some(rk)
}

/// One group's weights `W_g` (`C_out/g × K`) packed as the GEMM packs A: for each
/// depth block, panels of MR rows, `kstep` deep.
pub(super) struct PackedWeights<T: Element> {
    data: Scratch<T>,
    panels: usize,
    kstep: usize,
}

impl<T: Element> PackedWeights<T> {
    /// Group `g`'s weights out of `ws` (`[C_out, K]`), for kernel `rk`.
    pub(super) fn new(geo: &Geometry, ws: &[T], g: usize, rk: &RowKernel<T>) -> Self {
        let (k, cog, mr) = (geo.k(), geo.cout_g(), rk.tile.mr);
        let (kblocks, kstep) = depth_blocks::<T>(k);
        let panels = cog.div_ceil(mr);
        let w_t = block(ws, g * cog * k, cog, k, true);
        let mut data = Scratch::new(kblocks * panels * mr * kstep, T::zero());
        for kb in 0..kblocks {
            let (k0, kc) = (kb * kstep, kstep.min(k - kb * kstep));
            for ip in 0..panels {
                let at = (kb * panels + ip) * mr * kstep;
                w_t.pack(k0, kc, ip * mr, mr, &mut data[at..at + kc * mr]);
            }
        }
        PackedWeights {
            data,
            panels,
            kstep,
        }
    }
}

/// `dst = W_g · patches_g` for one padded image `x` (`dst` is `C_out/g × P`
/// row-major), tile by tile, depth block by depth block.
pub(super) fn forward_image<T: Element>(
    rk: &RowKernel<T>,
    geo: &Geometry,
    taps: &[usize],
    w: &PackedWeights<T>,
    x: &Padded<T>,
    g: usize,
    dst: &mut [T],
) {
    let (k, p, cog) = (geo.k(), geo.p(), geo.cout_g());
    let (mr, nr, lanes) = (rk.tile.mr, rk.tile.nr, rk.lanes());
    let (hp, wp) = x.size();
    let group_base = g * geo.cin_g() * hp * wp;
    let sh = geo.spec.stride.0;
    // Where output position q reads tap offset 0.
    let start = |q: usize| group_base + (q / geo.wo) * sh * wp + q % geo.wo;
    let (kblocks, kstep) = depth_blocks::<T>(k);
    for kb in 0..kblocks {
        let (k0, kc) = (kb * kstep, kstep.min(k - kb * kstep));
        let offs = Offsets::new(&taps[k0..k0 + kc]);
        let beta = if kb == 0 { T::ZERO } else { T::ONE };
        for q in (0..p).step_by(nr) {
            let starts = [start(q), start(q + lanes)];
            for ip in 0..w.panels {
                let a = &w.data[(kb * w.panels + ip) * mr * w.kstep..][..kc * mr];
                let rows = mr.min(cog - ip * mr);
                let c = &mut dst[ip * mr * p + q..];
                rk.run(kc, a, &offs, x.as_slice(), starts, rows, c, p, T::ONE, beta);
            }
        }
    }
}

/// The kernel a weight gradient can run with in place, if any: the CPU's SIMD
/// kernel, for up to [`IN_PLACE_MAX_COUT`] output channels a group.
pub(super) fn gather_kernel<T: Element>(geo: &Geometry) -> Option<GatherKernel<T>> {
    let fits = geo.p() > 0 && geo.k() > 0 && geo.cout_g() <= IN_PLACE_MAX_COUT;
    T::gather_kernel().filter(|_| fits)
}

/// Output channels a group above which the weight gradient packs its patches: each
/// packed value then serves that many rows, and reading in place no longer pays.
const IN_PLACE_MAX_COUT: usize = 256;

/// A tiles (of MR taps) per block of the weight gradient: a block's A stays in
/// cache while each B panel passes over it in L1.
const A_BLOCK: usize = 16;

/// Where each output position of an image reads tap offset 0 in its padded image:
/// `oy·sh·Wp + ox·sw`.
pub(super) fn positions(geo: &Geometry, wp: usize) -> Vec<usize> {
    let (sh, sw) = geo.spec.stride;
    (0..geo.p())
        .map(|q| (q / geo.wo) * sh * wp + (q % geo.wo) * sw)
        .collect()
}

/// `dst ← patches_g · gy_gᵀ + β·dst` over the positions whose tap-0 offsets in the
/// padded images `x` are `positions` (the depth), `gy_t` being gy at those
/// positions as a `positions × C_out/g` operand: `dst` is group g's `dWᵀ`,
/// `K × C_out/g` row-major. B (gy's transpose) is packed per depth block; A is read
/// in place, in blocks of [`A_BLOCK`] tiles. With `parallel`, the rows of `dst`
/// (the taps) split across the threads in whole panels (the result does not depend
/// on it).
#[allow(clippy::too_many_arguments)]
pub(super) fn weight_grad_in_place<T: Element>(
    gk: &GatherKernel<T>,
    geo: &Geometry,
    taps: &[usize],
    positions: &[usize],
    x: &Padded<T>,
    gy_t: &impl PanelSource<T>,
    g: usize,
    beta: T,
    dst: &mut [T],
    parallel: bool,
) {
    let (k, cog, depth) = (geo.k(), geo.cout_g(), positions.len());
    let (mr, nr) = (gk.tile.mr, gk.tile.nr);
    let (hp, wp) = x.size();
    let group_base = g * geo.cin_g() * hp * wp;
    let (kblocks, kstep) = depth_blocks::<T>(depth);
    let panels = k.div_ceil(mr);
    let per_task = panels.div_ceil(if parallel { parallel::threads() } else { 1 });
    parallel::for_each_chunk_if(dst, per_task * mr * cog, parallel, |start, rows_out| {
        let first_panel = start / (mr * cog);
        let b_panels = cog.div_ceil(nr);
        let mut packed = Scratch::new(b_panels * kstep * nr, T::zero());
        let task_panels = first_panel..first_panel + rows_out.len().div_ceil(mr * cog);
        // Row offsets of a block's tiles; a cut tile repeats its last row (computed,
        // not stored).
        let mut rows = [0usize; A_BLOCK * 8];
        for kb in 0..kblocks {
            let (p0, kc) = (kb * kstep, kstep.min(depth - kb * kstep));
            let cols = Offsets::new(&positions[p0..p0 + kc]);
            let beta = if kb == 0 { beta } else { T::ONE };
            for (jp, b) in packed.chunks_exact_mut(kstep * nr).enumerate() {
                gy_t.pack(p0, kc, jp * nr, nr, &mut b[..kc * nr]);
            }
            // Blocks of A tiles (the taps at the block's positions, a few KiB)
            // stay in cache while every B panel passes over them, each panel in
            // L1 for the whole block.
            for block0 in task_panels.clone().step_by(A_BLOCK) {
                let block = block0..task_panels.end.min(block0 + A_BLOCK);
                for ip in block.clone() {
                    let height = mr.min(k - ip * mr);
                    let at = (ip - block0) * mr;
                    for (i, r) in rows[at..at + mr].iter_mut().enumerate() {
                        *r = group_base + taps[ip * mr + i.min(height - 1)];
                    }
                }
                for (jp, b) in packed.chunks_exact(kstep * nr).enumerate() {
                    let b = &b[..kc * nr];
                    for ip in block.clone() {
                        let height = mr.min(k - ip * mr);
                        let at = (ip - block0) * mr;
                        let tile_rows = Offsets::new(&rows[at..at + mr]);
                        let tile = (height, nr.min(cog - jp * nr));
                        let c = &mut rows_out[(ip - first_panel) * mr * cog + jp * nr..];
                        let x = x.as_slice();
                        gk.run(kc, x, &tile_rows, &cols, b, tile, c, cog, T::ONE, beta);
                    }
                }
            }
        }
    });
}

/// `dw[(g·C_out/g + co)·K + r] = dw_t[g][r][co]`: the groups' `dWᵀ` blocks (each
/// `K × C_out/g`) transposed into `dW` (`[C_out, K]`), in 32 × 32 tiles whose
/// source lines stay in cache (element by element, the strided reads of a large
/// gradient miss the cache); bands of 32 rows of `dW` split across the threads when
/// large.
pub(super) fn untranspose<T: Element>(geo: &Geometry, dw_t: &[T], dw: &mut [T]) {
    const TILE: usize = 32;
    let (k, cog) = (geo.k(), geo.cout_g());
    parallel::for_each_chunk_sized(dw, TILE * k, |start, band| {
        let first = start / k.max(1);
        for r0 in (0..k).step_by(TILE) {
            for (i, row) in band.chunks_exact_mut(k).enumerate() {
                let (g, co) = ((first + i) / cog, (first + i) % cog);
                let src = &dw_t[g * k * cog..(g + 1) * k * cog];
                for (r, v) in row.iter_mut().enumerate().take(k.min(r0 + TILE)).skip(r0) {
                    *v = src[r * cog + co];
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::super::patches::{taps, Patches, PatchesT};
    use super::*;
    use crate::kernels::gemm::{self, Scalar};
    use crate::ops::conv::Conv2dSpec;
    use crate::rng::Rng;
    use crate::tensor::Tensor;
    use proptest::prelude::*;

    /// The forward of one image in place and packed, for geometry `spec` with
    /// output `ho × wo`; `None` when the CPU has no SIMD kernel.
    #[allow(clippy::too_many_arguments)]
    fn both<T: Element>(
        (cin, cout_g, groups): (usize, usize, usize),
        (kh, kw): (usize, usize),
        spec: Conv2dSpec,
        (ho, wo): (usize, usize),
        seed: u64,
    ) -> Option<(Vec<T>, Vec<T>)> {
        let (sh, _) = spec.stride;
        let (dh, dw) = spec.dilation;
        // The padded extents the output needs; padding at most what leaves a row.
        let (eh, ew) = ((ho - 1) * sh + dh * (kh - 1) + 1, wo + dw * (kw - 1));
        let spec = Conv2dSpec {
            padding: (
                spec.padding.0.min((eh - 1) / 2),
                spec.padding.1.min((ew - 1) / 2),
            ),
            ..spec
        };
        let (h, w) = (eh - 2 * spec.padding.0, ew - 2 * spec.padding.1);
        let cin = cin * groups;
        let cout = cout_g * groups;
        let geo = Geometry::new("test", &[1, cin, h, w], &[cout, cin / groups, kh, kw], spec)
            .expect("a valid geometry");
        let rk = row_kernel::<T>(&geo)?;
        let mut rng = Rng::new(seed);
        let x = Tensor::<T>::rand_normal(&[cin * h * w], 0.0, 1.0, &mut rng).unwrap();
        let ws = Tensor::<T>::rand_normal(&[cout * geo.k()], 0.0, 1.0, &mut rng).unwrap();
        let (x, ws) = (x.to_vec(), ws.to_vec());
        let padded = Padded::new(&geo, &x, 1);
        let taps = taps(&geo);
        let p = geo.p();
        let mut direct = vec![T::zero(); cout * p];
        let mut packed = vec![T::zero(); cout * p];
        for g in 0..groups {
            let dst = &mut direct[g * cout_g * p..(g + 1) * cout_g * p];
            let wp = PackedWeights::new(&geo, &ws, g, &rk);
            forward_image(&rk, &geo, &taps, &wp, &padded, g, dst);
            let w_t = block(&ws, g * cout_g * geo.k(), cout_g, geo.k(), true);
            let b = Patches {
                geo: &geo,
                taps: &taps,
                x: &padded,
                g,
                q0: 0,
                q1: p,
            };
            let dst = &mut packed[g * cout_g * p..(g + 1) * cout_g * p];
            gemm::gemm(T::ONE, &w_t, &b, T::ZERO, dst, p, false);
        }
        Some((direct, packed))
    }

    proptest! {
        /// Reading the patches in place gives the packed path's bits, in f32 and
        /// f64, across row strides, dilations, paddings, groups, channel counts
        /// that cut the last tile, and depths of one to several blocks.
        #[test]
        fn in_place_patches_give_the_packed_bits(
            channels in (1usize..40, 1usize..20, 1usize..3),
            kernel in (1usize..4, 1usize..4),
            (sh, ph, pw) in (1usize..3, 0usize..2, 0usize..2),
            dilation in (1usize..3, 1usize..3),
            (rows, runs) in (1usize..4, 1usize..3),
            seed in 0u64..1000,
        ) {
            let spec = Conv2dSpec {
                stride: (sh, 1),
                padding: (ph, pw),
                dilation,
                groups: channels.2,
            };
            let lanes32 = f32::row_kernel().map_or(16, |k| k.lanes());
            let lanes64 = f64::row_kernel().map_or(8, |k| k.lanes());
            let out32 = (2 * rows, lanes32 * runs);
            let out64 = (2 * rows, lanes64 * runs);
            if let Some((d, p)) = both::<f32>(channels, kernel, spec, out32, seed) {
                prop_assert!(d == p, "f32 {spec:?} {channels:?} {kernel:?}");
            }
            if let Some((d, p)) = both::<f64>(channels, kernel, spec, out64, seed) {
                prop_assert!(d == p, "f64 {spec:?} {channels:?} {kernel:?}");
            }
        }
    }

    /// One image's weight gradient with the patches read in place and packed
    /// (`dW_g` of each group, `[C_out, K]`), for any stride and dilation.
    fn weight_grads<T: Element>(
        (cin, cout_g, groups): (usize, usize, usize),
        (kh, kw): (usize, usize),
        spec: Conv2dSpec,
        (h, w): (usize, usize),
        seed: u64,
    ) -> Option<(Vec<T>, Vec<T>)> {
        let (cin, cout) = (cin * groups, cout_g * groups);
        let geo =
            Geometry::new("test", &[1, cin, h, w], &[cout, cin / groups, kh, kw], spec).ok()?;
        let gk = T::gather_kernel()?;
        let mut rng = Rng::new(seed);
        let x = Tensor::<T>::rand_normal(&[cin * h * w], 0.0, 1.0, &mut rng)
            .unwrap()
            .to_vec();
        let gy = Tensor::<T>::rand_normal(&[cout * geo.p()], 0.0, 1.0, &mut rng)
            .unwrap()
            .to_vec();
        let padded = Padded::new(&geo, &x, 1);
        let taps = taps(&geo);
        let (k, p) = (geo.k(), geo.p());
        let positions = positions(&geo, padded.size().1);
        let mut in_place_t = vec![T::zero(); cout * k];
        let mut packed = vec![T::zero(); cout * k];
        for g in 0..groups {
            let dst_t = &mut in_place_t[g * k * cout_g..(g + 1) * k * cout_g];
            let gy_t = block(&gy, g * cout_g * p, cout_g, p, true);
            let (pos, x) = (&positions, &padded);
            // Split across the threads (the rows, in whole panels).
            weight_grad_in_place(&gk, &geo, &taps, pos, x, &gy_t, g, T::ZERO, dst_t, true);
            let gy_t = block(&gy, g * cout_g * p, cout_g, p, true);
            let b = PatchesT(Patches {
                geo: &geo,
                taps: &taps,
                x: &padded,
                g,
                q0: 0,
                q1: p,
            });
            let dst = &mut packed[g * cout_g * k..(g + 1) * cout_g * k];
            gemm::gemm(T::ONE, &gy_t, &b, T::ZERO, dst, k, false);
        }
        let mut in_place = vec![T::zero(); cout * k];
        untranspose(&geo, &in_place_t, &mut in_place);
        Some((in_place, packed))
    }

    proptest! {
        /// The weight gradient with the patches read in place gives the packed
        /// path's bits, in f32 and f64, at any stride, dilation, padding and
        /// grouping, with channel counts that cut tiles and depths (positions) of
        /// one to several blocks.
        #[test]
        fn in_place_weight_gradients_give_the_packed_bits(
            channels in (1usize..12, 1usize..40, 1usize..3),
            kernel in (1usize..4, 1usize..4),
            stride in (1usize..3, 1usize..3),
            padding in (0usize..2, 0usize..2),
            dilation in (1usize..3, 1usize..3),
            size in (4usize..40, 4usize..40),
            seed in 0u64..1000,
        ) {
            let spec = Conv2dSpec { stride, padding, dilation, groups: channels.2 };
            if let Some((i, p)) = weight_grads::<f32>(channels, kernel, spec, size, seed) {
                prop_assert!(i == p, "f32 {spec:?} {channels:?} {kernel:?} {size:?}");
            }
            if let Some((i, p)) = weight_grads::<f64>(channels, kernel, spec, size, seed) {
                prop_assert!(i == p, "f64 {spec:?} {channels:?} {kernel:?} {size:?}");
            }
        }
    }
}
