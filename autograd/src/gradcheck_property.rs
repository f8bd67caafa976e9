//! `gradcheck` as a property: for every input a proptest strategy draws (shapes,
//! strided layouts, values), the function's first derivatives — and, if asked, its
//! second — check against finite differences. A failure shrinks to the minimal
//! input (smallest shapes, simplest values) and comes back with that input and the
//! failing Jacobian entry, so a wrong backward rule is reported on the case that
//! shows it most plainly.
//!
//! ```
//! use autograd::gradcheck_property::{gradcheck_for_all, same_shape, PropertyOptions};
//! use autograd::{record, Var};
//! use tensor::strategies::Values;
//! // x ↦ Σ x·tanh(x) checks for all shapes and layouts up to 3 × 3 × 3.
//! let f = |p: &[Var<f64>]| p[0].tanh()?.mul(&p[0])?.sum_all();
//! let report = gradcheck_for_all(same_shape(1, 3, 3, Values::Finite), f, &PropertyOptions::default());
//! assert!(report.unwrap().cases > 0);
//! // A custom cube whose backward rule is 3·x·|x| instead of 3x² is caught (on
//! // a small input holding a negative value).
//! let wrong = |p: &[Var<f64>]| {
//!     let x = p[0].value().clone();
//!     record("cube", &[&p[0]], x.square().mul(&x)?, move |c| {
//!         let slope = Var::constant(x.mul(&x.abs())?.mul_scalar(3.0));
//!         Ok(vec![Some(c.grad.mul(&slope)?)])
//!     })?
//!     .sum_all()
//! };
//! let failure = gradcheck_for_all(same_shape(1, 3, 3, Values::Finite), wrong, &PropertyOptions::default())
//!     .unwrap_err();
//! assert!(failure.to_string().contains("d output[0] / d input 0["), "{failure}");
//! ```
//!
//! Enabled by the `proptest` feature.

use crate::gradcheck::{gradcheck, gradgradcheck, GradcheckOptions};
use crate::var::Var;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestError, TestRunner};
use std::cell::Cell;
use std::fmt;
use tensor::strategies::{layout_recipe, shape, value_pool, Values};
use tensor::{Error, Result, Tensor};

/// Settings of [`gradcheck_for_all`].
#[derive(Clone, Debug)]
pub struct PropertyOptions {
    /// proptest's settings: the number of cases (64 by default), the seed, the
    /// shrinking budget (4096 steps by default: a float value takes about 60 to
    /// shrink, and each step is one small gradcheck).
    pub config: Config,
    /// The tolerances of each check ([`GradcheckOptions::strict`] by default).
    pub gradcheck: GradcheckOptions,
    /// Whether second derivatives are checked too ([`gradgradcheck`]).
    pub second_order: bool,
}

impl Default for PropertyOptions {
    fn default() -> Self {
        PropertyOptions {
            config: Config {
                cases: 64,
                max_shrink_iters: 4096,
                failure_persistence: None,
                ..Config::default()
            },
            gradcheck: GradcheckOptions::strict(),
            second_order: false,
        }
    }
}

/// What a passing property checked.
#[derive(Clone, Debug, PartialEq)]
pub struct PropertyReport {
    /// Inputs checked.
    pub cases: usize,
    /// Scalar comparisons made, over all cases.
    pub checks: usize,
    /// Largest |analytic − numeric| over all cases.
    pub max_abs_error: f64,
}

/// Why a property failed.
#[derive(Debug)]
pub enum PropertyFailure {
    /// The check failed; proptest shrank the input to `inputs`.
    Check {
        /// The minimal failing inputs.
        inputs: Vec<Tensor<f64>>,
        /// 1 for first derivatives, 2 for second.
        order: usize,
        /// The check's error on them: the failing Jacobian entry (or random
        /// direction), the analytic and numerical values, or `f`'s own error.
        error: Error,
    },
    /// proptest gave up before deciding (the strategy rejected too many inputs).
    Aborted(String),
}

impl fmt::Display for PropertyFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PropertyFailure::Aborted(why) => write!(f, "gradcheck property aborted: {why}"),
            PropertyFailure::Check {
                inputs,
                order,
                error,
            } => {
                let which = if *order == 1 { "first" } else { "second" };
                write!(f, "{which} derivatives fail on the minimal input: {error}")?;
                for (k, x) in inputs.iter().enumerate() {
                    write!(
                        f,
                        "\n  input {k}: shape {:?}, strides {:?}, values {:?}",
                        x.shape(),
                        x.strides(),
                        x.to_vec()
                    )?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for PropertyFailure {}

/// The checks made and the largest error, or the first failing check's order and
/// error.
type Checked = std::result::Result<(usize, f64), (usize, Error)>;

/// The function under check.
type Function<'f> = dyn Fn(&[Var<f64>]) -> Result<Var<f64>> + 'f;

/// Checks `f` at `inputs`: first derivatives, then second if asked.
fn check(f: &Function<'_>, inputs: &[Tensor<f64>], options: &PropertyOptions) -> Checked {
    let first = gradcheck(f, inputs, &options.gradcheck).map_err(|e| (1, e))?;
    let mut done = (first.checks, first.max_abs_error);
    if options.second_order {
        let second = gradgradcheck(f, inputs, &options.gradcheck).map_err(|e| (2, e))?;
        done = (done.0 + second.checks, done.1.max(second.max_abs_error));
    }
    Ok(done)
}

/// Checks `f`'s derivatives at every input `inputs` draws; on a failure, returns
/// the shrunk input with the error that fails it.
pub fn gradcheck_for_all<S>(
    inputs: S,
    f: impl Fn(&[Var<f64>]) -> Result<Var<f64>>,
    options: &PropertyOptions,
) -> std::result::Result<PropertyReport, PropertyFailure>
where
    S: Strategy<Value = Vec<Tensor<f64>>>,
{
    let mut runner = TestRunner::new(options.config.clone());
    let (cases, checks, worst) = (Cell::new(0), Cell::new(0), Cell::new(0.0f64));
    let outcome = runner.run(&inputs, |xs| match check(&f, &xs, options) {
        Ok((n, err)) => {
            cases.set(cases.get() + 1);
            checks.set(checks.get() + n);
            worst.set(worst.get().max(err));
            Ok(())
        }
        Err((_, e)) => Err(TestCaseError::fail(e.to_string())),
    });
    match outcome {
        Ok(()) => Ok(PropertyReport {
            cases: cases.get(),
            checks: checks.get(),
            max_abs_error: worst.get(),
        }),
        Err(TestError::Abort(why)) => Err(PropertyFailure::Aborted(why.to_string())),
        Err(TestError::Fail(why, minimal)) => match check(&f, &minimal, options) {
            Err((order, error)) => Err(PropertyFailure::Check {
                inputs: minimal,
                order,
                error,
            }),
            // The check is deterministic, so the minimal case fails again; were it
            // to pass, proptest's reason is all there is to report.
            Ok(_) => Err(PropertyFailure::Aborted(why.to_string())),
        },
    }
}

/// `n` inputs of one shape (rank ≤ `max_rank`, axes ≤ `max_dim`), each in its own
/// strided layout (permuted, sliced with steps, flipped; never broadcast, which
/// gradcheck refuses), values from `values`.
pub fn same_shape(
    n: usize,
    max_rank: usize,
    max_dim: usize,
    values: Values,
) -> impl Strategy<Value = Vec<Tensor<f64>>> {
    // Drawn apart and in this order, as `tensor::strategies::tensor_in` does: the
    // value pools shrink first, then the shape (keeping the failing values).
    (
        proptest::collection::vec(value_pool::<f64>(values), n),
        shape(max_rank, max_dim),
        proptest::collection::vec(layout_recipe(max_rank, false), n),
    )
        .prop_map(|(pools, shape, recipes)| {
            pools
                .iter()
                .zip(recipes)
                .map(|(pool, r)| r.truncated(shape.len()).build_cycled(&shape, pool))
                .collect()
        })
}
