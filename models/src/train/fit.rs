//! The supervised shortcut through the trainer: epochs of shuffled mini-batches
//! of a dataset, one first-order optimiser (or SAM, LLQR+SAM: anything stepped
//! through a loss closure) with a schedule, per-epoch evaluation.

use super::batches::Batches;
use super::trainer::set_mode;
use super::trainer::{train, Budget, Plan, Task};
use crate::data::Dataset;
use crate::report::Metrics;
use autograd::Var;
use nn::ParamStore;
use optim::{Adam, AdamConfig, Optimizer, Schedule, Sgd, SgdConfig};
use tensor::{Result, Rng, Tensor};

/// Which optimiser to build.
#[derive(Clone, Debug, PartialEq)]
pub enum OptimizerKind {
    /// SGD with momentum.
    Sgd {
        /// Learning rate.
        lr: f64,
        /// Momentum.
        momentum: f64,
    },
    /// Adam.
    Adam {
        /// Learning rate.
        lr: f64,
    },
}

impl OptimizerKind {
    /// Builds it over `store`'s trainable parameters.
    pub fn build(
        &self,
        store: &ParamStore<f32>,
        weight_decay: f64,
    ) -> Result<Box<dyn Optimizer<f32>>> {
        Ok(match *self {
            OptimizerKind::Sgd { lr, momentum } => Box::new(Sgd::new(
                store.trainable(),
                SgdConfig::new(lr)
                    .momentum(momentum)
                    .weight_decay(weight_decay),
            )?),
            OptimizerKind::Adam { lr } => Box::new(Adam::new(
                store.trainable(),
                AdamConfig::adam(lr).weight_decay(weight_decay),
            )?),
        })
    }

    /// Short name for tables ("sgd", "adam").
    pub fn name(&self) -> &'static str {
        match self {
            OptimizerKind::Sgd { .. } => "sgd",
            OptimizerKind::Adam { .. } => "adam",
        }
    }
}

/// How long and how to train.
#[derive(Clone, Debug)]
pub struct FitSettings {
    /// Passes over the training set.
    pub epochs: usize,
    /// Mini-batch size.
    pub batch_size: usize,
    /// Learning-rate schedule over steps.
    pub schedule: Schedule,
    /// Seed of the batch order.
    pub seed: u64,
    /// Series name in the metrics.
    pub series: String,
    /// No progress lines.
    pub quiet: bool,
}

/// The rows at `idx` of a dataset's features, as f32.
pub fn batch_x(data: &Dataset, idx: &[usize]) -> Result<Tensor<f32>> {
    Ok(data.x.index_select(0, idx)?.cast())
}

/// Trains with `loss_fn(batch_indices) -> loss` (through
/// [`Optimizer::step_closure`], so SAM and LLQR+SAM, which evaluate it more than once
/// a step, train here too) and calls `evaluate()` after each
/// epoch (in evaluation mode, without recording); returns the last evaluation and
/// the run's `seconds`. Records `train_loss` and every evaluated metric per epoch.
pub fn fit(
    store: &ParamStore<f32>,
    optimizer: &mut dyn Optimizer<f32>,
    train_set: &Dataset,
    settings: &FitSettings,
    metrics: &mut Metrics,
    loss_fn: impl Fn(&[usize]) -> Result<Var<f32>>,
    evaluate: impl FnMut() -> Result<Vec<(String, f64)>>,
) -> Result<Vec<(String, f64)>> {
    let mut plan = Plan::new(
        Budget::Epochs(settings.epochs),
        Batches::Shuffled {
            samples: train_set.len(),
            size: settings.batch_size,
            ragged: true,
        },
        settings.series.clone(),
        settings.quiet,
    );
    plan.schedule = Some(settings.schedule.clone());
    let base_lr = optimizer.lr();
    let mut task = Supervised {
        store,
        optimizer,
        base_lr,
        loss_fn,
        evaluate,
    };
    let out = train(&plan, &mut task, &mut Rng::new(settings.seed), metrics)?;
    let mut last = out.last.map(|e| e.metrics).unwrap_or_default();
    last.push(("seconds".into(), out.seconds));
    Ok(last)
}

/// [`fit`]'s task: one optimiser stepped on a loss closure.
struct Supervised<'a, L, E> {
    store: &'a ParamStore<f32>,
    optimizer: &'a mut dyn Optimizer<f32>,
    base_lr: f64,
    loss_fn: L,
    evaluate: E,
}

impl<L, E> Task for Supervised<'_, L, E>
where
    L: Fn(&[usize]) -> Result<Var<f32>>,
    E: FnMut() -> Result<Vec<(String, f64)>>,
{
    fn set_lr_factor(&mut self, factor: f64) -> Result<()> {
        self.optimizer.set_lr(self.base_lr * factor)
    }

    fn step(&mut self, batch: &[usize]) -> Result<f64> {
        let loss_fn = &self.loss_fn;
        self.optimizer.step_closure(&|| loss_fn(batch))
    }

    fn evaluate(&mut self) -> Result<Vec<(String, f64)>> {
        (self.evaluate)()
    }

    fn set_training(&self, on: bool) {
        set_mode(self.store, on)
    }
}
