//! `diabetes`: MLP regression on the diabetes set, SGD against Adam, against the
//! mean predictor as the floor of usefulness.

use crate::cli::RunConfig;
use crate::data::{builtin, Dataset, Standardizer, Targets};
use crate::error::Result;
use crate::grid::{Grid, Numbers};
use crate::report::{Metrics, Plot, Table};
use crate::train::{batch_x, fit, FitSettings, OptimizerKind};
use autograd::Var;
use nn::{loss, Activation, Mlp, Module, ParamStore};
use optim::Schedule;
use tensor::{Rng, Tensor};

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
        Ok(Dataset::new(
            xs.transform(&d.x)?,
            Targets::Values(ys.transform(d.values()?)?),
        )?)
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

/// The options of one run.
struct Options {
    epochs: usize,
    batch: usize,
    /// Width of both hidden layers.
    hidden: usize,
    quiet: bool,
}

impl Options {
    /// The options from the command line, checked.
    fn parse(cfg: &RunConfig) -> Result<Options> {
        cfg.check_known("diabetes", OPTIONS)?;
        Ok(Options {
            epochs: cfg.opt_positive("epochs", if cfg.quick { 100 } else { 300 })?,
            batch: cfg.opt_positive("batch", 32)?,
            hidden: cfg.opt_positive("hidden", 32)?,
            quiet: cfg.quiet,
        })
    }
}

/// The standardised split and the training targets in `f32`.
struct Data {
    train: Dataset,
    test: Dataset,
    /// The targets' standardiser (scores are in the original units).
    ys: Standardizer,
    /// The training targets `[n, 1]`, as the `f32` MLP trains on them.
    y_train: Tensor<f32>,
}

/// The table, titled with the setting, with the mean predictor's row.
fn table(o: &Options, seeds: usize, test: &Dataset, ys: &Standardizer) -> Result<Table> {
    let (hidden, epochs, batch) = (o.hidden, o.epochs, o.batch);
    let mut table = Table::new(
        &format!(
            "diabetes: MLP 10-{hidden}-{hidden}-1, {epochs} epochs, batch {batch}, {seeds} seeds, {} test patients",
            test.len()
        ),
        &["method", "test MSE", "test R²", "seconds / run"],
    );
    let mean_pred = Tensor::<f64>::zeros(&[test.len(), 1])?;
    let (mse0, r20) = scores(&mean_pred, test, ys)?;
    table.row(vec![
        "mean of the training targets".into(),
        format!("{mse0:.1}"),
        format!("{r20:.3}"),
        "—".into(),
    ]);
    Ok(table)
}

/// One grid cell: trains the MLP with `opt_kind` at `seed` under `series`;
/// returns its scores and its parameters.
fn train_mlp(
    o: &Options,
    d: &Data,
    opt_kind: &OptimizerKind,
    (seed, series): (u64, &str),
    metrics: &mut Metrics,
) -> Result<(Numbers, ParamStore<f32>)> {
    let store = ParamStore::<f32>::new();
    let mlp = Mlp::new(
        &store.root().sub("mlp"),
        &[10, o.hidden, o.hidden, 1],
        Activation::Tanh,
        &mut Rng::new(seed),
    )?;
    let mut opt = opt_kind.build(&store, 0.0)?;
    let settings = FitSettings {
        epochs: o.epochs,
        batch_size: o.batch,
        schedule: Schedule::Cosine {
            total: o.epochs * d.train.len().div_ceil(o.batch),
            min_factor: 0.0,
        },
        seed: seed + 1000,
        series: series.to_string(),
        quiet: o.quiet,
    };
    let x_test = Var::constant(d.test.x.cast::<f32>());
    let r = fit(
        &store,
        opt.as_mut(),
        &d.train,
        &settings,
        metrics,
        |idx| {
            let out = mlp.forward(&Var::constant(batch_x(&d.train, idx)?))?;
            loss::mse(&out, &Var::constant(d.y_train.index_select(0, idx)?))
        },
        || {
            let (mse, r2) = scores(&mlp.forward(&x_test)?.value().cast(), &d.test, &d.ys)?;
            Ok(vec![("test_mse".into(), mse), ("test_r2".into(), r2)])
        },
    )?;
    Ok((r, store))
}

/// Runs the experiment and returns its table.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    let o = Options::parse(cfg)?;
    let (train, test, ys) = split()?;
    let seeds = cfg.seed_list(2, 5)?;
    let mut table = table(&o, seeds.len(), &test, &ys)?;
    let d = Data {
        y_train: train.values()?.cast::<f32>(),
        train,
        test,
        ys,
    };
    let (mut metrics, mut model_tensors) = (Metrics::default(), Vec::new());
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
            let (r, store) = train_mlp(&o, &d, &opt_kind, (seed, series), metrics)?;
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
    Ok(cfg.run_dir("diabetes")?.finish(
        "diabetes",
        Plot::Curves {
            title: "diabetes: MLP regression",
            metrics: &metrics,
            panels: &[("train_loss", true), ("test_mse", true)],
            x_label: "epoch",
        },
        model_tensors,
        vec![table],
    )?)
}
