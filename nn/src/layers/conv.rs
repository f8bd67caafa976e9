//! The 2-D convolution layer (NCHW).

use crate::module::Module;
use crate::param::{Param, Scope};
use autograd::Var;
use tensor::{Conv2dSpec, Element, Error, Result, Rng, Tensor};

/// y = conv(x, W) + b with W `[C_out, C_in/groups, kh, kw]`, initialised like PyTorch:
/// W and b uniform on ±1/√(C_in/groups·kh·kw).
///
/// ```
/// use autograd::Var;
/// use nn::{Conv2d, Module, ParamStore};
/// use tensor::{Conv2dSpec, Rng, Tensor};
/// # fn main() -> tensor::Result<()> {
/// let store = ParamStore::<f32>::new();
/// let spec = Conv2dSpec::new(1, 1); // stride 1, padding 1: a 3×3 kernel keeps the size
/// let conv = Conv2d::new(&store.root().sub("conv"), (3, 8), 3, spec, true, &mut Rng::new(0))?;
/// assert_eq!(conv.weight.shape(), vec![8, 3, 3, 3]);
/// let x = Tensor::rand_normal(&[2, 3, 5, 5], 0.0, 1.0, &mut Rng::new(1))?;
/// let y = conv.forward(&Var::constant(x.clone()))?;
/// assert_eq!(y.shape(), &[2, 8, 5, 5]);
/// let b = conv.bias.as_ref().unwrap().value();
/// assert!(y.value().bit_eq(&x.conv2d_bias(&conv.weight.value(), &b, spec)?));
/// # Ok(())
/// # }
/// ```
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
