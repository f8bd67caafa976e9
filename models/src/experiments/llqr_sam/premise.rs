//! `llqr-premise`: can U, learned by the real `LlqrSam` at the authors' inner
//! settings (50 momentum steps at 1e-3, clip 5, warm start, EMA), reach the
//! geometry LLQR+SAM's mechanism needs? The mechanism assumes U ≈ H̄⁻¹ (the inverse
//! of the average curvature); two problems whose curvature is known in closed form
//! tell how close U gets and after how many refreshes.
//!
//! - **Newton, a quadratic** ½Σλ̄_kθ_k² in 32 dimensions, λ̄ log-spaced from 0.01
//!   to 1. Each refresh sees the gradient at a fresh point θ_k ~ N(0, s²/λ̄_k) (every
//!   direction holding the same loss s²/2, as noise at stationarity does), at
//!   gradient scales s. Reported: the median of U_k·λ̄_k (1 when U ≈ H̄⁻¹), the
//!   exponent of U in λ̄ (a least-squares slope of log U_k on log λ̄_k: −1 at H̄⁻¹, 0
//!   at I) and the log-log slope of the steady 2-cycle amplitude of U-norm LLQR+SAM
//!   with that U, measured with the real optimiser on each eigendirection (−½ at
//!   H̄⁻¹; at U = I it is SAM's, ηλ̄ρ/(2 − ηλ̄), slope about +1 here, where the local
//!   curvature is the average one).
//! - **NGD, softmax regression** on 32 Gaussian inputs with standard deviations
//!   log-spaced from 0.1 to 1, 10 classes, weights at 0, labels uniform: there the
//!   Fisher of a batch of N is (I/K − 11ᵀ/K²) ⊗ Σₙxₙxₙᵀ exactly, so its expected
//!   diagonal is N·(K − 1)/K²·σ_j² (N = 1 for the mean Fisher). Reported: the median
//!   of U times that diagonal, U's exponent in σ_j² (−1 at the inverse diagonal),
//!   and on 16 held-out batches the share of the natural-gradient step's model
//!   decrease that U's step attains, J(U)/J(F⁺) with J(U) = −gᵀUg + ½(Ug)ᵀF(Ug) (1
//!   for the natural-gradient step; the best diagonal U for one batch reaches 1).

use crate::cli::RunConfig;
use crate::error::{Error, Result};
use crate::report::{median, Metrics, Plot, Table};
use autograd::Var;
use nn::checkpoint::AnyTensor;
use nn::{Param, ParamStore};
use optim::llqr::{Geometry, InnerSolve, LlqrConfig, LlqrSam, PerturbationNorm, Preconditioner};
use optim::Optimizer;
use tensor::{Rng, Tensor};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    (
        "refreshes",
        "refreshes of U; the tables read U after 10, 78 (the authors' CIFAR count), 300 and this many that fit (quick 300, full 1000)",
    ),
    (
        "scales",
        "gradient scales s of the quadratic, θ_k ~ N(0, s²/λ̄_k) at each refresh (0.1,1,10)",
    ),
    (
        "inner-lr",
        "learning rate of the inner solve (1e-3, the authors')",
    ),
];

/// Dimensions of the quadratic and inputs of the softmax regression.
const DIM: usize = 32;

/// Classes of the softmax regression.
const CLASSES: usize = 10;

/// Samples per preconditioning batch (the authors' CIFAR `precond_batch_size`).
const BATCH: usize = 128;

/// Held-out batches the natural-gradient share is averaged over.
const HELD_OUT: usize = 16;

/// The refresh counts the tables read U after (those within the run).
const CHECKPOINTS: [usize; 3] = [10, 78, 300];

/// The hovering runs' step size η and radius ρ: with η = 1, U = H̄⁻¹ gives
/// κ = ηUλ̄ = 1, a cycle reached in a few steps; on a quadratic the amplitude is
/// proportional to ρ, and ρ = 1 keeps the gradients far above the 1e-12 under the
/// perturbation's square root (at ρ = 0.01 it shrinks SAM's flattest cycles by 10 %).
const HOVER: (f64, f64) = (1.0, 1.0);

/// Steps of each hovering run, and the last steps its amplitude is read over.
const HOVER_STEPS: (usize, usize) = (400, 50);

/// The average curvatures λ̄_k of the quadratic, log-spaced from 1e-2 to 1.
pub fn curvatures() -> Vec<f64> {
    log_spaced(1e-2, 1.0)
}

/// [`DIM`] values log-spaced from `low` to `high`.
fn log_spaced(low: f64, high: f64) -> Vec<f64> {
    let (a, b) = (low.log10(), high.log10());
    (0..DIM)
        .map(|k| 10f64.powf(a + (b - a) * k as f64 / (DIM - 1) as f64))
        .collect()
}

/// ½Σλ̄_kθ_k², differentiably.
fn quadratic(theta: &Var<f64>, lam: &Tensor<f64>) -> Result<Var<f64>> {
    Ok(theta
        .square()?
        .mul(&Var::constant(lam.clone()))?
        .sum_all()?
        .mul_scalar(0.5)?)
}

/// The least-squares slope of `y` on `x`.
pub fn slope(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = x.iter().map(|a| (a - mx) * (a - mx)).sum();
    sxy / sxx
}

/// "median [min, max]" of `values`, to 3 decimals.
fn spread_cell(values: &[f64]) -> String {
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    format!("{:.3} [{lo:.3}, {hi:.3}]", median(values))
}

/// U's diagonal, flattened in parameter order.
fn diagonal(u: &Preconditioner<f64>) -> Vec<f64> {
    u.factor_tensors()
        .concat()
        .iter()
        .flat_map(|t| t.to_vec())
        .collect()
}

/// The exponent of `u` in `x`: the slope of log u on log x.
fn exponent(x: &[f64], u: &[f64]) -> f64 {
    let lx: Vec<f64> = x.iter().map(|v| v.ln()).collect();
    let lu: Vec<f64> = u.iter().map(|v| v.ln()).collect();
    slope(&lx, &lu)
}

/// The steady 2-cycle amplitude of U-norm LLQR+SAM (U = `u` fixed, no momentum) on
/// the quadratic, started along eigendirection `k`: the largest |θ_k| over the
/// run's last steps. The start is twice the closed-form amplitude
/// κρ√U_k/(2 − κ), κ = ηU_kλ̄_k, so that slow directions need not travel to it;
/// where κ ≥ 2 the iteration is unstable and the amplitude is infinite.
fn hovering(u: &[f64], lam: &Tensor<f64>, k: usize) -> Result<f64> {
    let (eta, rho) = HOVER;
    let l = lam.to_vec()[k];
    let kappa = eta * u[k] * l;
    if kappa >= 2.0 {
        return Ok(f64::INFINITY);
    }
    let store = ParamStore::<f64>::new();
    let mut start = vec![0.0; DIM];
    start[k] = 2.0 * kappa * rho * u[k].sqrt() / (2.0 - kappa);
    let theta = store
        .root()
        .param("theta", Tensor::from_vec(start, &[DIM])?)?;
    let mut opt = LlqrSam::new(
        store.trainable(),
        LlqrConfig {
            lr: eta,
            momentum: 0.0,
            rho,
            norm: PerturbationNorm::Matrix,
            refresh_every: usize::MAX,
            ..LlqrConfig::default()
        },
    )?;
    opt.set_preconditioner(Preconditioner::diagonal(vec![Tensor::from_vec(
        u.to_vec(),
        &[DIM],
    )?]));
    let (steps, last) = HOVER_STEPS;
    let mut amplitude = 0.0f64;
    for step in 0..steps {
        opt.step_closure(&|| Ok(quadratic(&theta.var(), lam)?))?;
        if step >= steps - last {
            amplitude = amplitude.max(theta.value().to_vec()[k].abs());
        }
    }
    Ok(amplitude)
}

/// The log-log slope of the hovering amplitude against λ̄ over every direction,
/// with U = `u` (infinite where a direction is unstable).
fn hovering_slope(u: &[f64], lam: &Tensor<f64>) -> Result<f64> {
    let amplitudes = (0..DIM)
        .map(|k| hovering(u, lam, k))
        .collect::<Result<Vec<f64>>>()?;
    if amplitudes.iter().any(|a| !a.is_finite() || *a <= 0.0) {
        return Ok(f64::INFINITY);
    }
    Ok(exponent(&lam.to_vec(), &amplitudes))
}

/// The refresh counts the tables read U after, for a run of `refreshes`.
fn checkpoints(refreshes: usize) -> Vec<usize> {
    let mut out: Vec<usize> = CHECKPOINTS.into_iter().filter(|&c| c < refreshes).collect();
    out.push(refreshes);
    out
}

/// A learner with the authors' inner solve (at `inner_lr`) and EMA for `geometry`,
/// refreshed only when asked.
fn learner(params: Vec<Param<f64>>, geometry: Geometry, inner_lr: f64) -> Result<LlqrSam<f64>> {
    Ok(LlqrSam::new(
        params,
        LlqrConfig {
            geometry,
            // The authors' pairs: Newton with β = 0.9, NGD with β = 0.95.
            ema: if geometry == Geometry::Newton {
                0.9
            } else {
                0.95
            },
            rho: 0.0,
            inner: InnerSolve {
                lr: inner_lr,
                ..InnerSolve::default()
            },
            ..LlqrConfig::default()
        },
    )?)
}

/// The Newton table: U learned on the quadratic at each gradient scale, read at
/// every checkpoint, with the hovering slopes of U = I and U = H̄⁻¹ as references;
/// median Uλ̄ per refresh goes to `metrics`.
fn newton(
    (scales, refreshes, inner_lr): (&[f64], usize, f64),
    metrics: &mut Metrics,
    finals: &mut Vec<(String, AnyTensor)>,
) -> Result<Table> {
    let lam_values = curvatures();
    let lam = Tensor::from_vec(lam_values.clone(), &[DIM])?;
    let mut table = Table::new(
        &format!(
            "llqr-premise, Newton: ½Σλ̄_kθ_k² in {DIM} dimensions, λ̄ log-spaced 1e-2 … 1; each refresh at a fresh θ_k ~ N(0, s²/λ̄_k); the real LlqrSam refresh (diagonal U from I, 50 momentum steps at lr {inner_lr}, momentum 0.9, clip 5, EMA β = 0.9); the hovering amplitude of U-norm LLQR+SAM with that U fixed (η = {}, ρ = {}, no momentum) on each eigendirection, its log-log slope in λ̄",
            HOVER.0, HOVER.1
        ),
        &[
            "U",
            "gradient scale s",
            "refreshes",
            "median U_k·λ̄_k [min, max] (1 at H̄⁻¹)",
            "exponent of U in λ̄ (−1 at H̄⁻¹, 0 at I)",
            "hovering slope in λ̄ (−½ at H̄⁻¹)",
        ],
    );
    for (name, u) in [
        ("I (SAM's geometry)", vec![1.0; DIM]),
        (
            "H̄⁻¹ (the premise)",
            lam_values.iter().map(|l| 1.0 / l).collect(),
        ),
    ] {
        table.row(row(
            name,
            "—",
            "—",
            &u,
            &lam_values,
            hovering_slope(&u, &lam)?,
        ));
    }
    for &s in scales {
        let store = ParamStore::<f64>::new();
        let theta = store.root().param("theta", Tensor::zeros(&[DIM])?)?;
        let mut l = learner(store.trainable(), Geometry::Newton, inner_lr)?;
        let mut rng = Rng::new(s.to_bits());
        let marks = checkpoints(refreshes);
        for r in 1..=refreshes {
            let point: Vec<f64> = lam_values
                .iter()
                .map(|l| s / l.sqrt() * rng.normal())
                .collect();
            theta.set(Tensor::from_vec(point, &[DIM])?)?;
            l.refresh_newton(&|| Ok(quadratic(&theta.var(), &lam)?))?;
            let u = diagonal(l.preconditioner());
            let scaled: Vec<f64> = u.iter().zip(&lam_values).map(|(a, b)| a * b).collect();
            metrics.push(
                &format!("newton s={s}"),
                r,
                "median U·curvature",
                median(&scaled),
            );
            if marks.contains(&r) {
                table.row(row(
                    "learned",
                    &format!("{s}"),
                    &r.to_string(),
                    &u,
                    &lam_values,
                    hovering_slope(&u, &lam)?,
                ));
            }
        }
        finals.push((
            format!("newton.s{s}.u"),
            AnyTensor::from_tensor(&Tensor::from_vec(diagonal(l.preconditioner()), &[DIM])?),
        ));
    }
    Ok(table)
}

/// One row of the Newton table.
fn row(name: &str, s: &str, r: &str, u: &[f64], lam: &[f64], hover: f64) -> Vec<String> {
    let scaled: Vec<f64> = u.iter().zip(lam).map(|(a, b)| a * b).collect();
    vec![
        name.to_string(),
        s.to_string(),
        r.to_string(),
        spread_cell(&scaled),
        format!("{:.3}", exponent(lam, u)),
        if hover.is_finite() {
            format!("{hover:.3}")
        } else {
            "unstable".into()
        },
    ]
}

/// A batch of the softmax regression: inputs with per-feature standard deviations
/// `sigma` and uniform labels.
fn softmax_batch(sigma: &[f64], rng: &mut Rng) -> Result<(Tensor<f64>, Vec<usize>)> {
    let x: Vec<f64> = (0..BATCH)
        .flat_map(|_| sigma.iter().map(|s| s * rng.normal()).collect::<Vec<_>>())
        .collect();
    let labels = (0..BATCH)
        .map(|_| rng.below(CLASSES as u64).map(|c| c as usize))
        .collect::<tensor::Result<Vec<_>>>()?;
    Ok((Tensor::from_vec(x, &[BATCH, DIM])?, labels))
}

/// The batch's mean cross-entropy gradient at W = 0, `[DIM, CLASSES]`:
/// xᵀ(1/K − Y)/N.
fn softmax_gradient(x: &Tensor<f64>, labels: &[usize]) -> Result<Tensor<f64>> {
    let mut residual = vec![1.0 / CLASSES as f64; BATCH * CLASSES];
    for (n, &c) in labels.iter().enumerate() {
        residual[n * CLASSES + c] -= 1.0;
    }
    Ok(x.t()?
        .matmul(&Tensor::from_vec(residual, &[BATCH, CLASSES])?)
        .map(|t| t.mul_scalar(1.0 / BATCH as f64))?)
}

/// The share of the natural-gradient model decrease U's step attains on the batch
/// (`x`, `labels`) at W = 0: J(U)/J* with F = scale·(I/K − 11ᵀ/K²) ⊗ xᵀx,
/// J(U) = −⟨G, V⟩ + ½⟨V, F V⟩ for V = U ⊙ G, and J* = −½⟨G, F⁺G⟩ =
/// −½(K/scale)⟨G, (xᵀx)⁻¹G⟩ (G's rows sum to zero over the classes).
fn natural_share(u: &Tensor<f64>, x: &Tensor<f64>, labels: &[usize], scale: f64) -> Result<f64> {
    let (j_u, j_star) = model_values(u, x, labels, scale)?;
    Ok(j_u / j_star)
}

/// (J(U), J*) of [`natural_share`].
fn model_values(
    u: &Tensor<f64>,
    x: &Tensor<f64>,
    labels: &[usize],
    scale: f64,
) -> Result<(f64, f64)> {
    let g = softmax_gradient(x, labels)?;
    let gram = x.t()?.matmul(x)?;
    let v = u.mul(&g)?;
    // F V = scale·(xᵀx)·V·(I/K − 11ᵀ/K²).
    let k = CLASSES as f64;
    let bv = gram.matmul(&v)?;
    let centred = bv.sub(&bv.sum(&[1], true)?.mul_scalar(1.0 / k))?;
    let fv = centred.mul_scalar(scale / k);
    let dot = |a: &Tensor<f64>, b: &Tensor<f64>| -> Result<f64> { Ok(a.mul(b)?.sum_all().item()?) };
    let j_u = -dot(&g, &v)? + 0.5 * dot(&v, &fv)?;
    let j_star = -0.5 * (k / scale) * dot(&g, &gram.solve_spd(&g)?)?;
    Ok((j_u, j_star))
}

/// The NGD table: U learned on the softmax regression with the batch-summed Fisher
/// (the authors') and the mean Fisher, read at every checkpoint, with U = I and
/// U = the inverse expected diagonal as references.
fn natural(
    (refreshes, inner_lr): (usize, f64),
    metrics: &mut Metrics,
    finals: &mut Vec<(String, AnyTensor)>,
) -> Result<Table> {
    let sigma = log_spaced(0.1, 1.0);
    let variance: Vec<f64> = sigma.iter().map(|s| s * s).collect();
    let mut held_rng = Rng::new(7);
    let held = (0..HELD_OUT)
        .map(|_| softmax_batch(&sigma, &mut held_rng))
        .collect::<Result<Vec<_>>>()?;
    let k = CLASSES as f64;
    let mut table = Table::new(
        &format!(
            "llqr-premise, NGD: softmax regression, {DIM} inputs with standard deviations log-spaced 0.1 … 1, {CLASSES} classes, W = 0, uniform labels, batches of {BATCH}; the real LlqrSam refresh (diagonal U from I, 50 momentum steps at lr {inner_lr}, momentum 0.9, clip 5, EMA β = 0.95); F̄_jj = N·(K − 1)/K²·σ_j², N = {BATCH} for the batch-summed Fisher, 1 for the mean; the share of the natural-gradient step's model decrease on {HELD_OUT} held-out batches (median)"
        ),
        &[
            "geometry",
            "U",
            "refreshes",
            "median U·F̄_jj [min, max] (1 at diag(F̄)⁻¹)",
            "exponent of U in σ² (−1 at diag(F̄)⁻¹, 0 at I)",
            "share of the natural step's decrease (1 at F⁺)",
        ],
    );
    for geometry in [Geometry::Fisher, Geometry::MeanFisher] {
        let (name, scale) = match geometry {
            Geometry::Fisher => ("batch-summed Fisher (the authors')", BATCH as f64),
            _ => ("mean Fisher", 1.0),
        };
        let fbar: Vec<f64> = variance
            .iter()
            .map(|v| scale * (k - 1.0) / (k * k) * v)
            .collect();
        // U's entries are [DIM, CLASSES]; row j has F̄_jj.
        let expand = |per_row: &[f64]| -> Vec<f64> {
            per_row
                .iter()
                .flat_map(|v| std::iter::repeat_n(*v, CLASSES))
                .collect()
        };
        let fbar_all = expand(&fbar);
        let read = |u: &[f64], what: &str, r: &str| -> Result<Vec<String>> {
            let scaled: Vec<f64> = u.iter().zip(&fbar_all).map(|(a, b)| a * b).collect();
            let rows: Vec<f64> = u
                .chunks(CLASSES)
                .map(|c| c.iter().sum::<f64>() / CLASSES as f64)
                .collect();
            let ut = Tensor::from_vec(u.to_vec(), &[DIM, CLASSES])?;
            let shares = held
                .iter()
                // xᵀx already sums over the batch.
                .map(|(x, y)| natural_share(&ut, x, y, scale / BATCH as f64))
                .collect::<Result<Vec<f64>>>()?;
            Ok(vec![
                name.to_string(),
                what.to_string(),
                r.to_string(),
                spread_cell(&scaled),
                format!("{:.3}", exponent(&variance, &rows)),
                format!("{:.3}", median(&shares)),
            ])
        };
        table.row(read(&vec![1.0; DIM * CLASSES], "I", "—")?);
        let inverse: Vec<f64> = fbar_all.iter().map(|f| 1.0 / f).collect();
        table.row(read(&inverse, "diag(F̄)⁻¹", "—")?);
        let store = ParamStore::<f64>::new();
        let w = store.root().param("w", Tensor::zeros(&[DIM, CLASSES])?)?;
        let mut l = learner(store.trainable(), geometry, inner_lr)?;
        let mut rng = Rng::new(11);
        let marks = checkpoints(refreshes);
        for r in 1..=refreshes {
            let (x, labels) = softmax_batch(&sigma, &mut rng)?;
            let xv = Var::constant(x);
            l.refresh(&|| xv.matmul(&w.var()), &labels, 0.0)?;
            let u = diagonal(l.preconditioner());
            let scaled: Vec<f64> = u.iter().zip(&fbar_all).map(|(a, b)| a * b).collect();
            metrics.push(
                &format!("ngd {}", geometry_key(geometry)),
                r,
                "median U·curvature",
                median(&scaled),
            );
            if marks.contains(&r) {
                table.row(read(&u, "learned", &r.to_string())?);
            }
        }
        finals.push((
            format!("ngd.{}.u", geometry_key(geometry)),
            AnyTensor::from_tensor(&Tensor::from_vec(
                diagonal(l.preconditioner()),
                &[DIM, CLASSES],
            )?),
        ));
    }
    Ok(table)
}

fn geometry_key(g: Geometry) -> &'static str {
    match g {
        Geometry::Fisher => "summed",
        Geometry::MeanFisher => "mean",
        Geometry::Newton => "newton",
    }
}

/// Runs the experiment and returns its tables.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    cfg.check_known("llqr-premise", OPTIONS)?;
    let refreshes: usize = cfg.opt("refreshes", if cfg.quick { 300 } else { 1000 })?;
    let scales: Vec<f64> = cfg.opt_list("scales", &[0.1, 1.0, 10.0])?;
    let inner_lr: f64 = cfg.opt("inner-lr", 1e-3)?;
    if refreshes == 0
        || refreshes > 100_000
        || scales.is_empty()
        || scales.iter().any(|s| !(s.is_finite() && *s > 0.0))
        || !(inner_lr.is_finite() && inner_lr > 0.0)
    {
        return Err(Error::usage(format!(
                "--refreshes in 1..=100000, positive finite --scales and --inner-lr expected, got {refreshes}, {scales:?}, {inner_lr}"
            ),
        ));
    }
    let mut metrics = Metrics::default();
    let mut finals = Vec::new();
    let tables = vec![
        newton((&scales, refreshes, inner_lr), &mut metrics, &mut finals)?,
        natural((refreshes, inner_lr), &mut metrics, &mut finals)?,
    ];
    Ok(cfg.run_dir("llqr-premise")?.finish(
        "llqr-premise",
        Plot::Curves {
            title: "llqr-premise: median of U times the curvature it should invert (1 when U has learned it), by refresh",
            metrics: &metrics,
            panels: &[("median U·curvature", true)],
            x_label: "refresh",
        },
        finals,
        tables,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slope_and_exponent_recover_power_laws() {
        let x: Vec<f64> = curvatures();
        let y: Vec<f64> = x.iter().map(|v| 3.0 * v.powf(-0.5)).collect();
        assert!((exponent(&x, &y) + 0.5).abs() < 1e-12);
        assert!((x[0] - 1e-2).abs() < 1e-15 && (x[DIM - 1] - 1.0).abs() < 1e-15);
    }

    #[test]
    fn hovering_slopes_match_the_closed_forms_at_i_and_the_inverse_curvature() {
        let lam_values = curvatures();
        let lam = Tensor::from_vec(lam_values.clone(), &[DIM]).unwrap();
        let inverse: Vec<f64> = lam_values.iter().map(|l| 1.0 / l).collect();
        // U = H̄⁻¹, η = 1: κ = 1 in every direction, amplitude ρλ̄^(−1/2).
        assert!((hovering_slope(&inverse, &lam).unwrap() + 0.5).abs() < 1e-3);
        let (eta, rho) = HOVER;
        let a = hovering(&vec![1.0; DIM], &lam, 5).unwrap();
        let kappa = eta * lam_values[5];
        let want = kappa * rho / (2.0 - kappa);
        assert!((a - want).abs() < 1e-3 * want, "{a} vs {want}");
        // Past κ = 2 the iteration is unstable.
        assert!(hovering(&vec![3.0; DIM], &lam, DIM - 1)
            .unwrap()
            .is_infinite());
    }

    #[test]
    fn the_natural_share_is_one_at_the_natural_step_and_below_elsewhere() {
        let sigma = log_spaced(0.1, 1.0);
        let (x, labels) = softmax_batch(&sigma, &mut Rng::new(3)).unwrap();
        let g = softmax_gradient(&x, &labels).unwrap();
        let gram = x.t().unwrap().matmul(&x).unwrap();
        // The diagonal U with U ⊙ G = F⁺G (F = scale·A ⊗ xᵀx, A⁺G = K·G).
        let scale = 3.0;
        let natural = gram
            .solve_spd(&g)
            .unwrap()
            .mul_scalar(CLASSES as f64 / scale)
            .div(&g)
            .unwrap();
        let share = natural_share(&natural, &x, &labels, scale).unwrap();
        assert!((share - 1.0).abs() < 1e-9, "{share}");
        let ones = Tensor::ones(&[DIM, CLASSES]).unwrap();
        assert!(natural_share(&ones, &x, &labels, scale).unwrap() < 1.0);
        // J(U) against the dense Fisher scale·(I/K − 11ᵀ/K²) ⊗ xᵀx for a random U.
        let u = Tensor::rand_uniform(&[DIM, CLASSES], 0.5, 2.0, &mut Rng::new(4)).unwrap();
        let (j_u, j_star) = model_values(&u, &x, &labels, scale).unwrap();
        let (b, gv) = (gram.to_vec(), g.to_vec());
        let v: Vec<f64> = u.to_vec().iter().zip(&gv).map(|(a, b)| a * b).collect();
        let k = CLASSES as f64;
        let mut quad = 0.0;
        for (i, vi) in v.iter().enumerate() {
            for (j, vj) in v.iter().enumerate() {
                let a = f64::from(u8::from(i % CLASSES == j % CLASSES)) / k - 1.0 / (k * k);
                quad += vi * scale * a * b[(i / CLASSES) * DIM + j / CLASSES] * vj;
            }
        }
        let linear: f64 = gv.iter().zip(&v).map(|(a, b)| a * b).sum();
        let want = -linear + 0.5 * quad;
        assert!(
            (j_u - want).abs() < 1e-12 * want.abs().max(1e-3),
            "{j_u} vs {want}"
        );
        assert!(j_star <= j_u);
    }
}
