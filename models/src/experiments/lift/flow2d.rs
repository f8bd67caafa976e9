//! `lift-flow-2d`: convex potential flows in 2-D. The map x ↦ ∇ₓF(x) of a strongly
//! convex potential F(x) = softplus(a)·ICNN(x) + softplus(c)·½‖x‖² sends data to a
//! standard normal; log p(x) = log N(∇F(x)) + log det ∇²F(x), with the 2×2 Hessian
//! built by nested autograd (so training differentiates to third order).
//!
//! By default every strategy follows CP-Flow's conventions (`--convention cpflow`:
//! constrained weights divided by their fan-in, PGD at softplus(U(±1/√n)), softplus
//! latents at U(±1/√n), the lift's slack at the toy recipe's 0), so all start from
//! the same effective potential; `--convention ebm` is the lift repository's EBM
//! start (raw weights, folded normal), where the lift's slack 0 starts ≈ 4× larger.
//! The reference NLLs are the target's entropy (the floor) and the moment-matched
//! Gaussian's test NLL (what a flow whose ICNN term stays flat reaches: ∇F linear). The
//! distribution table counts the seeds at least 0.05 nats below that plateau. Beside
//! PGD, softplus and the lift, every seed trains the three controls of the lift's
//! mechanism (capacity, step size, batch coupling; see [`super::controls`]).
//! `--probe-every` measures σ²_Jac = tr Σ̂_slack during training on the training
//! objective for every cell but the width-matched softplus, and for the lift
//! without its slack (no reading); the learned-code lift is batch-independent, and
//! PGD's and softplus's slack channel is their own latent. `--sgd-lrs` adds
//! `lift-ebm-1d`'s SGD study ([`super::shoulder`]): plain SGD from both starts, with
//! the escape dynamics.

use super::cells::{self, Probes};
use super::controls::{self, MULTIPLIERS_HELP};
use super::density::{no_scores, Density};
use super::groups::Rule;
use super::shoulder::{self, StudyTables};
use super::{
    cell_name, icnn_config, record_sigma, snapshots, Convention, Escape, Model, ShoulderTrack,
    Strategy, PROBES, SIGMA_SIGN,
};
use crate::cli::RunConfig;
use crate::data::gaussian::Gaussian;
use crate::data::toy::Target2d;
use crate::error::Result;
use crate::grid::{Grid, Numbers};
use crate::report::{mean_std, svg, Metrics, Plot, Table};
use autograd::{grad, no_grad, Var};
use nn::checkpoint::NamedTensors;
use optim::lift::{LiftConfig, LiftVariant};
use optim::AdamConfig;
use tensor::{Rng, Tensor};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    ("iterations", "training iterations (quick 1000, full 3000)"),
    ("width", "ICNN width (32)"),
    ("layers", "ICNN layers (5)"),
    (
        "control",
        "include the width-matched softplus control (quick false, for the demo's time: at the lift's parameter count the ICNN is about ten times as wide; full true)",
    ),
    ("multipliers", MULTIPLIERS_HELP),
    (
        "targets",
        "8gaussians,2spirals (quick 8gaussians)",
    ),
    (
        "convention",
        "cpflow (1/fan_in gain, CP-Flow's initial values; default) or ebm (raw weights, folded normal)",
    ),
    (
        "slack-init",
        "initial value of the lift's slack (0, CP-Flow's toy readout_bias_init)",
    ),
    (
        "slack-sweep",
        "lift slack initial values for a sweep table of its own (full -4,-2,0,2; quick none)",
    ),
    (
        "probe-every",
        "measure σ²_Jac every this many iterations for all five strategy cells, 0 = off (quick 0, full iterations/10)",
    ),
    (
        "sgd-lrs",
        "the SGD study's learning rates, as in lift-ebm-1d: PGD, softplus, the lift and the learned-code lift also trained by plain SGD from the authors' start and from the shoulder start (latents at -4, raw weights), the rate chosen per strategy and start on validation, with escape dynamics and Adam at 5e-3 from the shoulder (none by default: about 10× the headline's time; lift-ebm-1d's grid is 0.0001,0.001,0.01,0.1,1,10)",
    ),
];

/// The potential's two trainable scalars and their starts: the ICNN term's scale
/// a (softplus(0) ≈ 0.69) and the quadratic's c (softplus(c) = 1: the map starts
/// as the identity plus the ICNN's gradient).
pub(super) fn potential_scalars() -> [(&'static str, f64); 2] {
    [
        ("flow.scale", 0.0),
        ("flow.quad", (std::f64::consts::E - 1.0).ln()),
    ]
}

/// The ICNN term's scale softplus(a) of `m`'s potential.
fn icnn_scale(m: &Model) -> tensor::Result<f64> {
    m.scalar("flow.scale")?.value().softplus().item()
}

/// The flow's map z = ∇F(x) `[n, 2]` of the potential
/// F(x) = softplus(a)·ICNN(x) + softplus(c)·½‖x‖², differentiable (create-graph), with
/// the leaf x it differentiates.
pub(super) fn gradient_map(
    m: &Model,
    w: &[Var<f64>],
    x: &Tensor<f64>,
) -> Result<(Var<f64>, Var<f64>)> {
    let xv = Var::leaf(x.clone());
    let scale = m.scalar("flow.scale")?.softplus()?;
    let quad = m.scalar("flow.quad")?.softplus()?;
    let f = m
        .net
        .forward_with(&xv, w)?
        .mul(&scale)?
        .add(&xv.square()?.sum(&[1], true)?.mul_scalar(0.5)?.mul(&quad)?)?;
    let z = grad(&[&f.sum_all()?], &[&xv], None, true)?.remove(0);
    Ok((xv, z))
}

/// log p(x) per row of `x` `[n, 2]` under the flow with weights `w`. A Hessian
/// determinant ≤ 0 (impossible for the strongly convex potential in exact arithmetic)
/// is an error naming the sample.
fn log_density(m: &Model, w: &[Var<f64>], x: &Tensor<f64>) -> Result<Var<f64>> {
    let (xv, z) = gradient_map(m, w, x)?;
    let row = |j: usize| -> Result<Var<f64>> {
        let zj = z.narrow(1, j, 1)?.sum_all()?;
        Ok(grad(&[&zj], &[&xv], None, true)?.remove(0))
    };
    let (h0, h1) = (row(0)?, row(1)?);
    let det = h0
        .narrow(1, 0, 1)?
        .mul(&h1.narrow(1, 1, 1)?)?
        .sub(&h0.narrow(1, 1, 1)?.mul(&h1.narrow(1, 0, 1)?)?)?;
    if let Some((i, d)) = det
        .value()
        .to_vec()
        .into_iter()
        .enumerate()
        .find(|(_, d)| !(*d > 0.0))
    {
        let p = x.to_vec();
        return Err(tensor::Error::numerical(
            "lift-flow-2d",
            format!(
                "det ∇²F = {d:e} ≤ 0 at sample {i}, x = ({}, {}): the potential lost strong convexity",
                p[2 * i],
                p[2 * i + 1]
            ),
        ).into());
    }
    let log_normal = z
        .square()?
        .sum(&[1], true)?
        .mul_scalar(-0.5)?
        .add_scalar(-(2.0 * std::f64::consts::PI).ln())?;
    Ok(log_normal.add(&det.ln()?)?)
}

/// The test NLL of the Gaussian with the target's mean and covariance (fitted on
/// 20,000 samples): the plateau of a flow whose ICNN term stays flat.
pub fn moment_matched_nll(target: Target2d, test: &Tensor<f64>) -> Result<f64> {
    Ok(Gaussian::fit(&target.sample(20_000, &mut Rng::new(4242))?)?.nll(test)?)
}

/// A seed counts as off the plateau when its test NLL is this many nats below the
/// moment-matched Gaussian's (a flow stuck there lands within a few thousandths).
pub const PLATEAU_MARGIN: f64 = 0.05;

/// One run's settings.
#[derive(Clone)]
pub struct FlowRun {
    /// The data.
    pub target: Target2d,
    /// The positivity strategy.
    pub strategy: Strategy,
    /// The lift's settings (variant and slack start), for `Strategy::Lift`.
    pub lift: LiftConfig,
    /// Gain and initial values.
    pub convention: Convention,
    /// The optimiser (the toy recipe's: Adam at 5e-3).
    pub rule: Rule,
    /// Track every latent's shoulder membership at 100 snapshots.
    pub track: bool,
    /// ICNN width.
    pub width: usize,
    /// ICNN layers.
    pub layers: usize,
    /// Training iterations.
    pub iterations: usize,
    /// Seed of the initialisation and the batches.
    pub seed: u64,
    /// Measure σ²_Jac every this many iterations (0 = never).
    pub probe_every: usize,
    /// No progress lines.
    pub quiet: bool,
}

/// What one run measured.
pub struct FlowResult {
    /// Test NLL (nats).
    pub nll: f64,
    /// The same on validation samples drawn apart from the test samples.
    pub val_nll: f64,
    /// Trainable parameters.
    pub params: usize,
    /// Seconds.
    pub secs: f64,
    /// Steps skipped for a non-finite loss or gradient.
    pub skipped: usize,
    /// Share of the constrained latents on the softplus shoulder at the end.
    pub shoulder: f64,
    /// The ICNN term's scale softplus(a) at the end: near 0 the map is the
    /// quadratic's alone, the moment-matched Gaussian's plateau, whatever the
    /// ICNN's latents.
    pub icnn_scale: f64,
    /// σ²_Jac snapshots (iteration, reading; `None` without a slack channel).
    pub probes: Probes,
    /// The escape summary of a tracked run.
    pub escape: Option<Escape>,
    /// The trained model's tensors.
    pub tensors: NamedTensors,
}

impl FlowResult {
    /// The cell's numbers: `nll`, `val_nll`, `params`, `secs`, `skipped`,
    /// `shoulder`, `icnn_scale`, the snapshots and a tracked run's escape summary.
    fn numbers(&self) -> Numbers {
        let mut numbers = vec![
            ("nll".to_string(), self.nll),
            ("val_nll".to_string(), self.val_nll),
            ("params".to_string(), self.params as f64),
            ("secs".to_string(), self.secs),
            ("skipped".to_string(), self.skipped as f64),
            ("shoulder".to_string(), self.shoulder),
            ("icnn_scale".to_string(), self.icnn_scale),
        ];
        numbers.extend(cells::probe_numbers(&self.probes));
        if let Some(e) = &self.escape {
            numbers.extend(e.numbers());
        }
        numbers
    }
}

impl FlowRun {
    /// A short label of the strategy cell.
    pub fn cell(&self) -> String {
        cell_name(self.strategy, self.lift.variant)
    }

    /// Trains and scores one flow.
    pub fn train(&self, metrics: &mut Metrics) -> Result<FlowResult> {
        let mut rng = Rng::new(self.seed);
        let extra = potential_scalars();
        let m = Model::new(
            self.strategy,
            self.convention,
            icnn_config(2, self.width, self.layers, 0.0),
            &self.lift,
            self.rule.clone(),
            &extra,
            &mut rng,
        )?;
        let mut data_rng = Rng::new(self.seed ^ 0xf10);
        let pin = self.target.sample(128, &mut Rng::new(12345))?;
        let test = self.target.sample(2000, &mut Rng::new(777))?;
        let validation = self.target.sample(2000, &mut Rng::new(778))?;
        let regime = shoulder::regime(&self.rule, self.convention);
        let series = format!(
            "{}/{}/slack{}{regime}/seed{}",
            self.cell(),
            self.target.name(),
            self.lift.slack_init,
            self.seed
        );
        let loss = |m: &Model, w: &[Var<f64>], batch: &Tensor<f64>| -> tensor::Result<Var<f64>> {
            log_density(m, w, batch)?.mean_all()?.neg()
        };
        let mut probes = Vec::new();
        let mut track = ShoulderTrack::default();
        let track_every = (self.iterations / 100).max(1);
        let after = |m: &mut Model, it: usize, metrics: &mut Metrics| -> tensor::Result<()> {
            // Step decay ×0.5 at 2/3 of the run.
            if it + 1 == 2 * self.iterations / 3 {
                m.optimizer.scale_lr(0.5)?;
            }
            if self.track && (it.is_multiple_of(track_every) || it == 1) {
                let exits = track.record(m, &pin, self.strategy == Strategy::Pgd)?;
                metrics.push(&series, it, "shoulder_exits", exits);
                metrics.push(&series, it, "icnn_scale", icnn_scale(m)?);
            }
            if self.probe_every > 0 && (it.is_multiple_of(self.probe_every) || it == 1) {
                record_sigma(
                    m,
                    &mut |r| self.target.sample(128, r),
                    &loss,
                    self.seed,
                    it,
                    &series,
                    metrics,
                    &mut probes,
                )?;
            }
            Ok(())
        };
        let (m, out) = Density {
            model: m,
            step: Box::new(|m: &mut Model| {
                m.step(&self.target.sample(128, &mut data_rng)?, 10.0, &loss)
            }),
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
        let w = no_grad(|| m.positivity.weights(&pin))?;
        let w: Vec<Var<f64>> = w.iter().map(|v| v.detach()).collect();
        let nll = -log_density(&m, &w, &test)?.mean_all()?.item()?;
        let val_nll = -log_density(&m, &w, &validation)?.mean_all()?.item()?;
        Ok(FlowResult {
            nll,
            val_nll,
            params: m.size(),
            secs: out.seconds,
            skipped: out.skipped,
            shoulder: m.positivity.shoulder_occupancy(&pin)?,
            icnn_scale: icnn_scale(&m)?,
            probes,
            escape: self.track.then(|| track.escape()),
            tensors: m.store.to_tensors(),
        })
    }
}

/// The sorted test NLLs of each strategy over the seeds, as a plot panel (an
/// empirical quantile function per strategy, the plateau as a flat line).
fn distribution_panel(target: &str, plateau: f64, runs: &[(String, Vec<f64>)]) -> svg::Panel {
    let n = runs.iter().map(|r| r.1.len()).max().unwrap_or(1);
    let mut series: Vec<svg::Series> = runs
        .iter()
        .map(|(name, v)| {
            let mut v = v.clone();
            v.sort_by(f64::total_cmp);
            svg::Series {
                label: name.clone(),
                points: v
                    .iter()
                    .enumerate()
                    .map(|(i, &y)| ((i + 1) as f64, y))
                    .collect(),
                band: Vec::new(),
            }
        })
        .collect();
    series.push(svg::Series {
        label: "moment-matched Gaussian (plateau)".into(),
        points: vec![(1.0, plateau), (n as f64, plateau)],
        band: Vec::new(),
    });
    svg::Panel {
        title: format!("{target}: test NLL of every seed, sorted"),
        x_label: "seed rank".into(),
        log_y: false,
        series,
    }
}

/// The options of one run.
struct Options {
    iterations: usize,
    width: usize,
    layers: usize,
    targets: Vec<Target2d>,
    convention: Convention,
    lift: LiftConfig,
    slack_sweep: Vec<f64>,
    probe_every: usize,
    control: bool,
    multipliers: Vec<f64>,
    sgd_lrs: Vec<f64>,
    quiet: bool,
}

impl Options {
    /// The options from the command line.
    fn parse(cfg: &RunConfig) -> Result<Options> {
        cfg.check_known("lift-flow-2d", OPTIONS)?;
        let iterations = cfg.opt_positive("iterations", if cfg.quick { 1000 } else { 3000 })?;
        let default_targets: &[&str] = if cfg.quick {
            &["8gaussians"]
        } else {
            &["8gaussians", "2spirals"]
        };
        let targets = cfg
            .opt_list(
                "targets",
                &default_targets
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>(),
            )?
            .iter()
            .map(|t| Target2d::parse(t))
            .collect::<tensor::Result<_>>()?;
        let sweep: &[f64] = if cfg.quick {
            &[]
        } else {
            &[-4.0, -2.0, 0.0, 2.0]
        };
        Ok(Options {
            iterations,
            width: cfg.opt_positive("width", 32)?,
            layers: cfg.opt_positive("layers", 5)?,
            targets,
            convention: Convention::parse(&cfg.opt("convention", "cpflow".to_string())?)?,
            lift: LiftConfig {
                slack_init: cfg.opt("slack-init", 0.0)?,
                ..LiftConfig::default()
            },
            slack_sweep: cfg.opt_list("slack-sweep", sweep)?,
            probe_every: cfg.opt("probe-every", if cfg.quick { 0 } else { iterations / 10 })?,
            control: cfg.opt("control", !cfg.quick)?,
            multipliers: cfg.opt_list("multipliers", controls::multipliers(cfg.quick))?,
            sgd_lrs: cfg.opt_list("sgd-lrs", &[])?,
            quiet: cfg.quiet,
        })
    }

    /// The run of `strategy` on `target` at `seed`, without σ²_Jac snapshots.
    fn flow(&self, target: Target2d, strategy: Strategy, seed: u64) -> FlowRun {
        FlowRun {
            target,
            strategy,
            lift: self.lift.clone(),
            convention: self.convention,
            rule: Rule::Adam(AdamConfig::adam(5e-3)),
            track: false,
            width: self.width,
            layers: self.layers,
            iterations: self.iterations,
            seed,
            probe_every: 0,
            quiet: self.quiet,
        }
    }

    /// The setting every table's title states.
    fn describe(&self, seeds: usize) -> String {
        let conv = self.convention.describe();
        format!(
            "ICNN width {} × {}, {} iterations, batch 128, {conv}, lift slack {}, {seeds} seeds",
            self.width, self.layers, self.iterations, self.lift.slack_init
        )
    }
}

/// The tables and the distribution panels a run fills, target by target.
struct Tables {
    headline: Table,
    spread: Table,
    sigma: Table,
    sweep: Table,
    choice: Table,
    study: StudyTables,
    panels: Vec<svg::Panel>,
}

impl Tables {
    fn new(setting: &str, slack_init: f64, first_seed: u64) -> Tables {
        Tables {
            headline: Table::new(
                &format!("lift-flow-2d: convex potential flow, {setting}; test NLL (nats, mean ± std) against the target's entropy and the moment-matched Gaussian's plateau"),
                &["target", "method", "parameters", "test NLL", "gap to entropy", "seeds ≥ 0.05 nats below the plateau", "non-finite steps skipped", "s / run"],
            ),
            spread: Table::new(
                &format!("lift-flow-2d: the distribution of test NLL over seeds, {setting}"),
                &["target", "method", "min", "median", "max", "sorted"],
            ),
            sigma: Table::new(
                &format!("lift-flow-2d: σ²_Jac = tr Σ̂_slack during training on the training objective, seed {first_seed}, {PROBES} probe batches of 128 per snapshot (trace, permutation p-value in brackets; — = no slack channel); {setting}; {SIGMA_SIGN}"),
                &["target", "cell", "snapshots (iteration: trace [p])"],
            ),
            sweep: Table::new(
                &format!("lift-flow-2d: the lift's initial slack swept (its own table; the headline uses {slack_init}), {setting}"),
                &["target", "slack init", "initial weight softplus(b)", "test NLL", "seeds ≥ 0.05 nats below the plateau"],
            ),
            choice: controls::choice_table(
                "lift-flow-2d",
                &format!("{setting}, 2,000 validation samples"),
            ),
            study: StudyTables::new(shoulder::FLOW_2D, &format!("{setting}, gradient norm clipped at 10, 2,000 validation samples")),
            panels: Vec::new(),
        }
    }
}

/// One target's reference numbers: its label, entropy and plateau.
struct Reference {
    label: String,
    entropy: f64,
    plateau: f64,
}

impl Reference {
    fn of(target: Target2d) -> Result<Reference> {
        let test = target.sample(2000, &mut Rng::new(777))?;
        let lp = target.log_density(&test, 20_000, &mut Rng::new(3))?;
        let entropy = -lp.iter().sum::<f64>() / lp.len() as f64;
        let plateau = moment_matched_nll(target, &test)?;
        let label = format!(
            "{} (entropy {entropy:.3}, Gaussian {plateau:.3})",
            target.name()
        );
        Ok(Reference {
            label,
            entropy,
            plateau,
        })
    }

    /// "k of n": the seeds at least [`PLATEAU_MARGIN`] below the plateau.
    fn below(&self, nlls: &[f64]) -> String {
        let k = nlls
            .iter()
            .filter(|&&x| x < self.plateau - PLATEAU_MARGIN)
            .count();
        format!("{k} of {}", nlls.len())
    }
}

/// Trains `strategy` on `target` over the grid's seeds; the first seed measures
/// σ²_Jac (but for the width-matched control) and keeps its model.
fn train_arm(
    o: &Options,
    (target, strategy, r): (Target2d, Strategy, &Reference),
    grid: &mut Grid,
    (t, metrics, model): (&mut Tables, &mut Metrics, &mut NamedTensors),
) -> Result<()> {
    let (first, name, arm) = (grid.seeds()[0], target.name(), strategy.name());
    let diagnosed = strategy != Strategy::SoftplusWide;
    grid.run(&arm, name, metrics, |seed, _, metrics| {
        let mut run = o.flow(target, strategy, seed);
        if seed == first && diagnosed {
            run.probe_every = o.probe_every;
        }
        let mut out = run.train(metrics)?;
        if seed == first {
            cells::keep_model(model, (name, &arm), std::mem::take(&mut out.tensors));
        }
        Ok(out.numbers())
    })?;
    if o.probe_every > 0 && diagnosed {
        let probes = cells::probes_from(grid.numbers(&arm, name, first)?)?;
        t.sigma.row(vec![r.label.clone(), arm, snapshots(&probes)]);
    }
    Ok(())
}

/// Every strategy and control on `target` over the grid's seeds, the step-size
/// control at the M chosen on validation: the headline and spread rows, the
/// choice's rows, the evidence of both claims and the distribution panel.
fn headline(
    o: &Options,
    target: Target2d,
    grid: &mut Grid,
    (t, metrics, model): (&mut Tables, &mut Metrics, &mut NamedTensors),
) -> Result<()> {
    let r = Reference::of(target)?;
    let name = target.name();
    let arms = Strategy::arms(o.control);
    let (arms, choice) = controls::train_with_controls(arms, &o.multipliers, |strategy| {
        let parts = (&mut *t, &mut *metrics, &mut *model);
        train_arm(o, (target, strategy, &r), grid, parts)?;
        Ok(grid.values(&strategy.name(), name, "val_nll")?)
    })?;
    controls::choice_rows(&mut t.choice, &r.label, &choice);
    let (mut runs, mut by_strategy) = (Vec::new(), Vec::new());
    for strategy in arms {
        let arm = strategy.name();
        let nlls = grid.values(&arm, name, "nll")?;
        let gaps: Vec<f64> = nlls.iter().map(|v| v - r.entropy).collect();
        t.headline.row(vec![
            r.label.clone(),
            arm.clone(),
            cells::params(grid, &arm, name)?.to_string(),
            mean_std(&nlls, 3),
            mean_std(&gaps, 3),
            r.below(&nlls),
            cells::skipped(grid, &arm, name)?.to_string(),
            grid.mean_std(&arm, name, "secs", 1)?,
        ]);
        let mut sorted = nlls.clone();
        sorted.sort_by(f64::total_cmp);
        let at = |k: usize| format!("{:.3}", sorted[k]);
        let all = sorted.iter().map(|v| format!("{v:.2}")).collect::<Vec<_>>();
        let row = [
            at(0),
            at(sorted.len() / 2),
            at(sorted.len() - 1),
            all.join(" "),
        ];
        t.spread
            .row([vec![r.label.clone(), arm.clone()], row.to_vec()].concat());
        runs.push((arm, nlls.clone()));
        by_strategy.push((strategy, nlls));
    }
    let setting = format!("lift-flow-2d, {name}");
    t.headline
        .evidence
        .extend(super::lift_evidence(&setting, "test NLL", &by_strategy));
    t.panels.push(distribution_panel(name, r.plateau, &runs));
    if o.probe_every > 0 {
        ablation(o, target, &r, grid, (t, metrics))?;
    }
    slack_sweep(o, target, &r, grid, (t, metrics))
}

/// σ²_Jac of the lift without its slack at the first seed (no reading: the slack
/// channel is gone).
fn ablation(
    o: &Options,
    target: Target2d,
    r: &Reference,
    grid: &mut Grid,
    (t, metrics): (&mut Tables, &mut Metrics),
) -> Result<()> {
    let first = grid.seeds()[0];
    let mut run = o.flow(target, Strategy::Lift, first);
    run.lift.variant = LiftVariant::NoSlack;
    run.probe_every = o.probe_every;
    let arm = run.cell();
    grid.run_first(&arm, target.name(), metrics, |_, _, m| {
        Ok(run.train(m)?.numbers())
    })?;
    let probes = cells::probes_from(grid.numbers(&arm, target.name(), first)?)?;
    t.sigma.row(vec![r.label.clone(), arm, snapshots(&probes)]);
    Ok(())
}

/// The lift at each `--slack-sweep` initial slack, over every seed.
fn slack_sweep(
    o: &Options,
    target: Target2d,
    r: &Reference,
    grid: &mut Grid,
    (t, metrics): (&mut Tables, &mut Metrics),
) -> Result<()> {
    for &b in &o.slack_sweep {
        let arm = format!("lift-slack{b}");
        grid.run(&arm, target.name(), metrics, |seed, _, m| {
            let mut run = o.flow(target, Strategy::Lift, seed);
            run.lift.slack_init = b;
            Ok(run.train(m)?.numbers())
        })?;
        let nlls = grid.values(&arm, target.name(), "nll")?;
        t.sweep.row(vec![
            r.label.clone(),
            b.to_string(),
            format!("{:.4}", b.exp().ln_1p()),
            mean_std(&nlls, 3),
            r.below(&nlls),
        ]);
    }
    Ok(())
}

/// Runs the experiment and returns its tables.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    let o = Options::parse(cfg)?;
    let seeds = cfg.seed_list(3, 10)?;
    let mut t = Tables::new(&o.describe(seeds.len()), o.lift.slack_init, seeds[0]);
    let mut grid = Grid::new(cfg, seeds);
    let (mut metrics, mut model) = (Metrics::default(), Vec::new());
    for &target in &o.targets {
        headline(&o, target, &mut grid, (&mut t, &mut metrics, &mut model))?;
        if !o.sgd_lrs.is_empty() {
            let mut run = |strategy, rule: &Rule, convention, seed, m: &mut Metrics| {
                let run = FlowRun {
                    rule: rule.clone(),
                    convention,
                    track: true,
                    ..o.flow(target, strategy, seed)
                };
                Ok(run.train(m)?.numbers())
            };
            let parts = (&mut t.study, &mut metrics);
            let start = (target.name(), o.convention);
            shoulder::run_target(start, &o.sgd_lrs, &mut grid, &mut run, parts)?;
        }
    }
    let mut tables = vec![t.headline, t.choice, t.spread];
    if !o.sgd_lrs.is_empty() {
        tables.push(t.study.table);
        tables.push(t.study.choice);
    }
    if o.probe_every > 0 {
        tables.push(t.sigma);
    }
    if !o.slack_sweep.is_empty() {
        tables.push(t.sweep);
    }
    let dir = cfg.run_dir("lift-flow-2d")?;
    dir.write_figure(
        "distribution.svg",
        &svg::render("lift-flow-2d: test NLL over seeds", &t.panels),
    )?;
    Ok(dir.finish(
        "lift-flow-2d",
        Plot::Curves {
            title: "lift-flow-2d: training NLL and σ²_Jac",
            metrics: &metrics,
            panels: &[("train_loss", false), ("sigma2_jac", false)],
            x_label: "iteration",
        },
        model,
        tables,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flow with a strongly curved ICNN term (scale softplus(3) ≈ 3) so the map is
    /// far from linear.
    fn curved_flow(strategy: Strategy) -> (Model, Vec<Var<f64>>) {
        let extra = [("flow.scale", 3.0), ("flow.quad", -1.0)];
        let m = Model::new(
            strategy,
            Convention::Ebm,
            icnn_config(2, 8, 3, 0.0),
            &LiftConfig::default(),
            Rule::Adam(AdamConfig::adam(5e-3)),
            &extra,
            &mut Rng::new(9),
        )
        .unwrap();
        let pin = Tensor::rand_normal(&[32, 2], 0.0, 1.0, &mut Rng::new(1)).unwrap();
        let w = m.positivity.weights(&pin).unwrap();
        (m, w.iter().map(|v| v.detach()).collect())
    }

    /// log det ∇²F from nested autograd against central differences of ∇F.
    #[test]
    fn the_log_det_matches_finite_differences_of_the_map() {
        for strategy in [Strategy::Pgd, Strategy::Lift] {
            let (m, w) = curved_flow(strategy);
            let x = Tensor::rand_normal(&[6, 2], 0.0, 1.5, &mut Rng::new(4)).unwrap();
            let logp = log_density(&m, &w, &x).unwrap().value().to_vec();
            let z = gradient_map(&m, &w, &x).unwrap().1.value().to_vec();
            let h = 1e-5;
            let at = |dx: [f64; 2]| -> Vec<f64> {
                let shifted: Vec<f64> = x
                    .to_vec()
                    .chunks(2)
                    .flat_map(|p| [p[0] + dx[0], p[1] + dx[1]])
                    .collect();
                let xs = Tensor::from_vec(shifted, &[6, 2]).unwrap();
                gradient_map(&m, &w, &xs).unwrap().1.value().to_vec()
            };
            let (xp, xm, yp, ym) = (at([h, 0.0]), at([-h, 0.0]), at([0.0, h]), at([0.0, -h]));
            for i in 0..6 {
                let d = |p: &[f64], q: &[f64], k: usize| (p[2 * i + k] - q[2 * i + k]) / (2.0 * h);
                let det = d(&xp, &xm, 0) * d(&yp, &ym, 1) - d(&xp, &xm, 1) * d(&yp, &ym, 0);
                let log_normal = -0.5 * (z[2 * i].powi(2) + z[2 * i + 1].powi(2))
                    - (2.0 * std::f64::consts::PI).ln();
                let from_autograd = logp[i] - log_normal;
                assert!(
                    (from_autograd - det.ln()).abs() < 1e-6,
                    "{strategy:?} sample {i}: {from_autograd} vs {}",
                    det.ln()
                );
            }
        }
    }

    /// The density integrates to 1: a midpoint rule over [−10, 10]² (the map grows at
    /// least like softplus(c)·x, so the tails beyond are negligible).
    #[test]
    fn the_flow_density_integrates_to_one() {
        let (m, w) = curved_flow(Strategy::Softplus);
        let (n, half) = (300usize, 10.0);
        let dx = 2.0 * half / n as f64;
        let pts: Vec<f64> = (0..n * n)
            .flat_map(|k| {
                let (i, j) = (k / n, k % n);
                [-half + (i as f64 + 0.5) * dx, -half + (j as f64 + 0.5) * dx]
            })
            .collect();
        let x = Tensor::from_vec(pts, &[n * n, 2]).unwrap();
        let logp = log_density(&m, &w, &x).unwrap().value().to_vec();
        let mass: f64 = logp.iter().map(|l| l.exp()).sum::<f64>() * dx * dx;
        assert!((mass - 1.0).abs() < 2e-3, "{mass}");
    }
}
