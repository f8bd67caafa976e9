//! The demand design of Hartford et al. (DeepIV) as DFIV generates it
//! (liyuan9988/DeepFeatureIV, `src/data/demand_design.py`): an airline-ticket price p
//! confounded with the demand noise, instrumented by a cost shifter c.
//!
//! ψ(t) = 2((t−5)⁴/600 + exp(−4(t−5)²) + t/10 − 2), f(p, t, s) = 100 + (10 + p)·s·ψ(t) − 2p;
//! s uniform on {1..7}, t ~ U(0, 10), c, v ~ N(0, 1), e = ρv + √(1−ρ²)ξ,
//! p = 25 + (c + 3)ψ(t) + v, y = f(p, t, s) + e. Treatment p, covariate (t, s),
//! instrument (c, t, s). The test set is the noise-free f on the grid
//! price × time × s = linspace(10, 25, 20) × linspace(0, 10, 20) × {1..7}. Nothing is
//! rescaled (the authors' trainer does not call its rescale helpers).

use tensor::{Error, Result, Rng, Tensor};

/// One sample set of the demand design (all `[n, ·]`, f64).
#[derive(Clone, Debug)]
pub struct Demand {
    /// Price p `[n, 1]`.
    pub treatment: Tensor<f64>,
    /// Instrument (c, t, s) `[n, 3]` (empty on the test set).
    pub instrument: Tensor<f64>,
    /// Covariate (t, s) `[n, 2]`.
    pub covariate: Tensor<f64>,
    /// Observed outcome y `[n, 1]` (the structural f on the test set).
    pub outcome: Tensor<f64>,
    /// Noise-free structural function f(p, t, s) `[n, 1]`.
    pub structural: Tensor<f64>,
}

/// ψ(t), the seasonal demand pattern.
pub fn psi(t: f64) -> f64 {
    2.0 * ((t - 5.0).powi(4) / 600.0 + (-4.0 * (t - 5.0).powi(2)).exp() + t / 10.0 - 2.0)
}

/// The structural function f(p, t, s).
pub fn structural(p: f64, t: f64, s: f64) -> f64 {
    100.0 + (10.0 + p) * s * psi(t) - 2.0 * p
}

fn column(values: Vec<f64>, width: usize) -> Result<Tensor<f64>> {
    let n = values.len() / width;
    Tensor::from_vec(values, &[n, width])
}

/// `n` training samples with noise correlation `rho` ∈ [−1, 1], drawn from `seed`.
pub fn train(n: usize, rho: f64, seed: u64) -> Result<Demand> {
    if n == 0 || !(-1.0..=1.0).contains(&rho) {
        return Err(Error::value(
            "demand::train",
            format!("needs n > 0 and ρ in [−1, 1], got n = {n}, ρ = {rho}"),
        ));
    }
    tensor::layout::checked_numel("demand::train", &[n, 3])?;
    let mut rng = Rng::new(seed);
    let (mut p, mut z, mut x, mut y, mut f) = (
        Vec::with_capacity(n),
        Vec::with_capacity(3 * n),
        Vec::with_capacity(2 * n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for _ in 0..n {
        let s = (rng.below(7)? + 1) as f64;
        let t = 10.0 * rng.uniform();
        let c = rng.normal();
        let v = rng.normal();
        let e = rho * v + (1.0 - rho * rho).sqrt() * rng.normal();
        let price = 25.0 + (c + 3.0) * psi(t) + v;
        let fs = structural(price, t, s);
        p.push(price);
        z.extend([c, t, s]);
        x.extend([t, s]);
        y.push(fs + e);
        f.push(fs);
    }
    Ok(Demand {
        treatment: column(p, 1)?,
        instrument: column(z, 3)?,
        covariate: column(x, 2)?,
        outcome: column(y, 1)?,
        structural: column(f, 1)?,
    })
}

/// The 2,800-point test grid with the noise-free target.
pub fn test_grid() -> Result<Demand> {
    let lin = |a: f64, b: f64, k: usize| -> Vec<f64> {
        (0..k)
            .map(|i| a + (b - a) * i as f64 / (k - 1) as f64)
            .collect()
    };
    let (mut p, mut x, mut f) = (Vec::new(), Vec::new(), Vec::new());
    for &price in &lin(10.0, 25.0, 20) {
        for &t in &lin(0.0, 10.0, 20) {
            for s in 1..=7 {
                let s = s as f64;
                p.push(price);
                x.extend([t, s]);
                f.push(structural(price, t, s));
            }
        }
    }
    let f = column(f, 1)?;
    Ok(Demand {
        treatment: column(p, 1)?,
        instrument: Tensor::zeros(&[f.shape()[0], 0])?,
        covariate: column(x, 2)?,
        outcome: f.clone(),
        structural: f,
    })
}

impl Demand {
    /// The number of samples.
    pub fn len(&self) -> usize {
        self.treatment.shape()[0]
    }

    /// True when there is no sample.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The samples at `idx`.
    pub fn select(&self, idx: &[usize]) -> Result<Demand> {
        Ok(Demand {
            treatment: self.treatment.index_select(0, idx)?,
            instrument: self.instrument.index_select(0, idx)?,
            covariate: self.covariate.index_select(0, idx)?,
            outcome: self.outcome.index_select(0, idx)?,
            structural: self.structural.index_select(0, idx)?,
        })
    }

    /// A random split into two halves (DFIV's split_ratio 0.5): stage 1, stage 2.
    pub fn halves(&self, rng: &mut Rng) -> Result<(Demand, Demand)> {
        let perm = rng.permutation(self.len());
        let (a, b) = perm.split_at(self.len() / 2);
        Ok((self.select(a)?, self.select(b)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structural_function_at_known_points() {
        // ψ(5) = 2(0 + 1 + 0.5 − 2) = −1; f(20, 5, 3) = 100 + 30·3·(−1) − 40 = −30.
        assert!((psi(5.0) + 1.0).abs() < 1e-15);
        assert!((structural(20.0, 5.0, 3.0) + 30.0).abs() < 1e-12);
    }

    #[test]
    fn grid_and_samples_have_the_documented_shapes_and_noise() {
        let g = test_grid().unwrap();
        assert_eq!(g.len(), 2800);
        let d = train(20000, 0.5, 1).unwrap();
        // The outcome noise e has variance ρ² + (1 − ρ²) = 1.
        let e = d.outcome.sub(&d.structural).unwrap();
        let var = e.square().mean_all().unwrap().item().unwrap();
        assert!((var - 1.0).abs() < 0.05, "noise variance {var}");
        // s takes each of 1..7.
        let s: Vec<f64> = d.instrument.to_vec().chunks(3).map(|r| r[2]).collect();
        for k in 1..=7 {
            assert!(s.contains(&(k as f64)));
        }
        assert!(train(0, 0.5, 1).is_err() && train(10, 1.5, 1).is_err());
    }
}
