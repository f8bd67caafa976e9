//! Seeded random numbers: a xoshiro256++ stream (from rand_xoshiro) that can be split
//! into independent streams, saved and restored. No global generator, no time seeds.

use crate::element::Element;
use crate::error::{Error, Result};
use crate::layout::checked_numel;
use crate::tensor::Tensor;
use rand_core::{Rng as _, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A seeded, splittable random number generator.
///
/// Same seed, same sequence, on every machine and thread count. `split` hands out an
/// independent stream (2^128 draws apart), so components that each own a generator
/// (dropout, data shuffling, initialisation) do not perturb one another.
///
/// ```
/// use tensor::Rng;
/// # fn main() -> tensor::Result<()> {
/// let (mut a, mut b) = (Rng::new(42), Rng::new(42));
/// let xs: Vec<f64> = (0..4).map(|_| a.uniform()).collect();
/// let ys: Vec<f64> = (0..4).map(|_| b.uniform()).collect();
/// assert_eq!(xs, ys); // same seed, same stream
/// // The state is 32 bytes: save it, draw, restore, draw the same again.
/// let saved = a.state();
/// let next = a.next_u64();
/// assert_eq!(Rng::from_state(saved)?.next_u64(), next);
/// // A split-off stream does not repeat its parent's draws.
/// let mut child = a.split();
/// assert_ne!(child.next_u64(), a.next_u64());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng {
    inner: Xoshiro256PlusPlus,
}

impl Rng {
    /// A generator seeded from `seed` (through SplitMix64).
    pub fn new(seed: u64) -> Self {
        Rng {
            inner: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }

    /// A new independent stream: the child continues from the current state, and
    /// `self` jumps 2^128 draws ahead.
    pub fn split(&mut self) -> Rng {
        let child = self.clone();
        self.inner.jump();
        child
    }

    /// The 32-byte state, for checkpoints.
    pub fn state(&self) -> [u8; 32] {
        self.inner.state()
    }

    /// Restores a generator from [`Rng::state`]. The all-zero state is invalid.
    pub fn from_state(state: [u8; 32]) -> Result<Self> {
        if state.iter().all(|&b| b == 0) {
            return Err(Error::value(
                "Rng::from_state",
                "the all-zero state is not a valid xoshiro256++ state",
            ));
        }
        Ok(Rng {
            inner: Xoshiro256PlusPlus::from_seed(state),
        })
    }

    /// 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// Uniform on [0, 1), with 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A pair of independent standard normals (Box–Muller).
    pub fn normal_pair(&mut self) -> (f64, f64) {
        let u1 = 1.0 - self.uniform(); // (0, 1]
        let u2 = self.uniform();
        let r = (-2.0 * u1.ln()).sqrt();
        let t = std::f64::consts::TAU * u2;
        (r * t.cos(), r * t.sin())
    }

    /// One standard normal.
    pub fn normal(&mut self) -> f64 {
        self.normal_pair().0
    }

    /// Uniform integer in `0..n` without modulo bias; `n` must be positive.
    pub fn below(&mut self, n: u64) -> Result<u64> {
        if n == 0 {
            return Err(Error::value("Rng::below", "the range 0..0 is empty"));
        }
        let zone = u64::MAX - (u64::MAX % n) - 1;
        loop {
            let v = self.next_u64();
            if v <= zone {
                return Ok(v % n);
            }
        }
    }

    /// Shuffles `v` in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1).expect("non-empty range") as usize;
            v.swap(i, j);
        }
    }

    /// A random permutation of `0..n`.
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        self.shuffle(&mut p);
        p
    }
}

impl<T: Element> Tensor<T> {
    /// Independent draws from U[low, high).
    pub fn rand_uniform(shape: &[usize], low: f64, high: f64, rng: &mut Rng) -> Result<Self> {
        if !(low.is_finite() && high.is_finite() && low < high) {
            return Err(Error::value(
                "rand_uniform",
                format!("needs finite low < high, got low {low}, high {high}"),
            ));
        }
        let n = checked_numel("rand_uniform", shape)?;
        let data = (0..n)
            .map(|_| T::from_f64(low + (high - low) * rng.uniform()))
            .collect();
        Tensor::from_vec(data, shape)
    }

    /// Independent draws from N(mean, std²).
    ///
    /// ```
    /// use tensor::{Rng, Tensor};
    /// # fn main() -> tensor::Result<()> {
    /// let x = Tensor::<f64>::rand_normal(&[1000], 2.0, 0.5, &mut Rng::new(7))?;
    /// let y = Tensor::<f64>::rand_normal(&[1000], 2.0, 0.5, &mut Rng::new(7))?;
    /// assert!(x.bit_eq(&y)); // reproducible from the seed alone
    /// let mean = x.mean_all()?.item()?;
    /// assert!((mean - 2.0).abs() < 0.1, "{mean}"); // standard error 0.5/√1000 ≈ 0.016
    /// assert!(Tensor::<f64>::rand_normal(&[2], 0.0, -1.0, &mut Rng::new(0)).is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn rand_normal(shape: &[usize], mean: f64, std: f64, rng: &mut Rng) -> Result<Self> {
        if !(mean.is_finite() && std.is_finite() && std >= 0.0) {
            return Err(Error::value(
                "rand_normal",
                format!("needs a finite mean and a finite std ≥ 0, got mean {mean}, std {std}"),
            ));
        }
        let n = checked_numel("rand_normal", shape)?;
        let mut data = Vec::with_capacity(n);
        while data.len() < n {
            let (a, b) = rng.normal_pair();
            data.push(T::from_f64(mean + std * a));
            if data.len() < n {
                data.push(T::from_f64(mean + std * b));
            }
        }
        Tensor::from_vec(data, shape)
    }

    /// Independent 0/1 draws with P(1) = p.
    pub fn rand_bernoulli(shape: &[usize], p: f64, rng: &mut Rng) -> Result<Self> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::value(
                "rand_bernoulli",
                format!("probability {p} is not in [0, 1]"),
            ));
        }
        let n = checked_numel("rand_bernoulli", shape)?;
        let data = (0..n)
            .map(|_| {
                if rng.uniform() < p {
                    T::one()
                } else {
                    T::zero()
                }
            })
            .collect();
        Tensor::from_vec(data, shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_state_round_trips() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        assert_eq!(a.next_u64(), b.next_u64());
        let saved = a.state();
        let x: Vec<u64> = (0..5).map(|_| a.next_u64()).collect();
        let mut c = Rng::from_state(saved).unwrap();
        let y: Vec<u64> = (0..5).map(|_| c.next_u64()).collect();
        assert_eq!(x, y);
        assert!(Rng::from_state([0; 32]).is_err());
    }

    #[test]
    fn split_streams_differ() {
        let mut a = Rng::new(1);
        let mut child = a.split();
        let xs: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..4).map(|_| child.next_u64()).collect();
        assert_ne!(xs, ys);
    }

    #[test]
    fn normal_moments_are_plausible() {
        let mut r = Rng::new(3);
        let t = Tensor::<f64>::rand_normal(&[20000], 1.0, 2.0, &mut r).unwrap();
        let v = t.to_vec();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
        // Standard errors: 2/sqrt(20000) ≈ 0.014 for the mean, ≈ 0.04 for the variance.
        assert!((mean - 1.0).abs() < 0.06, "{mean}");
        assert!((var - 4.0).abs() < 0.2, "{var}");
    }

    #[test]
    fn bad_parameters_are_rejected() {
        let mut r = Rng::new(0);
        assert!(Tensor::<f32>::rand_uniform(&[2], 1.0, 1.0, &mut r).is_err());
        assert!(Tensor::<f32>::rand_normal(&[2], 0.0, f64::NAN, &mut r).is_err());
        assert!(Tensor::<f32>::rand_bernoulli(&[2], 1.5, &mut r).is_err());
        assert!(r.below(0).is_err());
    }
}
