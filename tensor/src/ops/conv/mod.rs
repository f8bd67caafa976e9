//! 2-D convolution (stride, padding, dilation, groups) and its two adjoints, by
//! im2col lowering and GEMM, and the window arg-max of max pooling.
//!
//! Layout: NCHW throughout — input `[N, C_in, H, W]`, weight `[C_out, C_in/groups, kh,
//! kw]`, output `[N, C_out, H_out, W_out]` — as in PyTorch, so checkpoints and shapes
//! carry over.
//!
//! Lowering. Every pass is a GEMM against the patch matrix (im2col: K = C_in/groups ·
//! kh · kw rows, one column per output position), whose panels the GEMM packs
//! straight from the images (`patches`), so the matrix itself is never written out.
//! An image with at least [`IMAGE_POSITIONS`] output positions is multiplied on its
//! own (`per_image`): the GEMM writes its output rows in place and the batch is split
//! across threads by images; the weight gradient sums the images in a fixed number
//! of groups of consecutive images ([`WEIGHT_GRAD_GROUPS`]), then the groups in
//! order. Smaller images go in *chunks* of consecutive images whose patch matrix
//! would fit [`COL_BUDGET`] (`chunked`): deep layers with few positions per image
//! get many images per chunk, so every GEMM has a wide dimension; an image too large
//! for the budget is split into tiles of positions. The input gradient of a
//! unit-stride convolution is the convolution of the output gradient with the
//! flipped kernel and runs as one; strided ones multiply by Wᵀ and scatter (col2im).
//! Every split depends only on the shapes, never on the thread count, and the GEMM
//! gives an output element the same operations whatever tile or task it is in, so
//! results are bitwise identical for any number of threads. A 1×1 convolution with
//! unit stride and no padding reads the input in place. With a SIMD kernel, the
//! forward of an image with unit stride along the width, and the weight gradient of
//! up to 256 output channels a group, read the patches where they lie in the padded
//! images instead of packing them (`direct`), with the packed path's bits.

mod chunked;
mod direct;
mod operand;
mod patches;
mod per_image;
mod pool;

use crate::element::Element;
use crate::error::{fmt_shape, Error, Result};
use crate::layout::checked_numel;
use crate::parallel;
use crate::storage;
use crate::tensor::Tensor;

/// Largest patch matrix (in elements) of one chunk: 16 MiB in f32, so the deepest
/// ResNet layers (K = 4608 rows, 16 positions per image) take a batch of 32 in one
/// chunk and multiply it in one GEMM.
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
///
/// ```
/// use tensor::{Conv2dSpec, Tensor};
/// # fn main() -> tensor::Result<()> {
/// // Two groups of one channel each (a depthwise convolution): a 1×1 kernel
/// // scales channel 0 by 2 and channel 1 by 3, without mixing them.
/// let x = Tensor::<f64>::ones(&[1, 2, 3, 3])?;
/// let w = Tensor::from_vec(vec![2.0, 3.0], &[2, 1, 1, 1])?;
/// let spec = Conv2dSpec { groups: 2, ..Conv2dSpec::default() };
/// let y = x.conv2d(&w, spec)?;
/// assert_eq!(y.shape(), &[1, 2, 3, 3]);
/// assert_eq!((y.get(&[0, 0, 1, 1])?, y.get(&[0, 1, 1, 1])?), (2.0, 3.0));
/// # Ok(())
/// # }
/// ```
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
        // The gradient ops take the input's or the weight's shape from the caller:
        // both are sizes of buffers to come.
        checked_numel(op, input)?;
        checked_numel(op, weight)?;
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
    /// The spec of the convolution that computes this one's input gradient (the
    /// output gradient with the flipped kernel: unit stride, padding `d·(k − 1) −
    /// p`), when it exists: unit strides and `p ≤ d·(k − 1)` on both axes.
    fn adjoint_spec(&self) -> Option<Conv2dSpec> {
        let s = self.spec;
        let reach = |k: usize, d: usize, p: usize| ((k - 1) * d).checked_sub(p);
        if s.stride != (1, 1) {
            return None;
        }
        Some(Conv2dSpec {
            padding: (
                reach(self.kh, s.dilation.0, s.padding.0)?,
                reach(self.kw, s.dilation.1, s.padding.1)?,
            ),
            ..s
        })
    }
    /// The shape of the flipped kernel: `[C_in, C_out/groups, kh, kw]`.
    fn flipped_shape(&self) -> [usize; 4] {
        [self.cin, self.cout_g(), self.kh, self.kw]
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

impl<T: Element> Tensor<T> {
    /// The 2-D convolution (cross-correlation, as in every framework) of `self`
    /// `[N, C_in, H, W]` with `weight` `[C_out, C_in/groups, kh, kw]`, no bias.
    ///
    /// ```
    /// use tensor::{Conv2dSpec, Tensor};
    /// # fn main() -> tensor::Result<()> {
    /// // A 4×4 image and a 2×2 kernel of ones: each output sums a 2×2 window.
    /// let x = Tensor::<f64>::arange(0.0, 16.0, 1.0)?.reshape(&[1, 1, 4, 4])?;
    /// let w = Tensor::ones(&[1, 1, 2, 2])?;
    /// let y = x.conv2d(&w, Conv2dSpec::default())?;
    /// assert_eq!(y.shape(), &[1, 1, 3, 3]);
    /// assert_eq!(y.get(&[0, 0, 0, 0])?, 0.0 + 1.0 + 4.0 + 5.0);
    /// // Stride 2, padding 1: (4 + 2·1 − 2)/2 + 1 = 3 outputs per axis; the first
    /// // window covers padding and x[0, 0] only, the next x[0, 1] and x[0, 2].
    /// let y = x.conv2d(&w, Conv2dSpec::new(2, 1))?;
    /// assert_eq!(y.shape(), &[1, 1, 3, 3]);
    /// assert_eq!((y.get(&[0, 0, 0, 0])?, y.get(&[0, 0, 0, 1])?), (0.0, 3.0));
    /// # Ok(())
    /// # }
    /// ```
    pub fn conv2d(&self, weight: &Tensor<T>, spec: Conv2dSpec) -> Result<Tensor<T>> {
        self.convolve("conv2d", weight, None, spec)
    }

    /// [`Tensor::conv2d`] plus a bias `[C_out]` per output channel: the same bits
    /// as the convolution followed by a broadcast add, without a pass of its own
    /// over the output (each image's output gets its bias while still in cache).
    pub fn conv2d_bias(
        &self,
        weight: &Tensor<T>,
        bias: &Tensor<T>,
        spec: Conv2dSpec,
    ) -> Result<Tensor<T>> {
        self.convolve("conv2d_bias", weight, Some(bias), spec)
    }

    /// The forward convolution, with the bias (if any) added per image.
    fn convolve(
        &self,
        op: &'static str,
        weight: &Tensor<T>,
        bias: Option<&Tensor<T>>,
        spec: Conv2dSpec,
    ) -> Result<Tensor<T>> {
        let geo = Geometry::new(op, self.shape(), weight.shape(), spec)?;
        let bias = match bias {
            Some(b) if b.shape() != [geo.cout] => {
                return Err(Error::shape(
                    op,
                    format!(
                        "needs a bias [{}] (one per output channel), got {}",
                        geo.cout,
                        fmt_shape(b.shape())
                    ),
                ))
            }
            Some(b) => Some(b.contiguous()),
            None => None,
        };
        let bias = bias.as_ref().map(|b| b.as_slice().expect("contiguous"));
        let x = self.contiguous();
        let wt = weight.contiguous();
        let (xs, ws) = (
            x.as_slice().expect("contiguous"),
            wt.as_slice().expect("contiguous"),
        );
        let mut out = storage::scratch(geo.n * geo.out_image(), T::zero());
        if geo.per_image() {
            per_image::forward(&geo, xs, ws, bias, &mut out);
        } else {
            chunked::forward(&geo, xs, ws, &mut out);
            if let Some(bias) = bias {
                let p = geo.p();
                parallel::for_each_chunk_sized(&mut out, geo.out_image(), |_, image| {
                    add_bias(image, bias, p)
                });
            }
        }
        Ok(Tensor::from_contiguous(out, &geo.out_shape()))
    }

    /// The gradient of [`Tensor::conv2d`] with respect to its input: `self` is the
    /// output gradient `[N, C_out, H_out, W_out]`, `input_shape` the input's shape.
    ///
    /// With unit strides and padding at most the dilated kernel's reach it is itself
    /// a convolution — of the output gradient with the flipped kernel, channels
    /// swapped, padded by `d·(k − 1) − p` — and runs as one, its patches packed
    /// straight from the gradient; otherwise by the patch-matrix product and col2im.
    pub fn conv2d_input_grad(
        &self,
        weight: &Tensor<T>,
        input_shape: &[usize],
        spec: Conv2dSpec,
    ) -> Result<Tensor<T>> {
        let geo = Geometry::new("conv2d_input_grad", input_shape, weight.shape(), spec)?;
        check_out("conv2d_input_grad", &geo, self.shape())?;
        let wt = weight.contiguous();
        let ws = wt.as_slice().expect("contiguous");
        if let Some(adjoint) = geo.adjoint_spec() {
            let flipped = Tensor::from_contiguous(flip_kernel(&geo, ws), &geo.flipped_shape());
            return self.conv2d(&flipped, adjoint);
        }
        let gy = self.contiguous();
        let gs = gy.as_slice().expect("contiguous");
        let mut dx = storage::scratch(geo.n * geo.in_image(), T::zero());
        if geo.per_image() {
            per_image::input_grad(&geo, gs, ws, &mut dx);
        } else {
            chunked::input_grad(&geo, gs, ws, &mut dx);
        }
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
        let dw = if geo.per_image() {
            per_image::weight_grad(&geo, gs, xs)
        } else {
            chunked::weight_grad(&geo, gs, xs)
        };
        Ok(Tensor::from_contiguous(dw, weight_shape))
    }
}

/// Adds `bias[c]` to row `c` (of length `p`) of one image's output `[C_out, P]`.
fn add_bias<T: Element>(image: &mut [T], bias: &[T], p: usize) {
    for (row, &b) in image.chunks_mut(p.max(1)).zip(bias) {
        for v in row {
            *v = *v + b;
        }
    }
}

/// The kernel of the input gradient's convolution: `w'[g·C_in/g + c, o, i, j] =
/// w[g·C_out/g + o, c, kh − 1 − i, kw − 1 − j]`, shaped `[C_in, C_out/g, kh, kw]`.
fn flip_kernel<T: Element>(geo: &Geometry, w: &[T]) -> Vec<T> {
    /// Output rows (input channels) written together: for each output channel o,
    /// their taps are one contiguous run of `w`, so `w` is read in order.
    const BAND: usize = 64;
    let (cin_g, cout_g, taps) = (geo.cin_g(), geo.cout_g(), geo.kh * geo.kw);
    let row = cout_g * taps;
    // Every element is written: a recycled buffer, not fresh pages. Bands of output
    // rows are independent, so large kernels split by bands.
    let mut out = storage::scratch(w.len(), T::zero());
    parallel::for_each_chunk_sized(&mut out, BAND * row, |start, band| {
        let first = start / row.max(1);
        // Where each row's taps for output channel 0 start in `w`; channel o's are
        // o·C_in/g·taps further on.
        let base: Vec<usize> = (first..first + band.len() / row.max(1))
            .map(|ci| ((ci / cin_g) * cout_g * cin_g + ci % cin_g) * taps)
            .collect();
        for o in 0..cout_g {
            for (dst_row, &b) in band.chunks_exact_mut(row).zip(&base) {
                let src = &w[b + o * cin_g * taps..][..taps];
                let dst = &mut dst_row[o * taps..(o + 1) * taps];
                for (d, &v) in dst.iter_mut().rev().zip(src) {
                    *d = v;
                }
            }
        }
    });
    out
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
