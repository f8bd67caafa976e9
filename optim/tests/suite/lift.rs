//! The lift: convexity of the ICNN under every strategy, the joint-necessity zeros of
//! the cross-covariance reading (and its non-zero value for the full lift), the
//! estimator's known pairs, and the permutation invariance of the summary.

use autograd::{grad, Var};
use nn::{Activation, DeepSets, Icnn, IcnnConfig, ParamStore};
use optim::lift::{
    cross_covariance, cross_covariance_guarded, probe, FanInGain, Guards, Lift, LiftConfig,
    LiftVariant, Pgd, Positivity, Softplus,
};
use tensor::{Rng, Tensor};

fn icnn(store: &ParamStore<f64>, d: usize, rng: &mut Rng) -> Icnn<f64> {
    let cfg = IcnnConfig {
        input: d,
        width: 12,
        layers: 3,
        activation: Activation::Softplus,
        strong_convexity: 0.05,
        act_norm: false,
    };
    Icnn::new(&store.root().sub("icnn"), cfg, rng).unwrap()
}

fn strategy(
    kind: &str,
    store: &ParamStore<f64>,
    net: &Icnn<f64>,
    d: usize,
    rng: &mut Rng,
) -> Box<dyn Positivity<f64>> {
    let scope = store.root().sub("pos");
    let init = net.init_constrained(rng).unwrap();
    let mut lift = |variant| {
        let cfg = LiftConfig {
            variant,
            hidden: vec![16],
            summary: 12,
            ..LiftConfig::default()
        };
        Box::new(Lift::new(&scope, d, net.constrained_shapes(), &cfg, rng).unwrap())
            as Box<dyn Positivity<f64>>
    };
    match kind {
        "pgd" => Box::new(Pgd::new(&scope, init).unwrap()),
        "softplus" => Box::new(Softplus::new(&scope, init).unwrap()),
        "lift" => lift(LiftVariant::Full),
        "no-slack" => lift(LiftVariant::NoSlack),
        "code" => lift(LiftVariant::Code),
        _ => unreachable!(),
    }
}

const KINDS: [&str; 5] = ["pgd", "softplus", "lift", "no-slack", "code"];

/// Moves every parameter by N(0, scale²) (then restores feasibility).
fn jitter(store: &ParamStore<f64>, s: &dyn Positivity<f64>, scale: f64, rng: &mut Rng) {
    for p in store.trainable() {
        let noise = Tensor::rand_normal(&p.shape(), 0.0, scale, rng).unwrap();
        p.set(p.value().add(&noise).unwrap()).unwrap();
    }
    s.project().unwrap();
}

#[test]
fn the_icnn_is_convex_under_every_strategy() {
    for (i, kind) in KINDS.iter().enumerate() {
        let mut rng = Rng::new(10 + i as u64);
        let store = ParamStore::new();
        let d = 3;
        let net = icnn(&store, d, &mut rng);
        let s = strategy(kind, &store, &net, d, &mut rng);
        jitter(&store, s.as_ref(), 0.5, &mut rng);
        let cond = Tensor::<f64>::rand_normal(&[16, d], 0.0, 1.0, &mut rng).unwrap();
        let w = s.weights(&cond).unwrap();
        assert!(
            w.iter().all(|t| t.value().min_all().unwrap() >= 0.0),
            "{kind}: negative weight"
        );
        let f = |x: &Tensor<f64>| {
            net.forward_with(&Var::constant(x.clone()), &w)
                .unwrap()
                .value()
                .clone()
        };
        // Midpoint inequality along random segments.
        let a = Tensor::<f64>::rand_normal(&[200, d], 0.0, 2.0, &mut rng).unwrap();
        let b = Tensor::<f64>::rand_normal(&[200, d], 0.0, 2.0, &mut rng).unwrap();
        let mid = f(&a.add(&b).unwrap().mul_scalar(0.5));
        let chord = f(&a).add(&f(&b)).unwrap().mul_scalar(0.5);
        let gap = mid.sub(&chord).unwrap().max_all().unwrap();
        assert!(gap <= 1e-12, "{kind}: midpoint above the chord by {gap}");
        // Input Hessian PSD at random points, through second-order autograd.
        for _ in 0..5 {
            let x = Var::leaf(Tensor::<f64>::rand_normal(&[1, d], 0.0, 2.0, &mut rng).unwrap());
            let fx = net.forward_with(&x, &w).unwrap().sum_all().unwrap();
            let g = grad(&[&fx], &[&x], None, true).unwrap().remove(0);
            let mut rows = Vec::new();
            for j in 0..d {
                let gj = g.narrow(1, j, 1).unwrap().sum_all().unwrap();
                rows.extend(
                    grad(&[&gj], &[&x], None, false).unwrap()[0]
                        .value()
                        .to_vec(),
                );
            }
            let h = Tensor::from_vec(rows, &[d, d]).unwrap();
            let sym = h.add(&h.t().unwrap()).unwrap().mul_scalar(0.5);
            let asym = h.sub(&h.t().unwrap()).unwrap().abs().max_all().unwrap();
            assert!(
                asym < 1e-10,
                "{kind}: the Hessian is not symmetric ({asym})"
            );
            let (lam, _) = sym.eigh().unwrap();
            // The ½c‖x‖² term puts every eigenvalue at or above c.
            assert!(
                lam.to_vec()[0] >= 0.05 - 1e-9,
                "{kind}: Hessian eigenvalue {:?}",
                lam.to_vec()
            );
        }
    }
}

/// A 1-D EBM-style loss: mean energy of the batch.
fn energy_loss(
    net: &Icnn<f64>,
) -> impl Fn(&[Var<f64>], &Tensor<f64>) -> tensor::Result<Var<f64>> + '_ {
    move |w: &[Var<f64>], batch: &Tensor<f64>| {
        net.forward_with(&Var::constant(batch.clone()), w)?
            .mean_all()
    }
}

fn probe_batches(rng: &mut Rng, b: usize, independent: bool) -> Vec<(Tensor<f64>, Tensor<f64>)> {
    (0..b)
        .map(|_| {
            // Gumbel samples: −ln(−ln u).
            let mut draw = || {
                Tensor::<f64>::rand_uniform(&[64, 1], 1e-9, 1.0 - 1e-9, rng)
                    .unwrap()
                    .ln()
                    .neg()
                    .ln()
                    .neg()
            };
            let loss = draw();
            let cond = if independent { draw() } else { loss.clone() };
            (cond, loss)
        })
        .collect()
}

#[test]
fn joint_necessity_zeros_and_the_full_lift_reading() {
    let mut rng = Rng::new(3);
    let mut readings = Vec::new();
    for kind in KINDS {
        let store = ParamStore::new();
        let net = icnn(&store, 1, &mut rng);
        let s = strategy(kind, &store, &net, 1, &mut rng);
        let probes = probe_batches(&mut Rng::new(77), 24, false);
        let r = probe(
            s.as_ref(),
            &probes,
            &energy_loss(&net),
            200,
            &mut Rng::new(5),
        )
        .unwrap();
        readings.push((kind, r));
    }
    for (kind, r) in &readings {
        match *kind {
            "no-slack" => assert!(
                r.is_none(),
                "no slack channel: the reading is zero by definition"
            ),
            "lift" => {
                let r = r.as_ref().unwrap();
                assert!(r.relative_iterate_variance > 1e-8, "{r:?}");
                assert!(r.trace != 0.0 && r.frobenius > 0.0, "{r:?}");
                assert!(r.asymmetry > 1e-3, "{r:?}");
                assert!(
                    r.p_value < 0.02,
                    "the full lift couples iterate and gradient: {r:?}"
                );
            }
            _ => {
                let r = r.as_ref().unwrap();
                assert!(r.relative_iterate_variance < 1e-10, "{kind}: {r:?}");
                assert_eq!(r.trace, 0.0, "{kind}: {r:?}");
                assert_eq!(r.frobenius, 0.0, "{kind}: {r:?}");
            }
        }
    }
    // The independent-batch control. Conditioning on a fresh batch keeps the
    // iterate's jitter; with the gradient taken at a pinned emission (so that it
    // cannot depend on the probe's iterate) iterate and gradient are independent and
    // the reading is not significant. (Taken at each probe's own iterate instead, the
    // gradient moves with the iterate through the loss's curvature, and that V·H term
    // is detectable at initialisation — see the closing note of the lift issue.)
    let store = ParamStore::new();
    let net = icnn(&store, 1, &mut rng);
    let s = strategy("lift", &store, &net, 1, &mut rng);
    let probes = probe_batches(&mut Rng::new(78), 48, true);
    let slack: Vec<Var<f64>> = s.slack().iter().map(|p| p.var()).collect();
    let refs: Vec<&Var<f64>> = slack.iter().collect();
    let mut iterates = Vec::new();
    let mut grads = Vec::new();
    for (cond, batch) in &probes {
        iterates.push(
            s.latents(cond)
                .unwrap()
                .iter()
                .flat_map(|t| t.to_vec())
                .collect::<Vec<f64>>(),
        );
        let pinned = s.weights(&probes[0].0).unwrap();
        let l = energy_loss(&net)(&pinned, batch).unwrap();
        let g = grad(&[&l], &refs, None, false).unwrap();
        grads.push(
            g.iter()
                .flat_map(|v| v.value().to_vec())
                .collect::<Vec<f64>>(),
        );
    }
    let r = cross_covariance(&iterates, &grads, 400, &mut Rng::new(6)).unwrap();
    assert!(r.relative_iterate_variance > 1e-8, "{r:?}");
    assert!(r.p_value > 0.05, "no significant coupling expected: {r:?}");
}

#[test]
fn the_estimator_reproduces_the_known_pairs_and_refuses_degenerate_input() {
    let mut rng = Rng::new(0);
    let j = vec![vec![1.0, 2.0], vec![-1.0, -2.0]];
    let g = vec![vec![3.0, -4.0], vec![-3.0, 4.0]];
    let r = cross_covariance(&j, &g, 0, &mut rng).unwrap();
    // Σ = [[6, −8], [12, −16]]: Σ[0][1] = −8 and Σ[1][0] = +12 pin the slot order.
    assert_eq!(r.trace, -10.0);
    assert!((r.frobenius - 500f64.sqrt()).abs() < 1e-12);
    assert!((r.asymmetry - (800.0f64 / 500.0).sqrt()).abs() < 1e-12);
    let r3 = cross_covariance(
        &[vec![1.0], vec![0.0], vec![-1.0]],
        &[vec![2.0], vec![0.0], vec![-2.0]],
        0,
        &mut rng,
    )
    .unwrap();
    assert_eq!(r3.trace, 2.0);
    assert!(cross_covariance(&j[..1], &g[..1], 0, &mut rng).is_err());
    assert!(cross_covariance(&j, &j, 0, &mut rng)
        .unwrap_err()
        .to_string()
        .contains("same sequence"));
    // The permutation test: an independent pair is not significant, a coupled pair is.
    let iter: Vec<Vec<f64>> = (0..40)
        .map(|_| (0..5).map(|_| rng.normal()).collect())
        .collect();
    let noise: Vec<Vec<f64>> = (0..40)
        .map(|_| (0..5).map(|_| rng.normal()).collect())
        .collect();
    let coupled: Vec<Vec<f64>> = iter
        .iter()
        .zip(&noise)
        .map(|(a, n)| a.iter().zip(n).map(|(x, e)| x + 0.5 * e).collect())
        .collect();
    assert!(
        cross_covariance(&iter, &noise, 400, &mut rng)
            .unwrap()
            .p_value
            > 0.05
    );
    assert!(
        cross_covariance(&iter, &coupled, 400, &mut rng)
            .unwrap()
            .p_value
            < 0.02
    );
    let nan = vec![vec![f64::NAN, 0.0], vec![0.0, 0.0]];
    assert!(cross_covariance(&nan, &g, 0, &mut rng).is_err());
}

/// The authors' two extra guards, off by default: slots that differ by a constant
/// (same centred rows), and proportional slots (a symmetric estimate).
#[test]
fn the_authors_guards_refuse_aliased_and_symmetric_estimates() {
    let mut rng = Rng::new(3);
    let g: Vec<Vec<f64>> = (0..6)
        .map(|_| (0..3).map(|_| rng.normal()).collect())
        .collect();
    let shifted: Vec<Vec<f64>> = g
        .iter()
        .map(|r| r.iter().map(|v| v + 5.0).collect())
        .collect();
    let doubled: Vec<Vec<f64>> = g
        .iter()
        .map(|r| r.iter().map(|v| 2.0 * v).collect())
        .collect();
    let mixed: Vec<Vec<f64>> = g.iter().map(|r| vec![r[1], -r[0], r[2] + r[0]]).collect();
    // Accepted by default, the readings reported as they are.
    let alias = cross_covariance(&shifted, &g, 0, &mut rng).unwrap();
    let sym = cross_covariance(&doubled, &g, 0, &mut rng).unwrap();
    assert!(sym.asymmetry < 1e-12, "{sym:?}");
    assert!(alias.trace > 0.0);
    // Refused with the authors' guards, each by its own check.
    let e = cross_covariance_guarded(&shifted, &g, 0, &mut rng, Guards::AUTHORS)
        .unwrap_err()
        .to_string();
    assert!(e.contains("after centring"), "{e}");
    let e = cross_covariance_guarded(&doubled, &g, 0, &mut rng, Guards::AUTHORS)
        .unwrap_err()
        .to_string();
    assert!(e.contains("symmetric"), "{e}");
    // A genuine cross-covariance passes them.
    let ok = cross_covariance_guarded(&mixed, &g, 0, &mut rng, Guards::AUTHORS).unwrap();
    assert!(ok.asymmetry > 1e-3);
}

#[test]
fn the_pooled_summary_is_permutation_invariant_and_emissions_positive() {
    let store = ParamStore::<f64>::new();
    let mut rng = Rng::new(2);
    let ds = DeepSets::new(&store.root(), 2, &[8, 8], 6, true, &mut rng).unwrap();
    let x = Tensor::<f64>::rand_normal(&[20, 2], 0.0, 1.0, &mut rng).unwrap();
    let perm = rng.permutation(20);
    let a = ds.summarise(&x).unwrap().value().to_vec();
    let b = ds
        .summarise(&x.index_select(0, &perm).unwrap())
        .unwrap()
        .value()
        .to_vec();
    assert!(a
        .iter()
        .zip(&b)
        .all(|(p, q)| (p - q).abs() <= 1e-12 * (1.0 + q.abs())));
    assert!(ds.summarise(&Tensor::zeros(&[0, 2]).unwrap()).is_err());
    // Standardised with the authors' unbiased std (n − 1), or the 1/n one: against
    // the raw pooled vector of the same encoder, standardised by hand.
    let raw = DeepSets::new(
        &store.root().sub("raw"),
        2,
        &[8, 8],
        6,
        false,
        &mut Rng::new(2),
    )
    .unwrap()
    .summarise(&x)
    .unwrap()
    .value()
    .to_vec();
    let mean = raw.iter().sum::<f64>() / 6.0;
    let ss: f64 = raw.iter().map(|v| (v - mean).powi(2)).sum();
    let biased = DeepSets::new(
        &store.root().sub("b"),
        2,
        &[8, 8],
        6,
        true,
        &mut Rng::new(2),
    )
    .unwrap()
    .biased_std();
    let c = biased.summarise(&x).unwrap().value().to_vec();
    for (got, dof) in [(&a, 5.0), (&c, 6.0)] {
        let std = (ss / dof).sqrt();
        for (g, r) in got.iter().zip(&raw) {
            let want = (r - mean) / (std + 1e-5);
            assert!((g - want).abs() < 1e-12, "{g} vs {want} (dof {dof})");
        }
    }
    let net = icnn(&store, 2, &mut rng);
    let s = strategy("lift", &store, &net, 2, &mut rng);
    let w = s.weights(&x).unwrap();
    assert!(w.iter().all(|t| t.value().min_all().unwrap() > 0.0));
    let shoulder = s.shoulder_occupancy(&x).unwrap();
    assert!((0.0..=1.0).contains(&shoulder));
}

/// CP-Flow's gain divides each weight tensor by its fan-in and nothing else: the
/// latents, the slack channel, the shoulder reading and PGD's projection are the
/// wrapped strategy's, so σ²_Jac and occupancy read the same under either convention.
#[test]
fn the_fan_in_gain_scales_only_the_weights() {
    for kind in KINDS {
        let mut rng = Rng::new(21);
        let store = ParamStore::<f64>::new();
        let net = icnn(&store, 2, &mut rng);
        let shapes = net.constrained_shapes();
        let gained = FanInGain::new(strategy(kind, &store, &net, 2, &mut rng), &shapes).unwrap();
        let batch = Tensor::rand_normal(&[9, 2], 0.0, 1.0, &mut rng).unwrap();
        // The same store holds the inner strategy's parameters: rebuild it to compare.
        let mut rng2 = Rng::new(21);
        let store2 = ParamStore::<f64>::new();
        let net2 = icnn(&store2, 2, &mut rng2);
        let plain = strategy(kind, &store2, &net2, 2, &mut rng2);
        let (a, b) = (
            gained.weights(&batch).unwrap(),
            plain.weights(&batch).unwrap(),
        );
        for ((wa, wb), s) in a.iter().zip(&b).zip(&shapes) {
            let want = wb.value().mul_scalar(1.0 / s[1] as f64);
            assert_eq!(wa.value().to_vec(), want.to_vec(), "{kind}");
        }
        assert_eq!(
            gained
                .latents(&batch)
                .unwrap()
                .iter()
                .map(|t| t.to_vec())
                .collect::<Vec<_>>(),
            plain
                .latents(&batch)
                .unwrap()
                .iter()
                .map(|t| t.to_vec())
                .collect::<Vec<_>>()
        );
        assert_eq!(gained.slack().len(), plain.slack().len());
        assert_eq!(
            gained.shoulder_occupancy(&batch).unwrap(),
            plain.shoulder_occupancy(&batch).unwrap()
        );
    }
    // PGD's projection goes through the wrapper.
    let mut rng = Rng::new(4);
    let store = ParamStore::<f64>::new();
    let net = icnn(&store, 2, &mut rng);
    let shapes = net.constrained_shapes();
    let gained = FanInGain::new(strategy("pgd", &store, &net, 2, &mut rng), &shapes).unwrap();
    for p in store
        .trainable()
        .iter()
        .filter(|p| p.name().starts_with("pos"))
    {
        p.set(p.value().neg()).unwrap();
    }
    gained.project().unwrap();
    let batch = Tensor::zeros(&[1, 2]).unwrap();
    assert!(gained.weights(&batch).unwrap().iter().all(|w| w
        .value()
        .to_vec()
        .iter()
        .all(|&v| v >= 0.0)));
    let lone = Pgd::new(
        &ParamStore::new().root(),
        vec![Tensor::<f64>::ones(&[3]).unwrap()],
    );
    assert!(FanInGain::new(Box::new(lone.unwrap()), &[vec![3]]).is_err());
}

/// After one loss evaluation every trainable part of the lift receives gradient: the
/// batch encoder φ, the readouts Θ_E and the slack b (a detached body or a missing
/// slack path would leave some of them at exactly zero).
#[test]
fn every_part_of_the_lift_gets_a_gradient() {
    let mut rng = Rng::new(13);
    let store = ParamStore::<f64>::new();
    let net = icnn(&store, 1, &mut rng);
    let s = strategy("lift", &store, &net, 1, &mut rng);
    let batch = Tensor::rand_normal(&[64, 1], 0.0, 1.0, &mut rng).unwrap();
    // A loss with a log-partition term, as in training (the energy alone would give
    // the readouts a gradient but could cancel in a sum).
    let w = s.weights(&batch).unwrap();
    let grid = Var::constant(
        Tensor::from_vec((0..50).map(|i| -5.0 + 0.2 * i as f64).collect(), &[50, 1]).unwrap(),
    );
    let loss = net
        .forward_with(&Var::constant(batch.clone()), &w)
        .unwrap()
        .mean_all()
        .unwrap()
        .add(
            &net.forward_with(&grid, &w)
                .unwrap()
                .neg()
                .unwrap()
                .logsumexp(&[0, 1], false)
                .unwrap(),
        )
        .unwrap();
    let params = store.trainable();
    let grads = nn::ParamGrads::collect(&params, &autograd::backward(&loss).unwrap());
    for (p, g) in params.iter().zip(grads.tensors()) {
        if p.name().starts_with("pos") {
            let norm = g.square().sum_all().item().unwrap().sqrt();
            assert!(norm > 0.0, "{} has no gradient", p.name());
        }
    }
    let names: Vec<String> = params.iter().map(|p| p.name().to_string()).collect();
    for part in ["body", "theta", "slack"] {
        assert!(
            names
                .iter()
                .any(|n| n.starts_with("pos") && n.contains(part)),
            "{part} in {names:?}"
        );
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..proptest::prelude::ProptestConfig::default() })]

    /// Convexity over random parameter draws, sizes, both activations, every
    /// strategy, with and without CP-Flow's gain: the midpoint of any segment lies on
    /// or below the chord.
    #[test]
    fn the_icnn_stays_convex_over_random_draws(
        seed in 0u64..1000,
        input in 1usize..4,
        width in 1usize..12,
        layers in 1usize..4,
        relu in proptest::prelude::any::<bool>(),
        kind in 0usize..5,
        gain in proptest::prelude::any::<bool>(),
        scale in 0.0f64..2.0,
    ) {
        let mut rng = Rng::new(seed);
        let store = ParamStore::<f64>::new();
        let cfg = IcnnConfig {
            input,
            width,
            layers,
            activation: if relu { Activation::Relu } else { Activation::Softplus },
            strong_convexity: 0.0,
            act_norm: false,
        };
        let net = Icnn::new(&store.root().sub("icnn"), cfg, &mut rng).unwrap();
        let mut s = strategy(KINDS[kind], &store, &net, input, &mut rng);
        if gain {
            s = Box::new(FanInGain::new(s, &net.constrained_shapes()).unwrap());
        }
        jitter(&store, s.as_ref(), scale, &mut rng);
        let cond = Tensor::<f64>::rand_normal(&[8, input], 0.0, 1.0, &mut rng).unwrap();
        let w = s.weights(&cond).unwrap();
        let f = |x: &Tensor<f64>| {
            net.forward_with(&Var::constant(x.clone()), &w).unwrap().value().clone()
        };
        let a = Tensor::<f64>::rand_normal(&[64, input], 0.0, 3.0, &mut rng).unwrap();
        let b = Tensor::<f64>::rand_normal(&[64, input], 0.0, 3.0, &mut rng).unwrap();
        let mid = f(&a.add(&b).unwrap().mul_scalar(0.5));
        let chord = f(&a).add(&f(&b)).unwrap().mul_scalar(0.5);
        let size = chord.abs().max_all().unwrap().max(1.0);
        let gap = mid.sub(&chord).unwrap().max_all().unwrap();
        proptest::prop_assert!(gap <= 1e-12 * size, "midpoint above the chord by {}", gap);
    }
}

/// The authors' EBM lift emits every ICNN parameter: the free parameters come from
/// identity heads after the softplus ones, the network evaluated with them equals
/// the network whose own parameters hold those values, F stays convex in x, every
/// head receives gradient, and the cross-covariance channel is the positivity heads.
#[test]
fn a_lift_emitting_every_parameter_drives_the_whole_network() {
    let mut rng = Rng::new(11);
    let store = ParamStore::<f64>::new();
    let net = icnn(&store, 2, &mut rng);
    let cfg = LiftConfig {
        hidden: vec![16],
        summary: 12,
        emit_all: true,
        ..LiftConfig::default()
    };
    let lifted = ParamStore::<f64>::new();
    let lift = Lift::emitting_all(
        &lifted.root(),
        2,
        net.constrained_shapes(),
        net.free_shapes(),
        &cfg,
        &mut rng,
    )
    .unwrap();
    let batch = Tensor::<f64>::rand_normal(&[32, 2], 0.0, 1.0, &mut rng).unwrap();
    let w = lift.weights(&batch).unwrap();
    let k = net.constrained_shapes().len();
    assert_eq!(w.len(), k + net.free_shapes().len());
    assert!(w[..k]
        .iter()
        .all(|v| v.value().to_vec().iter().all(|&x| x > 0.0)));
    assert!(w[k..]
        .iter()
        .any(|v| v.value().to_vec().iter().any(|&x| x < 0.0)));
    assert_eq!(lift.latents(&batch).unwrap().len(), k);
    assert_eq!(lift.slack().len(), k);
    // The same values written into the network's own parameters give the same F.
    let x = Tensor::<f64>::rand_normal(&[10, 2], 0.0, 1.0, &mut rng).unwrap();
    let xv = Var::constant(x.clone());
    let emitted = net.forward_with(&xv, &w).unwrap().value().to_vec();
    let own = [&net.first_weight, &net.first_bias]
        .into_iter()
        .cloned()
        .chain(
            net.skips
                .iter()
                .zip(&net.biases)
                .flat_map(|(a, b)| [a.clone(), b.clone()]),
        )
        .chain(std::iter::once(net.out_skip.clone()));
    for (p, v) in own.zip(&w[k..]) {
        p.set(v.value().clone()).unwrap();
    }
    let direct = net.forward_with(&xv, &w[..k]).unwrap().value().to_vec();
    assert!(emitted
        .iter()
        .zip(&direct)
        .all(|(a, b)| (a - b).abs() <= 1e-12 * (1.0 + b.abs())));
    // Convex along random chords.
    for _ in 0..20 {
        let (a, b) = (
            Tensor::<f64>::rand_normal(&[1, 2], 0.0, 2.0, &mut rng).unwrap(),
            Tensor::<f64>::rand_normal(&[1, 2], 0.0, 2.0, &mut rng).unwrap(),
        );
        let f = |t: &Tensor<f64>| {
            net.forward_with(&Var::constant(t.clone()), &w)
                .unwrap()
                .item()
                .unwrap()
        };
        let mid = a.add(&b).unwrap().mul_scalar(0.5);
        assert!(f(&mid) <= 0.5 * (f(&a) + f(&b)) + 1e-12);
    }
    // Every readout (positivity and free heads) gets gradient from the loss.
    let loss = net
        .forward_with(&xv, &w)
        .unwrap()
        .square()
        .unwrap()
        .mean_all()
        .unwrap();
    let params = lifted.trainable();
    let vars: Vec<Var<f64>> = params.iter().map(|p| p.var()).collect();
    let g = grad(&[&loss], &vars.iter().collect::<Vec<_>>(), None, false).unwrap();
    for (p, g) in params.iter().zip(&g) {
        assert!(
            g.value().to_vec().iter().any(|&v| v != 0.0),
            "{} gets no gradient",
            p.name()
        );
    }
}

/// A slack spread that is negative or not finite is refused, naming both values.
#[test]
fn a_bad_slack_spread_is_a_named_error() {
    let store = ParamStore::<f64>::new();
    let mut rng = Rng::new(1);
    for bad in [-0.5, f64::NAN, f64::INFINITY] {
        let cfg = LiftConfig {
            slack_std: bad,
            ..LiftConfig::default()
        };
        let e = Lift::<f64>::new(&store.root().sub("l"), 2, vec![vec![4, 4]], &cfg, &mut rng)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("slack_std"), "{e}");
    }
    let cfg = LiftConfig {
        slack_init: 0.0,
        slack_std: 0.5,
        ..LiftConfig::default()
    };
    let lift =
        Lift::<f64>::new(&store.root().sub("ok"), 2, vec![vec![4, 4]], &cfg, &mut rng).unwrap();
    let slack = lift.slack()[0].value().to_vec();
    let mean = slack.iter().sum::<f64>() / 16.0;
    assert!(
        slack.iter().any(|&v| v != slack[0]) && mean.abs() < 0.5,
        "{slack:?}"
    );
}
