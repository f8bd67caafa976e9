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
//! distribution table counts the seeds at least 0.05 nats below that plateau; `--probe-every` measures
//! σ²_Jac = tr Σ̂_slack during training on the training objective, for the lift and
//! its two ablations (no slack: no reading; learned code: batch-independent) and
//! for PGD and softplus, whose slack channel is their own latent.

use super::density::{no_scores, Density};
use super::{cell_name, icnn_config, record_sigma, snapshots, Convention, Model, Strategy, PROBES};
use crate::cli::RunConfig;
use crate::data::gaussian::Gaussian;
use crate::data::toy::Target2d;
use crate::report::{mean_std, svg, Metrics, Plot, Table};
use crate::sweep::{CellValue, Fields};
use autograd::{grad, no_grad, Var};
use nn::checkpoint::NamedTensors;
use optim::lift::{CrossCov, LiftConfig, LiftVariant};
use optim::Optimizer;
use tensor::{Error, Result, Rng, Tensor};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    ("iterations", "training iterations (quick 1000, full 3000)"),
    ("width", "ICNN width (32)"),
    ("layers", "ICNN layers (5)"),
    (
        "control",
        "include the width-matched softplus control (quick false, full true)",
    ),
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
        return Err(Error::numerical(
            "lift-flow-2d",
            format!(
                "det ∇²F = {d:e} ≤ 0 at sample {i}, x = ({}, {}): the potential lost strong convexity",
                p[2 * i],
                p[2 * i + 1]
            ),
        ));
    }
    let log_normal = z
        .square()?
        .sum(&[1], true)?
        .mul_scalar(-0.5)?
        .add_scalar(-(2.0 * std::f64::consts::PI).ln())?;
    log_normal.add(&det.ln()?)
}

/// The test NLL of the Gaussian with the target's mean and covariance (fitted on
/// 20,000 samples): the plateau of a flow whose ICNN term stays flat.
pub fn moment_matched_nll(target: Target2d, test: &Tensor<f64>) -> Result<f64> {
    Gaussian::fit(&target.sample(20_000, &mut Rng::new(4242))?)?.nll(test)
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
    /// Trainable parameters.
    pub params: usize,
    /// Seconds.
    pub secs: f64,
    /// Steps skipped for a non-finite loss or gradient.
    pub skipped: usize,
    /// σ²_Jac snapshots (iteration, reading; `None` without a slack channel).
    pub probes: Vec<(usize, Option<CrossCov>)>,
    /// The trained model's tensors.
    pub tensors: NamedTensors,
}

/// What the tables need of one [`FlowResult`]: one cell of the sweep.
struct FlowCell {
    nll: f64,
    params: usize,
    secs: f64,
    skipped: usize,
    probes: Vec<(usize, Option<CrossCov>)>,
}

impl From<FlowResult> for FlowCell {
    fn from(r: FlowResult) -> Self {
        FlowCell {
            nll: r.nll,
            params: r.params,
            secs: r.secs,
            skipped: r.skipped,
            probes: r.probes,
        }
    }
}

impl CellValue for FlowCell {
    /// The σ²_Jac snapshots as `probe<i>_iteration`, and the reading's numbers
    /// (`probe<i>_trace`, …) when there is one.
    fn to_fields(&self) -> Fields {
        let mut f = vec![
            ("nll".to_string(), self.nll),
            ("params".to_string(), self.params as f64),
            ("secs".to_string(), self.secs),
            ("skipped".to_string(), self.skipped as f64),
            ("probe_count".to_string(), self.probes.len() as f64),
        ];
        for (i, (it, reading)) in self.probes.iter().enumerate() {
            f.push((format!("probe{i}_iteration"), *it as f64));
            if let Some(c) = reading {
                f.extend(
                    [
                        ("trace", c.trace),
                        ("frobenius", c.frobenius),
                        ("asymmetry", c.asymmetry),
                        ("p_value", c.p_value),
                        ("relative_iterate_variance", c.relative_iterate_variance),
                        ("probes", c.probes as f64),
                        ("dim", c.dim as f64),
                    ]
                    .map(|(k, v)| (format!("probe{i}_{k}"), v)),
                );
            }
        }
        Fields::new(f)
    }

    /// Counts read from a placeholder are 0, and it has no snapshots.
    fn from_fields(f: &Fields) -> Result<Self> {
        let count = |name: &str| -> Result<usize> {
            let v = f.get(name)?;
            Ok(if v.is_finite() { v as usize } else { 0 })
        };
        let has = |name: &str| f.pairs().iter().any(|(k, _)| k == name);
        let mut probes = Vec::new();
        for i in 0..count("probe_count")? {
            let at = |k: &str| f.get(&format!("probe{i}_{k}"));
            let reading = if has(&format!("probe{i}_trace")) {
                Some(CrossCov {
                    trace: at("trace")?,
                    frobenius: at("frobenius")?,
                    asymmetry: at("asymmetry")?,
                    p_value: at("p_value")?,
                    relative_iterate_variance: at("relative_iterate_variance")?,
                    probes: at("probes")? as usize,
                    dim: at("dim")? as usize,
                })
            } else {
                None
            };
            probes.push((count(&format!("probe{i}_iteration"))?, reading));
        }
        Ok(FlowCell {
            nll: f.get("nll")?,
            params: count("params")?,
            secs: f.get("secs")?,
            skipped: count("skipped")?,
            probes,
        })
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
            5e-3,
            &extra,
            &mut rng,
        )?;
        let mut data_rng = Rng::new(self.seed ^ 0xf10);
        let pin = self.target.sample(128, &mut Rng::new(12345))?;
        let test = self.target.sample(2000, &mut Rng::new(777))?;
        let series = format!(
            "{}/{}/slack{}/seed{}",
            self.cell(),
            self.target.name(),
            self.lift.slack_init,
            self.seed
        );
        let loss = |m: &Model, w: &[Var<f64>], batch: &Tensor<f64>| -> Result<Var<f64>> {
            log_density(m, w, batch)?.mean_all()?.neg()
        };
        let mut probes = Vec::new();
        let after = |m: &mut Model, it: usize, metrics: &mut Metrics| -> Result<()> {
            // Step decay ×0.5 at 2/3 of the run.
            if it + 1 == 2 * self.iterations / 3 {
                let lr = m.optimizer.lr() * 0.5;
                m.optimizer.set_lr(lr)?;
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
        Ok(FlowResult {
            nll,
            params: m.size(),
            secs: out.seconds,
            skipped: out.skipped,
            probes,
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

/// Runs the experiment and returns its tables.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    cfg.check_known("lift-flow-2d", OPTIONS)?;
    let iterations = cfg.opt("iterations", if cfg.quick { 1000 } else { 3000 })?;
    let width = cfg.opt("width", 32usize)?;
    let layers = cfg.opt("layers", 5usize)?;
    if iterations == 0 || width == 0 || layers == 0 {
        return Err(Error::value(
            "lift-flow-2d",
            format!("--iterations, --width and --layers must be positive, got {iterations}, {width}, {layers}"),
        ));
    }
    let targets: Vec<String> = cfg.opt_list(
        "targets",
        &if cfg.quick {
            vec!["8gaussians".to_string()]
        } else {
            vec!["8gaussians".to_string(), "2spirals".to_string()]
        },
    )?;
    let convention = Convention::parse(&cfg.opt("convention", "cpflow".to_string())?)?;
    let slack_init: f64 = cfg.opt("slack-init", 0.0)?;
    let sweep: Vec<f64> = cfg.opt_list(
        "slack-sweep",
        if cfg.quick {
            &[]
        } else {
            &[-4.0, -2.0, 0.0, 2.0]
        },
    )?;
    let probe_every: usize = cfg.opt("probe-every", if cfg.quick { 0 } else { iterations / 10 })?;
    let control = cfg.opt("control", !cfg.quick)?;
    let seeds = cfg.seed_list(3, 10)?;
    let lift = LiftConfig {
        slack_init,
        ..LiftConfig::default()
    };
    let base = |target, strategy, seed| FlowRun {
        target,
        strategy,
        lift: lift.clone(),
        convention,
        width,
        layers,
        iterations,
        seed,
        probe_every: 0,
        quiet: cfg.quiet,
    };
    let conv = match convention {
        Convention::CpFlow => "CP-Flow conventions (1/fan_in gain)",
        Convention::Ebm => "EBM conventions (raw weights)",
    };
    let setting = format!(
        "ICNN width {width} × {layers}, {iterations} iterations, batch 128, {conv}, lift slack {slack_init}, {} seeds",
        seeds.len()
    );
    let mut metrics = Metrics::default();
    let mut model = Vec::new();
    let mut table = Table::new(
        &format!("lift-flow-2d: convex potential flow, {setting}; test NLL (nats, mean ± std) against the target's entropy and the moment-matched Gaussian's plateau"),
        &[
            "target",
            "method",
            "parameters",
            "test NLL",
            "gap to entropy",
            "seeds ≥ 0.05 nats below the plateau",
            "non-finite steps skipped",
            "s / run",
        ],
    );
    let mut spread = Table::new(
        &format!("lift-flow-2d: the distribution of test NLL over seeds, {setting}"),
        &["target", "method", "min", "median", "max", "sorted"],
    );
    let mut panels = Vec::new();
    let mut sigma = Table::new(
        &format!("lift-flow-2d: σ²_Jac = tr Σ̂_slack during training on the training objective, seed {}, {PROBES} probe batches of 128 per snapshot (trace, permutation p-value in brackets; — = no slack channel); {setting}", seeds[0]),
        &["target", "cell", "snapshots (iteration: trace [p])"],
    );
    let mut sweep_table = Table::new(
        &format!("lift-flow-2d: the lift's initial slack swept (its own table; the headline uses {slack_init}), {setting}"),
        &["target", "slack init", "initial weight softplus(b)", "test NLL", "seeds ≥ 0.05 nats below the plateau"],
    );
    for t in &targets {
        let target = Target2d::parse(t)?;
        let test = target.sample(2000, &mut Rng::new(777))?;
        let lp = target.log_density(&test, 20_000, &mut Rng::new(3))?;
        let entropy = -lp.iter().sum::<f64>() / lp.len() as f64;
        let plateau = moment_matched_nll(target, &test)?;
        let label = format!(
            "{} (entropy {entropy:.3}, Gaussian {plateau:.3})",
            target.name()
        );
        let below = |v: &[f64]| {
            format!(
                "{} of {}",
                v.iter().filter(|&&x| x < plateau - PLATEAU_MARGIN).count(),
                v.len()
            )
        };
        let (mut runs, mut by_strategy) = (Vec::new(), Vec::new());
        for strategy in Strategy::ALL
            .into_iter()
            .filter(|&s| control || s != Strategy::SoftplusWide)
        {
            let (mut nlls, mut secs, mut size, mut skipped) = (vec![], vec![], 0, 0);
            for &seed in &seeds {
                let mut r = base(target, strategy, seed);
                if seed == seeds[0] && strategy != Strategy::SoftplusWide {
                    r.probe_every = probe_every;
                }
                let key = format!("{}/{}/seed{seed}", target.name(), r.cell());
                let out = cfg.cell(&key, &mut metrics, |metrics| {
                    let mut out = r.train(metrics)?;
                    if seed == seeds[0] {
                        model.extend(std::mem::take(&mut out.tensors).into_iter().map(|(k, v)| {
                            (format!("{}.{}.{k}", target.name(), strategy.name()), v)
                        }));
                    }
                    Ok(FlowCell::from(out))
                })?;
                if seed == seeds[0] && probe_every > 0 && strategy != Strategy::SoftplusWide {
                    sigma.row(vec![label.clone(), r.cell(), snapshots(&out.probes)]);
                }
                nlls.push(out.nll);
                secs.push(out.secs);
                size = out.params;
                skipped += out.skipped;
            }
            let gaps: Vec<f64> = nlls.iter().map(|v| v - entropy).collect();
            table.row(vec![
                label.clone(),
                strategy.name().into(),
                size.to_string(),
                mean_std(&nlls, 3),
                mean_std(&gaps, 3),
                below(&nlls),
                skipped.to_string(),
                mean_std(&secs, 1),
            ]);
            let mut sorted = nlls.clone();
            sorted.sort_by(f64::total_cmp);
            spread.row(vec![
                label.clone(),
                strategy.name().into(),
                format!("{:.3}", sorted[0]),
                format!("{:.3}", sorted[sorted.len() / 2]),
                format!("{:.3}", sorted[sorted.len() - 1]),
                sorted
                    .iter()
                    .map(|v| format!("{v:.2}"))
                    .collect::<Vec<_>>()
                    .join(" "),
            ]);
            runs.push((strategy.name().to_string(), nlls.clone()));
            by_strategy.push((strategy, nlls));
        }
        table.evidence.extend(super::lift_evidence(
            &format!("lift-flow-2d, {}", target.name()),
            "test NLL",
            &by_strategy,
        ));
        panels.push(distribution_panel(target.name(), plateau, &runs));
        if probe_every > 0 {
            for variant in [LiftVariant::NoSlack, LiftVariant::Code] {
                let mut r = base(target, Strategy::Lift, seeds[0]);
                r.lift.variant = variant;
                r.probe_every = probe_every;
                let key = format!("{}/{}/seed{}", target.name(), r.cell(), seeds[0]);
                let out = cfg.cell(&key, &mut metrics, |m| Ok(FlowCell::from(r.train(m)?)))?;
                sigma.row(vec![label.clone(), r.cell(), snapshots(&out.probes)]);
            }
        }
        for &b in &sweep {
            let mut nlls = Vec::new();
            for &seed in &seeds {
                let mut r = base(target, Strategy::Lift, seed);
                r.lift.slack_init = b;
                let key = format!("{}/lift-slack{b}/seed{seed}", target.name());
                let out = cfg.cell(&key, &mut metrics, |m| Ok(FlowCell::from(r.train(m)?)))?;
                nlls.push(out.nll);
            }
            sweep_table.row(vec![
                label.clone(),
                b.to_string(),
                format!("{:.4}", b.exp().ln_1p()),
                mean_std(&nlls, 3),
                below(&nlls),
            ]);
        }
    }
    let mut tables = vec![table, spread];
    if probe_every > 0 {
        tables.push(sigma);
    }
    if !sweep.is_empty() {
        tables.push(sweep_table);
    }
    let dir = cfg.run_dir("lift-flow-2d")?;
    dir.write_figure(
        "distribution.svg",
        &svg::render("lift-flow-2d: test NLL over seeds", &panels),
    )?;
    dir.finish(
        "lift-flow-2d",
        Plot::Curves {
            title: "lift-flow-2d: training NLL and σ²_Jac",
            metrics: &metrics,
            panels: &[("train_loss", false), ("sigma2_jac", false)],
            x_label: "iteration",
        },
        model,
        tables,
    )
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
            5e-3,
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
