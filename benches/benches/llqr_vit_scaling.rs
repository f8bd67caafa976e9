//! How LLQR+SAM's cost per step grows with the model, next to SGD, on ViTs from
//! Tiny-like to Small-like widths (d 96, 192, 288, 384; 4 layers, heads of 32,
//! 32×32 images in 8-pixel patches, batch 32, f32). Per width, criterion measures an
//! SGD step, an LLQR+SAM step (two passes and U·g), and the refresh of the diagonal U
//! with 1 and with 2 inner steps (NGD, a 32-image batch): a refresh costs
//! r₁ + (s − 1)(r₂ − r₁) for s inner steps, so the authors' 50 steps, amortised at
//! their T_U = 1000, add (r₁ + 49(r₂ − r₁))/1000 per step. After the measurements the
//! bench reads criterion's medians back, fits cost ∝ P^k by least squares in log-log,
//! and prints k for each thing timed (the SGD step, the LLQR+SAM step, the refresh
//! and the amortised LLQR+SAM step) next to the paper's 1.27, whose timed quantity
//! is not stated in the parts of the paper available.
//!
//! Run: `cargo bench -p benches --bench llqr_vit_scaling`.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use autograd::{backward, Var};
use criterion::{black_box, BenchmarkId, Criterion};
use nn::nets::vit::{Vit, VitConfig};
use nn::{loss, Module, ParamGrads, ParamStore};
use optim::llqr::{InnerSolve, LlqrConfig, LlqrSam};
use optim::{Optimizer, Sgd, SgdConfig};
use std::path::PathBuf;
use std::time::Duration;
use tensor::{Rng, Tensor};

const WIDTHS: [usize; 4] = [96, 192, 288, 384];
const GROUP: &str = "llqr_vit_scaling_b32_f32";
const INNER_STEPS: f64 = 50.0;
const REFRESH_PERIOD: f64 = 1000.0;

struct Problem {
    store: ParamStore<f32>,
    vit: Vit<f32>,
    x: Var<f32>,
    labels: Vec<usize>,
}

impl Problem {
    fn new(dim: usize) -> Problem {
        let mut rng = Rng::new(dim as u64);
        let store = ParamStore::<f32>::new();
        let cfg = VitConfig {
            image: 32,
            patch: 8,
            channels: 3,
            dim,
            depth: 4,
            heads: dim / 32,
            mlp: 4 * dim,
            classes: 10,
            dropout: 0.0,
        };
        let vit = Vit::new(&store.root(), cfg, &mut rng).unwrap();
        let x = Var::constant(Tensor::rand_normal(&[32, 3, 32, 32], 0.0, 1.0, &mut rng).unwrap());
        Problem {
            store,
            vit,
            x,
            labels: (0..32).map(|i| (i * 7) % 10).collect(),
        }
    }

    fn loss(&self) -> tensor::Result<Var<f32>> {
        loss::cross_entropy(&self.vit.forward(&self.x)?, &self.labels, 0.0)
    }

    fn llqr_sam(&self, inner_steps: usize) -> LlqrSam<f32> {
        let mut cfg = LlqrConfig {
            lr: 1e-3,
            rho: 0.05,
            refresh_every: usize::MAX,
            ..LlqrConfig::default()
        };
        cfg.inner = InnerSolve {
            steps: inner_steps,
            ..InnerSolve::default()
        };
        let mut opt = LlqrSam::new(self.store.trainable(), cfg).unwrap();
        // U held fixed (at I): the step alone is timed, refreshes separately.
        let u = opt.preconditioner().clone();
        opt.set_preconditioner(u);
        opt
    }
}

fn id(dim: usize, params: usize) -> String {
    format!("d{dim}_P{params}")
}

fn measure(c: &mut Criterion) {
    let mut g = c.benchmark_group(GROUP);
    g.sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500));
    for dim in WIDTHS {
        let p = Problem::new(dim);
        let name = id(dim, p.store.num_trainable());
        let mut sgd = Sgd::new(p.store.trainable(), SgdConfig::new(1e-3).momentum(0.9)).unwrap();
        g.bench_with_input(BenchmarkId::new("sgd", &name), &name, |b, _| {
            b.iter(|| {
                let l = p.loss().unwrap();
                let grads = ParamGrads::collect(sgd.params(), &backward(&l).unwrap());
                sgd.step(&grads).unwrap();
                black_box(l.item().unwrap())
            })
        });
        let mut step = p.llqr_sam(1);
        g.bench_with_input(BenchmarkId::new("llqr_sam_step", &name), &name, |b, _| {
            b.iter(|| black_box(step.step_closure(&|| p.loss()).unwrap()))
        });
        for inner in [1usize, 2] {
            let mut opt = p.llqr_sam(inner);
            let bench = format!("refresh_inner{inner}");
            g.bench_with_input(BenchmarkId::new(bench, &name), &name, |b, _| {
                b.iter(|| {
                    black_box(
                        opt.refresh(&|| p.vit.forward(&p.x), &p.labels, 0.0)
                            .unwrap(),
                    )
                })
            });
        }
    }
    g.finish();
}

/// The median (ns) criterion recorded for `function/parameter` of the group.
fn median_ns(function: &str, parameter: &str) -> Option<f64> {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let path = dir
        .join("criterion")
        .join(GROUP)
        .join(function)
        .join(parameter)
        .join("new/estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let at = text.find("\"median\"")?;
    let rest = &text[at..];
    let p = rest.find("\"point_estimate\":")? + "\"point_estimate\":".len();
    let end = rest[p..].find([',', '}'])?;
    rest[p..p + end].trim().parse().ok()
}

/// The least-squares slope of log y against log x.
fn log_log_slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let (lx, ly): (Vec<f64>, Vec<f64>) = points.iter().map(|(x, y)| (x.ln(), y.ln())).unzip();
    let (mx, my) = (lx.iter().sum::<f64>() / n, ly.iter().sum::<f64>() / n);
    let cov: f64 = lx.iter().zip(&ly).map(|(a, b)| (a - mx) * (b - my)).sum();
    let var: f64 = lx.iter().map(|a| (a - mx) * (a - mx)).sum();
    cov / var
}

fn report() {
    let (mut sgd, mut step, mut refreshes, mut amortised) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    println!("\nLLQR+SAM cost per step against parameter count (medians; refresh amortised at T_U = {REFRESH_PERIOD}, {INNER_STEPS} inner steps):");
    println!("| width | parameters | SGD (ms) | LLQR+SAM step (ms) | refresh (ms) | amortised (ms) | × SGD |");
    println!("|---|---|---|---|---|---|---|");
    for dim in WIDTHS {
        let params = Problem::new(dim).store.num_trainable();
        let name = id(dim, params);
        let got = (
            median_ns("sgd", &name),
            median_ns("llqr_sam_step", &name),
            median_ns("refresh_inner1", &name),
            median_ns("refresh_inner2", &name),
        );
        let (Some(s), Some(l), Some(r1), Some(r2)) = got else {
            println!("| {dim} | {params} | (no criterion estimate: run the whole bench) |");
            return;
        };
        let refresh = r1 + (INNER_STEPS - 1.0) * (r2 - r1);
        let total = l + refresh / REFRESH_PERIOD;
        println!(
            "| {dim} | {params} | {:.2} | {:.2} | {:.0} | {:.2} | {:.2} |",
            s / 1e6,
            l / 1e6,
            refresh / 1e6,
            total / 1e6,
            total / s
        );
        sgd.push((params as f64, s));
        step.push((params as f64, l));
        refreshes.push((params as f64, refresh));
        amortised.push((params as f64, total));
    }
    println!(
        "fitted exponent k in cost ∝ P^k: SGD step {:.2}; LLQR+SAM step (two passes and U·g) {:.2}; refresh ({INNER_STEPS} inner steps) {:.2}; LLQR+SAM amortised at T_U = {REFRESH_PERIOD} {:.2} (the paper: 1.27, what it timed unverified)",
        log_log_slope(&sgd),
        log_log_slope(&step),
        log_log_slope(&refreshes),
        log_log_slope(&amortised)
    );
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    measure(&mut c);
    c.final_summary();
    report();
}
