//! `lift-ebm-1d`: log-concave energy-based models q(x) ∝ exp(−F(x)) with F an ICNN,
//! fitted by maximum likelihood to Gumbel and Laplace samples. In 1-D the partition
//! function is a quadrature on a fine grid (exact to the grid's resolution), so the
//! loss is the exact NLL and the total-variation distance to the target is exact too.
//! Beside PGD, softplus and the lift, every seed trains the three controls of the
//! lift's mechanism (capacity, step size, batch coupling; see [`super::controls`]).
//! `--probe-every` measures σ²_Jac = tr Σ̂_slack during training on that objective
//! (log Z included) for every cell but the width-matched softplus, and for the
//! lift without its slack.

use super::cells::{self, Probes};
use super::controls::{self, MULTIPLIERS_HELP};
use super::density::Density;
use super::groups::Rule;
use super::landscape::{Slice, Trajectory};
use super::shoulder::{self, StudyTables, SGD_LRS};
use super::{
    cell_name, icnn_config, record_sigma, snapshots, Convention, Escape, Model, ShoulderTrack,
    Strategy, PROBES, SIGMA_SIGN,
};
use crate::cli::RunConfig;
use crate::data::toy::Target1d;
use crate::error::{Error, Result};
use crate::grid::{Grid, Numbers};
use crate::report::heatmap::{self, Heatmap};
use crate::report::{Metrics, Plot, Table};
use crate::sweep::field;
use autograd::{no_grad, Var};
use nn::checkpoint::NamedTensors;
use optim::lift::{LiftConfig, LiftVariant};
use optim::AdamConfig;
use tensor::{Rng, Tensor};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    ("iterations", "training iterations (quick 500, full 3000)"),
    ("width", "ICNN width (quick 32, full 128)"),
    (
        "control",
        "include the width-matched softplus control (quick false: at the lift's parameter count it costs ten times the lift per run; full true)",
    ),
    ("multipliers", MULTIPLIERS_HELP),
    (
        "sgd-lrs",
        "the SGD study's learning rates: PGD, softplus, the lift and the learned-code lift also trained by plain SGD from the authors' start and from the shoulder start (latents at -4), the rate chosen per strategy and start on validation, with escape dynamics (quick none, full 0.0001,0.001,0.01,0.1,1,10)",
    ),
    ("targets", "quick gumbel; full gumbel,laplace"),
    (
        "grid",
        "quadrature points for log Z during training (quick 400, full 2000)",
    ),
    (
        "probe-every",
        "measure σ²_Jac every this many iterations at the first seed for the five cells, 0 = off (iterations/5)",
    ),
    (
        "landscape",
        "grid points per axis of the loss-landscape slices (landscape.svg) at the first seed, 0 = off (quick 15, full 31)",
    ),
    (
        "emit",
        "what the lift's hypernetwork emits: all (every ICNN parameter, as the authors' EBM; default) or constrained (only the non-negative weights, as their CP-Flow lift)",
    ),
];

/// An evenly spaced grid over the target's window, as `[n, 1]`, and its spacing.
fn grid(target: Target1d, n: usize) -> Result<(Tensor<f64>, f64)> {
    let (a, b) = target.window();
    let dx = (b - a) / n as f64;
    let g = Tensor::from_vec((0..n).map(|i| a + (i as f64 + 0.5) * dx).collect(), &[n, 1])?;
    Ok((g, dx))
}

/// log Z = logsumexp(−F(grid)) + ln dx, differentiable.
fn log_partition(m: &Model, w: &[Var<f64>], g: &Var<f64>, dx: f64) -> Result<Var<f64>> {
    Ok(m.net
        .forward_with(g, w)?
        .neg()?
        .logsumexp(&[0, 1], false)?
        .add_scalar(dx.ln())?)
}

/// Total-variation distance between the model (weights `w`) and the target on an
/// evaluation grid.
fn total_variation(m: &Model, w: &[Var<f64>], target: Target1d, n: usize) -> Result<f64> {
    let (g, dx) = grid(target, n)?;
    let f = m
        .net
        .forward_with(&Var::constant(g.clone()), w)?
        .value()
        .to_vec();
    let fmin = f.iter().cloned().fold(f64::INFINITY, f64::min);
    let q: Vec<f64> = f.iter().map(|v| (-(v - fmin)).exp()).collect();
    let zq: f64 = q.iter().sum::<f64>() * dx;
    let p: Vec<f64> = g
        .to_vec()
        .iter()
        .map(|&x| target.log_density(x).exp())
        .collect();
    let zp: f64 = p.iter().sum::<f64>() * dx;
    Ok(0.5
        * p.iter()
            .zip(&q)
            .map(|(a, b)| (a / zp - b / zq).abs())
            .sum::<f64>()
        * dx)
}

/// The outcome of one run.
pub struct RunResult {
    /// Total variation to the target on an 8000-point grid.
    pub tv: f64,
    /// Test NLL with log Z by quadrature.
    pub nll: f64,
    /// The same on validation samples drawn apart from the test samples.
    pub val_nll: f64,
    /// Final shoulder occupancy.
    pub shoulder: f64,
    /// Trainable parameters.
    pub params: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Steps skipped for a non-finite loss or gradient.
    pub skipped: usize,
    /// σ²_Jac snapshots (iteration, reading).
    pub probes: Probes,
    /// Per-entry shoulder dynamics (runs that probe, 100 snapshots).
    pub escape: Option<Escape>,
    /// The trained model.
    pub tensors: NamedTensors,
    /// Loss-landscape slices (θ-space, and for the lift its own parameter space).
    pub landscapes: Vec<Landscape>,
}

/// One loss-landscape slice of a run: test NLL over a 2-D slice through the
/// trajectory's top PCA directions.
pub struct Landscape {
    /// "θ" (the emitted or stored non-negative weights) or "lifted (φ, b)".
    pub space: &'static str,
    /// The slice.
    pub slice: Slice,
    /// The picture.
    pub map: Heatmap,
}

impl Landscape {
    /// Evaluates `nll` on an `n × n` grid over `slice`.
    fn evaluate(
        space: &'static str,
        title: String,
        slice: Slice,
        n: usize,
        nll: &mut dyn FnMut(Vec<Tensor<f64>>) -> Result<f64>,
    ) -> Result<Landscape> {
        let axis = slice.axis(n);
        let mut values = Vec::with_capacity(n);
        for &b in &axis {
            let mut row = Vec::with_capacity(n);
            for &a in &axis {
                row.push(nll(slice.point(a, b)?)?);
            }
            values.push(row);
        }
        let map = Heatmap {
            title,
            values,
            alphas: axis.clone(),
            betas: axis,
            path: slice.coords.clone(),
        };
        Ok(Landscape { space, slice, map })
    }

    /// The NLL at the centre, the grid's minimum and median.
    fn summary(&self) -> (f64, f64, f64) {
        let n = self.map.alphas.len();
        let centre = self.map.values[n / 2][n / 2];
        let mut v: Vec<f64> = self
            .map
            .values
            .iter()
            .flatten()
            .cloned()
            .filter(|x| x.is_finite())
            .collect();
        v.sort_by(f64::total_cmp);
        (
            centre,
            v.first().copied().unwrap_or(f64::NAN),
            v.get(v.len() / 2).copied().unwrap_or(f64::NAN),
        )
    }
}

/// One training run's settings.
#[derive(Clone)]
pub struct Run1d {
    /// The density fitted.
    pub target: Target1d,
    /// The positivity strategy.
    pub strategy: Strategy,
    /// The lift's settings.
    pub lift: LiftConfig,
    /// The optimiser (the authors': Adam at 1e-3).
    pub rule: Rule,
    /// Where the weights start (the authors': [`Convention::Ebm`]).
    pub convention: Convention,
    /// ICNN width.
    pub width: usize,
    /// Training iterations.
    pub iterations: usize,
    /// Quadrature points for log Z during training.
    pub grid_n: usize,
    /// Seed of the initialisation and the batches.
    pub seed: u64,
    /// Measure σ²_Jac every this many iterations (0 = never).
    pub probe_every: usize,
    /// Track every latent's shoulder membership at 100 snapshots.
    pub track: bool,
    /// Grid points per axis of the landscape slices (0 = none).
    pub landscape: usize,
    /// No progress lines.
    pub quiet: bool,
}

impl Run1d {
    /// The authors' run of `strategy` on `target` at `seed` (Adam at 1e-3, the EBM
    /// start), no diagnostics.
    pub fn new(
        target: Target1d,
        strategy: Strategy,
        (width, iterations, grid_n): (usize, usize, usize),
        seed: u64,
    ) -> Run1d {
        Run1d {
            target,
            strategy,
            lift: LiftConfig::default(),
            rule: Rule::Adam(AdamConfig::adam(1e-3)),
            convention: Convention::Ebm,
            width,
            iterations,
            grid_n,
            seed,
            probe_every: 0,
            track: false,
            landscape: 0,
            quiet: true,
        }
    }

    /// Trains and scores the run.
    pub fn train(&self, metrics: &mut Metrics) -> Result<RunResult> {
        train_one(self, metrics)
    }
}

/// One training run.
fn train_one(run: &Run1d, metrics: &mut Metrics) -> Result<RunResult> {
    let Run1d {
        target,
        strategy,
        ref lift,
        ref rule,
        convention,
        width,
        iterations,
        grid_n,
        seed,
        probe_every,
        track: tracked,
        landscape,
        quiet,
    } = *run;
    let mut rng = Rng::new(seed);
    let m = Model::new(
        strategy,
        convention,
        icnn_config(1, width, 3, 0.02),
        lift,
        rule.clone(),
        &[],
        &mut rng,
    )?;
    let (g, dx) = grid(target, grid_n)?;
    let gv = Var::constant(g);
    let mut data_rng = Rng::new(seed ^ 0xdada);
    let pin = target.sample(256, &mut Rng::new(12345))?;
    let test = Var::constant(target.sample(4000, &mut Rng::new(777))?);
    let validation = Var::constant(target.sample(4000, &mut Rng::new(778))?);
    let regime = shoulder::regime(rule, convention);
    let series = format!(
        "{}/{}{regime}/seed{seed}",
        cell_name(strategy, lift.variant),
        target.name()
    );
    let loss = |m: &Model, w: &[Var<f64>], batch: &Tensor<f64>| -> tensor::Result<Var<f64>> {
        let fx = m
            .net
            .forward_with(&Var::constant(batch.clone()), w)?
            .mean_all()?;
        fx.add(&log_partition(m, w, &gv, dx)?)
    };
    let mut probes = Vec::new();
    let mut track = ShoulderTrack::default();
    let track_every = (iterations / 100).max(1);
    let (mut theta_path, mut lifted_path) = (Trajectory::default(), Trajectory::default());
    let lifted_params: Vec<nn::Param<f64>> = m
        .store
        .trainable()
        .into_iter()
        .filter(|p| strategy.lifts() && p.name().starts_with("positivity"))
        .collect();
    let snap_every = (iterations / 40).max(1);
    let after = |m: &mut Model, it: usize, metrics: &mut Metrics| -> tensor::Result<()> {
        if (tracked || probe_every > 0) && (it.is_multiple_of(track_every) || it == 1) {
            let exits = track.record(m, &pin, strategy == Strategy::Pgd)?;
            metrics.push(&series, it, "shoulder_exits", exits);
        }
        if probe_every > 0 && (it.is_multiple_of(probe_every) || it == 1) {
            record_sigma(
                m,
                &mut |r| target.sample(256, r),
                &loss,
                seed,
                it,
                &series,
                metrics,
                &mut probes,
            )?;
        }
        if landscape > 0 && (it.is_multiple_of(snap_every) || it == 1 || it == iterations) {
            let w = no_grad(|| m.positivity.weights(&pin))?;
            theta_path.push(&w.iter().map(|v| v.value().clone()).collect::<Vec<_>>())?;
            if !lifted_params.is_empty() {
                lifted_path.push(&lifted_params.iter().map(|p| p.value()).collect::<Vec<_>>())?;
            }
        }
        Ok(())
    };
    let scores = |m: &Model| -> tensor::Result<Vec<(String, f64)>> {
        let occupancy = m.positivity.shoulder_occupancy(&pin)?;
        let w = m.positivity.weights(&pin)?;
        let tv = total_variation(m, &w, target, 2000)?;
        Ok(vec![
            ("shoulder_occupancy".into(), occupancy),
            ("tv".into(), tv),
        ])
    };
    let (m, out) = Density {
        model: m,
        step: Box::new(|m: &mut Model| m.step(&target.sample(256, &mut data_rng)?, 1.0, &loss)),
        after: Box::new(after),
        scores: Box::new(scores),
    }
    .train(iterations, iterations / 25, &series, quiet, metrics)?;
    let w = no_grad(|| m.positivity.weights(&pin))?;
    let tv = no_grad(|| total_variation(&m, &w, target, 8000))?;
    let (fine, fdx) = grid(target, 8000)?;
    let (nll, val_nll) = no_grad(|| -> Result<(f64, f64)> {
        let lz = log_partition(&m, &w, &Var::constant(fine), fdx)?;
        let on = |x: &Var<f64>| m.net.forward_with(x, &w)?.mean_all()?.add(&lz)?.item();
        Ok((on(&test)?, on(&validation)?))
    })?;
    let mut landscapes = Vec::new();
    if landscape > 0 {
        let (coarse, cdx) = grid(target, 2000)?;
        let coarse = Var::constant(coarse);
        let score = |m: &Model, w: &[Var<f64>]| -> Result<f64> {
            Ok(no_grad(|| {
                let lz = log_partition(m, w, &coarse, cdx)?;
                m.net.forward_with(&test, w)?.mean_all()?.add(&lz)?.item()
            })?)
        };
        let cell = cell_name(strategy, lift.variant);
        let slice = Slice::of(&theta_path)?;
        landscapes.push(Landscape::evaluate(
            "θ",
            format!(
                "{}, {cell}: test NLL over θ ({:.0} % of the path's variance)",
                target.name(),
                100.0 * slice.explained
            ),
            slice,
            landscape,
            &mut |w| score(&m, &w.into_iter().map(Var::constant).collect::<Vec<_>>()),
        )?);
        if !lifted_params.is_empty() {
            let slice = Slice::of(&lifted_path)?;
            let saved: Vec<Tensor<f64>> = lifted_params.iter().map(|p| p.value()).collect();
            let title = format!(
                "{}, {cell}: test NLL over the lifted (φ, b) ({:.0} %)",
                target.name(),
                100.0 * slice.explained
            );
            let map = Landscape::evaluate("lifted (φ, b)", title, slice, landscape, &mut |point| {
                for (p, v) in lifted_params.iter().zip(point) {
                    p.set(v)?;
                }
                let w = no_grad(|| m.positivity.weights(&pin))?;
                score(&m, &w)
            });
            for (p, v) in lifted_params.iter().zip(saved) {
                p.set(v)?;
            }
            landscapes.push(map?);
        }
    }
    Ok(RunResult {
        landscapes,
        tv,
        nll,
        val_nll,
        shoulder: m.positivity.shoulder_occupancy(&pin)?,
        params: m.size(),
        seconds: out.seconds,
        skipped: out.skipped,
        probes,
        escape: (tracked || probe_every > 0).then(|| track.escape()),
        tensors: m.store.to_tensors(),
    })
}

impl RunResult {
    /// The cell's numbers: the scores, the counts, the σ²_Jac snapshots and the
    /// escape summary of a probing run.
    fn numbers(&self) -> Numbers {
        let mut numbers = vec![
            ("tv".to_string(), self.tv),
            ("nll".to_string(), self.nll),
            ("val_nll".to_string(), self.val_nll),
            ("shoulder".to_string(), self.shoulder),
            ("secs".to_string(), self.seconds),
            ("params".to_string(), self.params as f64),
            ("skipped".to_string(), self.skipped as f64),
        ];
        numbers.extend(cells::probe_numbers(&self.probes));
        if let Some(e) = &self.escape {
            numbers.extend(e.numbers());
        }
        numbers
    }
}

/// The escape summary back from a cell's numbers (`None` when it has none).
fn escape_from(numbers: &Numbers) -> Result<Option<Escape>> {
    if !numbers.iter().any(|(k, _)| k == "escape_ever") {
        return Ok(None);
    }
    Ok(Some(Escape {
        ever: field(numbers, "escape_ever")?,
        left: field(numbers, "escape_left")?,
        changes: field(numbers, "escape_changes")?,
    }))
}

/// The options of one run.
struct Options {
    iterations: usize,
    width: usize,
    grid_n: usize,
    targets: Vec<Target1d>,
    lift: LiftConfig,
    probe_every: usize,
    landscape: usize,
    control: bool,
    multipliers: Vec<f64>,
    sgd_lrs: Vec<f64>,
    quiet: bool,
}

impl Options {
    /// The options from the command line.
    fn parse(cfg: &RunConfig) -> Result<Options> {
        cfg.check_known("lift-ebm-1d", OPTIONS)?;
        let iterations = cfg.opt_positive("iterations", if cfg.quick { 500 } else { 3000 })?;
        let landscape = cfg.opt("landscape", if cfg.quick { 15 } else { 31 })?;
        if landscape == 1 {
            return Err(Error::usage(
                "--landscape needs at least 2 grid points per axis (or 0 for none)",
            ));
        }
        let default_targets: &[&str] = if cfg.quick {
            &["gumbel"]
        } else {
            &["gumbel", "laplace"]
        };
        let default_targets: Vec<String> = default_targets.iter().map(|t| t.to_string()).collect();
        let targets = cfg
            .opt_list("targets", &default_targets)?
            .iter()
            .map(|t| Target1d::parse(t))
            .collect::<tensor::Result<_>>()?;
        Ok(Options {
            iterations,
            width: cfg.opt_positive("width", if cfg.quick { 32 } else { 128 })?,
            grid_n: cfg.opt_positive("grid", if cfg.quick { 400 } else { 2000 })?,
            targets,
            lift: LiftConfig {
                emit_all: super::parse_emit(&cfg.opt("emit", "all".to_string())?)?,
                ..LiftConfig::default()
            },
            probe_every: cfg.opt("probe-every", iterations / 5)?,
            landscape,
            control: cfg.opt("control", !cfg.quick)?,
            multipliers: cfg.opt_list("multipliers", controls::multipliers(cfg.quick))?,
            sgd_lrs: cfg.opt_list("sgd-lrs", if cfg.quick { &[] } else { &SGD_LRS[..] })?,
            quiet: cfg.quiet,
        })
    }

    /// The run of `strategy` (with `lift`'s settings) on `target` at `seed`, with
    /// σ²_Jac snapshots every `probe_every` and landscapes of `landscape` points.
    fn run(
        &self,
        (target, strategy, lift): (Target1d, Strategy, &LiftConfig),
        seed: u64,
        (probe_every, landscape): (usize, usize),
    ) -> Run1d {
        Run1d {
            lift: lift.clone(),
            probe_every,
            landscape,
            quiet: self.quiet,
            ..Run1d::new(
                target,
                strategy,
                (self.width, self.iterations, self.grid_n),
                seed,
            )
        }
    }
}

/// The tables and landscape maps a run fills, target by target.
struct Tables {
    headline: Table,
    lands: Table,
    escapes: Table,
    sigma: Table,
    choice: Table,
    study: StudyTables,
    maps: Vec<Heatmap>,
}

impl Tables {
    fn new(o: &Options, seeds: usize, first: u64) -> Tables {
        let (n, iterations, width) = (o.landscape, o.iterations, o.width);
        Tables {
            headline: Table::new(
                &format!(
                    "lift-ebm-1d: log-concave EBM, ICNN width {width} × 3 layers, {iterations} iterations, batch 256, {seeds} seeds, the lift emitting {}; TV and test NLL with log Z by quadrature (exact in 1-D)",
                    if o.lift.emit_all { "every ICNN parameter" } else { "the constrained weights" }
                ),
                &["target", "method", "parameters", "total variation", "test NLL", "shoulder occupancy", "non-finite steps skipped", "s / run"],
            ),
            lands: Table::new(
                &format!("lift-ebm-1d: loss landscapes at seed {first} (landscape.svg): test NLL on a {n}×{n} grid over the slice through the last iterate along the trajectory's top two PCA directions (filter-normalised, radius 1.6 × the path's extent), in θ (the non-negative weights) and, for the lift, in its own (φ, b)"),
                &["target", "cell", "space", "path variance in the slice", "NLL at the last iterate", "grid minimum", "grid median"],
            ),
            escapes: Table::new(
                &format!("lift-ebm-1d: escape dynamics, seed {first}: every latent entry's shoulder membership (sigmoid(θ̃) ≤ 0.05; PGD: clamped to 0) at 100 snapshots over training"),
                &["target", "cell", "entries ever on the shoulder", "of all entries, on it and later off", "state changes per entry"],
            ),
            sigma: Table::new(
                &format!("lift-ebm-1d: σ²_Jac = tr Σ̂_slack during training on the objective with log Z, seed {first}, {PROBES} probe batches of 256 per snapshot (trace, permutation p-value in brackets; — = no slack channel); the theorem: zero without a slack or a batch-dependent body; {SIGMA_SIGN}"),
                &["target", "cell", "snapshots (iteration: trace [p])"],
            ),
            choice: controls::choice_table(
                "lift-ebm-1d",
                &format!("ICNN width {width} × 3 layers, {iterations} iterations, {seeds} seeds, 4,000 validation samples"),
            ),
            study: StudyTables::new(shoulder::EBM_1D, &format!(
                "ICNN width {width} × 3 layers, {iterations} iterations, batch 256, gradient norm clipped at 1, {seeds} seeds"
            )),
            maps: Vec::new(),
        }
    }

    /// The σ²_Jac and escape rows of `cell` from its first-seed numbers.
    fn probe_rows(&mut self, target: &str, cell: &str, numbers: &Numbers) -> Result<()> {
        let probes = cells::probes_from(numbers)?;
        self.sigma
            .row(vec![target.into(), cell.into(), snapshots(&probes)]);
        if let Some(e) = escape_from(numbers)? {
            self.escapes.row(escape_row(target, cell, &e));
        }
        Ok(())
    }

    /// The landscape rows and maps of a first-seed run.
    fn landscape_rows(&mut self, target: &str, cell: &str, landscapes: Vec<Landscape>) {
        for l in landscapes {
            let (centre, min, median) = l.summary();
            self.lands.row(vec![
                target.into(),
                cell.into(),
                l.space.into(),
                format!("{:.1} %", 100.0 * l.slice.explained),
                format!("{centre:.3}"),
                format!("{min:.3}"),
                format!("{median:.3}"),
            ]);
            self.maps.push(l.map);
        }
    }
}

/// Trains `strategy` on `target` over the grid's seeds; the first seed probes (but
/// for the width-matched control), draws the landscapes and keeps its model.
fn train_arm(
    o: &Options,
    (target, strategy): (Target1d, Strategy),
    grid: &mut Grid,
    (t, metrics, model): (&mut Tables, &mut Metrics, &mut NamedTensors),
) -> Result<()> {
    let (first, name, arm) = (grid.seeds()[0], target.name(), strategy.name());
    let diagnosed = strategy != Strategy::SoftplusWide;
    grid.run(&arm, name, metrics, |seed, _, metrics| {
        let depth = if seed == first && diagnosed {
            (o.probe_every, o.landscape)
        } else {
            (0, 0)
        };
        let mut r = o
            .run((target, strategy, &o.lift), seed, depth)
            .train(metrics)?;
        t.landscape_rows(name, &arm, std::mem::take(&mut r.landscapes));
        if seed == first {
            cells::keep_model(model, (name, &arm), std::mem::take(&mut r.tensors));
        }
        Ok(r.numbers())
    })?;
    if diagnosed && o.probe_every > 0 {
        t.probe_rows(name, &arm, grid.numbers(&arm, name, first)?)?;
    }
    Ok(())
}

/// Every strategy and control on `target` over the grid's seeds, the step-size
/// control at the M chosen on validation: the headline rows, the choice's rows
/// and the evidence of both claims.
fn headline(
    o: &Options,
    target: Target1d,
    grid: &mut Grid,
    (t, metrics, model): (&mut Tables, &mut Metrics, &mut NamedTensors),
) -> Result<()> {
    let (a, b) = target.window();
    let samples = target.sample(200_000, &mut Rng::new(1))?.to_vec();
    let h = -samples.iter().map(|&x| target.log_density(x)).sum::<f64>() / 200_000.0;
    let name = target.name();
    let arms = Strategy::arms(o.control);
    let (arms, choice) = controls::train_with_controls(arms, &o.multipliers, |strategy| {
        let parts = (&mut *t, &mut *metrics, &mut *model);
        train_arm(o, (target, strategy), grid, parts)?;
        Ok(grid.values(&strategy.name(), name, "val_nll")?)
    })?;
    controls::choice_rows(&mut t.choice, name, &choice);
    let (mut all_tv, mut all_nll) = (Vec::new(), Vec::new());
    for strategy in arms {
        let arm = strategy.name();
        t.headline.row(vec![
            format!("{name} (entropy {h:.3}, window [{a}, {b}])"),
            arm.clone(),
            cells::params(grid, &arm, name)?.to_string(),
            grid.mean_std(&arm, name, "tv", 4)?,
            grid.mean_std(&arm, name, "nll", 3)?,
            grid.mean_std(&arm, name, "shoulder", 3)?,
            cells::skipped(grid, &arm, name)?.to_string(),
            grid.mean_std(&arm, name, "secs", 1)?,
        ]);
        all_tv.push((strategy, grid.values(&arm, name, "tv")?));
        all_nll.push((strategy, grid.values(&arm, name, "nll")?));
    }
    let setting = format!("lift-ebm-1d, {name}");
    let evidence = &mut t.headline.evidence;
    evidence.extend(super::lift_evidence(&setting, "total variation", &all_tv));
    evidence.extend(super::lift_evidence(&setting, "test NLL", &all_nll));
    Ok(())
}

/// σ²_Jac and escapes of the lift without its slack at the first seed (the
/// learned-code lift is a headline control).
fn ablations(
    o: &Options,
    target: Target1d,
    grid: &mut Grid,
    (t, metrics): (&mut Tables, &mut Metrics),
) -> Result<()> {
    let first = grid.seeds()[0];
    let ablation = LiftConfig {
        variant: LiftVariant::NoSlack,
        ..o.lift.clone()
    };
    let cell = cell_name(Strategy::Lift, LiftVariant::NoSlack);
    grid.run_first(&cell, target.name(), metrics, |seed, _, metrics| {
        let depth = (o.probe_every, 0);
        Ok(o.run((target, Strategy::Lift, &ablation), seed, depth)
            .train(metrics)?
            .numbers())
    })?;
    t.probe_rows(
        target.name(),
        &cell,
        grid.numbers(&cell, target.name(), first)?,
    )
}

/// Runs the experiment and returns its tables.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    let o = Options::parse(cfg)?;
    let seeds = cfg.seed_list(3, 5)?;
    let mut t = Tables::new(&o, seeds.len(), seeds[0]);
    let mut grid = Grid::new(cfg, seeds);
    let (mut metrics, mut model) = (Metrics::default(), Vec::new());
    for &target in &o.targets {
        headline(&o, target, &mut grid, (&mut t, &mut metrics, &mut model))?;
        if o.probe_every > 0 {
            ablations(&o, target, &mut grid, (&mut t, &mut metrics))?;
        }
        if !o.sgd_lrs.is_empty() {
            let base = o.run((target, Strategy::Lift, &o.lift), 0, (0, 0));
            let mut run = |strategy, rule: &Rule, convention, seed, m: &mut Metrics| {
                let run = Run1d {
                    strategy,
                    rule: rule.clone(),
                    convention,
                    seed,
                    track: true,
                    ..base.clone()
                };
                Ok(run.train(m)?.numbers())
            };
            let parts = (&mut t.study, &mut metrics);
            let start = (target.name(), Convention::Ebm);
            shoulder::run_target(start, &o.sgd_lrs, &mut grid, &mut run, parts)?;
        }
    }
    let mut tables = vec![t.headline, t.choice];
    if !o.sgd_lrs.is_empty() {
        tables.push(t.study.table);
        tables.push(t.study.choice);
    }
    if o.landscape > 0 {
        tables.push(t.lands);
    }
    if o.probe_every > 0 {
        tables.push(t.sigma);
        tables.push(t.escapes);
    }
    let dir = cfg.run_dir("lift-ebm-1d")?;
    if !t.maps.is_empty() {
        dir.write_figure(
            "landscape.svg",
            &heatmap::render(
                "lift-ebm-1d: loss landscapes along the training path (white; ○ start, ● end)",
                &t.maps,
            ),
        )?;
    }
    Ok(dir.finish(
        "lift-ebm-1d",
        Plot::Curves {
            title: "lift-ebm-1d: total variation, NLL and shoulder occupancy over training",
            metrics: &metrics,
            panels: &[
                ("tv", true),
                ("train_loss", false),
                ("shoulder_occupancy", false),
                ("sigma2_jac", false),
                ("shoulder_exits", false),
            ],
            x_label: "iteration",
        },
        model,
        tables,
    )?)
}

/// A row of the escape table.
fn escape_row(target: &str, cell: &str, e: &Escape) -> Vec<String> {
    vec![
        target.into(),
        cell.into(),
        format!("{:.3}", e.ever),
        format!("{:.3}", e.left),
        format!("{:.2}", e.changes),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_landscape_leaves_training_and_the_trained_model_untouched() {
        // Measuring the landscapes (snapshots during training, the lifted-space grid
        // that writes the hypernetwork's parameters) changes nothing a run reports:
        // the same model bits and NLL as an unmeasured run; the lift gets a θ and a
        // lifted slice, PGD only θ.
        let lift = LiftConfig::default();
        let run = |strategy, landscape| {
            Run1d {
                lift: lift.clone(),
                landscape,
                ..Run1d::new(Target1d::Gumbel, strategy, (8, 30, 200), 3)
            }
            .train(&mut Metrics::default())
            .unwrap()
        };
        for (strategy, slices) in [(Strategy::Lift, 2), (Strategy::Pgd, 1)] {
            let (plain, measured) = (run(strategy, 0), run(strategy, 4));
            assert_eq!(measured.landscapes.len(), slices);
            assert_eq!(measured.nll.to_bits(), plain.nll.to_bits());
            let bits = |r: &RunResult| -> Vec<(String, Vec<u64>)> {
                r.tensors
                    .iter()
                    .map(|(k, v)| {
                        let nn::checkpoint::AnyTensor::F64(t) = v else {
                            panic!("the lift models are f64")
                        };
                        (k.clone(), t.to_vec().iter().map(|x| x.to_bits()).collect())
                    })
                    .collect()
            };
            assert_eq!(bits(&measured), bits(&plain));
            let l = &measured.landscapes[0];
            assert_eq!(l.map.values.len(), 4);
            assert!(l.map.values.iter().flatten().all(|v| v.is_finite()));
        }
    }
}
