//! U's effect on a gradient: ‖Ug − g‖ / ‖g‖ for the gradient g of a batch other
//! than the refresh's. The share of U's entries that moved says little (the inner
//! step moves mostly the high-gradient coordinates); this ratio says how far the
//! preconditioned step is from the plain one, so where it stays small LLQR+SAM
//! reduces to SAM and a comparison of the two tests nothing.

use autograd::{backward, Var};
use nn::{Param, ParamGrads};
use optim::llqr::Preconditioner;
use tensor::{Element, Result, Tensor};

/// U's effect on one gradient.
#[derive(Clone, Debug, PartialEq)]
pub struct UEffect {
    /// ‖Ug − g‖ / ‖g‖ (NaN when g is zero).
    pub ratio: f64,
    /// Each parameter's share of ‖Ug − g‖², in the parameters' order (they sum to
    /// 1; NaN when Ug = g): where U acts.
    pub shares: Vec<f64>,
    /// The parameters' names, in the same order.
    pub names: Vec<String>,
}

impl UEffect {
    /// The parameter with the largest share, as (its name, the share).
    pub fn largest(&self) -> Option<(&str, f64)> {
        self.shares
            .iter()
            .zip(&self.names)
            .filter(|(s, _)| s.is_finite())
            .max_by(|a, b| a.0.total_cmp(b.0))
            .map(|(s, n)| (n.as_str(), *s))
    }
}

/// U's effect on g, the gradient of `loss` in `params` (the parameters `u`
/// preconditions, in its order).
pub fn u_effect<T: Element>(
    u: &Preconditioner<T>,
    params: &[Param<T>],
    loss: &Var<T>,
) -> Result<UEffect> {
    let g = ParamGrads::collect(params, &backward(loss)?).into_tensors();
    let ug = u.apply(&g)?;
    let squares = |ts: &[Tensor<T>]| -> Result<Vec<f64>> {
        ts.iter()
            .map(|t| Ok(t.square().sum_all().item()?.as_f64()))
            .collect()
    };
    let diff = ug
        .iter()
        .zip(&g)
        .map(|(a, b)| a.sub(b))
        .collect::<Result<Vec<_>>>()?;
    let base: f64 = squares(&g)?.iter().sum();
    let moved = squares(&diff)?;
    let total: f64 = moved.iter().sum();
    Ok(UEffect {
        ratio: if base > 0.0 {
            (total / base).sqrt()
        } else {
            f64::NAN
        },
        shares: moved
            .iter()
            .map(|m| if total > 0.0 { m / total } else { f64::NAN })
            .collect(),
        names: params.iter().map(|p| p.name().to_string()).collect(),
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
        let at_identity = u_effect(&identity, &params, &loss()).unwrap();
        assert_eq!(at_identity.ratio, 0.0);
        assert!(at_identity.shares.iter().all(|s| s.is_nan()) && at_identity.largest().is_none());
        // U = 1.3·I moves every gradient by 0.3 of itself.
        let scaled = Preconditioner::diagonal(
            params
                .iter()
                .map(|p| Tensor::full(&p.shape(), 1.3).unwrap())
                .collect(),
        );
        let e = u_effect(&scaled, &params, &loss()).unwrap();
        assert!((e.ratio - 0.3).abs() < 1e-12, "{e:?}");
        // Every parameter moves by 0.3 of its gradient: shares are the gradient's.
        let g = ParamGrads::collect(&params, &backward(&loss()).unwrap()).into_tensors();
        let sq: Vec<f64> = g
            .iter()
            .map(|t| t.square().sum_all().item().unwrap())
            .collect();
        let total: f64 = sq.iter().sum();
        for (share, s) in e.shares.iter().zip(&sq) {
            assert!((share - s / total).abs() < 1e-12);
        }
        // U = 2 on the first tensor only: ‖g₀‖ / ‖g‖.
        let mut entries: Vec<Tensor<f64>> = params
            .iter()
            .map(|p| Tensor::ones(&p.shape()).unwrap())
            .collect();
        entries[0] = Tensor::full(&params[0].shape(), 2.0).unwrap();
        let first = sq[0];
        let e = u_effect(&Preconditioner::diagonal(entries), &params, &loss()).unwrap();
        assert!((e.ratio - (first / total).sqrt()).abs() < 1e-12, "{e:?}");
        // All of U's effect is on the first parameter.
        assert_eq!(e.largest(), Some((params[0].name(), 1.0)));
    }
}
