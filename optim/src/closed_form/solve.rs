//! The closed-form last layer: ridge and proximal ridge solutions by Cholesky, in
//! the primal (d×d) or dual (b×b) form.
//!
//! Conventions: features Φ are `[b, d]` (a row per sample), targets Y are `[b, k]`,
//! the last layer W is `[k, d]` (PyTorch's `Linear` layout, prediction Φ Wᵀ), and the
//! objectives are sums over the batch:
//!
//! - ridge: W* = argmin Σᵢ‖yᵢ − W φᵢ‖² + β‖W‖²_F = YᵀΦ (ΦᵀΦ + βI)⁻¹;
//! - proximal: W* = argmin Σᵢ‖yᵢ − W φᵢ‖² + λ‖W − W_t‖²_F = (YᵀΦ + λW_t)(ΦᵀΦ + λI)⁻¹.
//!
//! (With a mean over the batch instead of a sum, use λ·b.) Ridge is the proximal
//! solution with W_t = 0. The dual form W = W_t + Rᵀ(ΦΦᵀ + λI_b)⁻¹Φ, R = Y − ΦW_tᵀ,
//! gives the same W with a b×b solve instead of a d×d one.
//!
//! Every solve runs in f64 whatever the element type (features, targets and W_t are
//! cast up, W cast down), so an f32 model's Gram matrix does not lose half its
//! digits. The Cholesky factor must pass a pivot test relative to the matrix's scale
//! (every squared pivot above n·ε·max Aᵢᵢ); when it does not, the solve is retried
//! once with [`JITTER`] × mean Aᵢᵢ added to the diagonal, then falls back to least
//! squares by QR on the stacked system [Φ; √λ I] Wᵀ ≈ [Y; √λ W_tᵀ], which needs no
//! Gram matrix. [`Solution::path`] records which ran. With a regulariser of 0 (plain
//! least squares) there is no jitter: rank-deficient features are an error naming
//! their rank, never a huge W.

use autograd::Var;
use tensor::{error::fmt_shape, Element, Error, Result, Tensor};

/// Which linear system to solve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SolveForm {
    /// The cheaper of the two for the batch: dual when b < d, primal otherwise.
    #[default]
    Auto,
    /// (ΦᵀΦ + λI) Wᵀ = ΦᵀY + λW_tᵀ, a d×d system.
    Primal,
    /// (ΦΦᵀ + λI_b) A = R, W = W_t + AᵀΦ, a b×b system.
    Dual,
}

impl SolveForm {
    /// The form actually used for a batch of `b` samples with `d` features.
    pub fn resolve(self, b: usize, d: usize) -> SolveForm {
        match self {
            SolveForm::Auto if b < d => SolveForm::Dual,
            SolveForm::Auto => SolveForm::Primal,
            other => other,
        }
    }
}

/// Checks the shapes and values of a solve and returns (b, d, k).
fn check<T: Element>(
    op: &'static str,
    phi: &Tensor<T>,
    y: &Tensor<T>,
    w_prev: Option<&Tensor<T>>,
    reg: f64,
    allow_zero: bool,
) -> Result<(usize, usize, usize)> {
    if phi.ndim() != 2 || y.ndim() != 2 {
        return Err(Error::shape(
            op,
            format!(
                "needs features [b, d] and targets [b, k], got {} and {}",
                fmt_shape(phi.shape()),
                fmt_shape(y.shape())
            ),
        ));
    }
    let (b, d, k) = (phi.shape()[0], phi.shape()[1], y.shape()[1]);
    if y.shape()[0] != b {
        return Err(Error::shape(
            op,
            format!("{b} feature rows but {} target rows", y.shape()[0]),
        ));
    }
    if b == 0 {
        return Err(Error::shape(op, "the batch is empty"));
    }
    if let Some(w) = w_prev {
        if w.shape() != [k, d] {
            return Err(Error::shape(
                op,
                format!(
                    "the previous last layer has shape {}, expected [{k}, {d}]",
                    fmt_shape(w.shape())
                ),
            ));
        }
        if !w.all_finite() {
            return Err(Error::non_finite(
                op,
                "the previous last layer has a NaN or infinity",
            ));
        }
    }
    let ok = reg.is_finite() && (reg > 0.0 || (allow_zero && reg == 0.0));
    if !ok {
        return Err(Error::value(
            op,
            format!(
                "the regulariser must be finite and {}, got {reg}",
                if allow_zero { "≥ 0" } else { "> 0" }
            ),
        ));
    }
    if !phi.all_finite() || !y.all_finite() {
        return Err(Error::non_finite(
            op,
            "the features or targets have a NaN or infinity",
        ));
    }
    Ok((b, d, k))
}

/// `m + reg·I`.
fn add_diag<T: Element>(m: &Tensor<T>, reg: f64) -> Result<Tensor<T>> {
    let n = m.shape()[0];
    m.add(&Tensor::<T>::eye(n)?.mul_scalar(reg))
}

/// The jitter of the second attempt, relative to the mean diagonal of the
/// regularised Gram matrix: 1e-10, about 5·10⁵ f64 ulps, far below any regulariser a
/// user sets on purpose.
pub const JITTER: f64 = 1e-10;

/// Which path a closed-form solve took.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SolvePath {
    /// Cholesky of the regularised Gram matrix passed the pivot test.
    Cholesky,
    /// Cholesky passed after adding this much to the diagonal.
    Jittered(f64),
    /// Least squares by QR on the stacked system.
    Qr,
}

/// A closed-form last layer and the path that produced it.
#[derive(Clone, Debug)]
pub struct Solution<T: Element> {
    /// W `[k, d]`.
    pub w: Tensor<T>,
    /// How it was solved.
    pub path: SolvePath,
}

/// The Cholesky factor of `a` if every squared pivot exceeds n·ε·max Aᵢᵢ.
fn trusted_cholesky(a: &Tensor<f64>) -> Option<Tensor<f64>> {
    let n = a.shape()[0];
    let diag: Vec<f64> = (0..n).map(|i| a.get(&[i, i]).unwrap_or(f64::NAN)).collect();
    let scale = diag.iter().cloned().fold(0.0, f64::max);
    let l = a.cholesky().ok()?;
    let tol = n as f64 * f64::EPSILON * scale;
    (0..n)
        .all(|i| l.get(&[i, i]).is_ok_and(|p| p * p > tol))
        .then_some(l)
}

/// Solves (G + reg·I) X = rhs for a symmetric positive semi-definite Gram matrix G:
/// Cholesky, then once with jitter (reg > 0 only); `None` when both fail the pivot
/// test.
fn gram_solve(
    gram: &Tensor<f64>,
    reg: f64,
    rhs: &Tensor<f64>,
) -> Result<Option<(Tensor<f64>, SolvePath)>> {
    let a = add_diag(gram, reg)?;
    if let Some(l) = trusted_cholesky(&a) {
        return Ok(Some((l.cholesky_solve(rhs)?, SolvePath::Cholesky)));
    }
    if reg == 0.0 {
        return Ok(None);
    }
    let n = a.shape()[0];
    let mean_diag = (0..n).map(|i| a.get(&[i, i])).sum::<Result<f64>>()? / n as f64;
    let jitter = JITTER * mean_diag;
    match trusted_cholesky(&add_diag(&a, jitter)?) {
        Some(l) => Ok(Some((l.cholesky_solve(rhs)?, SolvePath::Jittered(jitter)))),
        None => Ok(None),
    }
}

/// The numerical rank of Φ `[b, d]`: the diagonal entries of R (Φ = QR, or of Φᵀ when
/// b < d) above max|Rᵢᵢ|·max(b, d)·ε.
fn rank(phi: &Tensor<f64>) -> Result<usize> {
    let m = if phi.shape()[0] >= phi.shape()[1] {
        phi.clone()
    } else {
        phi.t()?.contiguous()
    };
    let (_, r) = m.qr()?;
    let n = r.shape()[1];
    let diag: Vec<f64> = (0..n)
        .map(|i| r.get(&[i, i]).map(f64::abs))
        .collect::<Result<_>>()?;
    let big = diag.iter().cloned().fold(0.0, f64::max);
    let tol = big * m.shape()[0].max(n) as f64 * f64::EPSILON;
    Ok(diag.iter().filter(|&&d| d > tol).count())
}

/// The proximal last layer (YᵀΦ + λW_t)(ΦᵀΦ + λI)⁻¹ for λ > 0, in the given form.
///
/// ```
/// use optim::closed_form::{proximal, proximal_objective, SolveForm};
/// use tensor::{Rng, Tensor};
/// # fn main() -> tensor::Result<()> {
/// let mut rng = Rng::new(0);
/// let phi = Tensor::<f64>::rand_normal(&[10, 4], 0.0, 1.0, &mut rng)?;
/// let y = Tensor::rand_normal(&[10, 2], 0.0, 1.0, &mut rng)?;
/// let w_prev = Tensor::rand_normal(&[2, 4], 0.0, 1.0, &mut rng)?;
/// let w = proximal(&phi, &y, &w_prev, 3.0, SolveForm::Auto)?;
/// // W minimises Σ‖yᵢ − Wφᵢ‖² + λ‖W − W_prev‖²: any nudge raises the objective.
/// let best = proximal_objective(&phi, &y, &w, &w_prev, 3.0)?;
/// let nudge = Tensor::rand_normal(&[2, 4], 0.0, 1e-3, &mut rng)?;
/// assert!(proximal_objective(&phi, &y, &w.add(&nudge)?, &w_prev, 3.0)? > best);
/// // A very large λ keeps W at W_prev; λ must be positive.
/// let stiff = proximal(&phi, &y, &w_prev, 1e9, SolveForm::Auto)?;
/// assert!(stiff.sub(&w_prev)?.abs().max_all()? < 1e-6);
/// assert!(proximal(&phi, &y, &w_prev, 0.0, SolveForm::Auto).is_err());
/// # Ok(())
/// # }
/// ```
pub fn proximal<T: Element>(
    phi: &Tensor<T>,
    y: &Tensor<T>,
    w_prev: &Tensor<T>,
    lambda: f64,
    form: SolveForm,
) -> Result<Tensor<T>> {
    Ok(proximal_solution(phi, y, w_prev, lambda, form)?.w)
}

/// [`proximal`], with the path the solve took.
pub fn proximal_solution<T: Element>(
    phi: &Tensor<T>,
    y: &Tensor<T>,
    w_prev: &Tensor<T>,
    lambda: f64,
    form: SolveForm,
) -> Result<Solution<T>> {
    let (b, d, _) = check("proximal", phi, y, Some(w_prev), lambda, false)?;
    solve("proximal", phi, y, Some(w_prev), lambda, form.resolve(b, d))
}

/// The ridge last layer YᵀΦ(ΦᵀΦ + βI)⁻¹ for β ≥ 0 (β = 0: least squares, which
/// needs features of full column rank).
///
/// ```
/// use optim::closed_form::{ridge, SolveForm};
/// use tensor::{Rng, Tensor};
/// # fn main() -> tensor::Result<()> {
/// let phi = Tensor::<f64>::rand_normal(&[20, 3], 0.0, 1.0, &mut Rng::new(0))?; // [b, d]
/// let w_true = Tensor::from_vec(vec![1.0, -2.0, 0.5, 0.0, 3.0, 1.0], &[2, 3])?; // [k, d]
/// let y = phi.matmul(&w_true.t()?)?; // [b, k], noiseless
/// // β = 0 is least squares: the exact W comes back.
/// assert!(ridge(&phi, &y, 0.0, SolveForm::Auto)?.sub(&w_true)?.abs().max_all()? < 1e-10);
/// // β > 0 shrinks W; the primal (d×d) and dual (b×b) systems give the same W.
/// let primal = ridge(&phi, &y, 5.0, SolveForm::Primal)?;
/// assert!(primal.sub(&ridge(&phi, &y, 5.0, SolveForm::Dual)?)?.abs().max_all()? < 1e-10);
/// let norm = |w: &Tensor<f64>| w.square().sum_all().item();
/// assert!(norm(&primal)? < norm(&w_true)?);
/// # Ok(())
/// # }
/// ```
pub fn ridge<T: Element>(
    phi: &Tensor<T>,
    y: &Tensor<T>,
    beta: f64,
    form: SolveForm,
) -> Result<Tensor<T>> {
    Ok(ridge_solution(phi, y, beta, form)?.w)
}

/// [`ridge`], with the path the solve took.
pub fn ridge_solution<T: Element>(
    phi: &Tensor<T>,
    y: &Tensor<T>,
    beta: f64,
    form: SolveForm,
) -> Result<Solution<T>> {
    let (b, d, _) = check("ridge", phi, y, None, beta, true)?;
    let form = if beta == 0.0 {
        SolveForm::Primal
    } else {
        form.resolve(b, d)
    };
    solve("ridge", phi, y, None, beta, form)
}

fn solve<T: Element>(
    op: &'static str,
    phi: &Tensor<T>,
    y: &Tensor<T>,
    w_prev: Option<&Tensor<T>>,
    reg: f64,
    form: SolveForm,
) -> Result<Solution<T>> {
    let (phi, y) = (phi.cast::<f64>(), y.cast::<f64>());
    let w_prev = w_prev.map(|w| w.cast::<f64>());
    let (b, d) = (phi.shape()[0], phi.shape()[1]);
    let solved = match form {
        SolveForm::Dual => {
            // W = W_t + Rᵀ (ΦΦᵀ + λI)⁻¹ Φ, R = Y − Φ W_tᵀ.
            let r = match &w_prev {
                Some(w) => y.sub(&phi.matmul(&w.t()?)?)?,
                None => y.clone(),
            };
            gram_solve(&phi.matmul(&phi.t()?)?, reg, &r)?
                .map(|(a, path)| -> Result<_> {
                    let update = a.t()?.matmul(&phi)?;
                    let w = match &w_prev {
                        Some(w) => w.add(&update)?,
                        None => update,
                    };
                    Ok((w, path))
                })
                .transpose()?
        }
        _ => {
            // (ΦᵀΦ + λI) Wᵀ = ΦᵀY + λW_tᵀ.
            let mut rhs = phi.t()?.matmul(&y)?;
            if let Some(w) = &w_prev {
                rhs = rhs.add(&w.t()?.mul_scalar(reg))?;
            }
            gram_solve(&phi.t()?.matmul(&phi)?, reg, &rhs)?
                .map(|(wt, path)| Ok::<_, Error>((wt.t()?.contiguous(), path)))
                .transpose()?
        }
    };
    let (w, path) = match solved {
        Some(found) => found,
        None if reg == 0.0 => {
            let r = rank(&phi)?;
            if r < d {
                return Err(Error::numerical(
                    op,
                    format!(
                        "features [{b}, {d}] have rank {r} < {d}: least squares with no regulariser has no unique solution (use a positive one)"
                    ),
                ));
            }
            (phi.lstsq(&y)?.t()?.contiguous(), SolvePath::Qr)
        }
        None => {
            // min ‖[Φ; √λ I] Wᵀ − [Y; √λ W_tᵀ]‖², full column rank for λ > 0.
            let root = reg.sqrt();
            let a = Tensor::cat(&[&phi, &Tensor::<f64>::eye(d)?.mul_scalar(root)], 0)?;
            let target_prev = match &w_prev {
                Some(w) => w.t()?.mul_scalar(root),
                None => Tensor::zeros(&[d, y.shape()[1]])?,
            };
            let rhs = Tensor::cat(&[&y, &target_prev], 0)?;
            (a.lstsq(&rhs)?.t()?.contiguous(), SolvePath::Qr)
        }
    };
    if !w.all_finite() {
        return Err(Error::non_finite(op, "the solution has a NaN or infinity"));
    }
    Ok(Solution {
        w: w.cast::<T>(),
        path,
    })
}

/// The proximal solution as a differentiable function of the features (primal
/// form): for checking the envelope theorem, or for users who want to backpropagate
/// through the solve. `w_prev` is a constant.
pub fn proximal_var<T: Element>(
    phi: &Var<T>,
    y: &Var<T>,
    w_prev: &Tensor<T>,
    lambda: f64,
) -> Result<Var<T>> {
    check(
        "proximal_var",
        phi.value(),
        y.value(),
        Some(w_prev),
        lambda,
        false,
    )?;
    let d = phi.shape()[1];
    let eye = Var::constant(Tensor::<T>::eye(d)?.mul_scalar(lambda));
    let gram = phi.t()?.matmul(phi)?.add(&eye)?;
    let rhs = phi
        .t()?
        .matmul(y)?
        .add(&Var::constant(w_prev.t()?.mul_scalar(lambda)))?;
    gram.solve_spd(&rhs)?.t()
}

/// The ridge solution as a differentiable function of the features (primal form).
pub fn ridge_var<T: Element>(phi: &Var<T>, y: &Var<T>, beta: f64) -> Result<Var<T>> {
    check("ridge_var", phi.value(), y.value(), None, beta, true)?;
    let d = phi.shape()[1];
    let eye = Var::constant(Tensor::<T>::eye(d)?.mul_scalar(beta));
    let gram = phi.t()?.matmul(phi)?.add(&eye)?;
    gram.solve_spd(&phi.t()?.matmul(y)?)?.t()
}

/// Σᵢ‖yᵢ − W φᵢ‖² + λ‖W − W_t‖²_F (the proximal objective; W_t = 0 gives ridge).
pub fn proximal_objective<T: Element>(
    phi: &Tensor<T>,
    y: &Tensor<T>,
    w: &Tensor<T>,
    w_prev: &Tensor<T>,
    lambda: f64,
) -> Result<f64> {
    let fit = y
        .sub(&phi.matmul(&w.t()?)?)?
        .square()
        .sum_all()
        .item()?
        .as_f64();
    let prox = w.sub(w_prev)?.square().sum_all().item()?.as_f64();
    Ok(fit + lambda * prox)
}
