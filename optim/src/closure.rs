//! Helpers for optimisers driven by a loss closure: the loss and its gradients at
//! the parameters' current values, and a perturbation of the parameters that is
//! undone exactly. The default [`Optimizer::step_closure`], SAM and LLQR+SAM all
//! use them; they live in this leaf module, which imports neither the optimiser
//! trait nor any optimiser, so that `optimizer.rs` and `sam.rs` do not import each
//! other.
//!
//! [`Optimizer::step_closure`]: crate::Optimizer::step_closure

use autograd::{backward, Var};
use nn::{Param, ParamGrads};
use tensor::{Element, Error, Result, Tensor};

/// Gradients of `loss()` at the parameters' current values.
pub(crate) fn gradients<T: Element>(
    params: &[Param<T>],
    loss: &dyn Fn() -> Result<Var<T>>,
) -> Result<(f64, ParamGrads<T>)> {
    let l = loss()?;
    let v = l.item()?.as_f64();
    if !v.is_finite() {
        return Err(Error::non_finite("gradients", format!("the loss is {v}")));
    }
    Ok((v, ParamGrads::collect(params, &backward(&l)?)))
}

/// Moves every parameter by `eps` (θ ← θ + ε) and returns the previous values.
pub(crate) fn perturb<T: Element>(
    params: &[Param<T>],
    eps: &[Tensor<T>],
) -> Result<Vec<Tensor<T>>> {
    let saved: Vec<Tensor<T>> = params.iter().map(|p| p.value()).collect();
    for (p, e) in params.iter().zip(eps) {
        p.set(p.value().add(e)?)?;
    }
    Ok(saved)
}

/// Restores values saved by [`perturb`] exactly.
pub(crate) fn restore<T: Element>(params: &[Param<T>], saved: Vec<Tensor<T>>) -> Result<()> {
    params.iter().zip(saved).try_for_each(|(p, v)| p.set(v))
}
