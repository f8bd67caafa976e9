//! Curvature-vector products by higher-order autograd: the Fisher (the generalised
//! Gauss-Newton matrix of the cross-entropy, which for a softmax output equals the
//! Fisher of the model's predictive distribution; summed over the batch as the
//! authors' NGD does, or averaged) and the Hessian, plus dense
//! Jacobians and curvature matrices for tiny networks.

use autograd::{grad, Var};
use nn::Param;
use tensor::{error::fmt_shape, Element, Error, Result, Tensor};

/// Which curvature defines the quadratic model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Geometry {
    /// Natural gradient as the authors compute it (the default): their terminal
    /// adjoint p_N = −softmax(x_N) carries no 1/B, so the curvature is the Fisher
    /// summed over the batch, Σ_b J_bᵀ(diag p_b − p_b p_bᵀ)J_b = B × the mean Fisher,
    /// while the gradient is that of the mean cross-entropy. Its optimal U is 1/B
    /// times [`Geometry::MeanFisher`]'s.
    Fisher,
    /// The Fisher of the mean cross-entropy (its Gauss-Newton matrix), consistent
    /// with the mean gradient: the optimal U is the natural-gradient step's own.
    MeanFisher,
    /// Newton: the Hessian of the mean loss.
    Newton,
}

/// How the output Hessian of the cross-entropy adds up over a batch of B rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchScale {
    /// Summed over the rows (the authors' NGD curvature).
    Sum,
    /// Averaged over the rows (the Hessian of the mean loss).
    Mean,
}

fn leaves<T: Element>(params: &[Param<T>]) -> Vec<Var<T>> {
    params.iter().map(|p| p.var()).collect()
}

fn check_aligned<T: Element>(op: &'static str, params: &[Param<T>], v: &[Tensor<T>]) -> Result<()> {
    if v.len() != params.len()
        || params
            .iter()
            .zip(v)
            .any(|(p, t)| t.shape() != p.shape().as_slice())
    {
        return Err(Error::shape(
            op,
            format!(
                "{} direction tensors for {} parameters (or mismatched shapes)",
                v.len(),
                params.len()
            ),
        ));
    }
    Ok(())
}

/// The output Hessian of the cross-entropy applied to `z` (logits `[B, C]`):
/// (diag p − ppᵀ) z per row, with p = softmax(logits), divided by B for
/// [`BatchScale::Mean`].
pub fn softmax_hessian_product<T: Element>(
    logits: &Tensor<T>,
    z: &Tensor<T>,
    scale: BatchScale,
) -> Result<Tensor<T>> {
    if logits.ndim() != 2 || logits.shape() != z.shape() {
        return Err(Error::shape(
            "softmax_hessian_product",
            format!(
                "logits {} and direction {} must both be [B, C]",
                fmt_shape(logits.shape()),
                fmt_shape(z.shape())
            ),
        ));
    }
    let p = logits.softmax(-1)?;
    let pz = p.mul(z)?;
    let h = pz.sub(&p.mul(&pz.sum(&[-1], true)?)?)?;
    Ok(match scale {
        BatchScale::Sum => h,
        BatchScale::Mean => h.div_scalar(logits.shape()[0] as f64),
    })
}

/// G v for the Fisher of a softmax output (the cross-entropy's Gauss-Newton matrix):
/// Jᵀ H_out J v, summed or averaged over the batch, where `logits` were computed from
/// the parameters' current leaves.
pub fn fisher_vector_product<T: Element>(
    params: &[Param<T>],
    logits: &Var<T>,
    v: &[Tensor<T>],
    scale: BatchScale,
) -> Result<Vec<Tensor<T>>> {
    CurvatureProducts::fisher(params, logits, scale)?.apply(v)
}

/// H v for the Hessian of `loss` (computed from the parameters' current leaves).
pub fn hessian_vector_product<T: Element>(
    params: &[Param<T>],
    loss: &Var<T>,
    v: &[Tensor<T>],
) -> Result<Vec<Tensor<T>>> {
    CurvatureProducts::hessian(params, loss)?.apply(v)
}

/// Curvature-vector products at fixed parameters, for many directions: the part of
/// each product that does not depend on the direction — the recorded first backward
/// pass (Jᵀu for the Fisher, ∇L for the Hessian), over the forward pass it was
/// built on — is built once and serves every product. A refresh of LLQR's U takes
/// one product per inner step (50 by default), each of which otherwise recomputed
/// the forward pass and the recorded backward pass. Each product performs the same
/// operations either way, so its value is the same to the bit.
pub struct CurvatureProducts<T: Element> {
    op: &'static str,
    params: Vec<Param<T>>,
    leaves: Vec<Var<T>>,
    /// The recorded first backward pass: Jᵀu for the Fisher, ∇L for the Hessian.
    first: Vec<Var<T>>,
    /// For the Fisher, what its products also need (`None` for the Hessian).
    fisher: Option<FisherParts<T>>,
}

/// The Fisher's own parts of [`CurvatureProducts`].
struct FisherParts<T: Element> {
    logits: Var<T>,
    /// The zero leaf u of Jᵀu: J v is ∂⟨Jᵀu, v⟩/∂u.
    u: Var<T>,
    scale: BatchScale,
}

impl<T: Element> CurvatureProducts<T> {
    /// Products with the Fisher of the softmax of `logits` (computed from the
    /// parameters' current leaves), summed or averaged over the batch.
    pub fn fisher(params: &[Param<T>], logits: &Var<T>, scale: BatchScale) -> Result<Self> {
        let leaves = leaves(params);
        let refs: Vec<&Var<T>> = leaves.iter().collect();
        let u = Var::leaf(Tensor::zeros(logits.shape())?);
        let first = grad(&[logits], &refs, Some(&[&u]), true)?;
        Ok(CurvatureProducts {
            op: "fisher_vector_product",
            params: params.to_vec(),
            leaves,
            first,
            fisher: Some(FisherParts {
                logits: logits.clone(),
                u,
                scale,
            }),
        })
    }

    /// Products with the Hessian of the scalar `loss` (computed from the parameters'
    /// current leaves).
    pub fn hessian(params: &[Param<T>], loss: &Var<T>) -> Result<Self> {
        let leaves = leaves(params);
        let refs: Vec<&Var<T>> = leaves.iter().collect();
        let first = grad(&[loss], &refs, None, true)?;
        Ok(CurvatureProducts {
            op: "hessian_vector_product",
            params: params.to_vec(),
            leaves,
            first,
            fisher: None,
        })
    }

    /// The curvature times `v` (one tensor per parameter, shaped like it).
    pub fn apply(&self, v: &[Tensor<T>]) -> Result<Vec<Tensor<T>>> {
        check_aligned(self.op, &self.params, v)?;
        let refs: Vec<&Var<T>> = self.leaves.iter().collect();
        let vv: Vec<Var<T>> = v.iter().map(|t| Var::constant(t.clone())).collect();
        let cots: Vec<&Var<T>> = vv.iter().collect();
        let first: Vec<&Var<T>> = self.first.iter().collect();
        let products = match &self.fisher {
            // Jᵀ H_out J v, with J v from the recorded Jᵀu.
            Some(f) => {
                let jv = grad(&first, &[&f.u], Some(&cots), false)?.remove(0);
                let w = softmax_hessian_product(f.logits.value(), jv.value(), f.scale)?;
                grad(&[&f.logits], &refs, Some(&[&Var::constant(w)]), false)?
            }
            // The Hessian: ∂⟨∇L, v⟩/∂θ.
            None => grad(&first, &refs, Some(&cots), false)?,
        };
        Ok(products.into_iter().map(|g| g.value().clone()).collect())
    }
}

/// Splits a flat vector into tensors shaped like the parameters.
pub fn unflatten<T: Element>(params: &[Param<T>], flat: &[T]) -> Result<Vec<Tensor<T>>> {
    let mut out = Vec::with_capacity(params.len());
    let mut k = 0;
    for p in params {
        let shape = p.shape();
        let n: usize = shape.iter().product();
        out.push(Tensor::from_vec(flat[k..k + n].to_vec(), &shape)?);
        k += n;
    }
    Ok(out)
}

/// Concatenates tensors into a flat vector.
pub fn flatten<T: Element>(ts: &[Tensor<T>]) -> Vec<T> {
    ts.iter().flat_map(|t| t.to_vec()).collect()
}

/// The dense P×P curvature matrix (P = total parameters) by applying `gvp` to every
/// basis vector: for tiny networks and tests only.
pub fn dense_curvature<T: Element>(
    params: &[Param<T>],
    gvp: &super::Gvp<'_, T>,
) -> Result<Tensor<T>> {
    let total: usize = params
        .iter()
        .map(|p| p.shape().iter().product::<usize>())
        .sum();
    let mut cols = Vec::with_capacity(tensor::layout::checked_numel(
        "dense_curvature",
        &[total, total],
    )?);
    for i in 0..total {
        let mut e = vec![T::zero(); total];
        e[i] = T::one();
        cols.extend(flatten(&gvp(&unflatten(params, &e)?)?));
    }
    // Column i was written as row i; the curvature is symmetric, transpose anyway.
    Ok(Tensor::from_vec(cols, &[total, total])?.t()?.contiguous())
}
