//! conv2d forward and backward (input and weight gradients) at the ResNet-18 layer
//! shapes (3×3, stride 1, padding 1, batch 32, f32; and the three stride-2
//! convolutions that open stages 2–4), with the FLOP rate reported as
//! criterion's element throughput (1 element = 1 FLOP), next to a plain GEMM of the
//! same size (C_out × C_in·9 by C_in·9 × 32·H·W) — our matmul throughput; and one
//! ResNet-18 training step (forward, cross-entropy, backward, SGD) at batch 32; and
//! the small conv net's Adam step at 1 and 2 threads (conv 3→64, ReLU, conv 64→64,
//! ReLU, global average pool, linear 64→10; 3×3, padding 1, 32×32, batch 32, 8
//! random batches cycled), the workload of `benches/peers/torch_convnet_step.py` and
//! `benches/peers/jax_convnet_step.py`. Also batch normalisation's three kernels
//! (statistics, affine map, backward) at the four ResNet-18 stage shapes, one
//! thread, with the bytes of the activation as throughput.
//!
//! Run: `cargo bench -p benches --bench conv`; side by side with the peers:
//! `benches/peers/compare.sh convnet`.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use autograd::{backward, Var};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use nn::layers::conv::Conv2d;
use nn::layers::linear::Linear;
use nn::nets::resnet::{ResNet, ResNetConfig};
use nn::{loss, Module, ParamGrads, ParamStore};
use optim::{Adam, AdamConfig, Optimizer, Sgd, SgdConfig};
use std::time::Duration;
use tensor::{Conv2dSpec, Rng, Tensor};

/// Benches the forward, input gradient and weight gradient of one convolution
/// (batch 32, 3×3 kernel, padding 1) under `id`, with its FLOP count as the
/// group's throughput.
fn conv_ops(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rng: &mut Rng,
    (cin, cout, side): (usize, usize, usize),
    spec: Conv2dSpec,
    id: &str,
) {
    let x = Tensor::<f32>::rand_normal(&[32, cin, side, side], 0.0, 1.0, rng).unwrap();
    let w = Tensor::<f32>::rand_normal(&[cout, cin, 3, 3], 0.0, 0.1, rng).unwrap();
    let y = x.conv2d(&w, spec).unwrap();
    let flops = 2 * cout * cin * 9 * 32 * y.shape()[2] * y.shape()[3];
    g.throughput(Throughput::Elements(flops as u64));
    g.bench_with_input(BenchmarkId::new("forward", id), id, |b, _| {
        b.iter(|| black_box(x.conv2d(&w, spec).unwrap()))
    });
    g.bench_with_input(BenchmarkId::new("input_grad", id), id, |b, _| {
        b.iter(|| black_box(y.conv2d_input_grad(&w, x.shape(), spec).unwrap()))
    });
    g.bench_with_input(BenchmarkId::new("weight_grad", id), id, |b, _| {
        b.iter(|| black_box(y.conv2d_weight_grad(&x, w.shape(), spec).unwrap()))
    });
}

fn layers(c: &mut Criterion) {
    let mut g = c.benchmark_group("conv2d_resnet18_b32_f32");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500));
    let mut rng = Rng::new(0);
    for &(ch, side) in &[(64usize, 32usize), (128, 16), (256, 8), (512, 4)] {
        let id = format!("c{ch}_{side}x{side}");
        conv_ops(&mut g, &mut rng, (ch, ch, side), Conv2dSpec::new(1, 1), &id);
        let a = Tensor::<f32>::rand_normal(&[ch, ch * 9], 0.0, 1.0, &mut rng).unwrap();
        let bm =
            Tensor::<f32>::rand_normal(&[ch * 9, 32 * side * side], 0.0, 1.0, &mut rng).unwrap();
        g.bench_with_input(BenchmarkId::new("gemm_same_flops", &id), &id, |b, _| {
            b.iter(|| black_box(a.matmul(&bm).unwrap()))
        });
    }
    // The downsampling convolutions at the head of stages 2–4 (stride 2).
    for &(cin, side) in &[(64usize, 32usize), (128, 16), (256, 8)] {
        let id = format!("s2_c{cin}to{}_{side}x{side}", 2 * cin);
        conv_ops(
            &mut g,
            &mut rng,
            (cin, 2 * cin, side),
            Conv2dSpec::new(2, 1),
            &id,
        );
    }
    g.finish();
}

/// Batch normalisation's kernels on one thread at ResNet-18's activation shapes
/// (batch 32): the statistics (two passes), the affine map and the backward.
fn batch_norm(c: &mut Criterion) {
    let mut g = c.benchmark_group("batch_norm_b32_f32_1thread");
    g.sample_size(20).measurement_time(Duration::from_secs(2));
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let mut rng = Rng::new(3);
    for &(ch, side) in &[(64usize, 32usize), (128, 16), (256, 8), (512, 4)] {
        let id = format!("c{ch}_{side}x{side}");
        let shape = [32, ch, side, side];
        let x = Tensor::<f32>::rand_normal(&shape, 0.5, 2.0, &mut rng).unwrap();
        let gy = Tensor::<f32>::rand_normal(&shape, 0.0, 1.0, &mut rng).unwrap();
        let gamma = Tensor::<f32>::rand_normal(&[ch], 1.0, 0.1, &mut rng).unwrap();
        let (mean, var) = x.batch_norm_stats().unwrap();
        let inv_std = var.add_scalar(1e-5).rsqrt();
        g.throughput(Throughput::Bytes((x.numel() * 4) as u64));
        g.bench_function(BenchmarkId::new("stats", &id), |b| {
            b.iter(|| one.install(|| black_box(x.batch_norm_stats().unwrap())))
        });
        g.bench_function(BenchmarkId::new("affine", &id), |b| {
            b.iter(|| one.install(|| black_box(x.channel_affine(&gamma, &mean).unwrap())))
        });
        g.bench_function(BenchmarkId::new("backward", &id), |b| {
            b.iter(|| {
                one.install(|| {
                    black_box(gy.batch_norm_backward(&x, &mean, &inv_std, &gamma).unwrap())
                })
            })
        });
    }
    g.finish();
}

fn resnet_step(c: &mut Criterion) {
    let mut g = c.benchmark_group("resnet18_train_step_f32");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(20))
        .warm_up_time(Duration::from_secs(2));
    let mut rng = Rng::new(1);
    let store = ParamStore::<f32>::new();
    let net = ResNet::new(&store.root(), &ResNetConfig::resnet18(10), &mut rng).unwrap();
    let mut opt = Sgd::new(store.trainable(), SgdConfig::new(0.01).momentum(0.9)).unwrap();
    let x =
        Var::constant(Tensor::<f32>::rand_normal(&[32, 3, 32, 32], 0.0, 1.0, &mut rng).unwrap());
    let labels: Vec<usize> = (0..32).map(|i| i % 10).collect();
    benches::at_thread_counts(&mut g, "b32_32x32", &[1, 2], || {
        let l = loss::cross_entropy(&net.forward(&x).unwrap(), &labels, 0.0).unwrap();
        let grads = ParamGrads::collect(opt.params(), &backward(&l).unwrap());
        opt.step(&grads).unwrap();
        black_box(l.item().unwrap());
    });
    g.finish();
}

/// conv 3→64, ReLU, conv 64→64, ReLU, global average pool, linear 64→10.
struct ConvNet {
    c1: Conv2d<f32>,
    c2: Conv2d<f32>,
    fc: Linear<f32>,
}

impl ConvNet {
    fn forward(&self, x: &Var<f32>) -> Var<f32> {
        let h = self.c1.forward(x).unwrap().relu().unwrap();
        let h = self.c2.forward(&h).unwrap().relu().unwrap();
        let h = h
            .adaptive_avg_pool2d((1, 1))
            .unwrap()
            .reshape(&[32, 64])
            .unwrap();
        self.fc.forward(&h).unwrap()
    }
}

fn convnet_step(c: &mut Criterion) {
    let mut g = c.benchmark_group("convnet_3_64_64_b32_32x32_f32_adam");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(8))
        .warm_up_time(Duration::from_secs(1));
    let mut rng = Rng::new(2);
    let store = ParamStore::<f32>::new();
    let spec = Conv2dSpec::new(1, 1);
    let root = store.root();
    let net = ConvNet {
        c1: Conv2d::new(&root.sub("c1"), (3, 64), 3, spec, true, &mut rng).unwrap(),
        c2: Conv2d::new(&root.sub("c2"), (64, 64), 3, spec, true, &mut rng).unwrap(),
        fc: Linear::new(&root.sub("fc"), 64, 10, true, &mut rng).unwrap(),
    };
    let mut opt = Adam::new(store.trainable(), AdamConfig::adam(1e-3)).unwrap();
    let batches: Vec<Var<f32>> = (0..8)
        .map(|_| {
            Var::constant(Tensor::<f32>::rand_normal(&[32, 3, 32, 32], 0.0, 1.0, &mut rng).unwrap())
        })
        .collect();
    let labels: Vec<usize> = (0..32).map(|i| i % 10).collect();
    let mut i = 0;
    benches::at_thread_counts(&mut g, "step", &[1, 2], || {
        let x = &batches[i % batches.len()];
        i += 1;
        let l = loss::cross_entropy(&net.forward(x), &labels, 0.0).unwrap();
        let grads = ParamGrads::collect(opt.params(), &backward(&l).unwrap());
        opt.step(&grads).unwrap();
        black_box(l.item().unwrap());
    });
    g.finish();
}

criterion_group!(benches, layers, batch_norm, resnet_step, convnet_step);
criterion_main!(benches);
