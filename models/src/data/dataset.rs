//! In-memory datasets: features with class labels or real targets, seeded
//! splitting, batching and standardisation.

use tensor::{error::fmt_shape, Error, Result, Rng, Tensor};

/// What a dataset predicts.
#[derive(Clone, Debug)]
pub enum Targets {
    /// Class indices in `0..classes`.
    Classes {
        /// One label per sample.
        labels: Vec<usize>,
        /// Number of classes.
        classes: usize,
    },
    /// Real-valued targets `[n, k]`.
    Values(Tensor<f64>),
}

/// Features `[n, ...]` and targets for `n` samples.
#[derive(Clone, Debug)]
pub struct Dataset {
    /// Features, first axis over samples.
    pub x: Tensor<f64>,
    /// Targets.
    pub y: Targets,
}

impl Dataset {
    /// A dataset, checking that features and targets agree on the sample count.
    pub fn new(x: Tensor<f64>, y: Targets) -> Result<Self> {
        let n = x.shape().first().copied().unwrap_or(0);
        let m = match &y {
            Targets::Classes { labels, classes } => {
                if let Some(&bad) = labels.iter().find(|&&l| l >= *classes) {
                    return Err(Error::value(
                        "Dataset",
                        format!("label {bad} is not below {classes} classes"),
                    ));
                }
                labels.len()
            }
            Targets::Values(t) => t.shape().first().copied().unwrap_or(0),
        };
        if n != m || x.ndim() < 2 {
            return Err(Error::shape(
                "Dataset",
                format!("features {} and {m} targets disagree", fmt_shape(x.shape())),
            ));
        }
        Ok(Dataset { x, y })
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.x.shape()[0]
    }

    /// True when there are no samples.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The samples at `idx`, in that order; an index past the end is an error.
    pub fn subset(&self, idx: &[usize]) -> Result<Dataset> {
        if let Some(&bad) = idx.iter().find(|&&i| i >= self.len()) {
            return Err(Error::value(
                "Dataset::subset",
                format!("index {bad} is out of range for {} samples", self.len()),
            ));
        }
        let y = match &self.y {
            Targets::Classes { labels, classes } => Targets::Classes {
                labels: idx.iter().map(|&i| labels[i]).collect(),
                classes: *classes,
            },
            Targets::Values(t) => Targets::Values(t.index_select(0, idx)?),
        };
        Dataset::new(self.x.index_select(0, idx)?, y)
    }

    /// A seeded random split into (train, test) with `test_fraction` of the samples
    /// in the test part.
    pub fn split(&self, test_fraction: f64, rng: &mut Rng) -> Result<(Dataset, Dataset)> {
        if !(test_fraction > 0.0 && test_fraction < 1.0) {
            return Err(Error::value(
                "split",
                format!("test fraction must be in (0, 1), got {test_fraction}"),
            ));
        }
        let perm = rng.permutation(self.len());
        let n_test = ((self.len() as f64) * test_fraction).round() as usize;
        if n_test == 0 || n_test == self.len() {
            return Err(Error::value(
                "split",
                format!("{} samples cannot be split at {test_fraction}", self.len()),
            ));
        }
        Ok((self.subset(&perm[n_test..])?, self.subset(&perm[..n_test])?))
    }

    /// Index lists of the mini-batches of one epoch: shuffled when `rng` is given,
    /// the last batch possibly smaller.
    pub fn batches(&self, batch_size: usize, rng: Option<&mut Rng>) -> Result<Vec<Vec<usize>>> {
        if batch_size == 0 {
            return Err(Error::value("batches", "batch size must be positive"));
        }
        let order = match rng {
            Some(r) => r.permutation(self.len()),
            None => (0..self.len()).collect(),
        };
        Ok(order.chunks(batch_size).map(|c| c.to_vec()).collect())
    }

    /// [`Dataset::batches`] without a ragged last batch: every batch has exactly
    /// `batch_size` samples (a closed-form head fitted on a short last batch is not
    /// the head of that batch size). An error when the set is smaller than one batch.
    pub fn full_batches(
        &self,
        batch_size: usize,
        rng: Option<&mut Rng>,
    ) -> Result<Vec<Vec<usize>>> {
        if batch_size > self.len() {
            return Err(Error::value(
                "batches",
                format!("batch size {batch_size} exceeds the {} samples", self.len()),
            ));
        }
        let mut all = self.batches(batch_size, rng)?;
        all.retain(|b| b.len() == batch_size);
        Ok(all)
    }

    /// Class labels, or an error for a regression dataset.
    pub fn labels(&self) -> Result<(&[usize], usize)> {
        match &self.y {
            Targets::Classes { labels, classes } => Ok((labels, *classes)),
            Targets::Values(_) => Err(Error::value(
                "Dataset",
                "this dataset has real targets, not classes",
            )),
        }
    }

    /// A copy whose labels are corrupted by symmetric noise: each label, with
    /// probability `fraction`, is replaced by a class drawn uniformly from the *other*
    /// classes. Returns the copy and how many labels changed.
    pub fn with_label_noise(&self, fraction: f64, rng: &mut Rng) -> Result<(Dataset, usize)> {
        if !(0.0..=1.0).contains(&fraction) {
            return Err(Error::value(
                "with_label_noise",
                format!("the noise fraction must be in [0, 1], got {fraction}"),
            ));
        }
        let (labels, classes) = self.labels()?;
        if classes < 2 {
            return Err(Error::value(
                "with_label_noise",
                "symmetric noise needs at least two classes",
            ));
        }
        let mut changed = 0;
        let mut noisy = Vec::with_capacity(labels.len());
        for &y in labels {
            if rng.uniform() < fraction {
                let other = rng.below(classes as u64 - 1)? as usize;
                noisy.push(if other >= y { other + 1 } else { other });
                changed += 1;
            } else {
                noisy.push(y);
            }
        }
        let data = Dataset::new(
            self.x.clone(),
            Targets::Classes {
                labels: noisy,
                classes,
            },
        )?;
        Ok((data, changed))
    }

    /// Real targets, or an error for a classification dataset.
    pub fn values(&self) -> Result<&Tensor<f64>> {
        match &self.y {
            Targets::Values(t) => Ok(t),
            Targets::Classes { .. } => Err(Error::value(
                "Dataset",
                "this dataset has classes, not real targets",
            )),
        }
    }
}

/// Per-column affine standardisation, fitted on training data only.
#[derive(Clone, Debug)]
pub struct Standardizer {
    mean: Tensor<f64>,
    std: Tensor<f64>,
}

/// True when a standard deviation `s` around `mean` is more than the rounding of
/// the mean itself (a constant column computes to a spread of a few ulps of its
/// value, so an absolute threshold misses large constants).
pub fn is_spread(s: f64, mean: f64) -> bool {
    s > 64.0 * f64::EPSILON * mean.abs() + 1e-12
}

impl Standardizer {
    /// Mean and standard deviation of each column of `x` (`[n, d]`); constant
    /// columns (see [`is_spread`]) keep scale 1.
    pub fn fit(x: &Tensor<f64>) -> Result<Self> {
        if x.ndim() != 2 || x.shape()[0] < 2 {
            return Err(Error::shape(
                "Standardizer",
                format!("needs [n ≥ 2, d] data, got {}", fmt_shape(x.shape())),
            ));
        }
        let mean = x.mean(&[0], true)?;
        let std = x.std(&[0], 0, true)?;
        let std = Tensor::from_vec(
            std.to_vec()
                .iter()
                .zip(mean.to_vec())
                .map(|(&s, m)| if is_spread(s, m) { s } else { 1.0 })
                .collect(),
            std.shape(),
        )?;
        Ok(Standardizer { mean, std })
    }

    /// (x − mean)/std.
    pub fn transform(&self, x: &Tensor<f64>) -> Result<Tensor<f64>> {
        x.sub(&self.mean)?.div(&self.std)
    }

    /// x·std + mean.
    pub fn inverse(&self, z: &Tensor<f64>) -> Result<Tensor<f64>> {
        z.mul(&self.std)?.add(&self.mean)
    }

    /// The fitted scale of each column.
    pub fn scale(&self) -> &Tensor<f64> {
        &self.std
    }
}
