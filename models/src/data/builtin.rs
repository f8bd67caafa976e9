//! The datasets shipped in `models/data/` (compiled into the binary).

use super::csv::parse_csv;
use super::dataset::{Dataset, Targets};
use super::idx::{mnist_dataset, parse_idx_any, MAX_INFLATED_BYTES, MNIST_FILES};
use super::qm9::{self, Molecule};
use tensor::{Result, Tensor};

const DIGITS: &str = include_str!("../../data/digits.csv");
const DIABETES: &str = include_str!("../../data/diabetes.csv");
/// The four gzip IDX files of `data/mnist/`, in the order of [`MNIST_FILES`].
const MNIST_GZ: [&[u8]; 4] = [
    include_bytes!("../../data/mnist/train-images-idx3-ubyte.gz"),
    include_bytes!("../../data/mnist/train-labels-idx1-ubyte.gz"),
    include_bytes!("../../data/mnist/t10k-images-idx3-ubyte.gz"),
    include_bytes!("../../data/mnist/t10k-labels-idx1-ubyte.gz"),
];
/// The seeded 20,000-molecule subset of QM9 of `data/qm9/` (gzip CSV).
const QM9_GZ: &[u8] = include_bytes!("../../data/qm9/qm9_subset.csv.gz");

/// UCI optical handwritten digits: 1797 samples of 64 pixels (0..16, divided by 16
/// here), 10 classes.
pub fn digits() -> Result<Dataset> {
    let t = parse_csv(DIGITS, true, "digits.csv")?.values;
    let x = t.narrow(1, 0, 64)?.contiguous().div_scalar(16.0);
    let labels = t
        .narrow(1, 64, 1)?
        .to_vec()
        .iter()
        .map(|&v| v as usize)
        .collect();
    Dataset::new(
        x,
        Targets::Classes {
            labels,
            classes: 10,
        },
    )
}

/// The fixed split of [`digits`] every experiment and seed shares (so that seeds
/// vary only initialisation and batch order): 80 % train, 20 % test.
pub fn digits_split() -> Result<(Dataset, Dataset)> {
    digits()?.split(0.2, &mut tensor::Rng::new(1234))
}

/// The diabetes regression set: 442 samples, 10 raw features, one target.
pub fn diabetes() -> Result<Dataset> {
    let t = parse_csv(DIABETES, true, "diabetes.csv")?.values;
    let x = t.narrow(1, 0, 10)?.contiguous();
    let y: Tensor<f64> = t.narrow(1, 10, 1)?.contiguous();
    Dataset::new(x, Targets::Values(y))
}

/// 10,000 real MNIST digits (28×28, pixels divided by 255 here) in the fixed,
/// stratified split of `data/mnist/` (see its README): (8,000 train, 2,000 test).
pub fn mnist() -> Result<(Dataset, Dataset)> {
    let [a, b, c, d] = [0, 1, 2, 3].map(|i| {
        parse_idx_any(
            MNIST_GZ[i],
            MAX_INFLATED_BYTES,
            &format!("mnist/{}.gz", MNIST_FILES[i]),
        )
    });
    Ok((
        mnist_dataset(&a?, &b?, "mnist/train")?,
        mnist_dataset(&c?, &d?, "mnist/t10k")?,
    ))
}

/// The 20,000 QM9 molecules of `data/qm9/` (see its README), in the file's seeded
/// random order.
pub fn qm9() -> Result<Vec<Molecule>> {
    qm9::parse(QM9_GZ, "qm9/qm9_subset.csv.gz")
}
