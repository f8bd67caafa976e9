//! `closed-form-classification`: images (real MNIST by default, see
//! [`crate::experiments::images`]) with the squared loss on one-hot targets and a
//! closed-form last layer, against cross-entropy and squared-loss SGD.

use super::comparison::{
    selection_grids, validation_split, Comparison, Selection, Task, SELECTION_OPTIONS,
};
use super::{Method, Settings};
use crate::cli::RunConfig;
use crate::experiments::images::{self, ImageSet, Split};
use crate::grid::Grid;
use crate::report::{Metrics, Plot, Table};
use nn::checkpoint::NamedTensors;
use tensor::{Result, Tensor};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    ("steps", "optimisation steps per run (quick 300, full 3000)"),
    (
        "batches",
        "batch sizes, 0 = full batch (quick 8,32,128; full 8,32,128,0)",
    ),
    SELECTION_OPTIONS[0],
    SELECTION_OPTIONS[1],
    SELECTION_OPTIONS[2],
    (
        "lr",
        "SGD learning rate, momentum 0.9, before the factors (0.01)",
    ),
    images::OPTIONS[0],
    images::OPTIONS[1],
    images::OPTIONS[2],
];

/// The images kept in the quick setting (train, test): the full-batch arm computes
/// features of every training image at every step.
const QUICK_SIZES: (usize, usize) = (1500, 1000);

/// The options of one run.
struct Options {
    /// The settings every method starts from (λ and β are chosen per run).
    settings: Settings,
    /// Batch sizes, 0 = full batch.
    batches: Vec<usize>,
    /// The validation grids: (λ, β, learning-rate factors).
    grids: (Vec<f64>, Vec<f64>, Vec<f64>),
    /// Steps each validation grid may grow past an edge, per side.
    extensions: usize,
}

impl Options {
    /// The options from the command line, checked (the image options are read
    /// by [`images::load`]).
    fn parse(cfg: &RunConfig) -> Result<Options> {
        cfg.check_known("closed-form-classification", OPTIONS)?;
        let settings = Settings {
            steps: cfg.opt_positive("steps", if cfg.quick { 300 } else { 3000 })?,
            sgd_lr: cfg.opt("lr", 0.01)?,
            adam_lr: 1e-3,
            // λ and β are set per run from the validation choice.
            beta: 0.0,
            lambda: 0.0,
            hidden: vec![128, 128],
            quiet: cfg.quiet,
        };
        let default_batches: &[usize] = if cfg.quick {
            &[8, 32, 128]
        } else {
            &[8, 32, 128, 0]
        };
        Ok(Options {
            settings,
            batches: cfg.opt_list("batches", default_batches)?,
            grids: selection_grids(cfg)?,
            extensions: crate::train::choice::extensions(cfg.quick),
        })
    }
}

/// The accuracy (%) of predictions `[n, classes]` against `labels`.
fn accuracy_on(labels: &[usize]) -> impl Fn(&Tensor<f64>) -> Result<f64> + '_ {
    |pred: &Tensor<f64>| -> Result<f64> { Ok(nn::loss::accuracy(pred, labels)? * 100.0) }
}

/// The comparison on the images over the grid's seeds: its selection and result
/// tables; the first seed's models go into `model`.
fn compare(
    o: &Options,
    images: &Split,
    grid: &mut Grid,
    (metrics, model): (&mut Metrics, &mut NamedTensors),
) -> Result<Vec<Table>> {
    let (train, test) = (&images.train, &images.test);
    let (labels, classes) = train.labels()?;
    let (test_labels, _) = test.labels()?;
    let one_hot = Tensor::<f64>::one_hot(labels, classes)?;
    let batches: Vec<usize> = o
        .batches
        .iter()
        .map(|&b| if b == 0 { train.len() } else { b })
        .collect();
    let evaluate = accuracy_on(test_labels);
    let (fitting, validation) = validation_split(train, 0.2, 0x7a1)?;
    let (fit_labels, _) = fitting.labels()?;
    let (val_labels, _) = validation.labels()?;
    let fit_one_hot = Tensor::<f64>::one_hot(fit_labels, classes)?;
    let evaluate_val = accuracy_on(val_labels);
    let (lambdas, betas, lr_factors) = &o.grids;
    let selection = Selection {
        extensions: o.extensions,
        task: Task {
            train: &fitting,
            targets: &fit_one_hot,
            labels: Some(fit_labels),
            x: &validation.x,
            evaluate: &evaluate_val,
        },
        lower_is_better: false,
        lambdas,
        betas,
        lr_factors,
    };
    Comparison {
        title: format!(
            "closed-form-classification: {}, MLP {}-128-128 features",
            images.description,
            train.x.shape()[1],
        ),
        name: "",
        methods: &[
            Method::CrossEntropy,
            Method::Sgd,
            Method::Adam,
            Method::Ridge,
            Method::Proximal,
        ],
        task: Task {
            train,
            targets: &one_hot,
            labels: Some(labels),
            x: &test.x,
            evaluate: &evaluate,
        },
        selection: Some(selection),
        batches: &batches,
        settings: &o.settings,
        metric: "accuracy (%)",
        digits: 2,
    }
    .run(grid, metrics, model)
}

/// Runs the experiment and returns its table.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    let o = Options::parse(cfg)?;
    let images = images::load(
        cfg,
        ImageSet::Mnist,
        if cfg.quick { QUICK_SIZES } else { (0, 0) },
    )?;
    let mut grid = Grid::new(cfg, cfg.seed_list(3, 5)?);
    let (mut metrics, mut model) = (Metrics::default(), Vec::new());
    let tables = compare(&o, &images, &mut grid, (&mut metrics, &mut model))?;
    cfg.run_dir("closed-form-classification")?.finish(
        "closed-form-classification",
        Plot::Curves {
            title: "closed-form classification: test accuracy by step",
            metrics: &metrics,
            panels: &[("train_loss", true), ("test_metric", false)],
            x_label: "step",
        },
        model,
        tables,
    )
}
