//! The lift experiments' SGD study (`lift-ebm-1d`, `lift-flow-2d`): the shoulder
//! argument (gradients attenuated by ψ' = sigmoid on the softplus shoulder, Kramers
//! escape times) is about SGD, while Adam divides the attenuation away. So every
//! strategy but the width-matched one is also trained by plain SGD (no momentum;
//! the rate chosen per strategy and start by the mean validation NLL over seeds),
//! from the authors' start and from the shoulder start (every latent at −4, PGD at
//! the same effective weights), where Adam at the experiment's own rate runs too.
//! The table reports the fit and the escape dynamics (every latent entry's
//! shoulder membership at 100 snapshots).

use super::controls::mean_finite;
use super::groups::Rule;
use super::{lift_evidence, Convention, Strategy};
use crate::grid::{Grid, Numbers};
use crate::report::evidence::Better;
use crate::report::{Metrics, Table};
use crate::train::{choose, Choice};
use optim::{AdamConfig, SgdConfig};
use tensor::Result;

/// `lift-ebm-1d`'s study: total variation and test NLL, Adam at the authors' 1e-3.
pub const EBM_1D: Study = Study {
    experiment: "lift-ebm-1d",
    fits: &[("tv", "total variation", 4), ("nll", "test NLL", 3)],
    validation: "val_nll",
    test: "nll",
    adam: || AdamConfig::adam(1e-3),
};

/// `lift-flow-2d`'s study: test NLL and the ICNN term's scale (near 0 on the
/// Gaussian plateau), Adam at CP-Flow's toy 5e-3.
pub const FLOW_2D: Study = Study {
    experiment: "lift-flow-2d",
    fits: &[
        ("nll", "test NLL", 3),
        ("icnn_scale", "ICNN term's scale softplus(a) at the end", 3),
    ],
    validation: "val_nll",
    test: "nll",
    adam: || AdamConfig::adam(5e-3),
};

/// `lift-flow-tabular`'s study: test NLL and its 99th percentile over rows, Adam
/// as in CP-Flow's tabular recipe (1e-3, β₂ 0.99, weight decay 1e-6).
pub const FLOW_TABULAR: Study = Study {
    experiment: "lift-flow-tabular",
    fits: &[
        ("test", "test NLL", 3),
        ("test_p99", "test NLL, 99th percentile of rows", 3),
    ],
    validation: "validation",
    test: "test",
    adam: || AdamConfig {
        beta2: 0.99,
        weight_decay: 1e-6,
        ..AdamConfig::adam(1e-3)
    },
};

/// The SGD learning rates of the full setting: decades, since the clipped
/// gradient's scale differs between strategies by orders of magnitude.
pub const SGD_LRS: [f64; 6] = [0.0001, 0.001, 0.01, 0.1, 1.0, 10.0];

/// The latent every constrained weight starts at in the shoulder start.
pub const SHOULDER_LATENT: f64 = -4.0;

/// The strategies of the study: all but the width-matched softplus (its cost)
/// and the step-size control (SGD's rate is chosen per strategy already).
const STRATEGIES: [Strategy; 4] = [
    Strategy::Pgd,
    Strategy::Softplus,
    Strategy::Lift,
    Strategy::LiftCode,
];

/// What differs between the experiments that run the study.
#[derive(Clone, Copy, Debug)]
pub struct Study {
    /// The experiment's name, as the tables and the evidence state it.
    pub experiment: &'static str,
    /// The fit columns: a cell's number, its header and its digits.
    pub fits: &'static [(&'static str, &'static str, usize)],
    /// The cell's number that chooses SGD's rate (a validation NLL).
    pub validation: &'static str,
    /// The cell's number the lift's claims are tested on (a test NLL).
    pub test: &'static str,
    /// The authors' Adam, run from the shoulder start beside SGD.
    pub adam: fn() -> AdamConfig,
}

/// The study's tables.
pub struct StudyTables {
    /// Fit and escape per target, start, optimiser and strategy.
    pub table: Table,
    /// The choice of the SGD rate.
    pub choice: Table,
    study: Study,
}

impl StudyTables {
    /// Empty tables of `study` whose captions state `setting`.
    pub fn new(study: Study, setting: &str) -> StudyTables {
        let (experiment, adam_lr) = (study.experiment, (study.adam)().lr);
        let mut headers = vec!["target", "start", "optimiser", "method"];
        headers.extend(study.fits.iter().map(|f| f.1));
        headers.extend([
            "shoulder occupancy at the end",
            "entries ever on the shoulder",
            "of all entries, on it and later off",
            "state changes per entry",
            "non-finite steps skipped",
        ]);
        StudyTables {
            table: Table::new(
                &format!("{experiment}: plain SGD, where the shoulder theory applies, from the authors' start and from the shoulder start (every latent at {SHOULDER_LATENT}, sigmoid ≈ 0.018; PGD at the same effective weights), with the authors' Adam (rate {adam_lr}) from the shoulder too; {setting}; SGD's rate chosen per strategy and start by the mean validation NLL (its own table); mean ± std over seeds; the escape columns follow every latent entry's shoulder membership (sigmoid(θ̃) ≤ 0.05; PGD: clamped to 0) at 100 snapshots"),
                &headers,
            ),
            choice: Table::new(
                &format!("{experiment}: the choice of the plain-SGD learning rate per strategy and start — mean validation NLL over seeds, on validation samples drawn apart from the test samples; {setting}; the best (←) is used in the SGD table; one at the grid's edge is marked"),
                &["target", "start", "method", "lr", "validation NLL (mean over seeds)"],
            ),
            study,
        }
    }
}

/// The series-name suffix of a run trained by `rule` from `start`: empty for
/// Adam from the experiment's own start (the headline's runs), else the
/// optimiser, its rate and a shoulder start's latent.
pub fn regime(rule: &Rule, start: Convention) -> String {
    match (rule, start) {
        (Rule::Sgd(c), Convention::Shoulder(l)) => format!("/sgd{}/start{l}", c.lr),
        (Rule::Sgd(c), _) => format!("/sgd{}", c.lr),
        (Rule::Adam(c), Convention::Shoulder(l)) => format!("/adam{}/start{l}", c.lr),
        (Rule::Adam(_), _) => String::new(),
    }
}

/// A start's name in the tables.
fn start_name(start: Convention) -> String {
    match start {
        Convention::Shoulder(l) => format!("shoulder ({l})"),
        _ => "the authors'".into(),
    }
}

/// The grid arm of `strategy` under `rule` from `start`.
fn arm(strategy: Strategy, rule: &Rule, start: Convention) -> String {
    let optimiser = match rule {
        Rule::Sgd(c) => format!("SGD lr {}", c.lr),
        Rule::Adam(c) => format!("Adam lr {}", c.lr),
    };
    format!("{} · {optimiser} · {}", strategy.name(), start_name(start))
}

/// One run of the study: `strategy` trained by `rule` from `start` at `seed`,
/// tracking every latent's shoulder membership; its cell's numbers (with the
/// study's validation, test and fit numbers, `shoulder`, `skipped` and the
/// `escape_*` summary).
pub type StudyRun<'a> =
    dyn FnMut(Strategy, &Rule, Convention, u64, &mut Metrics) -> Result<Numbers> + 'a;

/// The study on the target `name` over the grid's seeds, each run by `run` from
/// `authors` (the experiment's own start: the EBM's raw weights in `lift-ebm-1d`,
/// CP-Flow's 1/fan_in gain in `lift-flow-2d`) and from the shoulder start: the
/// rows of both tables and the evidence of the lift's claims under each optimiser
/// and start, pushed to `tables.table.evidence`.
pub fn run_target(
    (name, authors): (&str, Convention),
    lrs: &[f64],
    grid: &mut Grid,
    run: &mut StudyRun<'_>,
    (tables, metrics): (&mut StudyTables, &mut Metrics),
) -> Result<()> {
    let mut train = |strategy: Strategy, rule: Rule, start: Convention, grid: &mut Grid| {
        let arm = arm(strategy, &rule, start);
        grid.run(&arm, name, metrics, |seed, _, m| {
            Ok(run(strategy, &rule, start, seed, m)?)
        })?;
        Ok::<String, tensor::Error>(arm)
    };
    for start in [authors, Convention::Shoulder(SHOULDER_LATENT)] {
        let mut chosen = Vec::new();
        for strategy in STRATEGIES {
            let choice: Choice = choose(lrs, Better::Lower, 0, |lr| {
                let arm = train(strategy, Rule::Sgd(SgdConfig::new(lr)), start, grid)?;
                Ok(mean_finite(&grid.values(
                    &arm,
                    name,
                    tables.study.validation,
                )?))
            })?;
            for &(lr, score) in &choice.scored {
                let cell = if score.is_nan() {
                    "diverged".to_string()
                } else {
                    format!("{score:.4}{}", choice.mark(lr))
                };
                tables.choice.row(vec![
                    name.into(),
                    start_name(start),
                    strategy.name(),
                    format!("{lr}"),
                    cell,
                ]);
            }
            let lr = choice.best.unwrap_or(choice.scored[0].0);
            chosen.push((
                strategy,
                arm(strategy, &Rule::Sgd(SgdConfig::new(lr)), start),
            ));
        }
        rows(grid, (name, start, "SGD (chosen lr)"), &chosen, tables)?;
        if let Convention::Shoulder(_) = start {
            let config = (tables.study.adam)();
            let lr = config.lr;
            let adam = Rule::Adam(config);
            let mut arms = Vec::new();
            for strategy in STRATEGIES {
                arms.push((strategy, train(strategy, adam.clone(), start, grid)?));
            }
            rows(grid, (name, start, &format!("Adam lr {lr}")), &arms, tables)?;
        }
    }
    Ok(())
}

/// The rows of one target, start and optimiser, and their evidence.
fn rows(
    grid: &Grid,
    (name, start, optimiser): (&str, Convention, &str),
    arms: &[(Strategy, String)],
    tables: &mut StudyTables,
) -> Result<()> {
    let mut nlls = Vec::new();
    for (strategy, arm) in arms {
        let cell = |k: &str, digits| grid.mean_std(arm, name, k, digits);
        let skipped: f64 = grid
            .values(arm, name, "skipped")?
            .iter()
            .filter(|v| v.is_finite())
            .sum();
        let mut row = vec![
            name.into(),
            start_name(start),
            optimiser.into(),
            arm.split(" · ")
                .nth(1)
                .map_or(strategy.name(), |o| format!("{} ({o})", strategy.name())),
        ];
        for &(key, _, digits) in tables.study.fits {
            row.push(cell(key, digits)?);
        }
        row.extend([
            cell("shoulder", 3)?,
            cell("escape_ever", 3)?,
            cell("escape_left", 3)?,
            cell("escape_changes", 2)?,
            format!("{skipped}"),
        ]);
        tables.table.row(row);
        nlls.push((*strategy, grid.values(arm, name, tables.study.test)?));
    }
    let setting = format!(
        "{}, {name}, {optimiser}, {} start",
        tables.study.experiment,
        start_name(start)
    );
    tables
        .table
        .evidence
        .extend(lift_evidence(&setting, "test NLL", &nlls));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::RunConfig;

    #[test]
    fn the_authors_start_is_the_experiments_own() {
        let cfg = RunConfig::default();
        for authors in [Convention::CpFlow, Convention::Ebm] {
            let mut grid = Grid::new(&cfg, vec![0]);
            let mut starts = Vec::new();
            let mut run = |_: Strategy, _: &Rule, start: Convention, _: u64, _: &mut Metrics| {
                starts.push(start);
                let keys = ["val_nll", "nll", "icnn_scale", "shoulder", "skipped"];
                let escape = ["escape_ever", "escape_left", "escape_changes"];
                Ok(keys
                    .iter()
                    .chain(&escape)
                    .map(|k| (k.to_string(), 1.0))
                    .collect())
            };
            let mut tables = StudyTables::new(FLOW_2D, "test");
            let parts = (&mut tables, &mut Metrics::default());
            run_target(("t", authors), &[0.1], &mut grid, &mut run, parts).unwrap();
            let shoulder = Convention::Shoulder(SHOULDER_LATENT);
            // Four strategies by SGD from each start, then by Adam from the shoulder.
            let expected: Vec<Convention> = [authors, shoulder, shoulder]
                .iter()
                .flat_map(|&s| [s; 4])
                .collect();
            assert_eq!(starts, expected);
        }
    }
}
