//! Gradient checks over a model's parameters, for modules whose parameters live in
//! a store (where `autograd::gradcheck`, which differentiates by its inputs, does not
//! reach).

use crate::param::ParamStore;
use autograd::{backward, Var};
use tensor::{Error, Result, Rng, Tensor};

/// Checks the gradient of a scalar `loss()` with respect to every trainable
/// parameter of `store` along `directions` random directions each: the analytic
/// ⟨∇θ L, t⟩ against the central difference (L(θ + εt) − L(θ − εt))/2ε, with ε = 1e-6,
/// atol 1e-5 and rtol 1e-3 (PyTorch's gradcheck defaults). Parameters are restored
/// afterwards, also when the loss fails at a perturbed point. Returns the number of
/// comparisons.
pub fn gradcheck_params(
    store: &ParamStore<f64>,
    loss: impl Fn() -> Result<Var<f64>>,
    directions: usize,
    seed: u64,
) -> Result<usize> {
    let (eps, atol, rtol) = (1e-6, 1e-5, 1e-3);
    let mut rng = Rng::new(seed);
    let mut checks = 0;
    for p in store.trainable() {
        let base = p.value();
        let grads = backward(&loss()?)?;
        let g = grads.get_or_zeros(&p.var());
        for _ in 0..directions {
            let t = Tensor::<f64>::rand_normal(base.shape(), 0.0, 1.0, &mut rng)?;
            let analytic = g.mul(&t)?.sum_all().item()?;
            // The parameter is restored after each evaluation, also when the loss
            // fails there.
            let at = |value: Tensor<f64>| -> Result<f64> {
                p.set(value)?;
                let l = loss().and_then(|l| l.item());
                p.set(base.clone())?;
                l
            };
            let plus = at(base.add(&t.mul_scalar(eps))?)?;
            let minus = at(base.sub(&t.mul_scalar(eps))?)?;
            let numeric = (plus - minus) / (2.0 * eps);
            if !((analytic - numeric).abs() <= atol + rtol * numeric.abs()) {
                return Err(Error::numerical(
                    "gradcheck_params",
                    format!(
                        "{}: analytic {analytic:e} vs numerical {numeric:e}",
                        p.name()
                    ),
                ));
            }
            checks += 1;
        }
    }
    Ok(checks)
}
