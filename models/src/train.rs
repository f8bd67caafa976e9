//! The supervised training loop the experiments share: epochs of shuffled
//! mini-batches, an optimiser with a schedule, per-epoch evaluation, curves and
//! progress.

use crate::data::Dataset;
use crate::report::{progress::Progress, Metrics};
use autograd::{no_grad, Var};
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
/// epoch (in evaluation mode, without recording); returns the last evaluation.
/// Records `train_loss` and every evaluated metric per epoch.
pub fn fit(
    store: &ParamStore<f32>,
    optimizer: &mut dyn Optimizer<f32>,
    train: &Dataset,
    settings: &FitSettings,
    metrics: &mut Metrics,
    loss_fn: impl Fn(&[usize]) -> Result<Var<f32>>,
    mut evaluate: impl FnMut() -> Result<Vec<(String, f64)>>,
) -> Result<Vec<(String, f64)>> {
    settings.schedule.validate()?;
    let base_lr = optimizer.lr();
    let mut rng = Rng::new(settings.seed);
    let per_epoch = train.len().div_ceil(settings.batch_size);
    let mut progress = Progress::new(
        &settings.series,
        per_epoch * settings.epochs,
        settings.quiet,
    );
    let mut step = 0;
    let mut last = Vec::new();
    for epoch in 0..settings.epochs {
        store.train();
        let mut total = 0.0;
        let batches = train.batches(settings.batch_size, Some(&mut rng))?;
        for idx in &batches {
            optimizer.set_lr(base_lr * settings.schedule.factor(step))?;
            let value = optimizer.step_closure(&|| loss_fn(idx))?;
            total += value;
            step += 1;
            progress.update(step, epoch + 1, value);
        }
        metrics.push(
            &settings.series,
            epoch + 1,
            "train_loss",
            total / batches.len() as f64,
        );
        store.eval();
        last = no_grad(&mut evaluate)?;
        for (name, v) in &last {
            metrics.push(&settings.series, epoch + 1, name, *v);
        }
    }
    store.train();
    last.push(("seconds".into(), progress.elapsed()));
    Ok(last)
}
