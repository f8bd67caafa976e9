//! The naive reference: explicit index loops over the strided layout, in f64.
#![allow(dead_code)]

use proptest::test_runner::Config;
use tensor::{Element, Tensor};

/// proptest settings: `cases` cases, failures persisted the proptest way (a
/// `tests/proptest-regressions/FILE.txt`, the suite's `main.rs` being its root, replayed first on later runs:
/// commit it with the fix).
///
/// On wasm32 proptest reads no environment (its `contextualize_config` is compiled
/// out there), so CI's `PROPTEST_RNG_SEED` cannot reach it: the seed is fixed here
/// instead, and a wasm run draws the same cases every time.
pub fn config(cases: u32) -> Config {
    Config {
        cases,
        #[cfg(target_arch = "wasm32")]
        rng_seed: proptest::test_runner::RngSeed::Fixed(WASM_SEED),
        ..Config::default()
    }
}

/// The proptest seed of the wasm32 runs (the value `.ci/run` exports elsewhere).
#[cfg(target_arch = "wasm32")]
const WASM_SEED: u64 = 20261201;

/// Every multi-index of `shape`, in row-major order.
pub fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    for flat in 0..n {
        let mut idx = vec![0; shape.len()];
        let mut rem = flat;
        for d in (0..shape.len()).rev() {
            idx[d] = rem % shape[d];
            rem /= shape[d];
        }
        out.push(idx);
    }
    out
}

/// The element at `idx`, read straight from storage through offset and strides.
pub fn at<T: Element>(t: &Tensor<T>, idx: &[usize]) -> f64 {
    let mut p = t.layout().offset() as isize;
    for (&i, &s) in idx.iter().zip(t.strides()) {
        p += i as isize * s;
    }
    t.storage()[p as usize].as_f64()
}

/// All elements in logical order.
pub fn logical<T: Element>(t: &Tensor<T>) -> Vec<f64> {
    indices(t.shape()).iter().map(|i| at(t, i)).collect()
}

/// The index into an operand of shape `shape` that broadcasting maps `out` to.
pub fn broadcast_index(out: &[usize], shape: &[usize]) -> Vec<usize> {
    let lead = out.len() - shape.len();
    shape
        .iter()
        .enumerate()
        .map(|(d, &s)| if s == 1 { 0 } else { out[lead + d] })
        .collect()
}

/// Row-major flat position of `idx` in `shape`.
pub fn flat(idx: &[usize], shape: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |acc, (&i, &d)| acc * d + i)
}

/// |a − b| ≤ atol + rtol·|b| elementwise, NaNs matching NaNs.
pub fn assert_close(got: &[f64], want: &[f64], rtol: f64, atol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if w.is_nan() || g.is_nan() {
            assert!(w.is_nan() && g.is_nan(), "{what}[{i}]: got {g}, want {w}");
            continue;
        }
        if w.is_infinite() || g.is_infinite() {
            assert_eq!(g, w, "{what}[{i}]");
            continue;
        }
        assert!(
            (g - w).abs() <= atol + rtol * w.abs(),
            "{what}[{i}]: got {g}, want {w}"
        );
    }
}

/// Kahan-compensated sum, the accuracy reference for reductions.
pub fn kahan_sum(x: &[f64]) -> f64 {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    for &v in x {
        let y = v - c;
        let t = s + y;
        c = (t - s) - y;
        s = t;
    }
    s
}
