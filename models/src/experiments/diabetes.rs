//! `diabetes`: MLP regression on the diabetes set, SGD against Adam, against the
//! mean predictor as the floor of usefulness.

use crate::cli::RunConfig;
use crate::data::{builtin, Dataset, Standardizer, Targets};
use crate::grid::Grid;
use crate::report::{Metrics, Plot, Table};
use crate::train::{batch_x, fit, FitSettings, OptimizerKind};
use autograd::Var;
use nn::{loss, Activation, Mlp, Module, ParamStore};
use optim::Schedule;
use tensor::{Result, Rng, Tensor};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    (
        "epochs",
        "passes over the training set (quick 100, full 300)",
    ),
    ("batch", "mini-batch size (32)"),
    ("hidden", "hidden width (32)"),
];

/// The standardised split: features and target standardised with training
/// statistics; returns (train, test, target standardiser).
pub fn split() -> Result<(Dataset, Dataset, Standardizer)> {
    let (train, test) = builtin::diabetes()?.split(0.2, &mut Rng::new(4321))?;
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

/// Test MSE in the target's original units, and R².
pub fn scores(pred_std: &Tensor<f64>, test: &Dataset, ys: &Standardizer) -> Result<(f64, f64)> {
    let pred = ys.inverse(pred_std)?;
    let truth = ys.inverse(test.values()?)?;
    let mse = pred.sub(&truth)?.square().mean_all()?.item()?;
    let var = truth.var(&[0], 0, false)?.item()?;
    Ok((mse, 1.0 - mse / var))
}

/// Runs the experiment and returns its table.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    cfg.check_known("diabetes", OPTIONS)?;
    let epochs = cfg.opt_positive("epochs", if cfg.quick { 100 } else { 300 })?;
    let batch = cfg.opt_positive("batch", 32)?;
    let hidden = cfg.opt_positive("hidden", 32)?;
    let (train, test, ys) = split()?;
    let seeds = cfg.seed_list(2, 5)?;
    let mut metrics = Metrics::default();
    let mut table = Table::new(
        &format!(
            "diabetes: MLP 10-{hidden}-{hidden}-1, {epochs} epochs, batch {batch}, {} seeds, {} test patients",
            seeds.len(),
            test.len()
        ),
        &["method", "test MSE", "test R²", "seconds / run"],
    );
    let mean_pred = Tensor::<f64>::zeros(&[test.len(), 1])?;
    let (mse0, r20) = scores(&mean_pred, &test, &ys)?;
    table.row(vec![
        "mean of the training targets".into(),
        format!("{mse0:.1}"),
        format!("{r20:.3}"),
        "—".into(),
    ]);
    let mut model_tensors = Vec::new();
    let y_train = train.values()?.cast::<f32>();
    let first_seed = seeds[0];
    let mut grid = Grid::new(cfg, seeds);
    for opt_kind in [
        OptimizerKind::Sgd {
            lr: 0.01,
            momentum: 0.9,
        },
        OptimizerKind::Adam { lr: 1e-3 },
    ] {
        let arm = opt_kind.name();
        grid.run(arm, "", &mut metrics, |seed, series, metrics| {
            let store = ParamStore::<f32>::new();
            let mlp = Mlp::new(
                &store.root().sub("mlp"),
                &[10, hidden, hidden, 1],
                Activation::Tanh,
                &mut Rng::new(seed),
            )?;
            let mut opt = opt_kind.build(&store, 0.0)?;
            let settings = FitSettings {
                epochs,
                batch_size: batch,
                schedule: Schedule::Cosine {
                    total: epochs * train.len().div_ceil(batch),
                    min_factor: 0.0,
                },
                seed: seed + 1000,
                series: series.to_string(),
                quiet: cfg.quiet,
            };
            let x_test = Var::constant(test.x.cast::<f32>());
            let r = fit(
                &store,
                opt.as_mut(),
                &train,
                &settings,
                metrics,
                |idx| {
                    let out = mlp.forward(&Var::constant(batch_x(&train, idx)?))?;
                    loss::mse(&out, &Var::constant(y_train.index_select(0, idx)?))
                },
                || {
                    let (mse, r2) = scores(&mlp.forward(&x_test)?.value().cast(), &test, &ys)?;
                    Ok(vec![("test_mse".into(), mse), ("test_r2".into(), r2)])
                },
            )?;
            if seed == first_seed {
                model_tensors.extend(
                    store
                        .to_tensors()
                        .into_iter()
                        .map(|(n, t)| (format!("{arm}.{n}"), t)),
                );
            }
            Ok(r)
        })?;
        table.row(vec![
            format!("MLP, {arm}"),
            grid.mean_std(arm, "", "test_mse", 1)?,
            grid.mean_std(arm, "", "test_r2", 3)?,
            grid.mean_std(arm, "", "seconds", 2)?,
        ]);
    }
    cfg.run_dir("diabetes")?.finish(
        "diabetes",
        Plot::Curves {
            title: "diabetes: MLP regression",
            metrics: &metrics,
            panels: &[("train_loss", true), ("test_mse", true)],
            x_label: "epoch",
        },
        model_tensors,
        vec![table],
    )
}
