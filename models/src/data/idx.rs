//! The IDX format of MNIST: magic bytes (0, 0, type, rank), big-endian u32 sizes,
//! then the data. Only unsigned bytes (type 0x08), as MNIST uses, are read; files may
//! be gzip-compressed, as MNIST and Fashion-MNIST are distributed.

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

/// The most bytes a gzip-compressed IDX file may inflate to: 256 MiB, five times the
/// full MNIST training images (47 MB), so a small file that inflates to gigabytes is
/// refused before it is held in memory.
pub const MAX_INFLATED_BYTES: usize = 256 << 20;

/// True when `bytes` start with the gzip magic (IDX files start with two zero bytes,
/// so the two cannot be confused).
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// Inflates a gzip stream (several members are read as one, as gzip does), refusing
/// one that would inflate past `max_bytes` or fails its CRC or length check.
pub fn inflate_gzip(bytes: &[u8], max_bytes: usize, what: &str) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .take(max_bytes as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| Error::format(what, format!("gzip: {e}")))?;
    if out.len() > max_bytes {
        return Err(Error::format(
            what,
            format!("gzip: inflates past the cap of {max_bytes} bytes"),
        ));
    }
    Ok(out)
}

/// Parses IDX bytes that may be gzip-compressed (as MNIST is distributed), inflating
/// at most `max_bytes`.
pub fn parse_idx_any(bytes: &[u8], max_bytes: usize, what: &str) -> Result<IdxArray> {
    if is_gzip(bytes) {
        parse_idx(&inflate_gzip(bytes, max_bytes, what)?, what)
    } else {
        parse_idx(bytes, what)
    }
}

/// Reads an IDX file, plain or gzip-compressed (recognised by its magic, whatever the
/// file's name).
pub fn load_idx(path: &Path) -> Result<IdxArray> {
    let what = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Error::io(&what, &e))?;
    parse_idx_any(&bytes, MAX_INFLATED_BYTES, &what)
}

/// The four standard MNIST file names: train images, train labels, test images, test
/// labels.
pub const MNIST_FILES: [&str; 4] = [
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
];

/// An images array and a labels array as a classification dataset: images of rank 3
/// (count, rows, columns) flattened to rows × columns features scaled to [0, 1];
/// labels below 10.
pub fn mnist_dataset(
    images: &IdxArray,
    labels: &IdxArray,
    what: &str,
) -> Result<crate::data::Dataset> {
    if images.shape.len() != 3 || labels.shape.len() != 1 || images.shape[0] != labels.shape[0] {
        return Err(Error::format(
            what,
            format!(
                "images {:?} and labels {:?} do not pair up",
                images.shape, labels.shape
            ),
        ));
    }
    let d = images.shape[1] * images.shape[2];
    let x = tensor::Tensor::from_vec(
        images.data.iter().map(|&b| b as f64 / 255.0).collect(),
        &[images.shape[0], d],
    )?;
    let labels: Vec<usize> = labels.data.iter().map(|&b| b as usize).collect();
    crate::data::Dataset::new(
        x,
        crate::data::Targets::Classes {
            labels,
            classes: 10,
        },
    )
    .map_err(|e| Error::format(what, e.to_string()))
}

/// MNIST (or Fashion-MNIST) from a directory holding the four standard files
/// ([`MNIST_FILES`]), each plain or gzip-compressed as distributed (`NAME` or
/// `NAME.gz`; the plain one is read when both exist): (train, test), pixels scaled to
/// [0, 1], images flattened to 784 features.
pub fn load_mnist(dir: &Path) -> Result<(crate::data::Dataset, crate::data::Dataset)> {
    let read = |name: &str| -> Result<IdxArray> {
        let plain = dir.join(name);
        let gz = dir.join(format!("{name}.gz"));
        if plain.exists() {
            load_idx(&plain)
        } else if gz.exists() {
            load_idx(&gz)
        } else {
            Err(Error::format(
                dir.display().to_string(),
                format!("neither {name} nor {name}.gz is there"),
            ))
        }
    };
    let [a, b, c, d] = MNIST_FILES.map(read);
    let what = dir.display().to_string();
    Ok((
        mnist_dataset(&a?, &b?, &format!("{what}: {}", MNIST_FILES[0]))?,
        mnist_dataset(&c?, &d?, &format!("{what}: {}", MNIST_FILES[2]))?,
    ))
}
