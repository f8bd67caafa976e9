//! `fno-burgers`: the Fourier neural operator on the Burgers benchmark, trained with
//! Adam on the relative L2 loss (the FNO paper's recipe) and, for the closed-form
//! comparison, on the squared loss with Adam, with SGD, and with the last projection
//! layer refitted in closed form every step (per-batch ridge, or the proximal
//! solution) while Adam or SGD trains the rest; across batch sizes and seeds.
//!
//! Each (function, grid point) pair is one row of the head's regression, whose width
//! is the projection's 128 features and a bias: a batch of b functions on s points
//! gives b·s rows, so at the small end (b = 1, s = 64) per-batch ridge is
//! underdetermined and only its β holds it, which is where the paper says the
//! proximal head matters. Every batch size gets the same number of epochs (full
//! batches only; `--steps` for the same number of steps), each run keeps its final
//! and its best evaluation, and λ and β are chosen per batch size on a validation split
//! of the training pairs from a log grid (reported in their own table), then every
//! arm is retrained on all training pairs over the seeds and scored on the test set.

use crate::cli::RunConfig;
use crate::data::burgers::cache::{load_or_generate, Source};
use crate::data::burgers::{convergence_check, BurgersConfig};
use crate::error::{Error, Result};
use crate::grid::Grid;
use crate::report::evidence::{Better, Claim, Evidence};
use crate::report::{Metrics, Plot, Table};
use crate::train::choice::{extensions, scored_values};
use crate::train::{
    choose, train as train_loop, Batch, Batches, Budget, Cadence, NonFinite, Plan, Task, Training,
};
use autograd::{no_grad, Var};
use nn::checkpoint::{AnyTensor, NamedTensors};
use nn::{loss, Fno, FnoConfig, Module, ParamStore};
use optim::closed_form::{ClosedFormHead, ClosedFormTrainer, HeadRule, Order, SolveForm};
use optim::{Adam, AdamConfig, Optimizer, Schedule, Sgd, SgdConfig};
use std::time::Instant;
use tensor::{Rng, Tensor};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    ("train", "training pairs, the last 20 % of them the validation split (200)"),
    ("test", "test pairs (quick 50, full 200)"),
    (
        "points",
        "grid points s of the functions (quick 64, full 128)",
    ),
    (
        "width",
        "channels in the Fourier blocks (quick 24, full 64)",
    ),
    ("modes", "kept frequencies (quick 12, full 16)"),
    (
        "epochs",
        "epochs per run, the same at every batch size (quick 2, full 100)",
    ),
    (
        "steps",
        "backbone steps per run instead, the same at every batch size (the fixed-steps view; off by default)",
    ),
    ("batches", "batch sizes in functions (quick 1,4; full 1,4,16)"),
    (
        "lr",
        "Adam learning rate, halved five times over the run (1e-3)",
    ),
    ("sgd-lr", "SGD learning rate, momentum 0.9 (0.05)"),
    (
        "lambdas",
        "grid of proximal λ (against the mean squared loss) for the validation choice (quick 0.1,1,10; full 0.01,0.1,1,10)",
    ),
    (
        "betas",
        "grid of ridge β for the validation choice (quick 1e-6,1e-4,1e-2; full 1e-8,1e-6,1e-4,1e-2)",
    ),
    ("viscosity", "ν of the equation (0.1; 0.01 is the harder setting, with --solver-points 2048 --dt 1e-4)"),
    ("solver-points", "grid of the Burgers solver (512)"),
    ("dt", "time step of the Burgers solver (1e-3)"),
];

/// The backbone optimiser under a closed-form head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backbone {
    /// Adam (weight decay 1e-4, as the FNO recipe).
    Adam,
    /// SGD with momentum 0.9.
    Sgd,
}

/// How an arm trains.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Method {
    /// Adam on the relative L2 loss (the FNO paper).
    AdamRelative,
    /// Adam on the squared loss.
    AdamSquared,
    /// SGD with momentum on the squared loss.
    SgdSquared,
    /// The backbone by `Backbone`, the last layer by per-batch ridge.
    Ridge(Backbone),
    /// The backbone by `Backbone`, the last layer by the proximal closed form.
    Proximal(Backbone),
}

impl Method {
    /// Every arm, in table order.
    pub const ALL: [Method; 7] = [
        Method::AdamRelative,
        Method::AdamSquared,
        Method::SgdSquared,
        Method::Ridge(Backbone::Adam),
        Method::Proximal(Backbone::Adam),
        Method::Ridge(Backbone::Sgd),
        Method::Proximal(Backbone::Sgd),
    ];

    fn label(self) -> String {
        let b = |b: Backbone| match b {
            Backbone::Adam => "Adam",
            Backbone::Sgd => "SGD",
        };
        match self {
            Method::AdamRelative => "Adam, relative L2 loss".into(),
            Method::AdamSquared => "Adam, squared loss".into(),
            Method::SgdSquared => "SGD, squared loss".into(),
            Method::Ridge(x) => format!("{} + per-batch ridge head", b(x)),
            Method::Proximal(x) => format!("{} + proximal head", b(x)),
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Method::AdamRelative => "adam-rel",
            Method::AdamSquared => "adam-sq",
            Method::SgdSquared => "sgd-sq",
            Method::Ridge(Backbone::Adam) => "adam-ridge",
            Method::Proximal(Backbone::Adam) => "adam-prox",
            Method::Ridge(Backbone::Sgd) => "sgd-ridge",
            Method::Proximal(Backbone::Sgd) => "sgd-prox",
        }
    }

    fn closed_form(self) -> bool {
        matches!(self, Method::Ridge(_) | Method::Proximal(_))
    }

    fn uses_sgd(self) -> bool {
        matches!(
            self,
            Method::SgdSquared | Method::Ridge(Backbone::Sgd) | Method::Proximal(Backbone::Sgd)
        )
    }
}

/// Settings shared by the arms.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The network.
    pub fno: FnoConfig,
    /// The budget of every run: the same epochs at every batch size (the
    /// paper's regime), or the same steps.
    pub budget: Budget,
    /// Adam learning rate.
    pub lr: f64,
    /// SGD learning rate.
    pub sgd_lr: f64,
    /// No progress lines.
    pub quiet: bool,
}

/// Inputs `[n, s, 1]` and targets `[n, s, 1]`, f32.
#[derive(Clone)]
pub struct Pairs {
    /// u₀.
    pub x: Tensor<f32>,
    /// u(·, T).
    pub y: Tensor<f32>,
}

impl Pairs {
    fn len(&self) -> usize {
        self.x.shape()[0]
    }

    fn rows(&self, idx: &[usize]) -> Result<(Tensor<f32>, Tensor<f32>)> {
        Ok((self.x.index_select(0, idx)?, self.y.index_select(0, idx)?))
    }
}

/// What one run produced.
pub struct ArmResult {
    /// Test relative L2 error after the last step.
    pub relative_l2: f64,
    /// The lowest test relative L2 error over the evaluations (per epoch, or
    /// every 1/8 of a step budget).
    pub best_relative_l2: f64,
    /// Wall-clock seconds of training.
    pub seconds: f64,
    /// The trained model (the closed-form head as `fno.fc2.closed_form`).
    pub tensors: NamedTensors,
}

/// Predictions of the model on `x` (in chunks, without recording).
fn predict(
    fno: &Fno<f32>,
    head: Option<&ClosedFormHead<f32>>,
    x: &Tensor<f32>,
) -> Result<Tensor<f32>> {
    let (n, s) = (x.shape()[0], x.shape()[1]);
    let mut parts = Vec::new();
    for start in (0..n).step_by(50) {
        let len = 50.min(n - start);
        let xb = Var::constant(x.narrow(0, start, len)?);
        let out = no_grad(|| match head {
            Some(h) => {
                let phi = fno.features(&xb)?;
                let p = phi.shape()[2];
                h.predict(&phi.reshape(&[len * s, p])?)?
                    .reshape(&[len, s, 1])
            }
            None => fno.forward(&xb),
        })?;
        parts.push(out.value().clone());
    }
    Ok(Tensor::cat(&parts.iter().collect::<Vec<_>>(), 0)?)
}

/// The test relative L2 error of predictions.
fn relative_error(pred: &Tensor<f32>, target: &Tensor<f32>) -> Result<f64> {
    let l = loss::relative_l2(
        &Var::constant(pred.cast::<f64>()),
        &Var::constant(target.cast::<f64>()),
    )?;
    Ok(l.item()?)
}

/// Trains one arm at one batch size and seed for `s.budget` on full batches,
/// `reg` being the head's λ (proximal) or β (ridge), ignored otherwise; scores on
/// `test`. The squared-loss arms fit the targets divided by their root mean square
/// over the training set: u(·, T) is small (≈ 0.01, viscosity has damped it), and
/// unscaled its squared-loss gradients sit at the size of Adam's ε. The relative L2
/// error is unchanged by the scale.
pub fn train_arm(
    method: Method,
    reg: f64,
    batch: usize,
    seed: u64,
    (train, test): (&Pairs, &Pairs),
    s: &Settings,
    metrics: &mut Metrics,
) -> Result<ArmResult> {
    let steps = match s.budget {
        Budget::Epochs(e) if batch > 0 => e * (train.len() / batch),
        Budget::Epochs(_) => 0,
        Budget::Steps(n) => n,
    };
    if batch == 0 || batch > train.len() || steps == 0 {
        return Err(Error::usage(format!(
                "batch {batch} of {} training pairs, {steps} steps: both must be positive, the batch no larger than the set",
                train.len(),
            ),
        ));
    }
    let store = ParamStore::<f32>::new();
    let fno = Fno::new(&store.root().sub("fno"), s.fno.clone(), &mut Rng::new(seed))?;
    let params: Vec<_> = if method.closed_form() {
        store
            .trainable()
            .into_iter()
            .filter(|p| !p.name().starts_with("fno.fc2."))
            .collect()
    } else {
        store.trainable()
    };
    let optimizer: Box<dyn Optimizer<f32>> = match method.uses_sgd() {
        true => Box::new(Sgd::new(params, SgdConfig::new(s.sgd_lr).momentum(0.9))?),
        false => Box::new(Adam::new(
            params,
            AdamConfig::adam(s.lr).weight_decay(1e-4),
        )?),
    };
    let training = if method.closed_form() {
        let rule = match method {
            Method::Ridge(_) => HeadRule::Ridge { beta: reg },
            _ => HeadRule::Proximal { lambda: reg },
        };
        Training::closed(ClosedFormTrainer {
            head: ClosedFormHead::new(s.fno.projection, 1, true, rule, SolveForm::Auto)?,
            optimizer,
            order: Order::BackboneFirst,
            buffers: Vec::new(),
        })
    } else {
        Training::plain(optimizer)
    };
    let series = if method.closed_form() {
        format!("{}/b{batch}/reg{reg:e}/seed{seed}", method.tag())
    } else {
        format!("{}/b{batch}/seed{seed}", method.tag())
    };
    let mut plan = Plan::new(
        s.budget,
        Batches::Shuffled {
            samples: train.len(),
            size: batch,
            ragged: false,
        },
        series,
        s.quiet,
    );
    // The FNO recipe halves the rate every 100 of 500 epochs: five halvings per run.
    plan.schedule = Some(Schedule::Step {
        every: (steps / 5).max(1),
        gamma: 0.5,
    });
    plan.evaluate = match s.budget {
        Budget::Epochs(_) => Cadence::Epochs(1),
        Budget::Steps(_) => Cadence::Steps((steps / 8).max(1)),
    };
    plan.best = Some(("test_relative_l2".into(), Better::Lower));
    plan.non_finite = NonFinite::Stop;
    let scale = if method == Method::AdamRelative {
        1.0
    } else {
        let y = train.y.cast::<f64>();
        1.0 / y.square().mean_all()?.item()?.sqrt().max(f64::MIN_POSITIVE)
    };
    let mut task = Operator {
        fno: &fno,
        training,
        method,
        scale,
        projection: s.fno.projection,
        train,
        test,
    };
    let start = Instant::now();
    let out = train_loop(&plan, &mut task, &mut Rng::new(seed ^ 0xf00d), metrics)?;
    let seconds = start.elapsed().as_secs_f64();
    let (relative_l2, best_relative_l2) = match (out.diverged_at, &out.last, &out.best) {
        (None, Some(last), Some(best)) => {
            (last.get("test_relative_l2")?, best.get("test_relative_l2")?)
        }
        _ => (f64::NAN, f64::NAN),
    };
    let mut tensors = store.to_tensors();
    if let Some(head) = task.training.head() {
        tensors.push((
            "fno.fc2.closed_form".into(),
            AnyTensor::from_tensor(head.weight()),
        ));
    }
    Ok(ArmResult {
        relative_l2,
        best_relative_l2,
        seconds,
        tensors,
    })
}

/// One arm's operator and update rule on the training pairs, as the trainer drives
/// them; the squared-loss arms fit the targets times `scale`.
struct Operator<'a> {
    fno: &'a Fno<f32>,
    training: Training<f32>,
    method: Method,
    scale: f64,
    projection: usize,
    train: &'a Pairs,
    test: &'a Pairs,
}

impl Task for Operator<'_> {
    fn set_lr_factor(&mut self, factor: f64) -> tensor::Result<()> {
        self.training.set_lr_factor(factor)
    }

    fn step(&mut self, idx: &[usize]) -> tensor::Result<f64> {
        let (fno, method) = (self.fno, self.method);
        let (xb, yb) = self.train.rows(idx)?;
        let yb = yb.mul_scalar(self.scale);
        let (b, pts, p) = (xb.shape()[0], xb.shape()[1], self.projection);
        let xv = Var::constant(xb);
        let loss = || {
            let out = fno.forward(&xv)?;
            let target = Var::constant(yb.clone());
            if method == Method::AdamRelative {
                loss::relative_l2(&out, &target)
            } else {
                loss::mse(&out, &target)
            }
        };
        let features = || fno.features(&xv)?.reshape(&[b * pts, p]);
        let targets = || yb.reshape(&[b * pts, 1]);
        self.training.step(&Batch {
            loss: &loss,
            head: Some((&features, &targets)),
        })
    }

    fn evaluate(&mut self) -> tensor::Result<Vec<(String, f64)>> {
        let pred =
            predict(self.fno, self.training.head(), &self.test.x)?.mul_scalar(1.0 / self.scale);
        let error = relative_error(&pred, &self.test.y)?;
        Ok(vec![("test_relative_l2".into(), error)])
    }
}

/// The options of one run.
struct Options {
    n_train: usize,
    n_test: usize,
    points: usize,
    batches: Vec<usize>,
    lambdas: Vec<f64>,
    betas: Vec<f64>,
    settings: Settings,
    data: BurgersConfig,
    quick: bool,
}

impl Options {
    /// The options from the command line, checked.
    fn parse(cfg: &RunConfig) -> Result<Options> {
        cfg.check_known("fno-burgers", OPTIONS)?;
        let q = cfg.quick;
        let (n_train, n_test) = (
            cfg.opt("train", 200)?,
            cfg.opt("test", if q { 50 } else { 200 })?,
        );
        let points = cfg.opt("points", if q { 64 } else { 128 })?;
        let mut data = BurgersConfig::new(n_train + n_test, points, 2024);
        data.viscosity = cfg.opt("viscosity", 0.1)?;
        data.solver_points = cfg.opt("solver-points", 512usize)?;
        data.dt = cfg.opt("dt", 1e-3)?;
        let o = Options {
            n_train,
            n_test,
            points,
            batches: cfg.opt_list("batches", if q { &[1, 4] } else { &[1, 4, 16] })?,
            lambdas: cfg.opt_list(
                "lambdas",
                if q {
                    &[0.1, 1.0, 10.0]
                } else {
                    &[0.01, 0.1, 1.0, 10.0]
                },
            )?,
            betas: cfg.opt_list(
                "betas",
                if q {
                    &[1e-6, 1e-4, 1e-2]
                } else {
                    &[1e-8, 1e-6, 1e-4, 1e-2]
                },
            )?,
            settings: Settings {
                fno: FnoConfig {
                    width: cfg.opt("width", if q { 24 } else { 64 })?,
                    modes: vec![cfg.opt("modes", if q { 12 } else { 16 })?],
                    ..FnoConfig::burgers()
                },
                budget: match cfg.has("steps") {
                    true if cfg.has("epochs") => {
                        return Err(Error::usage(
                            "--epochs and --steps are two budgets; give one",
                        ))
                    }
                    true => Budget::Steps(cfg.opt_positive("steps", 1)?),
                    false => Budget::Epochs(cfg.opt_positive("epochs", if q { 2 } else { 100 })?),
                },
                lr: cfg.opt("lr", 1e-3)?,
                sgd_lr: cfg.opt("sgd-lr", 0.05)?,
                quiet: cfg.quiet,
            },
            data,
            quick: q,
        };
        let n_val = o.n_val();
        if o.batches.is_empty()
            || o.batches.contains(&0)
            || n_test == 0
            || n_val == 0
            || o.batches.iter().any(|&b| b > n_train - n_val)
            || o.lambdas.is_empty()
            || o.betas.is_empty()
        {
            return Err(Error::usage(format!(
                    "needs test pairs, at least 5 training pairs (a fifth of them for validation), positive batch sizes no larger than the {} fitting pairs, and non-empty --lambdas and --betas",
                    n_train - n_val
                ),
            ));
        }
        Ok(o)
    }

    /// Validation pairs: the last fifth of the training pairs.
    fn n_val(&self) -> usize {
        self.n_train / 5
    }

    /// The grid of a closed-form head's regularisation, and its symbol.
    fn regularisation(&self, method: Method) -> (&[f64], &str) {
        match method {
            Method::Ridge(_) => (&self.betas, "β"),
            _ => (&self.lambdas, "λ"),
        }
    }
}

/// The data's splits and how they were obtained.
struct Splits {
    train: Pairs,
    fitting: Pairs,
    validation: Pairs,
    test: Pairs,
    /// The setting every title states.
    setting: String,
    /// "cached" or "generated", and the seconds it took.
    source: (&'static str, f64),
}

impl Splits {
    /// Reads the pairs from the cache under `cache_dir` or solves them.
    fn load(o: &Options, cache_dir: &std::path::Path) -> Result<Splits> {
        let (n_train, n_test, points) = (o.n_train, o.n_test, o.points);
        let started = Instant::now();
        let (data, source) = load_or_generate(&o.data, cache_dir)?;
        let seconds = started.elapsed().as_secs_f64();
        let convergence = convergence_check(&o.data, 4)?;
        let cached = source == Source::Cache;
        eprintln!(
            "fno-burgers: {} pairs on {points} points {} in {seconds:.1} s",
            n_train + n_test,
            if cached {
                "read from the cache"
            } else {
                "generated"
            }
        );
        let as_pairs = |range: std::ops::Range<usize>| -> Result<Pairs> {
            let idx: Vec<usize> = range.collect();
            let shape = [idx.len(), points, 1];
            Ok(Pairs {
                x: data
                    .initial
                    .index_select(0, &idx)?
                    .cast::<f32>()
                    .reshape(&shape)?,
                y: data
                    .fin
                    .index_select(0, &idx)?
                    .cast::<f32>()
                    .reshape(&shape)?,
            })
        };
        let (d, f) = (&o.data, &o.settings.fno);
        let n_val = o.n_val();
        Ok(Splits {
            train: as_pairs(0..n_train)?,
            fitting: as_pairs(0..n_train - n_val)?,
            validation: as_pairs(n_train - n_val..n_train)?,
            test: as_pairs(n_train..n_train + n_test)?,
            setting: format!(
                "Burgers ν = {}, T = 1, {points} points (solver {} points, dt {:e}; re-solved at twice both resolutions, 4 functions differ by {convergence:.1e} of max |u|); FNO width {}, {} modes, {} layers, head over {} features + bias; {} at every batch size, rate halved 5 times",
                d.viscosity, d.solver_points, d.dt, f.width, f.modes[0], f.layers, f.projection, match o.settings.budget {
                    Budget::Epochs(e) => format!("{e} epochs"),
                    Budget::Steps(n) => format!("{n} steps"),
                }
            ),
            source: (if cached { "cached" } else { "generated" }, seconds),
        })
    }
}

/// The chosen λ or β of each closed-form head, one per batch size.
type Chosen = Vec<(Method, Vec<f64>)>;

/// The validation choice of every closed-form head's λ or β per batch size, at
/// `seed` (each score a shared cell of `cfg`'s sweep): its table, and the chosen
/// value per batch size for each head.
fn select(cfg: &RunConfig, o: &Options, data: &Splits, seed: u64) -> Result<(Table, Chosen)> {
    let mut headers = vec!["head".to_string(), "value".to_string()];
    headers.extend(
        o.batches
            .iter()
            .map(|b| format!("batch {b} ({} rows)", b * o.points)),
    );
    let header_refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut selection = Table::new(
        &format!(
            "fno-burgers: validation relative L2 error of each λ (proximal) and β (ridge), seed {seed}, trained on {} pairs, scored on {}; {}; the lowest per column is used below; a best value at the grid's edge grows the grid by one of its steps, at most {ext} per side (— not scored), and one still at the edge is marked",
            o.n_train - o.n_val(),
            o.n_val(),
            data.setting,
            ext = extensions(o.quick),
        ),
        &header_refs,
    );
    let mut chosen = Vec::new();
    for method in Method::ALL.into_iter().filter(|m| m.closed_form()) {
        let (grid, symbol) = o.regularisation(method);
        let mut choices = Vec::with_capacity(o.batches.len());
        for &batch in &o.batches {
            choices.push(choose(grid, Better::Lower, extensions(o.quick), |reg| {
                let key = format!("choice/{}/batch{batch}/{reg:e}/seed{seed}", method.tag());
                cfg.shared_score(&key, || {
                    let pairs = (&data.fitting, &data.validation);
                    let run = train_arm(
                        method,
                        reg,
                        batch,
                        seed,
                        pairs,
                        &o.settings,
                        &mut Metrics::default(),
                    );
                    // A failed solve (a singular Gram matrix at a tiny β) disqualifies
                    // the value; anything else is a real error.
                    match run {
                        Ok(r) => Ok(r.relative_l2),
                        Err(Error::Engine(tensor::Error::Numerical { .. })) => Ok(f64::NAN),
                        Err(e) => Err(e.into()),
                    }
                })
            })?);
        }
        let failed = || {
            tensor::Error::value(
                "fno-burgers",
                format!("every {} value failed", method.label()),
            )
        };
        let best = choices
            .iter()
            .map(|c| c.best.ok_or_else(failed))
            .collect::<tensor::Result<Vec<f64>>>()?;
        for reg in scored_values(&choices) {
            let mut row = vec![method.label(), format!("{symbol} = {reg:e}")];
            row.extend(choices.iter().map(|c| match c.score(reg) {
                None => "—".into(),
                Some(e) if e.is_nan() => "solve failed".into(),
                Some(e) => format!("{e:.4}{}", c.mark(reg)),
            }));
            selection.row(row);
        }
        chosen.push((method, best));
    }
    Ok((selection, chosen))
}

/// Every arm at every batch size over the grid's seeds, the closed-form heads at
/// their `chosen` values; the first seed's models at the smallest batch go into
/// `model`.
fn run_cells(
    o: &Options,
    data: &Splits,
    chosen: &Chosen,
    grid: &mut Grid,
    (metrics, model): (&mut Metrics, &mut NamedTensors),
) -> Result<()> {
    let first = grid.seeds()[0];
    for method in Method::ALL {
        let regs = chosen.iter().find(|(m, _)| *m == method).map(|(_, r)| r);
        for (j, &batch) in o.batches.iter().enumerate() {
            let reg = regs.map_or(0.0, |r| r[j]);
            let arm = method.tag();
            grid.run(arm, &format!("b{batch}"), metrics, |seed, _, metrics| {
                let pairs = (&data.train, &data.test);
                let r = train_arm(method, reg, batch, seed, pairs, &o.settings, metrics)?;
                if seed == first && j == 0 {
                    model.extend(
                        r.tensors
                            .into_iter()
                            .map(|(n, t)| (format!("{arm}.{n}"), t)),
                    );
                }
                Ok(vec![
                    ("relative_l2".into(), r.relative_l2),
                    ("best".into(), r.best_relative_l2),
                    ("seconds".into(), r.seconds),
                ])
            })?;
        }
    }
    Ok(())
}

/// The table of the `which` ("last" or "best") test relative L2 error per arm and
/// batch size, the closed-form heads' chosen values in brackets.
fn results_table(
    o: &Options,
    data: &Splits,
    chosen: &Chosen,
    grid: &Grid,
    which: &str,
) -> Result<Table> {
    let mut headers = vec!["training".to_string()];
    headers.extend(o.batches.iter().map(|b| format!("batch {b}")));
    headers.push("seconds / run, by batch".into());
    let header_refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let (what, name) = match which {
        "last" => ("test relative L2 error after the last step", "relative_l2"),
        _ => ("lowest test relative L2 error over the run's evaluations (test-chosen, so optimistic; the same runs)", "best"),
    };
    let mut table = Table::new(
        &format!(
            "fno-burgers: {what} (mean ± sd over {} seeds), {} train / {} test pairs; {}; closed-form heads at their validation-chosen λ or β (in brackets); data {} ({:.1} s)",
            grid.seeds().len(), o.n_train, o.n_test, data.setting, data.source.0, data.source.1,
        ),
        &header_refs,
    );
    for method in Method::ALL {
        let regs = chosen.iter().find(|(m, _)| *m == method).map(|(_, r)| r);
        let (mut row, mut seconds) = (vec![method.label()], Vec::new());
        for (j, &batch) in o.batches.iter().enumerate() {
            let (arm, at) = (method.tag(), format!("b{batch}"));
            let cell = grid.mean_std(arm, &at, name, 4)?;
            row.push(match regs {
                Some(r) => format!("{cell} ({:e})", r[j]),
                None => cell,
            });
            let secs = grid.values(arm, &at, "seconds")?;
            seconds.push(format!(
                "{:.1}",
                secs.iter().sum::<f64>() / secs.len() as f64
            ));
        }
        row.push(seconds.join(" / "));
        table.row(row);
    }
    Ok(table)
}

/// The proximal head against the same backbone's squared-loss training and its
/// per-batch ridge head, at the smallest batch.
fn evidence(o: &Options, grid: &Grid) -> Result<Vec<Evidence>> {
    let smallest = format!("b{}", o.batches[0]);
    let mut evidence = Vec::new();
    for (backbone, plain) in [
        (Backbone::Adam, Method::AdamSquared),
        (Backbone::Sgd, Method::SgdSquared),
    ] {
        for baseline in [plain, Method::Ridge(backbone)] {
            let proximal = Method::Proximal(backbone);
            evidence.push(Evidence {
                claim: Claim::ClosedForm,
                setting: format!("fno-burgers, batch {}", o.batches[0]),
                metric: "test relative L2".into(),
                better: Better::Lower,
                method: (
                    proximal.label(),
                    grid.values(proximal.tag(), &smallest, "relative_l2")?,
                ),
                baseline: (
                    baseline.label(),
                    grid.values(baseline.tag(), &smallest, "relative_l2")?,
                ),
                paired: true,
                idle: None,
            });
        }
    }
    Ok(evidence)
}

/// Runs the experiment and returns its tables.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    let o = Options::parse(cfg)?;
    let cache_dir = cfg.data.clone().unwrap_or_else(|| cfg.out.join("cache"));
    let data = Splits::load(&o, &cache_dir)?;
    let seeds = cfg.seed_list(3, 10)?;
    let (selection, chosen) = select(cfg, &o, &data, seeds[0])?;
    let mut grid = Grid::new(cfg, seeds);
    let (mut metrics, mut model) = (Metrics::default(), Vec::new());
    run_cells(&o, &data, &chosen, &mut grid, (&mut metrics, &mut model))?;
    let mut table = results_table(&o, &data, &chosen, &grid, "last")?;
    table.evidence = evidence(&o, &grid)?;
    let best = results_table(&o, &data, &chosen, &grid, "best")?;
    Ok(cfg.run_dir("fno-burgers")?.finish(
        "fno-burgers",
        Plot::Curves {
            title: "fno-burgers",
            metrics: &metrics,
            panels: &[("train_loss", true), ("test_relative_l2", true)],
            x_label: match o.settings.budget {
                Budget::Epochs(_) => "epoch",
                Budget::Steps(_) => "step",
            },
        },
        model,
        vec![table, best, selection],
    )?)
}
