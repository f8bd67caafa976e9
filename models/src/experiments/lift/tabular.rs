//! `lift-flow-tabular`: the convex potential flow of `lift-flow-2d` on 21-D tabular
//! data — HEPMASS with MAF's preprocessing (`--data DIR` holding the UCI files
//! `1000_train.csv` and `1000_test.csv`), or, without data, a built-in 21-D stand-in
//! whose exact log-density gives the entropy floor.
//!
//! log p(x) = log N(∇F(x)) + log det ∇²F(x) with the full 21×21 Hessian: one
//! create-graph gradient per coordinate of the map (nested autograd), then a batched
//! Cholesky log-determinant (`logdet_spd`). This is CP-Flow's brute-force log-det,
//! which its authors use for evaluation; they train with a stochastic estimator
//! (Hutchinson probes and conjugate gradients) to avoid D backward passes — at
//! D = 21 the exact form is affordable here and has no estimator variance, so it is
//! used for training too.
//!
//! The authors' tabular recipe (CP-Flow `train_tabular.py`, the lift repository's
//! `_experiments_cpflow_uci_lib.py`): width 64, 10 hidden layers, batch 1024, Adam
//! lr 1e-3 with β = (0.9, 0.99) and weight decay 1e-6, no clipping, about 300,000
//! iterations with early stopping and lr drops on plateaus, ActNorm layers around the
//! flow, the lift's readout biases from N(0, 0.5²). Here: the same width, optimiser,
//! batch (full setting) and lift start, a budget of
//! thousands of iterations, a constant learning rate, the flow-level ActNorms left
//! out (the data are already z-scored, which is what their data-dependent start
//! does), the ICNN's own ActNorms (ICNN2's, before every activation and on the
//! output) an option (`--act-norm`), and the test
//! NLL at the final iterate (the lift repository's metric), with the lift's emission
//! pinned on the whole training split. The paper's HEPMASS figures (lift 22.85,
//! softplus 443.88, PGD 27.01 nats; unverified, not in the public code) come from
//! the full budget and are not reproduced at this one.
//!
//! `--sgd-lrs` adds `lift-flow-2d`'s SGD study ([`super::shoulder`]): every
//! strategy but the width-matched one trained by plain SGD from CP-Flow's start
//! and from the shoulder start, with the escape dynamics over the training split.

use super::cells;
use super::controls::{self, MULTIPLIERS_HELP};
use super::density::{no_scores, Density};
use super::groups::Rule;
use super::shoulder::{self, StudyTables};
use super::{
    flow2d::{gradient_map, potential_scalars},
    icnn_config, Convention, Escape, Model, ShoulderTrack, Strategy,
};
use crate::cli::RunConfig;
use crate::data::gaussian::Gaussian;
use crate::data::tabular::{load_hepmass, Marginals, StandIn, TabularSplits};
use crate::error::{Error, Result};
use crate::grid::{Grid, Numbers};
use crate::report::{mean_std, Metrics, Plot, Table};
use autograd::{grad, no_grad, Var};
use nn::IcnnConfig;
use optim::lift::LiftConfig;
use tensor::{Rng, Tensor};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    ("iterations", "training iterations (quick 2000, full 3000)"),
    ("width", "ICNN width (64, the authors')"),
    ("layers", "ICNN layers (quick 4, full 10, the authors')"),
    ("batch", "batch size (quick 256, full 1024, the authors')"),
    (
        "train-size",
        "rows of the built-in stand-in's training split (quick 10000, full 50000)",
    ),
    (
        "control",
        "include the width-matched softplus control (false: at 10 layers it is about 600 wide, a hundred times a run's cost)",
    ),
    (
        "methods",
        "comma-separated subset of pgd,softplus,lift,fast (the step-size control, M chosen on the validation split),code (the learned-code lift) (all five)",
    ),
    ("multipliers", MULTIPLIERS_HELP),
    (
        "marginals",
        "the built-in stand-in's coordinates: mixed (a two-Gaussian mixture, Gumbel and logistic; default) or t3 (Student-t with ν = 3, heavy-tailed)",
    ),
    (
        "whiten",
        "train on rows whitened by the Gaussian fitted to the training split (true with mixed marginals; false, z-scored only, with t3 and on HEPMASS-like heavy tails by choice)",
    ),
    (
        "act-norm",
        "CP-Flow's ICNN2: an ActNorm before every activation and on the output, primed on one training-sized batch before the first step (false: the plain ICNN)",
    ),
    (
        "sgd-lrs",
        "the SGD study's learning rates, as in lift-flow-2d: PGD, softplus, the lift and the learned-code lift also trained by plain SGD (no clipping, as the recipe) from CP-Flow's start and from the shoulder start (latents at -4, raw weights), the rate chosen per strategy and start on the validation split, with escape dynamics and the authors' Adam from the shoulder (none by default: about 11 runs per strategy and seed)",
    ),
];

/// Rows per evaluation chunk (bounds the nested-autograd graph).
const EVAL_CHUNK: usize = 512;

/// log p(x) per row of `x` `[n, D]` under the flow with weights `w`; `train` keeps
/// the graph for a third-order backward pass. A Hessian that is not positive
/// definite (impossible for the strongly convex potential in exact arithmetic) is an
/// error naming the first such sample.
fn log_density(m: &Model, w: &[Var<f64>], x: &Tensor<f64>, train: bool) -> Result<Var<f64>> {
    let d = x.shape()[1];
    let (xv, z) = gradient_map(m, w, x)?;
    let rows = (0..d)
        .map(|j| {
            let zj = z.narrow(1, j, 1)?.sum_all()?;
            Ok(grad(&[&zj], &[&xv], None, train)?.remove(0))
        })
        .collect::<tensor::Result<Vec<_>>>()?;
    let hessian = Var::stack(&rows.iter().collect::<Vec<_>>(), 1)?;
    let log_det = hessian.logdet_spd().map_err(|e| {
        let h = hessian.value();
        let first = (0..x.shape()[0]).find(|&i| {
            h.narrow(0, i, 1)
                .and_then(|s| s.squeeze(0))
                .and_then(|s| s.cholesky())
                .is_err()
        });
        match first {
            Some(i) => tensor::Error::numerical(
                "lift-flow-tabular",
                format!("∇²F is not positive definite at sample {i} of the batch: the potential lost strong convexity ({e})"),
            ),
            None => e,
        }
    })?;
    let log_normal = z
        .square()?
        .sum(&[1], false)?
        .mul_scalar(-0.5)?
        .add_scalar(-0.5 * d as f64 * (2.0 * std::f64::consts::PI).ln())?;
    Ok(log_normal.add(&log_det)?)
}

/// The NLL of each row of `x` under the flow with fixed weights `w`, in chunks.
fn row_nlls(m: &Model, w: &[Var<f64>], x: &Tensor<f64>) -> Result<Vec<f64>> {
    let n = x.shape()[0];
    let mut rows = Vec::with_capacity(n);
    for start in (0..n).step_by(EVAL_CHUNK) {
        let len = EVAL_CHUNK.min(n - start);
        let part = log_density(m, w, &x.narrow(0, start, len)?.contiguous(), false)?;
        rows.extend(part.value().to_vec().into_iter().map(|l| -l));
    }
    Ok(rows)
}

/// Mean NLL of the rows of `x` under the flow with fixed weights `w`.
fn nll(m: &Model, w: &[Var<f64>], x: &Tensor<f64>) -> Result<f64> {
    let rows = row_nlls(m, w, x)?;
    Ok(rows.iter().sum::<f64>() / rows.len() as f64)
}

/// The 99th percentile of `values` (nearest rank): where a heavy-tailed row's
/// NLL shows that a mean can hide.
fn percentile_99(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((0.99 * v.len() as f64).ceil() as usize).clamp(1, v.len().max(1));
    v.get(rank - 1).copied().unwrap_or(f64::NAN)
}

/// The model's weights pinned on `x` (the whole training split, as the lift
/// repository evaluates), detached.
fn pinned(m: &Model, x: &Tensor<f64>) -> Result<Vec<Var<f64>>> {
    let w = no_grad(|| m.positivity.weights(x))?;
    Ok(w.iter().map(|v| v.detach()).collect())
}

/// The lift as the authors' tabular CP-Flow starts it: readout biases (the slack)
/// drawn from N(0, 0.5²) (`sigma_bh` = 0.5), body 64, 64, 96 with `pool_norm`.
fn tabular_lift() -> LiftConfig {
    LiftConfig {
        slack_init: 0.0,
        slack_std: 0.5,
        ..LiftConfig::default()
    }
}

/// One run's settings.
struct TabularRun<'a> {
    data: &'a TabularSplits,
    strategy: Strategy,
    width: usize,
    layers: usize,
    batch: usize,
    iterations: usize,
    /// ActNorm inside the ICNN, primed before the first step.
    act_norm: bool,
    /// The optimiser (the recipe's Adam, or SGD in the study).
    rule: Rule,
    /// Gain and initial values (CP-Flow's, or the shoulder start in the study).
    convention: Convention,
    /// Track every latent's shoulder membership at 100 snapshots.
    track: bool,
    seed: u64,
    quiet: bool,
}

/// What one run measured.
struct TabularResult {
    validation: f64,
    test: f64,
    /// The 99th percentile of the test rows' NLL.
    test_p99: f64,
    /// The lowest validation NLL over the evaluations (every tenth of the run).
    best_validation: f64,
    /// The test NLL at that evaluation's parameters.
    test_at_best: f64,
    /// Its iteration.
    best_iteration: usize,
    params: usize,
    skipped: usize,
    secs: f64,
    /// Share of the constrained latents on the softplus shoulder at the end.
    shoulder: f64,
    /// The escape summary of a tracked run.
    escape: Option<Escape>,
}

impl TabularRun<'_> {
    fn train(&self, metrics: &mut Metrics) -> Result<TabularResult> {
        let d = self.data.train.shape()[1];
        let mut rng = Rng::new(self.seed);
        let extra = potential_scalars();
        let icnn = IcnnConfig {
            act_norm: self.act_norm,
            ..icnn_config(d, self.width, self.layers, 0.0)
        };
        let m = Model::new(
            self.strategy,
            self.convention,
            icnn,
            &tabular_lift(),
            self.rule.clone(),
            &extra,
            &mut rng,
        )?;
        let regime = shoulder::regime(&self.rule, self.convention);
        let series = format!("{}{regime}/seed{}", self.strategy.name(), self.seed);
        let loss = |m: &Model, w: &[Var<f64>], b: &Tensor<f64>| -> tensor::Result<Var<f64>> {
            log_density(m, w, b, true)?.mean_all()?.neg()
        };
        let n = self.data.train.shape()[0];
        let bootstrap = |rng: &mut Rng| -> tensor::Result<Tensor<f64>> {
            let idx: Vec<usize> = (0..self.batch)
                .map(|_| rng.below(n as u64).map(|i| i as usize))
                .collect::<tensor::Result<_>>()?;
            self.data.train.index_select(0, &idx)
        };
        if self.act_norm {
            // CP-Flow primes its ActNorms on the first batch they see; here a batch
            // of the training size from a stream of its own, so that the training
            // batches are the same with and without ActNorm (paired runs).
            let first = bootstrap(&mut Rng::new(self.seed ^ 0xac7))?;
            let w = no_grad(|| m.positivity.weights(&first))?;
            m.net.prime_act_norm(&first, &w)?;
        }
        let mut data_rng = Rng::new(self.seed ^ 0x7ab);
        // Bootstrap batches, as the lift repository samples its tabular data.
        let step = |m: &mut Model| -> tensor::Result<f64> {
            m.step(&bootstrap(&mut data_rng)?, f64::INFINITY, &loss)
        };
        // The validation NLL every tenth of the run; the best one's parameters kept.
        let every = (self.iterations / 10).max(1);
        let mut best: Option<(f64, usize, Vec<Tensor<f64>>)> = None;
        let mut track = ShoulderTrack::default();
        let track_every = (self.iterations / 100).max(1);
        let pgd = self.strategy == Strategy::Pgd;
        let after = |m: &mut Model, it: usize, metrics: &mut Metrics| -> tensor::Result<()> {
            if self.track && (it.is_multiple_of(track_every) || it == 1) {
                let exits = track.record(m, &self.data.train, pgd)?;
                metrics.push(&series, it, "shoulder_exits", exits);
            }
            if it.is_multiple_of(every) {
                let v = nll(m, &pinned(m, &self.data.train)?, &self.data.validation)?;
                metrics.push(&series, it, "validation_nll", v);
                if best.as_ref().is_none_or(|b| v < b.0) {
                    let values = m.store.trainable().iter().map(|p| p.value()).collect();
                    best = Some((v, it, values));
                }
            }
            Ok(())
        };
        let (m, out) = Density {
            model: m,
            step: Box::new(step),
            after: Box::new(after),
            scores: no_scores(),
        }
        .train(
            self.iterations,
            self.iterations / 20,
            &series,
            self.quiet,
            metrics,
        )?;
        let shoulder = m.positivity.shoulder_occupancy(&self.data.train)?;
        let w = pinned(&m, &self.data.train)?;
        let test_rows = row_nlls(&m, &w, &self.data.test)?;
        let test = test_rows.iter().sum::<f64>() / test_rows.len() as f64;
        let validation = nll(&m, &w, &self.data.validation)?;
        let (best_validation, best_iteration, test_at_best) = match best {
            Some((v, it, values)) => {
                for (p, value) in m.store.trainable().iter().zip(values) {
                    p.set(value)?;
                }
                let at_best = nll(&m, &pinned(&m, &self.data.train)?, &self.data.test)?;
                (v, it, at_best)
            }
            None => (f64::NAN, 0, f64::NAN),
        };
        Ok(TabularResult {
            validation,
            test,
            test_p99: percentile_99(&test_rows),
            best_validation,
            test_at_best,
            best_iteration,
            params: m.size(),
            skipped: out.skipped,
            secs: out.seconds,
            shoulder,
            escape: self.track.then(|| track.escape()),
        })
    }
}

impl TabularResult {
    /// The cell's numbers, the NLLs shifted by `jacobian` back to the z-scored
    /// data's scale, with a tracked run's escape summary.
    fn numbers(&self, jacobian: f64) -> Numbers {
        let mut numbers: Numbers = vec![
            ("validation".into(), self.validation + jacobian),
            ("test".into(), self.test + jacobian),
            ("test_p99".into(), self.test_p99 + jacobian),
            ("best_validation".into(), self.best_validation + jacobian),
            ("test_at_best".into(), self.test_at_best + jacobian),
            ("best_iteration".into(), self.best_iteration as f64),
            ("params".into(), self.params as f64),
            ("skipped".into(), self.skipped as f64),
            ("secs".into(), self.secs),
            ("shoulder".into(), self.shoulder),
        ];
        if let Some(e) = &self.escape {
            numbers.extend(e.numbers());
        }
        numbers
    }
}

/// The options of one run.
struct Options {
    iterations: usize,
    width: usize,
    layers: usize,
    batch: usize,
    /// Rows of the built-in stand-in's training split.
    train_size: usize,
    /// The strategies to train, in table order (the width-matched control last).
    strategies: Vec<Strategy>,
    /// Train the step-size control at each of these M, the one chosen on
    /// validation in the table (empty: no step-size control).
    multipliers: Vec<f64>,
    /// The stand-in's marginals (without `--data`).
    marginals: Marginals,
    /// Train on rows whitened by the fitted Gaussian.
    whiten: bool,
    /// ActNorm inside the ICNN (CP-Flow's ICNN2).
    act_norm: bool,
    /// The SGD study's learning rates (empty: no study).
    sgd_lrs: Vec<f64>,
    quiet: bool,
}

impl Options {
    /// The options from the command line, checked.
    fn parse(cfg: &RunConfig) -> Result<Options> {
        cfg.check_known("lift-flow-tabular", OPTIONS)?;
        // 300 iterations leave every arm within 0.015 nats of the Gaussian start; at
        // 2,000 they separate (the quick setting's table in the README).
        let iterations = cfg.opt_positive("iterations", if cfg.quick { 2000 } else { 3000 })?;
        let width = cfg.opt_positive("width", 64)?;
        let layers = cfg.opt_positive("layers", if cfg.quick { 4 } else { 10 })?;
        let batch = cfg.opt_positive("batch", if cfg.quick { 256 } else { 1024 })?;
        let train_size = cfg.opt_positive("train-size", if cfg.quick { 10_000 } else { 50_000 })?;
        let control = cfg.opt("control", false)?;
        let marginals = match cfg.opt("marginals", "mixed".to_string())?.as_str() {
            "mixed" => Marginals::Mixed,
            "t3" => Marginals::StudentT3,
            other => {
                return Err(Error::usage(format!(
                    "--marginals must be mixed or t3, got '{other}'"
                )))
            }
        };
        if cfg.data.is_some() && cfg.has("marginals") {
            return Err(Error::usage(
                "--marginals chooses the built-in stand-in's, so it cannot go with --data",
            ));
        }
        let methods: Vec<String> = cfg.opt_list(
            "methods",
            &["pgd", "softplus", "lift", "fast", "code"].map(String::from),
        )?;
        let (mut strategies, mut fast) = (Vec::new(), false);
        for m in &methods {
            strategies.push(match m.as_str() {
                "pgd" => Strategy::Pgd,
                "softplus" => Strategy::Softplus,
                "lift" => Strategy::Lift,
                "code" => Strategy::LiftCode,
                "fast" => {
                    fast = true;
                    continue;
                }
                other => {
                    return Err(Error::usage(format!(
                        "--methods takes pgd, softplus, lift, fast and code, got '{other}'"
                    )))
                }
            });
        }
        let multipliers = if fast {
            cfg.opt_list("multipliers", controls::multipliers(cfg.quick))?
        } else {
            Vec::new()
        };
        if control {
            strategies.push(Strategy::SoftplusWide);
        }
        Ok(Options {
            iterations,
            width,
            layers,
            batch,
            train_size,
            strategies,
            multipliers,
            marginals,
            whiten: cfg.opt("whiten", marginals == Marginals::Mixed)?,
            act_norm: cfg.opt("act-norm", false)?,
            sgd_lrs: cfg.opt_list("sgd-lrs", &[])?,
            quiet: cfg.quiet,
        })
    }

    /// The run of `strategy` on `data` at `seed`.
    fn tabular<'a>(
        &self,
        data: &'a TabularSplits,
        strategy: Strategy,
        seed: u64,
    ) -> TabularRun<'a> {
        TabularRun {
            data,
            strategy,
            width: self.width,
            layers: self.layers,
            batch: self.batch,
            iterations: self.iterations,
            act_norm: self.act_norm,
            rule: Rule::Adam((shoulder::FLOW_TABULAR.adam)()),
            convention: Convention::CpFlow,
            track: false,
            seed,
            quiet: self.quiet,
        }
    }
}

/// The data the flows train on and the references their NLLs are read against.
struct Prepared {
    /// The splits (whitened with `--whiten`).
    data: TabularSplits,
    /// The exact test entropy, when the data's density is known (the stand-in).
    entropy: Option<f64>,
    /// The test NLL of the Gaussian fitted to the training split.
    gaussian: f64,
    /// ½ log det Σ when whitened (0 otherwise): added back to every flow NLL.
    jacobian: f64,
}

impl Prepared {
    /// HEPMASS from `dir`, or the built-in stand-in without one; whitened with
    /// `o.whiten`.
    fn of(dir: Option<&std::path::Path>, o: &Options) -> Result<Prepared> {
        let data = match dir {
            Some(dir) => load_hepmass(dir)?,
            None => StandIn::new(o.marginals).splits(o.train_size, 2_000, 5_000, 2026)?,
        };
        let entropy = data
            .test_log_density
            .as_ref()
            .map(|lp| -lp.iter().sum::<f64>() / lp.len() as f64);
        let fitted = Gaussian::fit(&data.train)?;
        let gaussian = fitted.nll(&data.test)?;
        // Whitening x ↦ L⁻¹(x − μ) starts every flow at the moment-matched Gaussian
        // (the identity map on whitened rows), so the budget goes to the non-Gaussian
        // structure rather than to learning a covariance through an isotropic ½c‖x‖²
        // term; densities gain the Jacobian ½ log det Σ, added back to every NLL.
        let (data, jacobian) = if o.whiten {
            (
                TabularSplits {
                    train: fitted.whiten(&data.train)?,
                    validation: fitted.whiten(&data.validation)?,
                    test: fitted.whiten(&data.test)?,
                    test_log_density: data.test_log_density.clone(),
                    description: format!("{}, whitened", data.description),
                },
                0.5 * fitted.log_det,
            )
        } else {
            (data, 0.0)
        };
        Ok(Prepared {
            data,
            entropy,
            gaussian,
            jacobian,
        })
    }
}

/// "mean ± std" of the gaps of `v` to the reference `r`, or "unknown" without one.
fn gap(v: &[f64], r: Option<f64>) -> String {
    match r {
        Some(r) => mean_std(&v.iter().map(|x| x - r).collect::<Vec<_>>(), 3),
        None => "unknown".into(),
    }
}

/// The setting as the captions state it: data, ICNN, budget, batch, seeds.
fn setting(o: &Options, p: &Prepared, seeds: usize) -> String {
    let (width, layers, iterations, batch) = (o.width, o.layers, o.iterations, o.batch);
    let d = p.data.train.shape()[1];
    let norms = if o.act_norm {
        " with ActNorm (CP-Flow's ICNN2)"
    } else {
        ""
    };
    format!(
        "{}; ICNN width {width} × {layers}{norms}, {iterations} iterations, batch {batch}, exact {d}×{d} log-det, {seeds} seeds",
        p.data.description,
    )
}

/// The table, titled with the setting, with the moment-matched Gaussian's row.
fn headline(o: &Options, p: &Prepared, seeds: usize) -> Table {
    let d = p.data.train.shape()[1];
    let setting = setting(o, p, seeds);
    let mut table = Table::new(
        &format!("lift-flow-tabular: convex potential flow, {setting}, Adam 1e-3 β₂ 0.99 wd 1e-6; NLL in nats per row of the z-scored data (mean ± std over seeds) against the exact entropy (when known) and the moment-matched Gaussian; paper on HEPMASS at ≈300k iterations (unverified): lift 22.85, softplus 443.88, PGD 27.01"),
        &[
            "method",
            "parameters",
            "validation NLL",
            "test NLL",
            "test NLL, 99th percentile of rows",
            "best validation NLL [iteration]",
            "test NLL at the best validation",
            "gap to entropy",
            "gap to the Gaussian",
            "non-finite steps skipped",
            "s / run",
        ],
    );
    table.row(vec![
        "moment-matched Gaussian".into(),
        (d + d * (d + 1) / 2).to_string(),
        "—".into(),
        format!("{:.3}", p.gaussian),
        "—".into(),
        "—".into(),
        "—".into(),
        gap(&[p.gaussian], p.entropy),
        "0".into(),
        "—".into(),
        "—".into(),
    ]);
    table
}

/// Every strategy over the grid's seeds (the step-size control at each M, the
/// one chosen on validation kept, its choice in `choice`): its row and, after
/// them, the evidence and the exact density's row (when known).
fn strategies(
    o: &Options,
    p: &Prepared,
    grid: &mut Grid,
    (table, choice_table, metrics): (&mut Table, &mut Table, &mut Metrics),
) -> Result<()> {
    let mut train = |strategy: Strategy| -> tensor::Result<Vec<f64>> {
        grid.run(&strategy.name(), "", metrics, |seed, _, metrics| {
            let out = o.tabular(&p.data, strategy, seed).train(metrics)?;
            Ok(out.numbers(p.jacobian))
        })?;
        Ok(grid.values(&strategy.name(), "", "validation")?)
    };
    let arms = if o.multipliers.is_empty() {
        for &strategy in &o.strategies {
            train(strategy)?;
        }
        o.strategies.clone()
    } else {
        let (arms, choice) =
            controls::train_with_controls(o.strategies.clone(), &o.multipliers, train)?;
        controls::choice_rows(choice_table, "21-D", &choice);
        arms
    };
    let mut by_strategy = Vec::new();
    for strategy in arms {
        let arm = strategy.name();
        let test = grid.values(&arm, "", "test")?;
        table.row(vec![
            arm.clone(),
            cells::params(grid, &arm, "")?.to_string(),
            grid.mean_std(&arm, "", "validation", 3)?,
            mean_std(&test, 3),
            grid.mean_std(&arm, "", "test_p99", 3)?,
            format!(
                "{} [{}]",
                grid.mean_std(&arm, "", "best_validation", 3)?,
                grid.mean_std(&arm, "", "best_iteration", 0)?
            ),
            grid.mean_std(&arm, "", "test_at_best", 3)?,
            gap(&test, p.entropy),
            gap(&test, Some(p.gaussian)),
            cells::skipped(grid, &arm, "")?.to_string(),
            grid.mean_std(&arm, "", "secs", 1)?,
        ]);
        by_strategy.push((strategy, test));
    }
    table.evidence = super::lift_evidence("lift-flow-tabular", "test NLL", &by_strategy);
    if let Some(h) = p.entropy {
        table.row(vec![
            "exact density (the floor)".into(),
            "—".into(),
            "—".into(),
            format!("{h:.3}"),
            "—".into(),
            "—".into(),
            "—".into(),
            "0".into(),
            format!("{:.3}", h - p.gaussian),
            "—".into(),
            "—".into(),
        ]);
    }
    Ok(())
}

/// Runs the experiment and returns its table.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    let o = Options::parse(cfg)?;
    let p = Prepared::of(cfg.data.as_deref(), &o)?;
    let seeds = cfg.seed_list(3, 3)?;
    let mut table = headline(&o, &p, seeds.len());
    let mut grid = Grid::new(cfg, seeds);
    let mut metrics = Metrics::default();
    let mut choice = controls::choice_table(
        "lift-flow-tabular",
        &format!(
            "{} iterations, batch {}, ICNN width {} × {}, {} seeds, the validation split",
            o.iterations,
            o.batch,
            o.width,
            o.layers,
            grid.seeds().len()
        ),
    );
    strategies(&o, &p, &mut grid, (&mut table, &mut choice, &mut metrics))?;
    let mut tables = vec![table];
    if !o.multipliers.is_empty() {
        tables.push(choice);
    }
    if !o.sgd_lrs.is_empty() {
        let seeds = grid.seeds().len();
        let mut study = StudyTables::new(shoulder::FLOW_TABULAR, &setting(&o, &p, seeds));
        let mut run = |strategy, rule: &Rule, convention, seed, m: &mut Metrics| {
            let run = TabularRun {
                rule: rule.clone(),
                convention,
                track: true,
                ..o.tabular(&p.data, strategy, seed)
            };
            Ok(run.train(m)?.numbers(p.jacobian))
        };
        let start = ("21-D", Convention::CpFlow);
        shoulder::run_target(
            start,
            &o.sgd_lrs,
            &mut grid,
            &mut run,
            (&mut study, &mut metrics),
        )?;
        tables.extend([study.table, study.choice]);
    }
    Ok(cfg.run_dir("lift-flow-tabular")?.finish(
        "lift-flow-tabular",
        Plot::Curves {
            title: "lift-flow-tabular: training NLL",
            metrics: &metrics,
            panels: &[("train_loss", false)],
            x_label: "iteration",
        },
        Vec::new(),
        tables,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::tabular::STAND_IN_DIM;
    use optim::AdamConfig;

    #[test]
    fn the_log_det_is_the_exact_hessian_log_det() {
        // At D = 3 the nested-autograd log-det equals the log-det of a central
        // finite-difference Jacobian of the map ∇F (which is symmetric).
        let mut rng = Rng::new(3);
        let m = Model::new(
            Strategy::Softplus,
            Convention::CpFlow,
            icnn_config(3, 8, 3, 0.0),
            &LiftConfig::default(),
            Rule::Adam(AdamConfig::adam(1e-3)),
            &[("flow.scale", 3.0), ("flow.quad", -2.0)],
            &mut rng,
        )
        .unwrap();
        let w = m
            .positivity
            .weights(&Tensor::zeros(&[1, 3]).unwrap())
            .unwrap();
        let x = Tensor::from_vec(vec![0.3, -0.7, 1.1, -1.5, 0.2, 0.4], &[2, 3]).unwrap();
        let got = log_density(&m, &w, &x, false).unwrap().value().to_vec();
        let map = |p: &[f64]| -> Vec<f64> {
            let t = Tensor::from_vec(p.to_vec(), &[1, 3]).unwrap();
            gradient_map(&m, &w, &t).unwrap().1.value().to_vec()
        };
        for (i, row) in x.to_vec().chunks(3).enumerate() {
            let h = 1e-5;
            let mut jac = vec![0.0; 9];
            for k in 0..3 {
                let (mut a, mut b) = (row.to_vec(), row.to_vec());
                a[k] += h;
                b[k] -= h;
                let (fa, fb) = (map(&a), map(&b));
                for j in 0..3 {
                    jac[j * 3 + k] = (fa[j] - fb[j]) / (2.0 * h);
                }
            }
            let logdet = Tensor::from_vec(jac, &[3, 3])
                .unwrap()
                .logdet_spd()
                .unwrap()
                .item()
                .unwrap();
            let z = map(row);
            let log_n: f64 = -0.5 * z.iter().map(|v| v * v).sum::<f64>()
                - 1.5 * (2.0 * std::f64::consts::PI).ln();
            assert!(
                (got[i] - (log_n + logdet)).abs() < 1e-7,
                "{} vs {}",
                got[i],
                log_n + logdet
            );
        }
    }

    /// A small run of `strategy` on `data`: width 16 × 2, batch 128, the recipe's
    /// Adam from CP-Flow's start.
    fn small(data: &TabularSplits, strategy: Strategy, iterations: usize) -> TabularRun<'_> {
        TabularRun {
            data,
            strategy,
            width: 16,
            layers: 2,
            batch: 128,
            iterations,
            act_norm: false,
            rule: Rule::Adam((shoulder::FLOW_TABULAR.adam)()),
            convention: Convention::CpFlow,
            track: false,
            seed: 1,
            quiet: true,
        }
    }

    /// Asserts that 40 steps at batch 128 lower each strategy's test NLL on `data`
    /// (a sign error or a gradient that does not reach the weights leaves it flat or
    /// raises it) without a skipped step.
    fn short_runs_learn(data: &TabularSplits, strategies: &[Strategy], act_norm: bool) {
        for &strategy in strategies {
            let run = |iterations| {
                TabularRun {
                    act_norm,
                    ..small(data, strategy, iterations)
                }
                .train(&mut Metrics::default())
                .unwrap()
            };
            let (start, end) = (run(1), run(40));
            assert!(
                end.test < start.test - 0.05,
                "{}: {} → {}",
                strategy.name(),
                start.test,
                end.test
            );
            assert!(end.validation.is_finite() && end.skipped == 0);
        }
    }

    #[test]
    fn a_short_run_of_every_strategy_learns_on_the_stand_in() {
        // The z-scored, unwhitened stand-in starts far from the identity map's N(0, I).
        let data = StandIn::new(Marginals::Mixed)
            .splits(2_000, 200, 500, 7)
            .unwrap();
        short_runs_learn(
            &data,
            &[Strategy::Pgd, Strategy::Softplus, Strategy::Lift],
            false,
        );
        assert_eq!(data.train.shape()[1], STAND_IN_DIM);
    }

    #[test]
    fn a_short_run_with_act_norm_learns_on_the_heavy_tailed_stand_in() {
        // ActNorm primed before the first step (a priming that blew the scales up
        // would not learn), on the Student-t stand-in.
        let data = StandIn::new(Marginals::StudentT3)
            .splits(2_000, 200, 500, 7)
            .unwrap();
        short_runs_learn(&data, &[Strategy::Softplus, Strategy::Lift], true);
    }

    #[test]
    fn the_sgd_study_tracks_the_shoulder_from_both_starts() {
        // From the shoulder start every softplus latent sits on the shoulder at the
        // first snapshot; from CP-Flow's start (latents in U(±1/4)) none does.
        let data = StandIn::new(Marginals::StudentT3)
            .splits(500, 100, 100, 7)
            .unwrap();
        for (convention, on) in [(Convention::Shoulder(-4.0), 1.0), (Convention::CpFlow, 0.0)] {
            let out = TabularRun {
                rule: Rule::Sgd(optim::SgdConfig::new(1e-3)),
                convention,
                track: true,
                ..small(&data, Strategy::Softplus, 3)
            }
            .train(&mut Metrics::default())
            .unwrap();
            let escape = out
                .escape
                .as_ref()
                .expect("a tracked run has an escape summary");
            assert_eq!((out.shoulder, escape.ever), (on, on), "{convention:?}");
            let keys: Vec<String> = out.numbers(0.0).into_iter().map(|n| n.0).collect();
            assert!(keys.iter().any(|k| k == "escape_left"), "{keys:?}");
        }
    }

    #[test]
    fn the_caption_and_the_gaussian_row_follow_the_data_dimension() {
        let rows = |n: usize| Tensor::from_vec(vec![0.0; n * 5], &[n, 5]).unwrap();
        let p = Prepared {
            data: TabularSplits {
                train: rows(4),
                validation: rows(2),
                test: rows(2),
                test_log_density: None,
                description: "five columns".into(),
            },
            entropy: None,
            gaussian: 1.0,
            jacobian: 0.0,
        };
        let o = Options {
            iterations: 1,
            width: 4,
            layers: 2,
            batch: 2,
            train_size: 4,
            strategies: vec![],
            multipliers: vec![],
            marginals: Marginals::Mixed,
            whiten: false,
            act_norm: false,
            sgd_lrs: vec![],
            quiet: true,
        };
        let t = headline(&o, &p, 1).render();
        assert!(t.contains("exact 5×5 log-det") && !t.contains("21"), "{t}");
        assert!(!t.contains("ActNorm"), "{t}");
        let with_norms = Options {
            act_norm: true,
            ..o
        };
        let t = headline(&with_norms, &p, 1).render();
        assert!(t.contains("× 2 with ActNorm"), "{t}");
        // Mean and covariance of a 5-D Gaussian: 5 + 15.
        assert!(
            t.lines()
                .any(|l| l.contains("moment-matched Gaussian") && l.contains(" 20 ")),
            "{t}"
        );
    }
}
