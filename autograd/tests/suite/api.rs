//! The tape's contract: what is recorded, what is refused, and that gradcheck can
//! fail.

use autograd::{backward, grad, gradcheck, gradgradcheck, no_grad, record, GradcheckOptions, Var};
use tensor::Tensor;

fn leaf(v: &[f64]) -> Var<f64> {
    Var::leaf(Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap())
}

#[test]
fn constants_record_nothing_and_no_grad_turns_recording_off() {
    let c = Var::constant(Tensor::from_vec(vec![1.0, 2.0], &[2]).unwrap());
    assert!(!c.exp().unwrap().requires_grad());
    let x = leaf(&[1.0, 2.0]);
    assert!(x.exp().unwrap().requires_grad());
    assert!(!no_grad(|| x.exp().unwrap()).requires_grad());
    assert!(!x.detach().requires_grad());
    assert!(x.is_leaf() && !x.exp().unwrap().is_leaf());
}

#[test]
fn bad_calls_give_clear_errors() {
    let x = leaf(&[1.0, 2.0]);
    let e = backward(&x.exp().unwrap()).unwrap_err();
    assert!(e.to_string().contains("one-element loss"), "{e}");
    let c = Var::constant(Tensor::scalar(1.0));
    assert!(backward(&c)
        .unwrap_err()
        .to_string()
        .contains("does not require a gradient"));
    let y = x.exp().unwrap();
    let bad = Var::constant(Tensor::ones(&[3]).unwrap());
    let e = grad(&[&y], &[&x], Some(&[&bad]), false).unwrap_err();
    assert!(e.to_string().contains("cotangent 0 has shape [3]"), "{e}");
    let e = x.matmul(&x).unwrap_err();
    assert!(e.to_string().starts_with("matmul:"), "{e}");
}

#[test]
fn unreachable_inputs_get_zeros() {
    let x = leaf(&[1.0, 2.0]);
    let z = leaf(&[5.0]);
    let g = grad(&[&x.sum_all().unwrap()], &[&x, &z], None, false).unwrap();
    assert_eq!(g[0].value().to_vec(), vec![1.0, 1.0]);
    assert_eq!(g[1].value().to_vec(), vec![0.0]);
}

#[test]
fn gradcheck_refuses_broadcast_views() {
    let x = Tensor::<f64>::ones(&[3])
        .unwrap()
        .broadcast_to(&[2, 3])
        .unwrap();
    let e = gradcheck(|v| v[0].exp(), &[x], &GradcheckOptions::default()).unwrap_err();
    assert!(e.to_string().contains("broadcast view"), "{e}");
}

/// exp with a wrong rule (2·g·y): the negative control that shows gradcheck fails.
fn exp_wrong(x: &Var<f64>) -> tensor::Result<Var<f64>> {
    record("exp_wrong", &[x], x.value().exp(), |c| {
        Ok(vec![Some(c.grad.mul(c.output)?.mul_scalar(2.0)?)])
    })
}

/// exp whose rule treats the output as a constant: right first derivative, wrong
/// second derivative.
fn exp_detached(x: &Var<f64>) -> tensor::Result<Var<f64>> {
    record("exp_detached", &[x], x.value().exp(), |c| {
        Ok(vec![Some(c.grad.mul(&c.output.detach())?)])
    })
}

#[test]
fn gradcheck_and_gradgradcheck_catch_wrong_rules() {
    let x = Tensor::from_vec(vec![0.1, -0.4, 0.9], &[3]).unwrap();
    let o = GradcheckOptions::default();
    let e = gradcheck(|v| exp_wrong(&v[0]), std::slice::from_ref(&x), &o).unwrap_err();
    assert!(e.to_string().contains("analytic"), "{e}");
    assert!(gradcheck(|v| exp_detached(&v[0]), std::slice::from_ref(&x), &o).is_ok());
    assert!(gradgradcheck(|v| exp_detached(&v[0]), std::slice::from_ref(&x), &o).is_err());
    assert!(gradgradcheck(|v| v[0].exp(), &[x], &o).is_ok());
}

/// Above 4,096 Jacobian entries gradcheck compares random directions instead of the
/// full Jacobian: that branch fails on a wrong rule too, and on a rule wrong in a
/// single entry.
#[test]
fn the_random_direction_branch_catches_wrong_rules() {
    let x = Tensor::<f64>::rand_normal(&[70, 70], 0.0, 0.5, &mut tensor::Rng::new(2)).unwrap();
    let o = GradcheckOptions::default();
    assert!(x.numel() * x.numel() > o.full_jacobian_limit);
    assert!(gradcheck(|v| v[0].exp(), std::slice::from_ref(&x), &o).is_ok());
    let e = gradcheck(|v| exp_wrong(&v[0]), std::slice::from_ref(&x), &o).unwrap_err();
    assert!(e.to_string().contains("analytic"), "{e}");
    // Right everywhere except entry 1234, whose gradient is dropped.
    let one_off = |v: &[Var<f64>]| {
        record("exp_one_off", &[&v[0]], v[0].value().exp(), |c| {
            let mut mask = vec![1.0; c.output.value().numel()];
            mask[1234] = 0.0;
            let mask = Var::constant(Tensor::from_vec(mask, c.output.shape())?);
            Ok(vec![Some(c.grad.mul(c.output)?.mul(&mask)?)])
        })
    };
    assert!(gradcheck(one_off, std::slice::from_ref(&x), &o).is_err());
}

/// `Var::div_scalar` divides, as `Tensor::div_scalar` does (it multiplied by 1/s,
/// a last-bit difference between the two paths for most s).
#[test]
fn var_and_tensor_div_scalar_agree_bit_for_bit() {
    let x: Vec<f64> = (1..200).map(|i| i as f64 * 0.37).collect();
    let t = Tensor::from_vec(x.clone(), &[x.len()]).unwrap();
    for s in [3.0, 7.0, 0.1, 1e-3] {
        let a = Var::constant(t.clone())
            .div_scalar(s)
            .unwrap()
            .value()
            .to_vec();
        let b = t.div_scalar(s).to_vec();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a), bits(&b), "s = {s}");
        assert!(x.iter().zip(&a).all(|(x, y)| *y == x / s));
    }
}

/// log_sigmoid is stable at both ends, where ln(sigmoid(x)) gives −∞ or loses x.
#[test]
fn log_sigmoid_is_stable_at_the_extremes() {
    let x =
        Tensor::<f64>::from_vec(vec![-800.0, -40.0, -1.5, 0.0, 2.0, 40.0, 800.0], &[7]).unwrap();
    let got = Var::constant(x.clone())
        .log_sigmoid()
        .unwrap()
        .value()
        .to_vec();
    // ln σ(x) = x − ln(1 + eˣ) for x < 0, −ln(1 + e^{−x}) otherwise (both exact forms).
    for (&v, &g) in x.to_vec().iter().zip(&got) {
        let want = if v < 0.0 {
            v - v.exp().ln_1p()
        } else {
            -(-v).exp().ln_1p()
        };
        assert!(
            (g - want).abs() <= 1e-15 * want.abs().max(1e-300),
            "{v}: {g} vs {want}"
        );
    }
    assert_eq!(got[0], -800.0);
    assert!((1.0 / (1.0 + 800f64.exp())).ln().is_infinite());
}

/// The operators on `&Var` are the named ops, bit for bit, gradients included, and
/// a shape mismatch is an error.
#[test]
fn operators_on_vars_are_the_named_ops() {
    let a = leaf(&[0.3, -1.2, 2.5]);
    let b = leaf(&[1.7, 0.4, -0.9]);
    let bits = |v: tensor::Result<Var<f64>>| -> Vec<u64> {
        v.unwrap()
            .value()
            .to_vec()
            .iter()
            .map(|x| x.to_bits())
            .collect()
    };
    assert_eq!(bits(&a + &b), bits(a.add(&b)));
    assert_eq!(bits(&a - &b), bits(a.sub(&b)));
    assert_eq!(bits(&a * &b), bits(a.mul(&b)));
    assert_eq!(bits(&a / &b), bits(a.div(&b)));
    assert_eq!(bits(&a * 3.0), bits(a.mul_scalar(3.0)));
    assert_eq!(bits(2.0 * &a), bits(a.mul_scalar(2.0)));
    assert_eq!(bits(&a / 7.0), bits(a.div_scalar(7.0)));
    assert_eq!(bits(&a + 1.5), bits(a.add_scalar(1.5)));
    assert_eq!(bits(1.5 + &a), bits(a.add_scalar(1.5)));
    assert_eq!(bits(&a - 1.5), bits(a.sub_scalar(1.5)));
    assert_eq!(bits(1.5 - &a), bits(a.neg().unwrap().add_scalar(1.5)));
    assert_eq!(bits(-&a), bits(a.neg()));
    // d/da Σ (a·b + 1 − a) = b − 1.
    let y = (&(&(&a * &b).unwrap() + 1.0).unwrap() - &a).unwrap();
    let g = grad(&[&y.sum_all().unwrap()], &[&a], None, false).unwrap();
    let want: Vec<f64> = b.value().to_vec().iter().map(|v| v - 1.0).collect();
    assert_eq!(g[0].value().to_vec(), want);
    let c = leaf(&[1.0, 2.0]);
    assert!((&a + &c).unwrap_err().to_string().contains("add"));
}
