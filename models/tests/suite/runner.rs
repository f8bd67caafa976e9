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
    let q = builtin::qm9().unwrap();
    assert_eq!(q.len(), 20_000);
    let mut indices: Vec<usize> = q.iter().map(|m| m.gdb_index).collect();
    indices.sort();
    indices.dedup();
    assert_eq!(indices.len(), 20_000);
    assert!(indices[0] >= 1 && indices[19_999] <= 133_885);
    // Bound molecules: atomization energies within QM9's range (about −12 to −113 eV
    // in this subset), and each molecule has a heavy atom.
    assert!(q
        .iter()
        .all(|m| (-120.0..-5.0).contains(&m.atomization_ev())));
    assert!(q.iter().all(|m| m.kinds.iter().any(|&k| k > 0)));
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
    let e = a1.subset(&[0, a1.len()]).unwrap_err().to_string();
    assert!(
        e.contains(&format!("index {} is out of range", a1.len())),
        "{e}"
    );
    let digits = builtin::digits().unwrap();
    assert!(digits.subset(&[digits.len() + 3]).is_err());
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
    assert_eq!(cfg.seed_list(2, 5).unwrap(), vec![3, 4]);
    // The last seeds a u64 holds run; one past it is an error, not a wrap to 0.
    let top = |n: &str| {
        let a: Vec<String> = ["--seed", "18446744073709551613", "--seeds", n]
            .iter()
            .map(|s| s.to_string())
            .collect();
        RunConfig::parse(&a).unwrap().seed_list(1, 1)
    };
    assert_eq!(
        top("3").unwrap(),
        vec![u64::MAX - 2, u64::MAX - 1, u64::MAX]
    );
    let e = top("4").err().unwrap().to_string();
    assert!(e.contains("past the largest seed"), "{e}");
    for bad in [
        &["--seed"][..],
        &["--seed", "x"],
        &["oops"],
        &["--threads", "0"],
        &["--seeds", "0"],
        &["--quick=yes"],
        &["--seed="],
    ] {
        let args: Vec<String> = bad.iter().map(|s| s.to_string()).collect();
        assert!(RunConfig::parse(&args).is_err(), "{bad:?}");
    }
    // `--key=value` reads the value in place, so lists may start with a minus.
    let inline: Vec<String> = ["--sweep=-4,-2", "--seed=7", "--quiet"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let cfg = RunConfig::parse(&inline).unwrap();
    assert_eq!((cfg.seed, cfg.quiet), (7, true));
    assert_eq!(cfg.opt_list("sweep", &[0.0]).unwrap(), vec![-4.0, -2.0]);
    let bad = RunConfig::parse(&["--epochs".to_string(), "many".to_string()]).unwrap();
    assert!(bad.opt("epochs", 1usize).is_err());
}

/// An option given twice (whichever value would win, a caption could show the
/// other), values kept for a trace that is not written, and more worker threads
/// than the machine could use are refused, each with what was wrong.
#[test]
fn ambiguous_or_unbounded_options_are_refused() {
    let parse = |a: &[&str]| {
        let args: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        RunConfig::parse(&args).map_err(|e| e.to_string())
    };
    let twice = parse(&["--epochs", "3", "--epochs=2"]).unwrap_err();
    assert!(twice.contains("--epochs is given twice"), "{twice}");
    assert!(parse(&["--quick", "--quick"]).is_err());
    let orphan = parse(&["--trace-values-step", "1"]).unwrap_err();
    assert!(orphan.contains("needs --trace"), "{orphan}");
    assert!(parse(&["--trace-values-step", "1", "--trace", "t.csv"]).is_ok());
    let max = models::cli::max_threads();
    assert!(parse(&["--threads", &max.to_string()]).is_ok());
    let many = parse(&["--threads", &(max + 1).to_string()]).unwrap_err();
    assert!(many.contains("MODELS_MAX_THREADS"), "{many}");
}

#[test]
fn digits_reaches_95_percent_with_adam_in_the_quick_setting() {
    let (train, test) = models::data::builtin::digits_split().unwrap();
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

#[test]
fn symmetric_label_noise_flips_the_stated_fraction_to_uniform_other_classes() {
    let (train, _) = models::data::builtin::digits_split().unwrap();
    let (labels, classes) = train.labels().unwrap();
    let n = labels.len() as f64;
    let (noisy, changed) = train.with_label_noise(0.4, &mut Rng::new(3)).unwrap();
    let (noisy_labels, _) = noisy.labels().unwrap();
    let differ = labels
        .iter()
        .zip(noisy_labels)
        .filter(|(a, b)| a != b)
        .count();
    // Every flip goes to another class, so the count reported is the count that differ.
    assert_eq!(changed, differ);
    // Binomial(n, 0.4): within 4 standard deviations.
    let sd = (n * 0.4 * 0.6).sqrt();
    assert!(
        (changed as f64 - 0.4 * n).abs() < 4.0 * sd,
        "{changed} of {n}"
    );
    // The offset (new − old) mod classes is uniform on 1..classes: χ² with 8 degrees
    // of freedom below its 0.1 % critical value 26.1.
    let mut counts = vec![0.0; classes];
    for (a, b) in labels.iter().zip(noisy_labels).filter(|(a, b)| a != b) {
        counts[(b + classes - a) % classes] += 1.0;
    }
    assert_eq!(counts[0], 0.0);
    let expected = changed as f64 / (classes - 1) as f64;
    let chi2: f64 = counts[1..]
        .iter()
        .map(|c| (c - expected).powi(2) / expected)
        .sum();
    assert!(chi2 < 26.1, "χ² {chi2} over offsets {counts:?}");
    // Features are untouched; no noise changes nothing; bad input is refused.
    assert_eq!(noisy.x.to_vec(), train.x.to_vec());
    let (same, zero) = train.with_label_noise(0.0, &mut Rng::new(3)).unwrap();
    assert_eq!((same.labels().unwrap().0, zero), (labels, 0));
    assert!(train.with_label_noise(1.5, &mut Rng::new(0)).is_err());
    assert!(train.with_label_noise(f64::NAN, &mut Rng::new(0)).is_err());
    let regression = builtin::diabetes().unwrap();
    assert!(regression.with_label_noise(0.1, &mut Rng::new(0)).is_err());
}

#[test]
fn a_large_constant_column_keeps_scale_one() {
    // A constant column of 730000.37: its computed mean rounds, leaving a spurious
    // spread of a few ulps (3.5e-10 here), which must not become its scale.
    let x = tensor::Tensor::from_vec(
        (0..300).flat_map(|i| [730000.37, i as f64]).collect(),
        &[300, 2],
    )
    .unwrap();
    let spurious = x.std(&[0], 0, false).unwrap().to_vec()[0];
    assert!(
        spurious > 1e-12,
        "the premise: a non-zero rounding spread, got {spurious}"
    );
    let z = Standardizer::fit(&x).unwrap().transform(&x).unwrap();
    for row in z.to_vec().chunks(2) {
        assert!(row[0].abs() < 1e-6, "{}", row[0]);
    }
}

#[test]
fn the_image_option_picks_the_set_and_names_bad_values() {
    use models::cli::RunConfig;
    use models::experiments::images::{load, ImageSet};
    let cfg = |args: &[&str]| {
        RunConfig::parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    };
    let m = load(&cfg(&[]), ImageSet::Mnist, (100, 50)).unwrap();
    assert_eq!((m.train.len(), m.test.len(), m.side), (100, 50, 28));
    assert!(
        m.description.contains("first 100 of 8000"),
        "{}",
        m.description
    );
    let d = load(&cfg(&["--dataset", "digits"]), ImageSet::Mnist, (0, 0)).unwrap();
    assert_eq!((d.train.len(), d.test.len(), d.side), (1438, 359, 8));
    let sized = load(&cfg(&["--train-size", "7"]), ImageSet::Digits, (100, 0)).unwrap();
    assert_eq!(sized.train.len(), 7);
    let err = |args: &[&str]| {
        load(&cfg(args), ImageSet::Mnist, (0, 0))
            .err()
            .expect("an error")
            .to_string()
    };
    assert!(err(&["--dataset", "cifar"]).contains("expected mnist or digits"));
    assert!(err(&["--dataset", "digits", "--data", "/tmp"]).contains("takes none"));
    assert!(err(&["--data", "/no/such/dir"]).contains("neither train-images-idx3-ubyte"));
}

/// Zero counts are refused by name before any work, instead of dividing by zero or
/// finishing with a table of NaNs.
#[test]
fn zero_sizes_and_budgets_are_named_errors() {
    let registry = models::experiments::registry();
    for (name, key) in [
        ("digits", "batch"),
        ("digits", "epochs"),
        ("mnist", "hidden"),
        ("diabetes", "batch"),
        ("diabetes", "epochs"),
        ("closed-form-regression", "steps"),
        ("closed-form-classification", "steps"),
        ("closed-form-regression", "epochs"),
        ("closed-form-pairs", "epochs"),
        ("closed-form-classes", "steps"),
        ("lift-ebm-1d", "grid"),
        ("lift-ebm-1d", "iterations"),
        ("pothole", "steps"),
        ("seq2seq", "epochs"),
        ("llqr-sam", "batch"),
        ("lift-flow-2d", "layers"),
        ("dfiv", "epochs"),
    ] {
        let e = registry.iter().find(|e| e.name == name).unwrap();
        let args: Vec<String> = [
            format!("--{key}"),
            "0".into(),
            "--out".into(),
            "/nonexistent/zero-check".into(),
        ]
        .to_vec();
        let err = (e.run)(&RunConfig::parse(&args).unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains(&format!("--{key}")), "{name} --{key} 0: {err}");
    }
}

/// Two runs with the same identifier (the same experiment started in the same
/// second) get two folders; neither writes into the other's.
#[test]
fn run_folders_are_never_reused() {
    let out = std::env::temp_dir().join(format!("runner-rundir-{}", std::process::id()));
    let a = models::report::RunDir::create(&out, "exp", "20261201-seed0").unwrap();
    let b = models::report::RunDir::create(&out, "exp", "20261201-seed0").unwrap();
    let c = models::report::RunDir::create(&out, "exp", "20261201-seed0").unwrap();
    assert_ne!(a.path, b.path);
    assert!(b.path.ends_with("20261201-seed0-2") && c.path.ends_with("20261201-seed0-3"));
    let blocked = out.join("file");
    std::fs::write(&blocked, b"x").unwrap();
    assert!(models::report::RunDir::create(&blocked, "exp", "id").is_err());
    std::fs::remove_dir_all(&out).unwrap();
}

/// The runner creates the run folder before the experiment starts: an unwritable
/// `--out` is an error before any training, a run that fails before writing
/// leaves no empty folder, and the experiment writes into the prepared folder.
#[test]
fn the_run_folder_exists_before_training_and_failed_runs_leave_none() {
    let out = std::env::temp_dir().join(format!("runner-prepared-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let blocked = out.join("a-file");
    std::fs::write(&blocked, b"x").unwrap();
    let exp = models::experiments::registry()
        .into_iter()
        .find(|e| e.name == "diabetes")
        .unwrap();
    let args = |extra: &[&str]| {
        let mut v: Vec<String> = ["--quick", "--quiet", "--out"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.push(out.display().to_string());
        v.extend(extra.iter().map(|s| s.to_string()));
        RunConfig::parse(&v).unwrap()
    };
    // Unwritable --out: fails at once (a full diabetes run takes seconds, this
    // must not train at all: the error names the path).
    let mut cfg = args(&[]);
    cfg.out = blocked.clone();
    let start = std::time::Instant::now();
    let e = models::experiments::run_experiment(&exp, &cfg)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("a-file"), "{e}");
    assert!(start.elapsed().as_secs_f64() < 0.5);
    // A run that fails on its options leaves no folder.
    let e = models::experiments::run_experiment(&exp, &args(&["--batch", "0"]))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("batch"), "{e}");
    let left = std::fs::read_dir(out.join("diabetes")).unwrap().count();
    assert_eq!(left, 0, "a failed run left a folder");
    // The prepared folder is the one the experiment uses.
    let cfg = args(&[]).prepare_run_dir("diabetes").unwrap();
    let dir = cfg.prepared_dir().unwrap().path.clone();
    assert_eq!(cfg.run_dir("diabetes").unwrap().path, dir);
    assert_ne!(cfg.run_dir("digits").unwrap().path, dir);
    std::fs::remove_dir_all(&out).unwrap();
}

/// `models EXP --help` prints the experiment's own options with their defaults;
/// an unknown experiment is named.
#[test]
fn the_binary_explains_each_experiment() {
    let bin = env!("CARGO_BIN_EXE_models");
    let out = std::process::Command::new(bin)
        .args(["lift-flow-tabular", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for (key, _) in models::experiments::lift::tabular::OPTIONS {
        assert!(
            text.contains(&format!("--{key}")),
            "--{key} missing:\n{text}"
        );
    }
    assert!(text.contains("quick 2000") && text.contains("common options"));
    let out = std::process::Command::new(bin)
        .args(["nope", "--help"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown experiment 'nope'"));
}

/// A usage mistake exits with status 2 and says what was wrong; a folder the
/// command cannot use (or cannot read) exits with 1; the library returns the
/// matching kind.
#[test]
fn usage_mistakes_and_refusals_are_told_apart() {
    let bin = env!("CARGO_BIN_EXE_models");
    let missing = std::env::temp_dir().join("models-no-such-run-dir");
    let missing = missing.to_str().unwrap();
    for (args, status, needle) in [
        (
            &["diabetes", "--epochs", "0"][..],
            2,
            "--epochs must be at least 1",
        ),
        (&["nope"], 2, "unknown experiment 'nope'"),
        (&["keep"], 2, "usage: models keep RUN_DIR"),
        (
            &["keep", "a", "--into", "b"],
            2,
            "keep: unknown option '--into'",
        ),
        (&["diabetes", "--seeds"], 2, "--seeds needs a value"),
        (&["keep", missing], 1, "models-no-such-run-dir"),
    ] {
        let out = std::process::Command::new(bin).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(status), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let args: Vec<String> = ["--seeds", "0"].iter().map(|s| s.to_string()).collect();
    let e = RunConfig::parse(&args).unwrap_err();
    assert!(matches!(e, models::error::Error::Usage(_)), "{e:?}");
}
