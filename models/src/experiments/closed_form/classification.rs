//! `closed-form-classification`: images (real MNIST by default, see
//! [`crate::experiments::images`]) with the squared loss on one-hot targets and a
//! closed-form last layer, against cross-entropy and squared-loss SGD.

use super::comparison::{
    selection_grids, settings, validation_split, Comparison, Selection, BUDGET_OPTIONS,
    SELECTION_OPTIONS,
};
use super::{Backbone, Method, Settings, Task};
use crate::cli::RunConfig;
use crate::error::Result;
use crate::experiments::images::{self, ImageSet, Split};
use crate::grid::Grid;
use crate::report::evidence::Better;
use crate::report::{Metrics, Plot, Table};
use nn::checkpoint::NamedTensors;
use tensor::Tensor;

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    BUDGET_OPTIONS[0],
    BUDGET_OPTIONS[1],
    BUDGET_OPTIONS[2],
    (
        "batches",
        "batch sizes, 0 = full batch (quick 8,32,128; full 8,32,128,0)",
    ),
    SELECTION_OPTIONS[0],
    SELECTION_OPTIONS[1],
    SELECTION_OPTIONS[2],
    images::OPTIONS[0],
    images::OPTIONS[1],
    images::OPTIONS[2],
];

/// The images kept in the quick setting (train, test): the full-batch arm computes
/// features of every training image at every step.
const QUICK_SIZES: (usize, usize) = (1500, 1000);

/// The methods compared, in table order: cross-entropy and the squared loss
/// over each backbone optimiser, the per-batch ridge head and the proximal head
/// over each.
pub(super) const METHODS: [Method; 7] = [
    Method::CrossEntropy(Backbone::Sgd),
    Method::CrossEntropy(Backbone::Adam),
    Method::Squared(Backbone::Sgd),
    Method::Squared(Backbone::Adam),
    Method::Ridge(Backbone::Sgd),
    Method::Proximal(Backbone::Sgd),
    Method::Proximal(Backbone::Adam),
];

/// The options of a classification comparison (this experiment's and
/// `closed-form-pairs`').
pub(super) struct Options {
    /// The settings every method starts from (λ and β are chosen per run).
    pub(super) settings: Settings,
    /// Batch sizes, 0 = full batch.
    batches: Vec<usize>,
    /// The validation grids: (λ, β, learning-rate factors).
    grids: (Vec<f64>, Vec<f64>, Vec<f64>),
    /// Steps each validation grid may grow past an edge, per side.
    extensions: usize,
}

impl Options {
    /// The budget, batch and validation options from the command line, checked
    /// (the caller checks the names; the image options are read by
    /// [`images::load`]).
    /// `full_batches` are the full setting's default batch sizes.
    pub(super) fn parse(cfg: &RunConfig, full_batches: &[usize]) -> Result<Options> {
        let settings = settings(cfg, vec![128, 128], (5, 50))?;
        let default_batches: &[usize] = if cfg.quick {
            &[8, 32, 128]
        } else {
            full_batches
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
fn accuracy_on(labels: &[usize]) -> impl Fn(&Tensor<f64>) -> tensor::Result<f64> + '_ {
    |pred: &Tensor<f64>| -> tensor::Result<f64> { Ok(nn::loss::accuracy(pred, labels)? * 100.0) }
}

/// The comparison of `methods` on the images over the grid's seeds, titled by
/// `experiment`: its selection and result tables; the first seed's models go
/// into `model`.
pub(super) fn compare(
    o: &Options,
    (experiment, images, methods): (&str, &Split, &[Method]),
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
            better: Better::Higher,
        },
        lambdas,
        betas,
        lr_factors,
    };
    Comparison {
        title: format!(
            "{experiment}: {}, MLP {}-128-128 features",
            images.description,
            train.x.shape()[1],
        ),
        name: "",
        methods,
        task: Task {
            train,
            targets: &one_hot,
            labels: Some(labels),
            x: &test.x,
            evaluate: &evaluate,
            better: Better::Higher,
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
    cfg.check_known("closed-form-classification", OPTIONS)?;
    let o = Options::parse(cfg, &[8, 32, 128, 0])?;
    let images = images::load(
        cfg,
        ImageSet::Mnist,
        if cfg.quick { QUICK_SIZES } else { (0, 0) },
    )?;
    let mut grid = Grid::new(cfg, cfg.seed_list(3, 5)?);
    let (mut metrics, mut model) = (Metrics::default(), Vec::new());
    let tables = compare(
        &o,
        ("closed-form-classification", &images, &METHODS),
        &mut grid,
        (&mut metrics, &mut model),
    )?;
    Ok(cfg.run_dir("closed-form-classification")?.finish(
        "closed-form-classification",
        Plot::Curves {
            title: "closed-form classification: test accuracy",
            metrics: &metrics,
            panels: &[("train_loss", true), ("test_metric", false)],
            x_label: o.settings.x_label(),
        },
        model,
        tables,
    )?)
}
