//! The forward of a convolution with unit stride along the width, its patches read
//! where they lie. Row r of the patch matrix, at output positions `(oy, ox..ox+l)`,
//! is the run of the padded image at `taps[r] + oy·sh·Wp + ox`: a GEMM with a
//! [`RowKernel`] reads those runs in place instead of copying each value into a
//! packed panel, which for a 64 → 64 3×3 convolution on 32×32 images was a sixth of
//! the forward's time. The weights are packed once per convolution, as the GEMM
//! packs A, and the depth is cut into the GEMM's blocks, so every output element is
//! the same chain as through the packed path: the same bits.

use super::patches::Padded;
use super::per_image::block;
use super::Geometry;
use crate::element::Element;
use crate::kernels::gemm::{depth_blocks, PanelSource, RowKernel, RowOffsets};
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
        let offs = RowOffsets::new(&taps[k0..k0 + kc]);
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

#[cfg(test)]
mod tests {
    use super::super::patches::{taps, Patches};
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
}
