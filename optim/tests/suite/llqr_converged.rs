//! The converged-diagonal refit of LLQR's U (the upper-bound arm, outside the
//! authors' method) against hand computations: U = δ/(diag G + δ) on a diagonal
//! Hessian (where one Hutchinson probe is exact), Hutchinson's estimate of the tiny
//! MLP's Fisher diagonal against an independent finite-difference Fisher within
//! its sampling error, the EMA, and the refusals.

use crate::common::{flat, tiny};
use autograd::Var;
use nn::ParamStore;
use optim::llqr::converged_diagonal::{converged_entries, hutchinson_diagonal};
use optim::llqr::{BatchScale, CurvatureProducts, Geometry, LlqrConfig, LlqrSam, Refit, Structure};
use tensor::{Rng, Tensor};

const LAMBDA: [f64; 4] = [1.0, 0.2, 0.04, 0.008];

fn diagonal_quadratic(theta: &Var<f64>) -> tensor::Result<Var<f64>> {
    let l = Var::constant(Tensor::from_vec(LAMBDA.to_vec(), &[4])?);
    theta.square()?.mul(&l)?.sum_all()?.mul_scalar(0.5)
}

fn converged(probes: usize, relative_damping: f64) -> Refit {
    Refit::ConvergedDiagonal {
        probes,
        relative_damping,
        seed: 7,
    }
}

/// A Newton learner on the diagonal quadratic with the converged refit.
fn learner(ema: f64, structure: Structure) -> (ParamStore<f64>, tensor::Result<LlqrSam<f64>>) {
    let store = ParamStore::<f64>::new();
    store
        .root()
        .param(
            "theta",
            Tensor::from_vec(vec![1.0, -2.0, 3.0, 0.5], &[4]).unwrap(),
        )
        .unwrap();
    let opt = LlqrSam::new(
        store.trainable(),
        LlqrConfig {
            geometry: Geometry::Newton,
            refit: converged(1, 1e-3),
            ema,
            structure,
            ..LlqrConfig::default()
        },
    );
    (store, opt)
}

#[test]
fn one_refresh_sets_u_to_the_inverse_damped_diagonal_of_a_diagonal_hessian() {
    // For a diagonal H every Rademacher probe gives v ∘ Hv = diag H exactly, so
    // U = δ/(λ + δ) with δ = 10⁻³·mean λ to rounding, from U = I in one refresh
    // (β = 0); with β = 0.9 the EMA keeps 0.9 of the old U.
    let delta = 1e-3 * LAMBDA.iter().sum::<f64>() / 4.0;
    for ema in [0.0, 0.9] {
        let (store, opt) = learner(ema, Structure::Diagonal);
        let mut opt = opt.unwrap();
        let theta = store.trainable()[0].clone();
        let trace = opt
            .refresh_newton(&|| diagonal_quadratic(&theta.var()))
            .unwrap();
        let u = flat(&opt.preconditioner().factor_tensors().concat());
        for k in 0..4 {
            let want = ema + (1.0 - ema) * delta / (LAMBDA[k] + delta);
            assert!(
                (u[k] - want).abs() <= 1e-13 * want,
                "β = {ema}, U_{k} = {} against {want}",
                u[k]
            );
        }
        // The trace holds J before and after the refit.
        assert_eq!(trace.objective.len(), 2);
        assert!(
            trace.objective.iter().all(|j| j.is_finite()),
            "{:?}",
            trace.objective
        );
        assert!(!opt.refresh_due());
    }
}

#[test]
fn hutchinson_estimates_the_fisher_diagonal_within_its_sampling_error() {
    // The tiny MLP's mean Fisher, column by column from the independent
    // finite-difference Fisher: each estimated entry must lie within 5 standard
    // errors √(Σ_{j≠i} F_ij² / K) of the true diagonal (an estimator that squares
    // the probe, or forgets the 1/K, is off by far more).
    let t = tiny(2);
    let params = t.store.trainable();
    let n = t.grad().len();
    let batch = t.y.len() as f64;
    let columns: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            let mut e = vec![0.0; n];
            e[i] = 1.0;
            t.summed_fisher_times(&e)
                .into_iter()
                .map(|x| x / batch)
                .collect()
        })
        .collect();
    let products =
        CurvatureProducts::fisher(&params, &t.logits().unwrap(), BatchScale::Mean).unwrap();
    let like: Vec<Tensor<f64>> = params.iter().map(|p| p.value()).collect();
    let probes = 2000;
    let estimate = flat(
        &hutchinson_diagonal(&like, &|v| products.apply(v), probes, &mut Rng::new(3)).unwrap(),
    );
    let mut worst: f64 = 0.0;
    for i in 0..n {
        let off: f64 = (0..n)
            .filter(|&j| j != i)
            .map(|j| columns[j][i] * columns[j][i])
            .sum();
        let se = (off / probes as f64).sqrt();
        let z = (estimate[i] - columns[i][i]).abs() / (se + 1e-12);
        worst = worst.max(z);
        assert!(
            z <= 5.0,
            "entry {i}: {} against {} (se {se})",
            estimate[i],
            columns[i][i]
        );
    }
    // The check has teeth: some entry's error is a visible fraction of its bound.
    assert!(worst > 0.5, "largest error only {worst} standard errors");
}

#[test]
fn converged_entries_clip_negative_estimates_and_damp_by_the_mean_curvature() {
    let d = vec![
        Tensor::from_vec(vec![2.0, -1.0], &[2]).unwrap(),
        Tensor::from_vec(vec![0.0, 6.0], &[2]).unwrap(),
    ];
    // tr = 8 over 4 entries: δ = 0.25 · 2 = 0.5.
    let u = converged_entries(&d, 0.25).unwrap();
    assert_eq!(flat(&u[0]), vec![0.2, 1.0]);
    assert_eq!(flat(&u[1]), vec![1.0, 0.5 / 6.5]);
}

#[test]
fn the_converged_refit_refuses_what_it_cannot_do() {
    // Only a diagonal U.
    for structure in [Structure::Kfac, Structure::Dense] {
        let err = learner(0.0, structure).1.err().expect("refused");
        assert!(err.to_string().contains("diagonal U"), "{err}");
    }
    // At least one probe, a positive finite damping.
    for refit in [
        converged(0, 1e-3),
        converged(1, 0.0),
        converged(1, f64::NAN),
    ] {
        let store = ParamStore::<f64>::new();
        store
            .root()
            .param("w", Tensor::ones(&[2]).unwrap())
            .unwrap();
        let cfg = LlqrConfig {
            refit,
            ..LlqrConfig::default()
        };
        let err = LlqrSam::new(store.trainable(), cfg).err().expect("refused");
        assert!(err.to_string().contains("probes"), "{err}");
    }
    // No curvature at all (a linear loss): no δ can be set; U is unchanged and the
    // refresh stays due.
    let (store, opt) = learner(0.0, Structure::Diagonal);
    let mut opt = opt.unwrap();
    let theta = store.trainable()[0].clone();
    let err = opt
        .refresh_newton(&|| theta.var().sum_all())
        .expect_err("no curvature");
    assert!(err.to_string().contains("trace"), "{err}");
    assert_eq!(
        flat(&opt.preconditioner().factor_tensors().concat()),
        vec![1.0; 4]
    );
    assert!(opt.refresh_due());
    // A non-finite estimate is named as such.
    let bad = vec![Tensor::from_vec(vec![1.0, f64::NAN], &[2]).unwrap()];
    let err = converged_entries(&bad, 1e-3).expect_err("not finite");
    assert!(err.to_string().contains("not finite"), "{err}");
}
