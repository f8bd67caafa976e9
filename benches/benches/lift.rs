//! Training-step cost of each positivity strategy relative to PGD, at the sizes of
//! the 1-D EBM experiment (quick width 32, full width 128; batch 256, quadrature grid
//! 400): forward on the batch and the grid, backward, Adam, projection.
//!
//! Run: `cargo bench -p benches --bench lift`.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use autograd::{backward, Var};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use nn::{Activation, Icnn, IcnnConfig, ParamGrads, ParamStore};
use optim::lift::{Lift, LiftConfig, Pgd, Positivity, Softplus};
use optim::{Adam, AdamConfig, Optimizer};
use std::time::Duration;
use tensor::{Rng, Tensor};

fn step_cost(c: &mut Criterion) {
    let mut g = c.benchmark_group("ebm1d_train_step_f64");
    g.sample_size(20).measurement_time(Duration::from_secs(3));
    let mut rng = Rng::new(0);
    let batch = Tensor::<f64>::rand_normal(&[256, 1], 0.0, 1.0, &mut rng).unwrap();
    let grid = Var::constant(
        Tensor::<f64>::linspace(-5.0, 12.0, 400)
            .unwrap()
            .reshape(&[400, 1])
            .unwrap(),
    );
    for &width in &[32usize, 128] {
        for kind in ["pgd", "softplus", "lift"] {
            let store = ParamStore::<f64>::new();
            let cfg = IcnnConfig {
                input: 1,
                width,
                layers: 3,
                activation: Activation::Softplus,
                strong_convexity: 0.02,
                act_norm: false,
            };
            let net = Icnn::new(&store.root().sub("icnn"), cfg, &mut rng).unwrap();
            let scope = store.root().sub("pos");
            let init = net.init_constrained(&mut rng).unwrap();
            let pos: Box<dyn Positivity<f64>> = match kind {
                "pgd" => Box::new(Pgd::new(&scope, init).unwrap()),
                "softplus" => Box::new(Softplus::new(&scope, init).unwrap()),
                _ => Box::new(
                    Lift::new(
                        &scope,
                        1,
                        net.constrained_shapes(),
                        &LiftConfig::default(),
                        &mut rng,
                    )
                    .unwrap(),
                ),
            };
            let mut opt = Adam::new(store.trainable(), AdamConfig::adam(1e-3)).unwrap();
            let x = Var::constant(batch.clone());
            g.bench_with_input(BenchmarkId::new(kind, width), &width, |b, _| {
                b.iter(|| {
                    let w = pos.weights(&batch).unwrap();
                    let lz = net
                        .forward_with(&grid, &w)
                        .unwrap()
                        .neg()
                        .unwrap()
                        .logsumexp(&[0, 1], false)
                        .unwrap();
                    let l = net
                        .forward_with(&x, &w)
                        .unwrap()
                        .mean_all()
                        .unwrap()
                        .add(&lz)
                        .unwrap();
                    let mut gr = ParamGrads::collect(opt.params(), &backward(&l).unwrap());
                    gr.clip_global_norm(1.0).unwrap();
                    opt.step(&gr).unwrap();
                    pos.project().unwrap();
                    black_box(l.item().unwrap())
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, step_cost);
criterion_main!(benches);
