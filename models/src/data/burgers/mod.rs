//! The Burgers benchmark of the Fourier-neural-operator paper, generated in pure Rust:
//! initial conditions u₀ ~ N(0, 625(−Δ + 25I)⁻²) on the periodic unit interval, and the
//! solution u(·, T) of viscous Burgers (ν = 0.1, T = 1 by default); the operator to
//! learn is u₀ ↦ u(·, T), both sampled on s grid points.
//!
//! The random field is drawn in its Karhunen–Loève basis: u₀ = Σₖ σₖ √2 (aₖ cos 2πkx +
//! bₖ sin 2πkx) with aₖ, bₖ ~ N(0, 1) and σₖ = 25/((2πk)² + 25), for k = 1 … N/3 (N the
//! solver's grid). The k = 0 mode is left out, as in the reference generator (so every
//! u₀ has zero mean); the modes above N/3 are left out so that the solver, which keeps
//! N/3 modes, sees u₀ exactly: with the default N = 512 they would carry a standard
//! deviation of 2·10⁻⁴ against the field's 0.6. Values on s points are exact point
//! values of that trigonometric polynomial (subsampled from the N-grid when s ≤ N,
//! interpolated when s > N), and likewise for u(·, T).

pub mod cache;
pub mod solver;

use solver::{Solver, Spectrum};
use std::f64::consts::PI;
use tensor::layout::checked_numel;
use tensor::{Error, Result, Rng, Tensor};

/// What to generate.
#[derive(Clone, Debug, PartialEq)]
pub struct BurgersConfig {
    /// Number of (u₀, u(T)) pairs.
    pub samples: usize,
    /// Grid points s of the returned functions.
    pub points: usize,
    /// Viscosity ν.
    pub viscosity: f64,
    /// Final time T.
    pub horizon: f64,
    /// Grid of the solver, N (even).
    pub solver_points: usize,
    /// Time step of the solver.
    pub dt: f64,
    /// Seed of the random field.
    pub seed: u64,
}

impl BurgersConfig {
    /// The FNO paper's equation (ν = 0.1, T = 1) with `samples` pairs on `points`
    /// points, a 512-point solver and dt = 10⁻³.
    pub fn new(samples: usize, points: usize, seed: u64) -> Self {
        BurgersConfig {
            samples,
            points,
            viscosity: 0.1,
            horizon: 1.0,
            solver_points: 512,
            dt: 1e-3,
            seed,
        }
    }

    /// Checks the settings; returns the number of solver steps.
    pub fn validate(&self) -> Result<usize> {
        let n = self.solver_points;
        if self.samples == 0 || self.points < 2 {
            return Err(Error::value(
                "Burgers",
                format!(
                    "needs at least one sample and two points, got {} samples on {} points",
                    self.samples, self.points
                ),
            ));
        }
        // Sized before anything is allocated: the data, and the solver's grid
        // (twice as fine in the convergence check; the fields on it are solved in
        // batches, each checked by `random_field`).
        checked_numel("Burgers", &[self.samples, self.points])?;
        checked_numel("Burgers", &[2, n])?;
        if !(self.horizon.is_finite() && self.horizon > 0.0) {
            return Err(Error::value(
                "Burgers",
                format!("the final time must be positive, got {}", self.horizon),
            ));
        }
        if self.points < n && !n.is_multiple_of(self.points) {
            return Err(Error::value(
                "Burgers",
                format!(
                    "an output grid coarser than the solver's ({n} points) must divide it, got {} points",
                    self.points
                ),
            ));
        }
        Solver::new(n, self.viscosity, self.dt)?;
        let steps = (self.horizon / self.dt).round();
        if (steps * self.dt - self.horizon).abs() > 1e-9 * self.horizon {
            return Err(Error::value(
                "Burgers",
                format!(
                    "the time step {} must divide the final time {}",
                    self.dt, self.horizon
                ),
            ));
        }
        Ok(steps as usize)
    }
}

/// Generated pairs: `initial` and `fin` are `[samples, points]`.
#[derive(Clone, Debug)]
pub struct BurgersData {
    /// What was generated.
    pub config: BurgersConfig,
    /// u₀ on the grid.
    pub initial: Tensor<f64>,
    /// u(·, T) on the grid.
    pub fin: Tensor<f64>,
}

/// The standard deviation σₖ of the random field's k-th cosine and sine modes.
pub fn field_std(k: usize) -> f64 {
    25.0 / ((2.0 * PI * k as f64).powi(2) + 25.0)
}

/// Draws `batch` initial conditions as spectra on an N-point grid, modes 1 … N/3
/// (the sizes checked against the allocation cap first).
pub fn random_field(batch: usize, points: usize, rng: &mut Rng) -> Result<Spectrum> {
    let bins = points / 2 + 1;
    checked_numel("random_field", &[batch, bins])?;
    let modes = points / 3;
    let mut s = Spectrum {
        batch,
        points,
        re: vec![0.0; batch * bins],
        im: vec![0.0; batch * bins],
    };
    // rfft bin Û_k of √2σ(a cos + b sin) is (N/√2)σ(a − ib).
    let amplitude = points as f64 / 2f64.sqrt();
    for r in 0..batch {
        for k in 1..=modes {
            let (a, b) = rng.normal_pair();
            s.re[r * bins + k] = amplitude * field_std(k) * a;
            s.im[r * bins + k] = -amplitude * field_std(k) * b;
        }
    }
    Ok(s)
}

/// Values `[batch, s]` of a spectrum on an N-grid: every (N/s)-th grid value when s
/// divides N, else the interpolant on s points.
pub fn sample(spectrum: &Spectrum, s: usize) -> Result<Tensor<f64>> {
    let n = spectrum.points;
    if s >= n {
        return spectrum.values(s);
    }
    let full = spectrum.values(n)?;
    let idx: Vec<usize> = (0..s).map(|j| j * (n / s)).collect();
    full.index_select(1, &idx)
}

/// The solver's own convergence test: the first `functions` initial conditions of
/// `cfg`'s field solved as configured and again on twice the grid with half the
/// time step (the same functions, resampled); returns the largest difference of the
/// two solutions on the output grid, relative to the largest |u(T)|. It bounds the
/// discretisation error of the generated targets (with ν = 0.01 and a grid too
/// coarse for its shocks it is large).
pub fn convergence_check(cfg: &BurgersConfig, functions: usize) -> Result<f64> {
    let steps = cfg.validate()?;
    let n = cfg.solver_points;
    let coarse = Solver::new(n, cfg.viscosity, cfg.dt)?;
    let fine = Solver::new(2 * n, cfg.viscosity, cfg.dt / 2.0)?;
    let u0 = random_field(functions.max(1), n, &mut Rng::new(cfg.seed))?;
    let u0_fine = Spectrum::from_values(&u0.values(2 * n)?)?;
    let a = sample(&coarse.run(&u0, steps, |_, _| {})?, cfg.points)?;
    let b = sample(&fine.run(&u0_fine, 2 * steps, |_, _| {})?, cfg.points)?;
    let diff = a.sub(&b)?.abs().max_all()?;
    let scale = b.abs().max_all()?;
    Ok(diff / scale.max(f64::MIN_POSITIVE))
}

/// Generates the pairs (in chunks of 64 solutions, to bound memory).
pub fn generate(cfg: &BurgersConfig) -> Result<BurgersData> {
    let steps = cfg.validate()?;
    let solver = Solver::new(cfg.solver_points, cfg.viscosity, cfg.dt)?;
    let mut rng = Rng::new(cfg.seed);
    let (mut initial, mut fin) = (Vec::new(), Vec::new());
    let mut done = 0;
    while done < cfg.samples {
        let batch = (cfg.samples - done).min(64);
        let u0 = random_field(batch, cfg.solver_points, &mut rng)?;
        let ut = solver.run(&u0, steps, |_, _| {})?;
        initial.push(sample(&u0, cfg.points)?);
        fin.push(sample(&ut, cfg.points)?);
        done += batch;
    }
    let cat = |parts: &[Tensor<f64>]| Tensor::cat(&parts.iter().collect::<Vec<_>>(), 0);
    Ok(BurgersData {
        config: cfg.clone(),
        initial: cat(&initial)?,
        fin: cat(&fin)?,
    })
}
