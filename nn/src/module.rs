//! The `Module` trait, activations as modules, and `Sequential`.

use autograd::Var;
use tensor::{Element, Result};

/// A layer or model: a function of a `Var` whose parameters live in a
/// [`ParamStore`](crate::ParamStore). Train/eval behaviour follows the store's mode.
pub trait Module<T: Element>: Send + Sync {
    /// The output for input `x`.
    fn forward(&self, x: &Var<T>) -> Result<Var<T>>;
}

/// Element-wise activation functions, usable as modules.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Activation {
    /// The identity.
    Identity,
    /// max(x, 0).
    Relu,
    /// x for x > 0, slope·x otherwise.
    LeakyRelu(f64),
    /// x for x > 0, α(eˣ − 1) otherwise.
    Elu(f64),
    /// tanh.
    Tanh,
    /// The logistic function.
    Sigmoid,
    /// ln(1 + eˣ).
    Softplus,
    /// x·sigmoid(x).
    Silu,
    /// x·Φ(x), exact (erf) form.
    Gelu,
}

impl Activation {
    /// Applies the activation.
    pub fn apply<T: Element>(&self, x: &Var<T>) -> Result<Var<T>> {
        match *self {
            Activation::Identity => Ok(x.clone()),
            Activation::Relu => x.relu(),
            Activation::LeakyRelu(s) => x.leaky_relu(s),
            Activation::Elu(a) => x.elu(a),
            Activation::Tanh => x.tanh(),
            Activation::Sigmoid => x.sigmoid(),
            Activation::Softplus => x.softplus(),
            Activation::Silu => x.silu(),
            Activation::Gelu => x.gelu(),
        }
    }
}

impl<T: Element> Module<T> for Activation {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        self.apply(x)
    }
}

/// Modules applied one after another.
///
/// ```
/// use autograd::Var;
/// use nn::{Activation, Linear, Module, ParamStore, Sequential};
/// use tensor::{Rng, Tensor};
/// # fn main() -> tensor::Result<()> {
/// let store = ParamStore::<f32>::new();
/// let mut rng = Rng::new(0);
/// let net = Sequential::new()
///     .push(Linear::new(&store.root().sub("0"), 4, 8, true, &mut rng)?)
///     .push(Activation::Relu)
///     .push(Linear::new(&store.root().sub("2"), 8, 3, true, &mut rng)?);
/// assert_eq!(net.len(), 3);
/// let y = net.forward(&Var::constant(Tensor::ones(&[5, 4])?))?;
/// assert_eq!(y.shape(), &[5, 3]);
/// # Ok(())
/// # }
/// ```
pub struct Sequential<T: Element> {
    layers: Vec<Box<dyn Module<T>>>,
}

impl<T: Element> Default for Sequential<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Element> Sequential<T> {
    /// No layers yet.
    pub fn new() -> Self {
        Sequential { layers: Vec::new() }
    }

    /// Appends a layer.
    pub fn push(mut self, layer: impl Module<T> + 'static) -> Self {
        self.layers.push(Box::new(layer));
        self
    }

    /// The number of layers.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// True when there is no layer.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }
}

impl<T: Element> Module<T> for Sequential<T> {
    fn forward(&self, x: &Var<T>) -> Result<Var<T>> {
        let mut h = x.clone();
        for layer in &self.layers {
            h = layer.forward(&h)?;
        }
        Ok(h)
    }
}
