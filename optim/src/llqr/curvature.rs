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

/// J v: the directional derivative of `out` (computed from the parameters' current
/// leaves) along `v`, by the double-VJP trick.
pub fn jvp_params<T: Element>(
    params: &[Param<T>],
    out: &Var<T>,
    v: &[Tensor<T>],
) -> Result<Tensor<T>> {
    check_aligned("jvp_params", params, v)?;
    let xs = leaves(params);
    let refs: Vec<&Var<T>> = xs.iter().collect();
    let u = Var::leaf(Tensor::zeros(out.shape())?);
    let jt_u = grad(&[out], &refs, Some(&[&u]), true)?;
    let vv: Vec<Var<T>> = v.iter().map(|t| Var::constant(t.clone())).collect();
    let outs: Vec<&Var<T>> = jt_u.iter().collect();
    let cots: Vec<&Var<T>> = vv.iter().collect();
    Ok(grad(&outs, &[&u], Some(&cots), false)?
        .remove(0)
        .value()
        .clone())
}

/// Jᵀ w: the parameters' vector-Jacobian product of `out` with cotangent `w`.
pub fn vjp_params<T: Element>(
    params: &[Param<T>],
    out: &Var<T>,
    w: &Tensor<T>,
) -> Result<Vec<Tensor<T>>> {
    let xs = leaves(params);
    let refs: Vec<&Var<T>> = xs.iter().collect();
    let wv = Var::constant(w.clone());
    Ok(grad(&[out], &refs, Some(&[&wv]), false)?
        .into_iter()
        .map(|g| g.value().clone())
        .collect())
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
    let jv = jvp_params(params, logits, v)?;
    let w = softmax_hessian_product(logits.value(), &jv, scale)?;
    vjp_params(params, logits, &w)
}

/// H v for the Hessian of `loss` (computed from the parameters' current leaves).
pub fn hessian_vector_product<T: Element>(
    params: &[Param<T>],
    loss: &Var<T>,
    v: &[Tensor<T>],
) -> Result<Vec<Tensor<T>>> {
    check_aligned("hessian_vector_product", params, v)?;
    let xs = leaves(params);
    let refs: Vec<&Var<T>> = xs.iter().collect();
    let g = grad(&[loss], &refs, None, true)?;
    let vv: Vec<Var<T>> = v.iter().map(|t| Var::constant(t.clone())).collect();
    let outs: Vec<&Var<T>> = g.iter().collect();
    let cots: Vec<&Var<T>> = vv.iter().collect();
    Ok(grad(&outs, &refs, Some(&cots), false)?
        .into_iter()
        .map(|h| h.value().clone())
        .collect())
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
    let mut cols = Vec::with_capacity(total * total);
    for i in 0..total {
        let mut e = vec![T::zero(); total];
        e[i] = T::one();
        cols.extend(flatten(&gvp(&unflatten(params, &e)?)?));
    }
    // Column i was written as row i; the curvature is symmetric, transpose anyway.
    Ok(Tensor::from_vec(cols, &[total, total])?.t()?.contiguous())
}
