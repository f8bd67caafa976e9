//! U's effect on a gradient: ‖Ug − g‖ / ‖g‖ for the gradient g of a batch other
//! than the refresh's. The share of U's entries that moved says little (the inner
//! step moves mostly the high-gradient coordinates); this ratio says how far the
//! preconditioned step is from the plain one, so where it stays small LLQR+SAM
//! reduces to SAM and a comparison of the two tests nothing.

use autograd::{backward, Var};
use nn::{Param, ParamGrads};
use optim::llqr::Preconditioner;
use tensor::{Element, Result, Tensor};

/// ‖Ug − g‖ / ‖g‖ for g the gradient of `loss` in `params` (the parameters `u`
/// preconditions, in its order); NaN when g is zero.
pub fn u_effect<T: Element>(
    u: &Preconditioner<T>,
    params: &[Param<T>],
    loss: &Var<T>,
) -> Result<f64> {
    let g = ParamGrads::collect(params, &backward(loss)?).into_tensors();
    let ug = u.apply(&g)?;
    let norm = |ts: &[Tensor<T>]| -> Result<f64> {
        let mut sq = 0.0f64;
        for t in ts {
            sq += t.square().sum_all().item()?.as_f64();
        }
        Ok(sq.sqrt())
    };
    let diff = ug
        .iter()
        .zip(&g)
        .map(|(a, b)| a.sub(b))
        .collect::<Result<Vec<_>>>()?;
    let base = norm(&g)?;
    Ok(if base > 0.0 {
        norm(&diff)? / base
    } else {
        f64::NAN
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nn::{Activation, Mlp, Module, ParamStore};
    use tensor::Rng;

    #[test]
    fn the_effect_is_zero_at_the_identity_and_exact_for_a_scaled_u() {
        let store = ParamStore::<f64>::new();
        let mut rng = Rng::new(3);
        let mlp = Mlp::new(&store.root(), &[3, 4, 2], Activation::Tanh, &mut rng).unwrap();
        let x = Tensor::rand_normal(&[5, 3], 0.0, 1.0, &mut rng).unwrap();
        let loss = || {
            mlp.forward(&Var::constant(x.clone()))
                .unwrap()
                .square()
                .unwrap()
                .sum_all()
                .unwrap()
        };
        let params = store.trainable();
        let identity = Preconditioner::diagonal(
            params
                .iter()
                .map(|p| Tensor::ones(&p.shape()).unwrap())
                .collect(),
        );
        assert_eq!(u_effect(&identity, &params, &loss()).unwrap(), 0.0);
        // U = 1.3·I moves every gradient by 0.3 of itself.
        let scaled = Preconditioner::diagonal(
            params
                .iter()
                .map(|p| Tensor::full(&p.shape(), 1.3).unwrap())
                .collect(),
        );
        let e = u_effect(&scaled, &params, &loss()).unwrap();
        assert!((e - 0.3).abs() < 1e-12, "{e}");
        // U = 2 on the first tensor only: ‖g₀‖ / ‖g‖.
        let mut entries: Vec<Tensor<f64>> = params
            .iter()
            .map(|p| Tensor::ones(&p.shape()).unwrap())
            .collect();
        entries[0] = Tensor::full(&params[0].shape(), 2.0).unwrap();
        let g = ParamGrads::collect(&params, &backward(&loss()).unwrap()).into_tensors();
        let total: f64 = g.iter().map(|t| t.square().sum_all().item().unwrap()).sum();
        let first = g[0].square().sum_all().item().unwrap();
        let e = u_effect(&Preconditioner::diagonal(entries), &params, &loss()).unwrap();
        assert!((e - (first / total).sqrt()).abs() < 1e-12, "{e}");
    }
}
