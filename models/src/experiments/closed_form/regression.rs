//! `closed-form-regression`: the proximal closed-form last layer against SGD, Adam
//! and per-batch ridge on a synthetic molecular-energy regression (a QM9 stand-in)
//! and on the diabetes set, across batch sizes.

use super::comparison::{
    selection_grids, settings, validation_split, Comparison, Selection, BUDGET_OPTIONS,
    SELECTION_OPTIONS,
};
use super::{Backbone, Method, Settings, Task};
use crate::cli::RunConfig;
use crate::data::{molecules, Dataset, Standardizer, Targets};
use crate::experiments::diabetes;
use crate::grid::Grid;
use crate::report::evidence::Better;
use crate::report::{Metrics, Plot, Table};
use nn::checkpoint::NamedTensors;
use tensor::{Error, Result, Rng, Tensor};

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
        "molecules generated (quick 1500, full 10000), 20% held out",
    ),
    ("datasets", "molecules, diabetes or both (both)"),
];

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

/// The options of one run.
struct Options {
    /// The settings every method starts from (λ and β are chosen per run).
    settings: Settings,
    /// Batch sizes, 0 = full batch.
    batches: Vec<usize>,
    /// Molecules generated, when the molecular data set is run.
    molecules: Option<usize>,
    /// Run the diabetes set.
    diabetes: bool,
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
        let which: String = cfg.opt("datasets", "both".to_string())?;
        if !["both", "molecules", "diabetes"].contains(&which.as_str()) {
            return Err(Error::value(
                "closed-form-regression",
                format!("--datasets must be molecules, diabetes or both, got '{which}'"),
            ));
        }
        let grids = selection_grids(cfg)?;
        let molecules = if which != "diabetes" {
            Some(cfg.opt("molecules", if cfg.quick { 1500usize } else { 10000 })?)
        } else {
            None
        };
        Ok(Options {
            settings,
            batches,
            molecules,
            diabetes: which != "molecules",
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

/// The data sets `o` selects: the molecules, then the diabetes set.
fn datasets(o: &Options) -> Result<Vec<Data>> {
    let mut data = Vec::new();
    if let Some(n) = o.molecules {
        let (train, test, ys) = molecule_data(n)?;
        data.push(Data {
            key: "molecules",
            name: format!(
                "molecular energy ({} train / {} test molecules, {} invariant features)",
                train.len(),
                test.len(),
                molecules::FEATURES
            ),
            train,
            test,
            ys,
        });
    }
    if o.diabetes {
        let (train, test, ys) = diabetes::split()?;
        data.push(Data {
            key: "diabetes",
            name: format!(
                "diabetes ({} train / {} test patients)",
                train.len(),
                test.len()
            ),
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
) -> Result<impl Fn(&Tensor<f64>) -> Result<f64> + 'a> {
    let truth = ys.inverse(values)?;
    Ok(move |pred: &Tensor<f64>| -> Result<f64> {
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
    cfg.run_dir("closed-form-regression")?.finish(
        "closed-form-regression",
        Plot::Curves {
            title: "closed-form regression: test MSE",
            metrics: &metrics,
            panels: &[("train_loss", true), ("test_metric", true)],
            x_label: o.settings.x_label(),
        },
        model,
        tables,
    )
}
