//! The one training loop every experiment runs through: a budget in epochs or
//! steps, batches from shuffled passes or drawn by the task, a learning-rate
//! schedule, a hook before and after each step (the LLQR refresh, diagnostics, an
//! early stop), evaluation per epoch or every k steps with the final and the best
//! evaluation both kept, a stated policy for non-finite losses, timing per step and
//! the progress line.

use super::batches::Batches;
use crate::report::evidence::Better;
use crate::report::{progress::Progress, Metrics};
use autograd::no_grad;
use optim::Schedule;
use std::time::Instant;
use tensor::{Error, Result, Rng};

/// How long to train.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// Passes over the training set (the same number at every batch size).
    Epochs(usize),
    /// Optimisation steps.
    Steps(usize),
}

/// When to evaluate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cadence {
    /// Never during training (the experiment scores the model afterwards).
    Never,
    /// After every `k` epochs, and after the last step.
    Epochs(usize),
    /// After every `k` steps, and after the last one.
    Steps(usize),
}

/// What a non-finite loss does to the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NonFinite {
    /// The run fails with an error naming the series and the step.
    Fail,
    /// The step is skipped (the optimisers leave the parameters as they were) and
    /// counted in [`Outcome::skipped`].
    Skip,
    /// The run ends there; [`Outcome::diverged_at`] names the step and the
    /// evaluations are those made before it.
    Stop,
}

/// Whether to go on after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on.
    Continue,
    /// End the run after this step (a target reached).
    Stop,
}

/// What one training run does.
#[derive(Clone, Debug)]
pub struct Plan {
    /// How long.
    pub budget: Budget,
    /// Where batches come from.
    pub batches: Batches,
    /// The learning-rate schedule over steps, applied through
    /// [`Task::set_lr_factor`] before every step; `None` leaves the rate to the task.
    pub schedule: Option<Schedule>,
    /// When to evaluate.
    pub evaluate: Cadence,
    /// The metric whose best evaluation is kept beside the final one, and which way
    /// it improves.
    pub best: Option<(String, Better)>,
    /// What a non-finite loss does.
    pub non_finite: NonFinite,
    /// The curve's name in the metrics and the progress line.
    pub series: String,
    /// No progress lines.
    pub quiet: bool,
}

impl Plan {
    /// A plan with the common defaults: no schedule, evaluation per epoch for an
    /// epoch budget and never for a step budget, no best metric, failing on a
    /// non-finite loss.
    pub fn new(budget: Budget, batches: Batches, series: impl Into<String>, quiet: bool) -> Plan {
        Plan {
            budget,
            batches,
            schedule: None,
            evaluate: match budget {
                Budget::Epochs(_) => Cadence::Epochs(1),
                Budget::Steps(_) => Cadence::Never,
            },
            best: None,
            non_finite: NonFinite::Fail,
            series: series.into(),
            quiet,
        }
    }

    /// The total number of steps.
    pub fn total_steps(&self) -> Result<usize> {
        match self.budget {
            Budget::Steps(n) => Ok(n),
            Budget::Epochs(e) => {
                let per = self.batches.per_pass();
                e.checked_mul(per).ok_or_else(|| {
                    Error::value("trainer", format!("{e} epochs of {per} steps overflow"))
                })
            }
        }
    }
}

/// What the trainer asks of an experiment's model, data and update rule.
pub trait Task {
    /// Sets the learning rate to `factor` times the base rate (the schedule's value
    /// at this step).
    fn set_lr_factor(&mut self, factor: f64) -> Result<()>;

    /// Runs before step `step` (counted from 0): an LLQR refresh when due.
    fn before_step(&mut self, _step: usize, _metrics: &mut Metrics) -> Result<()> {
        Ok(())
    }

    /// One update on the rows `batch` of the training set (empty for a task that
    /// draws its own samples); returns the loss before the update.
    fn step(&mut self, batch: &[usize]) -> Result<f64>;

    /// Runs after `done` steps, the last one's loss being `loss`: diagnostics, and
    /// [`Flow::Stop`] to end the run early.
    fn after_step(&mut self, _done: usize, _loss: f64, _metrics: &mut Metrics) -> Result<Flow> {
        Ok(Flow::Continue)
    }

    /// Scores the model (called in evaluation mode, without recording).
    fn evaluate(&mut self) -> Result<Vec<(String, f64)>> {
        Ok(Vec::new())
    }

    /// Puts the model's layers in training (`true`) or evaluation mode (BatchNorm,
    /// dropout).
    fn set_training(&self, _on: bool) {}
}

/// Puts `store`'s layers in training (`true`) or evaluation mode: the body of
/// [`Task::set_training`] for a task with one parameter store.
pub fn set_mode<T: tensor::Element>(store: &nn::ParamStore<T>, training: bool) {
    if training {
        store.train()
    } else {
        store.eval()
    }
}

/// The evaluation at one point of training.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// The epoch (per-epoch cadence) or the step it followed.
    pub at: usize,
    /// The metrics, as the task named them.
    pub metrics: Vec<(String, f64)>,
}

impl Evaluation {
    /// The metric called `name`.
    pub fn get(&self, name: &str) -> Result<f64> {
        self.metrics
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| *v)
            .ok_or_else(|| Error::value("trainer", format!("no evaluated metric '{name}'")))
    }
}

/// What a run produced.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// The last evaluation, if any.
    pub last: Option<Evaluation>,
    /// The evaluation at which [`Plan::best`]'s metric was best (ties: the earlier).
    pub best: Option<Evaluation>,
    /// Mean loss of the last epoch, or of the steps since the previous evaluation
    /// (NaN when no step counted).
    pub train_loss: f64,
    /// Steps taken.
    pub steps: usize,
    /// Steps whose loss was not finite and that were skipped.
    pub skipped: usize,
    /// The step at which a non-finite loss ended the run ([`NonFinite::Stop`]).
    pub diverged_at: Option<usize>,
    /// Seconds spent in the steps and their hooks, evaluation excluded.
    pub step_seconds: f64,
    /// Seconds of the whole run.
    pub seconds: f64,
}

impl Outcome {
    /// Milliseconds per step (evaluation excluded).
    pub fn ms_per_step(&self) -> f64 {
        1e3 * self.step_seconds / self.steps.max(1) as f64
    }
}

/// Whether a step's result is a non-finite loss (returned, or refused as one).
fn non_finite(result: &Result<f64>) -> bool {
    match result {
        Ok(v) => !v.is_finite(),
        Err(Error::NonFinite { .. }) => true,
        Err(_) => false,
    }
}

/// Runs `plan` on `task`, drawing the batch order from `order`, pushing the curves
/// (`train_loss` and every evaluated metric, at the epoch or the step) to
/// `metrics`.
pub fn train(
    plan: &Plan,
    task: &mut dyn Task,
    order: &mut Rng,
    metrics: &mut Metrics,
) -> Result<Outcome> {
    plan.batches.check()?;
    if let Some(s) = &plan.schedule {
        s.validate()?;
    }
    if let Cadence::Steps(0) | Cadence::Epochs(0) = plan.evaluate {
        return Err(Error::value(
            "trainer",
            "evaluation every 0 steps or epochs",
        ));
    }
    let total = plan.total_steps()?;
    let mut progress = Progress::new(&plan.series, total, plan.quiet);
    let mut out = Outcome {
        train_loss: f64::NAN,
        ..Outcome::default()
    };
    let (mut epoch, mut queue) = (0, Vec::new().into_iter());
    let (mut sum, mut counted) = (0.0, 0usize);
    task.set_training(true);
    while out.steps < total {
        let batch = match queue.next() {
            Some(b) => b,
            None => {
                epoch += 1;
                queue = plan.batches.pass(order).into_iter();
                queue.next().ok_or_else(|| {
                    Error::value("trainer", "a pass over the training set gave no batch")
                })?
            }
        };
        let step = out.steps;
        let start = Instant::now();
        if let Some(s) = &plan.schedule {
            task.set_lr_factor(s.factor(step))?;
        }
        task.before_step(step, metrics)?;
        let result = task.step(&batch);
        out.step_seconds += start.elapsed().as_secs_f64();
        let loss = if non_finite(&result) {
            match plan.non_finite {
                NonFinite::Fail => {
                    return Err(Error::non_finite(
                        "trainer",
                        format!(
                            "{}: the loss at step {step} is not finite ({})",
                            plan.series,
                            match &result {
                                Ok(v) => v.to_string(),
                                Err(e) => e.to_string(),
                            }
                        ),
                    ))
                }
                NonFinite::Stop => {
                    out.diverged_at = Some(step);
                    break;
                }
                NonFinite::Skip => {
                    out.skipped += 1;
                    f64::NAN
                }
            }
        } else {
            let v = result?;
            sum += v;
            counted += 1;
            v
        };
        out.steps += 1;
        progress.update(out.steps, epoch, loss);
        let flow = task.after_step(out.steps, loss, metrics)?;
        let end_of_pass = queue.len() == 0;
        let last = out.steps == total;
        let due = match plan.evaluate {
            Cadence::Never => false,
            Cadence::Epochs(k) => (end_of_pass && epoch % k == 0) || last,
            Cadence::Steps(k) => out.steps.is_multiple_of(k) || last,
        };
        // The loss window closes at each evaluation, and at the end of each pass
        // over the training set when nothing is evaluated.
        let closes = due
            || (plan.evaluate == Cadence::Never
                && end_of_pass
                && !matches!(plan.batches, Batches::Drawn { .. }));
        if closes {
            out.train_loss = sum / counted as f64;
            (sum, counted) = (0.0, 0);
        }
        if due {
            let at = match plan.evaluate {
                Cadence::Epochs(_) => epoch,
                _ => out.steps,
            };
            metrics.push(&plan.series, at, "train_loss", out.train_loss);
            let e = evaluate(task, at)?;
            for (name, v) in &e.metrics {
                metrics.push(&plan.series, at, name, *v);
            }
            if let Some((name, better)) = &plan.best {
                if improves(&e, out.best.as_ref(), name, *better)? {
                    out.best = Some(e.clone());
                }
            }
            out.last = Some(e);
        }
        if flow == Flow::Stop {
            break;
        }
    }
    if counted > 0 {
        out.train_loss = sum / counted as f64;
    }
    out.seconds = progress.elapsed();
    Ok(out)
}

/// The task's evaluation at `at`, in evaluation mode and without recording.
fn evaluate(task: &mut dyn Task, at: usize) -> Result<Evaluation> {
    task.set_training(false);
    let evaluated = no_grad(|| task.evaluate());
    task.set_training(true);
    Ok(Evaluation {
        at,
        metrics: evaluated?,
    })
}

/// Whether `e` beats `best` on `name` (any value beats none or NaN; ties keep the
/// earlier).
fn improves(e: &Evaluation, best: Option<&Evaluation>, name: &str, better: Better) -> Result<bool> {
    let v = e.get(name)?;
    let Some(best) = best else {
        return Ok(true);
    };
    let old = best.get(name)?;
    Ok(old.is_nan()
        || match better {
            Better::Lower => v < old,
            Better::Higher => v > old,
        })
}
