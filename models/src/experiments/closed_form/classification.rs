//! `closed-form-classification`: images (real MNIST by default, see
//! [`crate::experiments::images`]) with the squared loss on one-hot targets and a
//! closed-form last layer, against cross-entropy and squared-loss SGD.

use super::{sweep, Method, Settings};
use crate::cli::RunConfig;
use crate::experiments::images::{self, ImageSet};
use crate::report::{Metrics, RunDir, Table};
use tensor::{Result, Tensor};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    ("steps", "optimisation steps per run (quick 300, full 3000)"),
    ("batches", "batch sizes, 0 = full batch (8,32,128,0)"),
    (
        "lambda",
        "proximal strength λ against the mean batch loss (1)",
    ),
    (
        "beta",
        "per-batch ridge strength β against the mean batch loss (0.01)",
    ),
    ("lr", "SGD learning rate, momentum 0.9 (0.01)"),
    images::OPTIONS[0],
    images::OPTIONS[1],
    images::OPTIONS[2],
];

/// The images kept in the quick setting (train, test): the full-batch arm computes
/// features of every training image at every step.
const QUICK_SIZES: (usize, usize) = (1500, 1000);

/// Runs the experiment and returns its table.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    cfg.check_known("closed-form-classification", OPTIONS)?;
    let s = Settings {
        steps: cfg.opt("steps", if cfg.quick { 300 } else { 3000 })?,
        sgd_lr: cfg.opt("lr", 0.01)?,
        adam_lr: 1e-3,
        beta: cfg.opt("beta", 0.01)?,
        lambda: cfg.opt("lambda", 1.0)?,
        hidden: vec![128, 128],
        quiet: cfg.quiet,
    };
    let images = images::load(
        cfg,
        ImageSet::Mnist,
        if cfg.quick { QUICK_SIZES } else { (0, 0) },
    )?;
    let (train, test) = (&images.train, &images.test);
    let (labels, classes) = train.labels()?;
    let (test_labels, _) = test.labels()?;
    let one_hot = Tensor::<f64>::one_hot(labels, classes)?;
    let batches: Vec<usize> = cfg
        .opt_list("batches", &[8, 32, 128, 0])?
        .iter()
        .map(|&b| if b == 0 { train.len() } else { b })
        .collect();
    let evaluate =
        |pred: &Tensor<f64>| -> Result<f64> { Ok(nn::loss::accuracy(pred, test_labels)? * 100.0) };
    let mut metrics = Metrics::default();
    let mut model = Vec::new();
    let table = sweep(
        &format!(
            "closed-form-classification: {}, MLP {}-128-128 features",
            images.description,
            train.x.shape()[1],
        ),
        &[
            Method::CrossEntropy,
            Method::Sgd,
            Method::Adam,
            Method::Ridge,
            Method::Proximal,
        ],
        train,
        &one_hot,
        Some(labels),
        &test.x,
        &evaluate,
        &batches,
        &cfg.seed_list(2, 5),
        &s,
        "accuracy (%)",
        2,
        &mut metrics,
        &mut model,
    )?;
    let dir = RunDir::create(&cfg.out, "closed-form-classification", &cfg.run_id())?;
    dir.write_metrics(
        "closed-form classification: test accuracy by step",
        &metrics,
        &[("train_loss", true), ("test_metric", false)],
        "step",
    )?;
    dir.write_model(
        model,
        vec![("experiment".into(), "closed-form-classification".into())],
    )?;
    let tables = vec![table];
    dir.write_tables(&tables)?;
    eprintln!(
        "closed-form-classification: results in {}",
        dir.path.display()
    );
    Ok(tables)
}
