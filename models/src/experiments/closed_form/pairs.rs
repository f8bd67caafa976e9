//! `closed-form-pairs`: the paper's classification claim where the squared loss is
//! under stress, 100 classes. MNIST pairs (two shipped digits side by side, label
//! 10a + b; see [`crate::data::digit_pairs`]) classified by an MLP trained with
//! cross-entropy or the squared loss on one-hot targets, by SGD or Adam, against the
//! per-batch ridge head and the proximal head over an SGD and an Adam backbone, at
//! batch 8, 32 and 128 for the same number of epochs. The claim: the proximal head
//! within about a point of cross-entropy at small and moderate batch.

use super::classification::{compare, Options, METHODS};
use super::comparison::{BUDGET_OPTIONS, SELECTION_OPTIONS};
use crate::cli::RunConfig;
use crate::data::builtin;
use crate::data::digit_pairs::digit_pairs;
use crate::error::{Error, Result};
use crate::experiments::images::Split;
use crate::grid::Grid;
use crate::report::{Metrics, Plot, Table};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    BUDGET_OPTIONS[0],
    BUDGET_OPTIONS[1],
    BUDGET_OPTIONS[2],
    ("batches", "batch sizes (8,32,128)"),
    SELECTION_OPTIONS[0],
    SELECTION_OPTIONS[1],
    SELECTION_OPTIONS[2],
    (
        "pairs",
        "training and test pairs, drawn from the 8,000 training and the 2,000 test digits (quick 4000,1000; full 20000,4000)",
    ),
];

/// The pairs: (train, test), checked.
fn pairs(cfg: &RunConfig) -> Result<Split> {
    let default: &[usize] = if cfg.quick {
        &[4000, 1000]
    } else {
        &[20000, 4000]
    };
    let counts: Vec<usize> = cfg.opt_list("pairs", default)?;
    let [train, test] = counts[..] else {
        return Err(Error::usage(format!(
            "--pairs takes two counts (train,test), got {counts:?}"
        )));
    };
    if train < 200 || test < 100 {
        return Err(Error::usage(format!("--pairs needs at least 200 training and 100 test pairs (two per class), got {train},{test}"),
        ));
    }
    let (train_digits, test_digits) = builtin::mnist()?;
    Ok(Split {
        train: digit_pairs(&train_digits, train, 0x9a1)?.data,
        test: digit_pairs(&test_digits, test, 0x9a2)?.data,
        side: 28,
        description: format!(
            "MNIST pairs (100 classes, 28×56 pixels; {train} training pairs from the 8,000 training digits, {test} test pairs from the 2,000 test digits)"
        ),
    })
}

/// Runs the experiment and returns its tables.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    cfg.check_known("closed-form-pairs", OPTIONS)?;
    let o = Options::parse(cfg, &[8, 32, 128])?;
    let split = pairs(cfg)?;
    let mut grid = Grid::new(cfg, cfg.seed_list(3, 5)?);
    let (mut metrics, mut model) = (Metrics::default(), Vec::new());
    let tables = compare(
        &o,
        ("closed-form-pairs", &split, &METHODS),
        &mut grid,
        (&mut metrics, &mut model),
    )?;
    Ok(cfg.run_dir("closed-form-pairs")?.finish(
        "closed-form-pairs",
        Plot::Curves {
            title: "closed-form-pairs: test accuracy on 100 classes",
            metrics: &metrics,
            panels: &[("train_loss", true), ("test_metric", false)],
            x_label: o.settings.x_label(),
        },
        model,
        tables,
    )?)
}
