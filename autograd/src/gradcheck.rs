//! `gradcheck` and `gradgradcheck`: analytic derivatives against central finite
//! differences in f64, for users' own test suites as much as for ours.

use crate::engine::grad;
use crate::mode;
use crate::var::Var;
use tensor::{Error, Result, Rng, Tensor};

/// Settings of [`gradcheck`]; the defaults are PyTorch's.
#[derive(Clone, Debug)]
pub struct GradcheckOptions {
    /// Finite-difference step.
    pub eps: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance (relative to the numerical value).
    pub rtol: f64,
    /// The full Jacobian is compared when (total input elements) × (output elements)
    /// is at most this; beyond, random directions are used.
    pub full_jacobian_limit: usize,
    /// Number of random (t, c) pairs in the random-direction check.
    pub directions: usize,
    /// Seed of the random directions.
    pub seed: u64,
}

impl Default for GradcheckOptions {
    fn default() -> Self {
        GradcheckOptions {
            eps: 1e-6,
            atol: 1e-5,
            rtol: 1e-3,
            full_jacobian_limit: 4096,
            directions: 8,
            seed: 0,
        }
    }
}

impl GradcheckOptions {
    /// This workspace's own tolerances: atol 1e-8, rtol 1e-6 (ε = 1e-6). Central
    /// differences carry a truncation error of about ε²·|f‴| ≈ 1e-12 and a rounding
    /// error of about 1e-16·|f|/ε ≈ 1e-10·|f|, so these keep two orders of margin
    /// for losses of order one, while a factor-2 error on a derivative of 1e-5
    /// (which PyTorch's 1e-5 / 1e-3 lets pass) fails.
    pub fn strict() -> Self {
        GradcheckOptions {
            atol: 1e-8,
            rtol: 1e-6,
            ..GradcheckOptions::default()
        }
    }
}

/// What a successful check compared.
#[derive(Clone, Debug, PartialEq)]
pub struct GradcheckReport {
    /// Number of scalar comparisons made.
    pub checks: usize,
    /// Largest |analytic − numeric|.
    pub max_abs_error: f64,
    /// True if the full Jacobian was compared, false for random directions.
    pub full_jacobian: bool,
}

/// The function under check, as the checks' bodies take it.
type Function<'f> = dyn Fn(&[Var<f64>]) -> Result<Var<f64>> + 'f;

fn refuse_broadcast(inputs: &[Tensor<f64>]) -> Result<()> {
    for (k, x) in inputs.iter().enumerate() {
        if let Some(d) = (0..x.ndim()).find(|&d| x.strides()[d] == 0 && x.shape()[d] > 1) {
            return Err(Error::value(
                "gradcheck",
                format!(
                    "input {k} is a broadcast view (axis {d} has stride 0): perturbing one element \
                     would move all its aliases; pass a contiguous tensor and broadcast inside f"
                ),
            ));
        }
    }
    Ok(())
}

/// f at the given inputs, flattened. The inputs are leaves, as f may itself
/// differentiate (gradgradcheck's f is a VJP).
fn eval(f: &Function<'_>, xs: &[Tensor<f64>]) -> Result<Vec<f64>> {
    let v: Vec<Var<f64>> = xs.iter().map(|x| Var::leaf(x.clone())).collect();
    Ok(f(&v)?.value().to_vec())
}

/// `x` with `delta · dir` added (dir given as logical-order values).
fn shifted(x: &Tensor<f64>, dir: &[f64], delta: f64) -> Result<Tensor<f64>> {
    let v: Vec<f64> = x
        .to_vec()
        .iter()
        .zip(dir)
        .map(|(a, d)| a + delta * d)
        .collect();
    Tensor::from_vec(v, x.shape())
}

fn compare(
    analytic: f64,
    numeric: f64,
    o: &GradcheckOptions,
    what: impl Fn() -> String,
) -> Result<f64> {
    let err = (analytic - numeric).abs();
    if err.is_nan() || err > o.atol + o.rtol * numeric.abs() {
        return Err(Error::numerical(
            "gradcheck",
            format!(
                "{}: analytic {analytic:e} vs numerical {numeric:e} (atol {}, rtol {})",
                what(),
                o.atol,
                o.rtol
            ),
        ));
    }
    Ok(err)
}

/// Compares the analytic derivatives of `f` at `inputs` with central differences.
///
/// Small problems compare the full Jacobian, entry by entry; larger ones check
/// ⟨J t, c⟩ = ⟨t, Jᵀ c⟩ for random directions t and cotangents c, with J t by finite
/// differences. Inputs may be non-contiguous (the analytic pass sees their layout);
/// broadcast views are refused, as their aliased elements cannot be perturbed one at
/// a time.
///
/// ```
/// use autograd::{gradcheck, record, GradcheckOptions, Var};
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// let x = Tensor::<f64>::from_vec(vec![0.3, -1.2, 2.0], &[3])?;
/// let f = |p: &[Var<f64>]| p[0].tanh()?.mul(&p[0])?.sum_all();
/// let report = gradcheck(f, &[x.clone()], &GradcheckOptions::strict())?;
/// assert!(report.full_jacobian && report.checks == 3);
/// assert!(report.max_abs_error < 1e-8);
/// // A custom op whose backward rule is off by a factor of two is caught.
/// let wrong = |p: &[Var<f64>]| {
///     record("double", &[&p[0]], p[0].value().mul_scalar(2.0), |c| {
///         Ok(vec![Some(c.grad.mul_scalar(4.0)?)])
///     })?
///     .sum_all()
/// };
/// let e = gradcheck(wrong, &[x], &GradcheckOptions::default()).unwrap_err();
/// assert!(e.to_string().starts_with("gradcheck: d output[0] / d input 0[0]"), "{e}");
/// # Ok(())
/// # }
/// ```
pub fn gradcheck(
    f: impl Fn(&[Var<f64>]) -> Result<Var<f64>>,
    inputs: &[Tensor<f64>],
    opts: &GradcheckOptions,
) -> Result<GradcheckReport> {
    check_first_derivatives(&f, inputs, opts)
}

/// [`gradcheck`]'s body, compiled once here rather than once per closure in every
/// crate that calls it (each test's closure would otherwise instantiate all of it:
/// a fifth of the autograd test suite's machine code).
fn check_first_derivatives(
    f: &Function<'_>,
    inputs: &[Tensor<f64>],
    opts: &GradcheckOptions,
) -> Result<GradcheckReport> {
    refuse_broadcast(inputs)?;
    let leaves: Vec<Var<f64>> = inputs.iter().map(|x| Var::leaf(x.clone())).collect();
    let refs: Vec<&Var<f64>> = leaves.iter().collect();
    let y = f(&leaves)?;
    let nout = y.numel();
    let nin: usize = inputs.iter().map(|x| x.numel()).sum();
    let eps = opts.eps;
    let mut report = GradcheckReport {
        checks: 0,
        max_abs_error: 0.0,
        full_jacobian: nin.saturating_mul(nout) <= opts.full_jacobian_limit,
    };
    if report.full_jacobian {
        // Analytic rows: one VJP per output element.
        let mut rows = Vec::with_capacity(nout);
        for i in 0..nout {
            let mut e = vec![0.0; nout];
            e[i] = 1.0;
            let c = Var::constant(Tensor::from_vec(e, y.shape())?);
            let g = grad(&[&y], &refs, Some(&[&c]), false)?;
            rows.push(g.iter().map(|v| v.value().to_vec()).collect::<Vec<_>>());
        }
        for (k, x) in inputs.iter().enumerate() {
            for j in 0..x.numel() {
                let mut dir = vec![0.0; x.numel()];
                dir[j] = 1.0;
                let mut plus = inputs.to_vec();
                plus[k] = shifted(x, &dir, eps)?;
                let mut minus = inputs.to_vec();
                minus[k] = shifted(x, &dir, -eps)?;
                let (fp, fm) = (eval(f, &plus)?, eval(f, &minus)?);
                for i in 0..nout {
                    let numeric = (fp[i] - fm[i]) / (2.0 * eps);
                    let err = compare(rows[i][k][j], numeric, opts, || {
                        format!("d output[{i}] / d input {k}[{j}]")
                    })?;
                    report.max_abs_error = report.max_abs_error.max(err);
                    report.checks += 1;
                }
            }
        }
        return Ok(report);
    }
    let mut rng = Rng::new(opts.seed);
    for r in 0..opts.directions {
        let ts: Vec<Vec<f64>> = inputs
            .iter()
            .map(|x| (0..x.numel()).map(|_| rng.normal()).collect())
            .collect();
        let c: Vec<f64> = (0..nout).map(|_| rng.normal()).collect();
        let plus = inputs
            .iter()
            .zip(&ts)
            .map(|(x, t)| shifted(x, t, eps))
            .collect::<Result<Vec<_>>>()?;
        let minus = inputs
            .iter()
            .zip(&ts)
            .map(|(x, t)| shifted(x, t, -eps))
            .collect::<Result<Vec<_>>>()?;
        let (fp, fm) = (eval(f, &plus)?, eval(f, &minus)?);
        let numeric: f64 = (0..nout)
            .map(|i| (fp[i] - fm[i]) / (2.0 * eps) * c[i])
            .sum();
        let cv = Var::constant(Tensor::from_vec(c, y.shape())?);
        let g = grad(&[&y], &refs, Some(&[&cv]), false)?;
        let analytic: f64 = g
            .iter()
            .zip(&ts)
            .map(|(gk, t)| {
                gk.value()
                    .to_vec()
                    .iter()
                    .zip(t)
                    .map(|(a, b)| a * b)
                    .sum::<f64>()
            })
            .sum();
        let err = compare(analytic, numeric, opts, || {
            format!("random direction {r}: ⟨t, Jᵀc⟩ vs ⟨Jt, c⟩")
        })?;
        report.max_abs_error = report.max_abs_error.max(err);
        report.checks += 1;
    }
    Ok(report)
}

/// Checks second derivatives: `gradcheck` of x ↦ Jᵀ(x)·u for a fixed random
/// cotangent u, where Jᵀu comes from a recorded (`create_graph`) backward pass. This
/// exercises the backward rules' own backward rules.
pub fn gradgradcheck(
    f: impl Fn(&[Var<f64>]) -> Result<Var<f64>>,
    inputs: &[Tensor<f64>],
    opts: &GradcheckOptions,
) -> Result<GradcheckReport> {
    check_second_derivatives(&f, inputs, opts)
}

/// [`gradgradcheck`]'s body, compiled once (as [`check_first_derivatives`]).
fn check_second_derivatives(
    f: &Function<'_>,
    inputs: &[Tensor<f64>],
    opts: &GradcheckOptions,
) -> Result<GradcheckReport> {
    refuse_broadcast(inputs)?;
    let shape = mode::no_grad(|| {
        let v: Vec<Var<f64>> = inputs.iter().map(|x| Var::constant(x.clone())).collect();
        f(&v).map(|y| y.shape().to_vec())
    })?;
    // The cotangent u is drawn once, so x ↦ Jᵀ(x)u is a fixed function.
    let mut rng = Rng::new(opts.seed ^ 0x9e37_79b9_7f4a_7c15);
    let u = Tensor::<f64>::rand_normal(&shape, 0.0, 1.0, &mut rng)?;
    let vjp = move |xs: &[Var<f64>]| -> Result<Var<f64>> {
        let y = f(xs)?;
        let uv = Var::constant(u.clone());
        let refs: Vec<&Var<f64>> = xs.iter().collect();
        let g = grad(&[&y], &refs, Some(&[&uv]), true)?;
        let flat = g.iter().map(|v| v.flatten()).collect::<Result<Vec<_>>>()?;
        Var::cat(&flat.iter().collect::<Vec<_>>(), 0)
    };
    check_first_derivatives(&vjp, inputs, opts)
}
