//! LLQR+SAM: a slowly refreshed learned preconditioner U shapes both the SAM
//! perturbation and the step. Every `refresh_every` steps U is refitted to the
//! quadratic model on a preconditioning batch (warm-started) and blended in as an
//! EMA; each step perturbs along U·v (v = g, or g − ḡ in the F-SAM variant),
//! normalised in the Euclidean or the U-norm, and hands U∇L(θ+ε) to an outer
//! optimiser: SGD with momentum and weight decay added after preconditioning,
//! θ ← θ − η·Mom(U∇L(θ+ε) + wd·θ), as in the authors' CIFAR presets, or any
//! [`Optimizer`] (their ViT and Transformer runs use AdamW). With ρ = 0 it is LLQR
//! alone.

use super::converged_diagonal::{converged_diagonal, Refit};
use super::curvature::{BatchScale, CurvatureProducts, Geometry};
use super::preconditioner::{quadratic, Gvp, InnerSolve, InnerTrace, Preconditioner, Structure};
use crate::closure::{gradients, perturb, restore};
use crate::optimizer::{
    buffer_state, check_lr, check_range, join_state, load_buffers, split_state, Optimizer,
    OptimizerState,
};
use crate::sgd::{Sgd, SgdConfig};
use autograd::Var;
use nn::{Param, ParamGrads};
use tensor::{Element, Error, Result, Rng, Tensor};

/// How the SAM radius is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerturbationNorm {
    /// ε = ρ·Uv/‖Uv‖₂ (the authors' code default).
    Euclidean,
    /// ε = ρ·Uv/√(vᵀUv) = ρ·Ug/‖g‖_U (the paper's formulation): the probe ellipsoid
    /// reaches ρλ̄^(−1/2) along directions of average curvature λ̄.
    Matrix,
}

/// Settings of [`LlqrSam`].
#[derive(Clone, Debug, PartialEq)]
pub struct LlqrConfig {
    /// Learning rate η of the SGD outer step that [`LlqrSam::new`] builds (an outer
    /// optimiser given to [`LlqrSam::with_outer`] keeps its own).
    pub lr: f64,
    /// Polyak momentum μ of that SGD outer step.
    pub momentum: f64,
    /// Weight decay of that SGD outer step, added after preconditioning.
    pub weight_decay: f64,
    /// SAM radius ρ (0: LLQR alone).
    pub rho: f64,
    /// Steps before the first perturbed step (the authors' `start_sam_after_step`;
    /// 0 by default, 4000 in their IWSLT preset): before it, steps are LLQR alone.
    pub sam_start: usize,
    /// The radius's norm.
    pub norm: PerturbationNorm,
    /// F-SAM: subtract an EMA of past gradients (with this decay) from the
    /// perturbation direction; `None` for plain SAM.
    pub fsam_decay: Option<f64>,
    /// Steps between refreshes of U (T_U).
    pub refresh_every: usize,
    /// EMA weight β of the old U at a refresh.
    pub ema: f64,
    /// The curvature of the quadratic model.
    pub geometry: Geometry,
    /// The shape of U's blocks.
    pub structure: Structure,
    /// The inner solve.
    pub inner: InnerSolve,
    /// How a refresh refits U: the inner solve (the authors') or, as an upper
    /// bound, the converged diagonal.
    pub refit: Refit,
    /// Floor of diagonal entries.
    pub floor: f64,
}

impl Default for LlqrConfig {
    /// The authors' CIFAR presets: momentum 0.9, ρ = 0.1 (Euclidean), T_U = 1000,
    /// NGD geometry (the authors' batch-summed Fisher) with β = 0.95, diagonal U, 50
    /// inner steps at 1e-3.
    fn default() -> Self {
        LlqrConfig {
            lr: 0.05,
            momentum: 0.9,
            weight_decay: 0.0,
            rho: 0.1,
            sam_start: 0,
            norm: PerturbationNorm::Euclidean,
            fsam_decay: None,
            refresh_every: 1000,
            ema: 0.95,
            geometry: Geometry::Fisher,
            structure: Structure::Diagonal,
            inner: InnerSolve::default(),
            refit: Refit::InnerSolve,
            floor: 1e-8,
        }
    }
}

/// The LLQR(+SAM) optimiser. It is an [`Optimizer`] driven by
/// [`Optimizer::step_closure`] (with ρ > 0 it needs the loss twice). Refreshing U
/// on a preconditioning batch is the caller's when [`LlqrSam::refresh_due`] says
/// so ([`LlqrSam::refresh`], as the authors do, with logits); with the Newton
/// geometry a step that finds a refresh due and not done refits U on its own batch,
/// with a Fisher geometry it is an error (the loss alone cannot give the Fisher).
/// Its state (U, F-SAM's ḡ, the counters, under `llqr.`, beside the outer
/// optimiser's) checkpoints and resumes bit-identically.
///
/// ```
/// use autograd::Var;
/// use nn::{loss::cross_entropy, Activation, Mlp, Module, ParamStore};
/// use optim::llqr::{LlqrConfig, LlqrSam};
/// use optim::Optimizer;
/// use tensor::{Rng, Tensor};
/// # fn main() -> tensor::Result<()> {
/// let (store, mut rng) = (ParamStore::<f64>::new(), Rng::new(0));
/// let mlp = Mlp::new(&store.root(), &[3, 4, 3], Activation::Tanh, &mut rng)?;
/// let x = Var::constant(Tensor::rand_normal(&[6, 3], 0.0, 1.0, &mut rng)?);
/// let (labels, logits) = ([0, 2, 1, 1, 0, 2], || mlp.forward(&x));
/// let loss = || cross_entropy(&logits()?, &labels, 0.0);
/// let cfg = LlqrConfig { lr: 0.1, rho: 0.05, refresh_every: 2, ..LlqrConfig::default() };
/// let mut opt = LlqrSam::new(store.trainable(), cfg)?;
/// // The Fisher geometry needs logits: a step with a refresh due and not done fails.
/// assert!(opt.refresh_due() && opt.step_closure(&loss).is_err());
/// let first = loss()?.item()?;
/// for _ in 0..4 {
///     if opt.refresh_due() {
///         opt.refresh(&logits, &labels, 0.0)?; // refit U (here on the training batch)
///     }
///     opt.step_closure(&loss)?;
/// }
/// assert!(opt.steps() == 4 && loss()?.item()? < first);
/// # Ok(())
/// # }
/// ```
pub struct LlqrSam<T: Element> {
    params: Vec<Param<T>>,
    cfg: LlqrConfig,
    u: Preconditioner<T>,
    outer: Box<dyn Optimizer<T>>,
    gbar: Option<Vec<Tensor<T>>>,
    steps: usize,
    sanitised: usize,
    /// The step count at the last refresh.
    refreshed_at: Option<usize>,
    /// U was set by hand: never refreshed.
    fixed: bool,
}

/// Where LLQR keeps its own entries in an [`OptimizerState`].
const LLQR_PREFIX: &str = "llqr.";

fn dot<T: Element>(a: &[Tensor<T>], b: &[Tensor<T>]) -> Result<f64> {
    let mut s = 0.0;
    for (x, y) in a.iter().zip(b) {
        s += x.mul(y)?.sum_all().item()?.as_f64();
    }
    Ok(s)
}

impl<T: Element> LlqrSam<T> {
    /// LLQR(+SAM) over `params` with U = I and the authors' CIFAR outer step: SGD
    /// with `cfg.lr`, `cfg.momentum` and `cfg.weight_decay` (added after
    /// preconditioning).
    pub fn new(params: Vec<Param<T>>, cfg: LlqrConfig) -> Result<Self> {
        check_lr("LlqrSam", cfg.lr)?;
        check_range("LlqrSam", "momentum", cfg.momentum, 0.0, 1.0)?;
        check_range(
            "LlqrSam",
            "weight_decay",
            cfg.weight_decay,
            0.0,
            f64::INFINITY,
        )?;
        let outer = Sgd::new(
            params,
            SgdConfig::new(cfg.lr)
                .momentum(cfg.momentum)
                .weight_decay(cfg.weight_decay),
        )?;
        Self::with_outer(Box::new(outer), cfg)
    }

    /// LLQR(+SAM) with U = I around any outer optimiser, which receives U·∇L(θ⁺) as
    /// its gradient (its own learning rate, schedule and weight decay apply;
    /// `cfg.lr`, `cfg.momentum` and `cfg.weight_decay` are not used).
    pub fn with_outer(outer: Box<dyn Optimizer<T>>, mut cfg: LlqrConfig) -> Result<Self> {
        check_range("LlqrSam", "rho", cfg.rho, 0.0, f64::INFINITY)?;
        check_range("LlqrSam", "ema", cfg.ema, 0.0, 1.0 + 1e-12)?;
        check_range("LlqrSam", "floor", cfg.floor, 0.0, f64::INFINITY)?;
        if let Some(d) = cfg.fsam_decay {
            check_range("LlqrSam", "fsam_decay", d, 0.0, 1.0)?;
        }
        if cfg.refresh_every == 0 {
            return Err(Error::value("LlqrSam", "refresh_every must be at least 1"));
        }
        cfg.refit.check()?;
        if cfg.refit != Refit::InnerSolve && cfg.structure != Structure::Diagonal {
            return Err(Error::value(
                "LlqrSam",
                format!(
                    "the converged-diagonal refit needs a diagonal U, not {:?}",
                    cfg.structure
                ),
            ));
        }
        cfg.lr = outer.lr();
        let params = outer.params().to_vec();
        let u = Preconditioner::identity(&params, cfg.structure)?;
        Ok(LlqrSam {
            params,
            cfg,
            u,
            outer,
            gbar: None,
            steps: 0,
            sanitised: 0,
            refreshed_at: None,
            fixed: false,
        })
    }

    /// The outer optimiser.
    pub fn outer(&mut self) -> &mut dyn Optimizer<T> {
        self.outer.as_mut()
    }

    /// Non-finite entries of U's gradient replaced so far, over all refreshes.
    pub fn sanitised(&self) -> usize {
        self.sanitised
    }

    /// The current preconditioner.
    pub fn preconditioner(&self) -> &Preconditioner<T> {
        &self.u
    }

    /// Replaces the preconditioner and fixes it (for experiments with a fixed U): no
    /// refresh is due after this.
    pub fn set_preconditioner(&mut self, u: Preconditioner<T>) {
        self.u = u;
        self.fixed = true;
    }

    /// Steps taken.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// True when the next step should be preceded by a refresh of U: every
    /// `refresh_every` steps from the first, unless U was refreshed at this step
    /// already or set by hand.
    pub fn refresh_due(&self) -> bool {
        !self.fixed
            && self.steps.is_multiple_of(self.cfg.refresh_every)
            && self.refreshed_at != Some(self.steps)
    }

    /// Refits U on a preconditioning batch: `logits()` computes the model's logits
    /// on it (from the parameters' current leaves; the caller puts the model in
    /// evaluation mode, as the authors do) and `labels` are its classes, the loss
    /// being cross-entropy with `label_smoothing`. The inner solve warm-starts from U
    /// and its result is blended in as an EMA; a diagonal U is then floored.
    pub fn refresh(
        &mut self,
        logits: &dyn Fn() -> Result<Var<T>>,
        labels: &[usize],
        label_smoothing: f64,
    ) -> Result<InnerTrace> {
        let params = self.params.clone();
        let loss = || nn::loss::cross_entropy(&logits()?, labels, label_smoothing);
        let (_, g) = gradients(&params, &loss)?;
        let g = g.into_tensors();
        // One forward pass and one recorded backward pass for all the inner solve's
        // products (the parameters do not move during a refresh).
        let products = match self.cfg.geometry {
            Geometry::Fisher => CurvatureProducts::fisher(&params, &logits()?, BatchScale::Sum)?,
            Geometry::MeanFisher => {
                CurvatureProducts::fisher(&params, &logits()?, BatchScale::Mean)?
            }
            Geometry::Newton => CurvatureProducts::hessian(&params, &loss()?)?,
        };
        self.fit(&g, &|v: &[Tensor<T>]| products.apply(v))
    }

    /// Refits U with the Hessian of any scalar `loss()` (the Newton geometry, for
    /// models that are not classifiers, e.g. the two-scale quadratic); an error for the
    /// Fisher geometries, which need logits.
    pub fn refresh_newton(&mut self, loss: &dyn Fn() -> Result<Var<T>>) -> Result<InnerTrace> {
        if self.cfg.geometry != Geometry::Newton {
            return Err(Error::value(
                "LlqrSam::refresh_newton",
                format!(
                    "the {:?} geometry needs logits: use refresh",
                    self.cfg.geometry
                ),
            ));
        }
        let params = self.params.clone();
        let (_, g) = gradients(&params, loss)?;
        let g = g.into_tensors();
        let products = CurvatureProducts::hessian(&params, &loss()?)?;
        self.fit(&g, &|v: &[Tensor<T>]| products.apply(v))
    }

    /// Which parameter's term of J (−gᵢᵀvᵢ + ½vᵢᵀ(G + δI)vᵢ with v = Ug) is not
    /// finite, under the first of `us` where one is, for an error message.
    fn non_finite_term(
        &self,
        g: &[Tensor<T>],
        gvp: &Gvp<'_, T>,
        us: &[&Preconditioner<T>],
    ) -> Result<String> {
        let damping = self.cfg.inner.damping;
        for u in us {
            let v = u.apply(g)?;
            let gv = gvp(&v)?;
            let one = |i: usize| i..i + 1;
            if let Some(i) = (0..g.len())
                .find(|&i| !quadratic(&g[one(i)], &v[one(i)], &gv[one(i)], damping).is_finite())
            {
                return Ok(format!("the term of parameter '{}'", self.params[i].name()));
            }
        }
        Ok("no single parameter's term (their sum overflows)".into())
    }

    /// The refit of U: the inner solve from the current U (warm start) or the
    /// converged diagonal, blended in as an EMA, then the floor on a diagonal U. An
    /// inner objective that is not finite (a
    /// gradient or curvature product with NaN or ∞, which the solve's
    /// sanitisation would otherwise turn into a silent no-op) is an error naming
    /// the parameter where it starts; U is then unchanged and the refresh stays
    /// due.
    fn fit(&mut self, g: &[Tensor<T>], gvp: &Gvp<'_, T>) -> Result<InnerTrace> {
        let (fitted, trace) = match self.cfg.refit {
            Refit::InnerSolve => self.inner_solve(g, gvp)?,
            Refit::ConvergedDiagonal {
                probes,
                relative_damping,
                seed,
            } => {
                let mut rng =
                    Rng::new(seed ^ (self.steps as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                let fitted =
                    converged_diagonal(&self.u, g, gvp, (probes, relative_damping), &mut rng)?;
                let damping = self.cfg.inner.damping;
                let objective = vec![
                    self.u.objective(g, gvp, damping)?,
                    fitted.objective(g, gvp, damping)?,
                ];
                let trace = InnerTrace {
                    objective,
                    sanitised: 0,
                };
                (fitted, trace)
            }
        };
        self.u.ema(&fitted, self.cfg.ema)?;
        self.u.floor_diagonal(self.cfg.floor);
        self.sanitised += trace.sanitised;
        self.refreshed_at = Some(self.steps);
        Ok(trace)
    }

    /// The authors' inner solve from the current U; an error when its objective is
    /// not finite (U is then unchanged).
    fn inner_solve(
        &self,
        g: &[Tensor<T>],
        gvp: &Gvp<'_, T>,
    ) -> Result<(Preconditioner<T>, InnerTrace)> {
        let mut fitted = self.u.clone();
        let trace = fitted.learn(g, gvp, &self.cfg.inner)?;
        if let Some(step) = trace.objective.iter().position(|j| !j.is_finite()) {
            let culprit = self.non_finite_term(g, gvp, &[&self.u, &fitted])?;
            return Err(Error::numerical(
                "LlqrSam::refresh",
                format!(
                    "the inner objective is {} at inner step {step}, from {culprit}; U is unchanged and the refresh stays due",
                    trace.objective[step]
                ),
            ));
        }
        Ok((fitted, trace))
    }
}

impl<T: Element> Optimizer<T> for LlqrSam<T> {
    fn params(&self) -> &[Param<T>] {
        &self.params
    }

    /// An error: LLQR+SAM needs the loss (at θ + ε, and for a due refresh), which a
    /// gradient alone cannot give; use [`Optimizer::step_closure`].
    fn step(&mut self, _grads: &ParamGrads<T>) -> Result<()> {
        Err(Error::value(
            "LlqrSam::step",
            "LLQR+SAM needs the loss, not a gradient: call step_closure with the loss",
        ))
    }

    /// One step on the batch `loss()` evaluates (twice when ρ > 0). Returns the loss
    /// at θ. A refresh that is due and was not done is done here on this batch with
    /// the Newton geometry, and is an error with a Fisher geometry (it needs logits:
    /// call [`LlqrSam::refresh`] first). On error the parameters are left at θ.
    fn step_closure(&mut self, loss: &dyn Fn() -> Result<Var<T>>) -> Result<f64> {
        if self.refresh_due() {
            if self.cfg.geometry != Geometry::Newton {
                return Err(Error::value(
                    "LlqrSam::step_closure",
                    format!(
                        "a refresh of U is due at step {} and the {:?} geometry needs the model's logits: call LlqrSam::refresh before the step",
                        self.steps, self.cfg.geometry
                    ),
                ));
            }
            self.refresh_newton(loss)?;
        }
        let params = self.params.clone();
        let (value, g) = gradients(&params, loss)?;
        let g = g.into_tensors();
        let g_plus = if self.cfg.rho > 0.0 && self.steps >= self.cfg.sam_start {
            let v: Vec<Tensor<T>> = match &self.gbar {
                Some(gb) => g
                    .iter()
                    .zip(gb)
                    .map(|(g, m)| g.sub(m))
                    .collect::<Result<_>>()?,
                None => g.clone(),
            };
            let d = self.u.apply(&v)?;
            let denom = match self.cfg.norm {
                PerturbationNorm::Euclidean => dot(&d, &d)?,
                PerturbationNorm::Matrix => {
                    // vᵀUv per block: U must be positive on the direction for the
                    // U-norm to be one.
                    let mut total = 0.0;
                    for ((p, v), d) in params.iter().zip(&v).zip(&d) {
                        let q = dot(std::slice::from_ref(v), std::slice::from_ref(d))?;
                        if q < 0.0 || !q.is_finite() {
                            return Err(Error::numerical(
                                "LlqrSam::step",
                                format!(
                                    "vᵀUv = {q:e} for '{}': U is not positive there, the U-norm perturbation is undefined",
                                    p.name()
                                ),
                            ));
                        }
                        total += q;
                    }
                    total
                }
            };
            let scale = self.cfg.rho / (denom + 1e-12).sqrt();
            let eps: Vec<Tensor<T>> = d.iter().map(|t| t.mul_scalar(scale)).collect();
            let saved = perturb(&params, &eps)?;
            let perturbed = gradients(&params, loss);
            restore(&params, saved)?;
            perturbed?.1.into_tensors()
        } else {
            g.clone()
        };
        // The outer optimiser steps with U g⁺ (for SGD: θ ← θ − η·Mom(U g⁺ + wd·θ)).
        self.outer
            .step(&ParamGrads::from_tensors(self.u.apply(&g_plus)?))?;
        if let Some(decay) = self.cfg.fsam_decay {
            self.gbar = Some(match self.gbar.take() {
                None => g.iter().map(|t| t.mul_scalar(1.0 - decay)).collect(),
                Some(m) => m
                    .iter()
                    .zip(&g)
                    .map(|(m, g)| m.mul_scalar(decay).add(&g.mul_scalar(1.0 - decay)))
                    .collect::<Result<_>>()?,
            });
        }
        self.steps += 1;
        Ok(value)
    }

    /// The learning rate η of the outer optimiser.
    fn lr(&self) -> f64 {
        self.outer.lr()
    }

    /// Sets η (for schedules).
    fn set_lr(&mut self, lr: f64) -> Result<()> {
        self.outer.set_lr(check_lr("LlqrSam", lr)?)
    }

    fn state(&self) -> OptimizerState<T> {
        let mut tensors = Vec::new();
        for (b, block) in self.u.factor_tensors().into_iter().enumerate() {
            for (k, t) in block.into_iter().enumerate() {
                tensors.push((format!("u.{b}.{k}"), t));
            }
        }
        if let Some(m) = &self.gbar {
            let m: Vec<Option<Tensor<T>>> = m.iter().cloned().map(Some).collect();
            tensors.extend(buffer_state("gbar", &self.params, &m));
        }
        let at = self
            .refreshed_at
            .map_or_else(|| "none".to_string(), |s| s.to_string());
        let scalars = vec![
            ("steps".into(), self.steps.to_string()),
            ("sanitised".into(), self.sanitised.to_string()),
            ("refreshed_at".into(), at),
            ("fixed".into(), self.fixed.to_string()),
        ];
        join_state(
            LLQR_PREFIX,
            OptimizerState { tensors, scalars },
            self.outer.state(),
        )
    }

    /// Restores U, ḡ, the counters and the outer optimiser's state. Missing or
    /// unknown entries, shapes that do not match and a ḡ saved without F-SAM are
    /// errors naming them, and nothing changes.
    fn load_state(&mut self, state: &OptimizerState<T>) -> Result<()> {
        let (own, rest) = split_state(LLQR_PREFIX, state);
        let shapes = self.u.factor_tensors();
        let mut factors = Vec::with_capacity(shapes.len());
        let mut known = Vec::new();
        for (b, block) in shapes.iter().enumerate() {
            let mut loaded = Vec::with_capacity(block.len());
            for k in 0..block.len() {
                let name = format!("u.{b}.{k}");
                let t = own.tensor(&name).ok_or_else(|| {
                    Error::format(
                        "optimizer state",
                        format!("{LLQR_PREFIX}{name} (a factor of U) is missing"),
                    )
                })?;
                loaded.push(t.clone());
                known.push(name);
            }
            factors.push(loaded);
        }
        let u = self.u.with_factor_tensors(factors)?;
        let gbar = load_buffers("gbar", &self.params, &own)?;
        let gbar: Option<Vec<Tensor<T>>> = gbar.into_iter().collect();
        if gbar.is_some() {
            if self.cfg.fsam_decay.is_none() {
                return Err(Error::format(
                    "optimizer state",
                    "a gradient average ḡ was saved, but this LLQR has no F-SAM decay",
                ));
            }
            known.extend(self.params.iter().map(|p| format!("gbar.{}", p.name())));
        }
        let extra: Vec<String> = own
            .tensors
            .iter()
            .filter(|(n, _)| !known.contains(n))
            .map(|(n, _)| format!("{LLQR_PREFIX}{n}"))
            .collect();
        if !extra.is_empty() {
            return Err(Error::format(
                "optimizer state",
                format!("entries this LLQR does not keep: {}", extra.join(", ")),
            ));
        }
        let steps: usize = own.scalar("steps")?;
        let sanitised: usize = own.scalar("sanitised")?;
        let fixed: bool = own.scalar("fixed")?;
        let at: String = own.scalar("refreshed_at")?;
        let refreshed_at = match at.as_str() {
            "none" => None,
            s => Some(s.parse::<usize>().map_err(|_| {
                Error::format(
                    "optimizer state",
                    format!("{LLQR_PREFIX}refreshed_at is malformed: '{s}'"),
                )
            })?),
        };
        self.outer.load_state(&rest)?;
        self.u = u;
        self.gbar = gbar;
        self.steps = steps;
        self.sanitised = sanitised;
        self.refreshed_at = refreshed_at;
        self.fixed = fixed;
        Ok(())
    }
}
