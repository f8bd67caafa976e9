//! `digits` and `mnist`: an MLP classifier on an image set (the UCI digits or the
//! shipped real MNIST, see [`super::images`]), SGD against Adam, cross-entropy against
//! the squared loss on one-hot targets.

use super::images::{self, ImageSet};
use crate::cli::RunConfig;
use crate::data::Dataset;
use crate::error::Result;
use crate::grid::Grid;
use crate::report::{Metrics, Plot, Table};
use crate::train::{batch_x, fit, FitSettings, OptimizerKind};
use autograd::Var;
use nn::{loss, Activation, Mlp, Module, ParamStore};
use optim::Schedule;
use tensor::Rng;

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    ("epochs", "passes over the training set (quick 20, full 60)"),
    ("batch", "mini-batch size (32)"),
    ("hidden", "hidden width (128)"),
    images::OPTIONS[0],
    images::OPTIONS[1],
    images::OPTIONS[2],
];

/// Options of the `mnist` experiment (the same, with MNIST's budget).
pub const MNIST_OPTIONS: &[(&str, &str)] = &[
    ("epochs", "passes over the training set (quick 8, full 30)"),
    ("batch", "mini-batch size (32)"),
    ("hidden", "hidden width (128)"),
    images::OPTIONS[0],
    images::OPTIONS[1],
    images::OPTIONS[2],
];

/// Which loss an arm trains on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LossKind {
    /// Cross-entropy on the logits.
    CrossEntropy,
    /// Squared loss on one-hot targets.
    Squared,
}

impl LossKind {
    fn name(self) -> &'static str {
        match self {
            LossKind::CrossEntropy => "cross-entropy",
            LossKind::Squared => "squared (one-hot)",
        }
    }
}

/// One training run of the experiment.
#[derive(Clone, Debug)]
pub struct Arm {
    /// Optimiser.
    pub optimizer: OptimizerKind,
    /// Loss.
    pub loss: LossKind,
    /// Epochs.
    pub epochs: usize,
    /// Mini-batch size.
    pub batch: usize,
    /// Hidden width.
    pub hidden: usize,
}

/// Trains one arm with one seed; returns (test accuracy, seconds, the model's store).
pub fn train_arm(
    arm: &Arm,
    train: &Dataset,
    test: &Dataset,
    seed: u64,
    series: &str,
    quiet: bool,
    metrics: &mut Metrics,
) -> Result<(f64, f64, ParamStore<f32>)> {
    let (train_labels, _) = train.labels()?;
    let (test_labels, _) = test.labels()?;
    let store = ParamStore::<f32>::new();
    let h = arm.hidden;
    let mlp = Mlp::new(
        &store.root().sub("mlp"),
        &[train.x.shape()[1], h, h, 10],
        Activation::Relu,
        &mut Rng::new(seed),
    )?;
    let mut opt = arm.optimizer.build(&store, 0.0)?;
    let settings = FitSettings {
        epochs: arm.epochs,
        batch_size: arm.batch,
        schedule: Schedule::Cosine {
            total: arm.epochs * train.len().div_ceil(arm.batch),
            min_factor: 0.0,
        },
        seed: seed + 1000,
        series: series.to_string(),
        quiet,
    };
    let x_test = Var::constant(test.x.cast::<f32>());
    let result = fit(
        &store,
        opt.as_mut(),
        train,
        &settings,
        metrics,
        |idx| {
            let out = mlp.forward(&Var::constant(batch_x(train, idx)?))?;
            let labels: Vec<usize> = idx.iter().map(|&i| train_labels[i]).collect();
            match arm.loss {
                LossKind::CrossEntropy => loss::cross_entropy(&out, &labels, 0.0),
                LossKind::Squared => loss::squared_one_hot(&out, &labels),
            }
        },
        || {
            let acc = loss::accuracy(mlp.forward(&x_test)?.value(), test_labels)?;
            Ok(vec![("test_accuracy".into(), acc)])
        },
    )?;
    Ok((result[0].1, result[1].1, store))
}

/// Runs `digits` (the UCI digits by default) and returns its table.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    run_on(cfg, "digits", OPTIONS, ImageSet::Digits, (20, 60))
}

/// Runs `mnist` (the shipped real MNIST by default) and returns its table.
pub fn run_mnist(cfg: &RunConfig) -> Result<Vec<Table>> {
    run_on(cfg, "mnist", MNIST_OPTIONS, ImageSet::Mnist, (8, 30))
}

/// The experiment `name` on `default` images, `epochs` = (quick, full).
fn run_on(
    cfg: &RunConfig,
    name: &str,
    options: &[(&str, &str)],
    default: ImageSet,
    epochs: (usize, usize),
) -> Result<Vec<Table>> {
    cfg.check_known(name, options)?;
    let epochs = cfg.opt_positive("epochs", if cfg.quick { epochs.0 } else { epochs.1 })?;
    let batch = cfg.opt_positive("batch", 32)?;
    let hidden = cfg.opt_positive("hidden", 128)?;
    let images = images::load(cfg, default, (0, 0))?;
    let (train, test) = (images.train, images.test);
    let sgd = OptimizerKind::Sgd {
        lr: 0.05,
        momentum: 0.9,
    };
    let adam = OptimizerKind::Adam { lr: 1e-3 };
    let arms = [
        (sgd.clone(), LossKind::CrossEntropy),
        (adam.clone(), LossKind::CrossEntropy),
        (sgd, LossKind::Squared),
        (adam, LossKind::Squared),
    ];
    let seeds = cfg.seed_list(2, 5)?;
    let mut metrics = Metrics::default();
    let mut table = Table::new(
        &format!(
            "{name}: {}; MLP {}-{hidden}-{hidden}-10, {epochs} epochs, batch {batch}, {} seeds, test accuracy",
            images.description,
            train.x.shape()[1],
            seeds.len(),
        ),
        &["optimiser", "loss", "test accuracy", "seconds / run"],
    );
    let mut model_tensors = Vec::new();
    let first_seed = seeds[0];
    let mut grid = Grid::new(cfg, seeds);
    for (optimizer, loss) in arms {
        let arm = Arm {
            optimizer,
            loss,
            epochs,
            batch,
            hidden,
        };
        let tag = format!(
            "{}-{}",
            arm.optimizer.name(),
            if loss == LossKind::Squared {
                "sq"
            } else {
                "ce"
            }
        );
        grid.run(&tag, "", &mut metrics, |seed, series, metrics| {
            let (acc, s, store) = train_arm(&arm, &train, &test, seed, series, cfg.quiet, metrics)?;
            if seed == first_seed {
                model_tensors.extend(
                    store
                        .to_tensors()
                        .into_iter()
                        .map(|(n, t)| (format!("{tag}.{n}"), t)),
                );
            }
            Ok(vec![
                ("accuracy".into(), 100.0 * acc),
                ("seconds".into(), s),
            ])
        })?;
        table.row(vec![
            arm.optimizer.name().into(),
            loss.name().into(),
            grid.mean_std(&tag, "", "accuracy", 2)? + " %",
            grid.mean_std(&tag, "", "seconds", 2)?,
        ]);
    }
    Ok(cfg.run_dir(name)?.finish(
        name,
        Plot::Curves {
            title: &format!("{name}: MLP classifier"),
            metrics: &metrics,
            panels: &[("train_loss", true), ("test_accuracy", false)],
            x_label: "epoch",
        },
        model_tensors,
        vec![table],
    )?)
}
