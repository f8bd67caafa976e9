//! The exact layer-wise LQR step for tiny MLPs, as a reference: the network is a
//! chain x_{i+1} = f_i(θ_i, x_i); a parameter perturbation u_i = δθ_i drives the
//! linearised state δx_{i+1} = A_i δx_i + B_i u_i from δx_0 = 0, and minimising
//! Σ_i ½δ‖u_i‖² + cᵀδx_N + ½δx_Nᵀ Q_N δx_N (c = ∂L/∂x_N, Q_N the output Hessian of the
//! mean cross-entropy) by the Riccati recursion gives u* = −(G + δI)⁻¹ g with G the
//! Gauss-Newton/Fisher matrix. A_i and B_i are dense Jacobians, so this is for tiny
//! networks only.

use super::curvature::{softmax_hessian_product, BatchScale};
use autograd::{grad, Var};
use nn::{Linear, Mlp};
use tensor::{Error, Result, Tensor};

/// The dense Jacobian `[outputs, inputs]` of `f` at the leaves `at` (flattened and
/// concatenated in order).
/// A function of autograd leaves to one output variable.
type LeafFn<'a> = dyn Fn(&[Var<f64>]) -> Result<Var<f64>> + 'a;

fn jacobian(f: &LeafFn<'_>, at: &[Tensor<f64>]) -> Result<Tensor<f64>> {
    let leaves: Vec<Var<f64>> = at.iter().map(|t| Var::leaf(t.clone())).collect();
    let refs: Vec<&Var<f64>> = leaves.iter().collect();
    let y = f(&leaves)?;
    let (m, n) = (y.numel(), at.iter().map(|t| t.numel()).sum::<usize>());
    let mut rows = Vec::with_capacity(tensor::layout::checked_numel("jacobian", &[m, n])?);
    for k in 0..m {
        let mut e = vec![0.0; m];
        e[k] = 1.0;
        let c = Var::constant(Tensor::from_vec(e, y.shape())?);
        for g in grad(&[&y], &refs, Some(&[&c]), false)? {
            rows.extend(g.value().to_vec());
        }
    }
    Tensor::from_vec(rows, &[m, n])
}

/// The exact damped Gauss-Newton step −(G + δI)⁻¹ g of the mean cross-entropy of
/// `mlp` on (`x`, `labels`), by the Riccati sweep; returned per parameter, in the
/// MLP's parameter order (weight then bias, layer by layer).
pub fn exact_lqr_step(
    mlp: &Mlp<f64>,
    x: &Tensor<f64>,
    labels: &[usize],
    damping: f64,
) -> Result<Vec<Tensor<f64>>> {
    if !(damping > 0.0) {
        return Err(Error::value(
            "exact_lqr_step",
            format!("damping must be positive, got {damping}"),
        ));
    }
    let biases: Vec<&nn::Param<f64>> = mlp
        .layers()
        .iter()
        .enumerate()
        .map(|(i, l)| {
            l.bias.as_ref().ok_or_else(|| {
                Error::value(
                    "exact_lqr_step",
                    format!(
                        "layer {i} has no bias: the Riccati reference needs every layer biased"
                    ),
                )
            })
        })
        .collect::<Result<_>>()?;
    let n_layers = mlp.layers().len();
    let act = mlp.activation;
    let layer_fn = |i: usize| {
        move |x: &Var<f64>, w: &Var<f64>, b: &Var<f64>| -> Result<Var<f64>> {
            let h = Linear::apply(x, w, Some(b))?;
            if i + 1 < n_layers {
                act.apply(&h)
            } else {
                Ok(h)
            }
        }
    };
    // Forward pass: the states x_0 … x_N.
    let mut states = vec![x.clone()];
    for (i, l) in mlp.layers().iter().enumerate() {
        let next = autograd::no_grad(|| {
            layer_fn(i)(
                &Var::constant(states[i].clone()),
                &l.weight.var(),
                &biases[i].var(),
            )
        })?;
        states.push(next.value().clone());
    }
    // Terminal terms: c = ∂L/∂x_N and Q_N (block-diagonal over samples).
    let logits = states[n_layers].clone();
    let (b, classes) = (logits.shape()[0], logits.shape()[1]);
    let lv = Var::leaf(logits.clone());
    let loss = nn::loss::cross_entropy(&lv, labels, 0.0)?;
    let c = grad(&[&loss], &[&lv], None, false)?
        .remove(0)
        .value()
        .reshape(&[b * classes, 1])?;
    let dim = b * classes;
    let mut q = vec![0.0; tensor::layout::checked_numel("exact_lqr_step", &[dim, dim])?];
    for k in 0..dim {
        let mut e = vec![0.0; dim];
        e[k] = 1.0;
        let col = softmax_hessian_product(
            &logits,
            &Tensor::from_vec(e, &[b, classes])?,
            BatchScale::Mean,
        )?
        .to_vec();
        for (r, v) in col.into_iter().enumerate() {
            q[r * dim + k] = v;
        }
    }
    // Dynamics Jacobians.
    let mut a_mats = Vec::with_capacity(n_layers);
    let mut b_mats = Vec::with_capacity(n_layers);
    for (i, l) in mlp.layers().iter().enumerate() {
        let (w, bias) = (l.weight.value(), biases[i].value());
        let f = layer_fn(i);
        let (wc, bc) = (w.clone(), bias.clone());
        a_mats.push(jacobian(
            &|v: &[Var<f64>]| {
                f(
                    &v[0],
                    &Var::constant(wc.clone()),
                    &Var::constant(bc.clone()),
                )
            },
            &[states[i].clone()],
        )?);
        let xi = states[i].clone();
        b_mats.push(jacobian(
            &|v: &[Var<f64>]| f(&Var::constant(xi.clone()), &v[0], &v[1]),
            &[w, bias],
        )?);
    }
    // Backward Riccati sweep.
    let mut k = Tensor::from_vec(q, &[dim, dim])?;
    let mut lam = c;
    let mut stages = Vec::with_capacity(n_layers);
    for i in (0..n_layers).rev() {
        let (a, bm) = (&a_mats[i], &b_mats[i]);
        let p = bm.shape()[1];
        let s = bm
            .t()?
            .matmul(&k)?
            .matmul(bm)?
            .add(&Tensor::eye(p)?.mul_scalar(damping))?;
        let nmat = bm.t()?.matmul(&k)?.matmul(a)?;
        let bt_lam = bm.t()?.matmul(&lam)?;
        let s_inv_n = s.solve_spd(&nmat)?;
        let s_inv_bl = s.solve_spd(&bt_lam)?;
        let k_new = a
            .t()?
            .matmul(&k)?
            .matmul(a)?
            .sub(&nmat.t()?.matmul(&s_inv_n)?)?;
        lam = a.t()?.matmul(&lam)?.sub(&nmat.t()?.matmul(&s_inv_bl)?)?;
        // Symmetrise against round-off.
        k = k_new.add(&k_new.t()?)?.mul_scalar(0.5);
        stages.push((s_inv_n, s_inv_bl));
    }
    stages.reverse();
    // Forward rollout from δx_0 = 0.
    let mut dx = Tensor::<f64>::zeros(&[states[0].numel(), 1])?;
    let mut out = Vec::with_capacity(2 * n_layers);
    for (i, (s_inv_n, s_inv_bl)) in stages.iter().enumerate() {
        let u = s_inv_n.matmul(&dx)?.add(s_inv_bl)?.neg();
        dx = a_mats[i].matmul(&dx)?.add(&b_mats[i].matmul(&u)?)?;
        let l = &mlp.layers()[i];
        let (ws, bs) = (l.weight.shape(), biases[i].shape());
        let nw: usize = ws.iter().product();
        let flat = u.to_vec();
        out.push(Tensor::from_vec(flat[..nw].to_vec(), &ws)?);
        out.push(Tensor::from_vec(flat[nw..].to_vec(), &bs)?);
    }
    Ok(out)
}
