//! Ways to keep an ICNN's constrained weights non-negative: projection (PGD), a
//! direct softplus reparametrisation, and the lift, where a hypernetwork emits the
//! softplus latents from a summary of the current batch plus a learnable slack bias,
//! θ̃ = Θ_E h_φ(X) + b, θ = softplus(θ̃) — with the paper's ablations.

use autograd::Var;
use nn::{init, DeepSets, Param, Scope};
use tensor::{Element, Error, Result, Rng, Tensor};

/// A source of non-negative weights for an ICNN.
pub trait Positivity<T: Element>: Send + Sync {
    /// A short name for tables.
    fn name(&self) -> String;

    /// The non-negative weights for a forward pass conditioned on `batch` (the
    /// batch is ignored by strategies that do not condition on data).
    fn weights(&self, batch: &Tensor<T>) -> Result<Vec<Var<T>>>;

    /// The pre-positivity values θ̃ at `batch`, one tensor per weight: the latent for
    /// softplus, the emission for the lift, the raw weight for PGD.
    fn latents(&self, batch: &Tensor<T>) -> Result<Vec<Tensor<T>>>;

    /// The parameters that enter θ̃ additively with unit Jacobian (the slack channel
    /// of the cross-covariance reading): the slack bias of the lift, the latent of
    /// softplus, the raw weight of PGD; empty when there is no such channel.
    fn slack(&self) -> Vec<Param<T>>;

    /// Restores feasibility after an optimiser step (PGD's projection).
    fn project(&self) -> Result<()> {
        Ok(())
    }

    /// The fraction of latent entries on the softplus shoulder, sigmoid(θ̃) ≤ 0.05
    /// (for PGD, the fraction of weights clamped to exactly zero).
    fn shoulder_occupancy(&self, batch: &Tensor<T>) -> Result<f64> {
        let lat = self.latents(batch)?;
        let edge = (0.05f64 / 0.95).ln();
        let (mut hit, mut total) = (0usize, 0usize);
        for t in &lat {
            let v = t.to_vec();
            total += v.len();
            hit += v.iter().filter(|x| x.as_f64() <= edge).count();
        }
        Ok(hit as f64 / total.max(1) as f64)
    }
}

/// Projected gradient descent: raw weights, clamped at 0 after every step.
///
/// ```
/// use nn::ParamStore;
/// use optim::lift::{Pgd, Positivity};
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// let store = ParamStore::<f64>::new();
/// let pgd = Pgd::new(&store.root().sub("pgd"), vec![Tensor::from_vec(vec![-1.0, 2.0], &[1, 2])?])?;
/// let w = &pgd.slack()[0]; // the raw weight
/// assert_eq!(w.value().to_vec(), vec![0.0, 2.0]); // started feasible
/// w.set(Tensor::from_vec(vec![0.5, -3.0], &[1, 2])?)?; // as an optimiser step might leave it
/// pgd.project()?;
/// assert_eq!(w.value().to_vec(), vec![0.5, 0.0]);
/// assert_eq!(pgd.shoulder_occupancy(&Tensor::zeros(&[1, 2])?)?, 0.5); // one weight at zero
/// # Ok(())
/// # }
/// ```
pub struct Pgd<T: Element> {
    weights: Vec<Param<T>>,
}

impl<T: Element> Pgd<T> {
    /// Raw weights with the given initial (non-negative) values.
    pub fn new(scope: &Scope<T>, initial: Vec<Tensor<T>>) -> Result<Self> {
        let weights = initial
            .into_iter()
            .enumerate()
            .map(|(i, t)| scope.param(&format!("w{i}"), t.relu()))
            .collect::<Result<_>>()?;
        Ok(Pgd { weights })
    }
}

impl<T: Element> Positivity<T> for Pgd<T> {
    fn name(&self) -> String {
        "PGD".into()
    }
    fn weights(&self, _: &Tensor<T>) -> Result<Vec<Var<T>>> {
        Ok(self.weights.iter().map(|p| p.var()).collect())
    }
    fn latents(&self, _: &Tensor<T>) -> Result<Vec<Tensor<T>>> {
        Ok(self.weights.iter().map(|p| p.value()).collect())
    }
    fn slack(&self) -> Vec<Param<T>> {
        self.weights.clone()
    }
    fn project(&self) -> Result<()> {
        self.weights
            .iter()
            .try_for_each(|p| p.set(p.value().relu()))
    }
    fn shoulder_occupancy(&self, _: &Tensor<T>) -> Result<f64> {
        let (mut zeros, mut total) = (0usize, 0usize);
        for p in &self.weights {
            let v = p.value().to_vec();
            total += v.len();
            zeros += v.iter().filter(|x| **x == T::zero()).count();
        }
        Ok(zeros as f64 / total.max(1) as f64)
    }
}

/// The direct softplus reparametrisation W = softplus(W̃), W̃ a plain parameter.
pub struct Softplus<T: Element> {
    latents: Vec<Param<T>>,
}

/// softplus⁻¹(w) = ln(eʷ − 1), stable for small and large w.
fn inverse_softplus<T: Element>(w: &Tensor<T>) -> Tensor<T> {
    w.map(|v| {
        let x = v.as_f64().max(1e-12);
        T::from_f64(if x > 30.0 { x } else { x.exp_m1().ln() })
    })
}

impl<T: Element> Softplus<T> {
    /// Latents starting at softplus⁻¹ of the given initial weights.
    pub fn new(scope: &Scope<T>, initial: Vec<Tensor<T>>) -> Result<Self> {
        let latents = initial
            .iter()
            .enumerate()
            .map(|(i, t)| scope.param(&format!("latent{i}"), inverse_softplus(t)))
            .collect::<Result<_>>()?;
        Ok(Softplus { latents })
    }
}

impl<T: Element> Positivity<T> for Softplus<T> {
    fn name(&self) -> String {
        "softplus".into()
    }
    fn weights(&self, _: &Tensor<T>) -> Result<Vec<Var<T>>> {
        self.latents.iter().map(|p| p.var().softplus()).collect()
    }
    fn latents(&self, _: &Tensor<T>) -> Result<Vec<Tensor<T>>> {
        Ok(self.latents.iter().map(|p| p.value()).collect())
    }
    fn slack(&self) -> Vec<Param<T>> {
        self.latents.clone()
    }
}

/// The lift and its ablations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiftVariant {
    /// θ̃ = Θ_E h_φ(X) + b: batch body and learnable slack (the method).
    Full,
    /// θ̃ = Θ_E h_φ(X): no slack bias (the reading has no slack channel).
    NoSlack,
    /// θ̃ = Θ_E c + b with c a learned code: a batch-independent body.
    Code,
}

/// Settings of the lift's hypernetwork.
#[derive(Clone, Debug, PartialEq)]
pub struct LiftConfig {
    /// Which ablation.
    pub variant: LiftVariant,
    /// Hidden widths of the per-sample encoder.
    pub hidden: Vec<usize>,
    /// Size of the pooled summary.
    pub summary: usize,
    /// Standardise the pooled summary over its features.
    pub pool_norm: bool,
    /// Standardise with the unbiased (n − 1) standard deviation, as the authors'
    /// `torch.std` does (false: the 1/n one).
    pub pool_unbiased: bool,
    /// Initial value of every slack bias entry (−2 puts softplus at 0.127).
    pub slack_init: f64,
    /// Spread of the slack's initial values: each entry starts at
    /// `slack_init + slack_std·N(0, 1)` (the authors' tabular CP-Flow draws its
    /// readout biases from N(0, 0.5²); 0 elsewhere).
    pub slack_std: f64,
    /// Emit every ICNN parameter, not only the constrained weights: the authors'
    /// EBM lift (`lift/models/hypernet.py`: first layer, biases, skips and the rest
    /// come from the hypernetwork; softplus only on the positivity heads). Their
    /// CP-Flow lift, and the default here, emit only the constrained weights. Used
    /// by the callers that build the lift ([`Lift::emitting_all`]).
    pub emit_all: bool,
}

impl Default for LiftConfig {
    fn default() -> Self {
        LiftConfig {
            variant: LiftVariant::Full,
            hidden: vec![64, 64],
            summary: 96,
            pool_norm: true,
            pool_unbiased: true,
            slack_init: -2.0,
            slack_std: 0.0,
            emit_all: false,
        }
    }
}

/// The body of the hypernetwork: a DeepSets summary of the batch, or a learned code.
enum Body<T: Element> {
    Batch(DeepSets<T>),
    Code(Param<T>),
}

/// The lift: θ = softplus(Θ_E h + b), one linear readout (Θ_E, b) per emitted weight
/// (and, when it emits every parameter, θ = Θ_E h + b for the free ones).
///
/// ```
/// use autograd::{backward, Var};
/// use nn::{Activation, Icnn, IcnnConfig, ParamStore};
/// use optim::lift::{Lift, LiftConfig, Positivity};
/// use tensor::{Rng, Tensor};
/// # fn main() -> tensor::Result<()> {
/// let (store, mut rng) = (ParamStore::<f64>::new(), Rng::new(0));
/// let cfg = IcnnConfig { input: 2, width: 8, layers: 2, activation: Activation::Softplus, strong_convexity: 0.1, act_norm: false };
/// let icnn = Icnn::new(&store.root().sub("icnn"), cfg, &mut rng)?;
/// let small = LiftConfig { hidden: vec![16], summary: 8, ..LiftConfig::default() };
/// let lift = Lift::new(&store.root().sub("lift"), 2, icnn.constrained_shapes(), &small, &mut rng)?;
/// // The ICNN's weights, emitted from a summary of the batch through softplus: positive.
/// let batch = Tensor::rand_normal(&[32, 2], 0.0, 1.0, &mut rng)?;
/// let w = lift.weights(&batch)?;
/// assert!(w.len() == 2 && w.iter().all(|w| w.value().min_all().is_ok_and(|m| m > 0.0)));
/// // Gradients of the ICNN's output reach the lift's slack biases through them.
/// let g = backward(&icnn.forward_with(&Var::constant(batch), &w)?.mean_all()?)?;
/// assert!(lift.slack().iter().all(|p| g.get(&p.var()).is_some()));
/// # Ok(())
/// # }
/// ```
pub struct Lift<T: Element> {
    body: Body<T>,
    readouts: Vec<(Param<T>, Option<Param<T>>)>,
    shapes: Vec<Vec<usize>>,
    constrained: usize,
    variant: LiftVariant,
}

impl<T: Element> Lift<T> {
    /// A lift emitting weights of the given shapes from batches of `input`-dimensional
    /// samples.
    pub fn new(
        scope: &Scope<T>,
        input: usize,
        shapes: Vec<Vec<usize>>,
        cfg: &LiftConfig,
        rng: &mut Rng,
    ) -> Result<Self> {
        Self::emitting_all(scope, input, shapes, Vec::new(), cfg, rng)
    }

    /// A lift emitting the non-negative weights of shapes `constrained` (softplus
    /// heads, slack at `cfg.slack_init`) and, after them, the free parameters of
    /// shapes `free` (identity heads, readout bias at the default linear-layer
    /// initialisation U(±1/√summary), as the authors' EBM does). The
    /// cross-covariance reads the positivity heads only.
    pub fn emitting_all(
        scope: &Scope<T>,
        input: usize,
        shapes: Vec<Vec<usize>>,
        free: Vec<Vec<usize>>,
        cfg: &LiftConfig,
        rng: &mut Rng,
    ) -> Result<Self> {
        let constrained = shapes.len();
        let shapes: Vec<Vec<usize>> = shapes.into_iter().chain(free).collect();
        if constrained == 0 || cfg.summary == 0 {
            return Err(Error::value(
                "Lift",
                "needs at least one emitted weight and a positive summary size",
            ));
        }
        if !(cfg.slack_init.is_finite() && cfg.slack_std >= 0.0 && cfg.slack_std.is_finite()) {
            return Err(Error::value(
                "Lift",
                format!(
                    "slack_init must be finite and slack_std finite and ≥ 0, got {} and {}",
                    cfg.slack_init, cfg.slack_std
                ),
            ));
        }
        let body = match cfg.variant {
            LiftVariant::Code => {
                Body::Code(scope.param("code", init::normal(&[1, cfg.summary], 0.0, 1.0, rng)?)?)
            }
            _ => {
                let ds = DeepSets::new(
                    &scope.sub("body"),
                    input,
                    &cfg.hidden,
                    cfg.summary,
                    cfg.pool_norm,
                    rng,
                )?;
                Body::Batch(if cfg.pool_unbiased {
                    ds
                } else {
                    ds.biased_std()
                })
            }
        };
        let readouts = shapes
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let numel: usize = s.iter().product();
                let r = scope.sub(format!("readout{i}"));
                let a = 1.0 / (cfg.summary as f64).sqrt();
                let theta = r.param("theta", init::uniform(&[numel, cfg.summary], -a, a, rng)?)?;
                let slack = match cfg.variant {
                    LiftVariant::NoSlack => None,
                    _ if i >= constrained => {
                        Some(r.param("slack", init::uniform(&[numel], -a, a, rng)?)?)
                    }
                    _ => Some(r.param(
                        "slack",
                        if cfg.slack_std > 0.0 {
                            init::normal(&[numel], cfg.slack_init, cfg.slack_std, rng)?
                        } else {
                            Tensor::full(&[numel], T::from_f64(cfg.slack_init))?
                        },
                    )?),
                };
                Ok((theta, slack))
            })
            .collect::<Result<_>>()?;
        Ok(Lift {
            body,
            readouts,
            shapes,
            constrained,
            variant: cfg.variant,
        })
    }

    /// The emission θ̃ (pre-softplus) at `batch`, one `Var` per weight.
    pub fn emission(&self, batch: &Tensor<T>) -> Result<Vec<Var<T>>> {
        let h = match &self.body {
            Body::Batch(ds) => ds.summarise(batch)?,
            Body::Code(c) => c.var(),
        };
        self.readouts
            .iter()
            .zip(&self.shapes)
            .map(|((theta, slack), s)| {
                let mut t = h.matmul(&theta.var().t()?)?;
                if let Some(b) = slack {
                    t = t.add(&b.var())?;
                }
                t.reshape(s)
            })
            .collect()
    }
}

impl<T: Element> Positivity<T> for Lift<T> {
    fn name(&self) -> String {
        match self.variant {
            LiftVariant::Full => "lift".into(),
            LiftVariant::NoSlack => "lift without slack".into(),
            LiftVariant::Code => "lift with a learned code".into(),
        }
    }
    fn weights(&self, batch: &Tensor<T>) -> Result<Vec<Var<T>>> {
        self.emission(batch)?
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                if i < self.constrained {
                    t.softplus()
                } else {
                    Ok(t)
                }
            })
            .collect()
    }
    fn latents(&self, batch: &Tensor<T>) -> Result<Vec<Tensor<T>>> {
        Ok(autograd::no_grad(|| self.emission(batch))?
            .into_iter()
            .take(self.constrained)
            .map(|v| v.value().clone())
            .collect())
    }
    fn slack(&self) -> Vec<Param<T>> {
        self.readouts
            .iter()
            .take(self.constrained)
            .filter_map(|(_, b)| b.clone())
            .collect()
    }
}
