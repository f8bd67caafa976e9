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
use crate::kernels::{copy_rows, copy_run, gather_runs, zero_run};
use crate::parallel;
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
    /// The padded copy of `images` consecutive images `x` (a chunk's planes split
    /// across the threads when large: the copy runs before the chunk's GEMM).
    pub(super) fn new(geo: &Geometry, x: &[T], images: usize) -> Self {
        let (ph, pw) = geo.spec.padding;
        let (hp, wp) = padded_size(geo);
        let mut data = Scratch::new(images * geo.cin * hp * wp, T::zero());
        let (plane_len, image_plane) = (hp * wp, geo.h * geo.w);
        parallel::for_each_chunk_sized(&mut data, plane_len, |start, plane| {
            let at = start / plane_len.max(1) * image_plane;
            // Two calls a plane, whatever its height: the whole plane zeroed, then
            // the image's rows copied inside the border (a call or three per row
            // cost more than the copy on the deep layers' 4 × 4 and 8 × 8 maps).
            zero_run(plane);
            if geo.h == 0 || geo.w == 0 {
                return;
            }
            copy_rows(
                &mut plane[ph * wp + pw..],
                wp,
                &x[at..at + image_plane],
                (0, geo.w),
                geo.h,
                geo.w,
            );
        });
        Padded { data, hp, wp }
    }

    /// The padded images, `[images, C_in, Hp, Wp]` row-major.
    pub(super) fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// The padded height and width (Hp, Wp).
    pub(super) fn size(&self) -> (usize, usize) {
        (self.hp, self.wp)
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

/// The runs of the chunk's positions `q0..q1`, in order: the first found by
/// division once, the others by stepping (so that walking them again for every row
/// of a panel costs no division and no allocation).
#[derive(Clone, Copy)]
struct Runs {
    next: Run,
    wo: usize,
    ho: usize,
    left: usize,
}

impl Runs {
    fn new(geo: &Geometry, q0: usize, q1: usize) -> Self {
        let (img, pos) = (q0 / geo.p().max(1), q0 % geo.p().max(1));
        let (oy, ox0) = (pos / geo.wo.max(1), pos % geo.wo.max(1));
        let left = q1.saturating_sub(q0);
        Runs {
            next: Run {
                t: 0,
                img,
                oy,
                ox0,
                len: (geo.wo - ox0).min(left),
            },
            wo: geo.wo,
            ho: geo.ho,
            left,
        }
    }
}

impl Iterator for Runs {
    type Item = Run;
    fn next(&mut self) -> Option<Run> {
        if self.left == 0 {
            return None;
        }
        let run = self.next;
        self.left -= run.len;
        let (mut img, mut oy) = (run.img, run.oy + 1);
        if oy == self.ho {
            (oy, img) = (0, img + 1);
        }
        self.next = Run {
            t: run.t + run.len,
            img,
            oy,
            ox0: 0,
            len: self.wo.min(self.left),
        };
        Some(run)
    }
}

/// The runs as (first column, length, padded-image base offset), in `stack` when
/// they fit (a panel's few), else in `heap`.
fn placed<'a>(
    runs: Runs,
    base: impl Fn(&Run) -> usize,
    stack: &'a mut [(usize, usize, usize); 64],
    heap: &'a mut Vec<(usize, usize, usize)>,
) -> &'a [(usize, usize, usize)] {
    let mut count = 0;
    for run in runs {
        let item = (run.t, run.len, base(&run));
        if count < stack.len() {
            stack[count] = item;
        } else {
            if heap.is_empty() {
                heap.extend_from_slice(&stack[..]);
            }
            heap.push(item);
        }
        count += 1;
    }
    if count <= stack.len() {
        &stack[..count]
    } else {
        heap
    }
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
    let mut stack = [(0, 0, 0); 64];
    let mut heap = Vec::new();
    let runs = placed(
        Runs::new(geo, q0, q1),
        |run| run.base(geo, x, g),
        &mut stack,
        &mut heap,
    );
    if sw == 1 {
        gather_runs(out, ld, &x.data, &taps[r0..r1], runs);
        return;
    }
    for (&tap, dst) in taps[r0..r1].iter().zip(out.chunks_mut(ld)) {
        for &(t, len, base) in runs {
            let first = base + tap;
            for (k, o) in dst[t..t + len].iter_mut().enumerate() {
                *o = x.data[first + k * sw];
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
    let mut stack = [(0, 0, 0); 64];
    let mut heap = Vec::new();
    let runs = placed(
        Runs::new(geo, q0, q1),
        |run| run.base(geo, dx, g),
        &mut stack,
        &mut heap,
    );
    for (&tap, src) in taps.iter().zip(col.chunks(q1 - q0)) {
        for &(t, len, base) in runs {
            let first = base + tap;
            for (k, &v) in src[t..t + len].iter().enumerate() {
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
/// weight gradient (`dW_g = gy_g · colᵀ`): at unit stride each panel is
/// transposed straight from the padded image (a run of positions is contiguous at
/// every tap); otherwise it is lowered into a small buffer (`w` rows of the patch
/// matrix) and transposed into place.
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
        if p.geo.spec.stride.1 == 1 {
            // Unit stride: each run of positions is, for every tap, a contiguous
            // piece of the padded image, transposed straight into the panel.
            let (mut stack, mut heap) = ([(0, 0, 0); 64], Vec::new());
            let runs = placed(
                Runs::new(p.geo, q, q + kc),
                |run| run.base(p.geo, p.x, p.g),
                &mut stack,
                &mut heap,
            );
            let taps = &p.taps[j0..j0 + valid];
            for &(t, len, base) in runs {
                let row = |j: usize| &p.x.data[base + taps[j]..base + taps[j] + len];
                gemm::pack_transposed_rows(row, valid, len, &mut out[t * w..], w);
            }
            return;
        }
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
