//! The comparison every closed-form experiment runs: each method's value (λ, β
//! or the learning rate) chosen per batch size on a validation split, then every
//! method at every batch size over the grid's seeds on the whole training set,
//! with the paired evidence of the proximal head at the smallest batch.

use super::{run_arm, ArmRun, Backbone, Method, Settings, Task};
use crate::cli::RunConfig;
use crate::data::Dataset;
use crate::error::Result;
use crate::grid::Grid;
use crate::report::evidence::{Claim, Evidence};
use crate::report::{Metrics, Table};
use crate::train::choice::{scored_values, Choice};
use crate::train::{choose, Budget};
use nn::checkpoint::NamedTensors;
use tensor::Rng;

/// The validation choice of every arm's hyper-parameter: each method's grid is
/// trained on the fitting part and scored on the validation part, at one seed, per
/// batch size; the best value is then run on the whole training set at every seed.
pub struct Selection<'a> {
    /// Training on the fitting part, scoring on the validation part.
    pub task: Task<'a>,
    /// Steps each grid may grow past an edge, per side
    /// ([`crate::train::choice::extensions`]).
    pub extensions: usize,
    /// Grid of proximal λ.
    pub lambdas: &'a [f64],
    /// Grid of ridge β.
    pub betas: &'a [f64],
    /// Grid of factors on the SGD and Adam learning rates (the baselines get the
    /// same care as the closed-form arms).
    pub lr_factors: &'a [f64],
}

/// The budget and learning-rate options shared by the closed-form comparisons.
pub const BUDGET_OPTIONS: [(&str, &str); 3] = [
    (
        "epochs",
        "epochs per run, the same at every batch size (regression: quick 8, full 50; classification and pairs: quick 5, full 50)",
    ),
    (
        "steps",
        "steps per run instead, the same at every batch size (the fixed-steps view; off by default)",
    ),
    (
        "lr",
        "SGD learning rate, momentum 0.9, before the factors (0.01)",
    ),
];

/// The settings of [`BUDGET_OPTIONS`] with a `hidden` backbone: an epoch budget
/// (`epochs`: the quick and the full default), or `--steps` for the fixed-steps
/// view; λ and β are set per run from the validation choice.
pub fn settings(cfg: &RunConfig, hidden: Vec<usize>, epochs: (usize, usize)) -> Result<Settings> {
    let budget = match cfg.has("steps") {
        true if cfg.has("epochs") => {
            return Err(tensor::Error::value(
                "closed-form",
                "--epochs and --steps are two budgets; give one",
            )
            .into())
        }
        true => Budget::Steps(cfg.opt_positive("steps", 1)?),
        false => {
            Budget::Epochs(cfg.opt_positive("epochs", if cfg.quick { epochs.0 } else { epochs.1 })?)
        }
    };
    Ok(Settings {
        budget,
        sgd_lr: cfg.opt("lr", 0.01)?,
        adam_lr: 1e-3,
        beta: 0.0,
        lambda: 0.0,
        hidden,
        quiet: cfg.quiet,
    })
}

/// The options of the validation grids, shared by the regression and classification
/// experiments.
pub const SELECTION_OPTIONS: [(&str, &str); 3] = [
    (
        "lambdas",
        "grid of proximal λ against the mean batch loss, chosen on a 20 % validation split per batch size (quick 0.1,1,10; full 0.01,0.1,1,10,100)",
    ),
    (
        "betas",
        "grid of per-batch ridge β against the mean batch loss, chosen likewise (quick 0.001,0.01,0.1; full 0.0001,0.001,0.01,0.1)",
    ),
    (
        "lr-factors",
        "grid of factors on the SGD and Adam learning rates, chosen likewise (quick 0.3,1,3; full 0.1,0.3,1,3)",
    ),
];

/// The grids of [`SELECTION_OPTIONS`]: (λ, β, learning-rate factors), checked.
pub fn selection_grids(cfg: &RunConfig) -> Result<(Vec<f64>, Vec<f64>, Vec<f64>)> {
    let (lambdas, betas, factors): (&[f64], &[f64], &[f64]) = if cfg.quick {
        (&[0.1, 1.0, 10.0], &[1e-3, 1e-2, 1e-1], &[0.3, 1.0, 3.0])
    } else {
        (
            &[0.01, 0.1, 1.0, 10.0, 100.0],
            &[1e-4, 1e-3, 1e-2, 1e-1],
            &[0.1, 0.3, 1.0, 3.0],
        )
    };
    let lambdas: Vec<f64> = cfg.opt_list("lambdas", lambdas)?;
    let betas: Vec<f64> = cfg.opt_list("betas", betas)?;
    let factors: Vec<f64> = cfg.opt_list("lr-factors", factors)?;
    let positive = |v: &[f64]| !v.is_empty() && v.iter().all(|x| x.is_finite() && *x > 0.0);
    let non_negative = !betas.is_empty() && betas.iter().all(|x| x.is_finite() && *x >= 0.0);
    if !positive(&lambdas) || !non_negative || !positive(&factors) {
        return Err(tensor::Error::value(
            "closed-form",
            format!(
                "--lambdas and --lr-factors need finite values > 0, --betas finite values ≥ 0, none empty; got {lambdas:?}, {betas:?}, {factors:?}"
            ),
        ).into());
    }
    Ok((lambdas, betas, factors))
}

/// The training set split into a fitting part and a validation part (the last
/// `fraction` after a seeded shuffle).
pub fn validation_split(train: &Dataset, fraction: f64, seed: u64) -> Result<(Dataset, Dataset)> {
    if train.len() < 2 || !(fraction > 0.0 && fraction < 1.0) {
        return Err(tensor::Error::value(
            "validation_split",
            format!(
                "needs at least 2 samples and a fraction in (0, 1), got {} and {fraction}",
                train.len()
            ),
        )
        .into());
    }
    let order = Rng::new(seed).permutation(train.len());
    let n_val = ((train.len() as f64 * fraction).round() as usize).clamp(1, train.len() - 1);
    let (fit, val) = order.split_at(train.len() - n_val);
    Ok((train.subset(fit)?, train.subset(val)?))
}

/// One hyper-parameter value of a method, applied to the settings.
fn with_value(method: Method, s: &Settings, value: f64) -> Settings {
    let mut s = s.clone();
    match method {
        Method::Ridge(_) => s.beta = value,
        Method::Proximal(_) => s.lambda = value,
        m if m.backbone() == Backbone::Adam => s.adam_lr *= value,
        _ => s.sgd_lr *= value,
    }
    s
}

/// The grid a method's value is chosen from, and how the value is written: λ
/// for the proximal heads, β for the ridge heads (their backbone keeps its
/// learning rate), a factor on the learning rate for the whole networks.
fn value_grid<'a>(
    method: Method,
    sel: &Selection<'a>,
    s: &Settings,
) -> (&'a [f64], Box<dyn Fn(f64) -> String>) {
    let base = match method.backbone() {
        Backbone::Adam => s.adam_lr,
        Backbone::Sgd => s.sgd_lr,
    };
    match method {
        Method::Ridge(_) => (sel.betas, Box::new(|v| format!("β = {v:e}"))),
        Method::Proximal(_) => (sel.lambdas, Box::new(|v| format!("λ = {v:e}"))),
        _ => (
            sel.lr_factors,
            Box::new(move |v| format!("lr = {:e}", base * v)),
        ),
    }
}

/// One closed-form comparison: its methods on one task over batch sizes.
pub struct Comparison<'a> {
    /// The table titles' start.
    pub title: String,
    /// The grid setting prefix of its cells (the dataset, when an experiment
    /// runs several comparisons; empty otherwise).
    pub name: &'a str,
    /// The methods, in table order.
    pub methods: &'a [Method],
    /// Training on the whole training set, scoring on the test set.
    pub task: Task<'a>,
    /// The validation choice (`None`: every method at `settings` as given).
    pub selection: Option<Selection<'a>>,
    /// Batch sizes, one column each.
    pub batches: &'a [usize],
    /// The settings every method starts from.
    pub settings: &'a Settings,
    /// The metric's name in titles.
    pub metric: &'a str,
    /// Decimals of the metric in cells.
    pub digits: usize,
}

impl Comparison<'_> {
    /// A column header: "batch b", or "full batch (n)".
    fn column(&self, b: usize) -> String {
        if b >= self.task.train.len() {
            format!("full batch ({b})")
        } else {
            format!("batch {b}")
        }
    }

    /// The grid setting of batch size `b`.
    fn setting(&self, b: usize) -> String {
        if self.name.is_empty() {
            format!("b{b}")
        } else {
            format!("{}/b{b}", self.name)
        }
    }

    /// One header per batch size after `first`, then `last`.
    fn headers(&self, first: &[&str], last: Option<&str>) -> Vec<String> {
        let mut headers: Vec<String> = first.iter().map(|h| h.to_string()).collect();
        headers.extend(self.batches.iter().map(|&b| self.column(b)));
        headers.extend(last.map(String::from));
        headers
    }

    /// Runs the comparison over `grid`'s seeds: the selection table (with a
    /// [`Selection`]), the table of the final test metric and that of the best
    /// one over the run's evaluations; the first seed's models go into `model`.
    pub fn run(
        &self,
        grid: &mut Grid,
        metrics: &mut Metrics,
        model: &mut NamedTensors,
    ) -> Result<Vec<Table>> {
        let mut tables = Vec::new();
        // chosen[m][j]: the value of method m at batch j (None: every value failed).
        let chosen = match &self.selection {
            Some(sel) => {
                let (table, chosen) = self.select(sel, grid)?;
                tables.push(table);
                chosen
            }
            None => vec![vec![Some(1.0); self.batches.len()]; self.methods.len()],
        };
        self.run_cells(&chosen, grid, metrics, model)?;
        let mut last = self.table(&chosen, grid, "last")?;
        last.evidence = self.evidence(&chosen, grid)?;
        tables.push(last);
        tables.push(self.table(&chosen, grid, "best")?);
        Ok(tables)
    }

    /// Every method's value per batch size, chosen on the validation split at
    /// `grid`'s first seed (each score a shared cell of its sweep), and the table
    /// of every value's score.
    fn select(&self, sel: &Selection, grid: &Grid) -> Result<(Table, Vec<Vec<Option<f64>>>)> {
        let (s, digits, seed) = (self.settings, self.digits, grid.seeds()[0]);
        let headers = self.headers(&["method", "value"], None);
        let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
        let mut table = Table::new(
            &format!(
                "{} — validation {} of each value, seed {seed}, trained on {} samples, scored on {}; {}; the best per column (←) is used below; a best value at the grid's edge grows the grid by one of its steps, at most {ext} per side (— not scored), and one still at the edge is marked",
                self.title,
                self.metric,
                sel.task.train.len(),
                sel.task.x.shape()[0],
                s.describe_budget(),
                ext = sel.extensions,
            ),
            &headers,
        );
        let mut chosen = Vec::new();
        for &m in self.methods {
            let (values, show) = value_grid(m, sel, s);
            let choices = self
                .batches
                .iter()
                .map(|&b| {
                    choose(values, sel.task.better, sel.extensions, |v| {
                        let key =
                            format!("choice/{}/{}/value{v}/seed{seed}", m.tag(), self.setting(b));
                        grid.shared_score(&key, || {
                            let batch = b.min(sel.task.train.len());
                            let settings = with_value(m, s, v);
                            let run = run_arm(
                                m,
                                &sel.task,
                                (batch, seed),
                                &settings,
                                &mut Metrics::default(),
                            );
                            // A failed solve disqualifies the value; anything else is an error.
                            match run {
                                Ok(r) => Ok(r.last),
                                Err(tensor::Error::Numerical { .. }) => Ok(f64::NAN),
                                Err(e) => Err(e),
                            }
                        })
                    })
                })
                .collect::<tensor::Result<Vec<Choice>>>()?;
            for v in scored_values(&choices) {
                let mut row = vec![m.name(), show(v)];
                row.extend(choices.iter().map(|c| match c.score(v) {
                    None => "—".into(),
                    Some(score) if score.is_nan() => "failed".into(),
                    Some(score) if score.abs() >= 1e6 => format!("{score:.2e}{}", c.mark(v)),
                    Some(score) => format!("{score:.digits$}{}", c.mark(v)),
                }));
                table.row(row);
            }
            chosen.push(choices.iter().map(|c| c.best).collect());
        }
        Ok((table, chosen))
    }

    /// Every method at every batch size over the grid's seeds, each at its
    /// `chosen` value (a method whose every value failed is skipped).
    fn run_cells(
        &self,
        chosen: &[Vec<Option<f64>>],
        grid: &mut Grid,
        metrics: &mut Metrics,
        model: &mut NamedTensors,
    ) -> Result<()> {
        let first = grid.seeds()[0];
        for (mi, &m) in self.methods.iter().enumerate() {
            for (j, &b) in self.batches.iter().enumerate() {
                let settings = match (&self.selection, chosen[mi][j]) {
                    (Some(_), Some(v)) => with_value(m, self.settings, v),
                    (Some(_), None) => continue,
                    (None, _) => self.settings.clone(),
                };
                let batch = b.min(self.task.train.len());
                grid.run(m.tag(), &self.setting(b), metrics, |seed, _, metrics| {
                    let r: ArmRun = run_arm(m, &self.task, (batch, seed), &settings, metrics)?;
                    if seed == first {
                        let prefix = format!("{}.b{b}", m.tag());
                        model.extend(
                            r.tensors
                                .into_iter()
                                .map(|(k, x)| (format!("{prefix}.{k}"), x)),
                        );
                    }
                    Ok(vec![
                        ("metric".into(), r.last),
                        ("best".into(), r.best),
                        ("seconds".into(), r.seconds),
                    ])
                })?;
            }
        }
        Ok(())
    }

    /// The table of the `which` ("last" or "best") test metric per method and
    /// batch size, each cell beside its chosen value.
    fn table(&self, chosen: &[Vec<Option<f64>>], grid: &Grid, which: &str) -> Result<Table> {
        let s = self.settings;
        let headers = self.headers(&["method"], Some("s / run"));
        let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
        let chosen_note = match &self.selection {
            Some(_) => "; each method at its validation-chosen value (in brackets)",
            None => "",
        };
        let what = match which {
            "last" => format!("test {} after the last step", self.metric),
            _ => format!(
                "best test {} over the run's evaluations (an optimistic, test-chosen stopping point; the same runs)",
                self.metric
            ),
        };
        let mut table = Table::new(
            &format!(
                "{} — {what}, {}, {} seeds (mean ± std){chosen_note}",
                self.title,
                s.describe_budget(),
                grid.seeds().len(),
            ),
            &headers,
        );
        let name = if which == "last" { "metric" } else { "best" };
        for (mi, &m) in self.methods.iter().enumerate() {
            let mut row = vec![match &self.selection {
                Some(_) => m.name(),
                None => m.label(s),
            }];
            let mut secs = Vec::new();
            for (j, &b) in self.batches.iter().enumerate() {
                let note = match (&self.selection, chosen[mi][j]) {
                    (Some(sel), Some(v)) => format!(" [{}]", value_grid(m, sel, s).1(v)),
                    (Some(_), None) => {
                        row.push("every value failed".into());
                        continue;
                    }
                    (None, _) => String::new(),
                };
                let at = self.setting(b);
                let cell = grid.mean_std(m.tag(), &at, name, self.digits)?;
                row.push(format!("{cell}{note}"));
                secs.extend(grid.values(m.tag(), &at, "seconds")?);
            }
            row.push(crate::report::mean_std(&secs, 2));
            table.row(row);
        }
        Ok(table)
    }

    /// The claim's test: at the smallest batch, the proximal head against the
    /// same backbone optimiser on the squared loss and against the per-batch
    /// ridge head over that backbone (the paper's baselines; cross-entropy is
    /// reported in the tables but the paper claims no win over it), each at its
    /// validation-chosen value.
    fn evidence(&self, chosen: &[Vec<Option<f64>>], grid: &Grid) -> Result<Vec<Evidence>> {
        if self.selection.is_none() {
            return Ok(Vec::new());
        }
        let ran = |m: Method| {
            self.methods
                .iter()
                .position(|&x| x == m)
                .is_some_and(|i| chosen[i][0].is_some())
        };
        let title = self.title.split(" (").next().unwrap_or(&self.title);
        let at = self.setting(self.batches[0]);
        let mut evidence = Vec::new();
        for backbone in [Backbone::Sgd, Backbone::Adam] {
            let proximal = Method::Proximal(backbone);
            if !ran(proximal) {
                continue;
            }
            for baseline in [Method::Squared(backbone), Method::Ridge(backbone)] {
                if !ran(baseline) {
                    continue;
                }
                evidence.push(Evidence {
                    claim: Claim::ClosedForm,
                    setting: format!("{title}, {}", self.column(self.batches[0])),
                    metric: format!("test {}", self.metric),
                    better: self.task.better,
                    method: (proximal.name(), grid.values(proximal.tag(), &at, "metric")?),
                    baseline: (baseline.name(), grid.values(baseline.tag(), &at, "metric")?),
                    paired: true,
                    idle: None,
                });
            }
        }
        Ok(evidence)
    }
}
