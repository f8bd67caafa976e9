//! The reverse sweep: topological order, backward rules, gradient accumulation.

use crate::mode;
use crate::var::{Ctx, Node, NodeId, Var};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tensor::{error::fmt_shape, Element, Error, Result, Tensor};

/// Gradients of a scalar loss with respect to leaves (and any retained `Var`s), as
/// plain tensors keyed by tape node.
#[derive(Clone, Debug)]
pub struct Grads<T: Element> {
    map: HashMap<NodeId, Tensor<T>>,
}

impl<T: Element> Default for Grads<T> {
    fn default() -> Self {
        Grads {
            map: HashMap::new(),
        }
    }
}

impl<T: Element> Grads<T> {
    /// No gradients yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The gradient of `v`, if it was reached.
    pub fn get(&self, v: &Var<T>) -> Option<&Tensor<T>> {
        v.id().and_then(|id| self.map.get(&id))
    }

    /// The gradient of `v`, or zeros of its shape when it was not reached.
    pub fn get_or_zeros(&self, v: &Var<T>) -> Tensor<T> {
        self.get(v)
            .cloned()
            .unwrap_or_else(|| Tensor::zeros_like(v.value()))
    }

    /// The number of stored gradients.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when no gradient is stored.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Adds another set of gradients into this one (gradient accumulation over
    /// several backward passes).
    ///
    /// ```
    /// use autograd::{backward, Var};
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let w = Var::leaf(Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2])?);
    /// // Two micro-batches, gradients summed: the gradient of the summed loss.
    /// let mut total = backward(&w.square()?.sum_all()?)?;
    /// total.accumulate(backward(&w.mul_scalar(3.0)?.sum_all()?)?)?;
    /// assert_eq!(total.get(&w).unwrap().to_vec(), vec![5.0, 7.0]); // 2w + 3
    /// # Ok(())
    /// # }
    /// ```
    pub fn accumulate(&mut self, other: Grads<T>) -> Result<()> {
        for (id, g) in other.map {
            match self.map.get_mut(&id) {
                Some(existing) => *existing = existing.add(&g)?,
                None => {
                    self.map.insert(id, g);
                }
            }
        }
        Ok(())
    }
}

/// Which nodes' gradients the sweep must produce.
enum Targets<'a> {
    /// Every leaf, plus the given ids.
    Leaves(&'a HashSet<NodeId>),
    /// Exactly the given ids.
    Only(&'a HashSet<NodeId>),
}

impl Targets<'_> {
    fn wants(&self, node: &Node<impl Element>) -> bool {
        match self {
            Targets::Leaves(extra) => node.backward.is_none() || extra.contains(&node.id),
            Targets::Only(ids) => ids.contains(&node.id),
        }
    }
}

/// Nodes reachable from `roots`, inputs before the ops that use them.
fn post_order<T: Element>(roots: &[Arc<Node<T>>]) -> Vec<Arc<Node<T>>> {
    let mut order = Vec::new();
    let mut visited = HashSet::new();
    let mut stack: Vec<(Arc<Node<T>>, bool)> = roots.iter().map(|n| (n.clone(), false)).collect();
    while let Some((node, expanded)) = stack.pop() {
        if expanded {
            order.push(node);
            continue;
        }
        if !visited.insert(node.id) {
            continue;
        }
        stack.push((node.clone(), true));
        for input in &node.inputs {
            if let Some(n) = &input.node {
                if !visited.contains(&n.id) {
                    stack.push((n.clone(), false));
                }
            }
        }
    }
    order
}

/// The reverse sweep from `seeds` (node, cotangent), returning the gradients of the
/// targeted nodes as `Var`s.
fn sweep<T: Element>(
    seeds: Vec<(Arc<Node<T>>, Var<T>)>,
    targets: Targets<'_>,
) -> Result<HashMap<NodeId, Var<T>>> {
    let roots: Vec<Arc<Node<T>>> = seeds.iter().map(|(n, _)| n.clone()).collect();
    let order = post_order(&roots);
    // A node matters if it is a target or leads to one.
    let mut needed: HashSet<NodeId> = HashSet::new();
    for node in &order {
        let leads = node
            .inputs
            .iter()
            .any(|i| i.node.as_ref().is_some_and(|n| needed.contains(&n.id)));
        if targets.wants(node) || leads {
            needed.insert(node.id);
        }
    }
    let mut grads: HashMap<NodeId, Var<T>> = HashMap::new();
    for (node, g) in seeds {
        accumulate(&mut grads, node.id, g)?;
    }
    let mut out = HashMap::new();
    for node in order.iter().rev() {
        if !needed.contains(&node.id) {
            continue;
        }
        let Some(g) = grads.remove(&node.id) else {
            continue;
        };
        if targets.wants(node) {
            out.insert(node.id, g.clone());
        }
        let Some(rule) = &node.backward else {
            continue;
        };
        let output = Var {
            value: node.value.clone(),
            node: Some(node.clone()),
        };
        let ctx = Ctx {
            inputs: &node.inputs,
            output: &output,
            grad: &g,
        };
        let input_grads = rule(&ctx).map_err(|e| match e {
            // An anomaly inside a rule is reported against the op being differentiated.
            Error::NonFinite { detail, op } => {
                let loc = node.location;
                Error::non_finite(
                    "backward",
                    format!(
                        "the rule of {} (recorded at {}:{}:{}) produced a NaN or infinity: {op}: {detail}",
                        node.op,
                        loc.file(),
                        loc.line(),
                        loc.column()
                    ),
                )
            }
            other => other,
        })?;
        for (k, (input, gi)) in node.inputs.iter().zip(input_grads).enumerate() {
            let (Some(n), Some(gi)) = (&input.node, gi) else {
                continue;
            };
            if !needed.contains(&n.id) {
                continue;
            }
            if gi.shape() != input.shape() {
                return Err(Error::shape(
                    "backward",
                    format!(
                        "the rule of {} gave a gradient of shape {} for input {k} of shape {}",
                        node.op,
                        fmt_shape(gi.shape()),
                        fmt_shape(input.shape())
                    ),
                ));
            }
            if mode::anomaly_enabled() && !gi.value().all_finite() {
                let loc = node.location;
                return Err(Error::non_finite(
                    "backward",
                    format!(
                        "the rule of {} (recorded at {}:{}:{}) produced a NaN or infinity in the gradient of input {k} of shape {}",
                        node.op,
                        loc.file(),
                        loc.line(),
                        loc.column(),
                        fmt_shape(input.shape())
                    ),
                ));
            }
            accumulate(&mut grads, n.id, gi)?;
        }
    }
    Ok(out)
}

fn accumulate<T: Element>(
    grads: &mut HashMap<NodeId, Var<T>>,
    id: NodeId,
    g: Var<T>,
) -> Result<()> {
    let merged = match grads.remove(&id) {
        Some(existing) => existing.add(&g)?,
        None => g,
    };
    grads.insert(id, merged);
    Ok(())
}

fn scalar_seed<T: Element>(loss: &Var<T>) -> Result<(Arc<Node<T>>, Var<T>)> {
    if loss.numel() != 1 {
        return Err(Error::shape(
            "backward",
            format!(
                "needs a one-element loss, got shape {} (use grad with cotangents for non-scalar outputs)",
                fmt_shape(loss.shape())
            ),
        ));
    }
    let node = loss.node.clone().ok_or_else(|| {
        Error::value(
            "backward",
            "the loss does not require a gradient: no leaf took part, or it was computed under no_grad",
        )
    })?;
    let one = Tensor::ones(loss.shape())?;
    Ok((node, Var::constant(one)))
}

/// Gradients of a one-element `loss` with respect to every leaf it depends on.
/// The backward pass runs on plain tensors (nothing is recorded), and the tape is
/// released when the last `Var` of the forward pass is dropped.
///
/// ```
/// use autograd::{backward, Var};
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// let x = Var::leaf(Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0], &[3])?);
/// let w = Var::leaf(Tensor::from_vec(vec![0.5, -1.0, 2.0], &[3])?);
/// // loss = Σ wᵢxᵢ + Σ xᵢ²
/// let loss = w.mul(&x)?.sum_all()?.add(&x.square()?.sum_all()?)?;
/// let g = backward(&loss)?;
/// assert_eq!(g.len(), 2); // one gradient per leaf
/// assert_eq!(g.get(&x).unwrap().to_vec(), vec![2.5, 3.0, 8.0]); // w + 2x
/// assert_eq!(g.get(&w).unwrap().to_vec(), vec![1.0, 2.0, 3.0]); // x
/// // The loss must have one element.
/// assert!(backward(&x.square()?).unwrap_err().to_string().contains("one-element loss"));
/// # Ok(())
/// # }
/// ```
pub fn backward<T: Element>(loss: &Var<T>) -> Result<Grads<T>> {
    backward_retaining(loss, &[])
}

/// As [`backward`], also keeping the gradients of the intermediate `Var`s in
/// `retain` (e.g. layer outputs, for K-FAC-style statistics).
pub fn backward_retaining<T: Element>(loss: &Var<T>, retain: &[&Var<T>]) -> Result<Grads<T>> {
    let seed = scalar_seed(loss)?;
    let extra: HashSet<NodeId> = retain.iter().filter_map(|v| v.id()).collect();
    let grads = mode::no_grad(|| sweep(vec![seed], Targets::Leaves(&extra)))?;
    Ok(Grads {
        map: grads.into_iter().map(|(id, g)| (id, g.value)).collect(),
    })
}

/// Vector-Jacobian products: Σ_k cotangent_k · ∂output_k/∂input for each input.
///
/// `cotangents` default to ones (so a scalar output gives its gradient). Inputs the
/// outputs do not depend on get zeros. With `create_graph`, the backward pass is
/// recorded and the results can be differentiated again (Hessian-vector products,
/// gradient penalties, log-det of an input Hessian); without it, it runs on plain
/// tensors.
///
/// ```
/// use autograd::{grad, Var};
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// let x = Var::leaf(Tensor::<f64>::from_vec(vec![3.0], &[1])?);
/// let y = x.square()?.mul(&x)?; // x³
/// // First derivative, recorded (create_graph) so it can be differentiated again.
/// let dy = grad(&[&y], &[&x], None, true)?;
/// assert_eq!(dy[0].value().to_vec(), vec![27.0]); // 3x²
/// assert!(dy[0].requires_grad());
/// let d2y = grad(&[&dy[0]], &[&x], None, false)?;
/// assert_eq!(d2y[0].value().to_vec(), vec![18.0]); // 6x
/// // A vector output with a cotangent: the vector-Jacobian product.
/// let v = x.mul_scalar(2.0)?.broadcast_to(&[2])?;
/// let c = Var::constant(Tensor::from_vec(vec![1.0, 10.0], &[2])?);
/// assert_eq!(grad(&[&v], &[&x], Some(&[&c]), false)?[0].value().to_vec(), vec![22.0]);
/// # Ok(())
/// # }
/// ```
pub fn grad<T: Element>(
    outputs: &[&Var<T>],
    inputs: &[&Var<T>],
    cotangents: Option<&[&Var<T>]>,
    create_graph: bool,
) -> Result<Vec<Var<T>>> {
    if let Some(c) = cotangents {
        if c.len() != outputs.len() {
            return Err(Error::value(
                "grad",
                format!("{} cotangents for {} outputs", c.len(), outputs.len()),
            ));
        }
    }
    let mut seeds = Vec::new();
    for (k, out) in outputs.iter().enumerate() {
        let cot = match cotangents {
            Some(c) => {
                if c[k].shape() != out.shape() {
                    return Err(Error::shape(
                        "grad",
                        format!(
                            "cotangent {k} has shape {} but its output has shape {}",
                            fmt_shape(c[k].shape()),
                            fmt_shape(out.shape())
                        ),
                    ));
                }
                c[k].clone()
            }
            None => Var::constant(Tensor::ones(out.shape())?),
        };
        if let Some(n) = &out.node {
            seeds.push((n.clone(), cot));
        }
    }
    let ids: HashSet<NodeId> = inputs.iter().filter_map(|v| v.id()).collect();
    let grads = mode::with_grad(create_graph, || sweep(seeds, Targets::Only(&ids)))?;
    Ok(inputs
        .iter()
        .map(|v| {
            v.id()
                .and_then(|id| grads.get(&id).cloned())
                .unwrap_or_else(|| Var::constant(Tensor::zeros_like(v.value())))
        })
        .collect())
}
