//! Functional derivatives built on `grad`: Jacobian-vector products (by the
//! double-VJP trick) and Hessian-vector products.

use crate::engine::grad;
use crate::var::Var;
use tensor::{Element, Error, Result, Tensor};

fn leaves<T: Element>(xs: &[Tensor<T>]) -> Vec<Var<T>> {
    xs.iter().map(|x| Var::leaf(x.clone())).collect()
}

fn check_directions<T: Element>(
    op: &'static str,
    xs: &[Tensor<T>],
    vs: &[Tensor<T>],
) -> Result<()> {
    if xs.len() != vs.len() {
        return Err(Error::value(
            op,
            format!("{} directions for {} inputs", vs.len(), xs.len()),
        ));
    }
    for (k, (x, v)) in xs.iter().zip(vs).enumerate() {
        if x.shape() != v.shape() {
            return Err(Error::shape(
                op,
                format!(
                    "direction {k} has shape {:?} but its input has shape {:?}",
                    v.shape(),
                    x.shape()
                ),
            ));
        }
    }
    Ok(())
}

/// The value of `f` at `xs` and its Jacobian-vector product J·t.
///
/// Computed without forward mode: with u a dummy cotangent, g(u) = Jᵀu is linear in
/// u, and J t = ∂⟨g(u), t⟩/∂u.
///
/// ```
/// use autograd::jvp;
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// // f(x) = x² element-wise has J = diag(2x), so J·t = 2x ⊙ t.
/// let x = Tensor::<f64>::from_vec(vec![1.0, -2.0, 0.5], &[3])?;
/// let t = Tensor::from_vec(vec![1.0, 0.0, 2.0], &[3])?;
/// let (y, jt) = jvp(|p| p[0].square(), &[x], &[t])?;
/// assert_eq!(y.to_vec(), vec![1.0, 4.0, 0.25]);
/// assert_eq!(jt.to_vec(), vec![2.0, 0.0, 2.0]);
/// # Ok(())
/// # }
/// ```
pub fn jvp<T: Element>(
    f: impl Fn(&[Var<T>]) -> Result<Var<T>>,
    xs: &[Tensor<T>],
    ts: &[Tensor<T>],
) -> Result<(Tensor<T>, Tensor<T>)> {
    check_directions("jvp", xs, ts)?;
    let x = leaves(xs);
    let y = f(&x)?;
    let u = Var::leaf(Tensor::zeros(y.shape())?);
    let xr: Vec<&Var<T>> = x.iter().collect();
    let g = grad(&[&y], &xr, Some(&[&u]), true)?;
    let tv: Vec<Var<T>> = ts.iter().map(|t| Var::constant(t.clone())).collect();
    let gr: Vec<&Var<T>> = g.iter().collect();
    let tr: Vec<&Var<T>> = tv.iter().collect();
    let jt = grad(&gr, &[&u], Some(&tr), false)?;
    Ok((y.value.clone(), jt[0].value.clone()))
}

/// The Hessian-vector product ∇²f(xs)·v of a scalar function, by differentiating
/// the gradient (recorded with `create_graph`) along v.
///
/// ```
/// use autograd::{hvp, Var};
/// use tensor::Tensor;
/// # fn main() -> tensor::Result<()> {
/// // f(a, b) = a²b has the Hessian [[2b, 2a], [2a, 0]]: [[4, 2], [2, 0]] at (1, 2).
/// let f = |p: &[Var<f64>]| {
///     let (a, b) = (p[0].narrow(0, 0, 1)?, p[0].narrow(0, 1, 1)?);
///     a.square()?.mul(&b)?.sum_all()
/// };
/// let x = Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2])?;
/// let e0 = Tensor::from_vec(vec![1.0, 0.0], &[2])?;
/// assert_eq!(hvp(f, &[x.clone()], &[e0])?[0].to_vec(), vec![4.0, 2.0]); // first column
/// let e1 = Tensor::from_vec(vec![0.0, 1.0], &[2])?;
/// assert_eq!(hvp(f, &[x], &[e1])?[0].to_vec(), vec![2.0, 0.0]);
/// # Ok(())
/// # }
/// ```
pub fn hvp<T: Element>(
    f: impl Fn(&[Var<T>]) -> Result<Var<T>>,
    xs: &[Tensor<T>],
    vs: &[Tensor<T>],
) -> Result<Vec<Tensor<T>>> {
    check_directions("hvp", xs, vs)?;
    let x = leaves(xs);
    let y = f(&x)?;
    if y.numel() != 1 {
        return Err(Error::shape(
            "hvp",
            format!(
                "needs a scalar function, got an output of shape {:?}",
                y.shape()
            ),
        ));
    }
    let xr: Vec<&Var<T>> = x.iter().collect();
    let g = grad(&[&y], &xr, None, true)?;
    let vv: Vec<Var<T>> = vs.iter().map(|v| Var::constant(v.clone())).collect();
    let gr: Vec<&Var<T>> = g.iter().collect();
    let vr: Vec<&Var<T>> = vv.iter().collect();
    let hv = grad(&gr, &xr, Some(&vr), false)?;
    Ok(hv.into_iter().map(|v| v.value).collect())
}
