//! The LLQR+SAM experiments: image classification with every optimiser of the
//! comparison (SGD, SAM, F-SAM, LLQR alone, LLQR+SAM in both geometries and both
//! norms, LLQR+F-SAM), and the one-dimensional pothole landscape.

pub mod classify;
pub mod pothole;

use autograd::{backward, Var};
use nn::{Param, ParamGrads};
use optim::llqr::{Geometry, LlqrConfig, LlqrSam, PerturbationNorm};
use optim::{Optimizer, Sam, SamVariant, Sgd, SgdConfig};
use tensor::{Result, Rng};

/// One optimiser of the comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Method {
    /// SGD with momentum.
    Sgd,
    /// SAM around SGD.
    Sam,
    /// Friendly SAM around SGD.
    FriendlySam,
    /// LLQR alone (ρ = 0).
    Llqr(Geometry),
    /// LLQR+SAM.
    LlqrSam(Geometry, PerturbationNorm),
    /// LLQR+F-SAM (the perturbation direction g − ḡ).
    LlqrFriendlySam(Geometry, PerturbationNorm),
}

fn geometry_name(g: Geometry) -> &'static str {
    match g {
        Geometry::Fisher => "NGD",
        Geometry::Newton => "Newton",
    }
}

fn norm_name(n: PerturbationNorm) -> &'static str {
    match n {
        PerturbationNorm::Euclidean => "‖Ug‖₂",
        PerturbationNorm::Matrix => "‖g‖_U",
    }
}

impl Method {
    /// The arms of the comparison, in table order.
    pub fn all() -> Vec<Method> {
        use Geometry::{Fisher, Newton};
        use PerturbationNorm::{Euclidean, Matrix};
        vec![
            Method::Sgd,
            Method::Sam,
            Method::FriendlySam,
            Method::Llqr(Fisher),
            Method::Llqr(Newton),
            Method::LlqrSam(Fisher, Euclidean),
            Method::LlqrSam(Fisher, Matrix),
            Method::LlqrSam(Newton, Euclidean),
            Method::LlqrSam(Newton, Matrix),
            Method::LlqrFriendlySam(Fisher, Euclidean),
        ]
    }

    /// Name in tables.
    pub fn name(self) -> String {
        match self {
            Method::Sgd => "SGD".into(),
            Method::Sam => "SAM".into(),
            Method::FriendlySam => "F-SAM".into(),
            Method::Llqr(g) => format!("LLQR ({})", geometry_name(g)),
            Method::LlqrSam(g, n) => format!("LLQR+SAM ({}, {})", geometry_name(g), norm_name(n)),
            Method::LlqrFriendlySam(g, n) => {
                format!("LLQR+F-SAM ({}, {})", geometry_name(g), norm_name(n))
            }
        }
    }

    /// A file-name-safe tag.
    pub fn tag(self) -> String {
        let g = |g: Geometry| match g {
            Geometry::Fisher => "ngd",
            Geometry::Newton => "newton",
        };
        let n = |n: PerturbationNorm| match n {
            PerturbationNorm::Euclidean => "euclid",
            PerturbationNorm::Matrix => "unorm",
        };
        match self {
            Method::Sgd => "sgd".into(),
            Method::Sam => "sam".into(),
            Method::FriendlySam => "fsam".into(),
            Method::Llqr(x) => format!("llqr-{}", g(x)),
            Method::LlqrSam(x, y) => format!("llqr-sam-{}-{}", g(x), n(y)),
            Method::LlqrFriendlySam(x, y) => format!("llqr-fsam-{}-{}", g(x), n(y)),
        }
    }
}

/// Settings shared by every arm: the outer SGD and the SAM and LLQR knobs.
#[derive(Clone, Debug)]
pub struct Hyper {
    /// Learning rate of the outer SGD.
    pub lr: f64,
    /// Its momentum.
    pub momentum: f64,
    /// Weight decay.
    pub weight_decay: f64,
    /// SAM radius.
    pub rho: f64,
    /// F-SAM: weight σ of the subtracted EMA (σ = 1 in LLQR's `base_fsam`).
    pub fsam_sigma: f64,
    /// F-SAM: EMA decay.
    pub fsam_decay: f64,
    /// LLQR: steps between refreshes of U.
    pub refresh_every: usize,
    /// LLQR: samples in the preconditioning batch.
    pub precond_batch: usize,
    /// LLQR: the inner solve's learning rate.
    pub inner_lr: f64,
}

/// A built optimiser of any kind, stepped through a loss closure.
pub enum Stepper {
    /// A plain first-order optimiser.
    Plain(Box<dyn Optimizer<f32>>),
    /// SAM or F-SAM.
    Sam(Sam<f32>),
    /// LLQR, alone or with a perturbation.
    Llqr(Box<LlqrSam<f32>>),
}

impl Stepper {
    /// Builds `method` over `params`.
    pub fn new(method: Method, params: Vec<Param<f32>>, h: &Hyper) -> Result<Stepper> {
        let sgd = |params: Vec<Param<f32>>| -> Result<Box<dyn Optimizer<f32>>> {
            Ok(Box::new(Sgd::new(
                params,
                SgdConfig::new(h.lr)
                    .momentum(h.momentum)
                    .weight_decay(h.weight_decay),
            )?))
        };
        let llqr = |geometry, rho, norm, fsam: bool| -> Result<Stepper> {
            let mut cfg = LlqrConfig {
                lr: h.lr,
                momentum: h.momentum,
                weight_decay: h.weight_decay,
                rho,
                norm,
                fsam_decay: fsam.then_some(h.fsam_decay),
                refresh_every: h.refresh_every,
                geometry,
                // The authors' pairs: NGD with β = 0.95, Newton with β = 0.9.
                ema: if geometry == Geometry::Fisher {
                    0.95
                } else {
                    0.9
                },
                ..LlqrConfig::default()
            };
            cfg.inner.lr = h.inner_lr;
            Ok(Stepper::Llqr(Box::new(LlqrSam::new(params.clone(), cfg)?)))
        };
        match method {
            Method::Sgd => Ok(Stepper::Plain(sgd(params)?)),
            Method::Sam => Ok(Stepper::Sam(Sam::new(
                sgd(params)?,
                h.rho,
                SamVariant::Sam,
            )?)),
            Method::FriendlySam => Ok(Stepper::Sam(Sam::new(
                sgd(params)?,
                h.rho,
                SamVariant::FriendlySam {
                    sigma: h.fsam_sigma,
                    decay: h.fsam_decay,
                },
            )?)),
            Method::Llqr(g) => llqr(g, 0.0, PerturbationNorm::Euclidean, false),
            Method::LlqrSam(g, n) => llqr(g, h.rho, n, false),
            Method::LlqrFriendlySam(g, n) => llqr(g, h.rho, n, true),
        }
    }

    /// Sets the learning rate.
    pub fn set_lr(&mut self, lr: f64) -> Result<()> {
        match self {
            Stepper::Plain(o) => o.set_lr(lr),
            Stepper::Sam(s) => s.base().set_lr(lr),
            Stepper::Llqr(l) => l.set_lr(lr),
        }
    }

    /// True when LLQR wants its preconditioner refreshed before this step.
    pub fn refresh_due(&self) -> bool {
        matches!(self, Stepper::Llqr(l) if l.refresh_due())
    }

    /// One step on the batch `loss()` evaluates; returns the loss at θ.
    pub fn step(&mut self, loss: &dyn Fn() -> Result<Var<f32>>) -> Result<f64> {
        match self {
            Stepper::Plain(o) => {
                let l = loss()?;
                let value = l.item()? as f64;
                let grads = ParamGrads::collect(o.params(), &backward(&l)?);
                o.step(&grads)?;
                Ok(value)
            }
            Stepper::Sam(s) => s.step(loss),
            Stepper::Llqr(l) => l.step(loss),
        }
    }

    /// For LLQR with a diagonal U: the mean and the range of U's entries.
    pub fn preconditioner_summary(&self) -> Option<(f64, f64, f64)> {
        let Stepper::Llqr(l) = self else {
            return None;
        };
        let entries: Vec<f64> = l
            .preconditioner()
            .factor_tensors()
            .iter()
            .flatten()
            .flat_map(|t| t.to_vec())
            .map(|v| v as f64)
            .collect();
        let n = entries.len().max(1) as f64;
        let mean = entries.iter().sum::<f64>() / n;
        let (lo, hi) = entries
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        Some((mean, lo, hi))
    }
}

/// LLQR's preconditioning batch: `count` indices below `len`, drawn with replacement.
pub fn preconditioning_batch(rng: &mut Rng, count: usize, len: usize) -> Result<Vec<usize>> {
    (0..count)
        .map(|_| rng.below(len as u64).map(|i| i as usize))
        .collect()
}
