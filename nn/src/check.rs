//! Gradient checks over a model's parameters: `autograd::gradcheck` with the
//! trainable parameters of a store as its inputs (substituted into the model for
//! each evaluation), so a module's backward rules are checked where they are used.

use crate::param::ParamStore;
use autograd::{gradcheck, GradcheckOptions, GradcheckReport, Var};
use tensor::{Error, Result, Tensor};

/// Checks the gradient of a scalar `loss()` with respect to every trainable
/// parameter of `store` jointly, by [`autograd::gradcheck()`] with `opts` (the full
/// Jacobian when small enough, random directions beyond, the tolerances given):
/// each evaluation substitutes the check's inputs for the parameters, so `loss`
/// reads the model as usual. A mismatch is an error naming the inputs by
/// parameter. The parameters are restored afterwards, also when the check or the
/// loss fails.
pub fn gradcheck_params(
    store: &ParamStore<f64>,
    loss: impl Fn() -> Result<Var<f64>>,
    opts: &GradcheckOptions,
) -> Result<GradcheckReport> {
    let params = store.trainable();
    if params.is_empty() {
        return Err(Error::value(
            "gradcheck_params",
            "the store has no trainable parameters",
        ));
    }
    let saved: Vec<Tensor<f64>> = params.iter().map(|p| p.value()).collect();
    let f = |xs: &[Var<f64>]| -> Result<Var<f64>> {
        for (p, x) in params.iter().zip(xs) {
            p.substitute(x.clone())?;
        }
        loss()
    };
    let checked = gradcheck(f, &saved, opts);
    let restored = params.iter().zip(saved).try_for_each(|(p, v)| p.set(v));
    let report = checked.map_err(|e| match e {
        Error::Numerical { detail, .. } => {
            let names: Vec<String> = params
                .iter()
                .enumerate()
                .map(|(k, p)| format!("{k} = {}", p.name()))
                .collect();
            Error::numerical(
                "gradcheck_params",
                format!("{detail} (inputs: {})", names.join(", ")),
            )
        }
        other => other,
    })?;
    restored?;
    Ok(report)
}
