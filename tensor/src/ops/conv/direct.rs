//! Convolutions whose patches are read where they lie in the padded image rather
//! than packed into GEMM panels (which copies every value of the patch matrix,
//! nine times the image at 3×3, once per image).
//!
//! The forward, with unit stride along the width: row r of the patch matrix, at
//! output positions `(oy, ox..ox+l)`, is the run of the padded image at
//! `taps[r] + oy·sh·Wp + ox`, which a [`RowKernel`] reads in place (for a 64 → 64
//! 3×3 convolution on 32×32 images the packing was a sixth of the forward). The
//! weights are packed once per convolution, as the GEMM packs A.
//!
//! The weight gradient, any geometry: `dWᵀ = patches · gyᵀ`, the patch value at
//! (r, q) being the padded image at `taps[r] + position[q]`, which a
//! [`GatherKernel`] reads in place; only gy is packed.
//!
//! Either way the depth is cut into the GEMM's blocks and each kernel is its packed
//! twin, so every element is the same chain as through the packed path: the same
//! bits.

use super::patches::Padded;
use super::per_image::block;
use super::Geometry;
use crate::element::Element;
use crate::kernels::gemm::{depth_blocks, GatherKernel, Offsets, PanelSource, RowKernel};
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

/// Where each output position of an image reads tap offset 0 in its padded image:
/// `oy·sh·Wp + ox·sw`.
pub(super) fn positions(geo: &Geometry, wp: usize) -> Vec<usize> {
    let (sh, sw) = geo.spec.stride;
    (0..geo.p())
        .map(|q| (q / geo.wo) * sh * wp + (q % geo.wo) * sw)
        .collect()
}

/// `dst ← patches_g · gy_gᵀ + β·dst` for one padded image `x` and its output
/// gradient `gy` (`[C_out, P]`): `dst` is group g's `dWᵀ`, `K × C_out/g`
/// row-major. B (gy's transpose) is packed per depth block, panel by panel; A is
/// read in place.
#[allow(clippy::too_many_arguments)]
pub(super) fn weight_grad_image<T: Element>(
    gk: &GatherKernel<T>,
    geo: &Geometry,
    taps: &[usize],
    positions: &[usize],
    x: &Padded<T>,
    gy: &[T],
    g: usize,
    beta: T,
    dst: &mut [T],
) {
    let (k, p, cog) = (geo.k(), geo.p(), geo.cout_g());
    let (mr, nr) = (gk.tile.mr, gk.tile.nr);
    let (hp, wp) = x.size();
    let group_base = g * geo.cin_g() * hp * wp;
    let gy_t = block(gy, g * cog * p, cog, p, true);
    let (kblocks, kstep) = depth_blocks::<T>(p);
    let mut panel = Scratch::new(kstep * nr, T::zero());
    let mut rows = [0usize; 8];
    for kb in 0..kblocks {
        let (p0, kc) = (kb * kstep, kstep.min(p - kb * kstep));
        let cols = Offsets::new(&positions[p0..p0 + kc]);
        let beta = if kb == 0 { beta } else { T::ONE };
        for jp in 0..cog.div_ceil(nr) {
            let b = &mut panel[..kc * nr];
            gy_t.pack(p0, kc, jp * nr, nr, b);
            let width = nr.min(cog - jp * nr);
            for ip in 0..k.div_ceil(mr) {
                let height = mr.min(k - ip * mr);
                // A cut tile repeats its last row (computed, not stored).
                for (i, r) in rows[..mr].iter_mut().enumerate() {
                    *r = group_base + taps[ip * mr + i.min(height - 1)];
                }
                let c = &mut dst[ip * mr * cog + jp * nr..];
                let rows = Offsets::new(&rows[..mr]);
                let tile = (height, width);
                gk.run(
                    kc,
                    x.as_slice(),
                    &rows,
                    &cols,
                    b,
                    tile,
                    c,
                    cog,
                    T::ONE,
                    beta,
                );
            }
        }
    }
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
        let mut in_place = vec![T::zero(); cout * k];
        let mut packed = vec![T::zero(); cout * k];
        for g in 0..groups {
            let mut dst_t = vec![T::zero(); k * cout_g];
            weight_grad_image(
                &gk,
                &geo,
                &taps,
                &positions,
                &padded,
                &gy,
                g,
                T::ZERO,
                &mut dst_t,
            );
            for co in 0..cout_g {
                for r in 0..k {
                    in_place[(g * cout_g + co) * k + r] = dst_t[r * cout_g + co];
                }
            }
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
