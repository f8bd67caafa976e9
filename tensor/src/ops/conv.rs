//! 2-D convolution (stride, padding, dilation, groups) and its two adjoints, by
//! im2col lowering and GEMM, and the window arg-max of max pooling.
//!
//! Layout: NCHW throughout — input `[N, C_in, H, W]`, weight `[C_out, C_in/groups, kh,
//! kw]`, output `[N, C_out, H_out, W_out]` — as in PyTorch, so checkpoints and shapes
//! carry over.
//!
//! Lowering. An image with at least [`IMAGE_POSITIONS`] output positions whose patch
//! matrix (K = C_in/groups·kh·kw rows, one column per output position) fits
//! [`COL_BUDGET`] elements is lowered and multiplied on its own: the patch matrix is
//! still in cache when the GEMM packs it, the GEMM writes the output rows in place,
//! and the batch is split across threads by images (each GEMM on its thread). The
//! weight gradient sums such images in a fixed number of groups of consecutive images
//! ([`WEIGHT_GRAD_GROUPS`]), then the groups in order. Smaller images are processed in
//! *chunks* of consecutive images whose patch matrix fits [`COL_BUDGET`]: deep layers
//! with few positions per image get many images per chunk, so every GEMM has a wide
//! inner or outer dimension; an image too large for the budget is split into tiles of
//! positions. Every split depends only on the shapes, never on the thread count, and
//! matrixmultiply gives an output element the same operations whatever block it is
//! in, so results are bitwise identical for any number of threads. A 1×1 convolution
//! with unit stride and no padding reads the input in place. Patch matrices come from
//! the storage pool, so they are neither zeroed nor page-faulted on every call.

use crate::element::Element;
use crate::error::{fmt_shape, Error, Result};
use crate::kernels::MatRef;
use crate::layout::checked_numel;
use crate::ops::matmul::gemm_parallel;
use crate::parallel;
use crate::storage::{self, Scratch};
use crate::tensor::Tensor;

/// Largest patch matrix (in elements) one chunk lowers at a time: 16 MiB in f32, so
/// the deepest ResNet layers (K = 4608 rows, 16 positions per image) lower a batch of
/// 32 in one chunk and multiply it in one GEMM.
pub const COL_BUDGET: usize = 1 << 22;

/// Images with at least this many output positions are lowered and multiplied one
/// at a time (when one image's patch matrix fits [`COL_BUDGET`]): one image's patch
/// matrix stays in cache between im2col and the GEMM's packing, the GEMM writes its
/// output rows in place, and the batch splits across threads by images.
pub const IMAGE_POSITIONS: usize = 256;

/// The weight gradient of the one-image-at-a-time path sums the images in this many
/// fixed groups of consecutive images (each its own partial product, summed in
/// group order), so the sum is the same for any number of threads.
pub const WEIGHT_GRAD_GROUPS: usize = 8;

/// Multiply-adds below which a convolution runs on one thread.
const PAR_CONV_WORK: usize = 1 << 22;

/// The geometry of a 2-D convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2dSpec {
    /// Step between windows (rows, columns).
    pub stride: (usize, usize),
    /// Zeros added on each side (rows, columns).
    pub padding: (usize, usize),
    /// Spacing between kernel taps (rows, columns).
    pub dilation: (usize, usize),
    /// Channel groups: input and output channels are split into this many independent
    /// convolutions.
    pub groups: usize,
}

impl Default for Conv2dSpec {
    fn default() -> Self {
        Conv2dSpec {
            stride: (1, 1),
            padding: (0, 0),
            dilation: (1, 1),
            groups: 1,
        }
    }
}

impl Conv2dSpec {
    /// Stride `s`, padding `p` on both axes.
    pub fn new(stride: usize, padding: usize) -> Self {
        Conv2dSpec {
            stride: (stride, stride),
            padding: (padding, padding),
            ..Conv2dSpec::default()
        }
    }
}

/// Every size of one convolution, checked.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry {
    pub n: usize,
    pub cin: usize,
    pub h: usize,
    pub w: usize,
    pub cout: usize,
    pub kh: usize,
    pub kw: usize,
    pub ho: usize,
    pub wo: usize,
    pub spec: Conv2dSpec,
}

impl Geometry {
    /// Checks an input shape, a weight shape and a spec against each other.
    pub fn new(
        op: &'static str,
        input: &[usize],
        weight: &[usize],
        spec: Conv2dSpec,
    ) -> Result<Self> {
        if input.len() != 4 || weight.len() != 4 {
            return Err(Error::shape(
                op,
                format!(
                    "needs an input [N, C, H, W] and a weight [C_out, C_in/groups, kh, kw], got {} and {}",
                    fmt_shape(input),
                    fmt_shape(weight)
                ),
            ));
        }
        let g = spec.groups;
        let (s, d) = (spec.stride, spec.dilation);
        if g == 0 || s.0 == 0 || s.1 == 0 || d.0 == 0 || d.1 == 0 {
            return Err(Error::value(
                op,
                format!("groups, stride and dilation must be positive, got {spec:?}"),
            ));
        }
        let (n, cin, h, w) = (input[0], input[1], input[2], input[3]);
        let (cout, cin_g, kh, kw) = (weight[0], weight[1], weight[2], weight[3]);
        if cin % g != 0 || cout % g != 0 || cin_g * g != cin {
            return Err(Error::shape(
                op,
                format!(
                    "input {} and weight {} do not fit {g} groups (C_in and C_out must divide, and the weight must have C_in/groups = {} input channels)",
                    fmt_shape(input),
                    fmt_shape(weight),
                    cin / g.max(1)
                ),
            ));
        }
        // Checked: a huge padding, dilation or kernel is an error, never a wrapped size.
        let too_large = || {
            Error::value(
                op,
                format!(
                    "input {}, weight {} and {spec:?} give sizes that overflow",
                    fmt_shape(input),
                    fmt_shape(weight)
                ),
            )
        };
        let span = |k: usize, dil: usize| {
            (k.max(1) - 1)
                .checked_mul(dil)
                .and_then(|v| v.checked_add(1))
                .ok_or_else(too_large)
        };
        let padded = |x: usize, p: usize| {
            p.checked_mul(2)
                .and_then(|p2| x.checked_add(p2))
                .ok_or_else(too_large)
        };
        let (eh, ew) = (padded(h, spec.padding.0)?, padded(w, spec.padding.1)?);
        let (sh, sw) = (span(kh, d.0)?, span(kw, d.1)?);
        if kh == 0 || kw == 0 || sh > eh || sw > ew {
            return Err(Error::shape(
                op,
                format!(
                    "a {kh}×{kw} kernel (dilation {d:?}) does not fit the {h}×{w} input padded by {:?}",
                    spec.padding
                ),
            ));
        }
        let geo = Geometry {
            n,
            cin,
            h,
            w,
            cout,
            kh,
            kw,
            ho: (eh - sh) / s.0 + 1,
            wo: (ew - sw) / s.1 + 1,
            spec,
        };
        // The output and one image's patch matrix must be allocatable.
        checked_numel(op, &geo.out_shape())?;
        checked_numel(op, &[cin_g, kh, kw, geo.ho, geo.wo])?;
        Ok(geo)
    }

    fn groups(&self) -> usize {
        self.spec.groups
    }
    fn cin_g(&self) -> usize {
        self.cin / self.groups()
    }
    fn cout_g(&self) -> usize {
        self.cout / self.groups()
    }
    /// Rows of the patch matrix.
    fn k(&self) -> usize {
        self.cin_g() * self.kh * self.kw
    }
    /// Output positions per image.
    fn p(&self) -> usize {
        self.ho * self.wo
    }
    fn in_image(&self) -> usize {
        self.cin * self.h * self.w
    }
    fn out_image(&self) -> usize {
        self.cout * self.p()
    }
    /// The output shape.
    pub fn out_shape(&self) -> [usize; 4] {
        [self.n, self.cout, self.ho, self.wo]
    }
    /// Whether the input itself is the patch matrix (1×1, unit stride, no padding).
    fn pointwise(&self) -> bool {
        self.kh == 1 && self.kw == 1 && self.spec.stride == (1, 1) && self.spec.padding == (0, 0)
    }
    /// Whether images are lowered one at a time (see [`IMAGE_POSITIONS`]).
    fn per_image(&self) -> bool {
        self.p() >= IMAGE_POSITIONS && self.k() * self.p() <= COL_BUDGET
    }
    /// Multiply-adds of the convolution (and of each adjoint).
    fn work(&self) -> usize {
        self.n * self.out_image() * self.k()
    }
    /// Whether the one-image-at-a-time path splits the batch across threads (each
    /// image's GEMM then runs on its thread), rather than each GEMM across them.
    fn across_images(&self) -> bool {
        self.n > 1 && parallel::threads() > 1 && self.work() >= PAR_CONV_WORK
    }
    /// Images per chunk, and the positions per tile: all of a chunk's positions when
    /// whole images fit the budget, else a slice of one image.
    fn chunking(&self) -> (usize, usize) {
        let cols = (COL_BUDGET / self.k().max(1)).max(1);
        let p = self.p().max(1);
        if cols >= p {
            let imgs = (cols / p).min(self.n.max(1));
            (imgs, imgs * p)
        } else {
            (1, cols)
        }
    }
}

/// The valid output columns of one kernel tap along a row: the `ox` in `0..wo` whose
/// input column `ox·s + j·d − p` lies in `0..w`, as a range.
fn valid_columns(wo: usize, w: usize, s: usize, jd: usize, p: usize) -> (usize, usize) {
    // ox·s + jd ≥ p  ⇔  ox ≥ ⌈(p − jd)/s⌉;  ox·s + jd − p < w  ⇔  ox < ⌈(w + p − jd)/s⌉
    let lo = if jd >= p { 0 } else { (p - jd).div_ceil(s) };
    let hi = if w + p <= jd {
        0
    } else {
        (w + p - jd).div_ceil(s)
    };
    (lo.min(wo), hi.min(wo).max(lo.min(wo)))
}

/// Calls `f(t, img, oy, ox0, ox1)` for the runs of the chunk's positions `q0..q1` that
/// share an image and an output row (`t` is the run's first column in the tile).
fn row_runs(
    geo: &Geometry,
    q0: usize,
    q1: usize,
    mut f: impl FnMut(usize, usize, usize, usize, usize),
) {
    let p = geo.p();
    let mut q = q0;
    while q < q1 {
        let (img, pos) = (q / p, q % p);
        let (oy, ox0) = (pos / geo.wo, pos % geo.wo);
        let ox1 = geo.wo.min(ox0 + (q1 - q));
        f(q - q0, img, oy, ox0, ox1);
        q += ox1 - ox0;
    }
}

/// Writes the patch matrix of group `g` for output positions `q0..q1` of the images
/// `x` (a slice of whole images starting at image 0 of the chunk), where position q of
/// the chunk is image q / P, position q % P. `col` is `[K, q1 − q0]`.
fn im2col<T: Element>(geo: &Geometry, x: &[T], g: usize, q0: usize, q1: usize, col: &mut [T]) {
    let cols = q1 - q0;
    let (sh, sw) = geo.spec.stride;
    let (ph, pw) = geo.spec.padding;
    let (dh, dw) = geo.spec.dilation;
    for (r, dst) in col.chunks_mut(cols).enumerate() {
        let (c, ij) = (r / (geo.kh * geo.kw), r % (geo.kh * geo.kw));
        let (i, j) = (ij / geo.kw, ij % geo.kw);
        let (lo, hi) = valid_columns(geo.wo, geo.w, sw, j * dw, pw);
        row_runs(geo, q0, q1, |t, img, oy, ox0, ox1| {
            let out = &mut dst[t..t + ox1 - ox0];
            let iy = (oy * sh + i * dh) as isize - ph as isize;
            let (a, b) = (lo.clamp(ox0, ox1), hi.clamp(ox0, ox1));
            if iy < 0 || iy >= geo.h as isize || a >= b {
                out.fill(T::zero());
                return;
            }
            let base = img * geo.in_image() + ((g * geo.cin_g() + c) * geo.h + iy as usize) * geo.w;
            out[..a - ox0].fill(T::zero());
            out[b - ox0..].fill(T::zero());
            let first = base + a * sw + j * dw - pw;
            if sw == 1 {
                out[a - ox0..b - ox0].copy_from_slice(&x[first..first + (b - a)]);
            } else {
                for (k, o) in out[a - ox0..b - ox0].iter_mut().enumerate() {
                    *o = x[first + k * sw];
                }
            }
        });
    }
}

/// The adjoint of [`im2col`]: adds the patch matrix `col` back into the images `dx`.
fn col2im<T: Element>(geo: &Geometry, col: &[T], g: usize, q0: usize, q1: usize, dx: &mut [T]) {
    let cols = q1 - q0;
    let (sh, sw) = geo.spec.stride;
    let (ph, pw) = geo.spec.padding;
    let (dh, dw) = geo.spec.dilation;
    for (r, src) in col.chunks(cols).enumerate() {
        let (c, ij) = (r / (geo.kh * geo.kw), r % (geo.kh * geo.kw));
        let (i, j) = (ij / geo.kw, ij % geo.kw);
        let (lo, hi) = valid_columns(geo.wo, geo.w, sw, j * dw, pw);
        row_runs(geo, q0, q1, |t, img, oy, ox0, ox1| {
            let iy = (oy * sh + i * dh) as isize - ph as isize;
            let (a, b) = (lo.clamp(ox0, ox1), hi.clamp(ox0, ox1));
            if iy < 0 || iy >= geo.h as isize || a >= b {
                return;
            }
            let base = img * geo.in_image() + ((g * geo.cin_g() + c) * geo.h + iy as usize) * geo.w;
            let first = base + a * sw + j * dw - pw;
            let from = &src[t + a - ox0..t + b - ox0];
            if sw == 1 {
                for (d, &v) in dx[first..first + (b - a)].iter_mut().zip(from) {
                    *d = *d + v;
                }
            } else {
                for (k, &v) in from.iter().enumerate() {
                    dx[first + k * sw] = dx[first + k * sw] + v;
                }
            }
        });
    }
}

fn mat<T>(data: &[T], offset: usize, rows: usize, cols: usize, row_stride: usize) -> MatRef<'_, T> {
    MatRef {
        data,
        offset,
        rows,
        cols,
        row_stride: row_stride as isize,
        col_stride: 1,
    }
}

/// Rows `co0..co0+rows` of the chunk's output-shaped data `y` (images of `[C_out, P]`)
/// at positions `q0..q1`, gathered into `[rows, q1 − q0]`.
fn gather_positions<T: Element>(
    geo: &Geometry,
    y: &[T],
    co0: usize,
    rows: usize,
    q0: usize,
    q1: usize,
) -> Vec<T> {
    let (p, cols) = (geo.p(), q1 - q0);
    let mut out = vec![T::zero(); rows * cols];
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

/// `c = a · b` on this thread when the caller already splits across threads, else
/// split across them. Either way every element gets the same operations, so the
/// result does not depend on the choice.
fn gemm_on<T: Element>(across: bool, a: MatRef<'_, T>, b: MatRef<'_, T>, c: &mut [T]) {
    if across {
        T::gemm(a, b, c, b.cols);
    } else {
        gemm_parallel(a, b, c);
    }
}

/// The row-major `[rows, cols]` matrix at `offset` of `data`, seen as its transpose
/// `[cols, rows]` (no copy).
fn transposed<T>(data: &[T], offset: usize, rows: usize, cols: usize) -> MatRef<'_, T> {
    MatRef {
        data,
        offset,
        rows: cols,
        cols: rows,
        row_stride: 1,
        col_stride: cols as isize,
    }
}

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

impl<T: Element> Tensor<T> {
    /// The 2-D convolution (cross-correlation, as in every framework) of `self`
    /// `[N, C_in, H, W]` with `weight` `[C_out, C_in/groups, kh, kw]`, no bias.
    pub fn conv2d(&self, weight: &Tensor<T>, spec: Conv2dSpec) -> Result<Tensor<T>> {
        let geo = Geometry::new("conv2d", self.shape(), weight.shape(), spec)?;
        let x = self.contiguous();
        let wt = weight.contiguous();
        let (xs, ws) = (
            x.as_slice().expect("contiguous"),
            wt.as_slice().expect("contiguous"),
        );
        let (per, _) = geo.chunking();
        let mut out = storage::scratch(geo.n * geo.out_image(), T::zero());
        let (k, p, cog) = (geo.k(), geo.p(), geo.cout_g());
        let work = geo.work();
        if geo.per_image() {
            let across = geo.across_images();
            parallel::for_each_chunk_if(&mut out, geo.out_image(), across, |start, region| {
                let img = start / geo.out_image();
                let xin = &xs[img * geo.in_image()..(img + 1) * geo.in_image()];
                let mut col = (!geo.pointwise()).then(|| Scratch::new(k * p, T::zero()));
                for g in 0..geo.groups() {
                    let wg = mat(ws, g * cog * k, cog, k, k);
                    let dst = &mut region[g * cog * p..(g + 1) * cog * p];
                    match col.as_deref_mut() {
                        None => gemm_on(across, wg, mat(xin, g * k * p, k, p, p), dst),
                        Some(col) => {
                            im2col(&geo, xin, g, 0, p, col);
                            gemm_on(across, wg, mat(col, 0, k, p, p), dst);
                        }
                    }
                }
            });
            return Ok(Tensor::from_contiguous(out, &geo.out_shape()));
        }
        parallel::for_each_chunk_if(
            &mut out,
            per * geo.out_image(),
            work >= 1 << 22,
            |start, region| {
                let img0 = start / geo.out_image();
                let imgs = region.len() / geo.out_image();
                let xin = &xs[img0 * geo.in_image()..(img0 + imgs) * geo.in_image()];
                for g in 0..geo.groups() {
                    let wg = mat(ws, g * cog * k, cog, k, k);
                    for (q0, q1) in tiles(&geo, imgs) {
                        let cols = q1 - q0;
                        if imgs == 1 && cols == p {
                            // The whole image: the GEMM writes its output rows in place.
                            let dst = &mut region[g * cog * p..(g + 1) * cog * p];
                            if geo.pointwise() {
                                gemm_parallel(wg, mat(xin, g * k * p, k, p, p), dst);
                            } else {
                                let mut col = vec![T::zero(); k * p];
                                im2col(&geo, xin, g, 0, p, &mut col);
                                gemm_parallel(wg, mat(&col, 0, k, p, p), dst);
                            }
                            continue;
                        }
                        let mut col = vec![T::zero(); k * cols];
                        im2col(&geo, xin, g, q0, q1, &mut col);
                        let mut tmp = vec![T::zero(); cog * cols];
                        gemm_parallel(wg, mat(&col, 0, k, cols, cols), &mut tmp);
                        for (o, row) in tmp.chunks(cols).enumerate() {
                            let mut q = q0;
                            while q < q1 {
                                let (img, pos) = (q / p, q % p);
                                let len = (p - pos).min(q1 - q);
                                let at = img * geo.out_image() + (g * cog + o) * p + pos;
                                region[at..at + len].copy_from_slice(&row[q - q0..q - q0 + len]);
                                q += len;
                            }
                        }
                    }
                }
            },
        );
        Ok(Tensor::from_contiguous(out, &geo.out_shape()))
    }

    /// The gradient of [`Tensor::conv2d`] with respect to its input: `self` is the
    /// output gradient `[N, C_out, H_out, W_out]`, `input_shape` the input's shape.
    pub fn conv2d_input_grad(
        &self,
        weight: &Tensor<T>,
        input_shape: &[usize],
        spec: Conv2dSpec,
    ) -> Result<Tensor<T>> {
        let geo = Geometry::new("conv2d_input_grad", input_shape, weight.shape(), spec)?;
        check_out("conv2d_input_grad", &geo, self.shape())?;
        let gy = self.contiguous();
        let wt = weight.contiguous();
        let (gs, ws) = (
            gy.as_slice().expect("contiguous"),
            wt.as_slice().expect("contiguous"),
        );
        let (per, _) = geo.chunking();
        let (k, p, cog) = (geo.k(), geo.p(), geo.cout_g());
        let mut dx = storage::scratch(geo.n * geo.in_image(), T::zero());
        // Wᵀ_g: [K, C_out/g] as a transposed view of the weight rows.
        let wt = |g: usize| transposed(ws, g * cog * k, cog, k);
        if geo.per_image() {
            let across = geo.across_images();
            parallel::for_each_chunk_if(&mut dx, geo.in_image(), across, |start, region| {
                let img = start / geo.in_image();
                let gin = &gs[img * geo.out_image()..(img + 1) * geo.out_image()];
                let mut col = (!geo.pointwise()).then(|| Scratch::new(k * p, T::zero()));
                if col.is_some() {
                    region.fill(T::zero());
                }
                for g in 0..geo.groups() {
                    let gout = mat(gin, g * cog * p, cog, p, p);
                    match col.as_deref_mut() {
                        None => {
                            gemm_on(across, wt(g), gout, &mut region[g * k * p..(g + 1) * k * p])
                        }
                        Some(col) => {
                            gemm_on(across, wt(g), gout, col);
                            col2im(&geo, col, g, 0, p, region);
                        }
                    }
                }
            });
            return Ok(Tensor::from_contiguous(dx, input_shape));
        }
        parallel::for_each_chunk_if(
            &mut dx,
            per * geo.in_image(),
            geo.work() >= PAR_CONV_WORK,
            |start, region| {
                region.fill(T::zero());
                let img0 = start / geo.in_image();
                let imgs = region.len() / geo.in_image();
                let gin = &gs[img0 * geo.out_image()..(img0 + imgs) * geo.out_image()];
                for g in 0..geo.groups() {
                    let wt_g = wt(g);
                    for (q0, q1) in tiles(&geo, imgs) {
                        let cols = q1 - q0;
                        let gathered;
                        let gout = if imgs == 1 {
                            mat(gin, g * cog * p + q0, cog, cols, p)
                        } else {
                            gathered = gather_positions(&geo, gin, g * cog, cog, q0, q1);
                            mat(&gathered, 0, cog, cols, cols)
                        };
                        if imgs == 1 && cols == p && geo.pointwise() {
                            gemm_parallel(wt_g, gout, &mut region[g * k * p..(g + 1) * k * p]);
                            continue;
                        }
                        let mut col = vec![T::zero(); k * cols];
                        gemm_parallel(wt_g, gout, &mut col);
                        col2im(&geo, &col, g, q0, q1, region);
                    }
                }
            },
        );
        Ok(Tensor::from_contiguous(dx, input_shape))
    }

    /// The gradient of [`Tensor::conv2d`] with respect to its weight: `self` is the
    /// output gradient, `input` the convolution's input, `weight_shape` the weight's.
    pub fn conv2d_weight_grad(
        &self,
        input: &Tensor<T>,
        weight_shape: &[usize],
        spec: Conv2dSpec,
    ) -> Result<Tensor<T>> {
        let geo = Geometry::new("conv2d_weight_grad", input.shape(), weight_shape, spec)?;
        check_out("conv2d_weight_grad", &geo, self.shape())?;
        let gy = self.contiguous();
        let x = input.contiguous();
        let (gs, xs) = (
            gy.as_slice().expect("contiguous"),
            x.as_slice().expect("contiguous"),
        );
        let (k, cog) = (geo.k(), geo.cout_g());
        if geo.per_image() {
            return Ok(Tensor::from_contiguous(
                weight_grad_per_image(&geo, gs, xs),
                weight_shape,
            ));
        }
        let mut dw = vec![T::zero(); geo.cout * k];
        // Chunk by chunk, in order: each chunk's product is one (parallel) GEMM whose
        // inner dimension runs over the chunk's positions; the first is written in
        // place, later ones are added.
        let mut first = vec![true; geo.groups()];
        for (img0, imgs) in chunks(&geo) {
            let xin = &xs[img0 * geo.in_image()..(img0 + imgs) * geo.in_image()];
            let gin = &gs[img0 * geo.out_image()..(img0 + imgs) * geo.out_image()];
            for g in 0..geo.groups() {
                for (q0, q1) in tiles(&geo, imgs) {
                    let cols = q1 - q0;
                    let gathered = gather_positions(&geo, gin, g * cog, cog, q0, q1);
                    let mut col = vec![T::zero(); k * cols];
                    im2col(&geo, xin, g, q0, q1, &mut col);
                    let col_t = transposed(&col, 0, k, cols);
                    let a = mat(&gathered, 0, cog, cols, cols);
                    let dst = &mut dw[g * cog * k..(g + 1) * cog * k];
                    if std::mem::take(&mut first[g]) {
                        gemm_parallel(a, col_t, dst);
                    } else {
                        let mut prod = vec![T::zero(); cog * k];
                        gemm_parallel(a, col_t, &mut prod);
                        for (d, v) in dst.iter_mut().zip(prod) {
                            *d = *d + v;
                        }
                    }
                }
            }
        }
        Ok(Tensor::from_contiguous(dw, weight_shape))
    }

    /// Max pooling's window arg-max: for `self` `[N, C, H, W]`, windows of `kernel`
    /// moved by `stride` over the input padded by `padding` (padding never wins), the
    /// flat index (into the contiguous input) of each window's maximum, first on ties,
    /// and the output shape. NaN propagates: a window holding one picks it.
    pub fn max_pool2d_indices(
        &self,
        kernel: (usize, usize),
        stride: (usize, usize),
        padding: (usize, usize),
    ) -> Result<(Vec<usize>, [usize; 4])> {
        let spec = Conv2dSpec {
            stride,
            padding,
            ..Conv2dSpec::default()
        };
        if self.ndim() != 4 {
            return Err(Error::shape(
                "max_pool2d",
                format!("needs [N, C, H, W], got {}", fmt_shape(self.shape())),
            ));
        }
        let s = self.shape();
        let geo = Geometry::new("max_pool2d", s, &[s[1], s[1], kernel.0, kernel.1], spec)?;
        if padding.0 * 2 > kernel.0 || padding.1 * 2 > kernel.1 {
            return Err(Error::value(
                "max_pool2d",
                format!("padding {padding:?} must be at most half the kernel {kernel:?}"),
            ));
        }
        let x = self.contiguous();
        let xs = x.as_slice().expect("contiguous");
        let (h, w, ho, wo) = (geo.h, geo.w, geo.ho, geo.wo);
        let planes = geo.n * geo.cin;
        let mut idx = vec![0usize; planes * ho * wo];
        parallel::for_each_chunk_if(
            &mut idx,
            ho * wo,
            planes * h * w >= 1 << 18,
            |start, out| {
                let plane = start / (ho * wo);
                let base = plane * h * w;
                for (t, o) in out.iter_mut().enumerate() {
                    let (oy, ox) = (t / wo, t % wo);
                    let mut best: Option<(usize, T)> = None;
                    for i in 0..kernel.0 {
                        let iy = (oy * stride.0 + i) as isize - padding.0 as isize;
                        if iy < 0 || iy >= h as isize {
                            continue;
                        }
                        for j in 0..kernel.1 {
                            let ix = (ox * stride.1 + j) as isize - padding.1 as isize;
                            if ix < 0 || ix >= w as isize {
                                continue;
                            }
                            let at = base + iy as usize * w + ix as usize;
                            let v = xs[at];
                            let better = match best {
                                None => true,
                                Some((_, b)) => !b.is_nan() && (v > b || v.is_nan()),
                            };
                            if better {
                                best = Some((at, v));
                            }
                        }
                    }
                    *o = best.map_or(base, |(at, _)| at);
                }
            },
        );
        Ok((idx, [geo.n, geo.cin, ho, wo]))
    }
}

/// The weight gradient one image at a time: Σ over images of gy_i · colᵢᵀ, the images
/// summed in [`WEIGHT_GRAD_GROUPS`] fixed groups (in parallel), then the groups'
/// partial sums in group order.
fn weight_grad_per_image<T: Element>(geo: &Geometry, gs: &[T], xs: &[T]) -> Vec<T> {
    let (k, p, cog) = (geo.k(), geo.p(), geo.cout_g());
    let per = geo.n.div_ceil(WEIGHT_GRAD_GROUPS).max(1);
    let parts = geo.n.div_ceil(per);
    if parts == 0 {
        return vec![T::zero(); geo.cout * k];
    }
    let work = if geo.work() >= PAR_CONV_WORK {
        usize::MAX
    } else {
        0
    };
    let partials = parallel::map_collect(parts, work, |part| {
        let mut acc = Scratch::new(geo.cout * k, T::zero());
        let mut col = (!geo.pointwise()).then(|| Scratch::new(k * p, T::zero()));
        let first = part * per;
        for img in first..geo.n.min(first + per) {
            let xin = &xs[img * geo.in_image()..(img + 1) * geo.in_image()];
            let gin = &gs[img * geo.out_image()..(img + 1) * geo.out_image()];
            let beta = if img == first { T::ZERO } else { T::ONE };
            for g in 0..geo.groups() {
                let gy = mat(gin, g * cog * p, cog, p, p);
                let dst = &mut acc[g * cog * k..(g + 1) * cog * k];
                match col.as_deref_mut() {
                    None => {
                        T::gemm_update(T::ONE, gy, transposed(xin, g * k * p, k, p), beta, dst, k)
                    }
                    Some(col) => {
                        im2col(geo, xin, g, 0, p, col);
                        T::gemm_update(T::ONE, gy, transposed(col, 0, k, p), beta, dst, k);
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

fn check_out(op: &'static str, geo: &Geometry, got: &[usize]) -> Result<()> {
    if got != geo.out_shape() {
        return Err(Error::shape(
            op,
            format!(
                "the output gradient is {}, the convolution gives {}",
                fmt_shape(got),
                fmt_shape(&geo.out_shape())
            ),
        ));
    }
    Ok(())
}
