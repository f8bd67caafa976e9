//! A pseudo-spectral solver of viscous Burgers, u_t + (u²/2)_x = ν u_xx on the
//! periodic unit interval, for a batch of solutions at once.
//!
//! A solution is held as its real-FFT spectrum on N grid points (`[batch, N/2 + 1]`
//! complex bins, k = 0 … N/2). Diffusion is integrated exactly by the integrating
//! factor e^{−ν(2πk)²t}; the non-linear term −(ik/2)·F(u²) is explicit, by the classical
//! fourth-order Runge–Kutta scheme on the transformed variable (Lawson's IF-RK4), and
//! de-aliased by the 2/3 rule: bins above N/3 are kept at zero, so the quadratic
//! product is computed without aliasing and the discrete energy ½∫u² obeys the exact
//! balance dE/dt = −ν∫u_x² of the continuous equation.

use std::f64::consts::PI;
use tensor::fft::Norm;
use tensor::{Error, Result, Tensor};

/// A batch of spectra: `re[b][k]`, `im[b][k]` flattened row-major, `bins` per row.
#[derive(Clone, Debug, PartialEq)]
pub struct Spectrum {
    /// Rows (solutions).
    pub batch: usize,
    /// Grid points N.
    pub points: usize,
    /// Real parts, `batch × (N/2 + 1)`.
    pub re: Vec<f64>,
    /// Imaginary parts.
    pub im: Vec<f64>,
}

impl Spectrum {
    /// Bins per row, N/2 + 1.
    pub fn bins(&self) -> usize {
        self.points / 2 + 1
    }

    /// The spectrum of grid values `[batch, N]`.
    pub fn from_values(u: &Tensor<f64>) -> Result<Spectrum> {
        if u.ndim() != 2 {
            return Err(Error::shape("Spectrum", "values must be [batch, points]"));
        }
        let (batch, points) = (u.shape()[0], u.shape()[1]);
        let z = u.rfft(-1, Norm::Backward)?.contiguous().to_vec();
        let re = z.iter().step_by(2).copied().collect();
        let im = z.iter().skip(1).step_by(2).copied().collect();
        Ok(Spectrum {
            batch,
            points,
            re,
            im,
        })
    }

    /// Grid values `[batch, n]` on n points, n ≥ N (trigonometric interpolation: the
    /// bins are rescaled and the missing ones are zero).
    pub fn values(&self, n: usize) -> Result<Tensor<f64>> {
        if n < self.points {
            return Err(Error::value(
                "Spectrum::values",
                format!("{n} points is coarser than the {}-point grid", self.points),
            ));
        }
        let scale = n as f64 / self.points as f64;
        let mut z = Vec::with_capacity(self.re.len() * 2);
        for (r, i) in self.re.iter().zip(&self.im) {
            z.push(r * scale);
            z.push(i * scale);
        }
        Tensor::from_vec(z, &[self.batch, self.bins(), 2])?.irfft(1, n, Norm::Backward)
    }

    /// The mean of each solution over the interval.
    pub fn means(&self) -> Vec<f64> {
        let b = self.bins();
        (0..self.batch)
            .map(|r| self.re[r * b] / self.points as f64)
            .collect()
    }

    /// ½∫u² and ∫u_x² of each solution (Parseval over the bins).
    pub fn energy_and_dissipation(&self) -> Vec<(f64, f64)> {
        let (b, n) = (self.bins(), self.points as f64);
        (0..self.batch)
            .map(|r| {
                let (mut e, mut d) = (0.0, 0.0);
                for k in 0..b {
                    let p = self.re[r * b + k].powi(2) + self.im[r * b + k].powi(2);
                    // Bins other than 0 and N/2 stand for a ± pair.
                    let w = if k == 0 || 2 * k == self.points {
                        1.0
                    } else {
                        2.0
                    };
                    e += w * p;
                    d += w * p * (2.0 * PI * k as f64).powi(2);
                }
                (0.5 * e / (n * n), d / (n * n))
            })
            .collect()
    }
}

/// The time stepper for one grid size, viscosity and step.
pub struct Solver {
    points: usize,
    dt: f64,
    /// e^{−ν(2πk)²dt} and e^{−ν(2πk)²dt/2} per bin.
    full: Vec<f64>,
    half: Vec<f64>,
    /// Highest bin kept by the 2/3 rule.
    cutoff: usize,
}

impl Solver {
    /// A solver on `points` grid points (even, ≥ 8) with viscosity ν > 0 and step dt > 0.
    pub fn new(points: usize, viscosity: f64, dt: f64) -> Result<Solver> {
        if points < 8 || points % 2 == 1 {
            return Err(Error::value(
                "Burgers solver",
                format!("the grid needs an even number of points ≥ 8, got {points}"),
            ));
        }
        if !(viscosity.is_finite() && viscosity > 0.0 && dt.is_finite() && dt > 0.0) {
            return Err(Error::value(
                "Burgers solver",
                format!("viscosity and time step must be positive, got ν = {viscosity}, dt = {dt}"),
            ));
        }
        let decay = |k: usize, t: f64| (-viscosity * (2.0 * PI * k as f64).powi(2) * t).exp();
        let bins = points / 2 + 1;
        tensor::layout::checked_numel("Burgers solver", &[bins])?;
        Ok(Solver {
            points,
            dt,
            full: (0..bins).map(|k| decay(k, dt)).collect(),
            half: (0..bins).map(|k| decay(k, dt / 2.0)).collect(),
            cutoff: points / 3,
        })
    }

    /// The highest bin a solution may use (N/3).
    pub fn cutoff(&self) -> usize {
        self.cutoff
    }

    /// Zeroes the bins above the 2/3 cutoff.
    pub fn dealias(&self, s: &mut Spectrum) {
        let b = s.bins();
        for r in 0..s.batch {
            for k in self.cutoff + 1..b {
                s.re[r * b + k] = 0.0;
                s.im[r * b + k] = 0.0;
            }
        }
    }

    /// −(ik/2)·F(u²) for the de-aliased spectrum `v` (k the angular wavenumber 2π·bin).
    fn nonlinear(&self, v: &Spectrum) -> Result<Spectrum> {
        let u = v.values(self.points)?;
        let mut out = Spectrum::from_values(&u.square())?;
        let b = out.bins();
        for r in 0..out.batch {
            for k in 0..b {
                let i = r * b + k;
                if k > self.cutoff {
                    out.re[i] = 0.0;
                    out.im[i] = 0.0;
                    continue;
                }
                let half_k = PI * k as f64;
                let (a, c) = (out.re[i], out.im[i]);
                // (a + ic)·(−i·half_k) = half_k·c − i·half_k·a
                out.re[i] = half_k * c;
                out.im[i] = -half_k * a;
            }
        }
        Ok(out)
    }

    /// `factor[k]·x + scale·y`, bin by bin.
    fn combine(&self, factor: &[f64], x: &Spectrum, scale: f64, y: &Spectrum) -> Spectrum {
        let b = x.bins();
        let mut out = x.clone();
        for i in 0..x.re.len() {
            let f = factor[i % b];
            out.re[i] = f * x.re[i] + scale * y.re[i];
            out.im[i] = f * x.im[i] + scale * y.im[i];
        }
        out
    }

    /// One IF-RK4 step of length dt.
    pub fn step(&self, v: &Spectrum) -> Result<Spectrum> {
        let ones = vec![1.0; v.bins()];
        let dt = self.dt;
        let a = self.nonlinear(v)?;
        let b = self.nonlinear(&self.combine(
            &self.half,
            &self.combine(&ones, v, dt / 2.0, &a),
            0.0,
            &a,
        ))?;
        let c = self.nonlinear(&self.combine(&self.half, v, dt / 2.0, &b))?;
        let ev = self.combine(&self.full, v, 0.0, &a);
        let d =
            self.nonlinear(&self.combine(&ones, &ev, dt, &self.combine(&self.half, &c, 0.0, &c)))?;
        // v' = E v + dt/6 (E a + 2 E½ (b + c) + d)
        let bins = v.bins();
        let mut out = ev;
        for i in 0..out.re.len() {
            let (e, h) = (self.full[i % bins], self.half[i % bins]);
            out.re[i] += dt / 6.0 * (e * a.re[i] + 2.0 * h * (b.re[i] + c.re[i]) + d.re[i]);
            out.im[i] += dt / 6.0 * (e * a.im[i] + 2.0 * h * (b.im[i] + c.im[i]) + d.im[i]);
        }
        Ok(out)
    }

    /// Integrates `v` (de-aliased first) for `steps` steps, calling `observe(step, v)`
    /// after each. Fails if the solution stops being finite or its energy grows (the
    /// step is then too long for this grid).
    pub fn run(
        &self,
        v: &Spectrum,
        steps: usize,
        mut observe: impl FnMut(usize, &Spectrum),
    ) -> Result<Spectrum> {
        if v.points != self.points {
            return Err(Error::shape(
                "Burgers solver",
                format!(
                    "a {}-point spectrum on a {}-point solver",
                    v.points, self.points
                ),
            ));
        }
        let mut v = v.clone();
        self.dealias(&mut v);
        let mut energy: Vec<f64> = v.energy_and_dissipation().iter().map(|e| e.0).collect();
        for step in 1..=steps {
            v = self.step(&v)?;
            let now: Vec<f64> = v.energy_and_dissipation().iter().map(|e| e.0).collect();
            for (r, (&e, &before)) in now.iter().zip(&energy).enumerate() {
                if !e.is_finite() || e > before * (1.0 + 1e-9) + 1e-300 {
                    return Err(Error::numerical(
                        "Burgers solver",
                        format!(
                            "solution {r} became unstable at step {step} (energy {before:e} → {e:e}); use a shorter time step"
                        ),
                    ));
                }
            }
            energy = now;
            observe(step, &v);
        }
        Ok(v)
    }
}
