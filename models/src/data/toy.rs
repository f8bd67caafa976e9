//! Low-dimensional densities for the ICNN experiments: log-concave 1-D targets
//! (Gumbel, Laplace) and the 2-D toys of the flow literature (8 Gaussians, two
//! spirals), with seeded samplers and (exact or Monte Carlo) log-densities.

use std::f64::consts::{LN_2, PI};
use tensor::{Error, Result, Rng, Tensor};

/// A 1-D log-concave target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target1d {
    /// Standard Gumbel, log p(x) = −x − e^{−x}.
    Gumbel,
    /// Standard Laplace, log p(x) = −ln 2 − |x|.
    Laplace,
}

impl Target1d {
    /// Parses "gumbel" or "laplace".
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "gumbel" => Ok(Target1d::Gumbel),
            "laplace" => Ok(Target1d::Laplace),
            other => Err(Error::value(
                "toy",
                format!("unknown 1-D target '{other}' (gumbel, laplace)"),
            )),
        }
    }

    /// Name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Target1d::Gumbel => "Gumbel",
            Target1d::Laplace => "Laplace",
        }
    }

    /// The plotting/quadrature window.
    pub fn window(self) -> (f64, f64) {
        match self {
            Target1d::Gumbel => (-5.0, 12.0),
            Target1d::Laplace => (-8.0, 8.0),
        }
    }

    /// The exact log-density.
    pub fn log_density(self, x: f64) -> f64 {
        match self {
            Target1d::Gumbel => -x - (-x).exp(),
            Target1d::Laplace => -LN_2 - x.abs(),
        }
    }

    /// `n` samples as `[n, 1]`.
    pub fn sample(self, n: usize, rng: &mut Rng) -> Result<Tensor<f64>> {
        tensor::layout::checked_numel("Target1d::sample", &[n, 1])?;
        let v = (0..n)
            .map(|_| match self {
                Target1d::Gumbel => -(-(rng.uniform().clamp(1e-9, 1.0 - 1e-9)).ln()).ln(),
                Target1d::Laplace => {
                    let u = rng.uniform() - 0.5;
                    -u.signum() * (1.0 - 2.0 * u.abs()).max(1e-300).ln()
                }
            })
            .collect();
        Tensor::from_vec(v, &[n, 1])
    }
}

/// A 2-D toy target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target2d {
    /// Eight Gaussians on a circle (FFJORD's convention: centres ×4, σ 0.5, all /1.414).
    EightGaussians,
    /// Two interleaved spirals (FFJORD's convention).
    TwoSpirals,
}

impl Target2d {
    /// Parses "8gaussians" or "2spirals".
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "8gaussians" => Ok(Target2d::EightGaussians),
            "2spirals" => Ok(Target2d::TwoSpirals),
            other => Err(Error::value(
                "toy",
                format!("unknown 2-D target '{other}' (8gaussians, 2spirals)"),
            )),
        }
    }

    /// Name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Target2d::EightGaussians => "8 Gaussians",
            Target2d::TwoSpirals => "2 spirals",
        }
    }

    /// `n` samples as `[n, 2]`.
    pub fn sample(self, n: usize, rng: &mut Rng) -> Result<Tensor<f64>> {
        let mut v = Vec::with_capacity(tensor::layout::checked_numel("Target2d::sample", &[n, 2])?);
        for i in 0..n {
            match self {
                Target2d::EightGaussians => {
                    let (cx, cy) = gaussian_centre(rng.below(8)? as usize);
                    v.push((0.5 * rng.normal() + cx) / 1.414);
                    v.push((0.5 * rng.normal() + cy) / 1.414);
                }
                Target2d::TwoSpirals => {
                    let (x, y) = spiral_centre(i % 2 == 0, rng);
                    v.push(x + 0.1 * rng.normal());
                    v.push(y + 0.1 * rng.normal());
                }
            }
        }
        Tensor::from_vec(v, &[n, 2])
    }

    /// log p(x) for each row of `x` `[m, 2]`: exact for the Gaussians; for the
    /// spirals, the Gaussian-noise convolution of `centres` sampled spiral points
    /// (a Monte Carlo estimate of the exact density).
    pub fn log_density(self, x: &Tensor<f64>, centres: usize, rng: &mut Rng) -> Result<Vec<f64>> {
        tensor::layout::checked_numel("Target2d::log_density", &[centres, 2])?;
        let pts = x.to_vec();
        let (comps, sigma): (Vec<(f64, f64)>, f64) = match self {
            Target2d::EightGaussians => (
                (0..8)
                    .map(|k| {
                        let (cx, cy) = gaussian_centre(k);
                        (cx / 1.414, cy / 1.414)
                    })
                    .collect(),
                0.5 / 1.414,
            ),
            Target2d::TwoSpirals => (
                (0..centres)
                    .map(|i| spiral_centre(i % 2 == 0, rng))
                    .collect(),
                0.1,
            ),
        };
        let norm = -(2.0 * PI * sigma * sigma).ln();
        Ok(pts
            .chunks(2)
            .map(|p| {
                let logs: Vec<f64> = comps
                    .iter()
                    .map(|(cx, cy)| {
                        norm - ((p[0] - cx).powi(2) + (p[1] - cy).powi(2)) / (2.0 * sigma * sigma)
                    })
                    .collect();
                let m = logs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                m + (logs.iter().map(|l| (l - m).exp()).sum::<f64>() / comps.len() as f64).ln()
            })
            .collect())
    }
}

fn gaussian_centre(k: usize) -> (f64, f64) {
    let s = std::f64::consts::FRAC_1_SQRT_2;
    let c = [
        (1.0, 0.0),
        (-1.0, 0.0),
        (0.0, 1.0),
        (0.0, -1.0),
        (s, s),
        (s, -s),
        (-s, s),
        (-s, -s),
    ][k];
    (4.0 * c.0, 4.0 * c.1)
}

/// A noise-free point of one arm of the spirals, scaled by 1/3.
fn spiral_centre(first: bool, rng: &mut Rng) -> (f64, f64) {
    let n = rng.uniform().sqrt() * 540.0 * 2.0 * PI / 360.0;
    let x = -n.cos() * n + 0.5 * rng.uniform();
    let y = n.sin() * n + 0.5 * rng.uniform();
    if first {
        (x / 3.0, y / 3.0)
    } else {
        (-x / 3.0, -y / 3.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_d_targets_are_normalised_and_sampled_right() {
        for t in [Target1d::Gumbel, Target1d::Laplace] {
            let (a, b) = t.window();
            let n = 20000;
            let dx = (b - a) / n as f64;
            let mass: f64 = (0..n)
                .map(|i| t.log_density(a + (i as f64 + 0.5) * dx).exp() * dx)
                .sum();
            assert!((mass - 1.0).abs() < 1e-3, "{t:?}: {mass}");
            let s = t.sample(20000, &mut Rng::new(1)).unwrap();
            let mean = s.mean_all().unwrap().item().unwrap();
            // Gumbel mean is the Euler–Mascheroni constant, Laplace's is 0.
            let want = if t == Target1d::Gumbel { 0.5772 } else { 0.0 };
            assert!((mean - want).abs() < 0.03, "{t:?}: mean {mean}");
        }
    }

    #[test]
    fn the_gaussian_mixture_density_integrates_to_one() {
        let t = Target2d::EightGaussians;
        let (n, lo, hi) = (200, -5.0, 5.0);
        let h = (hi - lo) / n as f64;
        let grid: Vec<f64> = (0..n * n)
            .flat_map(|k| {
                [
                    lo + (k / n) as f64 * h + h / 2.0,
                    lo + (k % n) as f64 * h + h / 2.0,
                ]
            })
            .collect();
        let lp = t
            .log_density(
                &Tensor::from_vec(grid, &[n * n, 2]).unwrap(),
                0,
                &mut Rng::new(0),
            )
            .unwrap();
        let mass: f64 = lp.iter().map(|l| l.exp() * h * h).sum();
        assert!((mass - 1.0).abs() < 1e-3, "{mass}");
    }
}
