//! `Var`: a tensor value plus, when it takes part in differentiation, a node of the
//! tape recording the operation that made it.

use crate::mode;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use tensor::{Element, Error, Result, Tensor};

/// Identity of a tape node (unique for the life of the process).
pub type NodeId = u64;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static LIVE_NODES: AtomicUsize = AtomicUsize::new(0);

/// The number of tape nodes alive in the process (leaves included). A training loop
/// whose tape is released every step keeps this flat.
pub fn live_nodes() -> usize {
    LIVE_NODES.load(Ordering::Relaxed)
}

/// What a backward rule sees: the op's inputs, its output and the gradient of the
/// output. All three are `Var`s, so a rule written with `Var` operations is itself
/// differentiable when the backward pass records (`create_graph`).
pub struct Ctx<'a, T: Element> {
    /// The op's inputs, in the order they were recorded.
    pub inputs: &'a [Var<T>],
    /// The op's output.
    pub output: &'a Var<T>,
    /// The gradient flowing into the output.
    pub grad: &'a Var<T>,
}

/// A backward rule: gradients for each input (`None` where the input gets none).
pub type BackwardFn<T> = dyn Fn(&Ctx<'_, T>) -> Result<Vec<Option<Var<T>>>> + Send + Sync;

/// One recorded operation (or a leaf, which has no rule).
pub(crate) struct Node<T: Element> {
    pub(crate) id: NodeId,
    pub(crate) op: &'static str,
    pub(crate) inputs: Vec<Var<T>>,
    pub(crate) backward: Option<Box<BackwardFn<T>>>,
    pub(crate) value: Tensor<T>,
    pub(crate) location: &'static Location<'static>,
}

impl<T: Element> Drop for Node<T> {
    fn drop(&mut self) {
        LIVE_NODES.fetch_sub(1, Ordering::Relaxed);
        // Unlink long input chains iteratively so that dropping a deep tape cannot
        // overflow the stack.
        let mut stack: Vec<Var<T>> = std::mem::take(&mut self.inputs);
        while let Some(v) = stack.pop() {
            if let Some(node) = v.node {
                if let Ok(mut inner) = Arc::try_unwrap(node) {
                    stack.append(&mut inner.inputs);
                }
            }
        }
    }
}

/// A value in a differentiable computation.
///
/// A `Var` with a node requires a gradient: it is a leaf made by [`Var::leaf`] (a
/// parameter) or the output of an op recorded because one of its inputs required a
/// gradient. A `Var` without a node is a constant and costs nothing to use.
pub struct Var<T: Element> {
    pub(crate) value: Tensor<T>,
    pub(crate) node: Option<Arc<Node<T>>>,
}

impl<T: Element> Clone for Var<T> {
    fn clone(&self) -> Self {
        Var {
            value: self.value.clone(),
            node: self.node.clone(),
        }
    }
}

impl<T: Element> std::fmt::Debug for Var<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.node {
            Some(n) => write!(f, "Var(#{} {}, {:?})", n.id, n.op, self.value),
            None => write!(f, "Var(const, {:?})", self.value),
        }
    }
}

impl<T: Element> Var<T> {
    /// A constant: no gradient flows into it.
    ///
    /// ```
    /// use autograd::{backward, Var};
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let c = Var::constant(Tensor::<f64>::from_vec(vec![3.0, 4.0], &[2])?);
    /// assert!(!c.requires_grad() && c.id().is_none());
    /// // Ops on constants alone record nothing (and cost nothing extra).
    /// assert!(!c.exp()?.requires_grad());
    /// let w = Var::leaf(Tensor::from_vec(vec![1.0, 1.0], &[2])?);
    /// let g = backward(&c.mul(&w)?.sum_all()?)?;
    /// assert_eq!(g.get(&w).unwrap().to_vec(), vec![3.0, 4.0]);
    /// assert!(g.get(&c).is_none()); // no gradient flows into a constant
    /// // A loss built from constants only cannot be differentiated.
    /// let e = backward(&c.sum_all()?).unwrap_err();
    /// assert!(e.to_string().starts_with("backward:"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn constant(value: Tensor<T>) -> Self {
        Var { value, node: None }
    }

    /// A leaf that requires a gradient (a parameter or an input to differentiate by).
    ///
    /// ```
    /// use autograd::{backward, Var};
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let w = Var::leaf(Tensor::<f64>::from_vec(vec![1.0, -2.0], &[2])?);
    /// assert!(w.requires_grad() && w.is_leaf());
    /// let loss = w.square()?.sum_all()?; // ‖w‖², recorded on the tape
    /// assert!(loss.requires_grad() && !loss.is_leaf());
    /// let g = backward(&loss)?;
    /// assert_eq!(g.get(&w).unwrap().to_vec(), vec![2.0, -4.0]); // ∇‖w‖² = 2w
    /// # Ok(())
    /// # }
    /// ```
    #[track_caller]
    pub fn leaf(value: Tensor<T>) -> Self {
        let node = new_node("leaf", Vec::new(), None, value.clone(), Location::caller());
        Var {
            value,
            node: Some(node),
        }
    }

    /// The value.
    pub fn value(&self) -> &Tensor<T> {
        &self.value
    }

    /// The value's shape.
    pub fn shape(&self) -> &[usize] {
        self.value.shape()
    }

    /// The value's rank.
    pub fn ndim(&self) -> usize {
        self.value.ndim()
    }

    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.value.numel()
    }

    /// The tape node's identity, if this `Var` requires a gradient.
    pub fn id(&self) -> Option<NodeId> {
        self.node.as_ref().map(|n| n.id)
    }

    /// True when gradients flow into this `Var`.
    pub fn requires_grad(&self) -> bool {
        self.node.is_some()
    }

    /// True for a leaf (a `Var` made by [`Var::leaf`]).
    pub fn is_leaf(&self) -> bool {
        self.node.as_ref().is_some_and(|n| n.backward.is_none())
    }

    /// The name of the op that made this `Var` ("leaf", "const" or the op's name).
    pub fn op_name(&self) -> &'static str {
        self.node.as_ref().map_or("const", |n| n.op)
    }

    /// The same value as a constant, cut off from the tape.
    ///
    /// ```
    /// use autograd::{backward, Var};
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let x = Var::leaf(Tensor::<f64>::from_vec(vec![3.0], &[1])?);
    /// // d/dx (x · stop(x)) = stop(x) = 3, where d/dx x² would be 6.
    /// let y = x.mul(&x.detach())?.sum_all()?;
    /// assert_eq!(backward(&y)?.get(&x).unwrap().to_vec(), vec![3.0]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn detach(&self) -> Var<T> {
        Var::constant(self.value.clone())
    }

    /// The single element of a one-element `Var`.
    pub fn item(&self) -> Result<T> {
        self.value.item()
    }
}

pub(crate) fn new_node<T: Element>(
    op: &'static str,
    inputs: Vec<Var<T>>,
    backward: Option<Box<BackwardFn<T>>>,
    value: Tensor<T>,
    location: &'static Location<'static>,
) -> Arc<Node<T>> {
    LIVE_NODES.fetch_add(1, Ordering::Relaxed);
    Arc::new(Node {
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        op,
        inputs,
        backward,
        value,
        location,
    })
}

/// Records the result `value` of op `op` on `inputs`.
///
/// The node is created only when gradients are enabled and some input requires a
/// gradient; otherwise the result is a constant. In anomaly mode a non-finite result
/// is an error naming the op, its input shapes and the caller's location.
#[track_caller]
pub fn record<T: Element>(
    op: &'static str,
    inputs: &[&Var<T>],
    value: Tensor<T>,
    backward: impl Fn(&Ctx<'_, T>) -> Result<Vec<Option<Var<T>>>> + Send + Sync + 'static,
) -> Result<Var<T>> {
    let location = Location::caller();
    if crate::trace::is_on() {
        let values: Vec<&Tensor<T>> = inputs.iter().map(|v| &v.value).collect();
        crate::trace::observe(op, location, &value, &values);
    }
    if mode::anomaly_enabled() && !value.all_finite() {
        let shapes: Vec<Vec<usize>> = inputs.iter().map(|v| v.shape().to_vec()).collect();
        return Err(Error::non_finite(
            op,
            format!(
                "produced a NaN or infinity from inputs of shapes {shapes:?}, at {}:{}:{}",
                location.file(),
                location.line(),
                location.column()
            ),
        ));
    }
    let needs = mode::grad_enabled() && inputs.iter().any(|v| v.node.is_some());
    if !needs {
        return Ok(Var::constant(value));
    }
    let node = new_node(
        op,
        inputs.iter().map(|&v| v.clone()).collect(),
        Some(Box::new(backward)),
        value.clone(),
        location,
    );
    Ok(Var {
        value,
        node: Some(node),
    })
}
