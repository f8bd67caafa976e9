//! The 2-D convolution layer (NCHW).

use crate::module::Module;
use crate::param::{Param, Scope};
use autograd::Var;
use tensor::{Conv2dSpec, Element, Error, Result, Rng, Tensor};

/// y = conv(x, W) + b with W `[C_out, C_in/groups, kh, kw]`, initialised like PyTorch:
/// W and b uniform on ±1/√(C_in/groups·kh·kw).
pub struct Conv2d<T: Element> {
    /// Kernel `[C_out, C_in/groups, kh, kw]`.
    pub weight: Param<T>,
    /// Bias `[C_out]`, if any.
    pub bias: Option<Param<T>>,
    /// Stride, padding, dilation, groups.
    pub spec: Conv2dSpec,
}

impl<T: Element> Conv2d<T> {
    /// A `kernel × kernel` convolution from `cin` to `cout` channels.
    pub fn new(
        scope: &Scope<T>,
        (cin, cout): (usize, usize),
        kernel: usize,
        spec: Conv2dSpec,
        bias: bool,
        rng: &mut Rng,
    ) -> Result<Self> {
        let g = spec.groups;
        if cin == 0 || cout == 0 || kernel == 0 || g == 0 || cin % g != 0 || cout % g != 0 {
            return Err(Error::value(
                "Conv2d",
                format!("{cin} → {cout} channels with a {kernel}×{kernel} kernel in {g} groups"),
            ));
        }
        let fan_in = cin / g * kernel * kernel;
        let a = 1.0 / (fan_in as f64).sqrt();
        let weight = scope.param(
            "weight",
            Tensor::rand_uniform(&[cout, cin / g, kernel, kernel], -a, a, rng)?,
        )?;
        let bias = if bias {
            Some(scope.param("bias", Tensor::rand_uniform(&[cout], -a, a, rng)?)?)
        } else {
            None
        };
        Ok(Conv2d { weight, bias, spec })
    }
}

impl<T: Element> Module<T> for Conv2d<T> {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        match &self.bias {
            Some(b) => x.conv2d_bias(&self.weight.var(), &b.var(), self.spec),
            None => x.conv2d(&self.weight.var(), self.spec),
        }
    }
}
