//! The `cifar` experiment: the digits substitute is an exact upscaling, small ResNets
//! learn it with SGD and with the closed-form head, every optimiser runs end to end
//! on CIFAR-format files, runs repeat to the bit, and bad options are named.

use crate::common;

use common::{args, tmpdir};

use models::cli::RunConfig;
use models::data::cifar::IMAGE_BYTES;
use models::experiments::cifar::data::{load, pad_mnist, upscale_digits};
use models::experiments::cifar::network::Network;
use models::experiments::cifar::{run, train_arm, Optimiser, Settings};
use models::experiments::images::ImageSet;
use models::report::Metrics;
use models::train::{Hyper, CONVERGED_DAMPING};
use nn::augment::Augment;
use nn::checkpoint::AnyTensor;

fn settings(width: usize, epochs: usize) -> Settings {
    Settings {
        network: Network::ResNet18(width),
        epochs,
        batch: 32,
        hyper: Hyper {
            lr: 0.05,
            momentum: 0.9,
            weight_decay: 5e-4,
            rho: 0.05,
            fsam_sigma: 1.0,
            fsam_decay: 0.9,
            refresh_every: 3,
            precond_batch: 16,
            inner_lr: 1e-3,
            converged_damping: CONVERGED_DAMPING,
        },
        adam_lr: 1e-3,
        adamw_decay: 0.05,
        lambda: 1.0,
        augment: Augment {
            crop_padding: 4,
            reflect: true,
            flip: 0.0,
            cutout: None,
        },
        quiet: true,
    }
}

#[test]
fn the_substitute_is_each_digit_pixel_as_a_4x4_block_in_three_channels() {
    let (train, _) = models::data::builtin::digits_split().unwrap();
    let up = upscale_digits(&train).unwrap();
    assert_eq!(up.x.shape(), &[train.len(), 3, 32, 32]);
    let (src, dst) = (train.x.to_vec(), up.x.to_vec());
    for (n, img) in src.chunks(64).enumerate() {
        for c in 0..3 {
            for y in 0..32 {
                for x in 0..32 {
                    let v = dst[((n * 3 + c) * 32 + y) * 32 + x];
                    assert_eq!(v, img[(y / 4) * 8 + x / 4]);
                }
            }
        }
    }
    // After standardisation every channel of the training set has mean 0, std 1.
    let images = load(None, ImageSet::Digits, (0, 0)).unwrap();
    let x = &images.train.x;
    let mean = x.mean(&[0, 2, 3], false).unwrap().to_vec();
    let var = x.square().mean(&[0, 2, 3], false).unwrap().to_vec();
    for c in 0..3 {
        assert!(mean[c].abs() < 1e-12 && (var[c] - 1.0).abs() < 1e-9);
    }
}

#[test]
fn the_mnist_substitute_is_each_digit_inside_a_two_pixel_border_in_three_channels() {
    let (train, _) = models::data::builtin::mnist().unwrap();
    let few = train.subset(&[0, 1, 2]).unwrap();
    let padded = pad_mnist(&few).unwrap();
    assert_eq!(padded.x.shape(), &[3, 3, 32, 32]);
    let (src, dst) = (few.x.to_vec(), padded.x.to_vec());
    for (n, img) in src.chunks(784).enumerate() {
        for c in 0..3 {
            for y in 0..32 {
                for x in 0..32 {
                    let v = dst[((n * 3 + c) * 32 + y) * 32 + x];
                    let inside = (2..30).contains(&y) && (2..30).contains(&x);
                    let want = if inside {
                        img[(y - 2) * 28 + x - 2]
                    } else {
                        0.0
                    };
                    assert_eq!(v, want);
                }
            }
        }
    }
    assert!(pad_mnist(&models::data::builtin::digits_split().unwrap().0).is_err());
    // Both limits apply, and the labels follow their images.
    let images = load(None, ImageSet::Mnist, (300, 100)).unwrap();
    assert_eq!((images.train.len(), images.test.len()), (300, 100));
    assert_eq!(
        images.train.labels().unwrap().0,
        &train.labels().unwrap().0[..300]
    );
}

#[test]
fn a_narrow_resnet_learns_the_substitute_with_sgd_and_with_the_closed_form_head() {
    let images = load(None, ImageSet::Digits, (480, 0)).unwrap();
    let s = settings(4, 5);
    for opt in [Optimiser::Sgd, Optimiser::ClosedForm] {
        let r = train_arm(opt, &images, &s, 0, &mut Metrics::default()).unwrap();
        // Chance is 10 %; five times chance is far beyond what an untrained model reaches.
        assert!(r.accuracy > 50.0, "{opt:?}: {}", r.accuracy);
        assert!(r.train_loss.is_finite());
    }
}

#[test]
fn training_repeats_to_the_bit() {
    let images = load(None, ImageSet::Digits, (64, 0)).unwrap();
    let s = settings(2, 1);
    for opt in [Optimiser::Sam, Optimiser::LlqrSam] {
        let a = train_arm(opt, &images, &s, 5, &mut Metrics::default()).unwrap();
        let b = train_arm(opt, &images, &s, 5, &mut Metrics::default()).unwrap();
        assert_eq!(a.accuracy.to_bits(), b.accuracy.to_bits());
        for ((na, ta), (nb, tb)) in a.tensors.iter().zip(&b.tensors) {
            assert_eq!(na, nb);
            let (AnyTensor::F32(ta), AnyTensor::F32(tb)) = (ta, tb) else {
                panic!("{na} is not f32");
            };
            assert!(
                ta.to_vec()
                    .iter()
                    .zip(tb.to_vec())
                    .all(|(x, y)| x.to_bits() == y.to_bits()),
                "{na} differs"
            );
        }
    }
}

#[test]
fn every_optimiser_runs_on_cifar_10_files() {
    let dir = tmpdir("cifar-run");
    // Class k is a brightness level plus noise, so the files are valid and varied.
    let mut rng = tensor::Rng::new(3);
    let mut file = |records: usize| -> Vec<u8> {
        let mut out = Vec::new();
        for r in 0..records {
            let label = (r % 10) as u8;
            out.push(label);
            for _ in 0..IMAGE_BYTES {
                out.push((label as f64 * 20.0 + rng.uniform() * 60.0) as u8);
            }
        }
        out
    };
    for i in 1..=5 {
        std::fs::write(dir.join(format!("data_batch_{i}.bin")), file(12)).unwrap();
    }
    std::fs::write(dir.join("test_batch.bin"), file(20)).unwrap();
    let out = dir.join("runs");
    let cfg = RunConfig::parse(&args(&[
        "--quick",
        "--quiet",
        "--data",
        dir.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--width",
        "2",
        "--epochs",
        "1",
        "--batch",
        "20",
        // One refresh of U, before the first of the three steps.
        "--refresh",
        "3",
    ]))
    .unwrap();
    let tables = run(&cfg).unwrap();
    let rendered = tables[0].render();
    assert!(rendered.contains("Cifar10") && rendered.contains("60 train / 20 test"));
    for name in ["SGD", "Adam", "SAM", "LLQR+SAM", "closed-form head"] {
        assert!(rendered.contains(name), "{name} missing:\n{rendered}");
    }
    assert!(!rendered.contains("NaN"), "{rendered}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_options_and_missing_files_are_named() {
    let empty = tmpdir("cifar-empty");
    let cases: [(&[&str], &str); 6] = [
        (&["--model", "resnet50"], "resnet50"),
        (&["--model", "wrn-15-2"], "6n + 4"),
        (&["--optimisers", "sgd,lbfgs"], "lbfgs"),
        (&["--augment", "rotate"], "rotate"),
        (&["--width", "0"], "--width"),
        (&["--data", empty.to_str().unwrap()], "neither CIFAR-10"),
    ];
    for (extra, needle) in cases {
        let mut a = args(&["--quick", "--quiet", "--epochs", "1", "--train-limit", "8"]);
        a.extend(args(extra));
        let e = run(&RunConfig::parse(&a).unwrap())
            .err()
            .unwrap_or_else(|| panic!("{extra:?} was accepted"))
            .to_string();
        assert!(e.contains(needle), "{extra:?}: {e}");
    }
    std::fs::remove_dir_all(&empty).unwrap();
}

#[test]
fn the_vit_experiment_runs_every_optimiser() {
    let out = tmpdir("vit-run");
    let cfg = RunConfig::parse(&args(&[
        "--quick",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
        "--depth",
        "1",
        "--epochs",
        "1",
        "--train-limit",
        "48",
        "--batch",
        "24",
        // One refresh of U, before the first of the two steps (each refresh of the
        // ViT's U is ~100 Gauss-Newton products: half a minute here).
        "--refresh",
        "2",
    ]))
    .unwrap();
    let text = models::experiments::vit::run(&cfg).unwrap()[0].render();
    assert!(
        text.contains("ViT (d 192, 1 layers, 3 heads, patch 8)"),
        "{text}"
    );
    for name in ["AdamW", "SAM around AdamW", "LLQR+SAM"] {
        assert!(text.contains(name), "{name}:\n{text}");
    }
    assert!(!text.contains("NaN"), "{text}");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn a_bad_patch_and_constant_images_are_named() {
    let e = run(&RunConfig::parse(&args(&[
        "--quick", "--quiet", "--model", "vit-tiny", "--patch", "5",
    ]))
    .unwrap())
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("--patch 5 must divide 32"), "{e}");
    let dir = tmpdir("cifar-constant");
    let mut record = vec![0u8];
    record.extend(vec![7u8; IMAGE_BYTES]);
    for i in 1..=5 {
        std::fs::write(dir.join(format!("data_batch_{i}.bin")), &record).unwrap();
    }
    std::fs::write(dir.join("test_batch.bin"), &record).unwrap();
    let e = load(Some(&dir), ImageSet::Mnist, (0, 0))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("constant"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn arms_around_adamw_follow_adams_schedule() {
    // An LLQR or SAM arm wrapped around AdamW must step at the AdamW arm's rate, not
    // at SGD's (AdamW at SGD's 0.05 cannot train a ViT).
    let s = settings(4, 1);
    assert_ne!(s.adam_lr, s.hyper.lr);
    for name in [
        "adam",
        "adamw",
        "sam-adamw",
        "llqr-sam-adamw",
        "llqr-fsam-adamw",
    ] {
        assert_eq!(
            Optimiser::parse(name).unwrap().base_lr(&s),
            s.adam_lr,
            "{name}"
        );
    }
    for name in ["sgd", "sam", "llqr-sam", "llqr-fsam", "closed-form"] {
        assert_eq!(
            Optimiser::parse(name).unwrap().base_lr(&s),
            s.hyper.lr,
            "{name}"
        );
    }
}
