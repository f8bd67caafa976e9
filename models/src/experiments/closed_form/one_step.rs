//! `closed-form-one-step`: what one closed-form step buys over one gradient step.
//! For a frozen random backbone the last-layer problem is a quadratic,
//! L(W) = (1/n)‖Y − ΦWᵀ‖² + β‖W‖² with A = ΦᵀΦ/n + βI; one closed-form step lands on
//! its minimum L*, while one gradient step from the same W₀ = 0 at the best step size
//! (exact line search, η = ‖g‖²/(2 tr(gAgᵀ))) leaves a fraction of the excess
//! L − L* that grows with the condition number κ(A), at worst ((κ − 1)/(κ + 1))²
//! (Kantorovich). The backbone's width and its initial weight scale set κ; the table
//! and plot report κ, the losses after each step, the excess a gradient step leaves
//! against the bound, and how many such gradient steps reach 1 % of the excess.
//! Data: the molecular-energy features of `closed-form-regression`, standardised.

use super::regression::molecule_data;
use crate::cli::RunConfig;
use crate::error::{Error, Result};
use crate::report::{mean_std, svg, Plot, Table};
use autograd::{no_grad, Var};
use nn::{Activation, Mlp, Module, ParamStore};
use optim::closed_form::{ridge_solution, SolveForm};
use tensor::{Rng, Tensor};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    (
        "widths",
        "feature widths d of the random backbone (16,64,256,1024)",
    ),
    (
        "gains",
        "factors on the backbone's initial weights (0.5,2,8): larger saturates tanh and raises κ",
    ),
    ("beta", "ridge β against the mean loss (1e-4)"),
    (
        "molecules",
        "molecules generated (1500), 20% held out (the training part is used)",
    ),
    (
        "max-steps",
        "cap on the gradient steps counted to reach 1 % of the excess (10000)",
    ),
];

/// The quadratic last-layer problem of one frozen backbone.
struct Quadratic {
    /// A = ΦᵀΦ/n + βI `[d, d]`.
    a: Tensor<f64>,
    /// C = YᵀΦ/n `[k, d]`.
    c: Tensor<f64>,
    /// ‖Y‖²/n.
    s: f64,
}

impl Quadratic {
    /// L(W) = tr(WAWᵀ) − 2 tr(WCᵀ) + s.
    fn loss(&self, w: &Tensor<f64>) -> Result<f64> {
        let quad = w.matmul(&self.a)?.mul(w)?.sum_all().item()?;
        let lin = w.mul(&self.c)?.sum_all().item()?;
        Ok(quad - 2.0 * lin + self.s)
    }

    /// ∇L = 2(WA − C).
    fn grad(&self, w: &Tensor<f64>) -> Result<Tensor<f64>> {
        Ok(w.matmul(&self.a)?.sub(&self.c)?.mul_scalar(2.0))
    }

    /// One gradient step with exact line search: η = ‖g‖² / (2 tr(gAgᵀ)).
    fn line_search_step(&self, w: &Tensor<f64>) -> Result<Tensor<f64>> {
        let g = self.grad(w)?;
        let gg = g.square().sum_all().item()?;
        let gag = g.matmul(&self.a)?.mul(&g)?.sum_all().item()?;
        if gag <= 0.0 {
            return Ok(w.clone());
        }
        Ok(w.sub(&g.mul_scalar(gg / (2.0 * gag)))?)
    }
}

/// One row's measurements.
struct Measured {
    kappa: f64,
    initial: f64,
    after_gradient: f64,
    after_closed_form: f64,
    excess_left: f64,
    bound: f64,
    steps_to_1pc: Option<usize>,
}

/// Features `[n, d + 1]` (with the constant column) of a random backbone.
fn features(x: &Tensor<f64>, width: usize, gain: f64, seed: u64) -> Result<Tensor<f64>> {
    let store = ParamStore::<f64>::new();
    let backbone = Mlp::new(
        &store.root().sub("backbone"),
        &[x.shape()[1], 128, width],
        Activation::Tanh,
        &mut Rng::new(seed),
    )?;
    for p in store.trainable() {
        p.set(p.value().mul_scalar(gain))?;
    }
    let phi = no_grad(|| backbone.forward(&Var::constant(x.clone()))?.tanh())?;
    let ones = Tensor::ones(&[x.shape()[0], 1])?;
    Ok(Tensor::cat(&[phi.value(), &ones], 1)?)
}

fn measure(phi: &Tensor<f64>, y: &Tensor<f64>, beta: f64, max_steps: usize) -> Result<Measured> {
    let n = phi.shape()[0] as f64;
    let d = phi.shape()[1];
    let a = phi
        .t()?
        .matmul(phi)?
        .mul_scalar(1.0 / n)
        .add(&Tensor::<f64>::eye(d)?.mul_scalar(beta))?;
    let q = Quadratic {
        a,
        c: y.t()?.matmul(phi)?.mul_scalar(1.0 / n),
        s: y.square().sum_all().item()? / n,
    };
    let (eig, _) = q.a.eigh()?;
    let eig = eig.to_vec();
    let kappa = eig[d - 1] / eig[0];
    // The sum-form solve with β·n is the minimiser of the mean-form L.
    let w_star = ridge_solution(phi, y, beta * n, SolveForm::Primal)?.w;
    let after_closed_form = q.loss(&w_star)?;
    let w0 = Tensor::zeros(&[y.shape()[1], d])?;
    let initial = q.loss(&w0)?;
    let mut w = q.line_search_step(&w0)?;
    let after_gradient = q.loss(&w)?;
    let excess0 = initial - after_closed_form;
    let excess_left = (after_gradient - after_closed_form) / excess0;
    let mut steps_to_1pc = None;
    for step in 1..=max_steps {
        if q.loss(&w)? - after_closed_form <= 0.01 * excess0 {
            steps_to_1pc = Some(step);
            break;
        }
        w = q.line_search_step(&w)?;
    }
    Ok(Measured {
        kappa,
        initial,
        after_gradient,
        after_closed_form,
        excess_left,
        bound: ((kappa - 1.0) / (kappa + 1.0)).powi(2),
        steps_to_1pc,
    })
}

/// The options of one run.
struct Options {
    /// Feature widths d of the random backbone.
    widths: Vec<usize>,
    /// Factors on the backbone's initial weights.
    gains: Vec<f64>,
    /// Ridge β against the mean loss.
    beta: f64,
    /// Cap on the gradient steps counted to reach 1 % of the excess.
    max_steps: usize,
    /// Molecules generated (the training part is used).
    molecules: usize,
}

impl Options {
    /// The options from the command line, checked.
    fn parse(cfg: &RunConfig) -> Result<Options> {
        cfg.check_known("closed-form-one-step", OPTIONS)?;
        let widths: Vec<usize> = cfg.opt_list(
            "widths",
            if cfg.quick {
                &[16, 64, 256]
            } else {
                &[16, 64, 256, 1024]
            },
        )?;
        let gains: Vec<f64> = cfg.opt_list("gains", &[0.5, 2.0, 8.0])?;
        let beta: f64 = cfg.opt("beta", 1e-4)?;
        let max_steps: usize = cfg.opt("max-steps", 10_000)?;
        let molecules: usize = cfg.opt("molecules", 1500)?;
        if widths.contains(&0)
            || gains.iter().any(|g| !(g.is_finite() && *g > 0.0))
            || !(beta > 0.0 && beta.is_finite())
        {
            return Err(Error::usage(format!("needs positive widths, finite positive gains and a finite β > 0, got {widths:?}, {gains:?}, {beta}"),
            ));
        }
        Ok(Options {
            widths,
            gains,
            beta,
            max_steps,
            molecules,
        })
    }
}

/// The table, titled with the setting (`molecules` training rows).
fn table(beta: f64, molecules: usize, seeds: usize) -> Table {
    Table::new(
        &format!(
            "closed-form-one-step: one closed-form step vs one gradient step at the best step size, from W₀ = 0, frozen random backbone, {molecules} molecules, β = {beta}, {seeds} seeds (mean ± std; losses are the mean squared error of standardised energies + β‖W‖²)",
        ),
        &[
            "width d",
            "gain",
            "log₁₀ κ(A)",
            "loss at W₀",
            "after 1 gradient step",
            "after 1 closed-form step",
            "excess left by the gradient step",
            "bound ((κ−1)/(κ+1))²",
            "gradient steps to 1 % excess",
        ],
    )
}

/// The table row of one (width, gain) from its seeds' measurements.
fn row((width, gain): (usize, f64), rows: &[Measured], max_steps: usize) -> Vec<String> {
    let col = |f: &dyn Fn(&Measured) -> f64| -> Vec<f64> { rows.iter().map(f).collect() };
    let log_kappa = col(&|m| m.kappa.log10());
    let reached: Vec<f64> = rows
        .iter()
        .filter_map(|m| m.steps_to_1pc.map(|s| s as f64))
        .collect();
    let steps = if reached.len() == rows.len() {
        mean_std(&reached, 0)
    } else {
        format!(
            "> {max_steps} for {} of {}",
            rows.len() - reached.len(),
            rows.len()
        )
    };
    vec![
        width.to_string(),
        gain.to_string(),
        mean_std(&log_kappa, 2),
        mean_std(&col(&|m| m.initial), 4),
        mean_std(&col(&|m| m.after_gradient), 4),
        mean_std(&col(&|m| m.after_closed_form), 4),
        mean_std(&col(&|m| m.excess_left), 4),
        mean_std(&col(&|m| m.bound), 4),
        steps,
    ]
}

/// The plot's points, (log₁₀ κ, excess left) measured and bounded, one per run.
#[derive(Default)]
struct Points {
    measured: Vec<(f64, f64)>,
    bound: Vec<(f64, f64)>,
}

impl Points {
    /// The excess left after one step against log₁₀ κ, measured and the bound.
    fn panel(self) -> svg::Panel {
        let by_x = |mut v: Vec<(f64, f64)>| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            v
        };
        svg::Panel {
            title: "excess loss left after one step (closed form: 0)".into(),
            x_label: "log₁₀ κ(ΦᵀΦ/n + βI)".into(),
            log_y: true,
            series: vec![
                svg::Series {
                    label: "one gradient step, best step size".into(),
                    points: by_x(self.measured),
                    band: Vec::new(),
                },
                svg::Series {
                    label: "Kantorovich bound ((κ−1)/(κ+1))²".into(),
                    points: by_x(self.bound),
                    band: Vec::new(),
                },
            ],
        }
    }
}

/// Every (width, gain) at every seed on the molecules' features `x` and targets
/// `y`: a table row each, and the plot's points.
fn measure_all(
    o: &Options,
    (x, y): (&Tensor<f64>, &Tensor<f64>),
    seeds: &[u64],
    table: &mut Table,
) -> Result<Points> {
    let mut points = Points::default();
    for &width in &o.widths {
        for &gain in &o.gains {
            let mut rows = Vec::new();
            for &seed in seeds {
                let phi = features(x, width, gain, seed)?;
                rows.push(measure(&phi, y, o.beta, o.max_steps)?);
            }
            table.row(row((width, gain), &rows, o.max_steps));
            for m in &rows {
                points.measured.push((m.kappa.log10(), m.excess_left));
                points.bound.push((m.kappa.log10(), m.bound));
            }
        }
    }
    Ok(points)
}

/// Runs the experiment and returns its table.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    let o = Options::parse(cfg)?;
    let (train, _, _) = molecule_data(o.molecules)?;
    let y = train.values()?.clone();
    let seeds = cfg.seed_list(3, 3)?;
    let mut table = table(o.beta, train.len(), seeds.len());
    let points = measure_all(&o, (&train.x, &y), &seeds, &mut table)?;
    Ok(cfg.run_dir("closed-form-one-step")?.finish(
        "closed-form-one-step",
        Plot::Panels {
            title: "closed-form-one-step: one gradient step vs the condition number",
            panels: &[points.panel()],
        },
        Vec::new(),
        vec![table],
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Steepest descent with exact line search attains Kantorovich's bound when the
    /// initial error is (1/λ_min, 1/λ_max) in the eigenbasis: with A = diag(1, 4),
    /// W* = (1, 1/4) (so C = W*A = (1, 1)) and W₀ = 0, one step leaves exactly
    /// ((4 − 1)/(4 + 1))² = 0.36 of the excess; a step size off by any factor leaves
    /// more.
    #[test]
    fn exact_line_search_attains_the_kantorovich_bound() {
        let q = Quadratic {
            a: Tensor::from_vec(vec![1.0, 0.0, 0.0, 4.0], &[2, 2]).unwrap(),
            c: Tensor::from_vec(vec![1.0, 1.0], &[1, 2]).unwrap(),
            s: 10.0,
        };
        let w_star = Tensor::from_vec(vec![1.0, 0.25], &[1, 2]).unwrap();
        let best = q.loss(&w_star).unwrap();
        assert!(q.grad(&w_star).unwrap().square().sum_all().item().unwrap() < 1e-28);
        let w0 = Tensor::zeros(&[1, 2]).unwrap();
        let excess0 = q.loss(&w0).unwrap() - best;
        let w1 = q.line_search_step(&w0).unwrap();
        let ratio = (q.loss(&w1).unwrap() - best) / excess0;
        assert!((ratio - 0.36).abs() < 1e-14, "{ratio}");
    }

    #[test]
    fn measure_lands_the_closed_form_on_the_minimum_and_respects_the_bound() {
        let mut rng = Rng::new(3);
        let x = Tensor::<f64>::rand_normal(&[60, 5], 0.0, 1.0, &mut rng).unwrap();
        let y = Tensor::<f64>::rand_normal(&[60, 1], 0.0, 1.0, &mut rng).unwrap();
        for gain in [0.5, 4.0] {
            let phi = features(&x, 8, gain, 1).unwrap();
            let m = measure(&phi, &y, 1e-3, 100_000).unwrap();
            assert!(m.after_closed_form < m.after_gradient && m.after_gradient < m.initial);
            assert!(
                m.excess_left <= m.bound + 1e-12,
                "{} > {}",
                m.excess_left,
                m.bound
            );
            assert!(m.steps_to_1pc.is_some());
        }
    }
}
