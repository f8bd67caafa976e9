//! The FNO learns the Burgers solution operator: a small model trained briefly on
//! generated pairs predicts held-out solutions far better than the best constant
//! guess (zero, relative error 1), and the closed-form head trains it too.

use models::data::burgers::{generate, BurgersConfig};
use models::experiments::fno_burgers::{train_arm, Backbone, Method, Pairs, Settings};
use models::report::Metrics;
use models::train::Budget;
use nn::FnoConfig;
use tensor::Tensor;

fn pairs(x: &Tensor<f64>, y: &Tensor<f64>, range: std::ops::Range<usize>) -> Pairs {
    let idx: Vec<usize> = range.collect();
    let (n, s) = (idx.len(), x.shape()[1]);
    Pairs {
        x: x.index_select(0, &idx)
            .unwrap()
            .cast::<f32>()
            .reshape(&[n, s, 1])
            .unwrap(),
        y: y.index_select(0, &idx)
            .unwrap()
            .cast::<f32>()
            .reshape(&[n, s, 1])
            .unwrap(),
    }
}

#[test]
fn the_fno_learns_burgers_with_adam_and_with_the_proximal_head() {
    let mut cfg = BurgersConfig::new(96, 64, 5);
    cfg.solver_points = 128;
    let data = generate(&cfg).unwrap();
    let train = pairs(&data.initial, &data.fin, 0..80);
    let test = pairs(&data.initial, &data.fin, 80..96);
    let settings = Settings {
        fno: FnoConfig {
            width: 12,
            modes: vec![8],
            layers: 2,
            projection: 16,
            ..FnoConfig::burgers()
        },
        budget: Budget::Steps(120),
        lr: 3e-3,
        sgd_lr: 0.05,
        quiet: true,
    };
    for method in [Method::AdamRelative, Method::Proximal(Backbone::Adam)] {
        let r = train_arm(
            method,
            0.01,
            8,
            0,
            (&train, &test),
            &settings,
            &mut Metrics::default(),
        )
        .unwrap();
        assert!(
            r.relative_l2 < 0.2,
            "{method:?}: test relative L2 {}",
            r.relative_l2
        );
        // The best evaluation is one of the evaluations, the last among them.
        assert!(r.best_relative_l2 <= r.relative_l2);
    }
}
