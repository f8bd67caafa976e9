//! LLQR+SAM's own step against hand computations on a two-parameter quadratic:
//! both perturbation norms with momentum and weight decay, an AdamW outer step, the
//! delayed SAM start, the U-norm's refusal of a non-positive U, and Fisher-SAM.

use crate::common;

use common::{gradient_at, quadratic_model};
use nn::ParamStore;
use optim::llqr::{LlqrConfig, LlqrSam, PerturbationNorm, Preconditioner};
use optim::{Adam, AdamConfig, Optimizer};
use tensor::Tensor;

#[test]
fn two_llqr_sam_steps_by_hand_with_momentum_and_weight_decay() {
    let u = [0.5, 2.0];
    for norm in [PerturbationNorm::Euclidean, PerturbationNorm::Matrix] {
        let (store, loss) = quadratic_model();
        let theta_p = store.trainable()[0].clone();
        let (lr, mu, wd, rho) = (0.1, 0.9, 0.05, 0.2);
        let mut opt = LlqrSam::new(
            store.trainable(),
            LlqrConfig {
                lr,
                momentum: mu,
                weight_decay: wd,
                rho,
                norm,
                refresh_every: usize::MAX,
                ..LlqrConfig::default()
            },
        )
        .unwrap();
        opt.set_preconditioner(Preconditioner::diagonal(vec![Tensor::from_vec(
            u.to_vec(),
            &[2],
        )
        .unwrap()]));
        let mut theta = [0.7, -1.3];
        let mut buf: Option<[f64; 2]> = None;
        for _ in 0..2 {
            let g = gradient_at(theta);
            let d = [u[0] * g[0], u[1] * g[1]];
            let denom = match norm {
                PerturbationNorm::Euclidean => d[0] * d[0] + d[1] * d[1],
                PerturbationNorm::Matrix => g[0] * d[0] + g[1] * d[1],
            };
            let s = rho / (denom + 1e-12).sqrt();
            let gp = gradient_at([theta[0] + s * d[0], theta[1] + s * d[1]]);
            let upd = [u[0] * gp[0] + wd * theta[0], u[1] * gp[1] + wd * theta[1]];
            let b = match buf {
                None => upd,
                Some(b) => [mu * b[0] + upd[0], mu * b[1] + upd[1]],
            };
            buf = Some(b);
            theta = [theta[0] - lr * b[0], theta[1] - lr * b[1]];
            opt.step_closure(&|| loss(&theta_p.var())).unwrap();
            let got = theta_p.value().to_vec();
            for i in 0..2 {
                assert!(
                    (got[i] - theta[i]).abs() <= 1e-14,
                    "{norm:?}: {got:?} vs {theta:?}"
                );
            }
        }
    }
}

#[test]
fn any_outer_optimiser_receives_u_times_the_perturbed_gradient() {
    let u = [0.5, 2.0];
    let (store, loss) = quadratic_model();
    let (twin, _) = quadratic_model();
    let theta_p = store.trainable()[0].clone();
    let adamw = |s: &ParamStore<f64>| {
        Adam::new(s.trainable(), AdamConfig::adamw(0.05).weight_decay(0.1)).unwrap()
    };
    let rho = 0.2;
    let mut opt = LlqrSam::with_outer(
        Box::new(adamw(&store)),
        LlqrConfig {
            rho,
            refresh_every: usize::MAX,
            ..LlqrConfig::default()
        },
    )
    .unwrap();
    assert_eq!(opt.lr(), 0.05);
    opt.set_preconditioner(Preconditioner::diagonal(vec![Tensor::from_vec(
        u.to_vec(),
        &[2],
    )
    .unwrap()]));
    let mut reference = adamw(&twin);
    for _ in 0..3 {
        let v = twin.trainable()[0].value().to_vec();
        let theta = [v[0], v[1]];
        let g = gradient_at(theta);
        let d = [u[0] * g[0], u[1] * g[1]];
        let s = rho / (d[0] * d[0] + d[1] * d[1] + 1e-12).sqrt();
        let gp = gradient_at([theta[0] + s * d[0], theta[1] + s * d[1]]);
        let fed = Tensor::from_vec(vec![u[0] * gp[0], u[1] * gp[1]], &[2]).unwrap();
        reference
            .step(&nn::ParamGrads::from_tensors(vec![fed]))
            .unwrap();
        opt.step_closure(&|| loss(&theta_p.var())).unwrap();
        let (a, b) = (
            theta_p.value().to_vec(),
            twin.trainable()[0].value().to_vec(),
        );
        for i in 0..2 {
            assert!((a[i] - b[i]).abs() <= 1e-14, "{a:?} vs {b:?}");
        }
    }
}

#[test]
fn sam_starts_after_the_given_step() {
    let (store, loss) = quadratic_model();
    let (alone, _) = quadratic_model();
    let (p, q) = (store.trainable()[0].clone(), alone.trainable()[0].clone());
    let cfg = LlqrConfig {
        rho: 0.3,
        sam_start: 2,
        refresh_every: usize::MAX,
        ..LlqrConfig::default()
    };
    let mut delayed = LlqrSam::new(store.trainable(), cfg.clone()).unwrap();
    let mut plain = LlqrSam::new(alone.trainable(), LlqrConfig { rho: 0.0, ..cfg }).unwrap();
    // U held at I: only the perturbation differs between the two.
    for opt in [&mut delayed, &mut plain] {
        let u = opt.preconditioner().clone();
        opt.set_preconditioner(u);
    }
    for step in 0..3 {
        delayed.step_closure(&|| loss(&p.var())).unwrap();
        plain.step_closure(&|| loss(&q.var())).unwrap();
        let same = p.value().to_vec() == q.value().to_vec();
        assert_eq!(same, step < 2, "step {step}");
    }
}

#[test]
fn a_non_positive_u_norm_is_an_error_naming_the_parameter() {
    let (store, loss) = quadratic_model();
    let p = store.trainable()[0].clone();
    let mut opt = LlqrSam::new(
        store.trainable(),
        LlqrConfig {
            rho: 0.1,
            norm: PerturbationNorm::Matrix,
            refresh_every: usize::MAX,
            ..LlqrConfig::default()
        },
    )
    .unwrap();
    opt.set_preconditioner(Preconditioner::diagonal(vec![Tensor::from_vec(
        vec![-1.0, -1.0],
        &[2],
    )
    .unwrap()]));
    let before = p.value().to_vec();
    let e = opt
        .step_closure(&|| loss(&p.var()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("'theta'") && e.contains("not positive"), "{e}");
    assert_eq!(p.value().to_vec(), before);
}

#[test]
fn a_fisher_sam_step_by_hand() {
    // ε = ρ f/√(gᵀf + 1e-12), f = g/(g² + η); the base SGD then steps with ∇L(θ + ε).
    let (store, loss) = quadratic_model();
    let p = store.trainable()[0].clone();
    let (lr, rho, eta) = (0.1, 0.2, 0.1);
    let sgd = optim::Sgd::new(store.trainable(), optim::SgdConfig::new(lr)).unwrap();
    let mut opt =
        optim::Sam::new(Box::new(sgd), rho, optim::SamVariant::FisherSam { eta }).unwrap();
    let mut theta = [0.7, -1.3];
    for _ in 0..2 {
        let g = gradient_at(theta);
        let f = [g[0] / (g[0] * g[0] + eta), g[1] / (g[1] * g[1] + eta)];
        let s = rho / (g[0] * f[0] + g[1] * f[1] + 1e-12).sqrt();
        let gp = gradient_at([theta[0] + s * f[0], theta[1] + s * f[1]]);
        theta = [theta[0] - lr * gp[0], theta[1] - lr * gp[1]];
        opt.step_closure(&|| loss(&p.var())).unwrap();
        let got = p.value().to_vec();
        assert!((got[0] - theta[0]).abs() <= 1e-14 && (got[1] - theta[1]).abs() <= 1e-14);
    }
    let base = optim::Sgd::new(store.trainable(), optim::SgdConfig::new(lr)).unwrap();
    assert!(optim::Sam::new(
        Box::new(base),
        rho,
        optim::SamVariant::FisherSam { eta: 0.0 }
    )
    .is_err());
}
