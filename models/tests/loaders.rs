//! Loaders on files the tests write: valid files load exactly; truncated or corrupt
//! ones give errors naming the file and the problem.

mod common;

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
