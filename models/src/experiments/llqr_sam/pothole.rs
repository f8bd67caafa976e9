//! `pothole`: the two-scale landscape of the LLQR+SAM analysis. A broad bowl of
//! average curvature λ̄ with a narrow Gaussian dip (width w) at c; U = 1/λ̄ is what a
//! slow EMA of the curvature sees. Started inside the dip, GD, SAM, LLQR alone and
//! the Euclidean-normalised LLQR+SAM stay trapped, while the U-norm probe, which
//! reaches ρ/√λ̄, escapes once that radius is about 3w. Also the steady 2-cycle
//! amplitudes of the quadratic against their closed forms. Every run goes through
//! the real `LlqrSam` optimiser with a fixed diagonal U.

use crate::cli::RunConfig;
use crate::error::Result;
use crate::report::{Metrics, Plot, Table};
use autograd::Var;
use nn::checkpoint::AnyTensor;
use nn::ParamStore;
use optim::llqr::{LlqrConfig, LlqrSam, PerturbationNorm, Preconditioner};
use optim::Optimizer;
use tensor::Tensor;

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    ("steps", "steps per run (quick 5000, full 20000)"),
    ("lr", "step size η (0.01)"),
    (
        "grid",
        "points of the ρ grid for the escape ranges (quick 16, full 40)",
    ),
];

/// The landscape: ½λ̄x² − d·exp(−(x − c)²/(2w²)).
#[derive(Clone, Copy, Debug)]
pub struct Pothole {
    /// Average curvature λ̄ of the bowl.
    pub lam_bar: f64,
    /// Centre of the dip.
    pub centre: f64,
    /// Its width.
    pub width: f64,
    /// Its depth (extra curvature d/w² at the centre).
    pub depth: f64,
}

impl Pothole {
    /// The reference's values: λ̄ = 0.1, c = 1, w = 0.05, d = 0.025 (extra curvature 10).
    pub const REFERENCE: Pothole = Pothole {
        lam_bar: 0.1,
        centre: 1.0,
        width: 0.05,
        depth: 0.025,
    };

    /// The loss at `x`, differentiably.
    pub fn loss(&self, x: &Var<f64>) -> tensor::Result<Var<f64>> {
        let bowl = x.square()?.mul_scalar(0.5 * self.lam_bar)?;
        let dip = x
            .sub_scalar(self.centre)?
            .square()?
            .mul_scalar(-1.0 / (2.0 * self.width * self.width))?
            .exp()?
            .mul_scalar(self.depth)?;
        bowl.sub(&dip)?.sum_all()
    }

    /// Whether `x` has left the dip (|x − c| > 3w).
    pub fn escaped(&self, x: f64) -> bool {
        (x - self.centre).abs() > 3.0 * self.width
    }
}

/// An optimiser of the scalar toys.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Toy {
    /// Gradient descent.
    Gd,
    /// SAM (in 1-D, a sign-normalised probe of length ρ).
    Sam,
    /// LLQR alone: U-preconditioned GD.
    Llqr,
    /// LLQR+SAM with the Euclidean normalisation (probe length ρ).
    LlqrSamEuclidean,
    /// LLQR+SAM with the U-norm (probe length ρ√U).
    LlqrSamMatrix,
}

impl Toy {
    /// All five, in table order.
    pub const ALL: [Toy; 5] = [
        Toy::Gd,
        Toy::Sam,
        Toy::Llqr,
        Toy::LlqrSamEuclidean,
        Toy::LlqrSamMatrix,
    ];

    /// Name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Toy::Gd => "GD",
            Toy::Sam => "SAM",
            Toy::Llqr => "LLQR alone (U = 1/λ̄)",
            Toy::LlqrSamEuclidean => "LLQR+SAM, ‖Ug‖₂",
            Toy::LlqrSamMatrix => "LLQR+SAM, ‖g‖_U",
        }
    }

    fn perturbed(self) -> bool {
        !matches!(self, Toy::Gd | Toy::Llqr)
    }

    /// (U, ρ multiplier, norm) for a nominal ρ and average curvature λ̄.
    fn setting(self, rho: f64, lam_bar: f64) -> (f64, f64, PerturbationNorm) {
        let u = match self {
            Toy::Gd | Toy::Sam => 1.0,
            _ => 1.0 / lam_bar,
        };
        let norm = match self {
            Toy::LlqrSamMatrix => PerturbationNorm::Matrix,
            _ => PerturbationNorm::Euclidean,
        };
        (u, if self.perturbed() { rho } else { 0.0 }, norm)
    }
}

/// Runs `toy` on the scalar loss `f` from `x0`; returns the iterates.
pub fn scalar_run(
    f: &dyn Fn(&Var<f64>) -> tensor::Result<Var<f64>>,
    x0: f64,
    (u, rho, norm): (f64, f64, PerturbationNorm),
    lr: f64,
    steps: usize,
) -> Result<Vec<f64>> {
    let store = ParamStore::<f64>::new();
    let x = store.root().param("x", Tensor::from_vec(vec![x0], &[1])?)?;
    let cfg = LlqrConfig {
        lr,
        momentum: 0.0,
        rho,
        norm,
        refresh_every: usize::MAX,
        ..LlqrConfig::default()
    };
    let mut opt = LlqrSam::new(store.trainable(), cfg)?;
    opt.set_preconditioner(Preconditioner::diagonal(vec![Tensor::from_vec(
        vec![u],
        &[1],
    )?]));
    let mut path = Vec::with_capacity(steps);
    for _ in 0..steps {
        opt.step_closure(&|| f(&x.var()))?;
        path.push(x.value().to_vec()[0]);
    }
    Ok(path)
}

/// The radii ρ on a geometric grid of `points` from 0.005 to 1 at which `toy` ends
/// outside the dip, as ranges of consecutive grid points ("0.045–0.28"). Escape is not
/// monotone in ρ: in 1-D the sign-normalised probe settles where x ± (probe length)
/// is a stationary point, so large probes can park the iterate back in the dip.
fn escape_ranges(toy: Toy, p: &Pothole, lr: f64, steps: usize, points: usize) -> Result<String> {
    let f = |x: &Var<f64>| p.loss(x);
    let grid: Vec<f64> = (0..points)
        .map(|i| 0.005 * 200f64.powf(i as f64 / (points - 1) as f64))
        .collect();
    let mut ranges: Vec<(f64, f64)> = Vec::new();
    let mut open = false;
    for &rho in &grid {
        let path = scalar_run(&f, p.centre + 1e-3, toy.setting(rho, p.lam_bar), lr, steps)?;
        let out = p.escaped(*path.last().unwrap_or(&p.centre));
        match (out, open, ranges.last_mut()) {
            (true, true, Some(r)) => r.1 = rho,
            (true, _, _) => ranges.push((rho, rho)),
            _ => {}
        }
        open = out;
    }
    Ok(if ranges.is_empty() {
        "none".into()
    } else {
        ranges
            .iter()
            .map(|(a, b)| format!("{a:.3}–{b:.3}"))
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// The hovering table: the steady 2-cycle amplitude on ½λx² for SAM and LLQR+SAM (U
/// = 1/λ̄) against κρ/(2−κ), κ'ρλ̄^(−1/2)/(2−κ') and κ'ρ/(2−κ').
fn hovering() -> Result<Table> {
    let eta = 0.1;
    let mut t = Table::new(
        "pothole: steady 2-cycle amplitude on ½λx² (η 0.1, 4000 steps, max |x| over the last 200), measured / closed form",
        &["λ", "λ̄", "ρ", "SAM", "LLQR+SAM ‖g‖_U", "LLQR+SAM ‖Ug‖₂"],
    );
    for &(lam, lam_bar) in &[(1.0, 1.0), (1.0, 0.25), (1.0, 0.1), (4.0, 1.0)] {
        for &rho in &[0.01, 0.05] {
            let quad = move |x: &Var<f64>| x.square()?.mul_scalar(0.5 * lam)?.sum_all();
            let amp = |setting| -> Result<f64> {
                let path = scalar_run(&quad, 1.0, setting, eta, 4000)?;
                Ok(path[path.len() - 200..]
                    .iter()
                    .fold(0.0f64, |m, v| m.max(v.abs())))
            };
            let (k, kp) = (eta * lam, eta * lam / lam_bar);
            let cell = |measured: f64, want: f64| format!("{measured:.5} / {want:.5}");
            t.row(vec![
                format!("{lam}"),
                format!("{lam_bar}"),
                format!("{rho}"),
                cell(
                    amp((1.0, rho, PerturbationNorm::Euclidean))?,
                    k * rho / (2.0 - k),
                ),
                cell(
                    amp((1.0 / lam_bar, rho, PerturbationNorm::Matrix))?,
                    kp * rho / lam_bar.sqrt() / (2.0 - kp),
                ),
                cell(
                    amp((1.0 / lam_bar, rho, PerturbationNorm::Euclidean))?,
                    kp * rho / (2.0 - kp),
                ),
            ]);
        }
    }
    Ok(t)
}

/// Runs the experiment and returns its tables.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    cfg.check_known("pothole", OPTIONS)?;
    let steps = cfg.opt_positive("steps", if cfg.quick { 5000 } else { 20_000 })?;
    let lr: f64 = cfg.opt("lr", 0.01)?;
    let points: usize = cfg.opt("grid", if cfg.quick { 16 } else { 40 })?;
    if points < 2 {
        return Err(tensor::Error::value("pothole", "--grid needs at least 2 points").into());
    }
    let p = Pothole::REFERENCE;
    let rhos = [0.01, 0.02, 0.03, 0.05, 0.1];
    let mut headers = vec!["optimiser".to_string()];
    headers.extend(rhos.iter().map(|r| format!("ρ = {r}")));
    headers.push(format!("ρ ∈ [0.005, 1] that escape ({points}-point grid)"));
    let header_refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut escape = Table::new(
        &format!(
            "pothole: ½λ̄x² − d·exp(−(x−c)²/2w²), λ̄ {}, c {}, w {}, d {} (dip curvature {:.1}), η {lr}, {steps} steps from c + 1e-3; final x, and whether it left the dip (|x − c| > 3w)",
            p.lam_bar,
            p.centre,
            p.width,
            p.depth,
            p.depth / (p.width * p.width)
        ),
        &header_refs,
    );
    let mut metrics = Metrics::default();
    let mut finals: Vec<(String, AnyTensor)> = Vec::new();
    let f = |x: &Var<f64>| p.loss(x);
    for toy in Toy::ALL {
        let mut row = vec![toy.name().to_string()];
        for &rho in &rhos {
            let setting = toy.setting(rho, p.lam_bar);
            let path = scalar_run(&f, p.centre + 1e-3, setting, lr, steps)?;
            let last = *path.last().unwrap_or(&p.centre);
            row.push(format!(
                "{} ({last:.3})",
                if p.escaped(last) {
                    "escaped"
                } else {
                    "trapped"
                }
            ));
            finals.push((
                format!("final_x.{toy:?}.rho{rho}"),
                AnyTensor::from_tensor(&Tensor::from_vec(vec![last], &[1])?),
            ));
            if rho == 0.05 {
                let every = (steps / 500).max(1);
                for (i, x) in path.iter().enumerate().step_by(every) {
                    metrics.push(toy.name(), i, "x", *x);
                }
            }
        }
        row.push(if toy.perturbed() {
            escape_ranges(toy, &p, lr, steps, points)?
        } else {
            "— (no probe)".into()
        });
        escape.row(row);
    }
    let tables = vec![escape, hovering()?];
    Ok(cfg.run_dir("pothole")?.finish(
        "pothole",
        Plot::Curves {
            title:
                "pothole: trajectories at ρ = 0.05 (the dip is at x = 1, the bowl's minimum at 0)",
            metrics: &metrics,
            panels: &[("x", false)],
            x_label: "step",
        },
        finals,
        tables,
    )?)
}
