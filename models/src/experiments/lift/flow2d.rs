//! `lift-flow-2d`: convex potential flows in 2-D. The map x ↦ ∇ₓF(x) of a strongly
//! convex potential F(x) = softplus(a)·ICNN(x) + softplus(c)·½‖x‖² sends data to a
//! standard normal; log p(x) = log N(∇F(x)) + log det ∇²F(x), with the 2×2 Hessian
//! built by nested autograd (so training differentiates to third order).

use super::{icnn_config, Model, Strategy};
use crate::cli::RunConfig;
use crate::data::toy::Target2d;
use crate::report::{mean_std, progress::Progress, Metrics, RunDir, Table};
use autograd::{grad, no_grad, Var};
use nn::checkpoint::NamedTensors;
use optim::lift::LiftConfig;
use optim::Optimizer;
use tensor::{Result, Rng, Tensor};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    ("iterations", "training iterations (quick 400, full 3000)"),
    ("width", "ICNN width (32)"),
    ("layers", "ICNN layers (quick 3, full 5)"),
    (
        "control",
        "include the width-matched softplus control (quick false, full true)",
    ),
    ("targets", "8gaussians,2spirals"),
];

/// log p(x) per row of `x` `[n, 2]` under the flow with weights `w`.
fn log_density(m: &Model, w: &[Var<f64>], x: &Tensor<f64>) -> Result<Var<f64>> {
    let xv = Var::leaf(x.clone());
    let scale = m.scalar("flow.scale")?.softplus()?;
    let quad = m.scalar("flow.quad")?.softplus()?;
    let f = m
        .net
        .forward_with(&xv, w)?
        .mul(&scale)?
        .add(&xv.square()?.sum(&[1], true)?.mul_scalar(0.5)?.mul(&quad)?)?;
    let z = grad(&[&f.sum_all()?], &[&xv], None, true)?.remove(0);
    let row = |j: usize| -> Result<Var<f64>> {
        let zj = z.narrow(1, j, 1)?.sum_all()?;
        Ok(grad(&[&zj], &[&xv], None, true)?.remove(0))
    };
    let (h0, h1) = (row(0)?, row(1)?);
    let det = h0
        .narrow(1, 0, 1)?
        .mul(&h1.narrow(1, 1, 1)?)?
        .sub(&h0.narrow(1, 1, 1)?.mul(&h1.narrow(1, 0, 1)?)?)?;
    let log_normal = z
        .square()?
        .sum(&[1], true)?
        .mul_scalar(-0.5)?
        .add_scalar(-(2.0 * std::f64::consts::PI).ln())?;
    log_normal.add(&det.ln()?)
}

/// One training run; returns (test NLL, parameters, seconds) and the trained model's
/// tensors.
#[allow(clippy::too_many_arguments)]
pub fn train_one(
    target: Target2d,
    strategy: Strategy,
    width: usize,
    layers: usize,
    iterations: usize,
    seed: u64,
    quiet: bool,
    metrics: &mut Metrics,
) -> Result<((f64, usize, f64), NamedTensors)> {
    let mut rng = Rng::new(seed);
    let lift = LiftConfig {
        slack_init: 0.0,
        ..LiftConfig::default()
    };
    let extra = [
        ("flow.scale", 0.0),
        ("flow.quad", (std::f64::consts::E - 1.0).ln()),
    ];
    let mut m = Model::new(
        strategy,
        icnn_config(2, width, layers, 0.0),
        &lift,
        5e-3,
        &extra,
        &mut rng,
    )?;
    let mut data_rng = Rng::new(seed ^ 0xf10);
    let pin = target.sample(128, &mut Rng::new(12345))?;
    let test = target.sample(2000, &mut Rng::new(777))?;
    let series = format!("{}/{}/seed{seed}", target.name(), strategy.name());
    let mut progress = Progress::new(&series, iterations, quiet);
    let loss = |m: &Model, w: &[Var<f64>], batch: &Tensor<f64>| -> Result<Var<f64>> {
        log_density(m, w, batch)?.mean_all()?.neg()
    };
    let every = (iterations / 20).max(1);
    let mut lr_base = m.optimizer.lr();
    for it in 1..=iterations {
        // Step decay ×0.5 at 2/3 of the run.
        if it == 2 * iterations / 3 {
            lr_base *= 0.5;
            m.optimizer.set_lr(lr_base)?;
        }
        let batch = target.sample(128, &mut data_rng)?;
        let l = m.step(&batch, 10.0, &loss)?;
        progress.update(it, it, l);
        if it % every == 0 || it == iterations {
            metrics.push(&series, it, "train_nll", l);
        }
    }
    let w = no_grad(|| m.positivity.weights(&pin))?;
    let w: Vec<Var<f64>> = w.iter().map(|v| v.detach()).collect();
    let nll = -log_density(&m, &w, &test)?.mean_all()?.item()?;
    Ok(((nll, m.size(), progress.elapsed()), m.store.to_tensors()))
}

/// Runs the experiment and returns its table.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    cfg.check_known("lift-flow-2d", OPTIONS)?;
    let iterations = cfg.opt("iterations", if cfg.quick { 400 } else { 3000 })?;
    let width = cfg.opt("width", 32usize)?;
    let layers = cfg.opt("layers", if cfg.quick { 3usize } else { 5 })?;
    let targets: Vec<String> = cfg.opt_list(
        "targets",
        &["8gaussians".to_string(), "2spirals".to_string()],
    )?;
    let seeds = cfg.seed_list(2, 3);
    let mut metrics = Metrics::default();
    let mut model = Vec::new();
    let mut table = Table::new(
        &format!("lift-flow-2d: convex potential flow, ICNN width {width} × {layers}, {iterations} iterations, batch 128, {} seeds; test NLL (nats) against the target's entropy", seeds.len()),
        &["target", "method", "parameters", "test NLL", "gap to entropy", "s / run"],
    );
    for t in &targets {
        let target = Target2d::parse(t)?;
        let test = target.sample(2000, &mut Rng::new(777))?;
        let lp = target.log_density(&test, 20_000, &mut Rng::new(3))?;
        let entropy = -lp.iter().sum::<f64>() / lp.len() as f64;
        let control = cfg.opt("control", !cfg.quick)?;
        for strategy in Strategy::ALL
            .into_iter()
            .filter(|&s| control || s != Strategy::SoftplusWide)
        {
            let (mut nlls, mut secs, mut size) = (vec![], vec![], 0);
            for &seed in &seeds {
                let ((nll, n, s), tensors) = train_one(
                    target,
                    strategy,
                    width,
                    layers,
                    iterations,
                    seed,
                    cfg.quiet,
                    &mut metrics,
                )?;
                if seed == seeds[0] {
                    model.extend(
                        tensors.into_iter().map(|(k, v)| {
                            (format!("{}.{}.{k}", target.name(), strategy.name()), v)
                        }),
                    );
                }
                nlls.push(nll);
                secs.push(s);
                size = n;
            }
            let gaps: Vec<f64> = nlls.iter().map(|v| v - entropy).collect();
            table.row(vec![
                format!("{} (entropy {entropy:.3})", target.name()),
                strategy.name().into(),
                size.to_string(),
                mean_std(&nlls, 3),
                mean_std(&gaps, 3),
                mean_std(&secs, 1),
            ]);
        }
    }
    let dir = RunDir::create(&cfg.out, "lift-flow-2d", &cfg.run_id())?;
    dir.write_metrics(
        "lift-flow-2d: training NLL",
        &metrics,
        &[("train_nll", false)],
        "iteration",
    )?;
    dir.write_model(model, vec![("experiment".into(), "lift-flow-2d".into())])?;
    let tables = vec![table];
    dir.write_tables(&tables)?;
    eprintln!("lift-flow-2d: results in {}", dir.path.display());
    Ok(tables)
}
