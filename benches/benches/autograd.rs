//! The tape: an MLP's forward+backward against its forward alone, the cost of one
//! recorded op (forward and backward) on tiny tensors, and the audit trace's cost
//! (off: one atomic load per op; on: a hash of every output).
//!
//! Run: `cargo bench -p benches --bench autograd`.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use autograd::trace::{self, TraceConfig};
use autograd::{backward, no_grad, Var};
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use std::time::Duration;
use tensor::{Result, Rng, Tensor};

struct Mlp {
    layers: Vec<(Tensor<f32>, Tensor<f32>)>,
}

impl Mlp {
    fn new(sizes: &[usize], rng: &mut Rng) -> Self {
        let layers = sizes
            .windows(2)
            .map(|w| {
                let bound = (6.0 / (w[0] + w[1]) as f64).sqrt();
                (
                    Tensor::rand_uniform(&[w[0], w[1]], -bound, bound, rng).unwrap(),
                    Tensor::zeros(&[1, w[1]]).unwrap(),
                )
            })
            .collect();
        Mlp { layers }
    }

    /// Cross-entropy of the logits against one-hot targets, with the parameters as
    /// leaves (or constants, for the forward alone).
    fn loss(
        &self,
        x: &Tensor<f32>,
        y: &Tensor<f32>,
        params: &[(Var<f32>, Var<f32>)],
    ) -> Result<Var<f32>> {
        let mut h = Var::constant(x.clone());
        for (i, (w, b)) in params.iter().enumerate() {
            h = h.matmul(w)?.add(b)?;
            if i + 1 < params.len() {
                h = h.relu()?;
            }
        }
        h.log_softmax(-1)?
            .mul(&Var::constant(y.clone()))?
            .sum_all()?
            .mul_scalar(-1.0 / x.shape()[0] as f64)
    }

    fn params(&self, leaves: bool) -> Vec<(Var<f32>, Var<f32>)> {
        let wrap = |t: &Tensor<f32>| {
            if leaves {
                Var::leaf(t.clone())
            } else {
                Var::constant(t.clone())
            }
        };
        self.layers
            .iter()
            .map(|(w, b)| (wrap(w), wrap(b)))
            .collect()
    }
}

fn mlp_step(c: &mut Criterion) {
    let mut g = c.benchmark_group("mlp_784_512_512_10_batch128_f32");
    g.sample_size(20).measurement_time(Duration::from_secs(4));
    let mut rng = Rng::new(0);
    let mlp = Mlp::new(&[784, 512, 512, 10], &mut rng);
    let x = Tensor::<f32>::rand_normal(&[128, 784], 0.0, 1.0, &mut rng).unwrap();
    let labels: Vec<usize> = (0..128).map(|i| i % 10).collect();
    let y = Tensor::<f32>::one_hot(&labels, 10).unwrap();
    g.bench_function("forward_no_tape", |b| {
        let p = mlp.params(false);
        b.iter(|| no_grad(|| black_box(mlp.loss(&x, &y, &p).unwrap())))
    });
    g.bench_function("forward_recorded", |b| {
        b.iter(|| {
            let p = mlp.params(true);
            black_box(mlp.loss(&x, &y, &p).unwrap())
        })
    });
    g.bench_function("forward_backward", |b| {
        b.iter(|| {
            let p = mlp.params(true);
            let loss = mlp.loss(&x, &y, &p).unwrap();
            black_box(backward(&loss).unwrap())
        })
    });
    g.bench_function("forward_backward_traced", |b| {
        // Every op kept (≈ 40 per step; the bench's few hundred steps fit in memory).
        trace::start(TraceConfig::default()).unwrap();
        b.iter(|| {
            let p = mlp.params(true);
            let loss = mlp.loss(&x, &y, &p).unwrap();
            black_box(backward(&loss).unwrap())
        });
        trace::stop();
    });
    g.finish();
}

fn tape_overhead(c: &mut Criterion) {
    let mut g = c.benchmark_group("tape_overhead_16_elements");
    let mut rng = Rng::new(1);
    let x = Tensor::<f32>::rand_normal(&[16], 0.0, 1.0, &mut rng).unwrap();
    let y = Var::constant(Tensor::<f32>::rand_normal(&[16], 0.0, 1.0, &mut rng).unwrap());
    g.throughput(Throughput::Elements(101));
    g.bench_function("100_recorded_ops_plus_backward", |b| {
        b.iter(|| {
            let leaf = Var::leaf(x.clone());
            let mut h = leaf.clone();
            for i in 0..25 {
                h = h.add(&y).unwrap();
                h = h.mul_scalar(0.5).unwrap();
                h = h.tanh().unwrap();
                h = if i % 2 == 0 {
                    h.sub(&y).unwrap()
                } else {
                    h.mul(&y).unwrap()
                };
            }
            let loss = h.sum_all().unwrap();
            black_box(backward(&loss).unwrap())
        })
    });
    g.finish();
}

criterion_group!(benches, mlp_step, tape_overhead);
criterion_main!(benches);
