//! The Gaussian fitted to data rows: the moment-matched reference density of the
//! flow and EBM experiments (the plateau of a model whose convex term stays flat),
//! their whitening map and their importance-sampling proposal.

use tensor::{Error, Result, Rng, Tensor};

/// A Gaussian fitted to rows `[n, d]`: mean, Cholesky factor of the covariance.
pub struct Gaussian {
    /// Mean `[1, d]`.
    pub mean: Tensor<f64>,
    /// Lower Cholesky factor of the covariance `[d, d]`.
    pub chol: Tensor<f64>,
    /// log det Σ.
    pub log_det: f64,
}

impl Gaussian {
    /// The maximum-likelihood fit (covariance with 1/n). Refuses rows that are
    /// not finite, fewer than two rows, and a column that is (to rounding) a
    /// linear combination of the earlier ones: its Cholesky pivot, relative to the
    /// column's variance, is below [`Gaussian::RELATIVE_PIVOT`], where the
    /// factorisation would otherwise accept a pivot at rounding level and give a
    /// log det, and a likelihood, that are artefacts of rounding.
    pub fn fit(x: &Tensor<f64>) -> Result<Self> {
        if x.ndim() != 2 || x.shape()[0] < 2 || x.shape()[1] == 0 {
            return Err(Error::shape(
                "Gaussian::fit",
                format!("needs rows [n ≥ 2, d ≥ 1], got {:?}", x.shape()),
            ));
        }
        let d = x.shape()[1];
        // The vectorised check first; the copy that locates the value only on failure.
        if let Some(i) = (!x.all_finite())
            .then(|| x.to_vec().iter().position(|v| !v.is_finite()))
            .flatten()
        {
            return Err(Error::value(
                "Gaussian::fit",
                format!("row {} column {} is not finite", i / d, i % d),
            ));
        }
        let n = x.shape()[0] as f64;
        let mean = x.mean(&[0], true)?;
        let c = x.sub(&mean)?;
        let cov = c.t()?.matmul(&c)?.mul_scalar(1.0 / n);
        let chol = cov.cholesky().map_err(|e| {
            Error::value(
                "Gaussian::fit",
                format!("a column is a linear combination of the earlier columns ({e})"),
            )
        })?;
        let mut log_det = 0.0;
        for i in 0..d {
            let (pivot, variance) = (chol.get(&[i, i])?, cov.get(&[i, i])?);
            if !(pivot * pivot > Self::RELATIVE_PIVOT * variance) {
                return Err(Error::value(
                    "Gaussian::fit",
                    format!(
                        "column {i} is a linear combination of the earlier columns to rounding \
                         (its residual variance is {:.3e} of its variance {variance:.3e})",
                        pivot * pivot / variance
                    ),
                ));
            }
            log_det += 2.0 * pivot.ln();
        }
        Ok(Gaussian {
            mean,
            chol,
            log_det,
        })
    }

    /// The smallest accepted ratio of a column's residual variance (given the
    /// earlier columns) to its variance: 10⁻¹⁰, far above the ~10⁻¹⁶ that
    /// rounding leaves in an exactly collinear column and far below what any
    /// real feature set shows.
    pub const RELATIVE_PIVOT: f64 = 1e-10;

    /// `m` draws from the defensive mixture ½N(μ, Σ) + ½N(μ, 4Σ) and their log
    /// densities under it: the wide half keeps the importance weights bounded where
    /// the model is broader than the data (as it is at the start).
    pub fn sample(&self, m: usize, rng: &mut Rng) -> Result<(Tensor<f64>, Tensor<f64>)> {
        let d = self.mean.shape()[1] as f64;
        let mut z = Tensor::<f64>::rand_normal(&[m, self.mean.shape()[1]], 0.0, 1.0, rng)?;
        let wide: Vec<f64> = (0..m)
            .map(|_| if rng.uniform() < 0.5 { 2.0 } else { 1.0 })
            .collect();
        z = z.mul(&Tensor::from_vec(wide, &[m, 1])?)?;
        let x = z.matmul(&self.chol.t()?)?.add(&self.mean)?;
        let base = -0.5 * self.log_det - 0.5 * d * (2.0 * std::f64::consts::PI).ln();
        let log_q = z.square().sum(&[1], true)?.map(|r2| {
            let narrow = -0.5 * r2;
            let broad = -0.125 * r2 - d * 2f64.ln();
            let top = narrow.max(broad);
            base + top + ((narrow - top).exp() * 0.5 + (broad - top).exp() * 0.5).ln()
        });
        Ok((x, log_q))
    }

    /// The whitened rows L⁻¹(x − μ) `[n, d]` of rows `x`: N(μ, Σ) becomes N(0, I).
    pub fn whiten(&self, x: &Tensor<f64>) -> Result<Tensor<f64>> {
        let c = x.sub(&self.mean)?.t()?.contiguous();
        Ok(self
            .chol
            .solve_triangular(&c, tensor::linalg::Triangular::LOWER)?
            .t()?
            .contiguous())
    }

    /// Mean negative log density of rows `x`.
    pub fn nll(&self, x: &Tensor<f64>) -> Result<f64> {
        let d = self.mean.shape()[1];
        let z = self.whiten(x)?;
        let quad = z.square().sum_all().item()? / x.shape()[0] as f64;
        Ok(0.5 * quad + 0.5 * self.log_det + 0.5 * d as f64 * (2.0 * std::f64::consts::PI).ln())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fitted_gaussian_scores_gaussian_data_at_its_entropy() {
        // Data drawn from N(0, AAᵀ): the fitted Gaussian's test NLL is the entropy
        // ½ log det(2πe Σ) up to sampling error (≈ 0.005 at 50,000 rows).
        let d = 3;
        let a = [1.0, 0.0, 0.0, 0.5, 2.0, 0.0, -0.3, 0.4, 0.7];
        let draw = |n: usize, rng: &mut Rng| {
            let v: Vec<f64> = (0..n)
                .flat_map(|_| {
                    let g: Vec<f64> = (0..d).map(|_| rng.normal()).collect();
                    (0..d)
                        .map(|i| (0..d).map(|j| a[i * d + j] * g[j]).sum::<f64>())
                        .collect::<Vec<_>>()
                })
                .collect();
            Tensor::from_vec(v, &[n, d]).unwrap()
        };
        let mut rng = Rng::new(9);
        let (train, test) = (draw(50_000, &mut rng), draw(50_000, &mut rng));
        let log_det_sigma = 2.0 * (1.0f64 * 2.0 * 0.7).ln();
        let pi_e = 2.0 * std::f64::consts::PI * std::f64::consts::E;
        let entropy = 0.5 * (log_det_sigma + d as f64 * pi_e.ln());
        let g = Gaussian::fit(&train).unwrap();
        assert!((g.log_det - log_det_sigma).abs() < 0.03, "{}", g.log_det);
        let nll = g.nll(&test).unwrap();
        assert!((nll - entropy).abs() < 0.02, "{nll} vs {entropy}");
    }

    /// An exactly collinear column (0.3a − 0.7b + 1) is refused whichever way
    /// rounding leaves its Cholesky pivot: a hair above zero (seed 0, which the
    /// factorisation alone accepts, giving a log det of about −35) or at or below
    /// it (seed 1); a non-finite value is refused by position; a nearly collinear
    /// column (residual variance 10⁻⁶ of its own, from independent noise) is
    /// still fitted.
    #[test]
    fn collinear_or_non_finite_columns_are_refused() {
        let rows = |seed: u64, f: &dyn Fn(f64, f64, f64) -> f64| {
            let mut rng = Rng::new(seed);
            let v: Vec<f64> = (0..1000)
                .flat_map(|_| {
                    let (a, b) = (rng.normal(), rng.normal());
                    let c = if seed > 1 { rng.normal() } else { 0.0 };
                    [a, b, f(a, b, c)]
                })
                .collect();
            Tensor::from_vec(v, &[1000, 3]).unwrap()
        };
        let collinear = |a: f64, b: f64, _: f64| 0.3 * a - 0.7 * b + 1.0;
        let e = Gaussian::fit(&rows(0, &collinear))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("column 2 is a linear combination") && e.contains("to rounding"),
            "{e}"
        );
        let e = Gaussian::fit(&rows(1, &collinear))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("linear combination") && e.contains("pivot 2"),
            "{e}"
        );
        let near = rows(2, &|a, _, c| a + 1e-3 * c);
        let g = Gaussian::fit(&near).unwrap();
        assert!(g.log_det.is_finite());
        let mut v = near.to_vec();
        v[7] = f64::INFINITY;
        let bad = Tensor::from_vec(v, &[1000, 3]).unwrap();
        let e = Gaussian::fit(&bad).err().unwrap().to_string();
        assert!(e.contains("row 2 column 1"), "{e}");
    }
}
