//! The image set a classification experiment trains on (`--dataset`): the shipped
//! real MNIST (10,000 digits, 28×28), the UCI 8×8 digits (1,797 images, the fast
//! option), or MNIST-format IDX files from `--data DIR` (the full MNIST or
//! Fashion-MNIST as downloaded, plain or gzip). Quick settings may keep only the
//! first images of each split (`--train-size`, `--test-size`); the shipped splits are
//! shuffled and stratified, so their first images are a fair sample.

use crate::cli::RunConfig;
use crate::data::{builtin, idx::load_mnist, Dataset};
use crate::error::{Error, Result};

/// The option rows every experiment that reads images adds to its `OPTIONS`.
pub const OPTIONS: [(&str, &str); 3] = [
    (
        "dataset",
        "mnist (the 10,000 shipped real digits, 28×28) or digits (UCI 8×8, fast); --data DIR reads MNIST-format IDX files instead",
    ),
    ("train-size", "keep the first N training images, 0 for all"),
    ("test-size", "keep the first N test images, 0 for all"),
];

/// Which built-in image set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageSet {
    /// The shipped MNIST subset (8,000 train / 2,000 test).
    Mnist,
    /// The UCI digits (1,438 train / 359 test in the fixed split).
    Digits,
}

impl ImageSet {
    /// The name `--dataset` takes.
    pub fn name(self) -> &'static str {
        match self {
            ImageSet::Mnist => "mnist",
            ImageSet::Digits => "digits",
        }
    }

    /// Parses a `--dataset` value.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "mnist" => Ok(ImageSet::Mnist),
            "digits" => Ok(ImageSet::Digits),
            _ => Err(Error::usage(format!(
                "--dataset '{name}': expected mnist or digits"
            ))),
        }
    }
}

/// A train/test pair of flattened grey images in [0, 1].
pub struct Split {
    /// Training images `[n, side²]`.
    pub train: Dataset,
    /// Held-out images `[m, side²]`.
    pub test: Dataset,
    /// Image side in pixels (28 for MNIST, 8 for the digits).
    pub side: usize,
    /// What was loaded, for table titles ("MNIST (first 2000 of 8000 train / 2000 test)").
    pub description: String,
}

/// Loads the image set chosen by `--dataset` (default `default`) or `--data DIR`,
/// keeping the first `--train-size` / `--test-size` images (defaults `sizes`, 0 for
/// all).
pub fn load(cfg: &RunConfig, default: ImageSet, sizes: (usize, usize)) -> Result<Split> {
    let set = ImageSet::parse(&cfg.opt("dataset", default.name().to_string())?)?;
    let train_size = cfg.opt("train-size", sizes.0)?;
    let test_size = cfg.opt("test-size", sizes.1)?;
    let (train, test, name) = match (&cfg.data, set) {
        (Some(dir), ImageSet::Mnist) => {
            let (train, test) = load_mnist(dir)?;
            (train, test, format!("IDX images from {}", dir.display()))
        }
        (Some(_), ImageSet::Digits) => {
            return Err(Error::usage(
                "--data reads MNIST-format IDX files; --dataset digits takes none",
            ))
        }
        (None, ImageSet::Mnist) => {
            let (train, test) = builtin::mnist()?;
            (train, test, "MNIST (shipped subset)".to_string())
        }
        (None, ImageSet::Digits) => {
            let (train, test) = crate::data::builtin::digits_split()?;
            (train, test, "UCI digits".to_string())
        }
    };
    let pixels = train.x.shape()[1];
    let side = (pixels as f64).sqrt().round() as usize;
    if side * side != pixels || test.x.shape()[1] != pixels {
        return Err(tensor::Error::shape(
            "images",
            format!(
                "images of {pixels} and {} pixels are not one square size",
                test.x.shape()[1]
            ),
        )
        .into());
    }
    let (train, train_note) = first(train, train_size)?;
    let (test, test_note) = first(test, test_size)?;
    Ok(Split {
        description: format!("{name}, {side}×{side}, {train_note} train / {test_note} test"),
        train,
        test,
        side,
    })
}

/// The first `n` samples (all when `n` is 0 or at least the size), and how many of
/// how many were kept.
fn first(d: Dataset, n: usize) -> Result<(Dataset, String)> {
    let len = d.len();
    if n == 0 || n >= len {
        return Ok((d, format!("{len}")));
    }
    let idx: Vec<usize> = (0..n).collect();
    Ok((d.subset(&idx)?, format!("first {n} of {len}")))
}
