//! One Transformer encoder layer (d 512, 8 heads, FF 2048, post-norm, sequence 128,
//! batch 8, f32) forward and forward+backward; and one ViT-Tiny training step
//! (d 192, 12 layers, 3 heads) at batch 32 on 32×32 images with 4-pixel patches
//! (65 tokens, 10 classes: the CIFAR setting), AdamW.
//!
//! Run: `cargo bench -p benches --bench transformer`. The JAX peer of the encoder
//! layer is `benches/peers/jax_encoder_layer.py`.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use autograd::{backward, Var};
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use nn::nets::vit::{Vit, VitConfig};
use nn::{loss, Activation, EncoderLayer, LayerConfig, Module, ParamGrads, ParamStore};
use optim::{Adam, AdamConfig, Optimizer};
use std::time::Duration;
use tensor::{Rng, Tensor};

fn encoder_layer(c: &mut Criterion) {
    let mut g = c.benchmark_group("encoder_layer_d512_h8_L128_b8_f32");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(10))
        .warm_up_time(Duration::from_secs(1));
    let mut rng = Rng::new(0);
    let store = ParamStore::<f32>::new();
    let cfg = LayerConfig {
        dim: 512,
        heads: 8,
        ff: 2048,
        dropout: 0.0,
        pre_norm: false,
        activation: Activation::Relu,
    };
    let layer = EncoderLayer::new(&store.root(), &cfg, &mut rng).unwrap();
    let x = Tensor::<f32>::rand_normal(&[8, 128, 512], 0.0, 1.0, &mut rng).unwrap();
    g.bench_function("forward", |b| {
        b.iter(|| {
            black_box(autograd::no_grad(|| layer.forward(&Var::constant(x.clone()), None)).unwrap())
        })
    });
    g.bench_function("forward_backward", |b| {
        b.iter(|| {
            let xv = Var::leaf(x.clone());
            let y = layer.forward(&xv, None).unwrap();
            black_box(backward(&y.sum_all().unwrap()).unwrap())
        })
    });
    g.finish();
}

fn vit_tiny_step(c: &mut Criterion) {
    let mut g = c.benchmark_group("vit_tiny_train_step_b32_f32");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(20))
        .warm_up_time(Duration::from_secs(2));
    let mut rng = Rng::new(1);
    let store = ParamStore::<f32>::new();
    let vit = Vit::new(&store.root(), VitConfig::tiny(32, 4, 10), &mut rng).unwrap();
    let mut opt = Adam::new(
        store.trainable(),
        AdamConfig::adamw(1e-3).weight_decay(0.05),
    )
    .unwrap();
    let x =
        Var::constant(Tensor::<f32>::rand_normal(&[32, 3, 32, 32], 0.0, 1.0, &mut rng).unwrap());
    let labels: Vec<usize> = (0..32).map(|i| i % 10).collect();
    g.bench_function("patch4_32x32", |b| {
        b.iter(|| {
            let l = loss::cross_entropy(&vit.forward(&x).unwrap(), &labels, 0.0).unwrap();
            let grads = ParamGrads::collect(opt.params(), &backward(&l).unwrap());
            opt.step(&grads).unwrap();
        })
    });
    g.finish();
}

criterion_group!(benches, encoder_layer, vit_tiny_step);
criterion_main!(benches);
