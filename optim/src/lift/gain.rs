//! CP-Flow's `PosLinear` convention as a wrapper: every constrained weight enters the
//! network divided by its fan-in, W_eff = ψ(·)/fan_in. CP-Flow (and the lift's
//! CP-Flow code, which emits the latents of those same layers) initialise with this
//! gain in place — PGD at softplus(U(±1/√n)), softplus latents at U(±1/√n), the
//! lift's slack at 0 — so an ICNN without the gain that takes their initial values
//! starts with weights fan_in times too large. Only the weights are scaled (CP-Flow
//! also divides the layer's bias; here biases stay ordinary parameters).

use super::strategies::Positivity;
use autograd::Var;
use nn::Param;
use tensor::{Element, Error, Result, Tensor};

/// A positivity strategy whose weights are scaled by 1/fan_in per tensor.
pub struct FanInGain<T: Element> {
    inner: Box<dyn Positivity<T>>,
    scales: Vec<f64>,
}

impl<T: Element> FanInGain<T> {
    /// Wraps `inner`, whose weights have the given `[out, in]` shapes.
    pub fn new(inner: Box<dyn Positivity<T>>, shapes: &[Vec<usize>]) -> Result<Self> {
        let scales = shapes
            .iter()
            .map(|s| match s.as_slice() {
                [_, fan_in] if *fan_in > 0 => Ok(1.0 / *fan_in as f64),
                _ => Err(Error::shape(
                    "FanInGain",
                    format!("needs [out, in] weight shapes with in > 0, got {s:?}"),
                )),
            })
            .collect::<Result<_>>()?;
        Ok(FanInGain { inner, scales })
    }
}

impl<T: Element> Positivity<T> for FanInGain<T> {
    fn name(&self) -> String {
        format!("{} (1/fan_in gain)", self.inner.name())
    }

    fn weights(&self, batch: &Tensor<T>) -> Result<Vec<Var<T>>> {
        let w = self.inner.weights(batch)?;
        if w.len() < self.scales.len() {
            return Err(Error::shape(
                "FanInGain",
                format!("{} weights for {} gains", w.len(), self.scales.len()),
            ));
        }
        // Free parameters emitted after the constrained weights pass unscaled.
        w.iter()
            .enumerate()
            .map(|(i, w)| match self.scales.get(i) {
                Some(&s) => w.mul_scalar(s),
                None => Ok(w.clone()),
            })
            .collect()
    }

    fn latents(&self, batch: &Tensor<T>) -> Result<Vec<Tensor<T>>> {
        self.inner.latents(batch)
    }

    fn slack(&self) -> Vec<Param<T>> {
        self.inner.slack()
    }

    fn project(&self) -> Result<()> {
        self.inner.project()
    }

    fn shoulder_occupancy(&self, batch: &Tensor<T>) -> Result<f64> {
        self.inner.shoulder_occupancy(batch)
    }
}
