//! safetensors: bit-exact round trips, a corpus of malformed files each rejected
//! with its own error, atomic writes, and loads that leave the model untouched on
//! failure.

use nn::checkpoint::{self, from_bytes, to_bytes, AnyTensor, Checkpoint, Limits};
use nn::{Linear, ParamStore};
use proptest::prelude::*;
use tensor::{Rng, Tensor};

fn sample() -> Checkpoint {
    let mut rng = Rng::new(1);
    Checkpoint {
        tensors: vec![
            (
                "a".into(),
                AnyTensor::F32(Tensor::rand_normal(&[2, 3], 0.0, 1.0, &mut rng).unwrap()),
            ),
            (
                "b.c".into(),
                AnyTensor::F64(Tensor::rand_normal(&[4], 0.0, 1.0, &mut rng).unwrap()),
            ),
        ],
        metadata: vec![("step".into(), "7".into())],
    }
}

fn bits(t: &AnyTensor) -> Vec<u64> {
    match t {
        AnyTensor::F32(t) => t.to_vec().iter().map(|v| v.to_bits() as u64).collect(),
        AnyTensor::F64(t) => t.to_vec().iter().map(|v| v.to_bits()).collect(),
        AnyTensor::Other(r) => r.bytes.iter().map(|&b| u64::from(b)).collect(),
    }
}

/// A file with the given header text and `data` bytes.
fn raw(header: &str, data: usize) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend(std::iter::repeat_n(0u8, data));
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn round_trips_are_bit_exact(
        shapes in proptest::collection::vec(proptest::collection::vec(0usize..4, 0..4), 1..5),
        seed in any::<u64>(),
        wide in any::<bool>(),
    ) {
        let mut rng = Rng::new(seed);
        let tensors: Vec<(String, AnyTensor)> = shapes.iter().enumerate().map(|(i, s)| {
            let t = Tensor::<f64>::rand_normal(s, 0.0, 1e3, &mut rng).unwrap();
            let any = if wide ^ (i % 2 == 0) { AnyTensor::F64(t) } else { AnyTensor::F32(t.cast()) };
            (format!("t{i}.w\"eird\\name"), any)
        }).collect();
        let ck = Checkpoint { tensors, metadata: vec![("note".into(), "π and \"quotes\"".into())] };
        let bytes = to_bytes(&ck).unwrap();
        prop_assert_eq!((bytes.len() - 8 - ck.tensors.iter().map(|(_, t)| t.shape().iter().product::<usize>() * t.dtype().size()).sum::<usize>()) % 8, 0);
        let back = from_bytes(&bytes, &Limits::default()).unwrap();
        prop_assert_eq!(back.metadata.clone(), ck.metadata.clone());
        for ((n1, t1), (n2, t2)) in ck.tensors.iter().zip(&back.tensors) {
            prop_assert_eq!(n1, n2);
            prop_assert_eq!(t1.shape(), t2.shape());
            prop_assert_eq!(bits(t1), bits(t2));
        }
    }
}

#[test]
fn special_values_survive_bit_for_bit() {
    let v = vec![f32::NAN, -0.0, f32::INFINITY, f32::MIN_POSITIVE / 2.0, 1.0];
    let ck = Checkpoint {
        tensors: vec![(
            "x".into(),
            AnyTensor::F32(Tensor::from_vec(v.clone(), &[5]).unwrap()),
        )],
        metadata: vec![],
    };
    let back = from_bytes(&to_bytes(&ck).unwrap(), &Limits::default()).unwrap();
    assert_eq!(
        bits(&back.tensors[0].1),
        v.iter().map(|x| x.to_bits() as u64).collect::<Vec<_>>()
    );
}

#[test]
fn every_malformed_file_is_rejected_with_its_error() {
    let good = to_bytes(&sample()).unwrap();
    let t = |dtype: &str, shape: &str, off: &str| {
        format!(r#"{{"x":{{"dtype":"{dtype}","shape":{shape},"data_offsets":{off}}}}}"#)
    };
    let corpus: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty file", vec![], "truncated: 0 bytes"),
        ("short length", vec![1, 2, 3], "truncated: 3 bytes"),
        (
            "truncated header",
            good[..20].to_vec(),
            "truncated: the header declares",
        ),
        (
            "truncated data",
            good[..good.len() - 3].to_vec(),
            "outside the",
        ),
        (
            "absurd header size",
            u64::MAX.to_le_bytes().to_vec(),
            "exceeds the limit",
        ),
        (
            "invalid utf-8",
            {
                let mut b = raw("{\"\u{e9}\":1}", 0);
                b[10] = 0xff;
                b
            },
            "not valid UTF-8",
        ),
        ("not json", raw("{nope", 0), "not valid JSON"),
        ("not an object", raw("[1,2]", 0), "an array, not an object"),
        (
            "unknown dtype",
            raw(&t("Q8", "[1]", "[0,1]"), 1),
            "dtype 'Q8', which safetensors does not define here",
        ),
        (
            "half with the bytes of one element for two",
            raw(&t("F16", "[2]", "[0,2]"), 2),
            "needs 4 bytes",
        ),
        (
            "shape vs bytes",
            raw(&t("F32", "[3]", "[0,8]"), 8),
            "needs 12 bytes, its range holds 8",
        ),
        (
            "negative dim",
            raw(&t("F32", "[-1]", "[0,4]"), 4),
            "not a size",
        ),
        (
            "absurd shape",
            raw(&t("F64", "[4294967296,4294967296]", "[0,8]"), 8),
            "declares more than",
        ),
        (
            "reversed offsets",
            raw(&t("F32", "[1]", "[4,0]"), 4),
            "outside the",
        ),
        (
            "offsets past end",
            raw(&t("F32", "[1]", "[0,4]"), 2),
            "outside the 2 data bytes",
        ),
        (
            "offsets not ints",
            raw(&t("F32", "[1]", "[0.5,4]"), 4),
            "non-integer data_offsets",
        ),
        (
            "one offset",
            raw(&t("F32", "[1]", "[4]"), 4),
            "needs data_offsets",
        ),
        (
            "extra field",
            raw(
                r#"{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"z":1}}"#,
                4,
            ),
            "unexpected field 'z'",
        ),
        (
            "overlap",
            raw(
                r#"{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#,
                8,
            ),
            "overlap",
        ),
        (
            "hole",
            raw(
                r#"{"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#,
                8,
            ),
            "belong to no tensor",
        ),
        (
            "trailing bytes",
            raw(&t("F32", "[1]", "[0,4]"), 9),
            "5 trailing data bytes",
        ),
        (
            "duplicate name",
            raw(
                r#"{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#,
                8,
            ),
            "appears twice",
        ),
        (
            "duplicate metadata key",
            raw(r#"{"__metadata__":{"a":"1","a":"2"}}"#, 0),
            "metadata key 'a' appears twice",
        ),
        (
            "metadata not strings",
            raw(r#"{"__metadata__":{"a":1}}"#, 0),
            "not a string",
        ),
        (
            "deep nesting",
            raw(
                &("{\"x\":".to_string() + &"[".repeat(200) + &"]".repeat(200) + "}"),
                0,
            ),
            "nesting",
        ),
    ];
    for (what, bytes, expect) in corpus {
        let err = from_bytes(&bytes, &Limits::default()).expect_err(what);
        let msg = err.to_string();
        assert!(msg.starts_with("safetensors: "), "{what}: {msg}");
        assert!(
            msg.contains(expect),
            "{what}: got '{msg}', expected '{expect}'"
        );
    }
    let tight = Limits {
        max_header_bytes: 16,
        max_elements: 1 << 20,
    };
    assert!(from_bytes(&good, &tight)
        .unwrap_err()
        .to_string()
        .contains("exceeds the limit"));
}

#[test]
fn saves_are_atomic_and_loads_leave_the_model_untouched_on_error() {
    let dir = std::env::temp_dir().join(format!("nn-ckpt-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("model.safetensors");
    let store = ParamStore::<f32>::new();
    let lin = Linear::new(&store.root().sub("fc"), 3, 2, true, &mut Rng::new(4)).unwrap();
    checkpoint::save(
        &path,
        &Checkpoint {
            tensors: store.to_tensors(),
            metadata: vec![],
        },
    )
    .unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        leftovers.len(),
        1,
        "no temporary file remains: {leftovers:?}"
    );
    let before = lin.weight.value().to_vec();
    // A checkpoint missing the bias: nothing may change.
    let partial = Checkpoint {
        tensors: vec![(
            "fc.weight".into(),
            AnyTensor::F32(Tensor::zeros(&[2, 3]).unwrap()),
        )],
        metadata: vec![],
    };
    let err = store.load_from(&partial).unwrap_err();
    assert!(err.to_string().contains("'fc.bias' is missing"), "{err}");
    assert_eq!(lin.weight.value().to_vec(), before);
    // Wrong dtype and wrong shape are named.
    let wrong = Checkpoint {
        tensors: vec![
            (
                "fc.weight".into(),
                AnyTensor::F64(Tensor::zeros(&[2, 3]).unwrap()),
            ),
            (
                "fc.bias".into(),
                AnyTensor::F32(Tensor::zeros(&[2]).unwrap()),
            ),
        ],
        metadata: vec![],
    };
    assert!(store
        .load_from(&wrong)
        .unwrap_err()
        .to_string()
        .contains("is F64 but F32 was expected"));
    let shaped = Checkpoint {
        tensors: vec![
            (
                "fc.weight".into(),
                AnyTensor::F32(Tensor::zeros(&[3, 2]).unwrap()),
            ),
            (
                "fc.bias".into(),
                AnyTensor::F32(Tensor::zeros(&[2]).unwrap()),
            ),
        ],
        metadata: vec![],
    };
    assert!(store
        .load_from(&shaped)
        .unwrap_err()
        .to_string()
        .contains("has shape [3, 2], the model expects [2, 3]"));
    // The saved file loads back.
    store
        .load_from(&checkpoint::load(&path, &Limits::default()).unwrap())
        .unwrap();
    assert_eq!(lin.weight.value().to_vec(), before);
    // A missing file is an I/O error naming the path.
    let e = checkpoint::load(dir.join("absent"), &Limits::default()).unwrap_err();
    assert!(e.to_string().contains("absent"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two threads saving one path at once both succeed (each has its own temporary
/// file), the result is one of the two payloads whole, and no temporary is left.
#[test]
fn concurrent_saves_of_one_path_both_succeed_whole() {
    let dir = std::env::temp_dir().join(format!("nn-ckpt-concurrent-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("same.bin");
    let payloads = [vec![1u8; 100_000], vec![2u8; 150_000]];
    std::thread::scope(|s| {
        for p in &payloads {
            let path = &path;
            s.spawn(move || {
                for _ in 0..50 {
                    nn::checkpoint::write_atomic(path, p).unwrap();
                }
            });
        }
    });
    let got = std::fs::read(&path).unwrap();
    assert!(payloads.contains(&got));
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "same.bin")
        .collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_repeated_metadata_key_is_not_written() {
    let mut ck = sample();
    ck.metadata.push(("step".into(), "8".into()));
    let e = to_bytes(&ck).err().unwrap().to_string();
    assert!(e.contains("metadata key 'step' is repeated"), "{e}");
}

/// A kill -9 during a save leaves `.<name>.tmp-<pid>-<n>`; the next save of that path
/// removes it once its process is gone (Linux, where /proc tells), and keeps the temp
/// files of live processes and of other paths.
#[test]
fn the_next_save_sweeps_temp_files_of_killed_saves() {
    if !std::path::Path::new("/proc/self").exists() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("nn-ckpt-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("model.bin");
    // A pid above Linux's largest (2²²) belongs to no process.
    let dead = dir.join(".model.bin.tmp-999999999-3");
    let live = dir.join(format!(".model.bin.tmp-{}-999999", std::process::id()));
    let other = dir.join(".other.bin.tmp-999999999-0");
    for f in [&dead, &live, &other] {
        std::fs::write(f, b"partial").unwrap();
    }
    nn::checkpoint::write_atomic(&path, b"whole").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"whole");
    assert!(!dead.exists(), "the killed save's temp file stayed");
    assert!(live.exists() && other.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A raw tensor built by hand is checked where it is used: a byte length that
/// disagrees with its shape is refused at write (the reader would refuse the
/// file), a row range past `usize::MAX` is an error, a float tag decodes its
/// bytes exactly, and a BOOL byte other than 0 or 1 is not read as a number.
#[test]
fn hand_built_raw_tensors_are_checked_where_used() {
    use nn::checkpoint::{FileDType, RawTensor};
    let raw = |dtype, shape: Vec<usize>, bytes: Vec<u8>| RawTensor {
        dtype,
        shape,
        bytes,
    };
    let short = raw(FileDType::I32, vec![3], vec![0; 8]);
    let ckpt = Checkpoint {
        tensors: vec![("short".into(), AnyTensor::Other(short.clone()))],
        metadata: vec![],
    };
    let e = to_bytes(&ckpt).unwrap_err().to_string();
    assert!(
        e.contains("'short'") && e.contains("8 bytes") && e.contains("12"),
        "{e}"
    );
    assert!(AnyTensor::Other(short)
        .to_tensor_exact::<f64>("short")
        .is_err());

    let rows = raw(FileDType::U8, vec![4, 2], (0..8).collect());
    let e = rows.rows(usize::MAX, 2).unwrap_err().to_string();
    assert!(e.contains("of 4"), "{e}");
    assert_eq!(rows.rows(1, 2).unwrap().bytes, vec![2, 3, 4, 5]);
    assert!(rows.rows(3, 2).is_err());

    let floats = raw(
        FileDType::F64,
        vec![2],
        [0.1f64, -0.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
    );
    let t = AnyTensor::Other(floats)
        .to_tensor::<f64>("f")
        .unwrap()
        .to_vec();
    assert_eq!(t[0].to_bits(), 0.1f64.to_bits());
    assert_eq!(t[1].to_bits(), (-0.0f64).to_bits());

    let flags = |b: u8| AnyTensor::Other(raw(FileDType::Bool, vec![2], vec![1, b]));
    let e = flags(2)
        .to_tensor_exact::<f32>("mask")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("'mask'") && e.contains("byte 2") && e.contains("element 1"),
        "{e}"
    );
    assert_eq!(
        flags(0).to_tensor_exact::<f32>("mask").unwrap().0.to_vec(),
        vec![1.0, 0.0]
    );
}
