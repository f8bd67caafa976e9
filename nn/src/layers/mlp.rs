//! Multi-layer perceptron builder.

use crate::layers::linear::Linear;
use crate::module::{Activation, Module};
use crate::param::Scope;
use autograd::Var;
use tensor::{Element, Error, Result, Rng};

/// Linear layers of the given sizes with an activation between them (none after
/// the last). Parameters are named "0.weight", "0.bias", "1.weight", ...
/// An MLP always has at least one layer: the layers are reached through
/// [`Mlp::layers`] and [`Mlp::layers_mut`], which can change a layer but not
/// their number.
///
/// ```
/// use autograd::{backward, Var};
/// use nn::{Activation, Mlp, Module, ParamGrads, ParamStore};
/// use tensor::{Rng, Tensor};
/// # fn main() -> tensor::Result<()> {
/// let store = ParamStore::<f64>::new();
/// let mlp = Mlp::new(&store.root(), &[2, 16, 1], Activation::Tanh, &mut Rng::new(3))?;
/// assert_eq!(mlp.layers().len(), 2);
/// assert_eq!(store.num_trainable(), 2 * 16 + 16 + 16 + 1);
/// let x = Var::constant(Tensor::rand_normal(&[8, 2], 0.0, 1.0, &mut Rng::new(4))?);
/// assert_eq!(mlp.features(&x)?.shape(), &[8, 16]); // before the last layer
/// let loss = mlp.forward(&x)?.square()?.mean_all()?;
/// let grads = ParamGrads::collect(&store.trainable(), &backward(&loss)?);
/// assert_eq!(grads.len(), 4); // two weights, two biases
/// assert!(grads.global_norm() > 0.0);
/// # Ok(())
/// # }
/// ```
pub struct Mlp<T: Element> {
    layers: Vec<Linear<T>>,
    /// The activation between layers.
    pub activation: Activation,
}

impl<T: Element> Mlp<T> {
    /// An MLP with `sizes = [in, hidden..., out]`.
    pub fn new(
        scope: &Scope<T>,
        sizes: &[usize],
        activation: Activation,
        rng: &mut Rng,
    ) -> Result<Self> {
        if sizes.len() < 2 {
            return Err(Error::value(
                "Mlp",
                format!("needs at least an input and an output size, got {sizes:?}"),
            ));
        }
        let layers = sizes
            .windows(2)
            .enumerate()
            .map(|(i, w)| Linear::new(&scope.sub(i.to_string()), w[0], w[1], true, rng))
            .collect::<Result<Vec<_>>>()?;
        Ok(Mlp { layers, activation })
    }

    /// The linear layers, in order (never empty).
    pub fn layers(&self) -> &[Linear<T>] {
        &self.layers
    }

    /// The linear layers, to change one in place (e.g. drop a bias).
    pub fn layers_mut(&mut self) -> &mut [Linear<T>] {
        &mut self.layers
    }

    /// The features before the last layer (the "backbone" output).
    pub fn features(&self, x: &Var<T>) -> Result<Var<T>> {
        let mut h = x.clone();
        for layer in &self.layers[..self.layers.len() - 1] {
            h = self.activation.apply(&layer.forward(&h)?)?;
        }
        Ok(h)
    }

    /// The last layer.
    pub fn head(&self) -> &Linear<T> {
        // `new` refuses fewer than two sizes and the layers cannot be removed.
        &self.layers[self.layers.len() - 1]
    }
}

impl<T: Element> Module<T> for Mlp<T> {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        self.head().forward(&self.features(x)?)
    }
}
