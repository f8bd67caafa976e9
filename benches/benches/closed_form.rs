//! The cost of a closed-form refit of the last layer (primal d×d against dual b×b)
//! next to an SGD step on the same layer, for feature widths d and batch sizes b.
//!
//! Run: `cargo bench -p benches --bench closed_form`.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use optim::closed_form::{proximal, SolveForm};
use std::time::Duration;
use tensor::{Rng, Tensor};

fn refit(c: &mut Criterion) {
    let mut g = c.benchmark_group("last_layer_refit_f64_k10");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(1))
        .warm_up_time(Duration::from_millis(300));
    let k = 10;
    for &d in &[64usize, 256, 1024] {
        for &b in &[8usize, 64, 512] {
            let mut rng = Rng::new((d * 1000 + b) as u64);
            let phi = Tensor::<f64>::rand_normal(&[b, d], 0.0, 1.0, &mut rng).unwrap();
            let y = Tensor::<f64>::rand_normal(&[b, k], 0.0, 1.0, &mut rng).unwrap();
            let w = Tensor::<f64>::rand_normal(&[k, d], 0.0, 0.1, &mut rng).unwrap();
            let id = format!("d{d}_b{b}");
            g.bench_with_input(BenchmarkId::new("primal", &id), &id, |bch, _| {
                bch.iter(|| black_box(proximal(&phi, &y, &w, 1.0, SolveForm::Primal).unwrap()))
            });
            g.bench_with_input(BenchmarkId::new("dual", &id), &id, |bch, _| {
                bch.iter(|| black_box(proximal(&phi, &y, &w, 1.0, SolveForm::Dual).unwrap()))
            });
            // One SGD step on the same layer: residual, gradient 2RᵀΦ/b, update.
            g.bench_with_input(BenchmarkId::new("sgd_step", &id), &id, |bch, _| {
                bch.iter(|| {
                    let r = phi.matmul(&w.t().unwrap()).unwrap().sub(&y).unwrap();
                    let grad = r
                        .t()
                        .unwrap()
                        .matmul(&phi)
                        .unwrap()
                        .mul_scalar(2.0 / b as f64);
                    black_box(w.sub(&grad.mul_scalar(0.01)).unwrap())
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, refit);
criterion_main!(benches);
