//! Convolutions of images large enough to be lowered one at a time (at least
//! [`IMAGE_POSITIONS`](super::IMAGE_POSITIONS) output positions): each image's
//! product is one GEMM whose patch-matrix operand is packed straight from the
//! image ([`Patches`], [`PatchesT`]), so the patch matrix is never written out —
//! or, where a SIMD kernel can, read in place from the padded image ([`direct`]).
//! The batch splits across threads by images; the weight gradient sums the images
//! in [`WEIGHT_GRAD_GROUPS`](super::WEIGHT_GRAD_GROUPS) fixed groups, then the
//! groups in order, so every result is the same bits whatever the thread count.

use super::direct;
use super::operand::block;
use super::patches::{col2im, taps, Padded, Patches, PatchesT};
use super::{Geometry, WEIGHT_GRAD_GROUPS};
use crate::element::Element;
use crate::kernels::gemm;
use crate::parallel;
use crate::storage::{self, Scratch};

/// `y = conv(x, w) + b` into `out` (`[N, C_out, P]`): the bias (one per output
/// channel, if any) is added to each image's output while it is still in cache.
pub(super) fn forward<T: Element>(
    geo: &Geometry,
    xs: &[T],
    ws: &[T],
    bias: Option<&[T]>,
    out: &mut [T],
) {
    let taps = taps(geo);
    let (k, p, cog) = (geo.k(), geo.p(), geo.cout_g());
    let across = geo.across_images();
    // Patches read in place (one image a thread, so only when the images split
    // across the threads or there is one thread), the weights packed once.
    let in_place = direct::row_kernel::<T>(geo)
        .filter(|_| !geo.pointwise() && (across || parallel::threads() == 1))
        .map(|rk| {
            let packed: Vec<_> = (0..geo.groups())
                .map(|g| direct::PackedWeights::new(geo, ws, g, &rk))
                .collect();
            (rk, packed)
        });
    parallel::for_each_chunk_if(out, geo.out_image(), across, |start, region| {
        let img = start / geo.out_image();
        let x = &xs[img * geo.in_image()..(img + 1) * geo.in_image()];
        let padded = (!geo.pointwise()).then(|| Padded::new(geo, x, 1));
        for g in 0..geo.groups() {
            // A = W_g (C_out/g × K), given transposed.
            let w_t = block(ws, g * cog * k, cog, k, true);
            let dst = &mut region[g * cog * p..(g + 1) * cog * p];
            match (&padded, &in_place) {
                (None, _) => {
                    let b = block(x, g * k * p, k, p, false);
                    gemm::gemm(T::ONE, &w_t, &b, T::ZERO, dst, p, !across);
                }
                (Some(x), Some((rk, packed))) => {
                    direct::forward_image(rk, geo, &taps, &packed[g], x, g, dst);
                }
                (Some(x), None) => {
                    let b = Patches {
                        geo,
                        taps: &taps,
                        x,
                        g,
                        q0: 0,
                        q1: p,
                    };
                    gemm::gemm(T::ONE, &w_t, &b, T::ZERO, dst, p, !across);
                }
            }
        }
        if let Some(bias) = bias {
            super::add_bias(region, bias, p);
        }
    });
}

/// `dx = convᵀ(gy, w)` into `dx` (`[N, C_in, H, W]`) by the patch-matrix product
/// `W_gᵀ · gy_g` and its scatter (col2im) — for the geometries the flipped-kernel
/// convolution does not cover (strides above 1).
pub(super) fn input_grad<T: Element>(geo: &Geometry, gs: &[T], ws: &[T], dx: &mut [T]) {
    let taps = taps(geo);
    let (k, p, cog) = (geo.k(), geo.p(), geo.cout_g());
    let across = geo.across_images();
    parallel::for_each_chunk_if(dx, geo.in_image(), across, |start, region| {
        let img = start / geo.in_image();
        let gy = &gs[img * geo.out_image()..(img + 1) * geo.out_image()];
        let mut col = (!geo.pointwise()).then(|| Scratch::new(k * p, T::zero()));
        let mut padded = (!geo.pointwise()).then(|| Padded::zeros(geo, 1));
        for g in 0..geo.groups() {
            // A = W_gᵀ (K × C_out/g): its transpose is W_g's rows.
            let w = block(ws, g * cog * k, cog, k, false);
            let b = block(gy, g * cog * p, cog, p, false);
            match col.as_deref_mut() {
                None => {
                    let dst = &mut region[g * k * p..(g + 1) * k * p];
                    gemm::gemm(T::ONE, &w, &b, T::ZERO, dst, p, !across);
                }
                Some(col) => {
                    gemm::gemm(T::ONE, &w, &b, T::ZERO, col, p, !across);
                    let dx = padded.as_mut().expect("made with col");
                    col2im(geo, &taps, col, g, (0, p), dx);
                }
            }
        }
        if let Some(dx) = &padded {
            dx.crop_into(geo, region);
        }
    });
}

/// `dW = Σ_images gy_i · colᵢᵀ`, the images summed in [`WEIGHT_GRAD_GROUPS`] fixed
/// groups (in parallel), then the groups' partial sums in group order.
pub(super) fn weight_grad<T: Element>(geo: &Geometry, gs: &[T], xs: &[T]) -> Vec<T> {
    let taps = taps(geo);
    let (k, p, cog) = (geo.k(), geo.p(), geo.cout_g());
    let per = geo.n.div_ceil(WEIGHT_GRAD_GROUPS).max(1);
    let parts = geo.n.div_ceil(per);
    if parts == 0 {
        return vec![T::zero(); geo.cout * k];
    }
    let across = parts > 1 && geo.work() >= super::PAR_CONV_WORK;
    // Patches read in place (one part a thread, so only when the parts split
    // across the threads or there is one thread).
    let in_place = direct::gather_kernel::<T>(geo)
        .filter(|_| !geo.pointwise() && (across || parallel::threads() == 1));
    let partials = parallel::map_collect(parts, if across { usize::MAX } else { 0 }, |part| {
        let first = part * per;
        if let Some(gk) = &in_place {
            return part_in_place(gk, geo, &taps, first..geo.n.min(first + per), gs, xs);
        }
        let mut acc = Scratch::new(geo.cout * k, T::zero());
        for img in first..geo.n.min(first + per) {
            let x = &xs[img * geo.in_image()..(img + 1) * geo.in_image()];
            let gy = &gs[img * geo.out_image()..(img + 1) * geo.out_image()];
            let beta = if img == first { T::ZERO } else { T::ONE };
            let padded = (!geo.pointwise()).then(|| Padded::new(geo, x, 1));
            for g in 0..geo.groups() {
                // A = gy_g (C_out/g × P), given transposed; B = col_gᵀ (P × K).
                let gy_t = block(gy, g * cog * p, cog, p, true);
                let dst = &mut acc[g * cog * k..(g + 1) * cog * k];
                match &padded {
                    None => {
                        let b = block(x, g * k * p, k, p, true);
                        gemm::gemm(T::ONE, &gy_t, &b, beta, dst, k, !across);
                    }
                    Some(x) => {
                        let b = PatchesT(Patches {
                            geo,
                            taps: &taps,
                            x,
                            g,
                            q0: 0,
                            q1: p,
                        });
                        gemm::gemm(T::ONE, &gy_t, &b, beta, dst, k, !across);
                    }
                }
            }
        }
        acc
    });
    let mut dw = storage::scratch(geo.cout * k, T::zero());
    dw.copy_from_slice(&partials[0]);
    for part in &partials[1..] {
        for (d, &v) in dw.iter_mut().zip(part.iter()) {
            *d = *d + v;
        }
    }
    dw
}

/// One part's `Σ_images gy_i · colᵢᵀ` (`[C_out, K]`) with the patches read in place:
/// each group's `dWᵀ` summed over the images in order, then transposed.
fn part_in_place<T: Element>(
    gk: &gemm::GatherKernel<T>,
    geo: &Geometry,
    taps: &[usize],
    images: std::ops::Range<usize>,
    gs: &[T],
    xs: &[T],
) -> Scratch<T> {
    let (k, p, cog) = (geo.k(), geo.p(), geo.cout_g());
    let mut acc_t = Scratch::new(geo.cout * k, T::zero());
    let mut positions = Vec::new();
    let first = images.start;
    for img in images {
        let x = &xs[img * geo.in_image()..(img + 1) * geo.in_image()];
        let gy = &gs[img * geo.out_image()..(img + 1) * geo.out_image()];
        let padded = Padded::new(geo, x, 1);
        if positions.is_empty() {
            positions = direct::positions(geo, padded.size().1);
        }
        let beta = if img == first { T::ZERO } else { T::ONE };
        for g in 0..geo.groups() {
            let gy_t = block(gy, g * cog * p, cog, p, true);
            let dst = &mut acc_t[g * k * cog..(g + 1) * k * cog];
            let (pos, x) = (&positions, &padded);
            direct::weight_grad_in_place(gk, geo, taps, pos, x, &gy_t, g, beta, dst, false);
        }
    }
    let mut acc = Scratch::new(geo.cout * k, T::zero());
    direct::untranspose(geo, &acc_t, &mut acc);
    acc
}
