//! Convolutions of small images (fewer than
//! [`IMAGE_POSITIONS`](super::IMAGE_POSITIONS) output positions, the deep layers
//! of a network) or of images too large for one patch matrix: the batch is cut
//! into *chunks* of consecutive images whose patch matrix fits
//! [`COL_BUDGET`](super::COL_BUDGET), so every GEMM has a wide dimension, and an
//! image too large for the budget into *tiles* of positions. Every split depends
//! on the shapes alone, so the results do not depend on the thread count. The
//! weight gradient reads its patches in place where [`direct`] can.

use super::direct;
use super::operand::block;
use super::patches::{col2im, taps, Padded, Patches, PatchesT};
use super::{Geometry, PAR_CONV_WORK};
use crate::element::Element;
use crate::kernels::gemm;
use crate::parallel;
use crate::storage::{self, Scratch};

/// The chunks: (first image, images) pairs covering the batch.
fn chunks(geo: &Geometry) -> Vec<(usize, usize)> {
    let (per, _) = geo.chunking();
    (0..geo.n)
        .step_by(per)
        .map(|i| (i, per.min(geo.n - i)))
        .collect()
}

/// The position tiles `(q0, q1)` of a chunk of `imgs` images.
fn tiles(geo: &Geometry, imgs: usize) -> Vec<(usize, usize)> {
    let (_, tile) = geo.chunking();
    let total = imgs * geo.p();
    (0..total)
        .step_by(tile.max(1))
        .map(|q| (q, (q + tile).min(total)))
        .collect()
}

/// Rows `co0..co0+rows` of the chunk's output-shaped data `y` (images of `[C_out, P]`)
/// at positions `q0..q1`, gathered into `[rows, q1 − q0]` (a recycled buffer, every
/// element written).
fn gather_positions<T: Element>(
    geo: &Geometry,
    y: &[T],
    co0: usize,
    rows: usize,
    q0: usize,
    q1: usize,
) -> Scratch<T> {
    let (p, cols) = (geo.p(), q1 - q0);
    let mut out = Scratch::new(rows * cols, T::zero());
    for (o, dst) in out.chunks_mut(cols).enumerate() {
        let mut q = q0;
        while q < q1 {
            let (img, pos) = (q / p, q % p);
            let len = (p - pos).min(q1 - q);
            let at = img * geo.out_image() + (co0 + o) * p + pos;
            dst[q - q0..q - q0 + len].copy_from_slice(&y[at..at + len]);
            q += len;
        }
    }
    out
}

/// Writes the `[rows, q1 − q0]` block `src` into rows `co0..` of the chunk's
/// output-shaped `y` at positions `q0..q1` (the inverse of [`gather_positions`]).
fn scatter_positions<T: Element>(
    geo: &Geometry,
    src: &[T],
    co0: usize,
    q0: usize,
    q1: usize,
    y: &mut [T],
) {
    let (p, cols) = (geo.p(), q1 - q0);
    for (o, row) in src.chunks(cols).enumerate() {
        let mut q = q0;
        while q < q1 {
            let (img, pos) = (q / p, q % p);
            let len = (p - pos).min(q1 - q);
            let at = img * geo.out_image() + (co0 + o) * p + pos;
            y[at..at + len].copy_from_slice(&row[q - q0..q - q0 + len]);
            q += len;
        }
    }
}

/// `y = conv(x, w)` into `out`, chunk by chunk (chunks in parallel).
pub(super) fn forward<T: Element>(geo: &Geometry, xs: &[T], ws: &[T], out: &mut [T]) {
    let taps = taps(geo);
    let (per, _) = geo.chunking();
    let (k, cog) = (geo.k(), geo.cout_g());
    let across = geo.work() >= PAR_CONV_WORK;
    parallel::for_each_chunk_if(out, per * geo.out_image(), across, |start, region| {
        let img0 = start / geo.out_image();
        let imgs = region.len() / geo.out_image();
        let x = Padded::new(
            geo,
            &xs[img0 * geo.in_image()..(img0 + imgs) * geo.in_image()],
            imgs,
        );
        for g in 0..geo.groups() {
            let w_t = block(ws, g * cog * k, cog, k, true);
            for (q0, q1) in tiles(geo, imgs) {
                let b = Patches {
                    geo,
                    taps: &taps,
                    x: &x,
                    g,
                    q0,
                    q1,
                };
                // Fully written by the GEMM (β = 0), so a recycled buffer will do.
                let mut tmp = Scratch::new(cog * (q1 - q0), T::zero());
                gemm::gemm(T::ONE, &w_t, &b, T::ZERO, &mut tmp, q1 - q0, true);
                scatter_positions(geo, &tmp, g * cog, q0, q1, region);
            }
        }
    });
}

/// `dx = convᵀ(gy, w)` into `dx` by the patch-matrix product and col2im, chunk by
/// chunk (for the geometries the flipped-kernel convolution does not cover).
pub(super) fn input_grad<T: Element>(geo: &Geometry, gs: &[T], ws: &[T], dx: &mut [T]) {
    let taps = taps(geo);
    let (per, _) = geo.chunking();
    let (k, cog) = (geo.k(), geo.cout_g());
    let across = geo.work() >= PAR_CONV_WORK;
    parallel::for_each_chunk_if(dx, per * geo.in_image(), across, |start, region| {
        let img0 = start / geo.in_image();
        let imgs = region.len() / geo.in_image();
        let mut padded = Padded::zeros(geo, imgs);
        let gy = &gs[img0 * geo.out_image()..(img0 + imgs) * geo.out_image()];
        for g in 0..geo.groups() {
            let w = block(ws, g * cog * k, cog, k, false);
            for (q0, q1) in tiles(geo, imgs) {
                let cols = q1 - q0;
                let gathered = gather_positions(geo, gy, g * cog, cog, q0, q1);
                let mut col = Scratch::new(k * cols, T::zero());
                let b = block(&gathered, 0, cog, cols, false);
                gemm::gemm(T::ONE, &w, &b, T::ZERO, &mut col, cols, true);
                col2im(geo, &taps, &col, g, (q0, q1), &mut padded);
            }
        }
        padded.crop_into(geo, region);
    });
}

/// `dW = Σ_chunks gy · colᵀ`, chunk by chunk in order: each chunk's product is one
/// (parallel) GEMM whose depth runs over the chunk's positions, added to the sum.
pub(super) fn weight_grad<T: Element>(geo: &Geometry, gs: &[T], xs: &[T]) -> Vec<T> {
    let taps = taps(geo);
    let (k, cog) = (geo.k(), geo.cout_g());
    if geo.n == 0 {
        return vec![T::zero(); geo.cout * k];
    }
    // Every group's block is written by its first product (β = 0). With the
    // patches read in place the products give dWᵀ, transposed at the end.
    let in_place = direct::gather_kernel::<T>(geo);
    let mut dw = storage::scratch(geo.cout * k, T::zero());
    let mut dw_t = in_place.map(|_| Scratch::new(geo.cout * k, T::zero()));
    let mut first = vec![true; geo.groups()];
    for (img0, imgs) in chunks(geo) {
        let x = Padded::new(
            geo,
            &xs[img0 * geo.in_image()..(img0 + imgs) * geo.in_image()],
            imgs,
        );
        let gy = &gs[img0 * geo.out_image()..(img0 + imgs) * geo.out_image()];
        // With the patches in place, each of the chunk's positions' tap-0 offset
        // in the padded chunk.
        let (hp, wp) = x.size();
        let image = direct::positions(geo, wp);
        let positions: Vec<usize> = match in_place {
            Some(_) => (0..imgs * geo.p())
                .map(|q| (q / geo.p()) * geo.cin * hp * wp + image[q % geo.p()])
                .collect(),
            None => Vec::new(),
        };
        for g in 0..geo.groups() {
            for (q0, q1) in tiles(geo, imgs) {
                let gathered = gather_positions(geo, gy, g * cog, cog, q0, q1);
                let gy_t = block(&gathered, 0, cog, q1 - q0, true);
                let beta = if std::mem::take(&mut first[g]) {
                    T::ZERO
                } else {
                    T::ONE
                };
                if let (Some(gk), Some(dw_t)) = (&in_place, dw_t.as_deref_mut()) {
                    let dst = &mut dw_t[g * k * cog..(g + 1) * k * cog];
                    let parallel = k * cog * (q1 - q0) >= gemm::PAR_WORK;
                    let pos = &positions[q0..q1];
                    direct::weight_grad_in_place(
                        gk, geo, &taps, pos, &x, &gy_t, g, beta, dst, parallel,
                    );
                    continue;
                }
                let b = PatchesT(Patches {
                    geo,
                    taps: &taps,
                    x: &x,
                    g,
                    q0,
                    q1,
                });
                let dst = &mut dw[g * cog * k..(g + 1) * cog * k];
                gemm::gemm(T::ONE, &gy_t, &b, beta, dst, k, true);
            }
        }
    }
    if let Some(dw_t) = &dw_t {
        direct::untranspose(geo, dw_t, &mut dw);
    }
    dw
}
