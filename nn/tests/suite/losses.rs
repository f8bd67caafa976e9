//! Losses: values by hand, gradients by finite differences, bad input.

use autograd::{gradcheck, GradcheckOptions, Var};
use nn::loss;
use tensor::{Rng, Tensor};

fn logits(seed: u64) -> Tensor<f64> {
    Tensor::rand_normal(&[4, 3], 0.0, 2.0, &mut Rng::new(seed)).unwrap()
}

#[test]
fn cross_entropy_matches_its_definition() {
    let z = logits(1);
    let labels = [2, 0, 1, 1];
    let got = loss::cross_entropy(&Var::constant(z.clone()), &labels, 0.0)
        .unwrap()
        .item()
        .unwrap();
    let zv = z.to_vec();
    let mut want = 0.0;
    for (i, &l) in labels.iter().enumerate() {
        let row = &zv[3 * i..3 * i + 3];
        let lse = row.iter().map(|v| v.exp()).sum::<f64>().ln();
        want += lse - row[l];
    }
    want /= 4.0;
    assert!((got - want).abs() < 1e-14, "{got} vs {want}");
    // Label smoothing ε: (1 − ε)·CE + ε·mean over classes of −log p.
    let eps = 0.1;
    let smooth = loss::cross_entropy(&Var::constant(z.clone()), &labels, eps)
        .unwrap()
        .item()
        .unwrap();
    let mut uni = 0.0;
    for i in 0..4 {
        let row = &zv[3 * i..3 * i + 3];
        let lse = row.iter().map(|v| v.exp()).sum::<f64>().ln();
        uni += row.iter().map(|v| lse - v).sum::<f64>() / 3.0;
    }
    let want_s = (1.0 - eps) * want + eps * uni / 4.0;
    assert!((smooth - want_s).abs() < 1e-14);
    // Stable for huge logits.
    let big = Tensor::from_vec(vec![1000.0, -1000.0, 0.0], &[1, 3]).unwrap();
    assert_eq!(
        loss::cross_entropy(&Var::constant(big), &[0], 0.0)
            .unwrap()
            .item()
            .unwrap(),
        0.0
    );
}

#[test]
fn losses_pass_gradcheck() {
    let labels = [2, 0, 1, 1];
    let o = GradcheckOptions::default();
    let target = logits(9);
    type LossFn = Box<dyn Fn(&[Var<f64>]) -> tensor::Result<Var<f64>>>;
    let cases: Vec<(&str, LossFn)> = vec![
        (
            "cross_entropy",
            Box::new(move |v: &[Var<f64>]| loss::cross_entropy(&v[0], &labels, 0.0)),
        ),
        (
            "cross_entropy_smooth",
            Box::new(move |v: &[Var<f64>]| loss::cross_entropy(&v[0], &labels, 0.2)),
        ),
        (
            "nll",
            Box::new(move |v: &[Var<f64>]| loss::nll(&v[0].log_softmax(-1)?, &labels)),
        ),
        (
            "squared_one_hot",
            Box::new(move |v: &[Var<f64>]| loss::squared_one_hot(&v[0], &labels)),
        ),
        (
            "mse",
            Box::new(move |v: &[Var<f64>]| loss::mse(&v[0], &Var::constant(target.clone()))),
        ),
    ];
    for (name, f) in cases {
        // A transposed (non-contiguous) input of shape [4, 3].
        let x = Tensor::rand_normal(&[3, 4], 0.0, 2.0, &mut Rng::new(2))
            .unwrap()
            .t()
            .unwrap();
        let r = gradcheck(&f, &[x], &o);
        assert!(r.is_ok(), "{name}: {r:?}");
        assert!(
            autograd::gradgradcheck(&f, &[logits(3)], &o).is_ok(),
            "{name} second order"
        );
    }
}

#[test]
fn squared_one_hot_is_the_row_sum_of_squares() {
    let z = Tensor::from_vec(vec![0.5, 0.2, 1.0, -1.0], &[2, 2]).unwrap();
    let l: f64 = loss::squared_one_hot(&Var::constant(z), &[0, 1])
        .unwrap()
        .item()
        .unwrap();
    // Row 0: (0.5−1)² + 0.2² = 0.29; row 1: 1² + (−1−1)² = 5.
    assert!((l - (0.29 + 5.0) / 2.0).abs() < 1e-15);
}

#[test]
fn bad_labels_and_batches_are_named() {
    let z = Var::constant(logits(4));
    assert!(loss::cross_entropy(&z, &[0, 1], 0.0)
        .unwrap_err()
        .to_string()
        .contains("2 labels for a batch of 4"));
    let e = loss::cross_entropy(&z, &[0, 1, 3, 0], 0.0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cross_entropy: index 3 is out of range for axis 1 of length 3"
    );
    assert!(loss::cross_entropy(&z, &[0, 1, 2, 0], 1.0).is_err());
    assert!(loss::cross_entropy(&z, &[0, 1, 2, 0], f64::NAN).is_err());
    let empty = Var::constant(Tensor::<f64>::zeros(&[0, 3]).unwrap());
    assert!(loss::cross_entropy(&empty, &[], 0.0)
        .unwrap_err()
        .to_string()
        .contains("empty"));
    let e = loss::mse(&z, &Var::constant(Tensor::zeros(&[4]).unwrap())).unwrap_err();
    assert!(e.to_string().contains("differ"), "{e}");
    let scores = Tensor::from_vec(
        vec![0.9, 0.1, 0.0, 0.2, 0.7, 0.1, 0.3, 0.3, 0.4, 0.5, 0.1, 0.4],
        &[4, 3],
    )
    .unwrap();
    assert_eq!(loss::accuracy(&scores, &[0, 1, 0, 0]).unwrap(), 0.75);
}

#[test]
fn relative_l2_by_hand_gradients_and_errors() {
    // Two functions of three points: ‖(1, 0, 0)‖/‖(1, 2, 2)‖ = 1/3, ‖(0, 3, 4)‖/‖(0, 0, 2)‖ = 5/2.
    let target = Tensor::<f64>::from_vec(vec![1.0, 2.0, 2.0, 0.0, 0.0, 2.0], &[2, 3, 1]).unwrap();
    let pred = Tensor::<f64>::from_vec(vec![2.0, 2.0, 2.0, 0.0, 3.0, 6.0], &[2, 3, 1]).unwrap();
    let l = loss::relative_l2(&Var::constant(pred.clone()), &Var::constant(target.clone()))
        .unwrap()
        .item()
        .unwrap();
    assert!((l - (1.0 / 3.0 + 2.5) / 2.0).abs() < 1e-15, "{l}");
    let r = autograd::gradcheck(
        |v| loss::relative_l2(&v[0], &v[1]),
        &[pred, target],
        &autograd::GradcheckOptions::default(),
    );
    assert!(r.is_ok(), "{r:?}");
    let zero = Var::constant(Tensor::<f64>::zeros(&[2, 3]).unwrap());
    assert!(loss::relative_l2(&zero, &zero).is_err());
    let a = Var::constant(Tensor::<f64>::ones(&[2, 3]).unwrap());
    let b = Var::constant(Tensor::<f64>::ones(&[3, 2]).unwrap());
    assert!(loss::relative_l2(&a, &b).is_err());
}
