//! SGD and Adam against plain-loop references; errors leave parameters unchanged;
//! schedules at known points.

use nn::{ParamGrads, ParamStore};
use optim::{Adam, AdamConfig, Optimizer, Schedule, Sgd, SgdConfig};
use tensor::{Rng, Tensor};

fn setup(seed: u64) -> (ParamStore<f64>, Vec<Vec<Tensor<f64>>>) {
    let store = ParamStore::new();
    let mut rng = Rng::new(seed);
    store
        .root()
        .param(
            "w",
            Tensor::rand_normal(&[3, 2], 0.0, 1.0, &mut rng).unwrap(),
        )
        .unwrap();
    store
        .root()
        .param("b", Tensor::rand_normal(&[2], 0.0, 1.0, &mut rng).unwrap())
        .unwrap();
    let grads = (0..5)
        .map(|_| {
            vec![
                Tensor::rand_normal(&[3, 2], 0.0, 1.0, &mut rng).unwrap(),
                Tensor::rand_normal(&[2], 0.0, 1.0, &mut rng).unwrap(),
            ]
        })
        .collect();
    (store, grads)
}

fn run(opt: &mut dyn Optimizer<f64>, grads: &[Vec<Tensor<f64>>]) -> Vec<Vec<f64>> {
    for g in grads {
        opt.step(&ParamGrads::from_tensors(g.clone())).unwrap();
    }
    opt.params().iter().map(|p| p.value().to_vec()).collect()
}

#[test]
fn sgd_with_momentum_nesterov_and_decay_matches_the_reference() {
    for (mu, nesterov, wd) in [
        (0.0, false, 0.0),
        (0.9, false, 0.01),
        (0.9, true, 0.1),
        (0.5, false, 0.0),
    ] {
        let (store, grads) = setup(1);
        let init: Vec<Vec<f64>> = store
            .trainable()
            .iter()
            .map(|p| p.value().to_vec())
            .collect();
        let mut opt = Sgd::new(
            store.trainable(),
            SgdConfig::new(0.1)
                .momentum(mu)
                .nesterov(nesterov)
                .weight_decay(wd),
        )
        .unwrap();
        let got = run(&mut opt, &grads);
        for (k, x0) in init.iter().enumerate() {
            let mut x = x0.clone();
            let mut buf: Option<Vec<f64>> = None;
            for g in &grads {
                let g = g[k].to_vec();
                let d: Vec<f64> = g.iter().zip(&x).map(|(g, x)| g + wd * x).collect();
                let step: Vec<f64> = if mu == 0.0 {
                    d.clone()
                } else {
                    let b: Vec<f64> = match &buf {
                        None => d.clone(),
                        Some(b) => b.iter().zip(&d).map(|(b, d)| mu * b + d).collect(),
                    };
                    buf = Some(b.clone());
                    if nesterov {
                        d.iter().zip(&b).map(|(d, b)| d + mu * b).collect()
                    } else {
                        b
                    }
                };
                x = x.iter().zip(&step).map(|(x, s)| x - 0.1 * s).collect();
            }
            for (a, b) in got[k].iter().zip(&x) {
                assert!(
                    (a - b).abs() < 1e-15,
                    "mu {mu} nesterov {nesterov}: {a} vs {b}"
                );
            }
        }
    }
}

#[test]
fn adam_and_adamw_match_the_reference() {
    for decoupled in [false, true] {
        let (store, grads) = setup(2);
        let init: Vec<Vec<f64>> = store
            .trainable()
            .iter()
            .map(|p| p.value().to_vec())
            .collect();
        let cfg = AdamConfig {
            decoupled,
            weight_decay: 0.05,
            ..AdamConfig::adam(0.01)
        };
        let mut opt = Adam::new(store.trainable(), cfg).unwrap();
        let got = run(&mut opt, &grads);
        for (k, x0) in init.iter().enumerate() {
            let mut x = x0.clone();
            let (mut m, mut v) = (vec![0.0; x.len()], vec![0.0; x.len()]);
            for (t, g) in grads.iter().enumerate() {
                let t = (t + 1) as i32;
                for (i, g) in g[k].to_vec().iter().enumerate() {
                    let g = if decoupled {
                        x[i] -= 0.01 * 0.05 * x[i];
                        *g
                    } else {
                        g + 0.05 * x[i]
                    };
                    m[i] = 0.9 * m[i] + 0.1 * g;
                    v[i] = 0.999 * v[i] + 0.001 * g * g;
                    let mh = m[i] / (1.0 - 0.9f64.powi(t));
                    let vh = v[i] / (1.0 - 0.999f64.powi(t));
                    x[i] -= 0.01 * mh / (vh.sqrt() + 1e-8);
                }
            }
            for (a, b) in got[k].iter().zip(&x) {
                assert!((a - b).abs() < 1e-15, "decoupled {decoupled}: {a} vs {b}");
            }
        }
        assert_eq!(opt.steps(), 5);
    }
}

#[test]
fn bad_hyper_parameters_and_gradients_are_rejected_without_side_effects() {
    let (store, grads) = setup(3);
    let p = store.trainable();
    assert!(Sgd::new(p.clone(), SgdConfig::new(f64::NAN)).is_err());
    assert!(Sgd::new(p.clone(), SgdConfig::new(0.1).momentum(1.0)).is_err());
    assert!(Sgd::new(p.clone(), SgdConfig::new(0.1).nesterov(true)).is_err());
    assert!(Adam::new(p.clone(), AdamConfig::adam(0.1).betas(0.9, 1.0)).is_err());
    assert!(Adam::new(
        p.clone(),
        AdamConfig {
            eps: 0.0,
            ..AdamConfig::adam(0.1)
        }
    )
    .is_err());
    let mut opt = Adam::new(p.clone(), AdamConfig::adam(0.1)).unwrap();
    let before: Vec<Vec<f64>> = p.iter().map(|p| p.value().to_vec()).collect();
    let e = opt
        .step(&ParamGrads::from_tensors(vec![grads[0][0].clone()]))
        .unwrap_err();
    assert!(
        e.to_string().contains("1 gradients for 2 parameters"),
        "{e}"
    );
    let mut nan = grads[0].clone();
    nan[1] = Tensor::from_vec(vec![1.0, f64::NAN], &[2]).unwrap();
    let e = opt.step(&ParamGrads::from_tensors(nan)).unwrap_err();
    assert!(e.to_string().contains("the gradient of b has a NaN"), "{e}");
    let e = opt
        .step(&ParamGrads::from_tensors(vec![
            grads[0][1].clone(),
            grads[0][0].clone(),
        ]))
        .unwrap_err();
    assert!(e.to_string().contains("gradient of w has shape [2]"), "{e}");
    let after: Vec<Vec<f64>> = p.iter().map(|p| p.value().to_vec()).collect();
    assert_eq!(before, after);
    assert_eq!(opt.steps(), 0);
    assert!(opt.set_lr(-1.0).is_err());
}

#[test]
fn clipping_bounds_the_global_norm() {
    let mut g = ParamGrads::from_tensors(vec![
        Tensor::from_vec(vec![3.0, 0.0], &[2]).unwrap(),
        Tensor::from_vec(vec![4.0], &[1]).unwrap(),
    ]);
    assert_eq!(g.clip_global_norm(1.0).unwrap(), 5.0);
    assert!((g.global_norm() - 1.0).abs() < 1e-9);
    assert!(g.clip_global_norm(0.0).is_err());
}

#[test]
fn schedules_take_their_documented_values() {
    let c = Schedule::Cosine {
        total: 100,
        min_factor: 0.1,
    };
    assert_eq!(c.factor(0), 1.0);
    assert!((c.factor(50) - 0.55).abs() < 1e-12);
    assert!((c.factor(100) - 0.1).abs() < 1e-12);
    assert!((c.factor(500) - 0.1).abs() < 1e-12);
    let s = Schedule::Step {
        every: 10,
        gamma: 0.5,
    };
    assert_eq!((s.factor(9), s.factor(10), s.factor(25)), (1.0, 0.5, 0.25));
    let w = Schedule::WarmupCosine {
        warmup: 10,
        total: 110,
        min_factor: 0.0,
    };
    assert!(
        (w.factor(4) - 0.5).abs() < 1e-12 && w.factor(10) == 1.0 && w.factor(110).abs() < 1e-12
    );
    let i = Schedule::InverseSqrt { warmup: 4 };
    assert_eq!((i.factor(1), i.factor(3), i.factor(15)), (0.5, 1.0, 0.5));
    assert!(Schedule::Step {
        every: 0,
        gamma: 0.5
    }
    .validate()
    .is_err());
    assert!(Schedule::WarmupCosine {
        warmup: 5,
        total: 5,
        min_factor: 0.0
    }
    .validate()
    .is_err());
}

/// An f32 gradient of 3·10³⁸ is finite, but its square overflows v: the step is
/// an error naming the parameter and element, and neither the parameters nor the
/// moments change (the next finite step is the one a fresh optimiser takes). A
/// gradient of 10¹⁸, large but safe, steps normally.
#[test]
fn adam_refuses_a_gradient_whose_moment_would_overflow() {
    let store = ParamStore::<f32>::new();
    let w = store
        .root()
        .param("w", Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap())
        .unwrap();
    let p = store.trainable();
    let grad = |a: f32, b: f32| {
        ParamGrads::from_tensors(vec![Tensor::from_vec(vec![a, b], &[2]).unwrap()])
    };
    let mut opt = Adam::new(p.clone(), AdamConfig::adam(0.1)).unwrap();
    opt.step(&grad(0.5, -0.5)).unwrap();
    let (value, state) = (w.value().to_vec(), opt.state());
    let e = opt.step(&grad(1.0, 3e38)).unwrap_err().to_string();
    assert!(
        e.contains("parameter 'w' element 1") && e.contains("nothing was changed"),
        "{e}"
    );
    assert_eq!(w.value().to_vec(), value);
    assert_eq!(opt.steps(), 1);
    let moments = |s: &optim::OptimizerState<f32>| {
        s.tensors
            .iter()
            .map(|(n, t)| (n.clone(), t.to_vec()))
            .collect::<Vec<_>>()
    };
    assert_eq!(moments(&opt.state()), moments(&state));
    opt.step(&grad(1e18, -1e18)).unwrap();
    assert!(w.value().to_vec().iter().all(|v| v.is_finite()));
    assert!(moments(&opt.state())
        .iter()
        .all(|(_, t)| t.iter().all(|v| v.is_finite())));
}

/// The bound that lets a step skip the element-by-element check is taken over
/// fixed chunks of each parameter, in parallel on a large model: an overflowing
/// gradient in the last chunk of a large parameter (beside a small one) is still
/// found, named and refused with nothing changed, under coupled weight decay too.
#[test]
fn adam_finds_an_overflowing_gradient_in_any_chunk_of_a_large_parameter() {
    let n = 300_001;
    for weight_decay in [0.0, 0.01] {
        let store = ParamStore::<f32>::new();
        let big = store
            .root()
            .param("big", Tensor::<f32>::ones(&[n]).unwrap())
            .unwrap();
        store
            .root()
            .param("small", Tensor::from_vec(vec![1.0f32], &[1]).unwrap())
            .unwrap();
        let cfg = AdamConfig {
            weight_decay,
            decoupled: false,
            ..AdamConfig::adam(0.1)
        };
        let mut opt = Adam::new(store.trainable(), cfg).unwrap();
        let grads = |last: f32| {
            let mut g = vec![0.5f32; n];
            g[n - 1] = last;
            ParamGrads::from_tensors(vec![
                Tensor::from_vec(g, &[n]).unwrap(),
                Tensor::from_vec(vec![0.5f32], &[1]).unwrap(),
            ])
        };
        opt.step(&grads(0.5)).unwrap();
        let value = big.value().to_vec();
        let e = opt.step(&grads(3e38)).unwrap_err().to_string();
        assert!(
            e.contains(&format!("parameter 'big' element {}", n - 1))
                && e.contains("nothing was changed"),
            "{e}"
        );
        assert_eq!(big.value().to_vec(), value);
        assert_eq!(opt.steps(), 1);
    }
}

/// The gradient Adam's kernel moments see under coupled decay: g + wd·x, rounded
/// as the kernel rounds it.
fn coupled_gradient(x: &[f32], g: &[f32], wd: f32) -> Vec<f32> {
    x.iter().zip(g).map(|(&x, &g)| g + wd * x).collect()
}

/// The element-wise Adam update in f32, in the kernel's order (no fused
/// multiply-add), on the coupled gradient `g`: whether any of the new m, v or
/// parameter would be non-finite.
fn adam_would_overflow(x: &[f32], g: &[f32], m: &[f32], v: &[f32], t: u64) -> bool {
    let (b1, b2, lr, eps) = (0.9f32, 0.999f32, 0.1f32, 1e-8f32);
    let (c1, c2) = (
        (1.0 - 0.9f64.powf(t as f64)) as f32,
        (1.0 - 0.999f64.powf(t as f64)) as f32,
    );
    (0..x.len()).any(|i| {
        let m = b1 * m[i] + (1.0 - b1) * g[i];
        let v = b2 * v[i] + (1.0 - b2) * g[i] * g[i];
        let x = x[i] - lr * (m / c1) / ((v / c2).sqrt() + eps);
        !(m.is_finite() && v.is_finite() && x.is_finite())
    })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..proptest::prelude::ProptestConfig::default() })]

    /// Adam refuses a step exactly when the update would make a moment or the
    /// parameter non-finite, whatever came before: over runs of gradients up to
    /// and past the largest safe magnitude (which drive v towards overflow over a
    /// few steps, where the bound Adam carries on max |v| must hand over to reading
    /// v), a reload of the state midway (after which the bound is unknown), and
    /// coupled weight decay on parameters large enough that wd·x alone nears the
    /// limit.
    #[test]
    fn adam_refuses_exactly_the_steps_that_would_overflow(
        magnitudes in proptest::collection::vec(
            proptest::sample::select(vec![0.5f32, 1e10, 1e19, 2.5e20, 2.8e20, 3e20, 1e25]),
            1..12,
        ),
        reload_at in 0usize..12,
        decay in proptest::sample::select(vec![0.0f32, 0.01]),
        scale in proptest::sample::select(vec![1.0f32, 2e22]),
    ) {
        let store = ParamStore::<f32>::new();
        // Two axes, so that weight decay applies to it.
        let w = store
            .root()
            .param("w", Tensor::from_vec(vec![scale, -2.0 * scale, 0.5], &[1, 3]).unwrap())
            .unwrap();
        let cfg = AdamConfig {
            weight_decay: f64::from(decay),
            decoupled: false,
            ..AdamConfig::adam(0.1)
        };
        let mut opt = Adam::new(store.trainable(), cfg.clone()).unwrap();
        let (mut m, mut v) = (vec![0.0f32; 3], vec![0.0f32; 3]);
        for (k, &a) in magnitudes.iter().enumerate() {
            if k == reload_at {
                let state = opt.state();
                opt = Adam::new(store.trainable(), cfg.clone()).unwrap();
                opt.load_state(&state).unwrap();
            }
            let g = vec![a, -0.5 * a, 1.0];
            let x = w.value().to_vec();
            let ge = coupled_gradient(&x, &g, decay);
            let refused = adam_would_overflow(&x, &ge, &m, &v, opt.steps() + 1);
            let outcome = opt.step(&ParamGrads::from_tensors(vec![
                Tensor::from_vec(g.clone(), &[1, 3]).unwrap(),
            ]));
            proptest::prop_assert_eq!(outcome.is_err(), refused, "step {} of {:?}", k, magnitudes);
            if refused {
                proptest::prop_assert_eq!(w.value().to_vec(), x);
                continue;
            }
            for i in 0..3 {
                m[i] = 0.9 * m[i] + (1.0 - 0.9f32) * ge[i];
                v[i] = 0.999 * v[i] + (1.0 - 0.999f32) * ge[i] * ge[i];
            }
            let state = opt.state();
            let held = |name: &str| {
                state.tensors.iter().find(|(n, _)| n.starts_with(&format!("{name}."))).unwrap().1.to_vec()
            };
            proptest::prop_assert_eq!(held("v"), v.clone());
            proptest::prop_assert_eq!(held("m"), m.clone());
        }
    }
}
