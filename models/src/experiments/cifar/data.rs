//! The images the `cifar` experiment trains on: CIFAR-10/100 binary files from a
//! directory, or the built-in substitute (the shipped real MNIST padded to 32×32×3,
//! or the UCI digits upscaled to it); standardised per channel with statistics of the
//! training set.

use crate::data::cifar::{load_cifar_dir, CifarKind};
use crate::data::dataset::is_spread;
use crate::data::{Dataset, Targets};
use crate::experiments::images::ImageSet;
use std::path::Path;
use tensor::{Error, Result, Tensor};

/// A train/test pair of image sets `[n, 3, 32, 32]` and where they came from.
pub struct Images {
    /// Training images.
    pub train: Dataset,
    /// Held-out images.
    pub test: Dataset,
    /// A short description for table titles.
    pub source: String,
    /// True for natural images, where horizontal flips preserve the label.
    pub flips_preserve_labels: bool,
}

/// Loads CIFAR from `dir` when given (CIFAR-10 if `data_batch_1.bin` is there,
/// CIFAR-100 if `train.bin` is), else the `substitute` image set at 32×32×3; keeps
/// the first `limits` = (train, test) images of each split when non-zero.
pub fn load(dir: Option<&Path>, substitute: ImageSet, limits: (usize, usize)) -> Result<Images> {
    let mut images = match dir {
        Some(dir) => {
            let kind = if dir.join("data_batch_1.bin").exists() {
                CifarKind::Cifar10
            } else if dir.join("train.bin").exists() {
                CifarKind::Cifar100
            } else {
                return Err(Error::format(
                    dir.display().to_string(),
                    "holds neither CIFAR-10 (data_batch_1.bin … data_batch_5.bin, test_batch.bin) nor CIFAR-100 (train.bin, test.bin) binary files",
                ));
            };
            let (train, test) = load_cifar_dir(dir, kind)?;
            Images {
                train,
                test,
                source: format!("{kind:?} from {}", dir.display()),
                flips_preserve_labels: true,
            }
        }
        None if substitute == ImageSet::Mnist => {
            let (train, test) = crate::data::builtin::mnist()?;
            Images {
                train: pad_mnist(&train)?,
                test: pad_mnist(&test)?,
                source: "real MNIST padded to 32×32×3 (built-in substitute for CIFAR)".into(),
                flips_preserve_labels: false,
            }
        }
        None => {
            let (train, test) = crate::data::builtin::digits_split()?;
            Images {
                train: upscale_digits(&train)?,
                test: upscale_digits(&test)?,
                source: "the UCI digits upscaled to 32×32×3 (built-in substitute for CIFAR)".into(),
                flips_preserve_labels: false,
            }
        }
    };
    for (set, limit) in [(&mut images.train, limits.0), (&mut images.test, limits.1)] {
        if limit > 0 && limit < set.len() {
            let idx: Vec<usize> = (0..limit).collect();
            *set = set.subset(&idx)?;
        }
    }
    standardise(&mut images)?;
    Ok(images)
}

/// Digits `[n, 64]` in [0, 1] as images `[n, 3, 32, 32]`: each pixel becomes a 4×4
/// block, the grey value copied into the three channels.
pub fn upscale_digits(d: &Dataset) -> Result<Dataset> {
    if d.x.ndim() != 2 || d.x.shape()[1] != 64 {
        return Err(Error::shape(
            "upscale_digits",
            "needs digits with 64 pixels per sample",
        ));
    }
    let n = d.len();
    let src = d.x.contiguous().to_vec();
    let mut out = Vec::with_capacity(n * 3 * 32 * 32);
    for img in src.chunks(64) {
        for _channel in 0..3 {
            for y in 0..32 {
                out.extend((0..32).map(|x| img[(y / 4) * 8 + x / 4]));
            }
        }
    }
    Dataset::new(Tensor::from_vec(out, &[n, 3, 32, 32])?, d.y.clone())
}

/// MNIST `[n, 784]` in [0, 1] as images `[n, 3, 32, 32]`: a 2-pixel zero border
/// around each 28×28 digit (as LeNet-5 read MNIST), the grey value copied into the
/// three channels.
pub fn pad_mnist(d: &Dataset) -> Result<Dataset> {
    if d.x.ndim() != 2 || d.x.shape()[1] != 784 {
        return Err(Error::shape(
            "pad_mnist",
            "needs MNIST images with 784 pixels per sample",
        ));
    }
    let n = d.len();
    let src = d.x.contiguous().to_vec();
    let mut out = Vec::with_capacity(n * 3 * 32 * 32);
    for img in src.chunks(784) {
        for _channel in 0..3 {
            for y in 0..32 {
                out.extend((0..32).map(|x| {
                    let (r, c) = (y as isize - 2, x as isize - 2);
                    if (0..28).contains(&r) && (0..28).contains(&c) {
                        img[r as usize * 28 + c as usize]
                    } else {
                        0.0
                    }
                }));
            }
        }
    }
    Dataset::new(Tensor::from_vec(out, &[n, 3, 32, 32])?, d.y.clone())
}

/// Subtracts each channel's training mean and divides by its training standard
/// deviation, in both sets.
fn standardise(images: &mut Images) -> Result<()> {
    let x = &images.train.x;
    let mean = x.mean(&[0, 2, 3], true)?;
    let std = x.sub(&mean)?.square().mean(&[0, 2, 3], true)?.sqrt();
    let constant = std
        .to_vec()
        .iter()
        .zip(mean.to_vec())
        .position(|(&s, m)| !is_spread(s, m));
    if let Some(c) = constant {
        return Err(Error::value(
            "cifar",
            format!("channel {c} of the training images is constant"),
        ));
    }
    for set in [&mut images.train, &mut images.test] {
        set.x = set.x.sub(&mean)?.div(&std)?;
    }
    Ok(())
}

/// The labels as one-hot rows `[n, classes]` (the closed-form head's targets).
pub fn one_hot(d: &Dataset, idx: &[usize]) -> Result<Tensor<f32>> {
    match &d.y {
        Targets::Classes { labels, classes } => {
            let picked: Vec<usize> = idx.iter().map(|&i| labels[i]).collect();
            Tensor::one_hot(&picked, *classes)
        }
        Targets::Values(_) => Err(Error::value("cifar", "needs class labels")),
    }
}
