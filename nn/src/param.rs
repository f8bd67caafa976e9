//! Named parameters and the store that owns them.

use autograd::{Grads, Var};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use tensor::{error::fmt_shape, Element, Error, Result, Tensor};

struct ParamInner<T: Element> {
    name: String,
    trainable: bool,
    /// A leaf for a trainable parameter (so gradients reach it), a constant for a
    /// buffer such as running statistics.
    var: RwLock<Var<T>>,
}

/// A named tensor owned by a [`ParamStore`]: a trainable parameter or a buffer
/// (running statistics). Cloning shares it.
#[derive(Clone)]
pub struct Param<T: Element> {
    inner: Arc<ParamInner<T>>,
}

impl<T: Element> Param<T> {
    /// The hierarchical name ("encoder.0.weight").
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// True for parameters the optimiser updates, false for buffers.
    pub fn trainable(&self) -> bool {
        self.inner.trainable
    }

    /// The current value.
    pub fn value(&self) -> Tensor<T> {
        self.read().value().clone()
    }

    /// The value as a `Var` for a forward pass: the same leaf until the next `set`,
    /// so every use in one pass accumulates into one gradient.
    pub fn var(&self) -> Var<T> {
        self.read().clone()
    }

    /// The shape.
    pub fn shape(&self) -> Vec<usize> {
        self.read().shape().to_vec()
    }

    /// Replaces the value (same shape required).
    pub fn set(&self, value: Tensor<T>) -> Result<()> {
        let var = if self.inner.trainable {
            Var::leaf(value)
        } else {
            Var::constant(value)
        };
        self.replace("Param::set", "new value", var)
    }

    /// Puts `var` in the parameter's place for forward passes until the next
    /// [`Param::set`] (same shape required): how a model is differentiated with
    /// respect to a tensor that is not its stored leaf — a functional call, or
    /// [`crate::check::gradcheck_params`] handing `autograd::gradcheck`'s inputs to
    /// the model. [`Param::value`] reads `var`'s value meanwhile.
    pub fn substitute(&self, var: Var<T>) -> Result<()> {
        self.replace("Param::substitute", "substitute", var)
    }

    /// Installs `var` after checking its shape; the error names `op` and `what`.
    fn replace(&self, op: &'static str, what: &str, var: Var<T>) -> Result<()> {
        let shape = self.shape();
        if var.shape() != shape.as_slice() {
            return Err(Error::shape(
                op,
                format!(
                    "{}: the {what} has shape {}, the parameter has shape {}",
                    self.name(),
                    fmt_shape(var.shape()),
                    fmt_shape(&shape)
                ),
            ));
        }
        *self.inner.var.write().unwrap_or_else(|p| p.into_inner()) = var;
        Ok(())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Var<T>> {
        self.inner.var.read().unwrap_or_else(|p| p.into_inner())
    }
}

impl<T: Element> std::fmt::Debug for Param<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Param({} {:?})", self.name(), self.shape())
    }
}

struct StoreInner<T: Element> {
    params: Mutex<Vec<Param<T>>>,
    training: AtomicBool,
}

/// All parameters and buffers of a model, in creation order (a stable order for
/// optimisers and checkpoints), plus the train/eval mode that layers such as
/// dropout and batch norm read. Cloning shares it.
///
/// ```
/// use nn::{Linear, ParamStore};
/// use tensor::Rng;
/// # fn main() -> tensor::Result<()> {
/// let store = ParamStore::<f32>::new();
/// let enc = store.root().sub("encoder");
/// Linear::new(&enc.sub("0"), 3, 4, true, &mut Rng::new(0))?;
/// Linear::new(&enc.sub("1"), 4, 2, false, &mut Rng::new(1))?;
/// let names: Vec<String> = store.all().iter().map(|p| p.name().to_string()).collect();
/// assert_eq!(names, ["encoder.0.weight", "encoder.0.bias", "encoder.1.weight"]);
/// assert_eq!(store.num_trainable(), 3 * 4 + 4 + 4 * 2);
/// assert_eq!(store.get("encoder.0.bias").unwrap().shape(), vec![4]);
/// assert!(store.is_training()); // until `eval()`: dropout and batch norm read this
/// store.eval();
/// assert!(!store.is_training());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ParamStore<T: Element> {
    inner: Arc<StoreInner<T>>,
}

impl<T: Element> Default for ParamStore<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Element> ParamStore<T> {
    /// An empty store, in training mode.
    pub fn new() -> Self {
        ParamStore {
            inner: Arc::new(StoreInner {
                params: Mutex::new(Vec::new()),
                training: AtomicBool::new(true),
            }),
        }
    }

    /// The root naming scope.
    pub fn root(&self) -> Scope<T> {
        Scope {
            store: self.clone(),
            prefix: String::new(),
        }
    }

    fn add(&self, name: String, value: Tensor<T>, trainable: bool) -> Result<Param<T>> {
        let mut params = self.inner.params.lock().unwrap_or_else(|p| p.into_inner());
        if name.is_empty() || params.iter().any(|p| p.name() == name) {
            return Err(Error::value(
                "ParamStore",
                format!("parameter name '{name}' is empty or already taken"),
            ));
        }
        let var = if trainable {
            Var::leaf(value)
        } else {
            Var::constant(value)
        };
        let p = Param {
            inner: Arc::new(ParamInner {
                name,
                trainable,
                var: RwLock::new(var),
            }),
        };
        params.push(p.clone());
        Ok(p)
    }

    /// Every parameter and buffer, in creation order.
    pub fn all(&self) -> Vec<Param<T>> {
        self.inner
            .params
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The trainable parameters, in creation order.
    pub fn trainable(&self) -> Vec<Param<T>> {
        self.all().into_iter().filter(|p| p.trainable()).collect()
    }

    /// The parameter or buffer called `name`.
    pub fn get(&self, name: &str) -> Option<Param<T>> {
        self.all().into_iter().find(|p| p.name() == name)
    }

    /// Total number of trainable scalars.
    pub fn num_trainable(&self) -> usize {
        self.trainable()
            .iter()
            .map(|p| p.shape().iter().product::<usize>())
            .sum()
    }

    /// Switches layers to training behaviour (dropout on, batch statistics).
    pub fn train(&self) {
        self.inner.training.store(true, Ordering::Relaxed);
    }

    /// Switches layers to evaluation behaviour (dropout off, running statistics).
    pub fn eval(&self) {
        self.inner.training.store(false, Ordering::Relaxed);
    }

    /// True in training mode.
    pub fn is_training(&self) -> bool {
        self.inner.training.load(Ordering::Relaxed)
    }
}

/// A naming scope inside a store: `scope.sub("encoder").sub("0").param("weight", ..)`
/// names the parameter "encoder.0.weight".
#[derive(Clone)]
pub struct Scope<T: Element> {
    store: ParamStore<T>,
    prefix: String,
}

impl<T: Element> Scope<T> {
    /// A nested scope.
    pub fn sub(&self, name: impl AsRef<str>) -> Scope<T> {
        Scope {
            store: self.store.clone(),
            prefix: self.full(name.as_ref()),
        }
    }

    fn full(&self, name: &str) -> String {
        if self.prefix.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.prefix)
        }
    }

    /// Registers a trainable parameter with its initial value.
    ///
    /// ```
    /// use nn::ParamStore;
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let store = ParamStore::<f64>::new();
    /// let scope = store.root().sub("block").sub("norm");
    /// let gamma = scope.param("scale", Tensor::ones(&[3])?)?;
    /// let seen = scope.buffer("seen", Tensor::zeros(&[1])?)?; // saved, never trained
    /// assert_eq!(gamma.name(), "block.norm.scale");
    /// assert!(gamma.trainable() && !seen.trainable());
    /// assert_eq!(store.trainable().len(), 1);
    /// assert!(scope.param("scale", Tensor::ones(&[3])?).is_err()); // names are unique
    /// gamma.set(Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3])?)?;
    /// assert!(gamma.set(Tensor::zeros(&[4])?).is_err()); // the shape is fixed
    /// # Ok(())
    /// # }
    /// ```
    pub fn param(&self, name: &str, value: Tensor<T>) -> Result<Param<T>> {
        self.store.add(self.full(name), value, true)
    }

    /// Registers a buffer: saved with the model, never trained.
    pub fn buffer(&self, name: &str, value: Tensor<T>) -> Result<Param<T>> {
        self.store.add(self.full(name), value, false)
    }

    /// The store this scope writes into.
    pub fn store(&self) -> &ParamStore<T> {
        &self.store
    }
}

/// Gradients of a list of parameters, aligned with it (zeros where a parameter got
/// none). Taken right after the backward pass, so they stay valid when parameters
/// are later reassigned (SAM perturbs and restores them).
#[derive(Clone, Debug)]
pub struct ParamGrads<T: Element> {
    grads: Vec<Tensor<T>>,
}

impl<T: Element> ParamGrads<T> {
    /// Picks the gradient of each parameter out of a backward pass.
    pub fn collect(params: &[Param<T>], grads: &Grads<T>) -> Self {
        ParamGrads {
            grads: params
                .iter()
                .map(|p| grads.get_or_zeros(&p.var()).contiguous())
                .collect(),
        }
    }

    /// Wraps tensors already aligned with a parameter list.
    pub fn from_tensors(grads: Vec<Tensor<T>>) -> Self {
        ParamGrads { grads }
    }

    /// The gradients, in parameter order.
    pub fn tensors(&self) -> &[Tensor<T>] {
        &self.grads
    }

    /// Consumes into the tensors.
    pub fn into_tensors(self) -> Vec<Tensor<T>> {
        self.grads
    }

    /// The number of gradients.
    pub fn len(&self) -> usize {
        self.grads.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.grads.is_empty()
    }

    /// The Euclidean norm of all gradients together.
    pub fn global_norm(&self) -> f64 {
        self.grads
            .iter()
            .map(|g| {
                g.square()
                    .sum_all()
                    .item()
                    .map(|v| v.as_f64())
                    .unwrap_or(0.0)
            })
            .sum::<f64>()
            .sqrt()
    }

    /// Every gradient times `s`.
    pub fn scale(&self, s: f64) -> Self {
        ParamGrads {
            grads: self.grads.iter().map(|g| g.mul_scalar(s)).collect(),
        }
    }

    /// Rescales so that the global norm is at most `max_norm`; returns the norm
    /// before clipping.
    ///
    /// ```
    /// use nn::ParamGrads;
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let mut g = ParamGrads::from_tensors(vec![
    ///     Tensor::<f64>::from_vec(vec![3.0, 0.0], &[2])?,
    ///     Tensor::from_vec(vec![4.0], &[1])?,
    /// ]);
    /// assert_eq!(g.global_norm(), 5.0); // over all the tensors together
    /// assert_eq!(g.clip_global_norm(1.0)?, 5.0);
    /// assert!((g.global_norm() - 1.0).abs() < 1e-9);
    /// assert!((g.tensors()[1].item()? - 0.8).abs() < 1e-9); // the direction is kept
    /// # Ok(())
    /// # }
    /// ```
    pub fn clip_global_norm(&mut self, max_norm: f64) -> Result<f64> {
        if !(max_norm > 0.0) {
            return Err(Error::value(
                "clip_global_norm",
                format!("max_norm must be positive, got {max_norm}"),
            ));
        }
        let norm = self.global_norm();
        if norm > max_norm {
            *self = self.scale(max_norm / (norm + 1e-12));
        }
        Ok(norm)
    }

    /// Checks alignment with `params` (count and shapes).
    pub fn check(&self, op: &'static str, params: &[Param<T>]) -> Result<()> {
        if self.grads.len() != params.len() {
            return Err(Error::value(
                op,
                format!(
                    "{} gradients for {} parameters",
                    self.grads.len(),
                    params.len()
                ),
            ));
        }
        for (p, g) in params.iter().zip(&self.grads) {
            if g.shape() != p.shape().as_slice() {
                return Err(Error::shape(
                    op,
                    format!(
                        "gradient of {} has shape {}, the parameter {}",
                        p.name(),
                        fmt_shape(g.shape()),
                        fmt_shape(&p.shape())
                    ),
                ));
            }
            if !g.all_finite() {
                return Err(Error::non_finite(
                    op,
                    format!("the gradient of {} has a NaN or infinity", p.name()),
                ));
            }
        }
        Ok(())
    }
}
