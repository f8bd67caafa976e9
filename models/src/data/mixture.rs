//! A Gaussian-mixture classification task whose number of classes can grow while
//! the per-class difficulty stays put: class means drawn once from N(0, σ_m² I) in
//! `dim` dimensions, samples from N(mean, I), a fixed number per class.

use super::dataset::{Dataset, Targets};
use tensor::{Error, Result, Rng, Tensor};

/// Settings of [`gaussian_mixture`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mixture {
    /// Number of classes.
    pub classes: usize,
    /// Input dimension.
    pub dim: usize,
    /// Standard deviation σ_m of each mean's coordinates (the noise has 1).
    pub spread: f64,
    /// Seed of the means and the samples.
    pub seed: u64,
}

/// `per_class` samples of every class, classes interleaved (sample i has class
/// i mod classes), drawn from the stream `stream` of the mixture's generator, so the
/// train and test sets of one mixture share its means but not its samples.
pub fn gaussian_mixture(m: &Mixture, per_class: usize, stream: u64) -> Result<Dataset> {
    if m.classes < 2 || m.dim == 0 || per_class == 0 || !(m.spread > 0.0 && m.spread.is_finite()) {
        return Err(Error::value(
            "gaussian_mixture",
            format!(
                "needs at least 2 classes, a positive dimension, samples per class and a finite positive spread, got {m:?} with {per_class} per class"
            ),
        ));
    }
    let means =
        Tensor::<f64>::rand_normal(&[m.classes, m.dim], 0.0, m.spread, &mut Rng::new(m.seed))?;
    let n = tensor::layout::checked_numel("gaussian_mixture", &[m.classes, per_class])?;
    let noise = Tensor::<f64>::rand_normal(
        &[n, m.dim],
        0.0,
        1.0,
        &mut Rng::new(m.seed ^ (0x9e37_79b9_7f4a_7c15 ^ stream)),
    )?;
    let labels: Vec<usize> = (0..n).map(|i| i % m.classes).collect();
    let x = means.index_select(0, &labels)?.add(&noise)?;
    Dataset::new(
        x,
        Targets::Classes {
            labels,
            classes: m.classes,
        },
    )
}
