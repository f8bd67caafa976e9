//! Checking your own function's derivatives: `gradcheck` and `gradgradcheck` (central
//! differences in f64), and a Hessian-vector product by double backward compared
//! with the Hessian written out by hand.
//!
//! `cargo run --release --example hvp_gradcheck`

use autograd::{gradcheck, gradgradcheck, hvp, GradcheckOptions, Var};
use ferrotape::{autograd, tensor};
use tensor::{Result, Tensor};

/// f(x) = Σ log(1 + x_i²) + (Σ x_i)³ / 3, a smooth non-convex function.
fn f(x: &Var<f64>) -> Result<Var<f64>> {
    let logs = x.square()?.ln1p()?.sum_all()?;
    let s = x.sum_all()?;
    logs.add(&s.mul(&s)?.mul(&s)?.mul_scalar(1.0 / 3.0)?)
}

/// Its Hessian by hand: diag(2(1 − x²)/(1 + x²)²) + 2(Σx)·11ᵀ.
fn hessian(x: &[f64]) -> Vec<Vec<f64>> {
    let s: f64 = x.iter().sum();
    (0..x.len())
        .map(|i| {
            (0..x.len())
                .map(|j| {
                    let d = if i == j {
                        2.0 * (1.0 - x[i] * x[i]) / (1.0 + x[i] * x[i]).powi(2)
                    } else {
                        0.0
                    };
                    d + 2.0 * s
                })
                .collect()
        })
        .collect()
}

/// The largest |Hv − H_by_hand v| at a point, after both checks pass.
fn check() -> Result<f64> {
    let x0 = vec![0.3, -1.2, 0.8, 2.0];
    let x = Tensor::from_vec(x0.clone(), &[4])?;
    let strict = GradcheckOptions::strict();
    gradcheck(|v| f(&v[0]), std::slice::from_ref(&x), &strict)?;
    gradgradcheck(|v| f(&v[0]), std::slice::from_ref(&x), &strict)?;
    let v = Tensor::from_vec(vec![1.0, 0.5, -0.25, 2.0], &[4])?;
    let hv = hvp(|p| f(&p[0]), &[x], std::slice::from_ref(&v))?;
    let by_hand = hessian(&x0);
    let vv = v.to_vec();
    let got = hv[0].to_vec();
    Ok((0..4)
        .map(|i| {
            let want: f64 = (0..4).map(|j| by_hand[i][j] * vv[j]).sum();
            (got[i] - want).abs()
        })
        .fold(0.0, f64::max))
}

fn main() -> Result<()> {
    let err = check()?;
    println!("gradcheck and gradgradcheck pass; max |Hv − H v by hand| = {err:.2e}");
    Ok(())
}

#[test]
fn the_hessian_vector_product_matches_the_hand_hessian() {
    assert!(check().unwrap() < 1e-12);
}
