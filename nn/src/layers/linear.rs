//! Fully connected layer y = x Wᵀ + b.

use crate::init;
use crate::module::Module;
use crate::param::{Param, Scope};
use autograd::Var;
use tensor::{error::fmt_shape, Element, Error, Result, Rng};

/// y = x Wᵀ + b with W of shape `[out, in]` (PyTorch's layout) and x of shape
/// `[..., in]`. Initialised like PyTorch: U[−1/√in, 1/√in] for W and b.
///
/// ```
/// use autograd::Var;
/// use nn::{Linear, Module, ParamStore};
/// use tensor::{Rng, Tensor};
/// # fn main() -> tensor::Result<()> {
/// let store = ParamStore::<f64>::new();
/// let fc = Linear::new(&store.root().sub("fc"), 3, 2, true, &mut Rng::new(0))?;
/// assert_eq!((fc.inputs(), fc.outputs()), (3, 2));
/// fc.weight.set(Tensor::from_vec(vec![1.0, 0.0, 0.0, 0.0, 1.0, 1.0], &[2, 3])?)?;
/// fc.bias.as_ref().unwrap().set(Tensor::from_vec(vec![0.5, -0.5], &[2])?)?;
/// let x = Var::constant(Tensor::from_vec(vec![1.0, 2.0, 3.0], &[1, 3])?);
/// assert_eq!(fc.forward(&x)?.value().to_vec(), vec![1.5, 4.5]); // x Wᵀ + b
/// // Leading axes are batch axes; a wrong feature size is an error naming the layer.
/// assert_eq!(fc.forward(&Var::constant(Tensor::zeros(&[4, 5, 3])?))?.shape(), &[4, 5, 2]);
/// let e = fc.forward(&Var::constant(Tensor::zeros(&[1, 4])?)).unwrap_err();
/// assert!(e.to_string().starts_with("Linear: input of shape [1, 4]"), "{e}");
/// # Ok(())
/// # }
/// ```
pub struct Linear<T: Element> {
    /// Weight `[out, in]`.
    pub weight: Param<T>,
    /// Bias `[out]`, if any.
    pub bias: Option<Param<T>>,
}

impl<T: Element> Linear<T> {
    /// A layer with parameters "weight" (and "bias") in `scope`.
    pub fn new(
        scope: &Scope<T>,
        inputs: usize,
        outputs: usize,
        bias: bool,
        rng: &mut Rng,
    ) -> Result<Self> {
        if inputs == 0 || outputs == 0 {
            return Err(Error::value(
                "Linear",
                format!("needs positive sizes, got {inputs} → {outputs}"),
            ));
        }
        let weight = scope.param("weight", init::lecun_uniform(&[outputs, inputs], rng)?)?;
        let bias = if bias {
            let a = 1.0 / (inputs as f64).sqrt();
            Some(scope.param("bias", init::uniform(&[outputs], -a, a, rng)?)?)
        } else {
            None
        };
        Ok(Linear { weight, bias })
    }

    /// Input size.
    pub fn inputs(&self) -> usize {
        self.weight.shape()[1]
    }

    /// Output size.
    pub fn outputs(&self) -> usize {
        self.weight.shape()[0]
    }

    /// The layer applied with explicit weights (used when a hypernetwork or a
    /// closed-form solve supplies them).
    pub fn apply(x: &Var<T>, weight: &Var<T>, bias: Option<&Var<T>>) -> Result<Var<T>> {
        if weight.ndim() != 2 {
            return Err(Error::shape(
                "Linear",
                format!(
                    "the weight must be [outputs, inputs], got {}",
                    fmt_shape(weight.shape())
                ),
            ));
        }
        if let Some(b) = bias {
            if b.shape() != [weight.shape()[0]] {
                return Err(Error::shape(
                    "Linear",
                    format!(
                        "the bias must be [{}] for a weight {}, got {}",
                        weight.shape()[0],
                        fmt_shape(weight.shape()),
                        fmt_shape(b.shape())
                    ),
                ));
            }
        }
        let last = x.shape().last().copied().unwrap_or(0);
        if x.ndim() < 2 || last != weight.shape()[1] {
            return Err(Error::shape(
                "Linear",
                format!(
                    "input of shape {} does not end in the layer's {} inputs (needs [..., {}])",
                    fmt_shape(x.shape()),
                    weight.shape()[1],
                    weight.shape()[1]
                ),
            ));
        }
        // Leading axes fold into rows: one GEMM (and one weight-gradient GEMM) instead
        // of a batch of small ones.
        let y = if x.ndim() > 2 {
            let rows = x.numel() / last;
            let mut shape = x.shape().to_vec();
            *shape.last_mut().expect("ndim > 2") = weight.shape()[0];
            x.reshape(&[rows, last])?
                .matmul(&weight.t()?)?
                .reshape(&shape)?
        } else {
            x.matmul(&weight.t()?)?
        };
        match bias {
            Some(b) => y.add(b),
            None => Ok(y),
        }
    }
}

impl<T: Element> Module<T> for Linear<T> {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        Linear::apply(
            x,
            &self.weight.var(),
            self.bias.as_ref().map(|b| b.var()).as_ref(),
        )
    }
}
