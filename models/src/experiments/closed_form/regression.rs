//! `closed-form-regression`: the proximal closed-form last layer against SGD, Adam
//! and per-batch ridge on a synthetic molecular-energy regression (a QM9 stand-in)
//! and on the diabetes set, across batch sizes.

use super::comparison::{
    selection_grids, validation_split, Comparison, Selection, Task, SELECTION_OPTIONS,
};
use super::{Method, Settings};
use crate::cli::RunConfig;
use crate::data::{molecules, Dataset, Standardizer, Targets};
use crate::experiments::diabetes;
use crate::grid::Grid;
use crate::report::{Metrics, Plot, Table};
use tensor::{Error, Result, Rng, Tensor};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    ("steps", "optimisation steps per run (quick 300, full 3000)"),
    ("batches", "batch sizes, 0 = full batch (8,32,128,0)"),
    SELECTION_OPTIONS[0],
    SELECTION_OPTIONS[1],
    SELECTION_OPTIONS[2],
    (
        "lr",
        "SGD learning rate, momentum 0.9, before the factors (0.01)",
    ),
    (
        "molecules",
        "molecules generated (quick 1500, full 10000), 20% held out",
    ),
    ("datasets", "molecules, diabetes or both (both)"),
];

/// The molecular-energy data, standardised on the training split.
pub(super) fn molecule_data(n: usize) -> Result<(Dataset, Dataset, Standardizer)> {
    let (train, test) = molecules::generate(n, 7)?.split(0.2, &mut Rng::new(11))?;
    let xs = Standardizer::fit(&train.x)?;
    let ys = Standardizer::fit(train.values()?)?;
    let norm = |d: &Dataset| -> Result<Dataset> {
        Dataset::new(
            xs.transform(&d.x)?,
            Targets::Values(ys.transform(d.values()?)?),
        )
    };
    Ok((norm(&train)?, norm(&test)?, ys))
}

/// Runs the experiment and returns its tables.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    cfg.check_known("closed-form-regression", OPTIONS)?;
    let s = Settings {
        steps: cfg.opt_positive("steps", if cfg.quick { 300 } else { 3000 })?,
        sgd_lr: cfg.opt("lr", 0.01)?,
        adam_lr: 1e-3,
        // λ and β are set per run from the validation choice.
        beta: 0.0,
        lambda: 0.0,
        hidden: vec![128, 128],
        quiet: cfg.quiet,
    };
    let batches: Vec<usize> = cfg.opt_list("batches", &[8, 32, 128, 0])?;
    let which: String = cfg.opt("datasets", "both".to_string())?;
    if !["both", "molecules", "diabetes"].contains(&which.as_str()) {
        return Err(Error::value(
            "closed-form-regression",
            format!("--datasets must be molecules, diabetes or both, got '{which}'"),
        ));
    }
    let (lambdas, betas, lr_factors) = selection_grids(cfg)?;
    let mut grid = Grid::new(cfg, cfg.seed_list(3, 5)?);
    let methods = [Method::Sgd, Method::Adam, Method::Ridge, Method::Proximal];
    let mut metrics = Metrics::default();
    let mut model = Vec::new();
    let mut tables = Vec::new();
    let mut data = Vec::new();
    if which != "diabetes" {
        let n = cfg.opt("molecules", if cfg.quick { 1500usize } else { 10000 })?;
        let (train, test, ys) = molecule_data(n)?;
        data.push((
            format!(
                "molecular energy ({} train / {} test molecules, {} invariant features)",
                train.len(),
                test.len(),
                molecules::FEATURES
            ),
            train,
            test,
            ys,
        ));
    }
    if which != "molecules" {
        let (train, test, ys) = diabetes::split()?;
        data.push((
            format!(
                "diabetes ({} train / {} test patients)",
                train.len(),
                test.len()
            ),
            train,
            test,
            ys,
        ));
    }
    for (name, train, test, ys) in &data {
        let mut arms = Vec::new();
        // The diabetes set is small and noisy: the backbone of its own experiment.
        let s = if name.starts_with("diabetes") {
            Settings {
                hidden: vec![32, 32],
                ..s.clone()
            }
        } else {
            s.clone()
        };
        let batches: Vec<usize> = batches
            .iter()
            .map(|&b| if b == 0 { train.len() } else { b })
            .collect();
        let truth = ys.inverse(test.values()?)?;
        let evaluate = |pred: &Tensor<f64>| -> Result<f64> {
            ys.inverse(pred)?.sub(&truth)?.square().mean_all()?.item()
        };
        let (fitting, validation) = validation_split(train, 0.2, 0x7a1)?;
        let val_truth = ys.inverse(validation.values()?)?;
        let evaluate_val = |pred: &Tensor<f64>| -> Result<f64> {
            ys.inverse(pred)?
                .sub(&val_truth)?
                .square()
                .mean_all()?
                .item()
        };
        let selection = Selection {
            extensions: crate::train::choice::extensions(cfg.quick),
            task: Task {
                train: &fitting,
                targets: fitting.values()?,
                labels: None,
                x: &validation.x,
                evaluate: &evaluate_val,
            },
            lower_is_better: true,
            lambdas: &lambdas,
            betas: &betas,
            lr_factors: &lr_factors,
        };
        let key = if name.starts_with("diabetes") {
            "diabetes"
        } else {
            "molecules"
        };
        let found = Comparison {
            title: format!("closed-form-regression: {name}"),
            name: key,
            methods: &methods,
            task: Task {
                train,
                targets: train.values()?,
                labels: None,
                x: &test.x,
                evaluate: &evaluate,
            },
            selection: Some(selection),
            batches: &batches,
            settings: &s,
            metric: "MSE (original units)",
            digits: if key == "diabetes" { 0 } else { 3 },
        }
        .run(&mut grid, &mut metrics, &mut arms)?;
        model.extend(arms.into_iter().map(|(k, v)| (format!("{key}.{k}"), v)));
        tables.extend(found);
    }
    cfg.run_dir("closed-form-regression")?.finish(
        "closed-form-regression",
        Plot::Curves {
            title: "closed-form regression: test MSE by step",
            metrics: &metrics,
            panels: &[("train_loss", true), ("test_metric", true)],
            x_label: "step",
        },
        model,
        tables,
    )
}
