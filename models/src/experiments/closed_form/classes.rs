//! `closed-form-classes`: the closed-form head on one-hot targets against
//! cross-entropy as the number of classes grows, on a Gaussian mixture with a fixed
//! number of samples per class (so each class is as hard at 1000 classes as at 10,
//! and only the label space grows): where the squared loss falls behind is the
//! paper's stated ImageNet limitation.

use super::{run_arm, Backbone, Method, Settings, Task};
use crate::cli::RunConfig;
use crate::data::mixture::{gaussian_mixture, Mixture};
use crate::error::{Error, Result};
use crate::grid::Grid;
use crate::report::evidence::Better;
use crate::report::{Metrics, Plot, Table};
use crate::train::Budget;
use nn::checkpoint::NamedTensors;
use tensor::Tensor;

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    (
        "classes",
        "numbers of classes, comma-separated (quick 10,100; full 10,100,1000)",
    ),
    (
        "per-class",
        "training samples per class (20); test: half as many",
    ),
    ("dim", "input dimension (32)"),
    ("steps", "optimisation steps per run (quick 400, full 3000)"),
    ("batch", "mini-batch size (64)"),
    (
        "lambda",
        "proximal strength λ against the mean batch loss (1)",
    ),
    ("lr", "SGD learning rate, momentum 0.9 (0.01)"),
];

/// The methods compared, in table order.
const METHODS: [Method; 4] = [
    Method::CrossEntropy(Backbone::Sgd),
    Method::Squared(Backbone::Sgd),
    Method::Squared(Backbone::Adam),
    Method::Proximal(Backbone::Sgd),
];

/// The options of one run.
struct Options {
    /// The numbers of classes, one column each.
    counts: Vec<usize>,
    /// Training samples per class (test: half as many).
    per_class: usize,
    dim: usize,
    batch: usize,
    /// The settings of every method.
    settings: Settings,
}

impl Options {
    /// The options from the command line, checked.
    fn parse(cfg: &RunConfig) -> Result<Options> {
        cfg.check_known("closed-form-classes", OPTIONS)?;
        let q = cfg.quick;
        let counts: Vec<usize> =
            cfg.opt_list("classes", if q { &[10, 100] } else { &[10, 100, 1000] })?;
        let per_class: usize = cfg.opt("per-class", 20)?;
        let dim: usize = cfg.opt("dim", 32)?;
        let batch: usize = cfg.opt("batch", 64)?;
        if counts.is_empty() || per_class < 2 || batch == 0 {
            return Err(Error::usage(
                "needs class counts, at least 2 samples per class and a positive batch",
            ));
        }
        let settings = Settings {
            // One batch size: a step budget is an epoch budget here.
            budget: Budget::Steps(cfg.opt_positive("steps", if q { 400 } else { 3000 })?),
            sgd_lr: cfg.opt("lr", 0.01)?,
            adam_lr: 1e-3,
            beta: 0.01,
            lambda: cfg.opt("lambda", 1.0)?,
            hidden: vec![128, 128],
            quiet: cfg.quiet,
        };
        Ok(Options {
            counts,
            per_class,
            dim,
            batch,
            settings,
        })
    }
}

/// The table, titled with the setting, one column per number of classes.
fn table(o: &Options, seeds: usize) -> Table {
    let mut headers = vec!["method".to_string()];
    headers.extend(o.counts.iter().map(|k| format!("{k} classes")));
    let header_refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let (dim, per_class, batch) = (o.dim, o.per_class, o.batch);
    Table::new(
        &format!(
            "closed-form-classes: test accuracy (%, mean ± std over {seeds} seeds) on a {dim}-D Gaussian mixture (means N(0, 0.5² I), unit noise), {per_class} training and {} test samples per class; MLP {dim}-128-128 features, {} at batch {batch}, proximal λ = {}",
            per_class / 2,
            match o.settings.budget {
                Budget::Steps(n) | Budget::Epochs(n) => format!("{n} steps"),
            },
            o.settings.lambda
        ),
        &header_refs,
    )
}

/// Every method on the mixture of `k` classes over the grid's seeds, each
/// appending its cell to its row of `rows`; the first seed's models at the first
/// number of classes go into `model`.
fn mixture_cells(
    o: &Options,
    k: usize,
    grid: &mut Grid,
    (rows, metrics, model): (&mut [Vec<String>], &mut Metrics, &mut NamedTensors),
) -> Result<()> {
    let mixture = Mixture {
        classes: k,
        dim: o.dim,
        spread: 0.5,
        seed: 1000 + k as u64,
    };
    let train = gaussian_mixture(&mixture, o.per_class, 0)?;
    let test = gaussian_mixture(&mixture, (o.per_class / 2).max(1), 1)?;
    let (labels, _) = train.labels()?;
    let (test_labels, _) = test.labels()?;
    let one_hot = Tensor::<f64>::one_hot(labels, k)?;
    let evaluate = |pred: &Tensor<f64>| -> tensor::Result<f64> {
        Ok(nn::loss::accuracy(pred, test_labels)? * 100.0)
    };
    let setting = format!("k{k}");
    let first_seed = grid.seeds()[0];
    for (row, &m) in rows.iter_mut().zip(&METHODS) {
        grid.run(m.tag(), &setting, metrics, |seed, _, metrics| {
            let mut own = Metrics::default();
            let task = Task {
                train: &train,
                targets: &one_hot,
                labels: Some(labels),
                x: &test.x,
                evaluate: &evaluate,
                better: Better::Higher,
            };
            let batch = o.batch.min(train.len());
            let r = run_arm(m, &task, (batch, seed), &o.settings, &mut own)?;
            let (acc, tensors) = (r.last, r.tensors);
            for mut r in own.rows {
                r.series = format!("k{k}/{}", r.series);
                metrics.rows.push(r);
            }
            if seed == first_seed && k == o.counts[0] {
                model.extend(
                    tensors
                        .into_iter()
                        .map(|(n, t)| (format!("{}.{n}", m.tag()), t)),
                );
            }
            Ok(vec![("accuracy".to_string(), acc)])
        })?;
        row.push(grid.mean_std(m.tag(), &setting, "accuracy", 2)?);
    }
    Ok(())
}

/// Runs the experiment and returns its table.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    let o = Options::parse(cfg)?;
    let seeds = cfg.seed_list(3, 3)?;
    let mut table = table(&o, seeds.len());
    let mut rows: Vec<Vec<String>> = METHODS.iter().map(|m| vec![m.label(&o.settings)]).collect();
    let (mut metrics, mut model) = (Metrics::default(), Vec::new());
    let mut grid = Grid::new(cfg, seeds);
    for &k in &o.counts {
        mixture_cells(&o, k, &mut grid, (&mut rows, &mut metrics, &mut model))?;
    }
    for row in rows {
        table.row(row);
    }
    Ok(cfg.run_dir("closed-form-classes")?.finish(
        "closed-form-classes",
        Plot::Curves {
            title: "closed-form-classes: test accuracy by step",
            metrics: &metrics,
            panels: &[("train_loss", true), ("test_metric", false)],
            x_label: "step",
        },
        model,
        vec![table],
    )?)
}
