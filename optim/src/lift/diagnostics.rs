//! The cross-covariance between iterate jitter and gradient fluctuation that the
//! lift introduces, Σ̂ = (1/(B−1)) Σ_b (θ̃_b − θ̃̄)(g_b − ḡ)ᵀ over B probe batches at a
//! fixed iterate, where θ̃ is the pre-positivity iterate and g = ∂ℓ/∂b the gradient of
//! the loss with respect to the slack (the parameters entering θ̃ with unit
//! Jacobian). Its trace is σ²_Jac; the joint-necessity theorem says it vanishes
//! unless the strategy has both a learnable slack and a batch-dependent body.

use super::strategies::Positivity;
use autograd::{grad, Var};
use tensor::{Element, Error, Result, Rng, Tensor};

/// What the estimator reports.
#[derive(Clone, Debug, PartialEq)]
pub struct CrossCov {
    /// σ²_Jac = tr Σ̂ (signed).
    pub trace: f64,
    /// ‖Σ̂‖_F.
    pub frobenius: f64,
    /// ‖Σ̂ − Σ̂ᵀ‖_F / ‖Σ̂‖_F (NaN when Σ̂ = 0).
    pub asymmetry: f64,
    /// Permutation-test p-value of |tr Σ̂| against re-pairings of the probes.
    pub p_value: f64,
    /// Σ_b ‖θ̃_b − θ̃̄‖² / (B‖θ̃̄‖²): how much the iterate moves across probes.
    pub relative_iterate_variance: f64,
    /// Number of probes B.
    pub probes: usize,
    /// Length d of the iterate.
    pub dim: usize,
}

/// Rows minus their mean, and the mean. The rows are first shifted by the first row
/// (the covariance does not change), so that identical rows centre to exact zeros.
fn centre(rows: &[Vec<f64>]) -> (Vec<Vec<f64>>, Vec<f64>) {
    let d = rows[0].len();
    let b = rows.len() as f64;
    let shifted: Vec<Vec<f64>> = rows
        .iter()
        .map(|r| r.iter().zip(&rows[0]).map(|(x, o)| x - o).collect())
        .collect();
    let shift_mean: Vec<f64> = (0..d)
        .map(|k| shifted.iter().map(|r| r[k]).sum::<f64>() / b)
        .collect();
    let mean = shift_mean
        .iter()
        .zip(&rows[0])
        .map(|(m, o)| m + o)
        .collect();
    let c = shifted
        .iter()
        .map(|r| r.iter().zip(&shift_mean).map(|(x, m)| x - m).collect())
        .collect();
    (c, mean)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The authors' two stricter guards (`lift/objectives/diagnostics.py`), off by
/// default here. Both slots holding one sequence is always an error (a covariance,
/// not a cross-covariance); these add:
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Guards {
    /// Refuse an estimate whose asymmetry ‖Σ̂ − Σ̂ᵀ‖/‖Σ̂‖ is below 1e-3
    /// (`CrossCovSymmetricEstimate`): a covariance of one quantity, or of two
    /// proportional ones, is symmetric, a genuine cross-covariance rarely is. Off by
    /// default because a symmetric estimate is a legitimate value (every 1×1 Σ̂ is
    /// one); the asymmetry is reported either way.
    pub symmetric: bool,
    /// Refuse slots whose centred rows coincide (to 1e-6 relative): the iterate and
    /// the gradient then differ by a constant per coordinate, an aliasing the raw
    /// comparison does not see.
    pub centred_alias: bool,
}

impl Guards {
    /// Both guards on: the authors' estimator.
    pub const AUTHORS: Guards = Guards {
        symmetric: true,
        centred_alias: true,
    };
}

fn same_rows(a: &[Vec<f64>], b: &[Vec<f64>]) -> bool {
    a.iter().zip(b).all(|(x, y)| {
        x.iter()
            .zip(y)
            .all(|(x, y)| (x - y).abs() <= 1e-6 * x.abs().max(y.abs()).max(1e-300))
    })
}

/// Σ̂ and its summaries from aligned samples: `iterates[b]` and `grads[b]` are the
/// flattened θ̃ and g of probe b. Uses the exact Gram-matrix forms of the scalars, so
/// Σ̂ (d×d) is never formed. The default [`Guards`] (see
/// [`cross_covariance_guarded`] for the authors').
pub fn cross_covariance(
    iterates: &[Vec<f64>],
    grads: &[Vec<f64>],
    permutations: usize,
    rng: &mut Rng,
) -> Result<CrossCov> {
    cross_covariance_guarded(iterates, grads, permutations, rng, Guards::default())
}

/// [`cross_covariance`] with the chosen [`Guards`].
pub fn cross_covariance_guarded(
    iterates: &[Vec<f64>],
    grads: &[Vec<f64>],
    permutations: usize,
    rng: &mut Rng,
    guards: Guards,
) -> Result<CrossCov> {
    let b = iterates.len();
    if b < 2 || grads.len() != b {
        return Err(Error::value(
            "cross_covariance",
            format!(
                "needs B ≥ 2 aligned probes, got {b} iterates and {} gradients",
                grads.len()
            ),
        ));
    }
    let d = iterates[0].len();
    if d == 0 || iterates.iter().chain(grads).any(|r| r.len() != d) {
        return Err(Error::shape(
            "cross_covariance",
            "every probe needs iterate and gradient rows of one common, positive length",
        ));
    }
    if iterates
        .iter()
        .chain(grads)
        .flatten()
        .any(|x| !x.is_finite())
    {
        return Err(Error::non_finite(
            "cross_covariance",
            "a probe has a NaN or infinity",
        ));
    }
    if same_rows(iterates, grads) {
        return Err(Error::value(
            "cross_covariance",
            "the iterate and gradient slots hold the same sequence (a covariance, not a cross-covariance)",
        ));
    }
    let (jc, mean) = centre(iterates);
    let (gc, _) = centre(grads);
    if guards.centred_alias && same_rows(&jc, &gc) {
        return Err(Error::value(
            "cross_covariance",
            "after centring, the iterate and gradient slots hold the same rows (they differ by a constant)",
        ));
    }
    let n = (b - 1) as f64;
    // K = Jc Gcᵀ, A = Jc Jcᵀ, M = Gc Gcᵀ (B×B).
    let k: Vec<Vec<f64>> = jc
        .iter()
        .map(|a| gc.iter().map(|g| dot(a, g)).collect())
        .collect();
    let trace = (0..b).map(|i| k[i][i]).sum::<f64>() / n;
    let mut frob2 = 0.0;
    let mut cross = 0.0;
    for i in 0..b {
        for j in 0..b {
            frob2 += dot(&jc[i], &jc[j]) * dot(&gc[i], &gc[j]);
            cross += k[i][j] * k[j][i];
        }
    }
    let (frob2, cross) = (frob2 / (n * n), cross / (n * n));
    let frobenius = frob2.max(0.0).sqrt();
    let asymmetry = if frobenius > 0.0 {
        (2.0 * frob2 - 2.0 * cross).max(0.0).sqrt() / frobenius
    } else {
        f64::NAN
    };
    if guards.symmetric && asymmetry < 1e-3 {
        return Err(Error::value(
            "cross_covariance",
            format!("the estimate is symmetric (asymmetry {asymmetry:.2e} < 1e-3): a covariance, not a cross-covariance"),
        ));
    }
    let mut hits = 0usize;
    for _ in 0..permutations {
        let perm = rng.permutation(b);
        let t = (0..b).map(|i| k[i][perm[i]]).sum::<f64>() / n;
        if t.abs() >= trace.abs() {
            hits += 1;
        }
    }
    let spread: f64 = jc.iter().map(|r| dot(r, r)).sum();
    let level = dot(&mean, &mean) * b as f64;
    Ok(CrossCov {
        trace,
        frobenius,
        asymmetry,
        p_value: (1 + hits) as f64 / (1 + permutations) as f64,
        relative_iterate_variance: if level > 0.0 { spread / level } else { spread },
        probes: b,
        dim: d,
    })
}

/// A loss of the emitted weights and a batch.
pub type ProbeLoss<'a, T> = dyn Fn(&[Var<T>], &Tensor<T>) -> Result<Var<T>> + 'a;

fn flat<T: Element>(ts: &[Tensor<T>]) -> Vec<f64> {
    ts.iter()
        .flat_map(|t| t.to_vec())
        .map(|v| v.as_f64())
        .collect()
}

/// Measures Σ̂ for a strategy at its current parameters: probe b conditions the
/// weights on `probes[b].0` and evaluates `loss(weights, probes[b].1)`. Nothing is
/// updated. Returns `None` when the strategy has no slack channel (the reading is
/// zero by definition).
pub fn probe<T: Element>(
    strategy: &dyn Positivity<T>,
    probes: &[(Tensor<T>, Tensor<T>)],
    loss: &ProbeLoss<'_, T>,
    permutations: usize,
    rng: &mut Rng,
) -> Result<Option<CrossCov>> {
    let slack = strategy.slack();
    if slack.is_empty() {
        return Ok(None);
    }
    let mut iterates = Vec::with_capacity(probes.len());
    let mut grads = Vec::with_capacity(probes.len());
    for (cond, batch) in probes {
        iterates.push(flat(&strategy.latents(cond)?));
        let l = loss(&strategy.weights(cond)?, batch)?;
        let vars: Vec<Var<T>> = slack.iter().map(|p| p.var()).collect();
        let refs: Vec<&Var<T>> = vars.iter().collect();
        let g = grad(&[&l], &refs, None, false)?;
        grads.push(flat(
            &g.iter().map(|v| v.value().clone()).collect::<Vec<_>>(),
        ));
    }
    cross_covariance(&iterates, &grads, permutations, rng).map(Some)
}
