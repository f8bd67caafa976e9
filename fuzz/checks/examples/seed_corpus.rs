//! Writes the seed corpora of the fuzz targets into `fuzz/corpus/<target>/`: valid
//! files of every format (so the fuzzer starts from the accepting paths) and
//! seeded random programs for the op targets. Run from the repository root:
//! `cargo run -p fuzz-checks --example seed_corpus`.

use models::data::burgers::{cache, generate, BurgersConfig};
use models::data::cifar::IMAGE_BYTES;
use nn::checkpoint::{to_bytes, AnyTensor, Checkpoint};
use std::path::PathBuf;
use tensor::{Rng, Tensor};

fn idx(shape: &[u32]) -> Vec<u8> {
    let mut out = vec![0, 0, 8, shape.len() as u8];
    for d in shape {
        out.extend(d.to_be_bytes());
    }
    let n: u32 = shape.iter().product();
    out.extend((0..n).map(|i| (i * 37 % 256) as u8));
    out
}

/// Bytes in a gzip stream, as MNIST's files are distributed.
fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(bytes).expect("writing to memory");
    e.finish().expect("writing to memory")
}

/// One file per constructor of the `sizes` target, each calling it four times:
/// sizes 2⁶² × 8, 8 × 18, (2³⁰ + 1) × 2 and 2¹⁶ × 2¹⁶ (magnitude byte, then an
/// offset byte where 128 is zero).
fn sizes_seeds() -> Vec<Vec<u8>> {
    (0..12u8)
        .map(|op| {
            [
                [62, 128, 3, 128],
                [3, 128, 4, 130],
                [30, 129, 1, 128],
                [16, 128, 16, 128],
            ]
            .iter()
            .flat_map(|sizes| std::iter::once(op).chain(sizes.iter().copied()))
            .collect()
        })
        .collect()
}

/// A finished shard's `cells.txt` and a killed shard's journal (its second cell
/// torn), from three cells of two metric points each.
fn cells_seeds() -> tensor::Result<Vec<Vec<u8>>> {
    use models::report::Metrics;
    use models::sweep::{Journal, Shard, ShardFile, Sweep};
    let shard = Shard { index: 1, count: 2 };
    let sweep = Sweep::shard(shard);
    let mut metrics = Metrics::default();
    for k in 0..6 {
        let key = format!("adam/seed{k}");
        sweep.cell(&key, &mut metrics, |m| {
            m.push(&key, 1, "loss", 1.0 / (k + 1) as f64);
            m.push(&key, 2, "loss", 0.5 / (k + 1) as f64);
            Ok(vec![("test_mse".to_string(), k as f64 - 0.5)])
        })?;
    }
    let (total, cells) = sweep.finish();
    let options = vec!["--epochs=2".to_string(), "--quick".to_string()];
    let file = ShardFile {
        experiment: "diabetes".into(),
        options: options.clone(),
        shard,
        total,
        cells: cells.clone(),
    };
    let journal = Journal {
        experiment: "diabetes".into(),
        options,
        shard,
        build: "0123456789abcdef (clean tree)".into(),
        cells: cells[..1].to_vec(),
    };
    let torn = format!(
        "{}cell\t3\tadam/seed3\t1\t2\nfield\t000:te",
        journal.to_text()
    );
    Ok(vec![file.to_text().into_bytes(), torn.into_bytes()])
}

fn random(rng: &mut Rng, len: usize) -> Vec<u8> {
    (0..len)
        .map(|_| rng.below(256).expect("256 > 0") as u8)
        .collect()
}

fn main() -> tensor::Result<()> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut rng = Rng::new(2026);
    let checkpoint = Checkpoint {
        tensors: vec![
            (
                "layer.weight".into(),
                AnyTensor::F32(Tensor::from_vec(
                    vec![1.0, -2.5, 3.25, 0.0, 5.0, -6.0],
                    &[2, 3],
                )?),
            ),
            ("empty".into(), AnyTensor::F64(Tensor::zeros(&[0, 4])?)),
            ("scalar".into(), AnyTensor::F64(Tensor::scalar(0.5))),
        ],
        metadata: vec![("step".into(), "12".into())],
    };
    let mut cifar10 = Vec::new();
    let mut cifar100 = Vec::new();
    for label in [3u8, 9] {
        cifar10.push(label);
        cifar10.extend((0..IMAGE_BYTES).map(|i| (i % 251) as u8));
        cifar100.extend([label, label * 10]);
        cifar100.extend((0..IMAGE_BYTES).map(|i| (i % 13) as u8));
    }
    let mut burgers = BurgersConfig::new(2, 8, 1);
    burgers.solver_points = 16;
    burgers.dt = 0.01;
    let corpora: Vec<(&str, Vec<Vec<u8>>)> = vec![
        (
            "safetensors",
            vec![to_bytes(&checkpoint)?, to_bytes(&Checkpoint::default())?],
        ),
        (
            "safetensors_round_trip",
            (0..6).map(|i| random(&mut rng, 24 + 40 * i)).collect(),
        ),
        (
            "idx",
            vec![
                idx(&[3, 4]),
                idx(&[5]),
                idx(&[2, 2, 2]),
                gzip(&idx(&[2, 3, 3])),
                gzip(&idx(&[64])),
            ],
        ),
        ("cifar", vec![cifar10, cifar100]),
        (
            "csv",
            vec![
                b"\x01a,b,c\n1,2,3\n4.5,-6,7e2\n".to_vec(),
                b"\x000.25,1\n-3,4\n".to_vec(),
            ],
        ),
        ("burgers_cache", vec![cache::to_bytes(&generate(&burgers)?)]),
        ("cells", cells_seeds()?),
        ("sizes", sizes_seeds()),
        (
            "shapes",
            (0..8).map(|i| random(&mut rng, 8 + 16 * i)).collect(),
        ),
        (
            "differential",
            (0..8).map(|i| random(&mut rng, 40 + 24 * i)).collect(),
        ),
    ];
    for (target, seeds) in corpora {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir)
            .map_err(|e| tensor::Error::io(dir.display().to_string(), &e))?;
        for (i, bytes) in seeds.iter().enumerate() {
            let path = dir.join(format!("seed-{i}"));
            std::fs::write(&path, bytes)
                .map_err(|e| tensor::Error::io(path.display().to_string(), &e))?;
        }
    }
    println!("seed corpora written under {}", root.display());
    Ok(())
}
