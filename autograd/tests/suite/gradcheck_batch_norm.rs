//! Training-mode batch normalisation as one op (`Var::batch_norm`): gradcheck and
//! gradgradcheck, and its fused backward against the same rule in `Var` ops (the
//! path taken when the backward is itself recorded).

use crate::common;

use autograd::{backward, grad, gradcheck, gradgradcheck, Var};
use common::strict;
use tensor::{Rng, Tensor};

fn rand(shape: &[usize], seed: u64) -> Tensor<f64> {
    Tensor::rand_normal(shape, 0.3, 1.5, &mut Rng::new(seed)).unwrap()
}

#[test]
fn batch_norm_passes_gradcheck_and_gradgradcheck() {
    for shape in [vec![3, 2, 2, 3], vec![5, 3], vec![2, 2, 4]] {
        let c = shape[1];
        let inputs = [rand(&shape, 1), rand(&[c], 2), rand(&[c], 3)];
        // tanh makes the second derivatives in γ and β non-trivial.
        let f = |v: &[Var<f64>]| v[0].batch_norm(&v[1], &v[2], 1e-5)?.0.tanh();
        let r = gradcheck(f, &inputs, &strict());
        assert!(r.is_ok(), "{shape:?}: {r:?}");
        let r = gradgradcheck(f, &inputs, &strict());
        assert!(r.is_ok(), "{shape:?} second order: {r:?}");
    }
    // An input stored transposed (a non-contiguous view).
    let x = rand(&[3, 2, 4, 2], 4).transpose(2, 3).unwrap();
    assert!(!x.is_contiguous());
    let f = |v: &[Var<f64>]| v[0].batch_norm(&v[1], &v[2], 1e-5)?.0.tanh();
    let inputs = [x, rand(&[2], 5), rand(&[2], 6)];
    assert!(gradcheck(f, &inputs, &strict()).is_ok());
    assert!(gradgradcheck(f, &inputs, &strict()).is_ok());
}

/// The fused kernel (a plain `backward`) and the `Var`-op rule (`grad` with
/// `create_graph`) give the same gradients to rounding.
#[test]
fn the_fused_backward_agrees_with_the_recorded_rule() {
    let x = Var::leaf(rand(&[4, 3, 5, 2], 4));
    let gamma = Var::leaf(rand(&[3], 5));
    let beta = Var::leaf(rand(&[3], 6));
    let weights = Var::constant(rand(&[4, 3, 5, 2], 7));
    let loss = |x: &Var<f64>| {
        x.batch_norm(&gamma, &beta, 1e-5)
            .unwrap()
            .0
            .mul(&weights)
            .unwrap()
            .sum_all()
            .unwrap()
    };
    let fused = backward(&loss(&x)).unwrap();
    let recorded = grad(&[&loss(&x)], &[&x, &gamma, &beta], None, true).unwrap();
    for (v, r) in [&x, &gamma, &beta].iter().zip(&recorded) {
        let (a, b) = (fused.get(v).unwrap().to_vec(), r.value().to_vec());
        let scale = b.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        for (p, q) in a.iter().zip(&b) {
            assert!((p - q).abs() <= 1e-12 * scale, "{p} vs {q}");
        }
    }
}

#[test]
fn bad_arguments_are_refused_by_name() {
    let x = Var::leaf(rand(&[2, 3, 4], 1));
    let (g3, b3) = (Var::leaf(rand(&[3], 2)), Var::leaf(rand(&[3], 3)));
    for eps in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let e = x.batch_norm(&g3, &b3, eps).err().unwrap().to_string();
        assert!(e.contains("ε must be positive"), "{e}");
    }
    let e = x
        .batch_norm(&Var::leaf(rand(&[1], 4)), &b3, 1e-5)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("weight [C]"), "{e}");
    let e = Var::leaf(rand(&[3], 5))
        .batch_norm(&g3, &b3, 1e-5)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("[N, C, ...]"), "{e}");
}
