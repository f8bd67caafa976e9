//! The `Optimizer` trait and its checkpointable state.

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

/// Reads back what [`buffer_state`] saved, checking shapes.
pub(crate) fn load_buffers<T: Element>(
    prefix: &str,
    params: &[Param<T>],
    state: &OptimizerState<T>,
) -> Result<Vec<Option<Tensor<T>>>> {
    params
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
        .collect()
}

/// Applies `f(param, grad, buffers...)` element-wise, producing new values for the
/// parameter and each buffer. Runs over contiguous chunks, in parallel when large;
/// element-wise work does not depend on the chunking.
pub(crate) fn fused_update<T: Element, const B: usize>(
    param: &Tensor<T>,
    grad: &Tensor<T>,
    buffers: [&Tensor<T>; B],
    f: impl Fn(T, T, &mut [T; B]) -> T + Sync,
) -> Result<(Tensor<T>, [Tensor<T>; B])> {
    let p = param.contiguous();
    let g = grad.contiguous();
    let bs: Vec<Tensor<T>> = buffers.iter().map(|b| b.contiguous()).collect();
    let (ps, gs) = (
        p.as_slice().expect("contiguous"),
        g.as_slice().expect("contiguous"),
    );
    let bsl: Vec<&[T]> = bs
        .iter()
        .map(|b| b.as_slice().expect("contiguous"))
        .collect();
    let n = ps.len();
    // Interleave outputs so one pass writes the parameter and its buffers.
    let mut out = vec![T::zero(); n * (B + 1)];
    tensor::parallel::for_each_chunk_sized(&mut out, 4096 * (B + 1), |start, chunk| {
        let i0 = start / (B + 1);
        for (j, o) in chunk.chunks_mut(B + 1).enumerate() {
            let i = i0 + j;
            let mut state: [T; B] = std::array::from_fn(|k| bsl[k][i]);
            o[0] = f(ps[i], gs[i], &mut state);
            o[1..].copy_from_slice(&state);
        }
    });
    let shape = param.shape();
    let take = |k: usize| -> Result<Tensor<T>> {
        Tensor::from_vec(out.iter().skip(k).step_by(B + 1).copied().collect(), shape)
    };
    let new_p = take(0)?;
    let new_b: Vec<Tensor<T>> = (1..=B).map(take).collect::<Result<_>>()?;
    Ok((
        new_p,
        new_b
            .try_into()
            .map_err(|_| Error::value("fused_update", "buffer count"))?,
    ))
}
