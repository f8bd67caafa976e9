//! The optimisers an arm can train with, by name: SGD, the SAM family (SAM,
//! Friendly SAM, Fisher-SAM) and LLQR alone or with a perturbation, with the knobs
//! they share ([`Hyper`]).

use optim::llqr::{Geometry, PerturbationNorm};
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
    /// Outside the authors' method, an upper bound: LLQR+SAM whose U is set at every
    /// refresh to the converged diagonal of the mean Fisher, scaled by δ,
    /// δ/(diag F̄ + δ) ([`optim::llqr::Refit::ConvergedDiagonal`], [`CONVERGED_PROBES`]
    /// probes, δ = [`Hyper::converged_damping`]·tr F̄/P), with no EMA; its outer learning
    /// rate is retuned on validation, since U rescales the step.
    LlqrSamConverged(PerturbationNorm),
}

/// Hutchinson probes per refresh of the converged-diagonal arm (the 300
/// inner steps, spent on curvature-vector products instead).
pub const CONVERGED_PROBES: usize = 300;

/// The converged-diagonal arm's default damping δ as a fraction of the mean
/// diagonal Fisher (the 10⁻³).
pub const CONVERGED_DAMPING: f64 = 1e-3;

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
        out.extend([Euclidean, Matrix].map(Method::LlqrSamConverged));
        out
    }

    /// Whether the method perturbs the weights before its gradient (its radius ρ
    /// matters): the SAM family and LLQR with a perturbation.
    pub fn perturbs(self) -> bool {
        !matches!(self, Method::Sgd | Method::Llqr(_))
    }

    /// Whether the method's outer learning rate is chosen on validation rather than
    /// shared: the converged-diagonal arm, whose U rescales the step.
    pub fn retunes_lr(self) -> bool {
        matches!(self, Method::LlqrSamConverged(_))
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
            Method::LlqrSamConverged(n) => format!(
                "LLQR+SAM, converged diagonal U ({}; upper bound, not the authors')",
                norm_name(n)
            ),
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
            Method::LlqrSamConverged(y) => format!("llqr-sam-converged-{}", n(y)),
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
    /// The converged-diagonal arm: δ as a fraction of the mean diagonal Fisher
    /// ([`CONVERGED_DAMPING`] by default).
    pub converged_damping: f64,
}

/// LLQR's preconditioning batch: `count` indices below `len`, drawn with replacement.
pub fn preconditioning_batch(rng: &mut Rng, count: usize, len: usize) -> Result<Vec<usize>> {
    (0..count)
        .map(|_| rng.below(len as u64).map(|i| i as usize))
        .collect()
}
