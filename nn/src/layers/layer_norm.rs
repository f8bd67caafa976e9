//! Layer normalisation over the last axis.

use crate::module::Module;
use crate::param::{Param, Scope};
use autograd::Var;
use tensor::{error::fmt_shape, Element, Error, Result, Tensor};

/// (x − mean)/√(var + ε) over the last axis (biased variance, as in PyTorch), then
/// an optional learned scale and shift.
///
/// ```
/// use autograd::Var;
/// use nn::{LayerNorm, Module, ParamStore};
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// let store = ParamStore::<f64>::new();
/// let ln = LayerNorm::new(&store.root().sub("ln"), 4, 1e-5, true)?;
/// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 7.0, 7.0, 7.0, 7.0], &[2, 4])?;
/// let y = ln.forward(&Var::constant(x))?.value().clone();
/// // Each row to mean 0 and variance ≈ 1 (a constant row to zeros).
/// assert!(y.mean(&[-1], false)?.abs().max_all()? < 1e-12);
/// let var = y.var(&[-1], 0, false)?.to_vec();
/// assert!((var[0] - 1.0).abs() < 1e-4 && var[1] == 0.0);
/// assert!(ln.forward(&Var::constant(Tensor::zeros(&[2, 3])?)).is_err());
/// # Ok(())
/// # }
/// ```
pub struct LayerNorm<T: Element> {
    /// Scale γ `[dim]` (ones at start).
    pub weight: Option<Param<T>>,
    /// Shift β `[dim]` (zeros at start).
    pub bias: Option<Param<T>>,
    dim: usize,
    eps: f64,
}

impl<T: Element> LayerNorm<T> {
    /// Normalisation of vectors of size `dim`.
    pub fn new(scope: &Scope<T>, dim: usize, eps: f64, affine: bool) -> Result<Self> {
        if dim == 0 || !(eps > 0.0) {
            return Err(Error::value(
                "LayerNorm",
                format!("needs dim > 0 and eps > 0, got dim {dim}, eps {eps}"),
            ));
        }
        let (weight, bias) = if affine {
            (
                Some(scope.param("weight", Tensor::ones(&[dim])?)?),
                Some(scope.param("bias", Tensor::zeros(&[dim])?)?),
            )
        } else {
            (None, None)
        };
        Ok(LayerNorm {
            weight,
            bias,
            dim,
            eps,
        })
    }
}

impl<T: Element> Module<T> for LayerNorm<T> {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        if x.shape().last() != Some(&self.dim) {
            return Err(Error::shape(
                "LayerNorm",
                format!(
                    "input of shape {} does not end in {}",
                    fmt_shape(x.shape()),
                    self.dim
                ),
            ));
        }
        let mean = x.mean(&[-1], true)?;
        let centred = x.sub(&mean)?;
        let var = centred.square()?.mean(&[-1], true)?;
        let mut y = centred.mul(&var.add_scalar(self.eps)?.rsqrt()?)?;
        if let Some(w) = &self.weight {
            y = y.mul(&w.var())?;
        }
        if let Some(b) = &self.bias {
            y = y.add(&b.var())?;
        }
        Ok(y)
    }
}
