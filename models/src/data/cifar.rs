//! The CIFAR binary format: fixed-size records of label byte(s) followed by a
//! 3×32×32 image (channel-major, as stored).

use std::path::Path;
use tensor::{Error, Result};

/// Which CIFAR file layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CifarKind {
    /// One label byte (10 classes) per record.
    Cifar10,
    /// A coarse (20 classes) and a fine (100 classes) label byte; the fine one is used.
    Cifar100,
}

impl CifarKind {
    /// Bytes of labels per record.
    pub fn label_bytes(self) -> usize {
        match self {
            CifarKind::Cifar10 => 1,
            CifarKind::Cifar100 => 2,
        }
    }

    /// Number of (fine) classes.
    pub fn classes(self) -> usize {
        match self {
            CifarKind::Cifar10 => 10,
            CifarKind::Cifar100 => 100,
        }
    }
}

/// Pixels per image.
pub const IMAGE_BYTES: usize = 3 * 32 * 32;

/// Images `[n, 3, 32, 32]` as bytes and their labels.
#[derive(Clone, Debug)]
pub struct CifarBatch {
    /// Row-major pixel bytes.
    pub images: Vec<u8>,
    /// Class of each image.
    pub labels: Vec<usize>,
}

/// Parses the bytes of one CIFAR binary file.
pub fn parse_cifar(bytes: &[u8], kind: CifarKind, what: &str) -> Result<CifarBatch> {
    let rec = kind.label_bytes() + IMAGE_BYTES;
    if bytes.is_empty() || !bytes.len().is_multiple_of(rec) {
        return Err(Error::format(
            what,
            format!(
                "{} bytes is not a whole number of {rec}-byte records",
                bytes.len()
            ),
        ));
    }
    let n = bytes.len() / rec;
    let mut images = Vec::with_capacity(n * IMAGE_BYTES);
    let mut labels = Vec::with_capacity(n);
    for (i, r) in bytes.chunks_exact(rec).enumerate() {
        let label = r[kind.label_bytes() - 1] as usize;
        if label >= kind.classes() {
            return Err(Error::format(
                what,
                format!(
                    "record {i} has label {label}, beyond {} classes",
                    kind.classes()
                ),
            ));
        }
        labels.push(label);
        images.extend_from_slice(&r[kind.label_bytes()..]);
    }
    Ok(CifarBatch { images, labels })
}

/// Reads one CIFAR binary file.
pub fn load_cifar(path: &Path, kind: CifarKind) -> Result<CifarBatch> {
    let what = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Error::io(&what, &e))?;
    parse_cifar(&bytes, kind, &what)
}

/// Reads and concatenates several CIFAR files.
pub fn load_cifar_files(paths: &[std::path::PathBuf], kind: CifarKind) -> Result<CifarBatch> {
    let mut all = CifarBatch {
        images: Vec::new(),
        labels: Vec::new(),
    };
    for p in paths {
        let b = load_cifar(p, kind)?;
        all.images.extend(b.images);
        all.labels.extend(b.labels);
    }
    Ok(all)
}

/// CIFAR-10 (`data_batch_1.bin` … `data_batch_5.bin`, `test_batch.bin`) or CIFAR-100
/// (`train.bin`, `test.bin`) from a directory: (train, test), pixels scaled to [0, 1],
/// images `[n, 3, 32, 32]`.
pub fn load_cifar_dir(
    dir: &Path,
    kind: CifarKind,
) -> Result<(crate::data::Dataset, crate::data::Dataset)> {
    let (train, test): (Vec<std::path::PathBuf>, Vec<std::path::PathBuf>) = match kind {
        CifarKind::Cifar10 => (
            (1..=5)
                .map(|i| dir.join(format!("data_batch_{i}.bin")))
                .collect(),
            vec![dir.join("test_batch.bin")],
        ),
        CifarKind::Cifar100 => (vec![dir.join("train.bin")], vec![dir.join("test.bin")]),
    };
    let to_dataset = |b: CifarBatch| -> Result<crate::data::Dataset> {
        let n = b.labels.len();
        let x = tensor::Tensor::from_vec(
            b.images.iter().map(|&v| v as f64 / 255.0).collect(),
            &[n, 3, 32, 32],
        )?;
        crate::data::Dataset::new(
            x,
            crate::data::Targets::Classes {
                labels: b.labels,
                classes: kind.classes(),
            },
        )
    };
    Ok((
        to_dataset(load_cifar_files(&train, kind)?)?,
        to_dataset(load_cifar_files(&test, kind)?)?,
    ))
}
