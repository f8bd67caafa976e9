//! SAM and LLQR+SAM behind the shared `Optimizer` interface: `step_closure` drives
//! them, a checkpoint of their whole state (F-SAM's EMA, U, ḡ, the counters, the
//! wrapped optimiser's moments) resumes bit for bit, a due refresh is done (Newton)
//! or refused (Fisher) rather than skipped, and bad states are refused untouched.

use crate::common;

use common::{flat, tiny, Tiny};
use nn::loss;
use optim::llqr::{Geometry, LlqrConfig, LlqrSam};
use optim::{training_state, Adam, AdamConfig, Optimizer, Sam, SamVariant, Sgd, SgdConfig};
use tensor::Tensor;

fn loss_of(t: &Tiny) -> tensor::Result<autograd::Var<f64>> {
    loss::cross_entropy(&t.logits()?, &t.y, 0.0)
}

fn values(t: &Tiny) -> Vec<Vec<f64>> {
    t.store
        .trainable()
        .iter()
        .map(|p| p.value().to_vec())
        .collect()
}

fn sgd(t: &Tiny) -> Box<dyn Optimizer<f64>> {
    Box::new(Sgd::new(t.store.trainable(), SgdConfig::new(0.1).momentum(0.9)).unwrap())
}

fn fsam(t: &Tiny) -> Sam<f64> {
    let variant = SamVariant::FriendlySam {
        sigma: 1.0,
        decay: 0.6,
    };
    Sam::new(sgd(t), 0.05, variant).unwrap()
}

/// LLQR+F-SAM with the NGD geometry, refreshed by the caller every 2 steps.
fn llqr_fisher(t: &Tiny) -> LlqrSam<f64> {
    let cfg = LlqrConfig {
        rho: 0.05,
        fsam_decay: Some(0.6),
        refresh_every: 2,
        geometry: Geometry::Fisher,
        ..LlqrConfig::default()
    };
    LlqrSam::with_outer(sgd(t), cfg).unwrap()
}

/// LLQR+SAM with the Newton geometry around Adam, refreshing itself every 2 steps.
fn llqr_newton(t: &Tiny) -> LlqrSam<f64> {
    let cfg = LlqrConfig {
        rho: 0.05,
        refresh_every: 2,
        geometry: Geometry::Newton,
        ema: 0.9,
        ..LlqrConfig::default()
    };
    let adam = Adam::new(t.store.trainable(), AdamConfig::adam(0.01)).unwrap();
    LlqrSam::with_outer(Box::new(adam), cfg).unwrap()
}

fn step_plain<O: Optimizer<f64>>(o: &mut O, t: &Tiny) {
    o.step_closure(&|| loss_of(t)).unwrap();
}

fn step_refreshing(o: &mut LlqrSam<f64>, t: &Tiny) {
    if o.refresh_due() {
        o.refresh(&|| t.logits(), &t.y, 0.0).unwrap();
    }
    o.step_closure(&|| loss_of(t)).unwrap();
}

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "closure-step-{name}-{}.safetensors",
        std::process::id()
    ))
}

/// 5 steps, save, 3 more; a fresh model and optimiser loaded from the save and
/// stepped 3 times must land on the same bits. Also checks that the saved state
/// matters: the same 3 steps from the saved parameters with a fresh optimiser
/// state land elsewhere (so a state that saved nothing would fail the test).
fn check_resume<O: Optimizer<f64>>(
    name: &str,
    make: impl Fn(&Tiny) -> O,
    step: impl Fn(&mut O, &Tiny),
) {
    let a = tiny(3);
    let mut oa = make(&a);
    for _ in 0..5 {
        step(&mut oa, &a);
    }
    let path = temp_path(name);
    training_state::save(&path, &a.store, &oa, &[], &[]).unwrap();
    let saved_params = values(&a);
    for _ in 0..3 {
        step(&mut oa, &a);
    }

    let b = tiny(3);
    let mut ob = make(&b);
    training_state::load(&path, &b.store, &mut ob, &mut []).unwrap();
    std::fs::remove_file(&path).unwrap();
    for _ in 0..3 {
        step(&mut ob, &b);
    }
    assert_eq!(values(&a), values(&b), "{name}: resumed run differs");

    let c = tiny(3);
    for (p, v) in c.store.trainable().iter().zip(&saved_params) {
        let shape = p.shape();
        p.set(Tensor::from_vec(v.clone(), &shape).unwrap()).unwrap();
    }
    let mut oc = make(&c);
    for _ in 0..3 {
        step(&mut oc, &c);
    }
    assert_ne!(
        values(&a),
        values(&c),
        "{name}: the optimiser state made no difference, the test cannot see it"
    );
}

#[test]
fn friendly_sam_resumes_bit_for_bit() {
    check_resume("fsam", fsam, step_plain);
}

#[test]
fn llqr_friendly_sam_with_caller_refreshes_resumes_bit_for_bit() {
    check_resume("llqr-fisher", llqr_fisher, step_refreshing);
}

#[test]
fn llqr_sam_newton_refreshing_itself_resumes_bit_for_bit() {
    check_resume("llqr-newton", llqr_newton, step_plain);
}

#[test]
fn a_gradient_alone_cannot_step_sam_or_llqr() {
    let t = tiny(4);
    let before = values(&t);
    let grads = nn::ParamGrads::collect(
        &t.store.trainable(),
        &autograd::backward(&loss_of(&t).unwrap()).unwrap(),
    );
    let e = fsam(&t).step(&grads).unwrap_err().to_string();
    assert!(e.contains("step_closure"), "{e}");
    let e = llqr_newton(&t).step(&grads).unwrap_err().to_string();
    assert!(e.contains("step_closure"), "{e}");
    assert_eq!(values(&t), before);
}

#[test]
fn a_due_fisher_refresh_is_refused_not_skipped() {
    let t = tiny(5);
    let before = values(&t);
    let mut o = llqr_fisher(&t);
    let e = o.step_closure(&|| loss_of(&t)).unwrap_err().to_string();
    assert!(e.contains("refresh") && e.contains("step 0"), "{e}");
    assert_eq!(values(&t), before, "a refused step moved the parameters");
    assert_eq!(o.steps(), 0);
    // After the caller's refresh the same step goes through, and the next refresh is
    // due two steps later.
    step_refreshing(&mut o, &t);
    assert!(!o.refresh_due());
    step_plain(&mut o, &t);
    assert!(o.refresh_due());
}

#[test]
fn a_due_newton_refresh_is_the_one_the_caller_would_do() {
    let (a, b) = (tiny(6), tiny(6));
    let (mut oa, mut ob) = (llqr_newton(&a), llqr_newton(&b));
    for _ in 0..5 {
        step_plain(&mut oa, &a);
        if ob.refresh_due() {
            ob.refresh_newton(&|| loss_of(&b)).unwrap();
        }
        step_plain(&mut ob, &b);
    }
    assert_eq!(values(&a), values(&b));
    assert_eq!(
        flat(&oa.preconditioner().factor_tensors().concat()),
        flat(&ob.preconditioner().factor_tensors().concat())
    );
    // And U did move: the refreshes happened.
    assert!(oa
        .preconditioner()
        .factor_tensors()
        .concat()
        .iter()
        .flat_map(|u| u.to_vec())
        .any(|u| (u - 1.0).abs() > 1e-6));
}

/// `load_state(bad)` is an error containing `needle` and changes nothing.
fn refused<O: Optimizer<f64>>(o: &mut O, bad: optim::OptimizerState<f64>, needle: &str) {
    let before = o.state();
    let e = o.load_state(&bad).unwrap_err().to_string();
    assert!(e.contains(needle), "'{needle}' not in: {e}");
    let after = o.state();
    assert_eq!(before.scalars, after.scalars);
    let entries = |s: &optim::OptimizerState<f64>| -> Vec<(String, Vec<f64>)> {
        s.tensors
            .iter()
            .map(|(n, t)| (n.clone(), t.to_vec()))
            .collect()
    };
    assert_eq!(entries(&before), entries(&after));
}

#[test]
fn bad_states_are_refused_and_change_nothing() {
    let t = tiny(7);
    let mut o = llqr_fisher(&t);
    for _ in 0..3 {
        step_refreshing(&mut o, &t);
    }
    let good = o.state();

    let mut missing_u = good.clone();
    missing_u.tensors.retain(|(n, _)| n != "llqr.u.0.0");
    refused(&mut o, missing_u, "llqr.u.0.0");

    let mut extra = good.clone();
    extra
        .tensors
        .push(("llqr.bogus".into(), Tensor::zeros(&[1]).unwrap()));
    refused(&mut o, extra, "llqr.bogus");

    let mut bad_steps = good.clone();
    bad_steps.scalars.retain(|(n, _)| n != "llqr.steps");
    refused(&mut o, bad_steps, "steps");

    // ḡ saved by LLQR+F-SAM does not load into plain LLQR+SAM.
    let mut plain = LlqrSam::with_outer(
        sgd(&t),
        LlqrConfig {
            rho: 0.05,
            refresh_every: 2,
            ..LlqrConfig::default()
        },
    )
    .unwrap();
    refused(&mut plain, good, "F-SAM");

    // F-SAM's EMA does not load into plain SAM.
    let mut f = fsam(&t);
    for _ in 0..2 {
        step_plain(&mut f, &t);
    }
    let mut s = Sam::new(sgd(&t), 0.05, SamVariant::Sam).unwrap();
    refused(&mut s, f.state(), "EMA");
}
