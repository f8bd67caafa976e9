//! `closed-form-regression`: the proximal closed-form last layer against SGD, Adam
//! and per-batch ridge on a synthetic molecular-energy regression (a QM9 stand-in)
//! and on the diabetes set, across batch sizes.

use super::{sweep, Method, Settings};
use crate::cli::RunConfig;
use crate::data::{molecules, Dataset, Standardizer, Targets};
use crate::experiments::diabetes;
use crate::report::{Metrics, RunDir, Table};
use tensor::{Error, Result, Rng, Tensor};

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
    (
        "molecules",
        "molecules generated (quick 1500, full 10000), 20% held out",
    ),
    ("datasets", "molecules, diabetes or both (both)"),
];

/// The molecular-energy data, standardised on the training split.
fn molecule_data(n: usize) -> Result<(Dataset, Dataset, Standardizer)> {
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
        steps: cfg.opt("steps", if cfg.quick { 300 } else { 3000 })?,
        sgd_lr: cfg.opt("lr", 0.01)?,
        adam_lr: 1e-3,
        beta: cfg.opt("beta", 0.01)?,
        lambda: cfg.opt("lambda", 1.0)?,
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
    let seeds = cfg.seed_list(2, 5);
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
        let table = sweep(
            &format!("closed-form-regression: {name}"),
            &methods,
            train,
            train.values()?,
            None,
            &test.x,
            &evaluate,
            &batches,
            &seeds,
            &s,
            "MSE (original units)",
            if name.starts_with("diabetes") { 0 } else { 3 },
            &mut metrics,
            &mut arms,
        )?;
        let key = if name.starts_with("diabetes") {
            "diabetes"
        } else {
            "molecules"
        };
        model.extend(arms.into_iter().map(|(k, v)| (format!("{key}.{k}"), v)));
        println!("{}", table.render());
        tables.push(table);
    }
    let dir = RunDir::create(&cfg.out, "closed-form-regression", &cfg.run_id())?;
    dir.write_metrics(
        "closed-form regression: test MSE by step",
        &metrics,
        &[("train_loss", true), ("test_metric", true)],
        "step",
    )?;
    dir.write_model(
        model,
        vec![("experiment".into(), "closed-form-regression".into())],
    )?;
    dir.write_tables(&tables)?;
    eprintln!("closed-form-regression: results in {}", dir.path.display());
    Ok(tables)
}
