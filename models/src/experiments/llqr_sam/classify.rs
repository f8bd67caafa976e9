//! `llqr-sam`: images (real MNIST by default, see [`crate::experiments::images`])
//! with an MLP or a small CNN, trained by every optimiser of the comparison over
//! several seeds at several levels of symmetric label noise; test accuracy on the
//! clean held-out set, wall-clock per step (with this run's refreshes, and amortised
//! at the authors' period) and the spread of U.

use super::network::Model;
use crate::cli::RunConfig;
use crate::data::Dataset;
use crate::experiments::images::{self, ImageSet};
use crate::grid::Grid;
use crate::report::evidence::{Better, Claim, Evidence};
use crate::report::{mean_std, Metrics, Plot, Table};
use crate::train::set_mode;
use crate::train::{
    batch_x, preconditioning_batch, train as train_loop, Batch, Batches, Budget, Hyper, Method,
    NonFinite, Plan, Preconditioning, Spread, Task, Training,
};
use autograd::Var;
use nn::checkpoint::AnyTensor;
use nn::{loss, Module, ParamStore};
use optim::llqr::{Geometry, PerturbationNorm};
use optim::Schedule;
use tensor::{Error, Result, Rng};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    ("epochs", "passes over the training set (quick 12, full 40)"),
    ("batch", "mini-batch size (64)"),
    ("hidden", "hidden width of the MLP d-h-h-10; the CNN has h/16 and h/8 channels (128)"),
    ("model", "mlp or cnn (mlp)"),
    ("lr", "outer SGD learning rate, cosine to 0 (0.05)"),
    ("rho", "SAM radius ρ for every perturbed arm (0.05)"),
    (
        "noise",
        "percentages of training labels flipped symmetrically, one column each (quick 0,40,80; full 0,20,40,60,80)",
    ),
    (
        "arms",
        "optimisers by tag, comma-separated (quick: sgd,sam,llqr-sam-ngd-euclid,llqr-sam-ngd-unorm; full adds fsam,fisher-sam,llqr-ngd,llqr-fsam-ngd-euclid,llqr-newton,llqr-sam-newton-euclid,llqr-sam-newton-unorm; also the -ngd-mean variants)",
    ),
    ("refresh", "LLQR: steps between refreshes of U (T_U, 25)"),
    (
        "inner-lr",
        "LLQR: learning rate of the inner solve (1e-3, the authors')",
    ),
    (
        "inner-sweep",
        "inner learning rates of the sweep table for LLQR+SAM (NGD, ‖Ug‖₂), comma-separated, empty for none (quick none, full 1e-4,1e-2)",
    ),
    images::OPTIONS[0],
    images::OPTIONS[1],
    images::OPTIONS[2],
];

/// The authors' refresh period T_U (their `update_preconditioner_every` on CIFAR).
pub const AUTHORS_REFRESH_PERIOD: usize = 1000;

/// The images kept in the quick setting (train, test).
const QUICK_SIZES: (usize, usize) = (1500, 1000);

/// What one arm produced on one seed.
pub struct ArmResult {
    /// Clean test accuracy (%) after the last epoch (NaN if training diverged).
    pub accuracy: f64,
    /// The step at which the loss or the update became non-finite, if it did.
    pub diverged_at: Option<usize>,
    /// Milliseconds per training step, refreshes included.
    pub ms_per_step: f64,
    /// The same with the refreshes amortised at the authors' period
    /// ([`AUTHORS_REFRESH_PERIOD`]) instead of this run's.
    pub ms_at_authors_period: f64,
    /// For LLQR arms, the spread of U's entries after the last step.
    pub preconditioner: Option<Spread>,
    /// Non-finite entries of U's gradient sanitised over the run's refreshes.
    pub sanitised: usize,
    /// For LLQR arms, ‖Ug − g‖ / ‖g‖ after the last refresh, g the gradient of an
    /// independent batch of the training set.
    pub u_effect: Option<f64>,
    /// The trained parameters.
    pub store: ParamStore<f32>,
}

/// Training length and batching.
#[derive(Clone, Debug)]
pub struct Regime {
    /// Epochs.
    pub epochs: usize,
    /// Mini-batch size.
    pub batch: usize,
    /// Hidden width (the MLP's; the CNN has hidden/16 and hidden/8 channels).
    pub hidden: usize,
    /// The network.
    pub model: Model,
}

/// One arm: an optimiser with its settings and budget.
#[derive(Clone, Debug)]
pub struct Arm {
    /// The optimiser.
    pub method: Method,
    /// Its hyper-parameters.
    pub hyper: Hyper,
    /// The training budget.
    pub budget: Regime,
}

/// One arm's network, update rule and (possibly noisy) training set, as the
/// trainer drives them.
struct NoisyLabels<'a> {
    net: &'a dyn Module<f32>,
    store: &'a ParamStore<f32>,
    training: Training<f32>,
    train: &'a Dataset,
    labels: &'a [usize],
    test: (Var<f32>, &'a [usize]),
    precond_batch: usize,
    precond_rng: Rng,
    /// Draws the batch U's effect is measured on (independent of training).
    held_out_rng: Rng,
    series: &'a str,
}

impl Task for NoisyLabels<'_> {
    fn set_lr_factor(&mut self, factor: f64) -> Result<()> {
        self.training.set_lr_factor(factor)
    }

    fn before_step(&mut self, step: usize, metrics: &mut Metrics) -> Result<()> {
        let (net, train, labels) = (self.net, self.train, self.labels);
        let (rng, count) = (&mut self.precond_rng, self.precond_batch);
        let held_rng = &mut self.held_out_rng;
        self.training.refresh_if_due(
            self.store,
            || {
                let pick = preconditioning_batch(rng, count, train.len())?;
                let xp = Var::constant(batch_x(train, &pick)?);
                let other = preconditioning_batch(held_rng, count, train.len())?;
                let xh = Var::constant(batch_x(train, &other)?);
                let yh: Vec<usize> = other.iter().map(|&i| labels[i]).collect();
                Ok(Preconditioning {
                    logits: Box::new(move || net.forward(&xp)),
                    labels: pick.iter().map(|&i| labels[i]).collect(),
                    smoothing: 0.0,
                    held_out: Some(Box::new(move || {
                        loss::cross_entropy(&net.forward(&xh)?, &yh, 0.0)
                    })),
                })
            },
            (metrics, self.series, step),
        )
    }

    fn step(&mut self, idx: &[usize]) -> Result<f64> {
        let x = Var::constant(batch_x(self.train, idx)?);
        let y: Vec<usize> = idx.iter().map(|&i| self.labels[i]).collect();
        let net = self.net;
        let loss = || loss::cross_entropy(&net.forward(&x)?, &y, 0.0);
        self.training.step(&Batch {
            loss: &loss,
            head: None,
        })
    }

    fn evaluate(&mut self) -> Result<Vec<(String, f64)>> {
        let (x, labels) = &self.test;
        let acc = loss::accuracy(self.net.forward(x)?.value(), labels)?;
        Ok(vec![("test_accuracy".into(), acc)])
    }

    fn set_training(&self, on: bool) {
        set_mode(self.store, on)
    }
}

/// Trains `arm` on `train` (its labels possibly noisy) and evaluates on `test`.
pub fn train_arm(
    arm: &Arm,
    (train, test): (&Dataset, &Dataset),
    seed: u64,
    series: &str,
    quiet: bool,
    metrics: &mut Metrics,
) -> Result<ArmResult> {
    let (hyper, budget) = (&arm.hyper, &arm.budget);
    let store = ParamStore::<f32>::new();
    let net = budget.model.build(
        &store.root(),
        train.x.shape()[1],
        budget.hidden,
        &mut Rng::new(seed),
    )?;
    let mut plan = Plan::new(
        Budget::Epochs(budget.epochs),
        Batches::Shuffled {
            samples: train.len(),
            size: budget.batch,
            ragged: true,
        },
        series,
        quiet,
    );
    plan.schedule = Some(Schedule::Cosine {
        total: plan.total_steps()?,
        min_factor: 0.0,
    });
    plan.non_finite = NonFinite::Stop;
    let mut task = NoisyLabels {
        net: net.as_ref(),
        store: &store,
        training: Training::method(arm.method, store.trainable(), hyper)?,
        train,
        labels: train.labels()?.0,
        test: (Var::constant(test.x.cast::<f32>()), test.labels()?.0),
        precond_batch: hyper.precond_batch,
        precond_rng: Rng::new(seed + 2000),
        held_out_rng: Rng::new(seed + 3000),
        series,
    };
    let out = train_loop(&plan, &mut task, &mut Rng::new(seed + 1000), metrics)?;
    let training = &task.training;
    let (refreshes, refreshing) = training.refresh_time();
    let (accuracy, ms_per_step, ms_at_authors_period) = match out.diverged_at {
        Some(_) => (f64::NAN, f64::NAN, f64::NAN),
        None => (
            100.0
                * out
                    .last
                    .as_ref()
                    .map_or(Ok(f64::NAN), |e| e.get("test_accuracy"))?,
            out.ms_per_step(),
            1e3 * ((out.step_seconds - refreshing) / out.steps.max(1) as f64
                + refreshing / refreshes.max(1) as f64 / AUTHORS_REFRESH_PERIOD as f64),
        ),
    };
    Ok(ArmResult {
        accuracy,
        diverged_at: out.diverged_at,
        ms_per_step,
        ms_at_authors_period,
        preconditioner: training.preconditioner_summary(),
        sanitised: training.sanitised(),
        u_effect: training.u_effect(),
        store,
    })
}

/// The data every arm sees: the clean training set, the noise levels (fractions)
/// and the clean test set.
struct Data {
    clean: Dataset,
    levels: Vec<f64>,
    test: Dataset,
}

impl Data {
    /// The training set at noise `level` for `seed`: the labels flipped by a draw
    /// of that seed, the same for every arm (paired seeds), a fresh one for each
    /// seed.
    fn noisy(&self, level: f64, seed: u64) -> Result<Dataset> {
        let draw = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 77;
        Ok(self.clean.with_label_noise(level, &mut Rng::new(draw))?.0)
    }
}

/// An arm summarised over seeds, for every noise level.
struct Summary {
    /// Test accuracies, one list (over seeds) per noise level.
    accuracy: Vec<Vec<f64>>,
    ms: Vec<f64>,
    ms_authors: Vec<f64>,
    preconditioner: Option<Spread>,
    sanitised: usize,
    /// Mean ‖Ug − g‖ / ‖g‖ over the seeds at each noise level (LLQR arms).
    u_effect: Option<Vec<f64>>,
}

/// The grid setting of noise `level` (a fraction): `noise40`.
fn level_name(level: f64) -> String {
    format!("noise{:.0}", level * 100.0)
}

/// Trains `arm` on every noise level and seed, each (level, seed) one cell of
/// `grid` under `tag`; the first seed's parameters at the first level go into
/// `model`.
fn summarise(
    arm: &Arm,
    tag: &str,
    data: &Data,
    grid: &mut Grid,
    (quiet, metrics): (bool, &mut Metrics),
    model: &mut Vec<(String, AnyTensor)>,
) -> Result<Summary> {
    let first = grid.seeds()[0];
    for (level, &noise) in data.levels.iter().enumerate() {
        grid.run(tag, &level_name(noise), metrics, |seed, series, metrics| {
            let train = data.noisy(noise, seed)?;
            let r = train_arm(arm, (&train, &data.test), seed, series, quiet, metrics)?;
            if seed == first && level == 0 {
                model.extend(
                    r.store
                        .to_tensors()
                        .into_iter()
                        .map(|(n, t)| (format!("{tag}.{n}"), t)),
                );
            }
            let mut numbers = vec![
                ("accuracy".to_string(), r.accuracy),
                (
                    "diverged".to_string(),
                    f64::from(u8::from(r.diverged_at.is_some())),
                ),
                ("ms_per_step".to_string(), r.ms_per_step),
                ("ms_at_authors_period".to_string(), r.ms_at_authors_period),
                ("sanitised".to_string(), r.sanitised as f64),
            ];
            numbers.extend(Spread::fields(r.preconditioner));
            numbers.extend(r.u_effect.map(|e| ("u_effect".to_string(), e)));
            Ok(numbers)
        })?;
    }
    let mut out = Summary {
        accuracy: Vec::new(),
        ms: Vec::new(),
        ms_authors: Vec::new(),
        preconditioner: Spread::from_numbers(grid.numbers(
            tag,
            &level_name(data.levels[0]),
            first,
        )?)?,
        sanitised: 0,
        u_effect: None,
    };
    for &noise in &data.levels {
        let level = level_name(noise);
        out.accuracy.push(grid.values(tag, &level, "accuracy")?);
        let diverged = grid.values(tag, &level, "diverged")?;
        let ms = grid.values(tag, &level, "ms_per_step")?;
        let ms_authors = grid.values(tag, &level, "ms_at_authors_period")?;
        for k in 0..diverged.len() {
            if diverged[k] != 1.0 {
                out.ms.push(ms[k]);
                out.ms_authors.push(ms_authors[k]);
            }
        }
        let sanitised = grid.values(tag, &level, "sanitised")?;
        out.sanitised += sanitised.iter().filter(|v| v.is_finite()).sum::<f64>() as usize;
        if out.preconditioner.is_some() {
            let e = grid.values(tag, &level, "u_effect")?;
            let mean = e.iter().sum::<f64>() / e.len() as f64;
            out.u_effect.get_or_insert_with(Vec::new).push(mean);
        }
    }
    Ok(out)
}

fn preconditioner_cell(u: Option<Spread>) -> String {
    u.map_or("—".into(), Spread::cell)
}

/// The arms of the claim's comparisons, sized for the demo: SGD, SAM and
/// LLQR+SAM in the authors' default geometry (NGD, batch-summed Fisher) with
/// either perturbation norm (‖Ug‖₂, the U-norm).
const QUICK_ARMS: &[&str] = &["sgd", "sam", "llqr-sam-ngd-euclid", "llqr-sam-ngd-unorm"];

/// The full setting adds F-SAM, Fisher-SAM, LLQR alone, LLQR+F-SAM and the
/// Newton geometry.
const FULL_ARMS: &[&str] = &[
    "sgd",
    "sam",
    "fsam",
    "fisher-sam",
    "llqr-ngd",
    "llqr-newton",
    "llqr-sam-ngd-euclid",
    "llqr-sam-ngd-unorm",
    "llqr-sam-newton-euclid",
    "llqr-sam-newton-unorm",
    "llqr-fsam-ngd-euclid",
];

/// The options of one run.
struct Options {
    budget: Regime,
    hyper: Hyper,
    arms: Vec<Method>,
    /// Inner learning rates of the sweep table (empty: no sweep table).
    sweep: Vec<f64>,
    /// The noise levels in percent, as given (the data holds them as fractions).
    levels: Vec<f64>,
    quiet: bool,
}

impl Options {
    /// The options from the command line, checked.
    fn parse(cfg: &RunConfig) -> Result<Options> {
        cfg.check_known("llqr-sam", OPTIONS)?;
        let budget = Regime {
            epochs: cfg.opt("epochs", if cfg.quick { 12 } else { 40 })?,
            batch: cfg.opt("batch", 64usize)?,
            hidden: cfg.opt("hidden", 128usize)?,
            model: Model::parse(&cfg.opt("model", "mlp".to_string())?)?,
        };
        if budget.epochs == 0 || budget.batch == 0 || budget.hidden == 0 {
            return Err(Error::value(
                "llqr-sam",
                "--epochs, --batch and --hidden must be positive",
            ));
        }
        let hyper = Hyper {
            lr: cfg.opt("lr", 0.05)?,
            momentum: 0.9,
            weight_decay: 5e-4,
            rho: cfg.opt("rho", 0.05)?,
            fsam_sigma: 1.0,
            fsam_decay: 0.9,
            refresh_every: cfg.opt("refresh", 25usize)?,
            precond_batch: 128,
            inner_lr: cfg.opt("inner-lr", 1e-3)?,
        };
        let arms: Vec<Method> = cfg
            .opt_list(
                "arms",
                &(if cfg.quick { QUICK_ARMS } else { FULL_ARMS })
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>(),
            )?
            .iter()
            .map(|t| Method::parse(t))
            .collect::<Result<_>>()?;
        if arms.is_empty() {
            return Err(Error::value("llqr-sam", "--arms names none"));
        }
        let sweep = cfg.opt_list("inner-sweep", if cfg.quick { &[] } else { &[1e-4, 1e-2] })?;
        let levels: Vec<f64> = cfg.opt_list(
            "noise",
            if cfg.quick {
                &[0.0, 40.0, 80.0]
            } else {
                &[0.0, 20.0, 40.0, 60.0, 80.0]
            },
        )?;
        if levels.is_empty() || levels.iter().any(|p| !(0.0..100.0).contains(p)) {
            return Err(Error::value(
                "llqr-sam",
                format!("--noise: percentages in [0, 100) expected, got {levels:?}"),
            ));
        }
        Ok(Options {
            budget,
            hyper,
            arms,
            sweep,
            levels,
            quiet: cfg.quiet,
        })
    }

    /// `method` with the run's hyper-parameters and budget.
    fn arm(&self, method: Method) -> Arm {
        Arm {
            method,
            hyper: self.hyper.clone(),
            budget: self.budget.clone(),
        }
    }
}

/// A table titled `title` whose columns are `before`, one per noise level (in
/// percent) and `after`: both tables lay out the levels alike.
fn noise_table(title: &str, (before, after): (&[&str], &[&str]), levels: &[f64]) -> Table {
    let mut header: Vec<String> = before.iter().map(|s| s.to_string()).collect();
    header.extend(levels.iter().map(|p| format!("noise {p:.0} %")));
    header.extend(after.iter().map(|s| s.to_string()));
    let header_refs: Vec<&str> = header.iter().map(|s| s.as_str()).collect();
    Table::new(title, &header_refs)
}

/// Every arm at every noise level over the grid's seeds: the headline table (the
/// accuracies, the time per step against the first arm's, U's spread), with the
/// evidence of the authors' default LLQR+SAM. `source` describes the images.
fn headline(
    o: &Options,
    (data, source): (&Data, &str),
    grid: &mut Grid,
    (metrics, model): (&mut Metrics, &mut Vec<(String, AnyTensor)>),
) -> Result<Table> {
    let (budget, hyper) = (&o.budget, &o.hyper);
    let mut table = noise_table(
        &format!(
            "llqr-sam: {src}, {net}, {e} epochs, batch {b}, SGD lr {lr} cosine, momentum 0.9, wd 5e-4, ρ {rho}, T_U {tu}, inner solve 50 steps at lr {ilr} on 128 images; {n} seeds (mean ± std); clean test accuracy after training with symmetric label noise (a fresh draw per seed, shared by every arm); U's spread after the last step of the first seed at the first level, relative to its initial value 1",
            src = source,
            net = budget.model.describe(data.clean.x.shape()[1], budget.hidden),
            e = budget.epochs,
            b = budget.batch,
            lr = hyper.lr,
            rho = hyper.rho,
            tu = hyper.refresh_every,
            ilr = hyper.inner_lr,
            n = grid.seeds().len(),
        ),
        (
            &["optimiser"],
            &[
                "ms / step",
                "× SGD",
                "× SGD at T_U = 1000",
                "U entries: median [min, max], moved > 1 %",
                "‖Ug − g‖ / ‖g‖ at the last refresh, by noise level",
                "sanitised",
            ],
        ),
        &o.levels,
    );
    let mut sgd_ms = None;
    // Every arm's accuracies (per level, over seeds), for the claim's test.
    let mut accuracies: Vec<ArmAccuracies> = Vec::new();
    for &method in &o.arms {
        let mut s = summarise(
            &o.arm(method),
            &method.tag(),
            data,
            grid,
            (o.quiet, metrics),
            model,
        )?;
        accuracies.push((method, s.accuracy.clone(), s.u_effect.clone()));
        let ms = median(&mut s.ms);
        let ms_authors = median(&mut s.ms_authors);
        let base = *sgd_ms.get_or_insert(ms);
        let mut row = vec![method.name()];
        row.extend(s.accuracy.iter().map(|a| accuracy_cell(a)));
        row.extend([
            format!("{ms:.3}"),
            format!("{:.2}", ms / base),
            format!("{:.2}", ms_authors / base),
            preconditioner_cell(s.preconditioner),
            s.u_effect.as_ref().map_or("—".into(), |e| {
                e.iter()
                    .map(|v| format!("{v:.3}"))
                    .collect::<Vec<_>>()
                    .join(" / ")
            }),
            if s.preconditioner.is_some() {
                s.sanitised.to_string()
            } else {
                "—".into()
            },
        ]);
        table.row(row);
    }
    table.evidence.extend(evidence(&o.levels, &accuracies));
    Ok(table)
}

/// Below this mean ‖Ug − g‖ / ‖g‖, U moves a held-out gradient by less than 5 % of
/// its norm: LLQR+SAM is SAM with a slightly rescaled step, and its comparisons
/// test nothing about the preconditioner.
const U_IDLE: f64 = 0.05;

/// One arm's accuracies (per noise level, over seeds) and, for LLQR, U's effect
/// per level.
type ArmAccuracies = (Method, Vec<Vec<f64>>, Option<Vec<f64>>);

/// The authors' default LLQR+SAM (NGD, ‖Ug‖₂) against SGD and SAM at every noise
/// level (`levels` in percent), for those of the three that ran; a level where U
/// stayed ≈ I ([`U_IDLE`]) is reported as such, not as evidence either way.
fn evidence(levels: &[f64], accuracies: &[ArmAccuracies]) -> Vec<Evidence> {
    let of = |m: Method| accuracies.iter().find(|(a, ..)| *a == m);
    let llqr = Method::LlqrSam(Geometry::Fisher, PerturbationNorm::Euclidean);
    let mut out = Vec::new();
    if let Some((_, mine, effect)) = of(llqr) {
        for baseline in [Method::Sgd, Method::Sam] {
            let Some((_, theirs, _)) = of(baseline) else {
                continue;
            };
            for (k, p) in levels.iter().enumerate() {
                let idle = effect.as_ref().is_some_and(|e| e[k] < U_IDLE);
                out.push(Evidence {
                    claim: Claim::LlqrSam,
                    setting: format!("llqr-sam, MLP, label noise {p:.0} %"),
                    metric: "test accuracy (%)".into(),
                    better: Better::Higher,
                    method: (llqr.name(), mine[k].clone()),
                    baseline: (baseline.name(), theirs[k].clone()),
                    paired: true,
                    idle: idle.then(|| "U ≈ I here: LLQR+SAM reduces to SAM".to_string()),
                });
            }
        }
    }
    out
}

/// LLQR+SAM (NGD, ‖Ug‖₂) at each `--inner-sweep` inner learning rate, at every
/// noise level over the grid's seeds: the sweep table.
fn inner_sweep(
    o: &Options,
    data: &Data,
    grid: &mut Grid,
    (metrics, model): (&mut Metrics, &mut Vec<(String, AnyTensor)>),
) -> Result<Table> {
    let n_seeds = grid.seeds().len();
    let mut t = noise_table(
        &format!(
            "llqr-sam: a sweep of the inner solve's learning rate around the authors' 1e-3 (not used to choose the headline arms); same setting, {n_seeds} seeds"
        ),
        (
            &["optimiser", "inner lr"],
            &["U entries: median [min, max], moved > 1 %"],
        ),
        &o.levels,
    );
    let method = Method::LlqrSam(Geometry::Fisher, PerturbationNorm::Euclidean);
    for &inner_lr in &o.sweep {
        let mut arm = o.arm(method);
        arm.hyper.inner_lr = inner_lr;
        let tag = format!("{}-inner{inner_lr}", method.tag());
        let s = summarise(&arm, &tag, data, grid, (o.quiet, metrics), model)?;
        let mut row = vec![method.name(), format!("{inner_lr}")];
        row.extend(s.accuracy.iter().map(|a| accuracy_cell(a)));
        row.push(preconditioner_cell(s.preconditioner));
        t.row(row);
    }
    Ok(t)
}

/// Runs the experiment and returns its tables.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    let o = Options::parse(cfg)?;
    let images = images::load(
        cfg,
        ImageSet::Mnist,
        if cfg.quick { QUICK_SIZES } else { (0, 0) },
    )?;
    let data = Data {
        clean: images.train,
        levels: o.levels.iter().map(|p| p / 100.0).collect(),
        test: images.test,
    };
    let mut grid = Grid::new(cfg, cfg.seed_list(3, 5)?);
    let (mut metrics, mut model) = (Metrics::default(), Vec::new());
    let source = images.description.as_str();
    let mut tables = vec![headline(
        &o,
        (&data, source),
        &mut grid,
        (&mut metrics, &mut model),
    )?];
    if !o.sweep.is_empty() {
        tables.push(inner_sweep(
            &o,
            &data,
            &mut grid,
            (&mut metrics, &mut model),
        )?);
    }
    cfg.run_dir("llqr-sam")?.finish(
        "llqr-sam",
        Plot::Curves {
            title: "llqr-sam",
            metrics: &metrics,
            panels: &[("train_loss", true), ("test_accuracy", false)],
            x_label: "epoch",
        },
        model,
        tables,
    )
}

/// "mean ± std %" over the runs that finished, noting how many diverged.
fn accuracy_cell(accs: &[f64]) -> String {
    let finite: Vec<f64> = accs.iter().copied().filter(|a| a.is_finite()).collect();
    let diverged = accs.len() - finite.len();
    match (finite.is_empty(), diverged) {
        (true, _) => "diverged".into(),
        (false, 0) => mean_std(&finite, 2) + " %",
        (false, d) => format!(
            "{} % ({d} of {} diverged)",
            mean_std(&finite, 2),
            accs.len()
        ),
    }
}

/// The median of `v` (sorted in place).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}
