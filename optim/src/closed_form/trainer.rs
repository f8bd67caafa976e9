//! Training a backbone under a closed-form last layer: each step takes a gradient
//! step on the backbone with the last layer held fixed (no backpropagation through
//! the solve — the envelope theorem makes that gradient exact at the optimum) and
//! refits the last layer in closed form on the batch.

use super::solve::{proximal_solution, ridge_solution, SolveForm, SolvePath};
use crate::optimizer::Optimizer;
use autograd::{backward, no_grad, Var};
use nn::{Param, ParamGrads};
use tensor::{error::fmt_shape, Element, Error, Result, Tensor};

/// How the last layer is refitted on each batch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HeadRule {
    /// The proximal solution (YᵀΦ + λW_t)(ΦᵀΦ + λI)⁻¹, anchored to the previous W.
    Proximal {
        /// Proximal strength λ > 0.
        lambda: f64,
    },
    /// Per-batch ridge YᵀΦ(ΦᵀΦ + βI)⁻¹, forgetting the previous W (the baseline).
    Ridge {
        /// Ridge strength β ≥ 0.
        beta: f64,
    },
}

/// How many refits took each solve path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SolveCounts {
    /// Cholesky passed the pivot test.
    pub cholesky: usize,
    /// Cholesky passed after the jitter.
    pub jittered: usize,
    /// Least squares by QR.
    pub qr: usize,
}

/// The order of the two updates within a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Backbone step with the previous W, then refit W on the updated features
    /// (the paper's practical algorithm).
    BackboneFirst,
    /// Refit W on the current features, then a backbone step with that W (the
    /// deterministic derivation: W_{t+1} = W*(θ_t), θ_{t+1} = θ_t − α∇L(W_{t+1}, θ_t)).
    LastLayerFirst,
}

/// A last layer W `[k, d]` (plus a bias column when `bias`) set in closed form.
///
/// λ and β weigh against the batch's mean squared loss (the paper's Eq. 13):
/// (1/b)Σᵢ‖yᵢ − Wφᵢ‖² + λ‖W − W_t‖², solved as the summed form with λ·b, so the pull
/// toward W_t relative to the batch's evidence does not change with the batch size.
/// W starts at 0 and is fitted before the first backbone step (see
/// [`ClosedFormTrainer`]), so that first refit is a ridge fit with β = λ. The bias,
/// when present, is the weight of an appended constant feature and is penalised like
/// the others (as in DFIV's ridge utilities), which keeps the primal and dual forms
/// identical.
#[derive(Clone, Debug)]
pub struct ClosedFormHead<T: Element> {
    w: Tensor<T>,
    bias: bool,
    rule: HeadRule,
    form: SolveForm,
    fitted: bool,
    counts: SolveCounts,
}

impl<T: Element> ClosedFormHead<T> {
    /// A head mapping `features` inputs to `outputs` outputs.
    pub fn new(
        features: usize,
        outputs: usize,
        bias: bool,
        rule: HeadRule,
        form: SolveForm,
    ) -> Result<Self> {
        match rule {
            HeadRule::Proximal { lambda } if !(lambda > 0.0 && lambda.is_finite()) => {
                return Err(Error::value(
                    "ClosedFormHead",
                    format!("λ must be finite and > 0, got {lambda}"),
                ))
            }
            HeadRule::Ridge { beta } if !(beta >= 0.0 && beta.is_finite()) => {
                return Err(Error::value(
                    "ClosedFormHead",
                    format!("β must be finite and ≥ 0, got {beta}"),
                ))
            }
            _ => {}
        }
        if features == 0 || outputs == 0 {
            return Err(Error::value(
                "ClosedFormHead",
                format!("needs positive sizes, got {features} → {outputs}"),
            ));
        }
        let d = features + usize::from(bias);
        Ok(ClosedFormHead {
            w: Tensor::zeros(&[outputs, d])?,
            bias,
            rule,
            form,
            fitted: false,
            counts: SolveCounts::default(),
        })
    }

    /// The current last layer `[k, d (+1)]` (the bias is the last column).
    pub fn weight(&self) -> &Tensor<T> {
        &self.w
    }

    /// True once a refit has succeeded.
    pub fn fitted(&self) -> bool {
        self.fitted
    }

    /// How many refits took each solve path.
    pub fn solve_counts(&self) -> SolveCounts {
        self.counts
    }

    /// The rule used by [`ClosedFormHead::refit`].
    pub fn rule(&self) -> HeadRule {
        self.rule
    }

    /// Appends the constant feature when the head has a bias.
    fn augment_var(&self, phi: &Var<T>) -> Result<Var<T>> {
        if !self.bias {
            return Ok(phi.clone());
        }
        let ones = Var::constant(Tensor::ones(&[phi.shape()[0], 1])?);
        Var::cat(&[phi, &ones], 1)
    }

    /// Predictions Φ Wᵀ (+ bias) for features `[b, d]`, W held constant.
    pub fn predict(&self, phi: &Var<T>) -> Result<Var<T>> {
        let d = self.w.shape()[1] - usize::from(self.bias);
        if phi.ndim() != 2 || phi.shape()[1] != d {
            return Err(Error::shape(
                "ClosedFormHead",
                format!(
                    "features of shape {} for a head over {d} features",
                    fmt_shape(phi.shape())
                ),
            ));
        }
        self.augment_var(phi)?.matmul(&Var::constant(self.w.t()?))
    }

    /// Refits W on a batch (features `[b, d]`, targets `[b, k]`) by the head's rule,
    /// solving in f64 (see [`super::solve`]). On error W is unchanged.
    pub fn refit(&mut self, phi: &Tensor<T>, y: &Tensor<T>) -> Result<()> {
        let d = self.w.shape()[1] - usize::from(self.bias);
        let k = self.w.shape()[0];
        if phi.ndim() != 2 || phi.shape()[1] != d || y.ndim() != 2 || y.shape()[1] != k {
            return Err(Error::shape(
                "ClosedFormHead::refit",
                format!(
                    "features {} and targets {} for a head over {d} features and {k} outputs",
                    fmt_shape(phi.shape()),
                    fmt_shape(y.shape())
                ),
            ));
        }
        let phi = self
            .augment_var(&Var::constant(phi.clone()))?
            .value()
            .clone();
        let scale = phi.shape()[0] as f64;
        let solution = match self.rule {
            HeadRule::Proximal { lambda } => {
                proximal_solution(&phi, y, &self.w, lambda * scale, self.form)?
            }
            HeadRule::Ridge { beta } => ridge_solution(&phi, y, beta * scale, self.form)?,
        };
        match solution.path {
            SolvePath::Cholesky => self.counts.cholesky += 1,
            SolvePath::Jittered(_) => self.counts.jittered += 1,
            SolvePath::Qr => self.counts.qr += 1,
        }
        self.w = solution.w;
        self.fitted = true;
        Ok(())
    }
}

/// The squared loss mean_i ‖yᵢ − ŷᵢ‖², the backbone's objective under the head.
pub fn squared_loss<T: Element>(pred: &Var<T>, y: &Tensor<T>) -> Result<Var<T>> {
    if pred.shape() != y.shape() {
        return Err(Error::shape(
            "squared_loss",
            format!(
                "predictions {} and targets {} differ",
                fmt_shape(pred.shape()),
                fmt_shape(y.shape())
            ),
        ));
    }
    pred.sub(&Var::constant(y.clone()))?
        .square()?
        .sum(&[-1], false)?
        .mean_all()
}

/// A backbone optimiser and a closed-form head trained together.
///
/// ```
/// use autograd::Var;
/// use nn::{Activation, Mlp, Module, ParamStore};
/// use optim::closed_form::{ClosedFormHead, ClosedFormTrainer, HeadRule, Order, SolveForm};
/// use optim::{Sgd, SgdConfig};
/// use tensor::{Rng, Tensor};
/// # fn main() -> tensor::Result<()> {
/// let (store, mut rng) = (ParamStore::<f64>::new(), Rng::new(3));
/// let backbone = Mlp::new(&store.root(), &[3, 8, 6], Activation::Tanh, &mut rng)?; // 6 features
/// let x = Var::constant(Tensor::rand_normal(&[20, 3], 0.0, 1.0, &mut rng)?);
/// let y = x.value().sin().sum(&[1], true)?; // [20, 1] targets
/// let head = ClosedFormHead::new(6, 1, true, HeadRule::Proximal { lambda: 1.0 }, SolveForm::Auto)?;
/// let sgd = Sgd::new(store.trainable(), SgdConfig::new(0.01).momentum(0.9))?;
/// let mut trainer = ClosedFormTrainer { head, optimizer: Box::new(sgd), order: Order::BackboneFirst, buffers: vec![] };
/// let first = trainer.step(|| backbone.forward(&x), &y)?; // fits the head, then a backbone step
/// let mut last = first;
/// for _ in 0..100 {
///     last = trainer.step(|| backbone.forward(&x), &y)?;
/// }
/// assert!(trainer.head.fitted() && last < 0.5 * first, "{first} -> {last}");
/// # Ok(())
/// # }
/// ```
pub struct ClosedFormTrainer<T: Element> {
    /// The last layer.
    pub head: ClosedFormHead<T>,
    /// The optimiser of the backbone's parameters.
    pub optimizer: Box<dyn Optimizer<T>>,
    /// The order of the two updates.
    pub order: Order,
    /// Non-trainable state the refit's extra feature pass must leave as it was
    /// (BatchNorm running statistics): saved before that pass and restored after.
    pub buffers: Vec<Param<T>>,
}

impl<T: Element> ClosedFormTrainer<T> {
    /// One step on a batch: `features()` runs the backbone on the batch (recording
    /// when gradients are enabled), `y` are the batch targets `[b, k]`. Before the
    /// first backbone step the head is fitted on the first batch (W₀ = 0 would make
    /// that step's gradient exactly zero). Returns the squared loss the backbone step
    /// was taken on. If anything fails, the backbone, its buffers, the optimiser state
    /// and the head are left as they were, bit for bit.
    pub fn step(&mut self, features: impl Fn() -> Result<Var<T>>, y: &Tensor<T>) -> Result<f64> {
        if !y.all_finite() {
            return Err(Error::non_finite(
                "ClosedFormTrainer",
                "the targets have a NaN or infinity",
            ));
        }
        let params: Vec<Param<T>> = self
            .optimizer
            .params()
            .iter()
            .chain(&self.buffers)
            .cloned()
            .collect();
        let saved: Vec<Tensor<T>> = params.iter().map(|p| p.value()).collect();
        let saved_state = self.optimizer.state();
        let saved_head = self.head.clone();
        let result = self.step_inner(&features, y);
        if result.is_err() {
            for (p, v) in params.iter().zip(saved) {
                p.set(v)?;
            }
            self.optimizer.load_state(&saved_state)?;
            self.head = saved_head;
        }
        result
    }

    /// Refits the head on the batch's features, computed without recording and
    /// leaving the buffers as they were.
    fn refit(&mut self, features: &impl Fn() -> Result<Var<T>>, y: &Tensor<T>) -> Result<()> {
        let saved: Vec<Tensor<T>> = self.buffers.iter().map(|p| p.value()).collect();
        let phi = no_grad(features);
        for (p, v) in self.buffers.iter().zip(saved) {
            p.set(v)?;
        }
        self.head.refit(phi?.value(), y)
    }

    fn step_inner(&mut self, features: &impl Fn() -> Result<Var<T>>, y: &Tensor<T>) -> Result<f64> {
        if self.order == Order::LastLayerFirst || !self.head.fitted() {
            self.refit(features, y)?;
        }
        let loss = squared_loss(&self.head.predict(&features()?)?, y)?;
        let value = loss.item()?.as_f64();
        let grads = ParamGrads::collect(self.optimizer.params(), &backward(&loss)?);
        self.optimizer.step(&grads)?;
        if self.order == Order::BackboneFirst {
            self.refit(features, y)?;
        }
        Ok(value)
    }
}
