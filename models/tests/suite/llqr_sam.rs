//! The LLQR+SAM experiment's training loop: it learns, it reports divergence instead
//! of failing, and its pothole toy reproduces the escape the analysis predicts.

use models::experiments::llqr_sam::classify::{train_arm, Arm, Refreshes, Regime};
use models::experiments::llqr_sam::network::Model;
use models::experiments::llqr_sam::pothole::{scalar_run, Pothole};
use models::report::Metrics;
use models::train::{Hyper, Method, CONVERGED_DAMPING};
use optim::llqr::{Geometry, PerturbationNorm};

fn hyper() -> Hyper {
    Hyper {
        lr: 0.05,
        momentum: 0.9,
        weight_decay: 5e-4,
        rho: 0.05,
        fsam_sigma: 1.0,
        fsam_decay: 0.9,
        // Set per run from the budget's `refreshes`.
        refresh_every: 1,
        precond_batch: 64,
        inner_lr: 10.0,
        converged_damping: CONVERGED_DAMPING,
    }
}

#[test]
fn llqr_sam_learns_digits_and_moves_its_preconditioner() {
    let (train, test) = models::data::builtin::digits_split().unwrap();
    let budget = Regime {
        epochs: 8,
        batch: 64,
        hidden: 64,
        model: Model::Mlp,
        refreshes: Refreshes::Every(20),
    };
    let run = |method| {
        let arm = Arm {
            method,
            hyper: hyper(),
            budget: budget.clone(),
        };
        train_arm(&arm, (&train, &test), 0, "t", true, &mut Metrics::default()).unwrap()
    };
    let r = run(Method::LlqrSam(Geometry::Fisher, PerturbationNorm::Matrix));
    let sgd = run(Method::Sgd);
    assert!(r.diverged_at.is_none());
    // Well above chance (10 %) and within 3 points of SGD on the same budget.
    assert!(
        r.accuracy > 90.0 && r.accuracy > sgd.accuracy - 3.0,
        "test accuracy {} (SGD {})",
        r.accuracy,
        sgd.accuracy
    );
    let u = r.preconditioner.expect("LLQR has a preconditioner");
    assert!(u.min < 0.99 || u.max > 1.01, "U stayed at I: {}", u.cell());
    // 8 epochs of 23 batches at T_U = 20: refreshes before steps 0, 20, …, 180.
    assert_eq!(r.refreshes, 10);
    // The best epoch is one of the 8, and no worse than the last.
    assert!((1..=8).contains(&r.best.1) && r.best.0 >= r.accuracy);
    assert!(r.train_loss.is_finite() && r.train_loss > 0.0);
}

#[test]
fn refreshes_per_run_spread_evenly_and_never_exceed_the_count() {
    // (steps, refreshes asked, refreshes done): never more than asked.
    for (steps, n, done) in [
        (184, 5, 5),
        (78_200, 78, 78),
        (10, 4, 4),
        (9, 4, 3),
        (3, 10, 3),
    ] {
        let t = Refreshes::PerRun(n).period(steps);
        // Refreshes before steps 0, t, 2t, … below `steps`.
        assert_eq!(steps.div_ceil(t), done, "{steps} steps, {n} asked");
    }
    assert_eq!(Refreshes::PerRun(78).period(78_200), 1003);
    assert_eq!(Refreshes::Every(25).period(10), 25);
}

#[test]
fn the_small_cnn_learns_digits_under_llqr_sam() {
    let (train, test) = models::data::builtin::digits_split().unwrap();
    let arm = Arm {
        method: Method::LlqrSam(Geometry::Fisher, PerturbationNorm::Euclidean),
        hyper: hyper(),
        budget: Regime {
            epochs: 6,
            batch: 64,
            hidden: 128,
            model: Model::Cnn,
            refreshes: Refreshes::Every(20),
        },
    };
    let r = train_arm(&arm, (&train, &test), 0, "t", true, &mut Metrics::default()).unwrap();
    // Chance is 10 %.
    assert!(r.accuracy > 80.0, "test accuracy {}", r.accuracy);
    assert!(r.preconditioner.is_some() && r.ms_at_authors_period <= r.ms_per_step);
}

#[test]
fn a_diverging_arm_is_reported_not_fatal() {
    let (train, test) = models::data::builtin::digits_split().unwrap();
    let arm = Arm {
        method: Method::Sam,
        hyper: Hyper { lr: 1e6, ..hyper() },
        budget: Regime {
            epochs: 2,
            batch: 64,
            hidden: 32,
            model: Model::Mlp,
            refreshes: Refreshes::Every(20),
        },
    };
    let r = train_arm(&arm, (&train, &test), 0, "t", true, &mut Metrics::default()).unwrap();
    assert!(r.diverged_at.is_some() && r.accuracy.is_nan());
}

#[test]
fn the_pothole_traps_sam_but_not_the_u_norm_probe() {
    let p = Pothole::REFERENCE;
    let f = |x: &autograd::Var<f64>| p.loss(x);
    let u = 1.0 / p.lam_bar;
    let last = |setting| {
        *scalar_run(&f, p.centre + 1e-3, setting, 0.01, 3000)
            .unwrap()
            .last()
            .unwrap()
    };
    assert!(!p.escaped(last((1.0, 0.05, PerturbationNorm::Euclidean))));
    assert!(!p.escaped(last((u, 0.05, PerturbationNorm::Euclidean))));
    assert!(p.escaped(last((u, 0.05, PerturbationNorm::Matrix))));
}
