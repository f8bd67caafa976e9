//! `closed-form-regression`: the proximal closed-form last layer against SGD, Adam
//! and per-batch ridge on molecular energies (a synthetic QM9 stand-in, or the
//! shipped QM9 subset) and on the diabetes set, across batch sizes.

use super::comparison::{
    selection_grids, settings, validation_split, Comparison, Selection, BUDGET_OPTIONS,
    SELECTION_OPTIONS,
};
use super::{Backbone, Method, Settings, Task};
use crate::cli::RunConfig;
use crate::data::{builtin, molecules, qm9, Dataset, Standardizer, Targets};
use crate::error::{Error, Result};
use crate::experiments::diabetes;
use crate::grid::Grid;
use crate::report::evidence::Better;
use crate::report::{Metrics, Plot, Table};
use nn::checkpoint::NamedTensors;
use tensor::{Rng, Tensor};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    BUDGET_OPTIONS[0],
    BUDGET_OPTIONS[1],
    BUDGET_OPTIONS[2],
    ("batches", "batch sizes, 0 = full batch (8,32,128,0)"),
    SELECTION_OPTIONS[0],
    SELECTION_OPTIONS[1],
    SELECTION_OPTIONS[2],
    (
        "molecules",
        "molecules generated, or drawn from the QM9 subset (quick 1500, full 10000), 20% held out",
    ),
    (
        "datasets",
        "any of molecules, qm9, diabetes, comma-separated; both = molecules,diabetes (both)",
    ),
    (
        "qm9-target",
        "QM9's target: u0 (atomization energy at 0 K) or gap (HOMO-LUMO gap), eV (u0)",
    ),
];

/// The data sets `--datasets` may name, in the order they run.
const DATASETS: [&str; 3] = ["molecules", "qm9", "diabetes"];

/// The methods compared, in table order: each backbone optimiser on the whole
/// network, and under each closed-form head.
const METHODS: [Method; 6] = [
    Method::Squared(Backbone::Sgd),
    Method::Squared(Backbone::Adam),
    Method::Ridge(Backbone::Sgd),
    Method::Proximal(Backbone::Sgd),
    Method::Ridge(Backbone::Adam),
    Method::Proximal(Backbone::Adam),
];

/// The molecular-energy data, standardised on the training split.
pub(super) fn molecule_data(n: usize) -> Result<(Dataset, Dataset, Standardizer)> {
    standardised_split(molecules::generate(n, 7)?)
}

/// `data` split 80 / 20 (seeded), both parts standardised with the statistics of the
/// training part, and the targets' standardiser.
fn standardised_split(data: Dataset) -> Result<(Dataset, Dataset, Standardizer)> {
    let (train, test) = data.split(0.2, &mut Rng::new(11))?;
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

/// The options of one run.
struct Options {
    /// The settings every method starts from (λ and β are chosen per run).
    settings: Settings,
    /// Batch sizes, 0 = full batch.
    batches: Vec<usize>,
    /// The data sets run, in [`DATASETS`] order.
    datasets: Vec<&'static str>,
    /// Molecules generated, or drawn from the QM9 subset.
    molecules: usize,
    /// QM9's regression target.
    qm9_target: qm9::Target,
    /// The validation grids: (λ, β, learning-rate factors).
    grids: (Vec<f64>, Vec<f64>, Vec<f64>),
    /// Steps each validation grid may grow past an edge, per side.
    extensions: usize,
}

impl Options {
    /// The options from the command line, checked.
    fn parse(cfg: &RunConfig) -> Result<Options> {
        cfg.check_known("closed-form-regression", OPTIONS)?;
        let settings = settings(cfg, vec![128, 128], (8, 50))?;
        let batches: Vec<usize> = cfg.opt_list("batches", &[8, 32, 128, 0])?;
        let named: Vec<String> = cfg.opt_list("datasets", &["both".to_string()])?;
        let mut wanted = Vec::new();
        for name in &named {
            match name.as_str() {
                "both" => wanted.extend(["molecules", "diabetes"]),
                n if DATASETS.contains(&n) => wanted.push(n),
                _ => {
                    return Err(Error::usage(format!(
                        "--datasets takes molecules, qm9, diabetes or both, got '{name}'"
                    )))
                }
            }
        }
        if wanted.is_empty() {
            return Err(Error::usage(
                "--datasets is empty: name at least one of molecules, qm9, diabetes",
            ));
        }
        let datasets = DATASETS
            .into_iter()
            .filter(|d| wanted.contains(d))
            .collect();
        let grids = selection_grids(cfg)?;
        Ok(Options {
            settings,
            batches,
            datasets,
            molecules: cfg.opt_positive("molecules", if cfg.quick { 1500 } else { 10000 })?,
            qm9_target: cfg.opt("qm9-target", qm9::Target::AtomizationEnergy)?,
            grids,
            extensions: crate::train::choice::extensions(cfg.quick),
        })
    }
}

/// One data set of the comparison, standardised on its training split.
struct Data {
    /// Its grid setting prefix and model-tensor prefix.
    key: &'static str,
    /// Its description in the table titles.
    name: String,
    train: Dataset,
    test: Dataset,
    /// The targets' standardiser (errors are in the original units).
    ys: Standardizer,
}

/// The data sets `o` selects, in [`DATASETS`] order.
fn datasets(o: &Options) -> Result<Vec<Data>> {
    let mut data = Vec::new();
    for &key in &o.datasets {
        let ((train, test, ys), name) = match key {
            "molecules" => (molecule_data(o.molecules)?, "synthetic molecular energy"),
            "qm9" => (
                standardised_split(qm9::dataset(&builtin::qm9()?, o.molecules, o.qm9_target)?)?,
                match o.qm9_target {
                    qm9::Target::AtomizationEnergy => "QM9 atomization energy at 0 K in eV",
                    qm9::Target::Gap => "QM9 HOMO-LUMO gap in eV",
                },
            ),
            _ => (diabetes::split()?, "diabetes"),
        };
        let name = if key == "diabetes" {
            format!(
                "{name} ({} train / {} test patients)",
                train.len(),
                test.len()
            )
        } else {
            format!(
                "{name} ({} train / {} test molecules, {} invariant features)",
                train.len(),
                test.len(),
                train.x.shape()[1]
            )
        };
        data.push(Data {
            key,
            name,
            train,
            test,
            ys,
        });
    }
    Ok(data)
}

/// The MSE in the original units of standardised predictions against the
/// standardised `values`.
fn mse_against<'a>(
    ys: &'a Standardizer,
    values: &Tensor<f64>,
) -> Result<impl Fn(&Tensor<f64>) -> tensor::Result<f64> + 'a> {
    let truth = ys.inverse(values)?;
    Ok(move |pred: &Tensor<f64>| -> tensor::Result<f64> {
        ys.inverse(pred)?.sub(&truth)?.square().mean_all()?.item()
    })
}

/// The comparison on one data set over the grid's seeds: its selection and
/// result tables; the first seed's models go into `model` under the set's key.
fn compare(
    o: &Options,
    d: &Data,
    grid: &mut Grid,
    (metrics, model): (&mut Metrics, &mut NamedTensors),
) -> Result<Vec<Table>> {
    let mut arms = Vec::new();
    // The diabetes set is small and noisy: the backbone of its own experiment.
    let s = if d.key == "diabetes" {
        Settings {
            hidden: vec![32, 32],
            ..o.settings.clone()
        }
    } else {
        o.settings.clone()
    };
    let batches: Vec<usize> = o
        .batches
        .iter()
        .map(|&b| if b == 0 { d.train.len() } else { b })
        .collect();
    let evaluate = mse_against(&d.ys, d.test.values()?)?;
    let (fitting, validation) = validation_split(&d.train, 0.2, 0x7a1)?;
    let evaluate_val = mse_against(&d.ys, validation.values()?)?;
    let (lambdas, betas, lr_factors) = &o.grids;
    let selection = Selection {
        extensions: o.extensions,
        task: Task {
            train: &fitting,
            targets: fitting.values()?,
            labels: None,
            x: &validation.x,
            evaluate: &evaluate_val,
            better: Better::Lower,
        },
        lambdas,
        betas,
        lr_factors,
    };
    let found = Comparison {
        title: format!("closed-form-regression: {}", d.name),
        name: d.key,
        methods: &METHODS,
        task: Task {
            train: &d.train,
            targets: d.train.values()?,
            labels: None,
            x: &d.test.x,
            evaluate: &evaluate,
            better: Better::Lower,
        },
        selection: Some(selection),
        batches: &batches,
        settings: &s,
        metric: "MSE (original units)",
        digits: if d.key == "diabetes" { 0 } else { 3 },
    }
    .run(grid, metrics, &mut arms)?;
    let key = d.key;
    model.extend(arms.into_iter().map(|(k, v)| (format!("{key}.{k}"), v)));
    Ok(found)
}

/// Runs the experiment and returns its tables.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    let o = Options::parse(cfg)?;
    let mut grid = Grid::new(cfg, cfg.seed_list(3, 5)?);
    let (mut metrics, mut model, mut tables) = (Metrics::default(), Vec::new(), Vec::new());
    for d in &datasets(&o)? {
        tables.extend(compare(&o, d, &mut grid, (&mut metrics, &mut model))?);
    }
    Ok(cfg.run_dir("closed-form-regression")?.finish(
        "closed-form-regression",
        Plot::Curves {
            title: "closed-form regression: test MSE",
            metrics: &metrics,
            panels: &[("train_loss", true), ("test_metric", true)],
            x_label: o.settings.x_label(),
        },
        model,
        tables,
    )?)
}
