//! The `Optimizer` trait and its checkpointable state.

use autograd::Var;
use nn::{Param, ParamGrads};
use tensor::{Element, Error, Result, Tensor};

/// Everything an optimiser needs to resume bit-identically: named tensors (moments)
/// and named scalars (step counts), both saved with the model's checkpoint.
#[derive(Clone, Debug, Default)]
pub struct OptimizerState<T: Element> {
    /// Moment buffers and the like.
    pub tensors: Vec<(String, Tensor<T>)>,
    /// Counters and flags, as text.
    pub scalars: Vec<(String, String)>,
}

impl<T: Element> OptimizerState<T> {
    /// The tensor called `name`, if saved.
    pub fn tensor(&self, name: &str) -> Option<&Tensor<T>> {
        self.tensors.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }

    /// The scalar called `name`, parsed.
    pub fn scalar<V: std::str::FromStr>(&self, name: &str) -> Result<V> {
        self.scalars
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.parse().ok())
            .ok_or_else(|| {
                Error::format(
                    "optimizer state",
                    format!("scalar '{name}' is missing or malformed"),
                )
            })
    }
}

/// An update rule over a fixed list of parameters.
pub trait Optimizer<T: Element> {
    /// The parameters this optimiser updates, in the order gradients are given.
    fn params(&self) -> &[Param<T>];

    /// Applies one update with `grads` (aligned with [`Optimizer::params`]). On error
    /// (misaligned or non-finite gradients) no parameter changes.
    fn step(&mut self, grads: &ParamGrads<T>) -> Result<()>;

    /// One step on the batch that `loss()` evaluates, returning the loss at the
    /// parameters' values before the step: the interface every optimiser shares,
    /// whether it needs one gradient (the default: evaluate, differentiate,
    /// [`Optimizer::step`]) or several (SAM and LLQR+SAM evaluate `loss` again at a
    /// perturbed point, so [`Optimizer::step`] alone cannot drive them). A loss that
    /// is not finite is an error and nothing changes.
    ///
    /// ```
    /// use nn::ParamStore;
    /// use optim::{Optimizer, Sgd, SgdConfig};
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// let store = ParamStore::<f64>::new();
    /// let w = store.root().param("w", Tensor::from_vec(vec![2.0], &[1])?)?;
    /// let mut opt = Sgd::new(store.trainable(), SgdConfig::new(0.25))?;
    /// // loss = w², gradient 2w: each step multiplies w by 1 − 2·0.25 = 0.5.
    /// let loss = || w.var().square()?.sum_all();
    /// assert_eq!(opt.step_closure(&loss)?, 4.0); // the loss before the step
    /// assert_eq!(w.value().item()?, 1.0);
    /// assert_eq!(opt.step_closure(&loss)?, 1.0);
    /// // A loss that is not finite is refused and nothing moves.
    /// assert!(opt.step_closure(&|| w.var().mul_scalar(f64::INFINITY)?.sum_all()).is_err());
    /// assert_eq!(w.value().item()?, 0.5);
    /// # Ok(())
    /// # }
    /// ```
    fn step_closure(&mut self, loss: &dyn Fn() -> Result<Var<T>>) -> Result<f64> {
        let (value, grads) = crate::closure::gradients(self.params(), loss)?;
        self.step(&grads)?;
        Ok(value)
    }

    /// The current learning rate.
    fn lr(&self) -> f64;

    /// Sets the learning rate (for schedules).
    fn set_lr(&mut self, lr: f64) -> Result<()>;

    /// The state to save.
    fn state(&self) -> OptimizerState<T>;

    /// Restores a saved state.
    fn load_state(&mut self, state: &OptimizerState<T>) -> Result<()>;
}

/// Checks a learning rate.
pub fn check_lr(op: &'static str, lr: f64) -> Result<f64> {
    if lr.is_finite() && lr >= 0.0 {
        Ok(lr)
    } else {
        Err(Error::value(
            op,
            format!("learning rate must be finite and ≥ 0, got {lr}"),
        ))
    }
}

/// Checks that `v` lies in `[lo, hi)`.
pub fn check_range(op: &'static str, what: &str, v: f64, lo: f64, hi: f64) -> Result<f64> {
    if v.is_finite() && v >= lo && v < hi {
        Ok(v)
    } else {
        Err(Error::value(
            op,
            format!("{what} must be in [{lo}, {hi}), got {v}"),
        ))
    }
}

/// Per-parameter buffers (momentum, moments), created lazily on the first step.
pub(crate) fn buffer_state<T: Element>(
    prefix: &str,
    params: &[Param<T>],
    buffers: &[Option<Tensor<T>>],
) -> Vec<(String, Tensor<T>)> {
    params
        .iter()
        .zip(buffers)
        .filter_map(|(p, b)| {
            b.as_ref()
                .map(|b| (format!("{prefix}.{}", p.name()), b.clone()))
        })
        .collect()
}

/// Reads back what [`buffer_state`] saved, checking shapes. Buffers are created for
/// every parameter at the first step, so a state holds all of a prefix's buffers
/// or none ("never stepped"): a partial set is an error naming the missing ones.
pub(crate) fn load_buffers<T: Element>(
    prefix: &str,
    params: &[Param<T>],
    state: &OptimizerState<T>,
) -> Result<Vec<Option<Tensor<T>>>> {
    let buffers = params
        .iter()
        .map(|p| match state.tensor(&format!("{prefix}.{}", p.name())) {
            Some(t) if t.shape() == p.shape().as_slice() => Ok(Some(t.clone())),
            Some(t) => Err(Error::format(
                "optimizer state",
                format!(
                    "{prefix}.{} has shape {:?}, expected {:?}",
                    p.name(),
                    t.shape(),
                    p.shape()
                ),
            )),
            None => Ok(None),
        })
        .collect::<Result<Vec<_>>>()?;
    let missing: Vec<String> = params
        .iter()
        .zip(&buffers)
        .filter(|(_, b)| b.is_none())
        .map(|(p, _)| format!("{prefix}.{}", p.name()))
        .collect();
    if !missing.is_empty() && missing.len() < params.len() {
        return Err(Error::format(
            "optimizer state",
            format!(
                "partial state: {} of {} '{prefix}' buffers are missing ({})",
                missing.len(),
                params.len(),
                missing.join(", ")
            ),
        ));
    }
    Ok(buffers)
}

/// Splits a saved state into the entries under `prefix` (prefix removed) and the
/// rest: how a wrapping optimiser (SAM, LLQR) keeps its own buffers and scalars
/// beside the ones of the optimiser it wraps in one [`OptimizerState`].
pub(crate) fn split_state<T: Element>(
    prefix: &str,
    state: &OptimizerState<T>,
) -> (OptimizerState<T>, OptimizerState<T>) {
    let mut own = OptimizerState::default();
    let mut rest = OptimizerState::default();
    for (n, t) in &state.tensors {
        match n.strip_prefix(prefix) {
            Some(k) => own.tensors.push((k.to_string(), t.clone())),
            None => rest.tensors.push((n.clone(), t.clone())),
        }
    }
    for (n, v) in &state.scalars {
        match n.strip_prefix(prefix) {
            Some(k) => own.scalars.push((k.to_string(), v.clone())),
            None => rest.scalars.push((n.clone(), v.clone())),
        }
    }
    (own, rest)
}

/// Adds `own` under `prefix` to the state of a wrapped optimiser (the inverse of
/// [`split_state`]).
pub(crate) fn join_state<T: Element>(
    prefix: &str,
    own: OptimizerState<T>,
    mut wrapped: OptimizerState<T>,
) -> OptimizerState<T> {
    wrapped.tensors.extend(
        own.tensors
            .into_iter()
            .map(|(n, t)| (format!("{prefix}{n}"), t)),
    );
    wrapped.scalars.extend(
        own.scalars
            .into_iter()
            .map(|(n, v)| (format!("{prefix}{n}"), v)),
    );
    wrapped
}

/// Refuses tensors in `state` that no buffer of `prefixes` × `params` explains (a
/// state saved for another model or optimiser), naming them.
pub(crate) fn reject_unknown_buffers<T: Element>(
    prefixes: &[&str],
    params: &[Param<T>],
    state: &OptimizerState<T>,
) -> Result<()> {
    let known = |name: &str| {
        prefixes.iter().any(|prefix| {
            params
                .iter()
                .any(|p| name == format!("{prefix}.{}", p.name()))
        })
    };
    let extra: Vec<&str> = state
        .tensors
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| !known(n))
        .collect();
    if extra.is_empty() {
        Ok(())
    } else {
        Err(Error::format(
            "optimizer state",
            format!(
                "buffers that match no parameter of this optimiser: {}",
                extra.join(", ")
            ),
        ))
    }
}

/// One parameter's part of an update: its value, its gradient and its buffers.
pub(crate) struct Update<'a, T: Element> {
    /// The parameter's current value.
    pub param: Tensor<T>,
    /// Its gradient (same shape).
    pub grad: &'a Tensor<T>,
    /// Its buffers (same shape), rewritten in place.
    pub buffers: Vec<&'a mut Tensor<T>>,
}

/// Runs an update kernel over aligned contiguous chunks of every parameter, its
/// gradient and its buffers in one pass — all the parameters in one parallel loop
/// when they are large in all (element-wise work does not depend on the chunking)
/// — returning the new parameters. The buffers are rewritten in place
/// (copy-on-write: [`Tensor::make_mut`], so a saved state or any other clone keeps
/// its values); call it only once every check of the step has passed, so that a
/// refused step leaves them as they were.
///
/// `kernel(i, x, g, outputs)` gets parameter `i`'s equally long slices;
/// `outputs[0]` is the new parameter and `outputs[1 + k]` buffer `k`, holding its
/// old values on entry.
pub(crate) fn update_chunks<T: Element>(
    updates: Vec<Update<'_, T>>,
    kernel: impl Fn(usize, &[T], &[T], &mut [&mut [T]]) + Sync,
) -> Result<Vec<Tensor<T>>> {
    let inputs: Vec<(Tensor<T>, Tensor<T>)> = updates
        .iter()
        .map(|u| (u.param.contiguous(), u.grad.contiguous()))
        .collect();
    let slices: Vec<(&[T], &[T])> = inputs
        .iter()
        .map(|(p, g)| {
            (
                p.as_slice().expect("contiguous"),
                g.as_slice().expect("contiguous"),
            )
        })
        .collect();
    // Every element of a new parameter is written by the kernel.
    let mut new_params: Vec<Vec<T>> = slices
        .iter()
        .map(|(p, _)| tensor::storage::scratch(p.len(), T::zero()))
        .collect();
    let mut groups: Vec<Vec<&mut [T]>> = new_params
        .iter_mut()
        .zip(updates)
        .map(|(new_p, u)| {
            let mut views = vec![new_p.as_mut_slice()];
            views.extend(u.buffers.into_iter().map(|b| b.make_mut()));
            views
        })
        .collect();
    tensor::parallel::for_each_chunk_of_each(&mut groups, 4096, |i, start, chunks| {
        let end = start + chunks[0].len();
        let (x, g) = slices[i];
        kernel(i, &x[start..end], &g[start..end], chunks);
    });
    drop(groups);
    new_params
        .into_iter()
        .zip(&inputs)
        .map(|(v, (p, _))| Tensor::from_vec(v, p.shape()))
        .collect()
}
