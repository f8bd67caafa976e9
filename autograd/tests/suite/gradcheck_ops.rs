//! gradcheck and gradgradcheck for every differentiable op, over proptest-generated
//! shapes and layouts (non-contiguous, stepped, flipped; broadcast inputs are made
//! inside the function).

use crate::common;

use autograd::{gradcheck, gradgradcheck, Var};
use common::*;
use proptest::prelude::*;
use tensor::strategies::{broadcast_pair, layout_recipe, nonempty_shape};
use tensor::Tensor;

/// Stored elements of the largest view `strided` draws: three axes of three, each
/// cut with a step of up to 3 from seven stored elements.
const STORED: usize = 7 * 7 * 7;

/// A tensor of rank 1 to 3 (axes up to 3) in a drawn layout, at a point where every
/// op of the unary table is differentiable: the stored magnitudes are distinct (no
/// ties for max, min or the ∞-norm, ≥ 0.008 apart), at least 0.05 from the kinks at
/// 0 (abs, relu, leaky_relu, elu, the 1-norm) and 0.0009 from the clamp's bounds at
/// −1 and 1.5, all of it far beyond the finite-difference step (1e-6). Only their
/// order and signs are drawn: a tensor of values drawn independently would repeat
/// values (a small pool is cycled) or land on a kink, where gradcheck rightly fails.
fn strided() -> impl Strategy<Value = Tensor<f64>> {
    let magnitudes: Vec<f64> = (0..STORED)
        .map(|k| 0.05 + 2.9 * (k as f64 + 0.25) / STORED as f64)
        .collect();
    nonempty_shape(3, 3)
        .prop_filter("rank ≥ 1", |s| !s.is_empty())
        .prop_flat_map(move |shape| {
            (
                layout_recipe(shape.len(), false),
                Just(magnitudes.clone()).prop_shuffle(),
                proptest::collection::vec(any::<bool>(), STORED),
                Just(shape),
            )
        })
        .prop_map(|(recipe, magnitudes, negative, shape)| {
            let pool: Vec<f64> = magnitudes
                .iter()
                .zip(&negative)
                .map(|(&m, &neg)| if neg { -m } else { m })
                .collect();
            recipe.build_cycled(&shape, &pool)
        })
}

proptest! {
    #![proptest_config(config(12))]

    #[test]
    fn unary_ops_pass_gradcheck(x in strided()) {
        for (name, f) in unary_cases() {
            let r = gradcheck(|v| f(&v[0]), std::slice::from_ref(&x), &opts());
            prop_assert!(r.is_ok(), "{}: {:?} on {:?}", name, r, x);
        }
    }

    #[test]
    fn unary_ops_pass_gradgradcheck(x in strided()) {
        for (name, f) in unary_cases() {
            let r = gradgradcheck(|v| f(&v[0]), std::slice::from_ref(&x), &opts());
            prop_assert!(r.is_ok(), "{}: {:?} on {:?}", name, r, x);
        }
    }

    #[test]
    fn binary_ops_pass_gradcheck_under_broadcasting((sa, sb) in broadcast_pair(3, 3), seed in any::<u64>()) {
        let mut rng = tensor::Rng::new(seed);
        let a = Tensor::<f64>::rand_uniform(&sa, -2.0, 2.0, &mut rng).unwrap();
        // A transposed second operand exercises strided inputs.
        let rev: Vec<usize> = sb.iter().rev().cloned().collect();
        let b = Tensor::<f64>::rand_uniform(&rev, -2.0, 2.0, &mut rng).unwrap();
        let b = b.permute(&(0..sb.len() as isize).rev().collect::<Vec<_>>()).unwrap();
        for (name, f) in binary_cases() {
            let r = gradcheck(|v| f(&v[0], &v[1]), &[a.clone(), b.clone()], &opts());
            prop_assert!(r.is_ok(), "{}: {:?}", name, r);
            let r = gradgradcheck(|v| f(&v[0], &v[1]), &[a.clone(), b.clone()], &opts());
            prop_assert!(r.is_ok(), "{} (second order): {:?}", name, r);
        }
    }

    #[test]
    fn matmul_passes_gradcheck_with_broadcast_batches(
        m in 1usize..4, k in 1usize..4, n in 1usize..4, batch in 1usize..3, transpose in any::<bool>(), seed in any::<u64>(),
    ) {
        let mut rng = tensor::Rng::new(seed);
        let a = Tensor::<f64>::rand_normal(&[batch, m, k], 0.0, 1.0, &mut rng).unwrap();
        let b = if transpose {
            Tensor::<f64>::rand_normal(&[n, k], 0.0, 1.0, &mut rng).unwrap().t().unwrap()
        } else {
            Tensor::<f64>::rand_normal(&[k, n], 0.0, 1.0, &mut rng).unwrap()
        };
        let f = |v: &[Var<f64>]| v[0].matmul(&v[1]);
        prop_assert!(gradcheck(f, &[a.clone(), b.clone()], &opts()).is_ok());
        prop_assert!(gradgradcheck(f, &[a, b], &opts()).is_ok());
    }

    #[test]
    fn scatter_add_and_index_add_pass_gradcheck(seed in any::<u64>()) {
        let mut rng = tensor::Rng::new(seed);
        let base = Tensor::<f64>::rand_normal(&[3, 4], 0.0, 1.0, &mut rng).unwrap();
        let src = Tensor::<f64>::rand_normal(&[2, 4], 0.0, 1.0, &mut rng).unwrap();
        let idx = Tensor::from_vec(vec![2usize, 0, 2, 1, 0, 0, 1, 2], &[2, 4]).unwrap();
        let f = |v: &[Var<f64>]| v[0].scatter_add(0, &idx, &v[1]);
        prop_assert!(gradcheck(f, &[base.clone(), src.clone()], &opts()).is_ok());
        let g = |v: &[Var<f64>]| v[0].index_add(0, &[2, 2], &v[1]);
        prop_assert!(gradcheck(g, &[base, src], &opts()).is_ok());
    }
}

#[test]
fn large_layers_use_random_directions() {
    let mut rng = tensor::Rng::new(3);
    let w = Tensor::<f64>::rand_normal(&[64, 48], 0.0, 0.2, &mut rng).unwrap();
    let x = Tensor::<f64>::rand_normal(&[32, 64], 0.0, 1.0, &mut rng).unwrap();
    let f = |v: &[Var<f64>]| v[1].matmul(&v[0])?.tanh()?.square()?.mean(&[1], false);
    let report = gradcheck(f, &[w, x], &opts()).unwrap();
    assert!(!report.full_jacobian);
    assert_eq!(report.checks, opts().directions);
}

/// The two shape adjoints (recorded by broadcasting's and slicing's backward rules)
/// checked as ops of their own.
#[test]
fn sum_to_shape_and_embed_slice_pass_gradcheck_and_gradgradcheck() {
    let mut rng = tensor::Rng::new(8);
    let x = Tensor::<f64>::rand_normal(&[3, 2, 4], 0.0, 1.0, &mut rng).unwrap();
    let s = Tensor::<f64>::rand_normal(&[2, 2], 0.0, 1.0, &mut rng).unwrap();
    let sum = |v: &[Var<f64>]| v[0].sum_to_shape(&[2, 1])?.square();
    let embed = |v: &[Var<f64>]| v[0].embed_slice(&[2, 5], 1, 1, 3)?.tanh();
    for (name, f, input) in [
        (
            "sum_to_shape",
            &sum as &dyn Fn(&[Var<f64>]) -> tensor::Result<Var<f64>>,
            x,
        ),
        ("embed_slice", &embed, s),
    ] {
        let inputs = std::slice::from_ref(&input);
        let r = gradcheck(f, inputs, &opts());
        assert!(r.is_ok(), "{name}: {r:?}");
        let r = gradgradcheck(f, inputs, &opts());
        assert!(r.is_ok(), "{name} second order: {r:?}");
    }
}

/// The ReLU's backward gate as an op of its own: linear in its operand, the gate a
/// constant (with a zero, so a closed gate at exactly 0 is covered).
#[test]
fn where_positive_passes_gradcheck_and_gradgradcheck() {
    let mut rng = tensor::Rng::new(9);
    let x = Tensor::<f64>::rand_normal(&[3, 4], 0.0, 1.0, &mut rng).unwrap();
    let mut gate = Tensor::<f64>::rand_normal(&[3, 4], 0.0, 1.0, &mut rng)
        .unwrap()
        .to_vec();
    gate[0] = 0.0;
    let gate = Tensor::from_vec(gate, &[3, 4]).unwrap();
    let f = |v: &[Var<f64>]| v[0].where_positive(&gate)?.square();
    let inputs = std::slice::from_ref(&x);
    assert!(gradcheck(f, inputs, &opts()).is_ok());
    assert!(gradgradcheck(f, inputs, &opts()).is_ok());
}

/// The registry test: every op name the tape can record (each `record("name", …)`
/// in autograd's source) is called by name in a test that runs gradcheck or
/// gradgradcheck (or in the case tables of `tests/common` they iterate), so a new op
/// cannot land without its checks. A textual check: it sees a call `.name(` /
/// `::name(` or a table entry `"name"` in those files.
#[test]
fn every_recorded_op_is_named_in_a_gradcheck_test() {
    fn files(dir: &std::path::Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let (mut src, mut tests, mut tables) = (Vec::new(), Vec::new(), Vec::new());
    files(&root.join("src"), &mut src);
    files(&root.join("tests"), &mut tests);
    // The case tables the gradcheck tests iterate over.
    files(&root.join("tests/suite/common"), &mut tables);
    // Code only: a doc example may record an op of its own (the gradcheck docs do).
    let code: Vec<String> = src
        .iter()
        .map(|text| {
            text.lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    let mut ops: Vec<&str> = Vec::new();
    for text in &code {
        for piece in text.split("record(").skip(1) {
            let piece = piece.trim_start();
            if let Some(rest) = piece.strip_prefix('"') {
                ops.push(rest.split('"').next().unwrap());
            }
        }
    }
    ops.sort();
    ops.dedup();
    assert!(ops.len() > 60, "found only {} recorded ops", ops.len());
    let checked: String = tests
        .iter()
        .filter(|t| t.contains("gradcheck(") || t.contains("gradgradcheck("))
        .chain(&tables)
        .cloned()
        .collect();
    let missing: Vec<&&str> = ops
        .iter()
        .filter(|op| {
            ![format!(".{op}("), format!("::{op}("), format!("\"{op}\"")]
                .iter()
                .any(|p| checked.contains(p.as_str()))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "ops without a gradcheck test: {missing:?}"
    );
}
