//! An upper bound for LLQR's learned U, outside the authors' method: the diagonal U
//! the inner objective converges to, set directly instead of learned by 50 steps.
//!
//! Averaged over gradients, J(U) = −gᵀUg + ½(Ug)ᵀ(G + δI)(Ug) with a diagonal U is
//! Σᵢ E(gᵢ²)·(−uᵢ + ½uᵢ²(Gᵢᵢ + δ)) plus cross terms uᵢuⱼE(gᵢgⱼ)Gᵢⱼ; without the cross
//! terms (a curvature that is nearly diagonal, or gradients whose coordinates are
//! nearly uncorrelated) its minimiser is uᵢ = 1/(Gᵢᵢ + δ) whatever the gradients'
//! second moments: the damped diagonal natural-gradient (or Newton) preconditioner.
//! The authors' inner step moves entry i at a rate ∝ gᵢ², so on small gradients 50
//! steps at 10⁻³ leave U near I; this refit is what their U would reach if it could
//! converge. It is set scaled by δ, U = δ/(diag G + δ) ∈ (0, 1]: the scale 1/δ
//! changes from refresh to refresh (δ follows the curvature's trace) and would
//! change what the outer learning rate means with it, while scaled, a coordinate
//! without curvature keeps the outer step and a stiff one gets δ/Gᵢᵢ of it; the
//! outer rate (retuned for this U) absorbs the constant. diag G comes from Hutchinson's estimator with Rademacher probes v,
//! E(v ∘ Gv) = diag G, exact with one probe when G is diagonal; negative estimates
//! (sampling noise on entries with little curvature) count as 0.

use super::preconditioner::{Gvp, Preconditioner};
use tensor::{Element, Error, Result, Rng, Tensor};

/// How a refresh refits U.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Refit {
    /// The authors' inner solve ([`super::InnerSolve`]) from the current U, blended
    /// in by the EMA (the default).
    InnerSolve,
    /// Outside the authors' method (an upper bound): U set to
    /// δ/(diag Ĝ + δ), diag Ĝ from `probes` Hutchinson probes,
    /// δ = `relative_damping` · tr(Ĝ)/P, then blended in by the EMA (β = 0
    /// replaces U). The probes are drawn from `seed` and the step count, so a run
    /// is the same whatever the thread count and after a resume.
    ConvergedDiagonal {
        /// Curvature-vector products per refresh.
        probes: usize,
        /// δ as a fraction of the mean diagonal curvature.
        relative_damping: f64,
        /// Seed of the probes.
        seed: u64,
    },
}

impl Refit {
    /// The refit's settings checked: at least one probe and a positive, finite
    /// damping.
    pub fn check(&self) -> Result<()> {
        if let Refit::ConvergedDiagonal {
            probes,
            relative_damping,
            ..
        } = *self
        {
            if probes == 0 || !(relative_damping.is_finite() && relative_damping > 0.0) {
                return Err(Error::value(
                    "Refit::ConvergedDiagonal",
                    format!(
                        "probes must be at least 1 and relative_damping positive and finite, got {probes} and {relative_damping}"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Hutchinson's estimate of the curvature's diagonal, mean over `probes` Rademacher
/// probes v of v ∘ Gv, shaped like `like` (one tensor per parameter).
pub fn hutchinson_diagonal<T: Element>(
    like: &[Tensor<T>],
    gvp: &Gvp<'_, T>,
    probes: usize,
    rng: &mut Rng,
) -> Result<Vec<Tensor<T>>> {
    if probes == 0 {
        return Err(Error::value(
            "hutchinson_diagonal",
            "at least one probe is needed",
        ));
    }
    let mut sum: Vec<Tensor<T>> = like
        .iter()
        .map(|t| Tensor::zeros(t.shape()))
        .collect::<Result<_>>()?;
    for _ in 0..probes {
        let v: Vec<Tensor<T>> = like
            .iter()
            .map(|t| {
                Ok(Tensor::rand_bernoulli(t.shape(), 0.5, rng)?
                    .mul_scalar(2.0)
                    .add_scalar(-1.0))
            })
            .collect::<Result<_>>()?;
        let gv = gvp(&v)?;
        if gv.len() != v.len() {
            return Err(Error::shape(
                "hutchinson_diagonal",
                format!("{} products for {} directions", gv.len(), v.len()),
            ));
        }
        for ((s, v), gv) in sum.iter_mut().zip(&v).zip(&gv) {
            *s = s.add(&v.mul(gv)?)?;
        }
    }
    Ok(sum.iter().map(|s| s.div_scalar(probes as f64)).collect())
}

/// The converged diagonal U = δ/(max(d, 0) + δ) of a curvature diagonal `d`, with
/// δ = `relative_damping` · Σ max(d, 0) / P, as factor tensors (one per parameter)
/// for [`Preconditioner::with_factor_tensors`]. An error when `d` is not finite or
/// carries no curvature at all (δ would be 0), naming which.
pub fn converged_entries<T: Element>(
    d: &[Tensor<T>],
    relative_damping: f64,
) -> Result<Vec<Vec<Tensor<T>>>> {
    if let Some(k) = d.iter().position(|t| !t.all_finite()) {
        return Err(Error::numerical(
            "converged_diagonal",
            format!("the curvature's estimated diagonal is not finite in tensor {k}"),
        ));
    }
    let clipped: Vec<Tensor<T>> = d.iter().map(|t| t.relu()).collect();
    let (mut trace, mut count) = (0.0, 0usize);
    for t in &clipped {
        trace += t.sum_all().item()?.as_f64();
        count += t.numel();
    }
    let damping = relative_damping * trace / count.max(1) as f64;
    if !(damping.is_finite() && damping > 0.0) {
        return Err(Error::numerical(
            "converged_diagonal",
            format!(
                "the estimated curvature's trace is {trace} over {count} entries: no damping δ > 0 can be set from it"
            ),
        ));
    }
    Ok(clipped
        .iter()
        .map(|t| vec![t.add_scalar(damping).recip().mul_scalar(damping)])
        .collect())
}

/// `u` with its diagonal blocks replaced by the converged entries of the curvature
/// behind `gvp` (estimated on tensors shaped like `g`): see [`Refit::ConvergedDiagonal`].
pub fn converged_diagonal<T: Element>(
    u: &Preconditioner<T>,
    g: &[Tensor<T>],
    gvp: &Gvp<'_, T>,
    (probes, relative_damping): (usize, f64),
    rng: &mut Rng,
) -> Result<Preconditioner<T>> {
    let d = hutchinson_diagonal(g, gvp, probes, rng)?;
    u.with_factor_tensors(converged_entries(&d, relative_damping)?)
}
