//! Hostile bytes into every reader: the safetensors checkpoint reader, the MNIST
//! IDX (plain and gzip-compressed), CIFAR binary and CSV loaders, the Burgers cache
//! and a sweep's cells file and shard journal. Each must return an
//! error or a value consistent with the bytes — never panic, hang or allocate more
//! than the input justifies — and what it accepts must survive a write/read round
//! trip unchanged.

use crate::input::Input;
use models::data::burgers::cache;
use models::data::cifar::{parse_cifar, CifarKind, IMAGE_BYTES};
use models::data::csv::parse_csv;
use models::data::idx::{parse_idx, parse_idx_any};
use nn::checkpoint::{self, AnyTensor, Checkpoint, Limits};
use std::io::Write;
use tensor::Tensor;

/// The readers' bound on elements per tensor during fuzzing (the default is 2³²).
pub const FUZZ_MAX_ELEMENTS: usize = 1 << 20;

/// True when two checkpoints hold the same names, dtypes, shapes, bits and metadata.
pub fn same_checkpoint(a: &Checkpoint, b: &Checkpoint) -> bool {
    let bits = |t: &AnyTensor| -> Vec<u64> {
        match t {
            AnyTensor::F32(t) => t.to_vec().iter().map(|v| v.to_bits() as u64).collect(),
            AnyTensor::F64(t) => t.to_vec().iter().map(|v| v.to_bits()).collect(),
            AnyTensor::Other(r) => r.bytes.iter().map(|&b| u64::from(b)).collect(),
        }
    };
    a.metadata == b.metadata
        && a.tensors.len() == b.tensors.len()
        && a.tensors
            .iter()
            .zip(&b.tensors)
            .all(|((na, ta), (nb, tb))| {
                na == nb
                    && ta.dtype() == tb.dtype()
                    && ta.shape() == tb.shape()
                    && bits(ta) == bits(tb)
            })
}

/// Arbitrary bytes as a safetensors file.
pub fn safetensors(bytes: &[u8]) {
    let limits = Limits {
        max_header_bytes: 1 << 16,
        max_elements: FUZZ_MAX_ELEMENTS,
    };
    if let Ok(ckpt) = checkpoint::from_bytes(bytes, &limits) {
        let again = checkpoint::to_bytes(&ckpt).expect("an accepted checkpoint serialises");
        let back = checkpoint::from_bytes(&again, &limits).expect("its own output reads back");
        assert!(
            same_checkpoint(&ckpt, &back),
            "round trip changed the checkpoint"
        );
    }
}

/// Arbitrary named tensors (any names, f32 or f64, any bits including NaN payloads,
/// zero-sized shapes) and metadata, written and read back bit for bit.
pub fn safetensors_round_trip(bytes: &[u8]) {
    let mut input = Input::new(bytes);
    let mut ckpt = Checkpoint::default();
    let text = |input: &mut Input| -> Option<String> {
        let len = input.below(12)?;
        let raw: Vec<u8> = (0..len).map(|_| input.byte()).collect::<Option<_>>()?;
        Some(String::from_utf8_lossy(&raw).into_owned())
    };
    while let Some(kind) = input.byte() {
        if kind % 4 == 3 {
            let (Some(k), Some(v)) = (text(&mut input), text(&mut input)) else {
                break;
            };
            ckpt.metadata.retain(|(key, _)| key != &k);
            ckpt.metadata.push((k, v));
            continue;
        }
        let (Some(name), Some(shape)) = (text(&mut input), input.shape(3, 4)) else {
            break;
        };
        let n: usize = shape.iter().product();
        let tensor = if kind % 2 == 0 {
            let v: Option<Vec<f32>> = (0..n)
                .map(|_| {
                    Some(f32::from_bits(u32::from_le_bytes([
                        input.byte()?,
                        input.byte()?,
                        input.byte()?,
                        input.byte()?,
                    ])))
                })
                .collect();
            AnyTensor::F32(
                Tensor::from_vec(v.unwrap_or(vec![0.0; n]), &shape).expect("sizes agree"),
            )
        } else {
            let v: Option<Vec<f64>> = (0..n)
                .map(|_| {
                    Some(f64::from_bits(
                        u64::from(input.byte()?) << 56 | u64::from(input.byte()?),
                    ))
                })
                .collect();
            AnyTensor::F64(
                Tensor::from_vec(v.unwrap_or(vec![0.0; n]), &shape).expect("sizes agree"),
            )
        };
        ckpt.tensors.push((name, tensor));
    }
    match checkpoint::to_bytes(&ckpt) {
        Ok(bytes) => {
            let back = checkpoint::from_bytes(&bytes, &Limits::default())
                .unwrap_or_else(|e| panic!("written checkpoint does not read back: {e}"));
            assert!(
                same_checkpoint(&ckpt, &back),
                "round trip changed the checkpoint"
            );
        }
        // Refusals must be about the names (duplicates or the reserved key).
        Err(e) => {
            let names: Vec<&String> = ckpt.tensors.iter().map(|(n, _)| n).collect();
            let duplicate = (1..names.len()).any(|i| names[..i].contains(&names[i]));
            let reserved = names.iter().any(|n| *n == "__metadata__");
            assert!(duplicate || reserved, "write refused valid tensors: {e}");
        }
    }
}

/// Arbitrary bytes as an IDX file.
pub fn idx(bytes: &[u8]) {
    let plain = parse_idx(bytes, "fuzz");
    if let Ok(a) = &plain {
        assert_eq!(a.shape.iter().product::<usize>(), a.data.len());
        assert_eq!(a.data.len() + 4 + 4 * a.shape.len(), bytes.len());
    }
    // The same bytes as a gzip file: refused (bad magic, corrupt stream) or, when they
    // are one, inflated within the cap and parsed like the plain bytes.
    if let Ok(a) = parse_idx_any(bytes, FUZZ_MAX_ELEMENTS, "fuzz") {
        assert_eq!(a.shape.iter().product::<usize>(), a.data.len());
    }
    // Wrapped in a valid gzip stream, they must give exactly the plain answer, and a
    // cap below their length must refuse them by name.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).expect("writing to memory");
    let gz = gz.finish().expect("writing to memory");
    let inflated = parse_idx_any(&gz, FUZZ_MAX_ELEMENTS, "fuzz");
    match (&plain, &inflated) {
        (Ok(a), Ok(b)) => assert!(a.shape == b.shape && a.data == b.data),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("gzip changed the IDX decision"),
    }
    if !bytes.is_empty() {
        let e = parse_idx_any(&gz, bytes.len() - 1, "fuzz").unwrap_err();
        assert!(e.to_string().contains("inflates past the cap"), "{e}");
    }
}

/// Arbitrary bytes as a CIFAR-10 and as a CIFAR-100 file.
pub fn cifar(bytes: &[u8]) {
    for kind in [CifarKind::Cifar10, CifarKind::Cifar100] {
        if let Ok(b) = parse_cifar(bytes, kind, "fuzz") {
            assert_eq!(b.images.len(), b.labels.len() * IMAGE_BYTES);
            assert_eq!(
                bytes.len(),
                b.labels.len() * (IMAGE_BYTES + kind.label_bytes())
            );
            assert!(b.labels.iter().all(|&l| l < kind.classes()));
        }
    }
}

/// Arbitrary bytes as CSV text (the first byte says whether there is a header).
pub fn csv(bytes: &[u8]) {
    let Some((&flag, rest)) = bytes.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    if let Ok(t) = parse_csv(text, flag % 2 == 1, "fuzz") {
        assert_eq!(t.values.ndim(), 2);
        if !t.header.is_empty() {
            assert_eq!(t.header.len(), t.values.shape()[1]);
        }
    }
}

/// Arbitrary bytes as a Burgers cache; what is accepted writes back to the same bytes.
pub fn burgers_cache(bytes: &[u8]) {
    if let Ok(data) = cache::from_bytes(bytes, "fuzz") {
        assert_eq!(
            cache::to_bytes(&data),
            bytes,
            "the cache does not round-trip"
        );
    }
}

/// Arbitrary bytes as a sweep's `cells.txt` and as a shard's journal: what the
/// cells reader accepts writes back to the same text; both readers either refuse
/// or give cells their shard owns or every shard shares.
pub fn cells(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    if let Ok(file) = models::sweep::ShardFile::parse(text, "fuzz") {
        assert_eq!(file.to_text(), text, "cells.txt does not round-trip");
        assert!(file
            .cells
            .iter()
            .all(|c| c.shared || file.shard.owns(c.position)));
    }
    if let Ok(journal) = models::sweep::Journal::parse(text, "fuzz") {
        assert!(journal
            .cells
            .iter()
            .all(|c| c.shared || journal.shard.owns(c.position)));
    }
}
