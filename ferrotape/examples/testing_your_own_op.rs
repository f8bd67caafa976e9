//! Testing your own op, in three properties: its laws over drawn tensors, its
//! derivatives for all drawn inputs, and its values against a plain reference in
//! random programs of the engine's ops. Each failure shrinks to a minimal case.
//!
//! The op is log cosh x, a robust loss (quadratic near 0, linear far out), built
//! from existing differentiable ops as logsumexp(x, −x) − ln 2: the shift by the
//! maximum inside logsumexp keeps it finite for large |x| and gives +∞ at ±∞,
//! where the textbook ln(cosh x) overflows from |x| ≈ 710 on and x + softplus(−2x)
//! − ln 2 gives ∞ − ∞ = NaN at −∞ (the hostile law below catches both).
//!
//! - **Laws** (`tensor::strategies`): even, non-negative, 0 at 0, between |x| − ln 2
//!   and |x|; on the hostile profile, NaN stays NaN and ±∞ gives +∞.
//! - **Derivatives** (`autograd::gradcheck_property`): first and second order,
//!   for all shapes up to 3×3×3 in strided layouts; a failure comes back as the
//!   minimal input with the failing Jacobian entry.
//! - **Values** (`tensor::differential`): the op takes part in random programs run
//!   on the engine and on the naive f64 evaluator, compared after every step.
//!
//! `cargo run --example testing_your_own_op` runs the three and prints what they
//! checked; `cargo test -p ferrotape --example testing_your_own_op` runs them as
//! tests. Both need the `proptest` feature's modules, which this example turns on
//! through the facade's dev-dependencies; a crate of yours turns them on with
//! `ferrotape = { version = "0.1", features = ["proptest"] }`.

use autograd::gradcheck_property::{gradcheck_for_all, same_shape, PropertyOptions};
use autograd::{no_grad, Var};
use ferrotape::{autograd, tensor};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use tensor::differential::{program, UserOp};
use tensor::reference::Dense;
use tensor::strategies::{tensor_in, Values};
use tensor::{Result, Tensor};

/// log cosh x, element-wise, differentiable to any order.
fn log_cosh(x: &Var<f64>) -> Result<Var<f64>> {
    let both = Var::stack(&[x, &x.neg()?], -1)?;
    both.logsumexp(&[-1], false)?
        .add_scalar(-std::f64::consts::LN_2)
}

/// The op on plain tensors (its forward pass, no tape).
fn log_cosh_values(t: &Tensor<f64>) -> Result<Tensor<f64>> {
    no_grad(|| Ok(log_cosh(&Var::constant(t.clone()))?.value().clone()))
}

/// The same function written plainly on the reference evaluator: the definition
/// ln((eˣ + e⁻ˣ)/2), rearranged only to avoid overflow, |x| + ln(1 + e^−2|x|) − ln 2.
fn log_cosh_reference(d: &Dense) -> Option<Dense> {
    Some(d.map(|x| {
        let a = x.abs();
        a + (-2.0 * a).exp().ln_1p() - std::f64::consts::LN_2
    }))
}

/// The laws on finite values, within a few units of rounding.
fn laws_hold(t: &Tensor<f64>) -> std::result::Result<(), TestCaseError> {
    let f = log_cosh_values(t).unwrap().to_vec();
    let f_neg = log_cosh_values(&t.neg()).unwrap().to_vec();
    for ((&x, &y), &y_neg) in t.to_vec().iter().zip(&f).zip(&f_neg) {
        let tol = 4.0 * f64::EPSILON * (1.0 + x.abs());
        prop_assert!((y - y_neg).abs() <= tol, "not even at {x}: {y} vs {y_neg}");
        prop_assert!(y >= -tol, "negative at {x}: {y}");
        prop_assert!(y <= x.abs() + tol, "above |x| at {x}: {y}");
        prop_assert!(
            y >= x.abs() - std::f64::consts::LN_2 - tol,
            "below |x| − ln 2 at {x}: {y}"
        );
        if x == 0.0 {
            prop_assert_eq!(y, 0.0);
        }
    }
    Ok(())
}

/// The special values: NaN stays NaN, ±∞ gives +∞, other values a finite result.
fn special_values_hold(t: &Tensor<f64>) -> std::result::Result<(), TestCaseError> {
    let f = log_cosh_values(t).unwrap().to_vec();
    for (&x, &y) in t.to_vec().iter().zip(&f) {
        if x.is_nan() {
            prop_assert!(y.is_nan(), "log_cosh(NaN) = {y}");
        } else if x.is_infinite() {
            prop_assert_eq!(y, f64::INFINITY, "log_cosh({}) = {}", x, y);
        } else {
            prop_assert!(y.is_finite(), "log_cosh({x:e}) = {y}");
        }
    }
    Ok(())
}

/// Runs `property` over `cases` tensors drawn by `strategy`.
fn for_all(
    strategy: impl Strategy<Value = Tensor<f64>>,
    cases: u32,
    property: fn(&Tensor<f64>) -> std::result::Result<(), TestCaseError>,
) -> std::result::Result<(), String> {
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&strategy, |t| property(&t))
        .map_err(|e| e.to_string())
}

/// The derivatives, first and second order, for all drawn shapes and layouts.
fn derivatives_check() -> std::result::Result<usize, String> {
    let options = PropertyOptions {
        second_order: true,
        ..PropertyOptions::default()
    };
    let f = |p: &[Var<f64>]| log_cosh(&p[0])?.sum_all();
    gradcheck_for_all(same_shape(1, 3, 3, Values::Finite), f, &options)
        .map(|report| report.checks)
        .map_err(|failure| failure.to_string())
}

/// The values, inside random programs of the engine's ops.
fn differential_check(cases: u32) -> std::result::Result<(), String> {
    let ops = [UserOp {
        name: "log_cosh",
        engine: &log_cosh_values,
        reference: &log_cosh_reference,
    }];
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&program(ops.len()), |p| {
            p.run_with(&ops)
                .map_err(|e| TestCaseError::fail(e.to_string()))
        })
        .map_err(|e| e.to_string())
}

fn main() -> std::result::Result<(), String> {
    for_all(tensor_in::<f64>(3, 6, Values::Finite), 256, laws_hold)?;
    for_all(
        tensor_in::<f64>(3, 6, Values::Hostile),
        256,
        special_values_hold,
    )?;
    println!("laws: 256 finite and 256 hostile tensors");
    let checks = derivatives_check()?;
    println!("derivatives: {checks} Jacobian entries, first and second order, over 64 inputs");
    differential_check(256)?;
    println!("values: 256 random programs agree with the reference");
    Ok(())
}

#[test]
fn the_laws_hold() {
    for_all(tensor_in::<f64>(3, 6, Values::Finite), 128, laws_hold).unwrap();
}

#[test]
fn special_values_give_the_documented_results() {
    for_all(
        tensor_in::<f64>(3, 6, Values::Hostile),
        128,
        special_values_hold,
    )
    .unwrap();
}

#[test]
fn the_derivatives_check() {
    derivatives_check().unwrap();
}

#[test]
fn the_values_agree_in_random_programs() {
    differential_check(128).unwrap();
}

/// The formulation the doc comment warns against fails the hostile law, so the
/// law has teeth.
#[test]
fn the_naive_formulation_fails_at_minus_infinity() {
    let naive = |t: &Tensor<f64>| t.add(&t.mul_scalar(-2.0).softplus()).unwrap();
    let x = Tensor::from_vec(vec![f64::NEG_INFINITY], &[1]).unwrap();
    assert!(naive(&x).to_vec()[0].is_nan());
    assert_eq!(log_cosh_values(&x).unwrap().to_vec(), vec![f64::INFINITY]);
}
