//! Anomaly mode names the first op producing a NaN or infinity, and its call site.

use autograd::{backward, detect_anomaly, Var};
use tensor::{Error, Tensor};

#[test]
fn ln_of_zero_is_caught_in_the_forward_pass() {
    let x = Var::leaf(Tensor::from_vec(vec![1.0, 0.0], &[2]).unwrap());
    let line = line!() + 1;
    let err = detect_anomaly(|| x.ln()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::NonFinite { op: "ln", .. }), "{msg}");
    assert!(msg.contains("[[2]]"), "{msg}");
    assert!(msg.contains(&format!("anomaly.rs:{line}")), "{msg}");
    // Outside anomaly mode the same op quietly gives −∞.
    assert!(x.ln().is_ok());
}

#[test]
fn zero_over_zero_is_caught() {
    let a = Var::leaf(Tensor::from_vec(vec![0.0, 1.0], &[2]).unwrap());
    let b = Var::constant(Tensor::from_vec(vec![0.0, 2.0], &[2]).unwrap());
    let err = detect_anomaly(|| a.div(&b)).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("div: produced a NaN or infinity"),
        "{err}"
    );
}

#[test]
fn a_non_finite_gradient_is_caught_in_the_backward_pass() {
    // sqrt(x) at 0 is finite, its derivative 1/(2√x) is not.
    let x = Var::leaf(Tensor::from_vec(vec![0.0, 4.0], &[2]).unwrap());
    let line = line!() + 1;
    let y = x.sqrt().unwrap().sum_all().unwrap();
    let err = detect_anomaly(|| backward(&y)).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("the rule of sqrt"), "{msg}");
    assert!(msg.contains(&format!("anomaly.rs:{line}")), "{msg}");
}
