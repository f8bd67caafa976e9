//! Sharpness-aware minimisation (Foret et al.), Friendly SAM (Li et al.) and
//! Fisher-SAM as the LLQR authors code it: take the gradient at a perturbed point
//! θ + ε on the same batch and let a base optimiser step with it from θ.

use crate::closure::{gradients, perturb, restore};
use crate::optimizer::{
    buffer_state, check_range, join_state, load_buffers, reject_unknown_buffers, split_state,
    Optimizer, OptimizerState,
};
use autograd::Var;
use nn::{Param, ParamGrads};
use tensor::{Element, Error, Result, Tensor};

/// Which perturbation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SamVariant {
    /// ε = ρ g/‖g‖.
    Sam,
    /// ε = ρ d/‖d‖ with d = g − σ·m, m an EMA of past gradients (decay λ); on the
    /// first step d = g and m = g (as in the F-SAM reference code).
    FriendlySam {
        /// Weight σ of the subtracted EMA.
        sigma: f64,
        /// EMA decay λ.
        decay: f64,
    },
    /// ε = ρ f/√(gᵀf + 1e-12) with f = g/(g² + η) element-wise: a diagonal
    /// empirical-Fisher metric (the LLQR authors' `fisher_sam`, η = 0.1).
    FisherSam {
        /// The damping η of the diagonal Fisher.
        eta: f64,
    },
}

/// SAM or F-SAM around any base optimiser. It is an [`Optimizer`] driven by
/// [`Optimizer::step_closure`] (it needs the loss twice); its state (F-SAM's
/// gradient EMA under `sam.ema.`, beside the base's own) checkpoints and resumes
/// bit-identically.
pub struct Sam<T: Element> {
    base: Box<dyn Optimizer<T>>,
    rho: f64,
    variant: SamVariant,
    ema: Option<Vec<Tensor<T>>>,
}

/// The Euclidean norm of a list of tensors.
pub(crate) fn norm<T: Element>(ts: &[Tensor<T>]) -> f64 {
    ts.iter()
        .map(|t| {
            t.square()
                .sum_all()
                .item()
                .map(|v| v.as_f64())
                .unwrap_or(0.0)
        })
        .sum::<f64>()
        .sqrt()
}

impl<T: Element> Sam<T> {
    /// SAM with radius ρ ≥ 0 around `base`.
    ///
    /// ```
    /// use nn::ParamStore;
    /// use optim::{Optimizer, Sam, SamVariant, Sgd, SgdConfig};
    /// use tensor::Tensor;
    /// # fn main() -> tensor::Result<()> {
    /// // The same start, a step of plain SGD and one of SAM on Σ θ⁴.
    /// let start = Tensor::<f64>::from_vec(vec![1.0, -2.0], &[2])?;
    /// let (s1, s2) = (ParamStore::new(), ParamStore::new());
    /// let (a, b) = (s1.root().param("w", start.clone())?, s2.root().param("w", start.clone())?);
    /// let mut sgd = Sgd::new(s1.trainable(), SgdConfig::new(0.01))?;
    /// let base = Sgd::new(s2.trainable(), SgdConfig::new(0.01))?;
    /// let mut sam = Sam::new(Box::new(base), 0.05, SamVariant::Sam)?;
    /// let la = sgd.step_closure(&|| a.var().powf(4.0)?.sum_all())?;
    /// let lb = sam.step_closure(&|| b.var().powf(4.0)?.sum_all())?;
    /// assert_eq!(la, lb); // both report the loss at θ, not at the perturbed point
    /// // SAM steps with the gradient at θ + ρ·g/‖g‖, steeper here: it moves further.
    /// let moved = |p: &nn::Param<f64>| p.value().sub(&start).map(|d| d.abs().to_vec());
    /// let (da, db) = (moved(&a)?, moved(&b)?);
    /// assert!(db[0] > da[0] && db[1] > da[1]);
    /// assert!(Sam::new(Box::new(sgd), -1.0, SamVariant::Sam).is_err()); // ρ ≥ 0
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(base: Box<dyn Optimizer<T>>, rho: f64, variant: SamVariant) -> Result<Self> {
        check_range("Sam", "rho", rho, 0.0, f64::INFINITY)?;
        if let SamVariant::FriendlySam { sigma, decay } = variant {
            check_range("Sam", "sigma", sigma, 0.0, f64::INFINITY)?;
            check_range("Sam", "decay", decay, 0.0, 1.0)?;
        }
        if let SamVariant::FisherSam { eta } = variant {
            if !(eta > 0.0 && eta.is_finite()) {
                return Err(Error::value(
                    "Sam",
                    format!("Fisher-SAM's η must be finite and > 0, got {eta}"),
                ));
            }
        }
        Ok(Sam {
            base,
            rho,
            variant,
            ema: None,
        })
    }

    /// The base optimiser.
    pub fn base(&mut self) -> &mut dyn Optimizer<T> {
        self.base.as_mut()
    }
}

/// Where SAM keeps its own entries in an [`OptimizerState`].
const SAM_PREFIX: &str = "sam.";

impl<T: Element> Optimizer<T> for Sam<T> {
    fn params(&self) -> &[Param<T>] {
        self.base.params()
    }

    /// An error: SAM needs the loss at θ + ε, which a gradient alone cannot give;
    /// use [`Optimizer::step_closure`].
    fn step(&mut self, _grads: &ParamGrads<T>) -> Result<()> {
        Err(Error::value(
            "Sam::step",
            "SAM evaluates the loss twice (at θ and at θ + ε): call step_closure with the loss",
        ))
    }

    /// One step on the batch that `loss()` evaluates (it is called twice: at θ and at
    /// θ + ε). Returns the loss at θ. On error the parameters are left at θ.
    fn step_closure(&mut self, loss: &dyn Fn() -> Result<Var<T>>) -> Result<f64> {
        let params = self.base.params().to_vec();
        let (value, g) = gradients(&params, loss)?;
        let g = g.into_tensors();
        let direction: Vec<Tensor<T>> = match (self.variant, &self.ema) {
            (SamVariant::FriendlySam { sigma, .. }, Some(m)) => g
                .iter()
                .zip(m)
                .map(|(g, m)| g.sub(&m.mul_scalar(sigma)))
                .collect::<Result<_>>()?,
            _ => g.clone(),
        };
        let direction: Vec<Tensor<T>> = match self.variant {
            SamVariant::FisherSam { eta } => direction
                .iter()
                .map(|g| g.div(&g.square().add_scalar(eta)))
                .collect::<Result<_>>()?,
            _ => direction,
        };
        let scale = match self.variant {
            SamVariant::FisherSam { .. } => {
                let mut gf = 0.0;
                for (g, f) in g.iter().zip(&direction) {
                    gf += g.mul(f)?.sum_all().item()?.as_f64();
                }
                self.rho / (gf + 1e-12).sqrt()
            }
            _ => self.rho / (norm(&direction) + 1e-12),
        };
        let eps: Vec<Tensor<T>> = direction.iter().map(|d| d.mul_scalar(scale)).collect();
        let saved = perturb(&params, &eps)?;
        let perturbed = gradients(&params, loss);
        restore(&params, saved)?;
        let (_, g_plus) = perturbed?;
        self.base.step(&g_plus)?;
        if let SamVariant::FriendlySam { decay, .. } = self.variant {
            self.ema = Some(match self.ema.take() {
                None => g,
                Some(m) => m
                    .iter()
                    .zip(&g)
                    .map(|(m, g)| m.mul_scalar(decay).add(&g.mul_scalar(1.0 - decay)))
                    .collect::<Result<_>>()?,
            });
        }
        Ok(value)
    }

    fn lr(&self) -> f64 {
        self.base.lr()
    }

    fn set_lr(&mut self, lr: f64) -> Result<()> {
        self.base.set_lr(lr)
    }

    fn state(&self) -> OptimizerState<T> {
        let own = match &self.ema {
            Some(m) => OptimizerState {
                tensors: buffer_state(
                    "ema",
                    self.base.params(),
                    &m.iter().cloned().map(Some).collect::<Vec<_>>(),
                ),
                scalars: Vec::new(),
            },
            None => OptimizerState::default(),
        };
        join_state(SAM_PREFIX, own, self.base.state())
    }

    /// Restores the base's state and F-SAM's EMA; an EMA saved for another variant,
    /// a partial one or one of the wrong shapes is an error and nothing changes.
    fn load_state(&mut self, state: &OptimizerState<T>) -> Result<()> {
        let (own, rest) = split_state(SAM_PREFIX, state);
        let params = self.base.params().to_vec();
        reject_unknown_buffers(&["ema"], &params, &own)?;
        let ema = load_buffers("ema", &params, &own)?;
        let ema: Option<Vec<Tensor<T>>> = ema.into_iter().collect();
        if ema.is_some() && !matches!(self.variant, SamVariant::FriendlySam { .. }) {
            return Err(Error::format(
                "optimizer state",
                format!(
                    "a gradient EMA was saved, but {:?} keeps none (a state of F-SAM?)",
                    self.variant
                ),
            ));
        }
        self.base.load_state(&rest)?;
        self.ema = ema;
        Ok(())
    }
}
