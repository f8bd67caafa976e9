//! The IDX format of MNIST: magic bytes (0, 0, type, rank), big-endian u32 sizes,
//! then the data. Only unsigned bytes (type 0x08), as MNIST uses, are read.

use std::path::Path;
use tensor::{Error, Result};

/// An IDX array of unsigned bytes.
#[derive(Clone, Debug)]
pub struct IdxArray {
    /// The sizes.
    pub shape: Vec<usize>,
    /// The values, row-major.
    pub data: Vec<u8>,
}

/// Parses IDX bytes. Declared sizes are checked against the actual length before
/// anything is allocated.
pub fn parse_idx(bytes: &[u8], what: &str) -> Result<IdxArray> {
    if bytes.len() < 4 {
        return Err(Error::format(
            what,
            format!("truncated: {} bytes, the magic needs 4", bytes.len()),
        ));
    }
    if bytes[0] != 0 || bytes[1] != 0 {
        return Err(Error::format(
            what,
            "bad magic: the first two bytes must be zero",
        ));
    }
    if bytes[2] != 0x08 {
        return Err(Error::format(
            what,
            format!(
                "element type {:#04x} is not supported (only 0x08, unsigned byte)",
                bytes[2]
            ),
        ));
    }
    let rank = bytes[3] as usize;
    if rank == 0 {
        return Err(Error::format(what, "rank 0 is not an array"));
    }
    let head = 4 + 4 * rank;
    if bytes.len() < head {
        return Err(Error::format(
            what,
            format!("truncated: the {rank} sizes need {head} bytes"),
        ));
    }
    let shape: Vec<usize> = (0..rank)
        .map(|i| {
            u32::from_be_bytes(bytes[4 + 4 * i..8 + 4 * i].try_into().expect("4 bytes")) as usize
        })
        .collect();
    let n = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| Error::format(what, format!("sizes {shape:?} overflow")))?;
    if bytes.len() - head != n {
        return Err(Error::format(
            what,
            format!(
                "sizes {shape:?} need {n} data bytes, the file has {}",
                bytes.len() - head
            ),
        ));
    }
    Ok(IdxArray {
        shape,
        data: bytes[head..].to_vec(),
    })
}

/// Reads an IDX file.
pub fn load_idx(path: &Path) -> Result<IdxArray> {
    let what = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Error::io(&what, &e))?;
    parse_idx(&bytes, &what)
}

/// MNIST (or Fashion-MNIST) from a directory holding the four standard files
/// (`train-images-idx3-ubyte`, `train-labels-idx1-ubyte`, `t10k-images-idx3-ubyte`,
/// `t10k-labels-idx1-ubyte`): (train, test), pixels scaled to [0, 1], images
/// flattened to 784 features.
pub fn load_mnist(dir: &Path) -> Result<(crate::data::Dataset, crate::data::Dataset)> {
    let part = |images: &str, labels: &str| -> Result<crate::data::Dataset> {
        let im = load_idx(&dir.join(images))?;
        let lb = load_idx(&dir.join(labels))?;
        if im.shape.len() != 3 || lb.shape.len() != 1 || im.shape[0] != lb.shape[0] {
            return Err(Error::format(
                dir.display().to_string(),
                format!(
                    "{images} {:?} and {labels} {:?} do not pair up",
                    im.shape, lb.shape
                ),
            ));
        }
        let d = im.shape[1] * im.shape[2];
        let x = tensor::Tensor::from_vec(
            im.data.iter().map(|&b| b as f64 / 255.0).collect(),
            &[im.shape[0], d],
        )?;
        let labels: Vec<usize> = lb.data.iter().map(|&b| b as usize).collect();
        crate::data::Dataset::new(
            x,
            crate::data::Targets::Classes {
                labels,
                classes: 10,
            },
        )
    };
    Ok((
        part("train-images-idx3-ubyte", "train-labels-idx1-ubyte")?,
        part("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")?,
    ))
}
