//! conv2d forward and backward (input and weight gradients) at the ResNet-18 layer
//! shapes (3×3, stride 1, padding 1, batch 32, f32), with the FLOP rate reported as
//! criterion's element throughput (1 element = 1 FLOP), next to a plain GEMM of the
//! same size (C_out × C_in·9 by C_in·9 × 32·H·W) — our matmul throughput; and one
//! ResNet-18 training step (forward, cross-entropy, backward, SGD) at batch 32.
//!
//! Run: `cargo bench -p benches --bench conv`.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use autograd::{backward, Var};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use nn::nets::resnet::{ResNet, ResNetConfig};
use nn::{loss, Module, ParamGrads, ParamStore};
use optim::{Optimizer, Sgd, SgdConfig};
use std::time::Duration;
use tensor::{Conv2dSpec, Rng, Tensor};

fn layers(c: &mut Criterion) {
    let mut g = c.benchmark_group("conv2d_resnet18_b32_f32");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500));
    let mut rng = Rng::new(0);
    let spec = Conv2dSpec::new(1, 1);
    for &(ch, side) in &[(64usize, 32usize), (128, 16), (256, 8), (512, 4)] {
        let x = Tensor::<f32>::rand_normal(&[32, ch, side, side], 0.0, 1.0, &mut rng).unwrap();
        let w = Tensor::<f32>::rand_normal(&[ch, ch, 3, 3], 0.0, 0.1, &mut rng).unwrap();
        let y = x.conv2d(&w, spec).unwrap();
        let flops = 2 * ch * ch * 9 * 32 * side * side;
        g.throughput(Throughput::Elements(flops as u64));
        let id = format!("c{ch}_{side}x{side}");
        g.bench_with_input(BenchmarkId::new("forward", &id), &id, |b, _| {
            b.iter(|| black_box(x.conv2d(&w, spec).unwrap()))
        });
        g.bench_with_input(BenchmarkId::new("input_grad", &id), &id, |b, _| {
            b.iter(|| black_box(y.conv2d_input_grad(&w, x.shape(), spec).unwrap()))
        });
        g.bench_with_input(BenchmarkId::new("weight_grad", &id), &id, |b, _| {
            b.iter(|| black_box(y.conv2d_weight_grad(&x, w.shape(), spec).unwrap()))
        });
        let a = Tensor::<f32>::rand_normal(&[ch, ch * 9], 0.0, 1.0, &mut rng).unwrap();
        let bm =
            Tensor::<f32>::rand_normal(&[ch * 9, 32 * side * side], 0.0, 1.0, &mut rng).unwrap();
        g.bench_with_input(BenchmarkId::new("gemm_same_flops", &id), &id, |b, _| {
            b.iter(|| black_box(a.matmul(&bm).unwrap()))
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
    g.bench_function("b32_32x32", |b| {
        b.iter(|| {
            let l = loss::cross_entropy(&net.forward(&x).unwrap(), &labels, 0.0).unwrap();
            let grads = ParamGrads::collect(opt.params(), &backward(&l).unwrap());
            opt.step(&grads).unwrap();
            black_box(l.item().unwrap())
        })
    });
    g.finish();
}

criterion_group!(benches, layers, resnet_step);
criterion_main!(benches);
