//! The strategies' own properties: values shrink (a planted bug's failure comes
//! back as a minimal shape and value), and the hostile profile meets the ops whose
//! results are defined for every value — views and copies move bits, element-wise
//! maps are the scalar function applied to each element, NaN payloads included.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestError, TestRunner};
use tensor::strategies::{tensor_in, Values};
use tensor::Tensor;

/// A planted bug — an "abs" that is wrong from 3 up — fails on integer data, and
/// proptest shrinks the failing tensor to the threshold value 3 among zeros in a
/// tiny tensor (one element for most seeds; proptest shrinks a tuple's parts in
/// order and does not revisit them, so a pool shrunk to [0, 3] can keep a second
/// element), from tensors of up to 5³ elements in strided layouts.
#[test]
fn a_planted_bug_shrinks_to_a_minimal_shape_and_value() {
    use proptest::test_runner::{RngAlgorithm, TestRng};
    let buggy_abs = |t: &Tensor<f64>| t.map(|x| if x >= 3.0 { 0.0 } else { x.abs() });
    let mut single = 0;
    for seed in 0..6u8 {
        let config = Config {
            cases: 256,
            failure_persistence: None,
            ..Config::default()
        };
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]);
        let mut runner = TestRunner::new_with_rng(config, rng);
        let outcome = runner.run(&tensor_in::<f64>(3, 5, Values::Integers), |t| {
            prop_assert_eq!(buggy_abs(&t).to_vec(), t.abs().to_vec());
            Ok(())
        });
        let Err(TestError::Fail(_, minimal)) = outcome else {
            panic!("seed {seed}: expected a shrunk failure, got {outcome:?}");
        };
        let v = minimal.to_vec();
        assert!(v.len() <= 4, "seed {seed}: {:?} {v:?}", minimal.shape());
        assert_eq!(
            v.iter().filter(|&&x| x == 3.0).count(),
            1,
            "seed {seed}: {v:?}"
        );
        assert!(
            v.iter().all(|&x| x == 0.0 || x == 3.0),
            "seed {seed}: {v:?}"
        );
        single += usize::from(v.len() == 1);
    }
    assert!(
        single >= 3,
        "only {single} of 6 seeds shrank to one element"
    );
}

/// The hostile profile draws every kind of special value it names.
#[test]
fn the_hostile_profile_reaches_every_special_value() {
    let mut runner = TestRunner::deterministic();
    let strategy = tensor_in::<f32>(2, 8, Values::Hostile);
    let mut seen = [false; 6];
    for _ in 0..200 {
        let t = strategy.new_tree(&mut runner).unwrap().current();
        for v in t.to_vec() {
            seen[0] |= v.is_nan();
            seen[1] |= v == f32::INFINITY;
            seen[2] |= v == f32::NEG_INFINITY;
            seen[3] |= v == 0.0 && v.is_sign_negative();
            seen[4] |= v != 0.0 && v.is_subnormal();
            seen[5] |= v == f32::MAX;
        }
    }
    assert_eq!(seen, [true; 6]);
}

/// An op's name, its result on the drawn tensor, and the scalar function it maps.
type Case = (&'static str, Tensor<f64>, fn(f64) -> f64);

fn same_bits<T: tensor::Element>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.as_f64().to_bits() == y.as_f64().to_bits())
}

proptest! {
    #![proptest_config(crate::common::config(64))]

    /// Copies and views move bits: NaN payloads, −0 and subnormals survive.
    #[test]
    fn views_and_copies_keep_every_bit(t in tensor_in::<f64>(3, 4, Values::Hostile)) {
        let c = t.contiguous();
        prop_assert!(same_bits(&c.to_vec(), &t.to_vec()));
        if t.ndim() >= 1 && t.shape()[0] > 0 {
            let flipped = t.flip(&[0]).unwrap().flip(&[0]).unwrap();
            prop_assert!(same_bits(&flipped.to_vec(), &t.to_vec()));
            let idx: Vec<usize> = (0..t.shape()[0]).rev().collect();
            let back = t.index_select(0, &idx).unwrap().index_select(0, &idx).unwrap();
            prop_assert!(same_bits(&back.to_vec(), &t.to_vec()));
        }
    }

    /// Element-wise maps in f64 are the scalar function on each element, special
    /// values included, to the bit (NaN to a NaN).
    #[test]
    fn f64_unary_ops_are_the_scalar_functions(t in tensor_in::<f64>(3, 5, Values::Hostile)) {
        let x = t.to_vec();
        let cases: [Case; 7] = [
            ("exp", t.exp(), f64::exp),
            ("ln", t.ln(), f64::ln),
            ("sqrt", t.sqrt(), f64::sqrt),
            ("tanh", t.tanh(), f64::tanh),
            ("abs", t.abs(), f64::abs),
            ("neg", t.neg(), |v: f64| -v),
            ("square", t.square(), |v: f64| v * v),
        ];
        for (name, got, f) in cases {
            for (g, v) in got.to_vec().iter().zip(&x) {
                let want = f(*v);
                prop_assert!(
                    (g.is_nan() && want.is_nan()) || g.to_bits() == want.to_bits(),
                    "{}({:e}) = {:e}, the scalar function gives {:e}", name, v, g, want
                );
            }
        }
    }
}
