//! The patch matrix of a convolution (im2col), its adjoint (col2im), and the two
//! GEMM operands that pack straight from the images without materialising it:
//! [`Patches`] (the forward's B, `K × P`) and [`PatchesT`] (the weight
//! gradient's B, `P × K`).
//!
//! Row `r` of the patch matrix of group `g` is input channel `g·C_in/g + r / (kh·kw)`
//! at kernel tap `(r / kw mod kh, r mod kw)`; column `q` of a chunk of images is
//! image `q / P`, output position `q mod P`. Both read a [`Padded`] copy of the
//! chunk's images, whose zero border is written out once: every tap then reads
//! inside the copy, and a row of a panel is a plain copy (a strided gather for
//! strides above 1), with no bounds to clip.

use super::Geometry;
use crate::element::Element;
use crate::kernels::gemm::{self, PanelSource};
use crate::kernels::{copy_run, zero_run};
use crate::storage::Scratch;

/// A chunk of images with their zero padding written out: `[images, C_in, H + 2ph,
/// W + 2pw]`.
pub(super) struct Padded<T: Element> {
    data: Scratch<T>,
    /// Padded height and width.
    hp: usize,
    wp: usize,
}

impl<T: Element> Padded<T> {
    /// The padded copy of `images` consecutive images `x`.
    pub(super) fn new(geo: &Geometry, x: &[T], images: usize) -> Self {
        let (ph, pw) = geo.spec.padding;
        let (hp, wp) = padded_size(geo);
        let mut data = Scratch::new(images * geo.cin * hp * wp, T::zero());
        for (plane, src) in data
            .chunks_exact_mut(hp * wp)
            .zip(x.chunks_exact(geo.h * geo.w))
        {
            zero_run(&mut plane[..ph * wp]);
            zero_run(&mut plane[(ph + geo.h) * wp..]);
            for (row, s) in plane[ph * wp..(ph + geo.h) * wp]
                .chunks_exact_mut(wp)
                .zip(src.chunks_exact(geo.w))
            {
                zero_run(&mut row[..pw]);
                copy_run(&mut row[pw..pw + geo.w], s);
                zero_run(&mut row[pw + geo.w..]);
            }
        }
        Padded { data, hp, wp }
    }

    /// A zeroed padded buffer for `images` images (col2im's target).
    pub(super) fn zeros(geo: &Geometry, images: usize) -> Self {
        let (hp, wp) = padded_size(geo);
        let mut data = Scratch::new(images * geo.cin * hp * wp, T::zero());
        zero_run(&mut data);
        Padded { data, hp, wp }
    }

    /// The interior (the images without their border) into `dx`.
    pub(super) fn crop_into(&self, geo: &Geometry, dx: &mut [T]) {
        let (ph, pw) = geo.spec.padding;
        for (plane, out) in self
            .data
            .chunks_exact(self.hp * self.wp)
            .zip(dx.chunks_exact_mut(geo.h * geo.w))
        {
            for (row, o) in plane[ph * self.wp..]
                .chunks_exact(self.wp)
                .zip(out.chunks_exact_mut(geo.w))
            {
                copy_run(o, &row[pw..pw + geo.w]);
            }
        }
    }
}

/// Offsets of the K rows' taps in a padded image: `c·Hp·Wp + i·dh·Wp + j·dw` (the
/// element read by output position (0, 0)), worked out once per convolution.
pub(super) fn taps(geo: &Geometry) -> Vec<usize> {
    let (dh, dw) = geo.spec.dilation;
    let (hp, wp) = padded_size(geo);
    (0..geo.k())
        .map(|r| {
            let (c, ij) = (r / (geo.kh * geo.kw), r % (geo.kh * geo.kw));
            let (i, j) = (ij / geo.kw, ij % geo.kw);
            c * hp * wp + i * dh * wp + j * dw
        })
        .collect()
}

/// The padded height and width.
fn padded_size(geo: &Geometry) -> (usize, usize) {
    let (ph, pw) = geo.spec.padding;
    (geo.h + 2 * ph, geo.w + 2 * pw)
}

/// A run of a chunk's positions that share an image and an output row: columns
/// `t..t + len` of the block are output row `oy`, columns `ox0..ox0 + len`, of
/// image `img`.
#[derive(Clone, Copy)]
struct Run {
    t: usize,
    img: usize,
    oy: usize,
    ox0: usize,
    len: usize,
}

/// The runs of the chunk's positions `q0..q1`.
fn runs(geo: &Geometry, q0: usize, q1: usize) -> Vec<Run> {
    let mut out = Vec::with_capacity((q1 - q0) / geo.wo.max(1) + 2);
    if q0 >= q1 {
        return out;
    }
    let (mut img, pos) = (q0 / geo.p(), q0 % geo.p());
    let (mut oy, mut ox0) = (pos / geo.wo, pos % geo.wo);
    let mut t = 0;
    while t < q1 - q0 {
        let len = (geo.wo - ox0).min(q1 - q0 - t);
        out.push(Run {
            t,
            img,
            oy,
            ox0,
            len,
        });
        t += len;
        (ox0, oy) = (0, oy + 1);
        if oy == geo.ho {
            (oy, img) = (0, img + 1);
        }
    }
    out
}

impl Run {
    /// The padded-image offset read by this run's first position at tap offset 0,
    /// in group `g`.
    fn base<T: Element>(&self, geo: &Geometry, x: &Padded<T>, g: usize) -> usize {
        let (sh, sw) = geo.spec.stride;
        ((self.img * geo.cin + g * geo.cin_g()) * x.hp + self.oy * sh) * x.wp + self.ox0 * sw
    }
}

/// Writes rows `r0..r1` of the patch matrix of group `g`, positions `q0..q1` of the
/// padded images `x`, into `out` as `r1 − r0` rows of stride `ld` (≥ q1 − q0; the
/// columns past q1 − q0 are left alone).
#[allow(clippy::too_many_arguments)]
pub(super) fn im2col_rows<T: Element>(
    geo: &Geometry,
    taps: &[usize],
    x: &Padded<T>,
    g: usize,
    (r0, r1): (usize, usize),
    (q0, q1): (usize, usize),
    out: &mut [T],
    ld: usize,
) {
    let sw = geo.spec.stride.1;
    let runs = runs(geo, q0, q1);
    let bases: Vec<usize> = runs.iter().map(|run| run.base(geo, x, g)).collect();
    for (&tap, dst) in taps[r0..r1].iter().zip(out.chunks_mut(ld)) {
        for (run, &base) in runs.iter().zip(&bases) {
            let out = &mut dst[run.t..run.t + run.len];
            let first = base + tap;
            if sw == 1 {
                copy_run(out, &x.data[first..first + run.len]);
            } else {
                for (k, o) in out.iter_mut().enumerate() {
                    *o = x.data[first + k * sw];
                }
            }
        }
    }
}

/// The adjoint of [`im2col_rows`] over all K rows: adds the patch matrix `col`
/// (`[K, q1 − q0]`) into the padded images `dx`.
pub(super) fn col2im<T: Element>(
    geo: &Geometry,
    taps: &[usize],
    col: &[T],
    g: usize,
    (q0, q1): (usize, usize),
    dx: &mut Padded<T>,
) {
    let sw = geo.spec.stride.1;
    let runs = runs(geo, q0, q1);
    let bases: Vec<usize> = runs.iter().map(|run| run.base(geo, dx, g)).collect();
    for (&tap, src) in taps.iter().zip(col.chunks(q1 - q0)) {
        for (run, &base) in runs.iter().zip(&bases) {
            let first = base + tap;
            for (k, &v) in src[run.t..run.t + run.len].iter().enumerate() {
                dx.data[first + k * sw] = dx.data[first + k * sw] + v;
            }
        }
    }
}

/// The patch matrix of group `g` of the padded images `x` at the chunk's positions
/// `q0..q1`, as the B operand `K × (q1 − q0)` of the forward GEMM: each panel is
/// written from the images directly.
pub(super) struct Patches<'a, T: Element> {
    pub geo: &'a Geometry,
    pub taps: &'a [usize],
    pub x: &'a Padded<T>,
    pub g: usize,
    pub q0: usize,
    pub q1: usize,
}

impl<T: Element> PanelSource<T> for Patches<'_, T> {
    fn depth(&self) -> usize {
        self.geo.k()
    }
    fn width(&self) -> usize {
        self.q1 - self.q0
    }
    fn pack(&self, k0: usize, kc: usize, j0: usize, w: usize, out: &mut [T]) {
        let valid = w.min(self.width().saturating_sub(j0));
        let out = &mut out[..kc * w];
        let q = self.q0 + j0;
        im2col_rows(
            self.geo,
            self.taps,
            self.x,
            self.g,
            (k0, k0 + kc),
            (q, q + valid),
            out,
            w,
        );
        if valid < w {
            for row in out.chunks_exact_mut(w) {
                zero_run(&mut row[valid..]);
            }
        }
    }
}

/// The transposed patch matrix `(q1 − q0) × K` of group `g`, the B operand of the
/// weight gradient (`dW_g = gy_g · colᵀ`): each panel is lowered into a small
/// buffer (`w` rows of the patch matrix) and transposed into place.
pub(super) struct PatchesT<'a, T: Element>(pub Patches<'a, T>);

impl<T: Element> PanelSource<T> for PatchesT<'_, T> {
    fn depth(&self) -> usize {
        self.0.width()
    }
    fn width(&self) -> usize {
        self.0.depth()
    }
    fn pack(&self, k0: usize, kc: usize, j0: usize, w: usize, out: &mut [T]) {
        let valid = w.min(self.width().saturating_sub(j0));
        let out = &mut out[..kc * w];
        if valid < w {
            for row in out.chunks_exact_mut(w) {
                zero_run(&mut row[valid..]);
            }
        }
        let p = &self.0;
        let q = p.q0 + k0;
        gemm::with_scratch(valid * kc, |rows: &mut [T]| {
            im2col_rows(
                p.geo,
                p.taps,
                p.x,
                p.g,
                (j0, j0 + valid),
                (q, q + kc),
                rows,
                kc,
            );
            gemm::pack_transposed(rows, 0, kc as isize, valid, kc, out, w);
        });
    }
}
