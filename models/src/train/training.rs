//! How an arm updates its model, as one type: a first-order optimiser (SGD, Adam,
//! AdamW), SAM or one of its variants, LLQR alone or with a perturbation, or a
//! closed-form head over any backbone optimiser. The LLQR refresh (due → evaluation
//! mode → refresh on a preconditioning batch → U's effect on a held-out gradient →
//! training mode → log U) lives here.

use super::method::{Hyper, Method, CONVERGED_PROBES};
use super::spread::Spread;
use super::u_effect::{u_effect, UEffect};
use crate::report::Metrics;
use autograd::Var;
use nn::{Param, ParamStore};
use optim::closed_form::{ClosedFormHead, ClosedFormTrainer};
use optim::llqr::{Geometry, LlqrConfig, LlqrSam, PerturbationNorm, Refit};
use optim::{Optimizer, Sam, SamVariant, Sgd, SgdConfig};
use std::time::Instant;
use tensor::{Element, Error, Result, Tensor};

/// The seed of the converged-diagonal arm's probes (the probes differ from
/// refresh to refresh, since the step count enters their draw; the preconditioning
/// batches differ from seed to seed).
const CONVERGED_PROBE_SEED: u64 = 0xd1a6;

/// The update rule inside a [`Training`].
pub enum Rule<T: Element> {
    /// A first-order optimiser.
    Plain(Box<dyn Optimizer<T>>),
    /// SAM or a variant around a first-order optimiser.
    Sam(Sam<T>),
    /// LLQR, alone or with a perturbation, around a first-order optimiser.
    Llqr(Box<LlqrSam<T>>),
    /// A backbone optimiser with a closed-form last layer.
    Closed(Box<ClosedFormTrainer<T>>),
}

/// An arm's update rule, its base learning rate (the schedule scales it) and the
/// time its LLQR refreshes took.
pub struct Training<T: Element> {
    /// The rule.
    pub rule: Rule<T>,
    base_lr: f64,
    refreshes: usize,
    refresh_seconds: f64,
    /// U's effect on a held-out gradient after the latest refresh.
    u_effect: Option<UEffect>,
}

/// A recorded computation on the current parameters (a loss, the features).
pub type Recorded<'a, T> = &'a dyn Fn() -> Result<Var<T>>;

/// The targets `[b, k]` of a closed-form head on a batch.
pub type Targets<'a, T> = &'a dyn Fn() -> Result<Tensor<T>>;

/// One batch as a step sees it: the loss for the gradient rules, and for a
/// closed-form head the backbone's features and the head's targets.
pub struct Batch<'a, T: Element> {
    /// The batch loss at the current parameters (recorded).
    pub loss: Recorded<'a, T>,
    /// The backbone's features of the batch and the targets `[b, k]` of the head,
    /// for a closed-form arm.
    pub head: Option<(Recorded<'a, T>, Targets<'a, T>)>,
}

/// What an LLQR refresh is computed on: the preconditioning batch's logits, its
/// labels and the training loss's label smoothing.
pub struct Preconditioning<'a, T: Element> {
    /// The logits of the preconditioning batch (recorded).
    pub logits: Box<dyn Fn() -> Result<Var<T>> + 'a>,
    /// Its labels.
    pub labels: Vec<usize>,
    /// The label smoothing of the training loss.
    pub smoothing: f64,
    /// The loss of another batch, on whose gradient U's effect
    /// ([`super::u_effect::u_effect`]) is measured after each refresh (`None`:
    /// not measured).
    pub held_out: Option<Box<dyn Fn() -> Result<Var<T>> + 'a>>,
}

impl<T: Element> Training<T> {
    /// `rule`, with its optimiser's current learning rate as the base.
    pub fn new(rule: Rule<T>) -> Training<T> {
        let mut t = Training {
            rule,
            base_lr: 0.0,
            refreshes: 0,
            refresh_seconds: 0.0,
            u_effect: None,
        };
        t.base_lr = t.optimizer().lr();
        t
    }

    /// A first-order optimiser.
    pub fn plain(optimizer: Box<dyn Optimizer<T>>) -> Training<T> {
        Training::new(Rule::Plain(optimizer))
    }

    /// A closed-form head over `trainer`'s backbone optimiser.
    pub fn closed(trainer: ClosedFormTrainer<T>) -> Training<T> {
        Training::new(Rule::Closed(Box::new(trainer)))
    }

    /// `method` over `params`, around SGD with the hyper's learning rate, momentum
    /// and weight decay.
    pub fn method(method: Method, params: Vec<Param<T>>, h: &Hyper) -> Result<Training<T>> {
        let sgd: Box<dyn Optimizer<T>> = Box::new(Sgd::new(
            params,
            SgdConfig::new(h.lr)
                .momentum(h.momentum)
                .weight_decay(h.weight_decay),
        )?);
        Self::around(method, sgd, h)
    }

    /// `method` around `outer` (SAM and LLQR hand it their gradients; its own
    /// learning rate, schedule and weight decay apply), so that an arm differs from
    /// its baseline only by the method.
    pub fn around(method: Method, outer: Box<dyn Optimizer<T>>, h: &Hyper) -> Result<Training<T>> {
        let llqr = |outer: Box<dyn Optimizer<T>>, geometry, rho, norm, fsam: bool| {
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
            Ok::<_, Error>(Rule::Llqr(Box::new(LlqrSam::with_outer(outer, cfg)?)))
        };
        let sam = |outer, variant| Ok::<_, Error>(Rule::Sam(Sam::new(outer, h.rho, variant)?));
        let rule = match method {
            Method::Sgd => Rule::Plain(outer),
            Method::Sam => sam(outer, SamVariant::Sam)?,
            Method::FriendlySam => sam(
                outer,
                SamVariant::FriendlySam {
                    sigma: h.fsam_sigma,
                    decay: h.fsam_decay,
                },
            )?,
            // The LLQR authors' η_F = 0.1.
            Method::FisherSam => sam(outer, SamVariant::FisherSam { eta: 0.1 })?,
            Method::Llqr(g) => llqr(outer, g, 0.0, PerturbationNorm::Euclidean, false)?,
            Method::LlqrSam(g, n) => llqr(outer, g, h.rho, n, false)?,
            Method::LlqrFriendlySam(g, n) => llqr(outer, g, h.rho, n, true)?,
            Method::LlqrSamConverged(norm) => {
                let cfg = LlqrConfig {
                    rho: h.rho,
                    norm,
                    refresh_every: h.refresh_every,
                    geometry: Geometry::MeanFisher,
                    ema: 0.0,
                    refit: Refit::ConvergedDiagonal {
                        probes: CONVERGED_PROBES,
                        relative_damping: h.converged_damping,
                        seed: CONVERGED_PROBE_SEED,
                    },
                    ..LlqrConfig::default()
                };
                Rule::Llqr(Box::new(LlqrSam::with_outer(outer, cfg)?))
            }
        };
        Ok(Training::new(rule))
    }

    /// The optimiser the learning rate is set on (the backbone's for a closed-form
    /// head).
    fn optimizer(&mut self) -> &mut dyn Optimizer<T> {
        match &mut self.rule {
            Rule::Plain(o) => o.as_mut(),
            Rule::Sam(s) => s,
            Rule::Llqr(l) => l.as_mut(),
            Rule::Closed(t) => t.optimizer.as_mut(),
        }
    }

    /// Sets the learning rate to `factor` times the base rate.
    pub fn set_lr_factor(&mut self, factor: f64) -> Result<()> {
        let lr = self.base_lr * factor;
        self.optimizer().set_lr(lr)
    }

    /// One step on `batch`; returns the loss before the step (the squared loss the
    /// backbone stepped on, for a closed-form head).
    pub fn step(&mut self, batch: &Batch<'_, T>) -> Result<f64> {
        match &mut self.rule {
            Rule::Closed(t) => {
                let (features, targets) = batch.head.ok_or_else(|| {
                    Error::value(
                        "training",
                        "a closed-form head needs the batch's features and targets",
                    )
                })?;
                t.step(features, &targets()?)
            }
            _ => self.optimizer().step_closure(batch.loss),
        }
    }

    /// The closed-form head, for a closed-form arm.
    pub fn head(&self) -> Option<&ClosedFormHead<T>> {
        match &self.rule {
            Rule::Closed(t) => Some(&t.head),
            _ => None,
        }
    }

    /// For LLQR, when a refresh is due before this step: puts `store` in evaluation
    /// mode (the inner solve sees the inference-mode network, as the authors'
    /// refresh does), refreshes U on what `inputs()` gives, puts the store back in
    /// training mode and logs U's spread at `step` of `series`. `inputs` is called
    /// only when a refresh is due (it draws the preconditioning batch).
    pub fn refresh_if_due<'a>(
        &mut self,
        store: &ParamStore<T>,
        inputs: impl FnOnce() -> Result<Preconditioning<'a, T>>,
        (metrics, series, step): (&mut Metrics, &str, usize),
    ) -> Result<()> {
        let Rule::Llqr(l) = &mut self.rule else {
            return Ok(());
        };
        if !l.refresh_due() {
            return Ok(());
        }
        let p = inputs()?;
        store.eval();
        let started = Instant::now();
        let refreshed = l.refresh(&p.logits, &p.labels, p.smoothing);
        self.refresh_seconds += started.elapsed().as_secs_f64();
        self.refreshes += 1;
        let effect = match (&refreshed, &p.held_out) {
            (Ok(_), Some(loss)) => Some(u_effect(l.preconditioner(), &store.trainable(), &loss()?)),
            _ => None,
        };
        store.train();
        refreshed?;
        if let Some(effect) = effect {
            let effect = effect?;
            metrics.push(series, step, "u_effect", effect.ratio);
            for (name, share) in effect.names.iter().zip(&effect.shares) {
                metrics.push(series, step, &format!("u_effect_share/{name}"), *share);
            }
            self.u_effect = Some(effect);
        }
        if let Some(u) = self.preconditioner_summary() {
            u.log(metrics, series, step);
        }
        Ok(())
    }

    /// Refreshes done, and the seconds they took.
    pub fn refresh_time(&self) -> (usize, f64) {
        (self.refreshes, self.refresh_seconds)
    }

    /// For LLQR: the spread of U's entries (diagonal entries, or the factors' entries
    /// for K-FAC-shaped and dense blocks) relative to their initial value 1.
    pub fn preconditioner_summary(&self) -> Option<Spread> {
        let Rule::Llqr(l) = &self.rule else {
            return None;
        };
        let entries: Vec<f64> = l
            .preconditioner()
            .factor_tensors()
            .iter()
            .flatten()
            .flat_map(|t| t.to_vec())
            .map(|v| v.as_f64())
            .collect();
        Spread::of(entries)
    }

    /// For LLQR with a held-out batch: U's effect (‖Ug − g‖ / ‖g‖ and each
    /// parameter's share of it) after the latest refresh.
    pub fn u_effect(&self) -> Option<&UEffect> {
        self.u_effect.as_ref()
    }

    /// For LLQR: non-finite entries of U's gradient sanitised so far.
    pub fn sanitised(&self) -> usize {
        match &self.rule {
            Rule::Llqr(l) => l.sanitised(),
            _ => 0,
        }
    }
}
