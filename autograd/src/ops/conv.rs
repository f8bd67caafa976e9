//! Convolution and pooling. The convolution y = conv(x, w) is bilinear, and so are its
//! two adjoints — the input gradient convᵀ(g, w) and the weight gradient convᵂ(g, x) —
//! so each of the three is recorded with a backward rule made of the other two, and
//! convolutions differentiate to any order. Max pooling is a gather of each window's
//! arg-max (its backward is the scatter of `index_select`); average pooling is a
//! depthwise convolution with a constant kernel; adaptive average pooling is a product
//! with the pooling matrices on both spatial axes.

use crate::var::{record, Var};
use tensor::{Conv2dSpec, Element, Error, Result, Tensor};

use super::for_input;

impl<T: Element> Var<T> {
    /// The 2-D convolution of `self` `[N, C_in, H, W]` with `weight` `[C_out,
    /// C_in/groups, kh, kw]` (no bias), NCHW.
    #[track_caller]
    pub fn conv2d(&self, weight: &Var<T>, spec: Conv2dSpec) -> Result<Var<T>> {
        let v = self.value.conv2d(&weight.value, spec)?;
        record("conv2d", &[self, weight], v, move |c| {
            let (x, w) = (&c.inputs[0], &c.inputs[1]);
            Ok(vec![
                for_input(x, || c.grad.conv2d_input_grad(w, x.shape(), spec))?,
                for_input(w, || c.grad.conv2d_weight_grad(x, w.shape(), spec))?,
            ])
        })
    }

    /// [`Var::conv2d`] plus a bias `[C_out]` per output channel, in one op
    /// ([`Tensor::conv2d_bias`]: the bits of the convolution followed by a
    /// broadcast add, without the add's pass); the bias's gradient is the output
    /// gradient summed over images and positions.
    #[track_caller]
    pub fn conv2d_bias(&self, weight: &Var<T>, bias: &Var<T>, spec: Conv2dSpec) -> Result<Var<T>> {
        let v = self.value.conv2d_bias(&weight.value, &bias.value, spec)?;
        record("conv2d_bias", &[self, weight, bias], v, move |c| {
            let (x, w, b) = (&c.inputs[0], &c.inputs[1], &c.inputs[2]);
            Ok(vec![
                for_input(x, || c.grad.conv2d_input_grad(w, x.shape(), spec))?,
                for_input(w, || c.grad.conv2d_weight_grad(x, w.shape(), spec))?,
                for_input(b, || c.grad.sum(&[0, 2, 3], false))?,
            ])
        })
    }

    /// convᵀ: the input gradient of [`Var::conv2d`] for the output gradient `self`.
    #[track_caller]
    pub fn conv2d_input_grad(
        &self,
        weight: &Var<T>,
        input_shape: &[usize],
        spec: Conv2dSpec,
    ) -> Result<Var<T>> {
        let v = self
            .value
            .conv2d_input_grad(&weight.value, input_shape, spec)?;
        record("conv2d_input_grad", &[self, weight], v, move |c| {
            let (g, w) = (&c.inputs[0], &c.inputs[1]);
            // ⟨h, convᵀ(g, w)⟩ = ⟨conv(h, w), g⟩
            Ok(vec![
                for_input(g, || c.grad.conv2d(w, spec))?,
                for_input(w, || g.conv2d_weight_grad(c.grad, w.shape(), spec))?,
            ])
        })
    }

    /// convᵂ: the weight gradient of [`Var::conv2d`] for the output gradient `self` and
    /// the convolution's input `input`.
    #[track_caller]
    pub fn conv2d_weight_grad(
        &self,
        input: &Var<T>,
        weight_shape: &[usize],
        spec: Conv2dSpec,
    ) -> Result<Var<T>> {
        let v = self
            .value
            .conv2d_weight_grad(&input.value, weight_shape, spec)?;
        record("conv2d_weight_grad", &[self, input], v, move |c| {
            let (g, x) = (&c.inputs[0], &c.inputs[1]);
            // ⟨H, convᵂ(g, x)⟩ = ⟨conv(x, H), g⟩
            Ok(vec![
                for_input(g, || x.conv2d(c.grad, spec))?,
                for_input(x, || g.conv2d_input_grad(c.grad, x.shape(), spec))?,
            ])
        })
    }

    /// The 1-D convolution of `self` `[N, C_in, L]` with `weight` `[C_out, C_in/groups,
    /// k]`: the 2-D one on a single row.
    #[track_caller]
    pub fn conv1d(
        &self,
        weight: &Var<T>,
        stride: usize,
        padding: usize,
        dilation: usize,
        groups: usize,
    ) -> Result<Var<T>> {
        let (xs, ws) = (self.shape().to_vec(), weight.shape().to_vec());
        if xs.len() != 3 || ws.len() != 3 {
            return Err(Error::shape(
                "conv1d",
                format!("needs an input [N, C, L] and a weight [C_out, C_in/groups, k], got {xs:?} and {ws:?}"),
            ));
        }
        let spec = Conv2dSpec {
            stride: (1, stride),
            padding: (0, padding),
            dilation: (1, dilation),
            groups,
        };
        let y = self
            .reshape(&[xs[0], xs[1], 1, xs[2]])?
            .conv2d(&weight.reshape(&[ws[0], ws[1], 1, ws[2]])?, spec)?;
        let s = y.shape().to_vec();
        y.reshape(&[s[0], s[1], s[3]])
    }

    /// Max pooling over `kernel` windows moved by `stride`, with `padding` that never
    /// wins; NCHW. The gradient goes to each window's (first) maximum.
    #[track_caller]
    pub fn max_pool2d(
        &self,
        kernel: (usize, usize),
        stride: (usize, usize),
        padding: (usize, usize),
    ) -> Result<Var<T>> {
        let (idx, shape) = self.value.max_pool2d_indices(kernel, stride, padding)?;
        self.reshape(&[self.numel()])?
            .index_select(0, &idx)?
            .reshape(&shape)
    }

    /// Average pooling over `kernel` windows moved by `stride`; padded positions count
    /// as zeros in the average (PyTorch's default `count_include_pad`). NCHW.
    #[track_caller]
    pub fn avg_pool2d(
        &self,
        kernel: (usize, usize),
        stride: (usize, usize),
        padding: (usize, usize),
    ) -> Result<Var<T>> {
        if self.ndim() != 4 || kernel.0 == 0 || kernel.1 == 0 {
            return Err(Error::shape(
                "avg_pool2d",
                format!(
                    "needs [N, C, H, W] and a positive kernel, got {:?} and {kernel:?}",
                    self.shape()
                ),
            ));
        }
        let c = self.shape()[1];
        let weight = Tensor::full(
            &[c, 1, kernel.0, kernel.1],
            T::from_f64(1.0 / (kernel.0 * kernel.1) as f64),
        )?;
        let spec = Conv2dSpec {
            stride,
            padding,
            groups: c,
            ..Conv2dSpec::default()
        };
        self.conv2d(&Var::constant(weight), spec)
    }

    /// Adaptive average pooling to `out` = (rows, cols): output cell i averages input
    /// rows ⌊i·H/rows⌋ … ⌈(i+1)·H/rows⌉ − 1, and likewise for columns (PyTorch's
    /// windows). NCHW.
    #[track_caller]
    pub fn adaptive_avg_pool2d(&self, out: (usize, usize)) -> Result<Var<T>> {
        if self.ndim() != 4
            || out.0 == 0
            || out.1 == 0
            || out.0 > self.shape()[2]
            || out.1 > self.shape()[3]
        {
            return Err(Error::shape(
                "adaptive_avg_pool2d",
                format!(
                    "needs [N, C, H, W] with H ≥ {} and W ≥ {}, got {:?}",
                    out.0,
                    out.1,
                    self.shape()
                ),
            ));
        }
        if out == (1, 1) {
            // Global average pooling: one mean per channel, not two products with
            // single-row pooling matrices.
            return self.mean(&[2, 3], true);
        }
        let (h, w) = (self.shape()[2], self.shape()[3]);
        let rows = Var::constant(pooling_matrix::<T>(out.0, h)?);
        let cols = Var::constant(pooling_matrix::<T>(out.1, w)?.t()?);
        rows.matmul(&self.matmul(&cols)?)
    }
}

/// `[out, n]`: row i averages the inputs ⌊i·n/out⌋ … ⌈(i+1)·n/out⌉ − 1.
fn pooling_matrix<T: Element>(out: usize, n: usize) -> Result<Tensor<T>> {
    let mut m = vec![0.0; tensor::layout::checked_numel("adaptive_avg_pool2d", &[out, n])?];
    for i in 0..out {
        let (lo, hi) = (i * n / out, ((i + 1) * n).div_ceil(out));
        for j in lo..hi {
            m[i * n + j] = 1.0 / (hi - lo) as f64;
        }
    }
    Ok(Tensor::from_vec(m, &[out, n])?.cast())
}
