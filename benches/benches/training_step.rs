//! The headline step: an MLP 784-512-512-10, batch 128, f32, cross-entropy, Adam —
//! forward, backward and update, as `nn` and `optim` run it.
//!
//! Timed at 1 and 2 threads on 8 random batches cycled, next to two floors: the
//! step's eight matrix products alone (`floor`), at the shapes and operand layouts
//! the forward and backward passes hand to the GEMM, and a 1024 × 1024 product
//! (`square_1024`), whose rate prices the step's 0.41 GFLOP at the GEMM's best, so
//! that the step's distance from either is a ratio measured in one run.
//!
//! Run: `cargo bench -p benches --bench training_step`; side by side with PyTorch
//! and JAX (the same step in `benches/peers/torch_mlp_step.py` and
//! `jax_mlp_step.py`) and with both floors: `benches/peers/compare.sh mlp`.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use autograd::{backward, Var};
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use nn::{loss, Activation, Mlp, Module, ParamGrads, ParamStore};
use optim::{Adam, AdamConfig, Optimizer};
use std::time::Duration;
use tensor::{Rng, Tensor};

fn mlp_adam_step(c: &mut Criterion) {
    let mut g = c.benchmark_group("train_step_mlp_784_512_512_10_b128_f32_adam");
    g.sample_size(30).measurement_time(Duration::from_secs(6));
    let store = ParamStore::<f32>::new();
    let mut rng = Rng::new(0);
    let mlp = Mlp::new(
        &store.root(),
        &[784, 512, 512, 10],
        Activation::Relu,
        &mut rng,
    )
    .unwrap();
    let mut opt = Adam::new(store.trainable(), AdamConfig::adam(1e-3)).unwrap();
    let batches: Vec<Var<f32>> = (0..8)
        .map(|_| {
            Var::constant(Tensor::<f32>::rand_normal(&[128, 784], 0.0, 1.0, &mut rng).unwrap())
        })
        .collect();
    let labels: Vec<usize> = (0..128).map(|i| i % 10).collect();
    let mut i = 0;
    benches::at_thread_counts(&mut g, "step", &[1, 2], || {
        let x = &batches[i % batches.len()];
        i += 1;
        let l = loss::cross_entropy(&mlp.forward(x).unwrap(), &labels, 0.0).unwrap();
        let grads = ParamGrads::collect(opt.params(), &backward(&l).unwrap());
        opt.step(&grads).unwrap();
        black_box(l.item().unwrap());
    });
    // The floor: per layer the forward product x·Wᵀ (W stored [outputs, inputs],
    // read through its transposed view), the weight gradient dYᵀ·x and, but for the
    // first layer, the input gradient dY·W — the products `Linear` and the matmul's
    // backward compute, 0.41 GFLOP in all.
    let layers: Vec<(Tensor<f32>, Tensor<f32>, Tensor<f32>)> = [784, 512, 512, 10]
        .windows(2)
        .map(|io| {
            let (i, o) = (io[0], io[1]);
            (
                Tensor::rand_normal(&[128, i], 0.0, 1.0, &mut rng).unwrap(),
                Tensor::rand_normal(&[o, i], 0.0, 0.05, &mut rng).unwrap(),
                Tensor::rand_normal(&[128, o], 0.0, 1.0, &mut rng).unwrap(),
            )
        })
        .collect();
    benches::at_thread_counts(&mut g, "floor", &[1, 2], || {
        for (k, (x, w, dy)) in layers.iter().enumerate() {
            black_box(x.matmul(&w.t().unwrap()).unwrap());
            black_box(dy.t().unwrap().matmul(x).unwrap());
            if k > 0 {
                black_box(dy.matmul(w).unwrap());
            }
        }
    });
    let (a, b) = (
        Tensor::<f32>::rand_normal(&[1024, 1024], 0.0, 1.0, &mut rng).unwrap(),
        Tensor::<f32>::rand_normal(&[1024, 1024], 0.0, 1.0, &mut rng).unwrap(),
    );
    benches::at_thread_counts(&mut g, "square_1024", &[1, 2], || {
        black_box(a.matmul(&b).unwrap());
    });
    g.finish();
}

criterion_group!(benches, mlp_adam_step);
criterion_main!(benches);
