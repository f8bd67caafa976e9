//! `fno-burgers`: the Fourier neural operator on the Burgers benchmark, trained with
//! Adam on the relative L2 loss (the FNO paper's recipe) and, for the closed-form
//! comparison, on the squared loss with Adam, with SGD, and with the last projection
//! layer refitted in closed form every step (per-batch ridge, or the proximal
//! solution) while Adam trains the rest; across batch sizes and seeds. Each
//! (function, grid point) pair is one row of the head's regression, so the solve is
//! 129 × 129 (128 features and a bias) whatever the batch.

use crate::cli::RunConfig;
use crate::data::burgers::cache::{load_or_generate, Source};
use crate::data::burgers::BurgersConfig;
use crate::report::{mean_std, progress::Progress, Metrics, RunDir, Table};
use autograd::{backward, no_grad, Var};
use nn::checkpoint::{AnyTensor, NamedTensors};
use nn::{loss, Fno, FnoConfig, Module, ParamGrads, ParamStore};
use optim::closed_form::{ClosedFormHead, ClosedFormTrainer, HeadRule, Order, SolveForm};
use optim::{Adam, AdamConfig, Optimizer, Schedule, Sgd, SgdConfig};
use std::time::Instant;
use tensor::{Error, Result, Rng, Tensor};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    ("train", "training pairs (quick 200, full 1000)"),
    ("test", "test pairs (quick 50, full 200)"),
    (
        "points",
        "grid points s of the functions (quick 128, full 256)",
    ),
    (
        "width",
        "channels in the Fourier blocks (quick 24, full 64)",
    ),
    ("modes", "kept frequencies (quick 12, full 16)"),
    ("epochs", "passes over the training set (quick 8, full 60)"),
    ("batches", "batch sizes, comma-separated (4,20,64)"),
    (
        "lr",
        "Adam learning rate, halved five times over the run (1e-3)",
    ),
    ("sgd-lr", "SGD learning rate, momentum 0.9 (0.05)"),
    (
        "lambda",
        "proximal strength λ against the mean squared loss (0.01)",
    ),
    (
        "beta",
        "per-batch ridge strength β against the mean squared loss (1e-4)",
    ),
    ("solver-points", "grid of the Burgers solver (512)"),
];

/// How an arm trains.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Method {
    /// Adam on the relative L2 loss (the FNO paper).
    AdamRelative,
    /// Adam on the squared loss.
    AdamSquared,
    /// SGD with momentum on the squared loss.
    SgdSquared,
    /// Adam on the backbone, last layer by per-batch ridge.
    Ridge,
    /// Adam on the backbone, last layer by the proximal closed form.
    Proximal,
}

impl Method {
    /// Every arm, in table order.
    pub const ALL: [Method; 5] = [
        Method::AdamRelative,
        Method::AdamSquared,
        Method::SgdSquared,
        Method::Ridge,
        Method::Proximal,
    ];

    fn label(self, s: &Settings) -> String {
        match self {
            Method::AdamRelative => "Adam, relative L2 loss".into(),
            Method::AdamSquared => "Adam, squared loss".into(),
            Method::SgdSquared => "SGD, squared loss".into(),
            Method::Ridge => format!("Adam + per-batch ridge head (β = {})", s.beta),
            Method::Proximal => format!("Adam + proximal head (λ = {})", s.lambda),
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Method::AdamRelative => "adam-rel",
            Method::AdamSquared => "adam-sq",
            Method::SgdSquared => "sgd-sq",
            Method::Ridge => "ridge",
            Method::Proximal => "prox",
        }
    }

    fn closed_form(self) -> bool {
        matches!(self, Method::Ridge | Method::Proximal)
    }
}

/// Settings shared by the arms.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The network.
    pub fno: FnoConfig,
    /// Passes over the training set.
    pub epochs: usize,
    /// Adam learning rate.
    pub lr: f64,
    /// SGD learning rate.
    pub sgd_lr: f64,
    /// Proximal λ.
    pub lambda: f64,
    /// Ridge β.
    pub beta: f64,
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

/// How an arm updates its model.
enum Training {
    /// A gradient optimiser over the whole network.
    Gradient(Box<dyn Optimizer<f32>>),
    /// An optimiser over the backbone with a closed-form last layer.
    Closed(ClosedFormTrainer<f32>),
}

/// What one run produced.
pub struct ArmResult {
    /// Test relative L2 error after the last epoch.
    pub relative_l2: f64,
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
    Tensor::cat(&parts.iter().collect::<Vec<_>>(), 0)
}

/// The test relative L2 error of predictions.
fn relative_error(pred: &Tensor<f32>, target: &Tensor<f32>) -> Result<f64> {
    let l = loss::relative_l2(
        &Var::constant(pred.cast::<f64>()),
        &Var::constant(target.cast::<f64>()),
    )?;
    l.item()
}

/// Trains one arm at one batch size and seed. The squared-loss arms fit the targets
/// divided by their root mean square over the training set: u(·, T) is small (≈ 0.01,
/// viscosity has damped it), and unscaled its squared-loss gradients sit at the size
/// of Adam's ε. The relative L2 error is unchanged by the scale.
pub fn train_arm(
    method: Method,
    batch: usize,
    seed: u64,
    (train, test): (&Pairs, &Pairs),
    s: &Settings,
    metrics: &mut Metrics,
) -> Result<ArmResult> {
    let store = ParamStore::<f32>::new();
    let mut rng = Rng::new(seed);
    let fno = Fno::new(&store.root().sub("fno"), s.fno.clone(), &mut rng)?;
    let per_epoch = train.len().div_ceil(batch);
    let total = per_epoch * s.epochs;
    // The FNO recipe halves the rate every 100 of 500 epochs: five halvings per run.
    let schedule = Schedule::Step {
        every: (total / 5).max(1),
        gamma: 0.5,
    };
    let params: Vec<_> = if method.closed_form() {
        store
            .trainable()
            .into_iter()
            .filter(|p| !p.name().starts_with("fno.fc2."))
            .collect()
    } else {
        store.trainable()
    };
    let optimizer: Box<dyn Optimizer<f32>> = match method {
        Method::SgdSquared => Box::new(Sgd::new(params, SgdConfig::new(s.sgd_lr).momentum(0.9))?),
        _ => Box::new(Adam::new(
            params,
            AdamConfig::adam(s.lr).weight_decay(1e-4),
        )?),
    };
    let base_lr = optimizer.lr();
    let mut training = if method.closed_form() {
        let rule = if method == Method::Ridge {
            HeadRule::Ridge { beta: s.beta }
        } else {
            HeadRule::Proximal { lambda: s.lambda }
        };
        Training::Closed(ClosedFormTrainer {
            head: ClosedFormHead::new(s.fno.projection, 1, true, rule, SolveForm::Auto)?,
            optimizer,
            order: Order::BackboneFirst,
            buffers: Vec::new(),
        })
    } else {
        Training::Gradient(optimizer)
    };
    let series = format!("{}/b{batch}/seed{seed}", method.tag());
    let mut progress = Progress::new(&series, total, s.quiet);
    let mut order = Rng::new(seed ^ 0xf00d);
    let start = Instant::now();
    let (mut step, mut last) = (0, f64::NAN);
    let p = s.fno.projection;
    let scale = if method == Method::AdamRelative {
        1.0
    } else {
        let y = train.y.cast::<f64>();
        1.0 / y.square().mean_all()?.item()?.sqrt().max(f64::MIN_POSITIVE)
    };
    for epoch in 1..=s.epochs {
        let mut sum = 0.0;
        let perm = order.permutation(train.len());
        let batches: Vec<&[usize]> = perm.chunks(batch).collect();
        for idx in &batches {
            let (xb, yb) = train.rows(idx)?;
            let yb = yb.mul_scalar(scale);
            let (b, pts) = (xb.shape()[0], xb.shape()[1]);
            let xv = Var::constant(xb);
            let factor = schedule.factor(step);
            let value = match &mut training {
                Training::Closed(t) => {
                    t.optimizer.set_lr(base_lr * factor)?;
                    let y_rows = yb.reshape(&[b * pts, 1])?;
                    t.step(|| fno.features(&xv)?.reshape(&[b * pts, p]), &y_rows)?
                }
                Training::Gradient(optimizer) => {
                    optimizer.set_lr(base_lr * factor)?;
                    let out = fno.forward(&xv)?;
                    let target = Var::constant(yb);
                    let l = if method == Method::AdamRelative {
                        loss::relative_l2(&out, &target)?
                    } else {
                        loss::mse(&out, &target)?
                    };
                    let g = ParamGrads::collect(optimizer.params(), &backward(&l)?);
                    optimizer.step(&g)?;
                    l.item()? as f64
                }
            };
            sum += value;
            step += 1;
            progress.update(step, epoch, value);
        }
        metrics.push(&series, epoch, "train_loss", sum / batches.len() as f64);
        let head = match &training {
            Training::Closed(t) => Some(&t.head),
            Training::Gradient(_) => None,
        };
        let pred = predict(&fno, head, &test.x)?.mul_scalar(1.0 / scale);
        last = relative_error(&pred, &test.y)?;
        metrics.push(&series, epoch, "test_relative_l2", last);
    }
    let seconds = start.elapsed().as_secs_f64();
    let mut tensors = store.to_tensors();
    if let Training::Closed(t) = &training {
        tensors.push((
            "fno.fc2.closed_form".into(),
            AnyTensor::from_tensor(t.head.weight()),
        ));
    }
    Ok(ArmResult {
        relative_l2: last,
        seconds,
        tensors,
    })
}

/// Runs the experiment and returns its table.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    cfg.check_known("fno-burgers", OPTIONS)?;
    let q = cfg.quick;
    let n_train: usize = cfg.opt("train", if q { 200 } else { 1000 })?;
    let n_test: usize = cfg.opt("test", if q { 50 } else { 200 })?;
    let points: usize = cfg.opt("points", if q { 128 } else { 256 })?;
    let batches: Vec<usize> = cfg.opt_list("batches", &[4, 20, 64])?;
    if batches.is_empty() || batches.contains(&0) || n_train == 0 || n_test == 0 {
        return Err(Error::value(
            "fno-burgers",
            "needs training and test pairs and positive batch sizes",
        ));
    }
    let s = Settings {
        fno: FnoConfig {
            width: cfg.opt("width", if q { 24 } else { 64 })?,
            modes: vec![cfg.opt("modes", if q { 12 } else { 16 })?],
            ..FnoConfig::burgers()
        },
        epochs: cfg.opt("epochs", if q { 8 } else { 60 })?,
        lr: cfg.opt("lr", 1e-3)?,
        sgd_lr: cfg.opt("sgd-lr", 0.05)?,
        lambda: cfg.opt("lambda", 0.01)?,
        beta: cfg.opt("beta", 1e-4)?,
        quiet: cfg.quiet,
    };
    let mut data_cfg = BurgersConfig::new(n_train + n_test, points, 2024);
    data_cfg.solver_points = cfg.opt("solver-points", 512usize)?;
    let cache_dir = cfg.data.clone().unwrap_or_else(|| cfg.out.join("cache"));
    let started = Instant::now();
    let (data, source) = load_or_generate(&data_cfg, &cache_dir)?;
    let data_seconds = started.elapsed().as_secs_f64();
    eprintln!(
        "fno-burgers: {} pairs on {points} points {} in {data_seconds:.1} s",
        n_train + n_test,
        if source == Source::Cache {
            "read from the cache"
        } else {
            "generated"
        }
    );
    let as_pairs = |range: std::ops::Range<usize>| -> Result<Pairs> {
        let idx: Vec<usize> = range.collect();
        let n = idx.len();
        Ok(Pairs {
            x: data
                .initial
                .index_select(0, &idx)?
                .cast::<f32>()
                .reshape(&[n, points, 1])?,
            y: data
                .fin
                .index_select(0, &idx)?
                .cast::<f32>()
                .reshape(&[n, points, 1])?,
        })
    };
    let train = as_pairs(0..n_train)?;
    let test = as_pairs(n_train..n_train + n_test)?;
    let seeds = cfg.seed_list(1, 2);
    let mut headers = vec!["training".to_string()];
    headers.extend(batches.iter().map(|b| format!("batch {b}")));
    headers.push("seconds / run, by batch".into());
    let header_refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut table = Table::new(
        &format!(
            "fno-burgers: test relative L2 error (mean ± sd over {} seeds), Burgers ν = 0.1, T = 1, {n_train} train / {n_test} test pairs on {points} points; FNO width {}, {} modes, {} layers; {} epochs, rate halved 5 times; data {} ({data_seconds:.1} s)",
            seeds.len(),
            s.fno.width,
            s.fno.modes[0],
            s.fno.layers,
            s.epochs,
            if source == Source::Cache { "cached" } else { "generated" },
        ),
        &header_refs,
    );
    let mut metrics = Metrics::default();
    let mut model = Vec::new();
    for method in Method::ALL {
        let mut row = vec![method.label(&s)];
        let mut seconds = Vec::new();
        for &batch in &batches {
            let (mut errors, mut secs) = (Vec::new(), Vec::new());
            for &seed in &seeds {
                let r = train_arm(method, batch, seed, (&train, &test), &s, &mut metrics)?;
                errors.push(r.relative_l2);
                secs.push(r.seconds);
                if seed == seeds[0] && batch == batches[0] {
                    model.extend(
                        r.tensors
                            .into_iter()
                            .map(|(n, t)| (format!("{}.{n}", method.tag()), t)),
                    );
                }
            }
            row.push(mean_std(&errors, 4));
            seconds.push(format!(
                "{:.1}",
                secs.iter().sum::<f64>() / secs.len() as f64
            ));
        }
        row.push(seconds.join(" / "));
        table.row(row);
    }
    let dir = RunDir::create(&cfg.out, "fno-burgers", &cfg.run_id())?;
    dir.write_metrics(
        "fno-burgers",
        &metrics,
        &[("train_loss", true), ("test_relative_l2", true)],
        "epoch",
    )?;
    dir.write_model(model, vec![("experiment".into(), "fno-burgers".into())])?;
    let tables = vec![table];
    dir.write_tables(&tables)?;
    eprintln!("fno-burgers: results in {}", dir.path.display());
    Ok(tables)
}
