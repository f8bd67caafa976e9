//! The datasets shipped in `models/data/` (compiled into the binary).

use super::csv::parse_csv;
use super::dataset::{Dataset, Targets};
use tensor::{Result, Tensor};

const DIGITS: &str = include_str!("../../data/digits.csv");
const DIABETES: &str = include_str!("../../data/diabetes.csv");

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

/// The diabetes regression set: 442 samples, 10 raw features, one target.
pub fn diabetes() -> Result<Dataset> {
    let t = parse_csv(DIABETES, true, "diabetes.csv")?.values;
    let x = t.narrow(1, 0, 10)?.contiguous();
    let y: Tensor<f64> = t.narrow(1, 10, 1)?.contiguous();
    Dataset::new(x, Targets::Values(y))
}
