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

fn explain_singular(op: &'static str, e: Error) -> Error {
    match e {
        Error::Numerical { detail, .. } => Error::numerical(
            op,
            format!("the regularised Gram matrix is not positive definite (rank-deficient features with too small a regulariser): {detail}"),
        ),
        other => other,
    }
}

/// The proximal last layer (YᵀΦ + λW_t)(ΦᵀΦ + λI)⁻¹ for λ > 0, in the given form.
pub fn proximal<T: Element>(
    phi: &Tensor<T>,
    y: &Tensor<T>,
    w_prev: &Tensor<T>,
    lambda: f64,
    form: SolveForm,
) -> Result<Tensor<T>> {
    let (b, d, _) = check("proximal", phi, y, Some(w_prev), lambda, false)?;
    solve(phi, y, Some(w_prev), lambda, form.resolve(b, d))
        .map_err(|e| explain_singular("proximal", e))
}

/// The ridge last layer YᵀΦ(ΦᵀΦ + βI)⁻¹ for β ≥ 0 (β = 0: least squares, which
/// needs features of full column rank).
pub fn ridge<T: Element>(
    phi: &Tensor<T>,
    y: &Tensor<T>,
    beta: f64,
    form: SolveForm,
) -> Result<Tensor<T>> {
    let (b, d, _) = check("ridge", phi, y, None, beta, true)?;
    let form = if beta == 0.0 {
        SolveForm::Primal
    } else {
        form.resolve(b, d)
    };
    solve(phi, y, None, beta, form).map_err(|e| explain_singular("ridge", e))
}

fn solve<T: Element>(
    phi: &Tensor<T>,
    y: &Tensor<T>,
    w_prev: Option<&Tensor<T>>,
    reg: f64,
    form: SolveForm,
) -> Result<Tensor<T>> {
    match form {
        SolveForm::Dual => {
            // W = W_t + Rᵀ (ΦΦᵀ + λI)⁻¹ Φ, R = Y − Φ W_tᵀ.
            let r = match w_prev {
                Some(w) => y.sub(&phi.matmul(&w.t()?)?)?,
                None => y.clone(),
            };
            let gram = add_diag(&phi.matmul(&phi.t()?)?, reg)?;
            let a = gram.solve_spd(&r)?;
            let update = a.t()?.matmul(phi)?;
            match w_prev {
                Some(w) => w.add(&update),
                None => Ok(update),
            }
        }
        _ => {
            // (ΦᵀΦ + λI) Wᵀ = ΦᵀY + λW_tᵀ.
            let gram = add_diag(&phi.t()?.matmul(phi)?, reg)?;
            let mut rhs = phi.t()?.matmul(y)?;
            if let Some(w) = w_prev {
                rhs = rhs.add(&w.t()?.mul_scalar(reg))?;
            }
            Ok(gram.solve_spd(&rhs)?.t()?.contiguous())
        }
    }
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
