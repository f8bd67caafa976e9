//! `--shard i/n`, `models merge` and `models resume`: the merge of a sweep's
//! shards writes the table, metrics, plot and evidence of the unsharded run, and a
//! killed shard resumes from its finished cells.

use models::cli::RunConfig;
use models::experiments::{merge, registry, resume, run_experiment};
use models::sweep::{Journal, ShardFile};
use std::path::{Path, PathBuf};

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Runs `experiment` with `options` under `out`, returning its run folder.
fn run(experiment: &str, options: &[&str], out: &Path) -> PathBuf {
    let e = registry()
        .into_iter()
        .find(|e| e.name == experiment)
        .unwrap();
    let mut cfg = RunConfig::parse(&args(options)).unwrap();
    cfg.out = out.to_path_buf();
    cfg.quiet = true;
    run_experiment(&e, &cfg).unwrap();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(out.join(experiment))
        .unwrap()
        .map(|d| d.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "one run folder under {}", out.display());
    dirs.pop().unwrap()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The tables with their timing columns blanked: wall time is the one number two
/// runs of the same options do not share. A table's header is the line above its
/// `|---` rule.
fn without_timings(tables: &str) -> String {
    let lines: Vec<&str> = tables.lines().collect();
    let mut timing: Vec<bool> = Vec::new();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let cells: Vec<&str> = line.split('|').collect();
        if lines.get(i + 1).is_some_and(|next| next.starts_with("|-")) {
            timing = cells
                .iter()
                .map(|c| {
                    [
                        "seconds",
                        "ms /",
                        "× SGD",
                        "s / epoch",
                        "s / run",
                        "× first",
                    ]
                    .iter()
                    .any(|t| c.contains(t))
                })
                .collect();
        }
        let kept: Vec<&str> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| if timing.get(i) == Some(&true) { "" } else { c })
            .collect();
        out.push(kept.join("|"));
    }
    out.join("\n")
}

/// Runs `experiment` whole and as 3 shards, merges them, and compares.
fn shards_merge_to_the_whole_run(experiment: &str, options: &[&str]) {
    let root = std::env::temp_dir().join(format!("sweep-{experiment}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let whole = run(experiment, options, &root.join("whole"));
    let shards: Vec<PathBuf> = (0..3)
        .map(|i| {
            let spec = format!("{i}/3");
            let mut o = options.to_vec();
            o.extend(["--shard", &spec]);
            let dir = run(experiment, &o, &root.join(format!("shard{i}")));
            assert!(!dir.join("table.txt").exists(), "a shard writes no table");
            assert!(dir.join("cells.txt").exists());
            dir
        })
        .collect();
    // The shards in any order.
    let order = [shards[2].clone(), shards[0].clone(), shards[1].clone()];
    let merged_tables = merge(&order, &root.join("merged")).unwrap();
    assert!(!merged_tables.is_empty());
    let merged = root.join("merged").join(experiment);
    let merged = std::fs::read_dir(&merged)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert!(merged.to_string_lossy().ends_with("-merged"));
    let (a, b) = (
        read(&whole.join("table.txt")),
        read(&merged.join("table.txt")),
    );
    assert_eq!(without_timings(&a), without_timings(&b));
    assert!(!b.contains("NaN"), "{b}");
    assert_eq!(
        read(&whole.join("metrics.csv")),
        read(&merged.join("metrics.csv"))
    );
    assert_eq!(
        read(&whole.join("plot.svg")),
        read(&merged.join("plot.svg"))
    );
    assert_eq!(
        whole.join("evidence.txt").exists(),
        merged.join("evidence.txt").exists()
    );
    if whole.join("evidence.txt").exists() {
        assert_eq!(
            read(&whole.join("evidence.txt")),
            read(&merged.join("evidence.txt"))
        );
    }
    let manifest = read(&merged.join("manifest.txt"));
    assert!(
        manifest.contains("merged from: 3 shards, each completed"),
        "{manifest}"
    );
    // The sweep's folders (each shard's --out) instead of the shard folders.
    let outs: Vec<PathBuf> = (0..3).map(|i| root.join(format!("shard{i}"))).collect();
    merge(&outs, &root.join("merged-again")).unwrap();
    // A missing shard, or one from other options, is refused and writes nothing.
    let before = std::fs::read_dir(root.join("merged").join(experiment))
        .unwrap()
        .count();
    let err = merge(&shards[..2], &root.join("merged"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing shard folders for 2/3"), "{err}");
    let mut other = options.to_vec();
    other.extend(["--seed", "7", "--shard", "2/3"]);
    let foreign = run(experiment, &other, &root.join("foreign"));
    let err = merge(
        &[shards[0].clone(), shards[1].clone(), foreign],
        &root.join("merged"),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("options differ"), "{err}");
    assert_eq!(
        std::fs::read_dir(root.join("merged").join(experiment))
            .unwrap()
            .count(),
        before
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn diabetes_shards_merge_to_the_whole_run() {
    shards_merge_to_the_whole_run("diabetes", &["--quick", "--epochs", "2", "--seeds", "3"]);
}

/// LLQR+SAM cells carry U's spread and the timings; the noise levels are a grid axis.
#[test]
fn llqr_sam_shards_merge_to_the_whole_run() {
    shards_merge_to_the_whole_run(
        "llqr-sam",
        &[
            "--quick",
            "--epochs",
            "1",
            "--seeds",
            "2",
            "--noise",
            "0,40",
            "--arms",
            "sgd,llqr-sam-ngd-euclid",
            "--train-size",
            "200",
            "--test-size",
            "100",
            "--hidden",
            "16",
        ],
    );
}

/// The closed-form comparison: the validation scores are shared cells (every
/// shard computes them, since its cells depend on the choice; the merge replays
/// them), the method × batch × seed cells are split.
#[test]
fn closed_form_regression_shards_merge_to_the_whole_run() {
    shards_merge_to_the_whole_run(
        "closed-form-regression",
        &[
            "--quick",
            "--datasets",
            "diabetes",
            "--epochs",
            "1",
            "--batches",
            "64,128",
            "--lambdas",
            "1",
            "--betas",
            "0.01",
            "--lr-factors",
            "1",
            "--seeds",
            "2",
        ],
    );
}

/// The closed-form head's cells (method × classes × seed) on a Gaussian mixture.
#[test]
fn closed_form_classes_shards_merge_to_the_whole_run() {
    shards_merge_to_the_whole_run(
        "closed-form-classes",
        &[
            "--quick",
            "--classes",
            "3,5",
            "--steps",
            "5",
            "--seeds",
            "2",
            "--dim",
            "4",
        ],
    );
}

/// Convex potential flows: strategy × seed cells, the σ²_Jac snapshots of the first
/// seed's cells, the lift's ablations and a slack sweep, all carried by the cells.
#[test]
fn lift_flow_2d_shards_merge_to_the_whole_run() {
    shards_merge_to_the_whole_run(
        "lift-flow-2d",
        &[
            "--quick",
            "--iterations",
            "6",
            "--seeds",
            "2",
            "--probe-every",
            "3",
            "--slack-sweep",
            "-2,0",
            "--width",
            "8",
            "--layers",
            "2",
        ],
    );
}

/// The latent EBM: every shard trains the same autoencoder, and the strategy × seed
/// cells run on its codes.
#[test]
fn lift_ebm_latent_shards_merge_to_the_whole_run() {
    shards_merge_to_the_whole_run(
        "lift-ebm-latent",
        &[
            "--quick",
            "--ae-epochs",
            "1",
            "--iterations",
            "4",
            "--width",
            "8",
            "--seeds",
            "2",
            "--images",
            "300",
            "--proposals",
            "64",
        ],
    );
}

#[test]
fn experiments_that_do_not_shard_say_so() {
    let e = registry()
        .into_iter()
        .find(|e| e.name == "pothole")
        .unwrap();
    let mut cfg = RunConfig::parse(&args(&["--quick", "--shard", "0/2"])).unwrap();
    cfg.out = std::env::temp_dir().join(format!("sweep-refuse-{}", std::process::id()));
    let err = run_experiment(&e, &cfg).unwrap_err().to_string();
    assert!(
        err.contains("cannot split it") && err.contains("diabetes"),
        "{err}"
    );
    assert!(!cfg.out.exists(), "no run folder is made");
    assert!(RunConfig::parse(&args(&["--shard", "3/3"])).is_err());
}

/// A shard killed after its first cell: `resume` keeps that cell as the journal
/// holds it (a marked value proves it was not recomputed), drops the torn cell
/// after it, computes the rest, and leaves the cells an uninterrupted shard leaves.
#[test]
fn a_killed_shard_resumes_from_its_finished_cells() {
    let root = std::env::temp_dir().join(format!("sweep-resume-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let options = ["--quick", "--epochs", "2", "--seeds", "3", "--shard", "0/2"];
    let dir = run("diabetes", &options, &root);
    let done = ShardFile::read(&dir).unwrap();
    assert_eq!(done.cells.len(), 3);
    let err = resume(&dir).unwrap_err().to_string();
    assert!(err.contains("nothing to resume"), "{err}");
    // The state a kill during the second cell leaves: a journal with one whole
    // cell and a torn one, no cells.txt, no manifest.
    let mut first = done.cells[0].clone();
    let marked = first
        .fields
        .pairs()
        .into_iter()
        .map(|(k, v)| (k.clone(), if k.ends_with("test_mse") { 12345.0 } else { v }))
        .collect();
    first.fields = models::sweep::Fields::new(marked);
    let journal = Journal {
        experiment: done.experiment.clone(),
        options: done.options.clone(),
        shard: done.shard,
        build: models::sweep::journal::this_build(),
        cells: vec![first],
    };
    journal.write(&dir).unwrap();
    let torn = format!(
        "{}cell\t2\tsgd/seed1\nfield\t000:test_mse\t40a5",
        journal.to_text()
    );
    std::fs::write(dir.join(models::sweep::journal::FILE), torn).unwrap();
    std::fs::remove_file(dir.join("cells.txt")).unwrap();
    std::fs::remove_file(dir.join("manifest.txt")).unwrap();
    let err = merge(std::slice::from_ref(&dir), &root.join("m"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("did not finish") && err.contains("models resume"),
        "{err}"
    );
    resume(&dir).unwrap();
    assert!(!dir.join(models::sweep::journal::FILE).exists());
    let resumed = ShardFile::read(&dir).unwrap();
    assert_eq!(resumed.total, done.total);
    let untimed = |c: &models::sweep::Recorded| {
        let fields: Vec<(String, u64)> = c
            .fields
            .pairs()
            .into_iter()
            .filter(|(k, _)| !k.ends_with("seconds"))
            .map(|(k, v)| (k, v.to_bits()))
            .collect();
        let rows: Vec<(String, usize, u64)> = c
            .rows
            .iter()
            .map(|r| (r.series.clone(), r.step, r.value.to_bits()))
            .collect();
        (c.position, c.key.clone(), fields, rows)
    };
    assert_eq!(resumed.cells.len(), 3);
    assert_eq!(
        resumed.cells[0].fields.get("000:test_mse").unwrap(),
        12345.0
    );
    for (a, b) in done.cells.iter().zip(&resumed.cells).skip(1) {
        assert_eq!(untimed(a), untimed(b));
    }
    let manifest = read(&dir.join("manifest.txt"));
    assert!(manifest.contains("resumed: 1 cells"), "{manifest}");
    // A journal another build wrote is refused.
    std::fs::remove_file(dir.join("cells.txt")).unwrap();
    Journal {
        build: "0123abc (clean tree)".into(),
        ..journal
    }
    .write(&dir)
    .unwrap();
    let err = resume(&dir).unwrap_err().to_string();
    assert!(err.contains("was run by 0123abc"), "{err}");
    let _ = std::fs::remove_dir_all(&root);
}
