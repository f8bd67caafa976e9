//! burn peer of the MLP and conv-net training steps (`benches/benches/training_step.rs`,
//! `train_step_mlp_784_512_512_10_b128_f32_adam`, and `benches/benches/conv.rs`,
//! `convnet_3_64_64_b32_32x32_f32_adam`), the same networks and steps as
//! `torch_mlp_step.py` and `torch_convnet_step.py`: f32 on the CPU, 8 random batches
//! cycled, cross-entropy, Adam at 1e-3, under burn's Autodiff on one of its two
//! pure-Rust CPU backends: NdArray with its default features (SIMD, rayon and
//! matrixmultiply's threads, no BLAS) or Candle (candle's CPU kernels); burn's third
//! (`burn-cpu`, through CubeCL and LLVM) needs a C++ toolchain and LLVM, which this
//! project's peers do not install. Prints the median step time: of the configured
//! number of steps, or of those run in the first 30 s (at least 5, after a warm-up
//! cut to 10 s likewise), since a step can take seconds here.
//!
//! Not part of the workspace: `compare.sh` copies it into a scratch crate outside the
//! repository (burn is never in this project's dependency tree) and runs it once per
//! thread count, which rayon, matrixmultiply and candle read from
//! `RAYON_NUM_THREADS`, `MATMUL_NUM_THREADS` and `CANDLE_NUM_THREADS` at start-up.
//!
//!     burn_steps mlp|convnet ndarray|candle THREADS

use burn::backend::{Autodiff, Candle, NdArray};
use burn::module::{AutodiffModule, Module};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig, PaddingConfig2d};
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Distribution, Int, Tensor, TensorData};
use std::time::{Duration, Instant};

/// How long the timed steps may take before the median is taken of those run.
const TIME_BUDGET: Duration = Duration::from_secs(30);

/// The MLP 784-512-512-10 with ReLU.
#[derive(Module, Clone, Debug)]
struct Mlp<Bk: Backend> {
    l1: Linear<Bk>,
    l2: Linear<Bk>,
    l3: Linear<Bk>,
}

impl<Bk: Backend> Mlp<Bk> {
    fn new(device: &Bk::Device) -> Self {
        Mlp {
            l1: LinearConfig::new(784, 512).init(device),
            l2: LinearConfig::new(512, 512).init(device),
            l3: LinearConfig::new(512, 10).init(device),
        }
    }

    fn forward(&self, x: Tensor<Bk, 2>) -> Tensor<Bk, 2> {
        let h = burn::tensor::activation::relu(self.l1.forward(x));
        let h = burn::tensor::activation::relu(self.l2.forward(h));
        self.l3.forward(h)
    }
}

/// conv 3→64, ReLU, conv 64→64, ReLU, global average pool, linear 64→10.
#[derive(Module, Clone, Debug)]
struct ConvNet<Bk: Backend> {
    c1: Conv2d<Bk>,
    c2: Conv2d<Bk>,
    fc: Linear<Bk>,
}

impl<Bk: Backend> ConvNet<Bk> {
    fn new(device: &Bk::Device) -> Self {
        let same = |i, o| {
            Conv2dConfig::new([i, o], [3, 3])
                .with_padding(PaddingConfig2d::Explicit(1, 1))
                .init(device)
        };
        ConvNet {
            c1: same(3, 64),
            c2: same(64, 64),
            fc: LinearConfig::new(64, 10).init(device),
        }
    }

    fn forward(&self, x: Tensor<Bk, 4>) -> Tensor<Bk, 2> {
        let h = burn::tensor::activation::relu(self.c1.forward(x));
        let h = burn::tensor::activation::relu(self.c2.forward(h));
        let [n, c, hh, ww] = h.dims();
        let pooled = h.reshape([n, c, hh * ww]).mean_dim(2).reshape([n, c]);
        self.fc.forward(pooled)
    }
}

/// Trains `model` for `warmup` steps (those begun within a third of [`TIME_BUDGET`],
/// at least 2) then up to `timed` steps (those begun within [`TIME_BUDGET`], at least
/// 5) of `forward` on the cycled batches with Adam at
/// 1e-3; returns the median time of the timed steps in seconds, and their number.
fn time_steps<B, M, const D: usize>(
    mut model: M,
    forward: impl Fn(&M, Tensor<B, D>) -> Tensor<B, 2>,
    batches: &[Tensor<B, D>],
    labels: &Tensor<B, 1, Int>,
    warmup: usize,
    timed: usize,
) -> (f64, usize)
where
    B: AutodiffBackend,
    M: AutodiffModule<B>,
{
    let device = batches[0].device();
    let loss_fn = CrossEntropyLossConfig::new().init(&device);
    let mut opt = AdamConfig::new().init();
    let mut times = Vec::with_capacity(timed);
    let mut timing_since = None;
    let warming_since = Instant::now();
    let mut warmup = warmup;
    for i in 0.. {
        // A warm-up of slow steps stops at a third of the budget (after two steps).
        if i < warmup && i >= 2 && warming_since.elapsed() > TIME_BUDGET / 3 {
            warmup = i;
        }
        if i >= warmup {
            let since = *timing_since.get_or_insert_with(Instant::now);
            if times.len() == timed || (times.len() >= 5 && since.elapsed() > TIME_BUDGET) {
                break;
            }
        }
        let start = Instant::now();
        let logits = forward(&model, batches[i % batches.len()].clone());
        let loss = loss_fn.forward(logits, labels.clone());
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = opt.step(1e-3, model, grads);
        let _value = loss.into_scalar();
        if i >= warmup {
            times.push(start.elapsed().as_secs_f64());
        }
    }
    times.sort_by(f64::total_cmp);
    // The median as Python's `statistics.median` takes it (the peers' scripts).
    let n = times.len();
    ((times[(n - 1) / 2] + times[n / 2]) / 2.0, n)
}

/// Times workload `which` on backend `B`: its name, the median step time in seconds
/// and the number of timed steps.
fn run<B: AutodiffBackend>(which: &str) -> (&'static str, f64, usize) {
    let device = Default::default();
    B::seed(&device, 0);
    let normal = Distribution::Normal(0.0, 1.0);
    let labels = |n: usize| {
        let classes: Vec<i64> = (0..n as i64).map(|i| i % 10).collect();
        Tensor::<B, 1, Int>::from_data(TensorData::new(classes, [n]), &device)
    };
    match which {
        "mlp" => {
            let batches: Vec<Tensor<B, 2>> = (0..8)
                .map(|_| Tensor::random([128, 784], normal, &device))
                .collect();
            let (t, n) = time_steps(
                Mlp::new(&device),
                Mlp::forward,
                &batches,
                &labels(128),
                50,
                300,
            );
            ("MLP", t, n)
        }
        "convnet" => {
            let batches: Vec<Tensor<B, 4>> = (0..8)
                .map(|_| Tensor::random([32, 3, 32, 32], normal, &device))
                .collect();
            let (t, n) = time_steps(
                ConvNet::new(&device),
                ConvNet::forward,
                &batches,
                &labels(32),
                10,
                60,
            );
            ("conv-net", t, n)
        }
        other => panic!("unknown workload '{other}' (mlp or convnet)"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: burn_steps mlp|convnet ndarray|candle THREADS";
    let which = args.get(1).expect(usage);
    let backend = args.get(2).expect(usage);
    let threads: usize = args.get(3).and_then(|t| t.parse().ok()).expect(usage);
    // The thread counts come from the environment; a mismatch would time the
    // wrong configuration, so it is checked rather than assumed.
    for var in [
        "RAYON_NUM_THREADS",
        "MATMUL_NUM_THREADS",
        "CANDLE_NUM_THREADS",
    ] {
        assert_eq!(
            std::env::var(var)
                .ok()
                .and_then(|v| v.parse::<usize>().ok()),
            Some(threads),
            "set {var} to {threads}"
        );
    }
    let (name, median, timed) = match backend.as_str() {
        "ndarray" => run::<Autodiff<NdArray<f32>>>(which),
        "candle" => run::<Autodiff<Candle<f32>>>(which),
        other => panic!("unknown backend '{other}' (ndarray or candle)"),
    };
    println!(
        "burn 0.20.1 ({backend}), {threads} thread(s): median {name} step {:.3} ms over {timed} steps",
        median * 1e3
    );
}
