//! `llqr-sam`: images (real MNIST by default, see [`crate::experiments::images`])
//! with an MLP or a small CNN, trained by every optimiser of the comparison over
//! paired seeds at several levels of symmetric label noise, long enough that the
//! arms memorise the noisy labels (robustness to label noise is resistance to
//! memorisation). The SAM radius ρ is chosen per perturbing arm and noise level on
//! a validation split; U is refreshed as many times per run as in the authors'
//! CIFAR runs. Reported: the clean test accuracy after the last epoch and at the
//! best epoch, the final training loss, wall-clock per step (with this run's
//! refreshes, and amortised at the authors' period), U's spread and U's effect on a
//! held-out gradient.

use super::network::Model;
use crate::cli::RunConfig;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::experiments::images::{self, ImageSet};
use crate::grid::Grid;
use crate::report::evidence::{Better, Claim, Evidence};
use crate::report::{mean_std, median, Metrics, Plot, Table};
use crate::train::choice::{choose, extensions, scored_values, Choice};
use crate::train::set_mode;
use crate::train::{
    batch_x, preconditioning_batch, train as train_loop, Batch, Batches, Budget, Hyper, Method,
    NonFinite, Plan, Preconditioning, Spread, Task, Training, CONVERGED_DAMPING,
};
use autograd::Var;
use nn::checkpoint::AnyTensor;
use nn::{loss, Module, ParamStore};
use optim::llqr::{Geometry, PerturbationNorm};
use optim::Schedule;
use tensor::Rng;

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    (
        "epochs",
        "passes over the training set (quick 60, full 100): every arm reaches memorisation of the noisy labels",
    ),
    ("batch", "mini-batch size (128, the authors' CIFAR batch)"),
    ("hidden", "hidden width of the MLP d-h-h-10; the CNN has h/16 and h/8 channels (128)"),
    ("model", "mlp or cnn (mlp)"),
    ("lr", "outer SGD learning rate, cosine to 0 (0.05)"),
    (
        "rhos",
        "SAM radii ρ, chosen per perturbing arm and noise level on a validation split (quick 0.1, the authors' CIFAR default, used as given; full 0.05,0.1,0.2,0.5); a single value is used as given",
    ),
    (
        "converged-lrs",
        "outer learning rates the converged-diagonal arm (llqr-sam-converged-*, an upper bound outside the authors' method, at SAM's ρ) chooses from on validation (0.0125,0.05,0.2,0.8: U = δ/(diag F̄ + δ) leaves a flat coordinate SGD's step and shrinks a stiff one); a single value is used as given",
    ),
    (
        "converged-damping",
        "the converged-diagonal arm's damping δ as a fraction of the mean diagonal Fisher, tr F̄/P (0.001)",
    ),
    (
        "validation",
        "fraction of the training images held out to choose ρ and the converged arm's learning rate (0.1); the choice trains on the rest",
    ),
    (
        "validation-labels",
        "clean or noisy: the labels the validation split scores against (clean)",
    ),
    (
        "noise",
        "percentages of training labels flipped symmetrically, one column each (quick 80; full 0,40,80)",
    ),
    (
        "arms",
        "optimisers by tag, comma-separated (quick: sgd,sam,llqr-sam-ngd-euclid; full adds llqr-ngd and llqr-sam-ngd-unorm; also fsam, fisher-sam, the newton and ngd-mean geometries, llqr-fsam-* and the upper bound llqr-sam-converged-euclid / -unorm, which needs sam)",
    ),
    (
        "refreshes",
        "LLQR: refreshes of U per run, spread evenly over its steps (78, as in the authors' CIFAR runs: 200 epochs × 391 steps at T_U = 1000)",
    ),
    ("refresh", "LLQR: steps between refreshes (T_U); overrides --refreshes"),
    (
        "inner-lr",
        "LLQR: learning rate of the inner solve (1e-3, the authors')",
    ),
    (
        "inner-sweep",
        "inner learning rates of a sweep table for LLQR+SAM (NGD, ‖Ug‖₂), comma-separated (none)",
    ),
    images::OPTIONS[0],
    images::OPTIONS[1],
    images::OPTIONS[2],
];

/// The authors' refresh period T_U (their `update_preconditioner_every` on CIFAR).
pub const AUTHORS_REFRESH_PERIOD: usize = 1000;

/// Refreshes of U in one of the authors' CIFAR runs: 200 epochs × 391 steps at
/// [`AUTHORS_REFRESH_PERIOD`].
pub const AUTHORS_REFRESHES: usize = 78;

/// The images kept in the quick setting (train, test): enough for the noisy labels
/// to be memorised within the demo's budget.
const QUICK_SIZES: (usize, usize) = (4000, 1000);

/// The seed of the split that holds out the validation images (the same images for
/// every arm, level and seed).
const VALIDATION_SPLIT_SEED: u64 = 0x7a1;

/// What one arm produced on one seed.
pub struct ArmResult {
    /// Clean test accuracy (%) after the last epoch (NaN if training diverged).
    pub accuracy: f64,
    /// The best clean test accuracy (%) over the epochs, and its epoch.
    pub best: (f64, usize),
    /// Mean training loss of the last epoch (on the possibly noisy labels).
    pub train_loss: f64,
    /// The step at which the loss or the update became non-finite, if it did.
    pub diverged_at: Option<usize>,
    /// Milliseconds per training step, refreshes included.
    pub ms_per_step: f64,
    /// The same with the refreshes amortised at the authors' period
    /// ([`AUTHORS_REFRESH_PERIOD`]) instead of this run's.
    pub ms_at_authors_period: f64,
    /// Refreshes of U done (LLQR arms).
    pub refreshes: usize,
    /// For LLQR arms, the spread of U's entries after the last step.
    pub preconditioner: Option<Spread>,
    /// Non-finite entries of U's gradient sanitised over the run's refreshes.
    pub sanitised: usize,
    /// For LLQR arms, ‖Ug − g‖ / ‖g‖ after the last refresh, g the gradient of an
    /// independent batch of the training set.
    pub u_effect: Option<f64>,
    /// For LLQR arms, each parameter's share of ‖Ug − g‖² then, by name.
    pub u_shares: Vec<(String, f64)>,
    /// The trained parameters.
    pub store: ParamStore<f32>,
}

/// How often U is refreshed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refreshes {
    /// At most this many times per run (as close as an even period allows), spread
    /// evenly over its steps from the first.
    PerRun(usize),
    /// Every this many steps (T_U).
    Every(usize),
}

impl Refreshes {
    /// The period T_U for a run of `steps` steps.
    pub fn period(self, steps: usize) -> usize {
        match self {
            Refreshes::PerRun(n) => steps.div_ceil(n.max(1)).max(1),
            Refreshes::Every(t) => t.max(1),
        }
    }
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
    /// How often LLQR refreshes U (its `refresh_every` is set from this per run).
    pub refreshes: Refreshes,
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
    fn set_lr_factor(&mut self, factor: f64) -> tensor::Result<()> {
        self.training.set_lr_factor(factor)
    }

    fn before_step(&mut self, step: usize, metrics: &mut Metrics) -> tensor::Result<()> {
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

    fn step(&mut self, idx: &[usize]) -> tensor::Result<f64> {
        let x = Var::constant(batch_x(self.train, idx)?);
        let y: Vec<usize> = idx.iter().map(|&i| self.labels[i]).collect();
        let net = self.net;
        let loss = || loss::cross_entropy(&net.forward(&x)?, &y, 0.0);
        self.training.step(&Batch {
            loss: &loss,
            head: None,
        })
    }

    fn evaluate(&mut self) -> tensor::Result<Vec<(String, f64)>> {
        let (x, labels) = &self.test;
        let acc = loss::accuracy(self.net.forward(x)?.value(), labels)?;
        Ok(vec![("test_accuracy".into(), acc)])
    }

    fn set_training(&self, on: bool) {
        set_mode(self.store, on)
    }
}

/// Trains `arm` on `train` (its labels possibly noisy) and evaluates on `test`
/// after every epoch.
pub fn train_arm(
    arm: &Arm,
    (train, test): (&Dataset, &Dataset),
    seed: u64,
    series: &str,
    quiet: bool,
    metrics: &mut Metrics,
) -> Result<ArmResult> {
    let budget = &arm.budget;
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
    let total = plan.total_steps()?;
    plan.schedule = Some(Schedule::Cosine {
        total,
        min_factor: 0.0,
    });
    plan.best = Some(("test_accuracy".into(), Better::Higher));
    plan.non_finite = NonFinite::Stop;
    let hyper = Hyper {
        refresh_every: budget.refreshes.period(total),
        ..arm.hyper.clone()
    };
    let mut task = NoisyLabels {
        net: net.as_ref(),
        store: &store,
        training: Training::method(arm.method, store.trainable(), &hyper)?,
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
    let percent = |e: Option<&crate::train::Evaluation>| -> Result<f64> {
        Ok(100.0 * e.map_or(Ok(f64::NAN), |e| e.get("test_accuracy"))?)
    };
    let finished = out.diverged_at.is_none();
    let nan_unless = |v: f64| if finished { v } else { f64::NAN };
    Ok(ArmResult {
        accuracy: nan_unless(percent(out.last.as_ref())?),
        best: (
            nan_unless(percent(out.best.as_ref())?),
            out.best.as_ref().map_or(0, |e| e.at),
        ),
        train_loss: nan_unless(out.train_loss),
        diverged_at: out.diverged_at,
        ms_per_step: nan_unless(out.ms_per_step()),
        ms_at_authors_period: nan_unless(
            1e3 * ((out.step_seconds - refreshing) / out.steps.max(1) as f64
                + refreshing / refreshes.max(1) as f64 / AUTHORS_REFRESH_PERIOD as f64),
        ),
        refreshes,
        preconditioner: training.preconditioner_summary(),
        sanitised: training.sanitised(),
        u_effect: training.u_effect().map(|e| e.ratio),
        u_shares: training.u_effect().map_or(Vec::new(), |e| {
            e.names
                .iter()
                .cloned()
                .zip(e.shares.iter().copied())
                .collect()
        }),
        store,
    })
}

/// The labels the validation split scores against when ρ is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ValidationLabels {
    /// The clean labels of the held-out images: a small trusted set, as much of the
    /// label-noise literature assumes. With symmetric noise at rate p over K
    /// classes, accuracy against noisy labels is p/(K−1) + (1 − p − p/(K−1))·(clean
    /// accuracy) in expectation: unbiased, but at 80 % noise on 10 classes it
    /// carries 0.11 of a clean difference, below the sampling noise of any split
    /// this data allows.
    Clean,
    /// The held-out images' labels after the same noise as the training set's.
    Noisy,
}

impl ValidationLabels {
    fn parse(s: &str) -> Result<ValidationLabels> {
        match s {
            "clean" => Ok(ValidationLabels::Clean),
            "noisy" => Ok(ValidationLabels::Noisy),
            _ => Err(Error::usage(format!(
                "--validation-labels '{s}': expected clean or noisy"
            ))),
        }
    }

    fn name(self) -> &'static str {
        match self {
            ValidationLabels::Clean => "clean",
            ValidationLabels::Noisy => "noisy",
        }
    }
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

    /// [`Data::choice_split`] at every noise level, in order.
    fn choice_splits(
        &self,
        seed: u64,
        validation: (f64, ValidationLabels),
    ) -> Result<Vec<(Dataset, Dataset)>> {
        self.levels
            .iter()
            .map(|&level| self.choice_split(level, seed, validation))
            .collect()
    }

    /// The split ρ is chosen on at noise `level` for `seed`: the noisy training
    /// set without the held-out images, and the held-out images with `labels`.
    fn choice_split(
        &self,
        level: f64,
        seed: u64,
        (fraction, labels): (f64, ValidationLabels),
    ) -> Result<(Dataset, Dataset)> {
        let split = |d: &Dataset| d.split(fraction, &mut Rng::new(VALIDATION_SPLIT_SEED));
        let (fit, noisy_held_out) = split(&self.noisy(level, seed)?)?;
        let held_out = match labels {
            ValidationLabels::Noisy => noisy_held_out,
            ValidationLabels::Clean => split(&self.clean)?.1,
        };
        Ok((fit, held_out))
    }
}

/// One validation choice per noise level from `values` (named `key` in the
/// series): `arm_at(level, value)` trained on each level's fitting split at the
/// grid's first seed and scored by its accuracy (%) on the held-out split, each
/// score a shared cell of the grid's sweep.
fn choose_per_level(
    o: &Options,
    (data, splits): (&Data, &[(Dataset, Dataset)]),
    grid: &Grid,
    (values, key): (&[f64], &str),
    arm_at: impl Fn(usize, f64) -> Arm,
) -> Result<Vec<Choice>> {
    let choices = splits
        .iter()
        .zip(&data.levels)
        .enumerate()
        .map(|(level, ((fit, held_out), &noise))| {
            choose(values, Better::Higher, o.extensions, |value| {
                let arm = arm_at(level, value);
                let series = format!(
                    "choice/{}/{}/{key}{value}",
                    arm.method.tag(),
                    level_name(noise)
                );
                let seed = grid.seeds()[0];
                grid.shared_score(&format!("{series}/seed{seed}"), || {
                    let r = train_arm(
                        &arm,
                        (fit, held_out),
                        seed,
                        &series,
                        o.quiet,
                        &mut Metrics::default(),
                    )?;
                    Ok(r.accuracy)
                })
            })
        })
        .collect::<tensor::Result<Vec<Choice>>>()?;
    Ok(choices)
}

/// What a choice table scores, for its caption: "validation accuracy (%, against
/// the clean labels of 800 held-out training images, 10 %) after training on the
/// other 7200".
fn validation_scored(
    (fraction, labels): (f64, ValidationLabels),
    splits: &[(Dataset, Dataset)],
) -> String {
    format!(
        "validation accuracy (%, against the {} labels of {} held-out training images, {:.0} %) after training on the other {}",
        labels.name(),
        splits[0].1.len(),
        fraction * 100.0,
        splits[0].0.len()
    )
}

/// An arm summarised over seeds, for every noise level.
struct Summary {
    /// Final test accuracies, one list (over seeds) per noise level.
    accuracy: Vec<Vec<f64>>,
    /// Best-epoch test accuracies, per level over seeds.
    best: Vec<Vec<f64>>,
    /// The best epochs, per level over seeds.
    best_epoch: Vec<Vec<f64>>,
    /// Final training losses, per level over seeds.
    train_loss: Vec<Vec<f64>>,
    ms: Vec<f64>,
    ms_authors: Vec<f64>,
    /// Refreshes of U per run (the first seed's, at the first level).
    refreshes: usize,
    preconditioner: Option<Spread>,
    sanitised: usize,
    /// Mean ‖Ug − g‖ / ‖g‖ over the seeds at each noise level (LLQR arms).
    u_effect: Option<Vec<f64>>,
    /// Where U acts, per noise level: the parameter with the largest share of
    /// ‖Ug − g‖² at the first seed's last refresh, and the share (LLQR arms).
    u_where: Vec<Option<(String, f64)>>,
}

/// The prefix of a cell's numbers that hold each parameter's share of U's effect.
const U_SHARE: &str = "u_share/";

/// The parameter with the largest share of U's effect among a cell's `numbers`.
fn largest_share(numbers: &[(String, f64)]) -> Option<(String, f64)> {
    numbers
        .iter()
        .filter_map(|(k, v)| k.strip_prefix(U_SHARE).map(|name| (name, *v)))
        .filter(|(_, v)| v.is_finite())
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(name, v)| (name.to_string(), v))
}

/// The grid setting of noise `level` (a fraction): `noise40`.
fn level_name(level: f64) -> String {
    format!("noise{:.0}", level * 100.0)
}

/// Trains `arm_at(level)` on every noise level and seed, each (level, seed) one
/// cell of `grid` under `tag`; the first seed's parameters at the first level go
/// into `model`.
fn summarise(
    arm_at: impl Fn(usize) -> Arm,
    tag: &str,
    data: &Data,
    grid: &mut Grid,
    (quiet, metrics): (bool, &mut Metrics),
    model: &mut Vec<(String, AnyTensor)>,
) -> Result<Summary> {
    let first = grid.seeds()[0];
    for (level, &noise) in data.levels.iter().enumerate() {
        let arm = arm_at(level);
        grid.run(tag, &level_name(noise), metrics, |seed, series, metrics| {
            let train = data.noisy(noise, seed)?;
            let r = train_arm(&arm, (&train, &data.test), seed, series, quiet, metrics)?;
            if seed == first && level == 0 {
                model.extend(
                    r.store
                        .to_tensors()
                        .into_iter()
                        .map(|(n, t)| (format!("{tag}.{n}"), t)),
                );
            }
            let mut numbers = vec![
                ("rho".to_string(), arm.hyper.rho),
                ("accuracy".to_string(), r.accuracy),
                ("best_accuracy".to_string(), r.best.0),
                ("best_epoch".to_string(), r.best.1 as f64),
                ("train_loss".to_string(), r.train_loss),
                (
                    "diverged".to_string(),
                    f64::from(u8::from(r.diverged_at.is_some())),
                ),
                ("ms_per_step".to_string(), r.ms_per_step),
                ("ms_at_authors_period".to_string(), r.ms_at_authors_period),
                ("refreshes".to_string(), r.refreshes as f64),
                ("sanitised".to_string(), r.sanitised as f64),
            ];
            numbers.extend(Spread::fields(r.preconditioner));
            numbers.extend(r.u_effect.map(|e| ("u_effect".to_string(), e)));
            numbers.extend(
                r.u_shares
                    .into_iter()
                    .map(|(name, share)| (format!("{U_SHARE}{name}"), share)),
            );
            Ok(numbers)
        })?;
    }
    let first_level = level_name(data.levels[0]);
    let mut out = Summary {
        accuracy: Vec::new(),
        best: Vec::new(),
        best_epoch: Vec::new(),
        train_loss: Vec::new(),
        ms: Vec::new(),
        ms_authors: Vec::new(),
        refreshes: grid
            .values(tag, &first_level, "refreshes")?
            .first()
            .map_or(0, |&r| if r.is_finite() { r as usize } else { 0 }),
        preconditioner: Spread::from_numbers(grid.numbers(tag, &first_level, first)?)?,
        sanitised: 0,
        u_effect: None,
        u_where: Vec::new(),
    };
    for &noise in &data.levels {
        let level = level_name(noise);
        out.accuracy.push(grid.values(tag, &level, "accuracy")?);
        out.best.push(grid.values(tag, &level, "best_accuracy")?);
        out.best_epoch.push(grid.values(tag, &level, "best_epoch")?);
        out.train_loss.push(grid.values(tag, &level, "train_loss")?);
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
            let finite: Vec<f64> = e.into_iter().filter(|v| v.is_finite()).collect();
            let mean = finite.iter().sum::<f64>() / finite.len() as f64;
            out.u_effect.get_or_insert_with(Vec::new).push(mean);
        }
        out.u_where
            .push(largest_share(grid.numbers(tag, &level, first)?));
    }
    Ok(out)
}

fn preconditioner_cell(u: Option<Spread>) -> String {
    u.map_or("—".into(), Spread::cell)
}

/// The arms of the claim's comparisons, sized for the demo: SGD, SAM and
/// LLQR+SAM as the authors run it (NGD with the batch-summed Fisher, ‖Ug‖₂).
const QUICK_ARMS: &[&str] = &["sgd", "sam", "llqr-sam-ngd-euclid"];

/// The full setting adds LLQR+SAM with the U-norm (the paper's formulation) and
/// LLQR alone (the preconditioner without the perturbation).
const FULL_ARMS: &[&str] = &[
    "sgd",
    "sam",
    "llqr-ngd",
    "llqr-sam-ngd-euclid",
    "llqr-sam-ngd-unorm",
];

/// The options of one run.
struct Options {
    budget: Regime,
    hyper: Hyper,
    arms: Vec<Method>,
    /// The ρ grid (one value: used as given).
    rhos: Vec<f64>,
    /// The outer learning rates the arms that retune theirs choose from (one value:
    /// used as given).
    converged_lrs: Vec<f64>,
    /// The held-out fraction and the labels it scores against.
    validation: (f64, ValidationLabels),
    /// Steps the ρ grid may grow past an edge, per side.
    extensions: usize,
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
        let refreshes = match cfg.opt("refresh", 0usize)? {
            0 => Refreshes::PerRun(cfg.opt("refreshes", AUTHORS_REFRESHES)?),
            every => Refreshes::Every(every),
        };
        let budget = Regime {
            epochs: cfg.opt("epochs", if cfg.quick { 60 } else { 100 })?,
            batch: cfg.opt("batch", 128usize)?,
            hidden: cfg.opt("hidden", 128usize)?,
            model: Model::parse(&cfg.opt("model", "mlp".to_string())?)?,
            refreshes,
        };
        if budget.epochs == 0
            || budget.batch == 0
            || budget.hidden == 0
            || refreshes == Refreshes::PerRun(0)
        {
            return Err(Error::usage(
                "--epochs, --batch, --hidden and --refreshes must be positive",
            ));
        }
        let rhos: Vec<f64> = cfg.opt_list(
            "rhos",
            if cfg.quick {
                &[0.1]
            } else {
                &[0.05, 0.1, 0.2, 0.5]
            },
        )?;
        if rhos.is_empty()
            || rhos.iter().any(|r| !(r.is_finite() && *r > 0.0))
            || rhos.windows(2).any(|w| w[0] >= w[1])
        {
            return Err(Error::usage(format!(
                "--rhos: positive, finite, ascending radii expected, got {rhos:?}"
            )));
        }
        let fraction: f64 = cfg.opt("validation", 0.1)?;
        if !(fraction > 0.0 && fraction < 1.0) {
            return Err(Error::usage(format!(
                "--validation: a fraction in (0, 1) expected, got {fraction}"
            )));
        }
        let labels = ValidationLabels::parse(&cfg.opt("validation-labels", "clean".to_string())?)?;
        let converged_damping: f64 = cfg.opt("converged-damping", CONVERGED_DAMPING)?;
        if !(converged_damping.is_finite() && converged_damping > 0.0) {
            return Err(Error::usage(format!(
                "--converged-damping: a positive, finite fraction expected, got {converged_damping}"
            )));
        }
        let hyper = Hyper {
            lr: cfg.opt("lr", 0.05)?,
            momentum: 0.9,
            weight_decay: 5e-4,
            rho: rhos[0],
            fsam_sigma: 1.0,
            fsam_decay: 0.9,
            // Set per run from `budget.refreshes`.
            refresh_every: 1,
            precond_batch: 128,
            inner_lr: cfg.opt("inner-lr", 1e-3)?,
            converged_damping,
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
            .collect::<tensor::Result<_>>()?;
        if arms.is_empty() {
            return Err(Error::usage("--arms names none"));
        }
        if arms.iter().any(|m| m.retunes_lr()) && !arms.contains(&Method::Sam) {
            return Err(Error::usage(
                "--arms: the converged-diagonal arm runs at SAM's ρ and is compared with SAM: add sam",
            ));
        }
        let converged_lrs: Vec<f64> = cfg.opt_list("converged-lrs", &[0.0125, 0.05, 0.2, 0.8])?;
        if converged_lrs.is_empty()
            || converged_lrs.iter().any(|r| !(r.is_finite() && *r > 0.0))
            || converged_lrs.windows(2).any(|w| w[0] >= w[1])
        {
            return Err(Error::usage(format!(
                "--converged-lrs: positive, finite, ascending rates expected, got {converged_lrs:?}"
            )));
        }
        let sweep = cfg.opt_list("inner-sweep", &[])?;
        let levels: Vec<f64> = cfg.opt_list(
            "noise",
            if cfg.quick {
                &[80.0]
            } else {
                &[0.0, 40.0, 80.0]
            },
        )?;
        if levels.is_empty() || levels.iter().any(|p| !(0.0..100.0).contains(p)) {
            return Err(Error::usage(format!(
                "--noise: percentages in [0, 100) expected, got {levels:?}"
            )));
        }
        Ok(Options {
            budget,
            hyper,
            arms,
            rhos,
            converged_lrs,
            validation: (fraction, labels),
            extensions: extensions(cfg.quick),
            sweep,
            levels,
            quiet: cfg.quiet,
        })
    }

    /// `method` at radius `rho` and outer learning rate `lr` with the run's other
    /// hyper-parameters and budget.
    fn arm(&self, method: Method, rho: f64, lr: f64) -> Arm {
        Arm {
            method,
            hyper: Hyper {
                rho,
                lr,
                ..self.hyper.clone()
            },
            budget: self.budget.clone(),
        }
    }

    /// Whether ρ is chosen on validation (more than one value in the grid).
    fn chooses(&self) -> bool {
        self.rhos.len() > 1
    }
}

/// A table titled `title` whose columns are `before`, one per noise level (in
/// percent) and `after`: the tables lay out the levels alike.
fn noise_table(title: &str, (before, after): (&[&str], &[&str]), levels: &[f64]) -> Table {
    let mut header: Vec<String> = before.iter().map(|s| s.to_string()).collect();
    header.extend(levels.iter().map(|p| format!("noise {p:.0} %")));
    header.extend(after.iter().map(|s| s.to_string()));
    let header_refs: Vec<&str> = header.iter().map(|s| s.as_str()).collect();
    Table::new(title, &header_refs)
}

/// ρ per arm (in `o.arms`' order) and noise level: chosen on the validation split
/// at `grid`'s first seed for the arms that perturb when the ρ grid has several
/// values, its one value otherwise; with the table of every scored value when a
/// choice was made.
fn choose_rhos(o: &Options, data: &Data, grid: &Grid) -> Result<(Vec<Vec<f64>>, Option<Table>)> {
    let seed = grid.seeds()[0];
    let n_levels = data.levels.len();
    if !o.chooses() {
        return Ok((vec![vec![o.rhos[0]; n_levels]; o.arms.len()], None));
    }
    let splits = data.choice_splits(seed, o.validation)?;
    let mut table = noise_table(
        &format!(
            "llqr-sam: the choice of ρ — {scored} (noisy like the training set), seed {seed}, same budget as below; the best per column (←) is used below; a best ρ at the grid's edge grows the grid by one of its steps, at most {ext} per side (— not scored), and one still at the edge is marked; the test set plays no part",
            scored = validation_scored(o.validation, &splits),
            ext = o.extensions,
        ),
        (&["optimiser", "ρ"], &[]),
        &o.levels,
    );
    let mut chosen = Vec::with_capacity(o.arms.len());
    for &method in &o.arms {
        if !method.perturbs() || method.retunes_lr() {
            chosen.push(vec![0.0; n_levels]);
            continue;
        }
        let choices = choose_per_level(o, (data, &splits), grid, (&o.rhos, "rho"), |_, rho| {
            o.arm(method, rho, o.hyper.lr)
        })?;
        choice_rows(&mut table, &method.name(), &choices);
        chosen.push(chosen_values(&choices));
    }
    Ok((with_sams_rho(o, chosen), Some(table)))
}

/// One row of `table` per value scored in any of `choices` (one per noise level):
/// the arm's `name`, the value and its validation score per level.
fn choice_rows(table: &mut Table, name: &str, choices: &[Choice]) {
    for value in scored_values(choices) {
        let mut row = vec![name.to_string(), format!("{value}")];
        row.extend(choices.iter().map(|c| match c.score(value) {
            None => "—".into(),
            Some(s) if s.is_nan() => "diverged".into(),
            Some(s) => format!("{s:.2}{}", c.mark(value)),
        }));
        table.row(row);
    }
}

/// The value chosen per noise level; where every value diverged, the smallest,
/// whose row says so.
fn chosen_values(choices: &[Choice]) -> Vec<f64> {
    choices
        .iter()
        .map(|c| c.best.unwrap_or(c.scored[0].0))
        .collect()
}

/// `chosen` (ρ per arm and level) with SAM's ρ given to the arms that retune their
/// learning rate instead (the converged-diagonal arm: SAM with U the only other
/// difference).
fn with_sams_rho(o: &Options, mut chosen: Vec<Vec<f64>>) -> Vec<Vec<f64>> {
    if let Some(sam) = o.arms.iter().position(|&m| m == Method::Sam) {
        for (k, m) in o.arms.iter().enumerate() {
            if m.retunes_lr() {
                chosen[k] = chosen[sam].clone();
            }
        }
    }
    chosen
}

/// The outer learning rate per arm (in `o.arms`' order) and noise level: chosen on
/// the validation split at `grid`'s first seed, at the arm's ρ from `rhos`, for
/// the arms that retune it when `--converged-lrs` has several values; the run's
/// `--lr` for the others; with the table of every scored value when a choice was
/// made.
fn choose_lrs(
    o: &Options,
    data: &Data,
    grid: &Grid,
    rhos: &[Vec<f64>],
) -> Result<(Vec<Vec<f64>>, Option<Table>)> {
    let seed = grid.seeds()[0];
    let n_levels = data.levels.len();
    let mut chosen = vec![vec![o.hyper.lr; n_levels]; o.arms.len()];
    let retuned: Vec<usize> = (0..o.arms.len())
        .filter(|&k| o.arms[k].retunes_lr())
        .collect();
    if retuned.is_empty() {
        return Ok((chosen, None));
    }
    if o.converged_lrs.len() == 1 {
        for &k in &retuned {
            chosen[k] = vec![o.converged_lrs[0]; n_levels];
        }
        return Ok((chosen, None));
    }
    let splits = data.choice_splits(seed, o.validation)?;
    let mut table = noise_table(
        &format!(
            "llqr-sam: the choice of the converged-diagonal arm's outer learning rate (an upper bound outside the authors' method: U = δ/(diag F̄ + δ), δ = {damping}·tr F̄/P, shrinks the step on stiff coordinates) — {scored}, at SAM's ρ for the level, seed {seed}; the best per column (←) is used below; a best rate at the grid's edge grows the grid by one of its steps, at most {ext} per side, and one still at the edge is marked; the test set plays no part",
            scored = validation_scored(o.validation, &splits),
            ext = o.extensions,
            damping = o.hyper.converged_damping,
        ),
        (&["optimiser", "lr"], &[]),
        &o.levels,
    );
    for &k in &retuned {
        let method = o.arms[k];
        let choices = choose_per_level(
            o,
            (data, &splits),
            grid,
            (&o.converged_lrs, "lr"),
            |level, lr| o.arm(method, rhos[k][level], lr),
        )?;
        choice_rows(&mut table, &method.name(), &choices);
        chosen[k] = chosen_values(&choices);
    }
    Ok((chosen, Some(table)))
}

/// Every arm at every noise level over the grid's seeds, each at its `rhos`: the
/// headline table (the final accuracies, the time per step against the first
/// arm's, U's spread and effect) with the evidence of LLQR+SAM in the authors'
/// geometry, and the table of the best-epoch accuracies and final training losses.
fn headline(
    o: &Options,
    (data, source): (&Data, &str),
    (rhos, lrs): (&[Vec<f64>], &[Vec<f64>]),
    grid: &mut Grid,
    (metrics, model): (&mut Metrics, &mut Vec<(String, AnyTensor)>),
) -> Result<Vec<Table>> {
    let (budget, hyper) = (&o.budget, &o.hyper);
    let net = budget
        .model
        .describe(data.clean.x.shape()[1], budget.hidden);
    let setting = format!(
        "{source}, {net}, {e} epochs, batch {b}, SGD lr {lr} cosine, momentum 0.9, wd 5e-4, U refreshed {tu}, inner solve 50 steps at lr {ilr} on 128 images; {n} seeds (mean ± std); symmetric label noise (a fresh draw per seed, shared by every arm); clean test accuracy",
        e = budget.epochs,
        b = budget.batch,
        lr = hyper.lr,
        tu = match budget.refreshes {
            Refreshes::PerRun(k) => format!("{k} times per run"),
            Refreshes::Every(t) => format!("every {t} steps"),
        },
        ilr = hyper.inner_lr,
        n = grid.seeds().len(),
    );
    let mut table = noise_table(
        &format!(
            "llqr-sam: {setting} after the last epoch; ρ {how}; U's spread after the last step of the first seed at the first level, relative to its initial value 1; U's effect ‖Ug − g‖ / ‖g‖ on the gradient of an independent training batch after the last refresh (mean over seeds; below {U_IDLE} U ≈ I and LLQR+SAM is SAM)",
            how = if o.chooses() {
                "chosen per arm and level on validation (table above)".to_string()
            } else {
                format!("{} for every perturbing arm", o.rhos[0])
            },
        ),
        (&["optimiser", "ρ by level"], &[
            "ms / step",
            "× SGD",
            "× SGD at T_U = 1000",
            "refreshes",
            "U entries: median [min, max], moved > 1 %",
            "‖Ug − g‖ / ‖g‖ by level",
            "where U acts: largest share of ‖Ug − g‖², first seed, by level",
            "sanitised",
        ]),
        &o.levels,
    );
    let mut best_table = noise_table(
        &format!(
            "llqr-sam: {setting} at the best epoch (median best epoch in brackets), then the mean training loss of the last epoch on the noisy labels by level (ln 10 = 2.30 is chance; near 0 the noisy labels are memorised); the best epoch is picked on the test set, so it is an oracle early stop, not a result one could deploy"
        ),
        (&["optimiser"], &["final training loss by level"]),
        &o.levels,
    );
    let mut sgd_ms = None;
    let mut accuracies: Vec<ArmAccuracies> = Vec::new();
    for (k, &method) in o.arms.iter().enumerate() {
        let s = summarise(
            |level| o.arm(method, rhos[k][level], lrs[k][level]),
            &method.tag(),
            data,
            grid,
            (o.quiet, metrics),
            model,
        )?;
        accuracies.push((method, s.accuracy.clone(), s.u_effect.clone()));
        let ms = median(&s.ms);
        let ms_authors = median(&s.ms_authors);
        let base = *sgd_ms.get_or_insert(ms);
        let mut row = vec![
            method.name(),
            if method.retunes_lr() {
                format!(
                    "{} · lr {}",
                    join(&rhos[k], |r| format!("{r}")),
                    join(&lrs[k], |r| format!("{r}"))
                )
            } else if method.perturbs() {
                join(&rhos[k], |r| format!("{r}"))
            } else {
                "—".into()
            },
        ];
        row.extend(s.accuracy.iter().map(|a| accuracy_cell(a)));
        row.extend([
            format!("{ms:.3}"),
            format!("{:.2}", ms / base),
            format!("{:.2}", ms_authors / base),
            if s.preconditioner.is_some() {
                s.refreshes.to_string()
            } else {
                "—".into()
            },
            preconditioner_cell(s.preconditioner),
            s.u_effect
                .as_ref()
                .map_or("—".into(), |e| join(e, |v| format!("{v:.3}"))),
            if s.u_where.iter().any(Option::is_some) {
                join(&s.u_where, |w| {
                    w.as_ref()
                        .map_or("—".into(), |(name, share)| format!("{name} {share:.2}"))
                })
            } else {
                "—".into()
            },
            if s.preconditioner.is_some() {
                s.sanitised.to_string()
            } else {
                "—".into()
            },
        ]);
        table.row(row);
        let mut row = vec![method.name()];
        row.extend(
            s.best
                .iter()
                .zip(&s.best_epoch)
                .map(|(acc, epochs)| format!("{} ({:.0})", accuracy_cell(acc), median(epochs))),
        );
        row.push(join(&s.train_loss, |l| {
            let finite: Vec<f64> = l.iter().copied().filter(|v| v.is_finite()).collect();
            mean_std(&finite, 3)
        }));
        best_table.row(row);
    }
    table.evidence.extend(evidence(
        &o.levels,
        &format!("{net}, {} epochs", budget.epochs),
        &accuracies,
    ));
    Ok(vec![table, best_table])
}

/// `values` written by `cell`, joined by " / ".
fn join<T>(values: &[T], cell: impl Fn(&T) -> String) -> String {
    values.iter().map(cell).collect::<Vec<_>>().join(" / ")
}

/// Below this mean ‖Ug − g‖ / ‖g‖, U moves a held-out gradient by less than 5 % of
/// its norm: LLQR+SAM is SAM with a slightly rescaled step, and its comparisons
/// test nothing about the preconditioner.
const U_IDLE: f64 = 0.05;

/// One arm's accuracies (per noise level, over seeds) and, for LLQR, U's effect
/// per level.
type ArmAccuracies = (Method, Vec<Vec<f64>>, Option<Vec<f64>>);

/// LLQR+SAM in the authors' default geometry (NGD), with either perturbation norm,
/// against SGD and SAM, and the converged-diagonal upper bound against SAM, at
/// every noise level (`levels` in percent), for those that ran; a level where U
/// stayed ≈ I ([`U_IDLE`]) is reported as such, not as evidence either way.
fn evidence(levels: &[f64], net: &str, accuracies: &[ArmAccuracies]) -> Vec<Evidence> {
    let of = |m: Method| accuracies.iter().find(|(a, ..)| *a == m);
    let mut out = Vec::new();
    let pairs = [PerturbationNorm::Euclidean, PerturbationNorm::Matrix]
        .into_iter()
        .flat_map(|norm| {
            [
                (
                    Claim::LlqrSam,
                    Method::LlqrSam(Geometry::Fisher, norm),
                    &[Method::Sgd, Method::Sam][..],
                ),
                (
                    Claim::LlqrSamConverged,
                    Method::LlqrSamConverged(norm),
                    &[Method::Sam][..],
                ),
            ]
        });
    for (claim, llqr, baselines) in pairs {
        let Some((_, mine, effect)) = of(llqr) else {
            continue;
        };
        for &baseline in baselines {
            let Some((_, theirs, _)) = of(baseline) else {
                continue;
            };
            for (k, p) in levels.iter().enumerate() {
                let idle = effect.as_ref().is_some_and(|e| e[k] < U_IDLE);
                out.push(Evidence {
                    claim,
                    setting: format!("llqr-sam, {net}, label noise {p:.0} %"),
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
/// noise level over the grid's seeds, at the headline's ρ for that arm: the sweep
/// table.
fn inner_sweep(
    o: &Options,
    data: &Data,
    rhos: &[Vec<f64>],
    grid: &mut Grid,
    (metrics, model): (&mut Metrics, &mut Vec<(String, AnyTensor)>),
) -> Result<Table> {
    let n_seeds = grid.seeds().len();
    let mut t = noise_table(
        &format!(
            "llqr-sam: a sweep of the inner solve's learning rate around the authors' 1e-3 (not used to choose the headline arms); same setting, {n_seeds} seeds; final test accuracy"
        ),
        (
            &["optimiser", "inner lr"],
            &[
                "U entries: median [min, max], moved > 1 %",
                "‖Ug − g‖ / ‖g‖ by level",
            ],
        ),
        &o.levels,
    );
    let method = Method::LlqrSam(Geometry::Fisher, PerturbationNorm::Euclidean);
    let level_rhos = match o.arms.iter().position(|&m| m == method) {
        Some(k) => rhos[k].clone(),
        None => vec![o.rhos[0]; data.levels.len()],
    };
    for &inner_lr in &o.sweep {
        let arm_at = |level: usize| {
            let mut arm = o.arm(method, level_rhos[level], o.hyper.lr);
            arm.hyper.inner_lr = inner_lr;
            arm
        };
        let tag = format!("{}-inner{inner_lr}", method.tag());
        let s = summarise(arm_at, &tag, data, grid, (o.quiet, metrics), model)?;
        let mut row = vec![method.name(), format!("{inner_lr}")];
        row.extend(s.accuracy.iter().map(|a| accuracy_cell(a)));
        row.push(preconditioner_cell(s.preconditioner));
        row.push(
            s.u_effect
                .as_ref()
                .map_or("—".into(), |e| join(e, |v| format!("{v:.3}"))),
        );
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
    let (rhos, choice_table) = choose_rhos(&o, &data, &grid)?;
    let (lrs, lr_table) = choose_lrs(&o, &data, &grid, &rhos)?;
    let mut tables: Vec<Table> = choice_table.into_iter().chain(lr_table).collect();
    tables.extend(headline(
        &o,
        (&data, source),
        (&rhos, &lrs),
        &mut grid,
        (&mut metrics, &mut model),
    )?);
    if !o.sweep.is_empty() {
        tables.push(inner_sweep(
            &o,
            &data,
            &rhos,
            &mut grid,
            (&mut metrics, &mut model),
        )?);
    }
    Ok(cfg.run_dir("llqr-sam")?.finish(
        "llqr-sam",
        Plot::Curves {
            title: "llqr-sam",
            metrics: &metrics,
            panels: &[
                ("train_loss", true),
                ("test_accuracy", false),
                ("u_effect", true),
            ],
            x_label: "epoch",
        },
        model,
        tables,
    )?)
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
