//! `results/`, `models keep` and `models report`: entries are made only from
//! finished clean runs, the report recomputes their verdicts, and the README's
//! claims section and `results/README.md` are exactly what the commands generate.

use models::report::evidence::{Better, Claim, Evidence};
use models::report::evidence_file;
use models::results::{self, claims, index, keep};
use std::path::{Path, PathBuf};

fn write(p: &Path, text: &str) {
    std::fs::write(p, text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
}

/// A finished run folder as the runner leaves it, with `changes` applied to its
/// manifest lines.
fn fake_run(dir: &Path, experiment: &str, changes: &[(&str, &str)]) -> PathBuf {
    let run = dir.join(format!("run-{}", changes.len()));
    std::fs::create_dir_all(&run).unwrap();
    let mut lines = vec![
        ("experiment", experiment),
        ("command line", "models lift-flow-2d --seeds 3"),
        ("setting", "full"),
        ("shard", "none"),
        ("commit", "0123456789abcdef"),
        ("tree", "clean"),
        ("threads", "2"),
        ("machine", "test CPU, 2 logical CPUs"),
        ("start (UTC)", "20261206-000000"),
        ("wall time", "12.5 s"),
        ("outcome", "completed"),
    ];
    for (k, v) in changes {
        match lines.iter_mut().find(|(key, _)| key == k) {
            Some(line) => line.1 = v,
            None => lines.push((k, v)),
        }
    }
    let manifest: String = lines.iter().map(|(k, v)| format!("{k}: {v}\n")).collect();
    write(&run.join("manifest.txt"), &manifest);
    write(&run.join("table.txt"), "a table\n");
    write(&run.join("plot.svg"), "<svg/>");
    write(&run.join("model.safetensors"), "weights");
    let mut csv = String::from("series,method,setting,seed,step,metric,value\n");
    for step in 0..1000 {
        csv.push_str(&format!("lift/seed0,lift,,0,{step},loss,1e0\n"));
    }
    write(&run.join("metrics.csv"), &csv);
    let evidence = vec![Evidence {
        claim: Claim::Lift,
        setting: "8 Gaussians".into(),
        metric: "test NLL".into(),
        better: Better::Lower,
        method: ("lift".into(), vec![3.9, 3.95, 3.85]),
        baseline: ("PGD".into(), vec![4.1, 4.2, 4.15]),
        paired: true,
        idle: None,
    }];
    write(
        &run.join("evidence.txt"),
        &evidence_file::to_text(&evidence).unwrap(),
    );
    run
}

#[test]
fn keep_makes_entries_that_report_reads() {
    let dir = std::env::temp_dir().join(format!("results-keep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let root = dir.join("results");
    let run = fake_run(&dir, "lift-flow-2d", &[]);
    let entry = keep::keep(&run, &root, None).unwrap();
    assert_eq!(entry, root.join("lift-flow-2d").join("full"));
    assert!(!entry.join("model.safetensors").exists());
    let csv = std::fs::read_to_string(entry.join("metrics.csv")).unwrap();
    assert!(csv.lines().count() <= keep::POINTS_PER_CURVE + 1);
    assert!(std::fs::read_to_string(entry.join(results::KEPT))
        .unwrap()
        .contains("thinned"));
    // Never overwritten; kept again under another name.
    let err = keep::keep(&run, &root, None).unwrap_err();
    assert!(err.to_string().contains("never overwritten"), "{err}");
    assert!(
        matches!(
            err,
            models::error::Error::Refused {
                command: "keep",
                ..
            }
        ),
        "{err:?}"
    );
    let err = keep::keep(&run, &root, Some("../up")).unwrap_err();
    assert!(err.is_usage(), "{err:?}");
    keep::keep(&run, &root, Some("full-again")).unwrap();
    // The report recomputes the verdict: the lift is lower on every paired seed.
    let text = claims::render(&claims::report(&root).unwrap());
    let lift = text
        .lines()
        .find(|l| l.starts_with("| lift (ICNN)"))
        .unwrap();
    assert!(lift.contains("| holds "), "{lift}");
    assert!(
        lift.contains("lift-flow-2d/full, lift-flow-2d/full-again"),
        "{lift}"
    );
    // results/README.md names both entries with their commands.
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert_eq!(readme, index::render(&results::entries(&root).unwrap()));
    assert!(readme.contains("## lift-flow-2d/full-again") && readme.contains("--seeds 3"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn runs_that_cannot_back_a_claim_are_refused() {
    let dir = std::env::temp_dir().join(format!("results-refuse-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let root = dir.join("results");
    for (change, why) in [
        (("tree", "dirty"), "dirty tree"),
        (("outcome", "failed: out of memory"), "did not finish"),
        (("shard", "1/3"), "not a whole run"),
        (
            (
                "merged from",
                "3 shards, each completed, all built from abc (dirty tree)",
            ),
            "merge of shards",
        ),
    ] {
        let run = fake_run(&dir, "lift-flow-2d", &[change]);
        let err = keep::keep(&run, &root, None).unwrap_err().to_string();
        assert!(err.contains(why), "{change:?}: {err}");
        std::fs::remove_dir_all(&run).unwrap();
    }
    assert!(!root.join("lift-flow-2d").join("full").exists());
    // An entry moved under another experiment, or made by hand, is refused by the
    // report, which names it.
    let run = fake_run(&dir, "lift-flow-2d", &[]);
    let entry = keep::keep(&run, &root, None).unwrap();
    let moved = root.join("lift-ebm-1d").join("full");
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(&entry, &moved).unwrap();
    let err = claims::report(&root).unwrap_err().to_string();
    assert!(err.contains("sits under 'lift-ebm-1d'"), "{err}");
    std::fs::remove_dir_all(root.join("lift-ebm-1d")).unwrap();
    let by_hand = root.join("lift-flow-2d").join("by-hand");
    std::fs::create_dir_all(&by_hand).unwrap();
    std::fs::copy(run.join("manifest.txt"), by_hand.join("manifest.txt")).unwrap();
    let err = claims::report(&root).unwrap_err().to_string();
    assert!(err.contains("not by hand"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The repository's `results/`.
fn repository_results() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../results")
}

/// The README's claims section is `models report`'s claims table on the committed
/// entries, character for character.
#[test]
fn the_readme_claims_section_is_the_report() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .unwrap();
    let report = claims::readme_section(&claims::report(&repository_results()).unwrap());
    assert!(
        readme == claims::with_section(&readme, &report).unwrap(),
        "README.md's claims section differs from `models report`: run `cargo run -p models -- report --readme README.md`"
    );
}

/// `results/README.md` is the index `models keep` writes from the entries.
#[test]
fn the_results_index_is_generated_from_the_entries() {
    let root = repository_results();
    let entries = results::entries(&root).unwrap();
    assert!(!entries.is_empty(), "results/ holds no entry");
    let on_disk = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert_eq!(on_disk, index::render(&entries));
}
