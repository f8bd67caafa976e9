//! Datasets, the command-line options and the learning check of the digits
//! experiment.

use models::cli::RunConfig;
use models::data::{builtin, Standardizer};
use models::experiments::digits::{self, Arm, LossKind};
use models::report::Metrics;
use models::train::OptimizerKind;
use tensor::Rng;

#[test]
fn shipped_datasets_have_their_documented_sizes() {
    let d = builtin::digits().unwrap();
    assert_eq!(d.x.shape(), &[1797, 64]);
    let (labels, classes) = d.labels().unwrap();
    assert_eq!(classes, 10);
    assert!((0..10).all(|c| labels.iter().filter(|&&l| l == c).count() > 150));
    assert!(d.x.max_all().unwrap() <= 1.0 && d.x.min_all().unwrap() >= 0.0);
    let b = builtin::diabetes().unwrap();
    assert_eq!(b.x.shape(), &[442, 10]);
    assert_eq!(b.values().unwrap().shape(), &[442, 1]);
}

#[test]
fn splits_batches_and_standardisation_are_seeded_and_exact() {
    let d = builtin::diabetes().unwrap();
    let (a1, b1) = d.split(0.25, &mut Rng::new(5)).unwrap();
    let (a2, _) = d.split(0.25, &mut Rng::new(5)).unwrap();
    assert_eq!(a1.x.to_vec(), a2.x.to_vec());
    assert_eq!(a1.len() + b1.len(), 442);
    assert_eq!(b1.len(), 111);
    let batches = a1.batches(50, Some(&mut Rng::new(1))).unwrap();
    let mut all: Vec<usize> = batches.concat();
    all.sort();
    assert_eq!(all, (0..a1.len()).collect::<Vec<_>>());
    assert_eq!(batches.last().unwrap().len(), a1.len() % 50);
    let s = Standardizer::fit(&a1.x).unwrap();
    let z = s.transform(&a1.x).unwrap();
    let m = z.mean(&[0], false).unwrap().to_vec();
    assert!(m.iter().all(|v| v.abs() < 1e-12));
    let back = s.inverse(&z).unwrap();
    for (x, y) in back.to_vec().iter().zip(a1.x.to_vec()) {
        assert!((x - y).abs() < 1e-9 * (1.0 + y.abs()));
    }
    assert!(d.split(1.5, &mut Rng::new(0)).is_err());
    assert!(a1.batches(0, None).is_err());
}

#[test]
fn options_are_parsed_and_checked() {
    let args: Vec<String> = ["--seed", "3", "--quick", "--epochs", "5", "--threads", "2"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let cfg = RunConfig::parse(&args).unwrap();
    assert_eq!((cfg.seed, cfg.quick, cfg.threads), (3, true, Some(2)));
    assert_eq!(cfg.opt("epochs", 1usize).unwrap(), 5);
    assert!(cfg.check_known("digits", digits::OPTIONS).is_ok());
    assert!(cfg
        .check_known("demo", &[])
        .unwrap_err()
        .to_string()
        .contains("no option --epochs"));
    assert_eq!(cfg.seed_list(2, 5), vec![3, 4]);
    for bad in [
        &["--seed"][..],
        &["--seed", "x"],
        &["oops"],
        &["--threads", "0"],
        &["--seeds", "0"],
    ] {
        let args: Vec<String> = bad.iter().map(|s| s.to_string()).collect();
        assert!(RunConfig::parse(&args).is_err(), "{bad:?}");
    }
    let bad = RunConfig::parse(&["--epochs".to_string(), "many".to_string()]).unwrap();
    assert!(bad.opt("epochs", 1usize).is_err());
}

#[test]
fn digits_reaches_95_percent_with_adam_in_the_quick_setting() {
    let (train, test) = digits::split().unwrap();
    let arm = Arm {
        optimizer: OptimizerKind::Adam { lr: 1e-3 },
        loss: LossKind::CrossEntropy,
        epochs: 20,
        batch: 32,
        hidden: 128,
    };
    let (acc, _, _) = digits::train_arm(
        &arm,
        &train,
        &test,
        0,
        "adam",
        true,
        &mut Metrics::default(),
    )
    .unwrap();
    assert!(acc >= 0.95, "test accuracy {acc}");
}
