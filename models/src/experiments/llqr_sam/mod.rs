//! The LLQR+SAM experiments: image classification with every optimiser of the
//! comparison (SGD, SAM, F-SAM, Fisher-SAM, LLQR alone, LLQR+SAM in every geometry
//! and both norms, LLQR+F-SAM), and the one-dimensional pothole landscape.

pub mod classify;
pub mod network;
pub mod pothole;

use autograd::Var;
use nn::Param;
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
    /// Fisher-SAM (diagonal empirical-Fisher perturbation, η = 0.1) around SGD.
    FisherSam,
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
        Geometry::MeanFisher => "NGD, mean Fisher",
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
    /// Every method with a tag: the SGD family, then LLQR alone, LLQR+SAM and
    /// LLQR+F-SAM in every geometry and norm.
    pub fn known() -> Vec<Method> {
        use PerturbationNorm::{Euclidean, Matrix};
        let mut out = vec![
            Method::Sgd,
            Method::Sam,
            Method::FriendlySam,
            Method::FisherSam,
        ];
        for g in [Geometry::Fisher, Geometry::MeanFisher, Geometry::Newton] {
            out.push(Method::Llqr(g));
            for n in [Euclidean, Matrix] {
                out.push(Method::LlqrSam(g, n));
                out.push(Method::LlqrFriendlySam(g, n));
            }
        }
        out
    }

    /// The method with this [`Method::tag`].
    pub fn parse(tag: &str) -> Result<Method> {
        Self::known()
            .into_iter()
            .find(|m| m.tag() == tag)
            .ok_or_else(|| {
                let tags: Vec<String> = Self::known().iter().map(|m| m.tag()).collect();
                tensor::Error::value(
                    "llqr-sam",
                    format!("unknown arm '{tag}' (known: {})", tags.join(", ")),
                )
            })
    }

    /// Name in tables.
    pub fn name(self) -> String {
        match self {
            Method::Sgd => "SGD".into(),
            Method::Sam => "SAM".into(),
            Method::FriendlySam => "F-SAM".into(),
            Method::FisherSam => "Fisher-SAM".into(),
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
            Geometry::MeanFisher => "ngd-mean",
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
            Method::FisherSam => "fisher-sam".into(),
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
    /// Builds `method` over `params`; every arm's outer step is SGD with the hyper's
    /// learning rate, momentum and weight decay.
    pub fn new(method: Method, params: Vec<Param<f32>>, h: &Hyper) -> Result<Stepper> {
        let sgd: Box<dyn Optimizer<f32>> = Box::new(Sgd::new(
            params,
            SgdConfig::new(h.lr)
                .momentum(h.momentum)
                .weight_decay(h.weight_decay),
        )?);
        Self::around(method, sgd, h)
    }

    /// Builds `method` around `outer` (SAM and LLQR hand it their gradients; its own
    /// learning rate, schedule and weight decay apply), so that an arm differs from
    /// its baseline only by the method.
    pub fn around(method: Method, outer: Box<dyn Optimizer<f32>>, h: &Hyper) -> Result<Stepper> {
        let llqr = |outer: Box<dyn Optimizer<f32>>, geometry, rho, norm, fsam: bool| {
            let mut cfg = LlqrConfig {
                rho,
                norm,
                fsam_decay: fsam.then_some(h.fsam_decay),
                refresh_every: h.refresh_every,
                geometry,
                // The authors' pairs: NGD with β = 0.95, Newton with β = 0.9.
                ema: if geometry == Geometry::Newton {
                    0.9
                } else {
                    0.95
                },
                ..LlqrConfig::default()
            };
            cfg.inner.lr = h.inner_lr;
            Ok::<_, tensor::Error>(Stepper::Llqr(Box::new(LlqrSam::with_outer(outer, cfg)?)))
        };
        match method {
            Method::Sgd => Ok(Stepper::Plain(outer)),
            Method::Sam => Ok(Stepper::Sam(Sam::new(outer, h.rho, SamVariant::Sam)?)),
            Method::FriendlySam => Ok(Stepper::Sam(Sam::new(
                outer,
                h.rho,
                SamVariant::FriendlySam {
                    sigma: h.fsam_sigma,
                    decay: h.fsam_decay,
                },
            )?)),
            // The LLQR authors' η_F = 0.1.
            Method::FisherSam => Ok(Stepper::Sam(Sam::new(
                outer,
                h.rho,
                SamVariant::FisherSam { eta: 0.1 },
            )?)),
            Method::Llqr(g) => llqr(outer, g, 0.0, PerturbationNorm::Euclidean, false),
            Method::LlqrSam(g, n) => llqr(outer, g, h.rho, n, false),
            Method::LlqrFriendlySam(g, n) => llqr(outer, g, h.rho, n, true),
        }
    }

    /// The stepper as the optimiser interface all three share.
    pub fn optimizer(&mut self) -> &mut dyn Optimizer<f32> {
        match self {
            Stepper::Plain(o) => o.as_mut(),
            Stepper::Sam(s) => s,
            Stepper::Llqr(l) => l.as_mut(),
        }
    }

    /// Sets the learning rate.
    pub fn set_lr(&mut self, lr: f64) -> Result<()> {
        self.optimizer().set_lr(lr)
    }

    /// True when LLQR wants its preconditioner refreshed before this step.
    pub fn refresh_due(&self) -> bool {
        matches!(self, Stepper::Llqr(l) if l.refresh_due())
    }

    /// One step on the batch `loss()` evaluates; returns the loss at θ.
    pub fn step(&mut self, loss: &dyn Fn() -> Result<Var<f32>>) -> Result<f64> {
        self.optimizer().step_closure(loss)
    }

    /// For LLQR: the spread of U's entries (diagonal entries, or the factors' entries
    /// for K-FAC-shaped and dense blocks) relative to their initial value 1.
    pub fn preconditioner_summary(&self) -> Option<Spread> {
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
        Spread::of(entries)
    }

    /// For LLQR: non-finite entries of U's gradient sanitised so far.
    pub fn sanitised(&self) -> usize {
        match self {
            Stepper::Llqr(l) => l.sanitised(),
            _ => 0,
        }
    }
}

/// Minimum, median, maximum and the fraction moved from 1 of a set of values (U's entries).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// Smallest value.
    pub min: f64,
    /// Median.
    pub median: f64,
    /// Largest value.
    pub max: f64,
    /// Fraction of the values more than 1 % away from 1 (U's initial entries).
    pub moved: f64,
}

impl Spread {
    /// Its numbers as a sweep cell's fields (`u_min`, `u_median`, `u_max`,
    /// `u_moved`); none for `None`.
    pub fn fields(u: Option<Spread>) -> Vec<(String, f64)> {
        u.map_or_else(Vec::new, |u| {
            vec![
                ("u_min".into(), u.min),
                ("u_median".into(), u.median),
                ("u_max".into(), u.max),
                ("u_moved".into(), u.moved),
            ]
        })
    }

    /// The spread back from a cell's fields (`None` when they hold none).
    pub fn from_fields(f: &crate::sweep::Fields) -> Result<Option<Spread>> {
        if !f.pairs().iter().any(|(k, _)| k == "u_median") {
            return Ok(None);
        }
        Ok(Some(Spread {
            min: f.get("u_min")?,
            median: f.get("u_median")?,
            max: f.get("u_max")?,
            moved: f.get("u_moved")?,
        }))
    }

    /// The spread of `values`; `None` when empty.
    pub fn of(mut values: Vec<f64>) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let moved = values.iter().filter(|v| (*v - 1.0).abs() > 0.01).count() as f64 / n as f64;
        let median = if n % 2 == 1 {
            values[n / 2]
        } else {
            0.5 * (values[n / 2 - 1] + values[n / 2])
        };
        Some(Spread {
            min: values[0],
            median,
            max: values[n - 1],
            moved,
        })
    }

    /// As a table cell: "median [min, max], moved %".
    pub fn cell(self) -> String {
        format!(
            "{:.3} [{:.3}, {:.3}], {:.1} %",
            self.median,
            self.min,
            self.max,
            100.0 * self.moved
        )
    }

    /// Logs the spread at `step` of `series` (metrics `u_min`, `u_median`, `u_max`,
    /// `u_moved`).
    pub fn log(self, metrics: &mut crate::report::Metrics, series: &str, step: usize) {
        metrics.push(series, step, "u_min", self.min);
        metrics.push(series, step, "u_median", self.median);
        metrics.push(series, step, "u_max", self.max);
        metrics.push(series, step, "u_moved", self.moved);
    }
}

/// LLQR's preconditioning batch: `count` indices below `len`, drawn with replacement.
pub fn preconditioning_batch(rng: &mut Rng, count: usize, len: usize) -> Result<Vec<usize>> {
    (0..count)
        .map(|_| rng.below(len as u64).map(|i| i as usize))
        .collect()
}
