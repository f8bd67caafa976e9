//! A density model's training as the shared trainer drives it: the experiment's
//! iteration (a batch drawn, the model's own clipped, projected step; a non-finite
//! loss skips the step and is counted), its diagnostics after a step and its scores
//! at each evaluation.

use super::Model;
use crate::report::Metrics;
use crate::train::{train, Batches, Budget, Cadence, NonFinite, Outcome, Plan, Task};
use tensor::{Result, Rng};

/// Diagnostics after an iteration (counted from 1): probes, snapshots, a rate
/// change; they may adjust the model's optimiser.
pub type AfterStep<'a> = dyn FnMut(&mut Model, usize, &mut Metrics) -> Result<()> + 'a;

/// One training iteration of a model.
pub type Iteration<'a> = dyn FnMut(&mut Model) -> Result<f64> + 'a;

/// Scores at an evaluation (called without recording).
pub type Scores<'a> = dyn FnMut(&Model) -> Result<Vec<(String, f64)>> + 'a;

/// One density model's run.
pub struct Density<'a> {
    /// The model, handed back by [`Density::train`].
    pub model: Model,
    /// One iteration: draws a batch and steps the model on it (through
    /// [`Model::step`]), returning the loss.
    pub step: Box<Iteration<'a>>,
    /// Runs after every iteration.
    pub after: Box<AfterStep<'a>>,
    /// Scores the model at each evaluation.
    pub scores: Box<Scores<'a>>,
}

impl Task for Density<'_> {
    fn set_lr_factor(&mut self, _factor: f64) -> Result<()> {
        Ok(())
    }

    fn step(&mut self, _batch: &[usize]) -> Result<f64> {
        (self.step)(&mut self.model)
    }

    fn after_step(
        &mut self,
        done: usize,
        _loss: f64,
        metrics: &mut Metrics,
    ) -> Result<crate::train::Flow> {
        (self.after)(&mut self.model, done, metrics)?;
        Ok(crate::train::Flow::Continue)
    }

    fn evaluate(&mut self) -> Result<Vec<(String, f64)>> {
        (self.scores)(&self.model)
    }
}

impl Density<'_> {
    /// Trains for `iterations`, evaluating every `every` and after the last, under
    /// `series`; non-finite losses skip their step. Returns the model and what the
    /// trainer measured.
    pub fn train(
        mut self,
        iterations: usize,
        every: usize,
        series: &str,
        quiet: bool,
        metrics: &mut Metrics,
    ) -> Result<(Model, Outcome)> {
        let mut plan = Plan::new(
            Budget::Steps(iterations),
            Batches::Drawn { per_pass: 1 },
            series,
            quiet,
        );
        plan.evaluate = Cadence::Steps(every.max(1));
        plan.non_finite = NonFinite::Skip;
        let out = train(&plan, &mut self, &mut Rng::new(0), metrics)?;
        Ok((self.model, out))
    }
}

/// A scorer with nothing to score (the training loss alone is recorded).
pub fn no_scores<'a>() -> Box<Scores<'a>> {
    Box::new(|_: &Model| Ok(Vec::new()))
}

/// A hook that does nothing.
pub fn nothing_after<'a>() -> Box<AfterStep<'a>> {
    Box::new(|_: &mut Model, _: usize, _: &mut Metrics| Ok(()))
}
