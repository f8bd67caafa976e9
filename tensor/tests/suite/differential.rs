//! The differential generator's own properties: random programs agree with the
//! reference, a planted bug in a user's op is caught and shrinks to one step on a
//! tiny operand, a wrong refusal is caught, and the byte decoder spells the
//! programs the fuzz corpus was built with.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestError, TestRng, TestRunner};
use tensor::differential::{program, AxisPick, Map, Op, Program, Reduction, UserOp};
use tensor::reference::Dense;
use tensor::Tensor;

proptest! {
    #![proptest_config(crate::common::config(256))]

    /// The engine agrees with the reference on random programs of built-in ops.
    #[test]
    fn random_programs_agree_with_the_reference(p in program(0)) {
        p.run().map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}

/// Runs `ops` in random programs until one fails, and returns the shrunk program
/// and its disagreement.
fn shrunk_failure(ops: &[UserOp<'_>], seed: u8) -> (Program, String) {
    let config = Config {
        cases: 512,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let outcome = runner.run(&program(ops.len()), |p| {
        p.run_with(ops)
            .map_err(|e| TestCaseError::fail(e.to_string()))
    });
    let Err(TestError::Fail(message, minimal)) = outcome else {
        panic!("seed {seed}: expected a failure, got {outcome:?}");
    };
    (minimal, message.to_string())
}

/// A user's op with a planted bug — its engine side sums along the first axis where
/// its reference sums along the last — is caught, and the failing program shrinks
/// to the op alone on a small operand whose two axes differ.
#[test]
fn a_planted_bug_in_a_user_op_shrinks_to_one_step() {
    let engine = |t: &Tensor<f64>| t.sum(&[0], true);
    let reference = |d: &Dense| d.reduce(-1, true, true, |v| v.iter().sum());
    let ops = [UserOp {
        name: "row_sums",
        engine: &engine,
        reference: &reference,
    }];
    for seed in 0..3 {
        let (minimal, message) = shrunk_failure(&ops, seed);
        assert!(message.contains("row_sums"), "seed {seed}: {message}");
        let users = minimal
            .ops
            .iter()
            .filter(|o| matches!(o, Op::User(_)))
            .count();
        assert_eq!(users, 1, "seed {seed}: {minimal:?}");
        assert!(minimal.ops.len() <= 2, "seed {seed}: {minimal:?}");
        assert!(minimal.a.data.len() <= 4, "seed {seed}: {minimal:?}");
    }
}

/// The correct version of the same op passes, so the failure above is the bug's.
#[test]
fn the_same_op_written_right_agrees() {
    let engine = |t: &Tensor<f64>| t.sum(&[-1], true);
    let reference = |d: &Dense| d.reduce(-1, true, true, |v| v.iter().sum());
    let ops = [UserOp {
        name: "row_sums",
        engine: &engine,
        reference: &reference,
    }];
    let mut runner = TestRunner::new(Config {
        cases: 256,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&program(1), |p| {
            p.run_with(&ops)
                .map_err(|e| TestCaseError::fail(e.to_string()))
        })
        .unwrap();
}

/// An engine that accepts what the reference refuses is a disagreement too.
#[test]
fn a_wrong_acceptance_is_a_disagreement() {
    let engine = |t: &Tensor<f64>| Ok(t.clone());
    let reference = |_: &Dense| None;
    let ops = [UserOp {
        name: "strict",
        engine: &engine,
        reference: &reference,
    }];
    let p = Program {
        a: Dense::arange(&[2]),
        b: Dense::arange(&[2]),
        ops: vec![Op::User(0)],
    };
    let e = p.run_with(&ops).unwrap_err();
    assert_eq!(e.step, 0);
    assert!(e.detail.contains("the engine accepted it"), "{e}");
}

/// The decoder reads the operands and then one step per op byte with its
/// parameter bytes, as the fuzz corpus was written.
#[test]
fn bytes_decode_to_the_program_they_spell() {
    let bytes = [
        1, 2, 8, 16, // a: rank 1, size 2, values 1 and 2
        0, 200, // b: rank 0 (a scalar), value −7
        0,   // add
        4, 5, // map exp
        5, 7, 1, // sum, axis byte 7, keepdim
        9, // swap
        12, 3,  // cumsum, axis byte 3
        13, // logsumexp whose parameter bytes ran out: the program stops before it
    ];
    let p = Program::decode(&bytes).unwrap();
    assert_eq!(p.a.shape, vec![2]);
    assert_eq!(p.a.data, vec![1.0, 2.0]);
    assert_eq!(p.b.shape, Vec::<usize>::new());
    assert_eq!(p.b.data, vec![-7.0]);
    assert_eq!(
        p.ops,
        vec![
            Op::Add,
            Op::Map(Map::Exp),
            Op::Reduce {
                reduction: Reduction::Sum,
                axis: AxisPick(7),
                keepdim: true
            },
            Op::Swap,
            Op::Cumsum(AxisPick(3)),
        ]
    );
    p.run().unwrap();
    assert!(Program::decode(&bytes[..3]).is_none());
}
