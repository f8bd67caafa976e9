//! `llqr-sam`: digits with an MLP, trained by every optimiser of the comparison over
//! several seeds, on clean labels and with symmetric label noise; test accuracy on
//! the clean held-out set and wall-clock per step (LLQR's refreshes amortised).

use super::{preconditioning_batch, Hyper, Method, Stepper};
use crate::cli::RunConfig;
use crate::data::Dataset;
use crate::experiments::digits::split;
use crate::report::{mean_std, progress::Progress, Metrics, RunDir, Table};
use crate::train::batch_x;
use autograd::{no_grad, Var};
use nn::checkpoint::AnyTensor;
use nn::{loss, Activation, Mlp, Module, ParamStore};
use optim::llqr::{Geometry, PerturbationNorm};
use optim::Schedule;
use std::time::Instant;
use tensor::{Error, Result, Rng};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    ("epochs", "passes over the training set (quick 12, full 40)"),
    ("batch", "mini-batch size (64)"),
    ("hidden", "hidden width of the MLP 64-h-h-10 (128)"),
    ("lr", "outer SGD learning rate, cosine to 0 (0.05)"),
    ("rho", "SAM radius ρ for every perturbed arm (0.05)"),
    (
        "noise",
        "fraction of training labels flipped in the noisy setting (0.4)",
    ),
    ("refresh", "LLQR: steps between refreshes of U (T_U, 25)"),
    (
        "inner-lr",
        "LLQR: learning rate of the inner solve (1e-3, the authors')",
    ),
    (
        "inner-sweep",
        "inner learning rates of the second table, comma-separated, empty for none (1,10,30)",
    ),
];

/// What one arm produced on one seed.
pub struct ArmResult {
    /// Clean test accuracy (%) after the last epoch (NaN if training diverged).
    pub accuracy: f64,
    /// The step at which the loss or the update became non-finite, if it did.
    pub diverged_at: Option<usize>,
    /// Milliseconds per training step, refreshes included.
    pub ms_per_step: f64,
    /// For LLQR arms, (mean, min, max) of U's diagonal.
    pub preconditioner: Option<(f64, f64, f64)>,
    /// The trained parameters.
    pub store: ParamStore<f32>,
}

/// Training length and batching.
#[derive(Clone, Debug)]
pub struct Budget {
    /// Epochs.
    pub epochs: usize,
    /// Mini-batch size.
    pub batch: usize,
    /// Hidden width.
    pub hidden: usize,
}

/// One arm: an optimiser with its settings and budget.
#[derive(Clone, Debug)]
pub struct Arm {
    /// The optimiser.
    pub method: Method,
    /// Its hyper-parameters.
    pub hyper: Hyper,
    /// The training budget.
    pub budget: Budget,
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
    let (train_labels, _) = train.labels()?;
    let (test_labels, _) = test.labels()?;
    let store = ParamStore::<f32>::new();
    let h = budget.hidden;
    let mut rng = Rng::new(seed);
    let mlp = Mlp::new(
        &store.root().sub("mlp"),
        &[train.x.shape()[1], h, h, 10],
        Activation::Relu,
        &mut rng,
    )?;
    let mut stepper = Stepper::new(arm.method, store.trainable(), hyper)?;
    let per_epoch = train.len().div_ceil(budget.batch);
    let total = per_epoch * budget.epochs;
    let schedule = Schedule::Cosine {
        total,
        min_factor: 0.0,
    };
    let mut order = Rng::new(seed + 1000);
    let mut precond_rng = Rng::new(seed + 2000);
    let x_test = Var::constant(test.x.cast::<f32>());
    let mut progress = Progress::new(series, total, quiet);
    let (mut step, mut busy, mut accuracy) = (0, 0.0, 0.0);
    for epoch in 1..=budget.epochs {
        let mut sum = 0.0;
        for idx in train.batches(budget.batch, Some(&mut order))? {
            stepper.set_lr(hyper.lr * schedule.factor(step))?;
            let start = Instant::now();
            if let (true, Stepper::Llqr(l)) = (stepper.refresh_due(), &mut stepper) {
                let pick =
                    preconditioning_batch(&mut precond_rng, hyper.precond_batch, train.len())?;
                let xp = Var::constant(batch_x(train, &pick)?);
                let labels: Vec<usize> = pick.iter().map(|&i| train_labels[i]).collect();
                l.refresh(&|| mlp.forward(&xp), &labels)?;
            }
            let x = Var::constant(batch_x(train, &idx)?);
            let labels: Vec<usize> = idx.iter().map(|&i| train_labels[i]).collect();
            let value = match stepper.step(&|| loss::cross_entropy(&mlp.forward(&x)?, &labels, 0.0))
            {
                Err(Error::NonFinite { .. }) => {
                    return Ok(ArmResult {
                        accuracy: f64::NAN,
                        diverged_at: Some(step),
                        ms_per_step: f64::NAN,
                        preconditioner: stepper.preconditioner_summary(),
                        store,
                    })
                }
                other => other?,
            };
            busy += start.elapsed().as_secs_f64();
            sum += value;
            step += 1;
            progress.update(step, epoch, value);
        }
        metrics.push(series, epoch, "train_loss", sum / per_epoch as f64);
        store.eval();
        accuracy = no_grad(|| loss::accuracy(mlp.forward(&x_test)?.value(), test_labels))?;
        store.train();
        metrics.push(series, epoch, "test_accuracy", accuracy);
    }
    Ok(ArmResult {
        accuracy: accuracy * 100.0,
        diverged_at: None,
        ms_per_step: 1e3 * busy / total as f64,
        preconditioner: stepper.preconditioner_summary(),
        store,
    })
}

/// The data every arm sees: clean and noisy training sets, the clean test set.
struct Data {
    clean: Dataset,
    noisy: Dataset,
    test: Dataset,
}

/// An arm summarised over seeds, both label settings.
struct Summary {
    clean: Vec<f64>,
    noisy: Vec<f64>,
    ms: Vec<f64>,
    preconditioner: Option<(f64, f64, f64)>,
}

/// Trains `arm` on every seed, clean and noisy; the first clean seed's parameters go
/// into `model` under `tag`.
fn summarise(
    arm: &Arm,
    tag: &str,
    data: &Data,
    cfg: &RunConfig,
    metrics: &mut Metrics,
    model: &mut Vec<(String, AnyTensor)>,
) -> Result<Summary> {
    let seeds = cfg.seed_list(2, 5);
    let mut out = Summary {
        clean: Vec::new(),
        noisy: Vec::new(),
        ms: Vec::new(),
        preconditioner: None,
    };
    for &seed in &seeds {
        for noisy in [false, true] {
            let (train, label) = if noisy {
                (&data.noisy, "noisy")
            } else {
                (&data.clean, "clean")
            };
            let series = format!("{tag}/{label}/seed{seed}");
            let r = train_arm(arm, (train, &data.test), seed, &series, cfg.quiet, metrics)?;
            if noisy {
                &mut out.noisy
            } else {
                &mut out.clean
            }
            .push(r.accuracy);
            if r.diverged_at.is_none() {
                out.ms.push(r.ms_per_step);
            }
            if seed == seeds[0] && !noisy {
                out.preconditioner = r.preconditioner;
                model.extend(
                    r.store
                        .to_tensors()
                        .into_iter()
                        .map(|(n, t)| (format!("{tag}.{n}"), t)),
                );
            }
        }
    }
    Ok(out)
}

fn preconditioner_cell(u: Option<(f64, f64, f64)>) -> String {
    u.map_or("—".into(), |(m, lo, hi)| {
        format!("{m:.4} [{lo:.4}, {hi:.4}]")
    })
}

/// Runs the experiment and returns its tables.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    cfg.check_known("llqr-sam", OPTIONS)?;
    let budget = Budget {
        epochs: cfg.opt("epochs", if cfg.quick { 12 } else { 40 })?,
        batch: cfg.opt("batch", 64usize)?,
        hidden: cfg.opt("hidden", 128usize)?,
    };
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
    let sweep: Vec<f64> = cfg.opt_list("inner-sweep", &[1.0, 10.0, 30.0])?;
    let noise: f64 = cfg.opt("noise", 0.4)?;
    let (clean, test) = split()?;
    let (noisy, flipped) = clean.with_label_noise(noise, &mut Rng::new(77))?;
    let data = Data { clean, noisy, test };
    let seeds = cfg.seed_list(2, 5).len();
    let mut metrics = Metrics::default();
    let mut model = Vec::new();
    let mut table = Table::new(
        &format!(
            "llqr-sam: digits, MLP 64-{h}-{h}-10, {e} epochs, batch {b}, SGD lr {lr} cosine, momentum 0.9, wd 5e-4, ρ {rho}, T_U {tu}, inner solve 50 steps at lr {ilr}; {seeds} seeds; clean test accuracy after training on clean labels and with {pct:.0} % symmetric noise ({flipped} of {n} labels flipped)",
            h = budget.hidden,
            e = budget.epochs,
            b = budget.batch,
            lr = hyper.lr,
            rho = hyper.rho,
            tu = hyper.refresh_every,
            ilr = hyper.inner_lr,
            pct = noise * 100.0,
            n = data.clean.len(),
        ),
        &[
            "optimiser",
            "clean labels",
            "noisy labels",
            "ms / step",
            "× SGD",
            "U diagonal: mean [min, max]",
        ],
    );
    let mut sgd_ms = None;
    for method in Method::all() {
        let arm = Arm {
            method,
            hyper: hyper.clone(),
            budget: budget.clone(),
        };
        let mut s = summarise(&arm, &method.tag(), &data, cfg, &mut metrics, &mut model)?;
        let ms = median(&mut s.ms);
        let base = *sgd_ms.get_or_insert(ms);
        table.row(vec![
            method.name(),
            accuracy_cell(&s.clean),
            accuracy_cell(&s.noisy),
            format!("{ms:.3}"),
            format!("{:.2}", ms / base),
            preconditioner_cell(s.preconditioner),
        ]);
    }
    let mut tables = vec![table];
    if !sweep.is_empty() {
        let mut t = Table::new(
            &format!(
                "llqr-sam: the inner solve's learning rate (the authors' 1e-3 leaves U within a fraction of a percent of I at this scale); same setting, {seeds} seeds"
            ),
            &[
                "optimiser",
                "inner lr",
                "clean labels",
                "noisy labels",
                "U diagonal: mean [min, max]",
            ],
        );
        for method in [
            Method::Llqr(Geometry::Newton),
            Method::LlqrSam(Geometry::Newton, PerturbationNorm::Matrix),
        ] {
            for &inner_lr in &sweep {
                let arm = Arm {
                    method,
                    hyper: Hyper {
                        inner_lr,
                        ..hyper.clone()
                    },
                    budget: budget.clone(),
                };
                let tag = format!("{}-inner{inner_lr}", method.tag());
                let s = summarise(&arm, &tag, &data, cfg, &mut metrics, &mut model)?;
                t.row(vec![
                    method.name(),
                    format!("{inner_lr}"),
                    accuracy_cell(&s.clean),
                    accuracy_cell(&s.noisy),
                    preconditioner_cell(s.preconditioner),
                ]);
            }
        }
        tables.push(t);
    }
    let dir = RunDir::create(&cfg.out, "llqr-sam", &cfg.run_id())?;
    dir.write_metrics(
        "llqr-sam: digits MLP",
        &metrics,
        &[("train_loss", true), ("test_accuracy", false)],
        "epoch",
    )?;
    dir.write_model(model, vec![("experiment".into(), "llqr-sam".into())])?;
    dir.write_tables(&tables)?;
    eprintln!("llqr-sam: results in {}", dir.path.display());
    Ok(tables)
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
