//! Shared helpers: the op tables that gradcheck walks through.
#![allow(dead_code)]

use autograd::{GradcheckOptions, Var};
use proptest::test_runner::Config;
use tensor::{Result, Tensor};

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

/// A named differentiable function of one input.
pub type UnaryCase = (&'static str, fn(&Var<f64>) -> Result<Var<f64>>);

/// Unary ops, each composed with what keeps its input in its domain.
pub fn unary_cases() -> Vec<UnaryCase> {
    vec![
        ("neg", |x| x.neg()),
        ("abs", |x| x.abs()),
        ("exp", |x| x.exp()),
        ("expm1", |x| x.expm1()),
        ("ln", |x| x.abs()?.add_scalar(0.5)?.ln()),
        ("ln1p", |x| x.square()?.ln1p()),
        ("sqrt", |x| x.square()?.add_scalar(0.3)?.sqrt()),
        ("rsqrt", |x| x.square()?.add_scalar(0.3)?.rsqrt()),
        ("square", |x| x.square()),
        ("recip", |x| x.square()?.add_scalar(0.5)?.recip()),
        ("powf", |x| x.abs()?.add_scalar(0.2)?.powf(2.5)),
        ("sin", |x| x.sin()),
        ("cos", |x| x.cos()),
        ("tanh", |x| x.tanh()),
        ("sigmoid", |x| x.sigmoid()),
        ("softplus", |x| x.softplus()),
        ("log_sigmoid", |x| x.log_sigmoid()),
        ("relu", |x| x.relu()),
        ("leaky_relu", |x| x.leaky_relu(0.2)),
        ("elu", |x| x.elu(0.7)),
        ("silu", |x| x.silu()),
        ("erf", |x| x.erf()),
        ("gelu", |x| x.gelu()),
        ("gelu_grad", |x| x.gelu_grad()),
        ("clamp", |x| x.clamp(-1.0, 1.5)),
        ("add_scalar", |x| x.add_scalar(1.5)),
        ("mul_scalar", |x| x.mul_scalar(-2.0)),
        ("div_scalar", |x| x.div_scalar(3.0)),
        ("sum", |x| x.sum(&[0], true)),
        ("sum_all", |x| x.sum_all()),
        ("mean", |x| x.mean(&[-1], false)),
        ("prod", |x| x.abs()?.add_scalar(0.5)?.prod(&[0], false)),
        ("max", |x| x.max(&[-1], true)),
        ("min", |x| x.min(&[0], false)),
        ("var", |x| x.cat_self()?.var(&[0], 1, false)),
        ("std", |x| x.cat_self_shifted()?.std(&[0], 1, true)),
        ("logsumexp", |x| x.logsumexp(&[-1], false)),
        ("norm1", |x| x.norm(1.0, &[0], false)),
        ("norm2", |x| x.norm(2.0, &[-1], true)),
        ("norm3", |x| x.norm(3.0, &[0], false)),
        ("norminf", |x| x.norm(f64::INFINITY, &[-1], false)),
        ("softmax", |x| x.softmax(-1)),
        ("log_softmax", |x| x.log_softmax(0)),
        ("cumsum", |x| x.cumsum(0)),
        ("transpose", |x| x.transpose(0, -1)),
        ("permute", |x| {
            x.permute(&(0..x.ndim() as isize).rev().collect::<Vec<_>>())
        }),
        ("reshape", |x| x.reshape(&[x.numel()])),
        ("slice", |x| x.slice(0, 0, x.shape()[0], 2)),
        ("narrow", |x| x.narrow(-1, 0, 1)),
        ("flip", |x| x.flip(&[0])),
        ("unsqueeze_squeeze", |x| {
            x.unsqueeze(1)?.mul_scalar(2.0)?.squeeze(1)
        }),
        ("broadcast_to", |x| {
            let mut s = vec![2];
            s.extend_from_slice(x.shape());
            x.broadcast_to(&s)
        }),
        ("index_select", |x| {
            x.index_select(0, &[0, 0, x.shape()[0] - 1])
        }),
        ("gather", |x| {
            let mut s = x.shape().to_vec();
            s[0] = 2;
            let n: usize = s.iter().product();
            let idx = Tensor::from_vec((0..n).map(|i| (i * 7) % x.shape()[0]).collect(), &s)?;
            x.gather(0, &idx)
        }),
        ("cat", |x| Var::cat(&[x, &x.mul_scalar(3.0)?], -1)),
        ("stack", |x| Var::stack(&[x, &x.square()?], 0)),
        ("split", |x| {
            let d = x.shape()[0];
            let parts = x.split(0, &[d / 2, d - d / 2])?;
            parts[1].mul_scalar(2.0)
        }),
        ("pad", |x| x.pad(&vec![(1, 2); x.ndim()], 0.5)),
        ("repeat", |x| x.repeat(&vec![2; x.ndim()])),
        ("matmul_self", |x| {
            let m = x.reshape(&[x.numel(), 1])?;
            m.matmul(&m.t()?)
        }),
    ]
}

/// Helpers that give reductions with a correction a long enough axis.
pub trait Doubling {
    /// `self` joined with its own square along axis 0.
    fn cat_self(&self) -> Result<Var<f64>>;
    /// `self` joined with itself plus 1 along axis 0.
    fn cat_self_shifted(&self) -> Result<Var<f64>>;
}

impl Doubling for Var<f64> {
    fn cat_self(&self) -> Result<Var<f64>> {
        Var::cat(&[self, &self.square()?], 0)
    }
    fn cat_self_shifted(&self) -> Result<Var<f64>> {
        Var::cat(&[self, &self.add_scalar(1.0)?], 0)
    }
}

/// A named differentiable function of two inputs.
pub type BinaryCase = (&'static str, fn(&Var<f64>, &Var<f64>) -> Result<Var<f64>>);

/// Binary ops, with the second input moved into a safe domain where needed.
pub fn binary_cases() -> Vec<BinaryCase> {
    vec![
        ("add", |a, b| a.add(b)),
        ("sub", |a, b| a.sub(b)),
        ("mul", |a, b| a.mul(b)),
        ("div", |a, b| a.div(&b.square()?.add_scalar(0.5)?)),
        ("pow", |a, b| a.abs()?.add_scalar(0.5)?.pow(b)),
        ("maximum", |a, b| a.maximum(b)),
        ("minimum", |a, b| a.minimum(b)),
        ("select", |a, b| {
            let shape = tensor::layout::broadcast_shapes("t", a.shape(), b.shape())?;
            let n: usize = shape.iter().product();
            let mask = Tensor::from_vec((0..n).map(|i| (i % 2) as f64).collect(), &shape)?;
            Var::select(&mask, a, b)
        }),
    ]
}

/// gradcheck settings for the op tables (PyTorch's defaults).
pub fn opts() -> GradcheckOptions {
    strict()
}

/// The internal suite's tolerances (see [`GradcheckOptions::strict`]).
pub fn strict() -> GradcheckOptions {
    GradcheckOptions::strict()
}
