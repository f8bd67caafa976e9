//! The ICNN with CP-Flow's ActNorm: convexity kept for any scale, the data-dependent
//! start, gradients through the norms' parameters, and the refusals.

use crate::common::opts;
use autograd::Var;
use nn::check::gradcheck_params;
use nn::{ActNorm, Activation, Icnn, IcnnConfig, ParamStore};
use proptest::prelude::*;
use tensor::{Rng, Tensor};

fn config(layers: usize, act_norm: bool) -> IcnnConfig {
    IcnnConfig {
        input: 2,
        width: 6,
        layers,
        activation: Activation::Softplus,
        strong_convexity: 0.0,
        act_norm,
    }
}

/// A network with ActNorm, its initial non-negative weights, and every norm's
/// parameters drawn from N(0, spread²) (log-scales far below and above 0).
fn network(seed: u64, spread: f64) -> (ParamStore<f64>, Icnn<f64>, Vec<Var<f64>>) {
    let (store, mut rng) = (ParamStore::new(), Rng::new(seed));
    let icnn = Icnn::new(&store.root().sub("icnn"), config(3, true), &mut rng).unwrap();
    for norm in &icnn.act_norms {
        for p in [&norm.shift, &norm.log_scale] {
            p.set(Tensor::rand_normal(&p.shape(), 0.0, spread, &mut rng).unwrap())
                .unwrap();
        }
    }
    let w = icnn
        .init_constrained(&mut rng)
        .unwrap()
        .into_iter()
        .map(Var::constant)
        .collect();
    (store, icnn, w)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// F along any segment has no negative second difference, whatever the norms'
    /// shifts and log-scales: the scale exp(s) + 10⁻³ is positive, so each layer stays
    /// non-decreasing (a scale taken as s itself would break this at negative s).
    #[test]
    fn act_norm_keeps_the_network_convex(seed in 0u64..1000, a in prop::array::uniform2(-3.0f64..3.0), b in prop::array::uniform2(-3.0f64..3.0)) {
        let (_store, icnn, w) = network(seed, 2.0);
        let pts: Vec<f64> = (0..=20)
            .flat_map(|i| (0..2).map(move |j| a[j] + (b[j] - a[j]) * i as f64 / 20.0))
            .collect();
        let x = Var::constant(Tensor::from_vec(pts, &[21, 2]).unwrap());
        let f = icnn.forward_with(&x, &w).unwrap().value().to_vec();
        let scale = f.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        for s in f.windows(3) {
            prop_assert!(s[0] - 2.0 * s[1] + s[2] >= -1e-10 * scale, "{:?}", s);
        }
    }
}

/// Priming on a batch leaves F on that batch with mean 0 and standard deviation 1
/// (up to the 10⁻³ scale floor), and every hidden norm's units with mean 0 there.
#[test]
fn priming_standardises_the_batch_layer_by_layer() {
    let (_store, icnn, w) = network(3, 1.0);
    let x = Tensor::rand_normal(&[64, 2], 0.5, 3.0, &mut Rng::new(4)).unwrap();
    icnn.prime_act_norm(&x, &w).unwrap();
    let f = icnn.forward_with(&Var::constant(x.clone()), &w).unwrap();
    let f = f.value().clone();
    assert!(f.mean_all().unwrap().item().unwrap().abs() < 1e-12);
    let sd = f.var(&[0], 0, false).unwrap().sqrt().item().unwrap();
    assert!((sd - 1.0).abs() < 0.01, "output standard deviation {sd}");
    // The first norm sees A₀x + b₀, which no other norm changes: its shift is the
    // negated unit means of that pre-activation.
    let pre = x
        .matmul(&icnn.first_weight.value().t().unwrap())
        .unwrap()
        .add(&icnn.first_bias.value())
        .unwrap();
    let mean = pre.mean(&[0], false).unwrap().to_vec();
    let shift = icnn.act_norms[0].shift.value().to_vec();
    for (m, s) in mean.iter().zip(&shift) {
        assert!((m + s).abs() < 1e-12, "mean {m}, shift {s}");
    }
    // Priming again on the same batch changes nothing (each norm's input depends
    // only on the norms before it, which are already primed on it).
    let before: Vec<Vec<f64>> = icnn
        .act_norms
        .iter()
        .map(|n| n.log_scale.value().to_vec())
        .collect();
    icnn.prime_act_norm(&x, &w).unwrap();
    for (n, b) in icnn.act_norms.iter().zip(&before) {
        let now = n.log_scale.value().to_vec();
        assert!(now.iter().zip(b).all(|(p, q)| (p - q).abs() < 1e-12));
    }
}

/// Gradients reach the norms' shifts and log-scales (and the rest) exactly, through
/// the loss a flow trains on: the gradient map's squared norm, a second derivative.
#[test]
fn gradients_through_the_norms_pass_gradcheck() {
    let (store, icnn, w) = network(5, 0.5);
    let x = Var::leaf(Tensor::rand_normal(&[5, 2], 0.0, 1.0, &mut Rng::new(6)).unwrap());
    let loss = || {
        let f = icnn.forward_with(&x, &w)?;
        let g = autograd::grad(&[&f.sum_all()?], &[&x], None, true)?.remove(0);
        g.square()?.mean_all()?.add(&f.mean_all()?)
    };
    let names: Vec<String> = store
        .trainable()
        .iter()
        .map(|p| p.name().to_string())
        .collect();
    assert!(
        names.iter().any(|n| n.contains("act_norm2.log_scale")),
        "{names:?}"
    );
    let report = gradcheck_params(&store, loss, &opts(4, 7));
    assert!(report.is_ok_and(|r| r.checks > 0));
}

#[test]
fn act_norm_refuses_what_it_cannot_use() {
    let store = ParamStore::<f64>::new();
    assert!(ActNorm::new(&store.root().sub("none"), 0).is_err());
    let norm = ActNorm::new(&store.root().sub("norm"), 3).unwrap();
    let wrong = Tensor::<f64>::zeros(&[4, 2]).unwrap();
    assert!(norm.prime(&wrong).is_err());
    assert!(norm.forward(&Var::constant(wrong)).is_err());
    assert!(norm.prime(&Tensor::zeros(&[0, 3]).unwrap()).is_err());
    // A transposed (non-contiguous) input gives the bits of its contiguous copy.
    let x = Tensor::<f64>::rand_normal(&[3, 5], 1.0, 2.0, &mut Rng::new(8)).unwrap();
    let strided = x.t().unwrap();
    norm.prime(&strided).unwrap();
    let contiguous = Tensor::from_vec(strided.to_vec(), &[5, 3]).unwrap();
    let (a, b) = (
        norm.forward(&Var::constant(strided))
            .unwrap()
            .value()
            .to_vec(),
        norm.forward(&Var::constant(contiguous.clone()))
            .unwrap()
            .value()
            .to_vec(),
    );
    assert!(a.iter().zip(&b).all(|(p, q)| p.to_bits() == q.to_bits()));
    let primed: Vec<f64> = norm.shift.value().to_vec();
    norm.prime(&contiguous).unwrap();
    assert_eq!(primed, norm.shift.value().to_vec());
    norm.shift.set(Tensor::zeros(&[3]).unwrap()).unwrap();
    // A non-finite batch is an error and leaves the layer as it was.
    let bad = Tensor::from_vec(vec![1.0, f64::NAN, 2.0, 0.0, 1.0, 3.0], &[2, 3]).unwrap();
    let err = norm.prime(&bad).unwrap_err().to_string();
    assert!(err.contains("non-finite"), "{err}");
    assert!(norm.shift.value().to_vec().iter().all(|v| *v == 0.0));
    // Priming a network built without ActNorm is refused, not ignored.
    let mut rng = Rng::new(1);
    let plain = Icnn::new(&store.root().sub("plain"), config(2, false), &mut rng).unwrap();
    assert!(plain.act_norms.is_empty());
    let w: Vec<Var<f64>> = plain
        .init_constrained(&mut rng)
        .unwrap()
        .into_iter()
        .map(Var::constant)
        .collect();
    let err = plain
        .prime_act_norm(&Tensor::zeros(&[4, 2]).unwrap(), &w)
        .unwrap_err()
        .to_string();
    assert!(err.contains("without act_norm"), "{err}");
}
