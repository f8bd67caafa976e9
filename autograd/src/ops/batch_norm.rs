//! Training-mode batch normalisation as one op: `y = γ·(x − μ)/√(σ² + ε) + β` per
//! channel (axis 1 of `[N, C, ...]`), μ and σ² the batch's mean and biased
//! variance. The forward is the tensor crate's two kernels (statistics, then the
//! per-channel affine map); the backward is its fused kernel when the backward is
//! not itself recorded, and the same rule written in `Var` ops (so differentiable
//! again) when it is (`grad(…, create_graph = true)`).

use crate::mode;
use crate::var::{record, Var};
use tensor::{error::fmt_shape, Element, Error, Result, Tensor};

use super::for_input;

/// The batch statistics of a [`Var::batch_norm`] call: per-channel mean and biased
/// variance `[C]`, for the layer's running statistics.
pub struct BatchStats<T: Element> {
    /// Per-channel mean.
    pub mean: Tensor<T>,
    /// Per-channel biased variance.
    pub var: Tensor<T>,
}

impl<T: Element> Var<T> {
    /// Batch normalisation of `self` `[N, C, ...]` with the batch's own statistics,
    /// scale `weight` γ `[C]` and shift `bias` β `[C]`, ε = `eps` > 0. Returns the
    /// output and the statistics it used.
    #[track_caller]
    pub fn batch_norm(
        &self,
        weight: &Var<T>,
        bias: &Var<T>,
        eps: f64,
    ) -> Result<(Var<T>, BatchStats<T>)> {
        if !(eps > 0.0 && eps.is_finite()) {
            return Err(Error::value(
                "batch_norm",
                format!("ε must be positive and finite, got {eps}"),
            ));
        }
        let channels = self.shape().get(1).copied();
        for (name, p) in [("weight", weight), ("bias", bias)] {
            if self.ndim() < 2 || channels.is_none_or(|c| p.shape() != [c]) {
                return Err(Error::shape(
                    "batch_norm",
                    format!(
                        "needs an input [N, C, ...] and a {name} [C], got {} and {}",
                        fmt_shape(self.shape()),
                        fmt_shape(p.shape())
                    ),
                ));
            }
        }
        let (mean, var) = self.value.batch_norm_stats()?;
        let inv_std = var.add_scalar(eps).rsqrt();
        let scale = weight.value.mul(&inv_std)?;
        let shift = bias.value.sub(&mean.mul(&scale)?)?;
        let y = self.value.channel_affine(&scale, &shift)?;
        let (mu, r) = (mean.clone(), inv_std);
        let out = record("batch_norm", &[self, weight, bias], y, move |c| {
            let (x, gamma, beta) = (&c.inputs[0], &c.inputs[1], &c.inputs[2]);
            if mode::grad_enabled() {
                let [dx, dgamma, dbeta] = composed_backward(c.grad, x, gamma, eps)?;
                return Ok(vec![
                    for_input(x, || Ok(dx))?,
                    for_input(gamma, || Ok(dgamma))?,
                    for_input(beta, || Ok(dbeta))?,
                ]);
            }
            let (dx, dgamma, dbeta) =
                c.grad
                    .value()
                    .batch_norm_backward(x.value(), &mu, &r, gamma.value())?;
            Ok(vec![
                for_input(x, || Ok(Var::constant(dx)))?,
                for_input(gamma, || Ok(Var::constant(dgamma)))?,
                for_input(beta, || Ok(Var::constant(dbeta)))?,
            ])
        })?;
        Ok((out, BatchStats { mean, var }))
    }
}

/// The backward of [`Var::batch_norm`] in `Var` ops, recomputing the statistics
/// from `x` so that they are differentiated too: with x̂ = (x − μ)·r, dβ = Σg,
/// dγ = Σ g·x̂ and dx = γr·(g − mean(g) − x̂·mean(g·x̂)).
fn composed_backward<T: Element>(
    g: &Var<T>,
    x: &Var<T>,
    gamma: &Var<T>,
    eps: f64,
) -> Result<[Var<T>; 3]> {
    let rank = x.ndim();
    let axes: Vec<isize> = (0..rank as isize).filter(|&a| a != 1).collect();
    let mut channel_shape = vec![1; rank];
    channel_shape[1] = x.shape()[1];
    let r = x.var(&axes, 0, true)?.add_scalar(eps)?.rsqrt()?;
    let x_hat = x.sub(&x.mean(&axes, true)?)?.mul(&r)?;
    let g_x_hat = g.mul(&x_hat)?;
    let dx = g
        .sub(&g.mean(&axes, true)?)?
        .sub(&x_hat.mul(&g_x_hat.mean(&axes, true)?)?)?
        .mul(&r.mul(&gamma.reshape(&channel_shape)?)?)?;
    let c = [x.shape()[1]];
    Ok([
        dx,
        g_x_hat.sum(&axes, false)?.reshape(&c)?,
        g.sum(&axes, false)?.reshape(&c)?,
    ])
}
