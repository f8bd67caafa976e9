//! gradcheck as a property: it passes on correct rules over drawn shapes and
//! layouts, and a planted wrong rule — first order or second — fails and shrinks
//! to a one-element input that shows it.

use autograd::gradcheck_property::{
    gradcheck_for_all, same_shape, PropertyFailure, PropertyOptions,
};
use autograd::{record, Var};
use proptest::test_runner::{Config, RngSeed};
use tensor::strategies::Values;
use tensor::Tensor;

fn options(seed: u64, second_order: bool) -> PropertyOptions {
    PropertyOptions {
        config: Config {
            rng_seed: RngSeed::Fixed(seed),
            ..PropertyOptions::default().config
        },
        second_order,
        ..PropertyOptions::default()
    }
}

/// x³ element by element, with a backward rule of our choosing: `rule(x)` times
/// the incoming gradient. Not summed: the finite difference of a sum of 27 cubes
/// of up to 27 each carries a round-off of ε·Σ|x³|/2h ≈ 1e-8, gradcheck's whole
/// absolute tolerance, where one cube's carries 1e-9.
fn cube(
    p: &[Var<f64>],
    rule: fn(&Var<f64>) -> tensor::Result<Var<f64>>,
) -> tensor::Result<Var<f64>> {
    let x = p[0].clone();
    let value = x.value().square().mul(x.value())?;
    record("cube", &[&p[0]], value, move |c| {
        Ok(vec![Some(c.grad.mul(&rule(&x)?)?)])
    })
}

#[test]
fn correct_rules_pass_over_shapes_and_layouts() {
    let f = |p: &[Var<f64>]| p[0].mul(&p[1])?.tanh()?.sum_all();
    let report =
        gradcheck_for_all(same_shape(2, 3, 3, Values::Finite), f, &options(1, true)).unwrap();
    assert_eq!(report.cases, 64);
    assert!(
        report.checks > 64 && report.max_abs_error < 1e-8,
        "{report:?}"
    );
    // The right rule for the cube, recorded so that it has its own derivative.
    let right = |p: &[Var<f64>]| cube(p, |x| x.square()?.mul_scalar(3.0));
    gradcheck_for_all(
        same_shape(1, 3, 3, Values::Finite),
        right,
        &options(2, true),
    )
    .unwrap();
}

#[test]
fn a_wrong_first_derivative_shrinks_to_one_negative_element() {
    // 3·x·|x| is 3x² for x ≥ 0 only.
    let wrong = |p: &[Var<f64>]| cube(p, |x| x.mul(&x.abs()?)?.mul_scalar(3.0));
    for seed in 0..3 {
        let failure = gradcheck_for_all(
            same_shape(1, 3, 4, Values::Finite),
            wrong,
            &options(seed, false),
        )
        .unwrap_err();
        let PropertyFailure::Check {
            inputs,
            order,
            error,
        } = &failure
        else {
            panic!("seed {seed}: {failure}");
        };
        assert_eq!(*order, 1);
        // One negative value among zeros in a tiny tensor (one element for these
        // seeds on x86-64; the draws differ where usize is 32 bits).
        let v = inputs[0].to_vec();
        assert!(v.len() <= 4, "seed {seed}: {failure}");
        assert_eq!(
            v.iter().filter(|&&x| x < 0.0).count(),
            1,
            "seed {seed}: {failure}"
        );
        assert!(v.iter().all(|&x| x <= 0.0), "seed {seed}: {failure}");
        let message = failure.to_string();
        assert!(
            message.contains("d output[") && message.contains("/ d input 0["),
            "{message}"
        );
        assert!(message.contains("strides"), "{message}");
        assert!(error.to_string().contains("gradcheck"), "{error}");
    }
}

#[test]
fn a_rule_right_only_to_first_order_fails_the_second() {
    // The slope detached from the graph: first derivatives check, second do not.
    let detached =
        |p: &[Var<f64>]| cube(p, |x| Ok(Var::constant(x.value().square().mul_scalar(3.0))));
    gradcheck_for_all(
        same_shape(1, 3, 3, Values::Finite),
        detached,
        &options(3, false),
    )
    .unwrap();
    let failure = gradcheck_for_all(
        same_shape(1, 3, 3, Values::Finite),
        detached,
        &options(3, true),
    )
    .unwrap_err();
    let PropertyFailure::Check { inputs, order, .. } = &failure else {
        panic!("{failure}");
    };
    assert_eq!(*order, 2, "{failure}");
    assert_eq!(inputs[0].numel(), 1, "{failure}");
}

#[test]
fn a_drawn_input_can_be_any_layout() {
    // The strategy reaches non-contiguous inputs, which gradcheck's analytic pass
    // sees as they are.
    use proptest::strategy::{Strategy, ValueTree};
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = same_shape(2, 3, 3, Values::Finite);
    let strided = (0..100)
        .map(|_| strategy.new_tree(&mut runner).unwrap().current())
        .filter(|xs: &Vec<Tensor<f64>>| xs.iter().any(|x| !x.is_contiguous()))
        .count();
    assert!(strided > 20, "{strided} of 100 draws strided");
}
