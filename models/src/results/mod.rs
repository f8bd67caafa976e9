//! The committed evidence: `results/<experiment>/<setting>/`, one folder per
//! full-setting run that backs a claim, kept from a finished run folder by
//! `models keep` (never written by hand), and read back by `models report`.
//!
//! An entry holds what its run folder held that is small — `manifest.txt`,
//! `table.txt`, `evidence.txt`, the SVG figures and `metrics.csv` (thinned to at
//! most [`keep::POINTS_PER_CURVE`] points per curve) — plus `kept.txt`, which says
//! where it was kept from and how the metrics were thinned.

pub mod claims;
pub mod index;
pub mod keep;

use crate::error::{Error, Result};
use crate::provenance::ManifestFile;
use crate::report::evidence::Evidence;
use crate::report::{evidence_file, subfolders};
use std::path::{Path, PathBuf};

/// The file `models keep` writes into every entry.
pub const KEPT: &str = "kept.txt";

/// One entry of `results/`, read and checked.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The experiment (the entry's parent folder).
    pub experiment: String,
    /// The setting (the entry's folder).
    pub setting: String,
    /// The entry's folder.
    pub path: PathBuf,
    /// Its run's manifest.
    pub manifest: ManifestFile,
    /// The comparisons its run made (none when it has no `evidence.txt`).
    pub evidence: Vec<Evidence>,
}

impl Entry {
    /// `experiment/setting`, as the claims table names the entry.
    pub fn name(&self) -> String {
        format!("{}/{}", self.experiment, self.setting)
    }

    /// Reads the entry in `dir` (`results/<experiment>/<setting>`), refusing one
    /// whose manifest is missing or does not describe a finished, whole run of that
    /// experiment built from a clean tree, or that `models keep` did not make.
    pub fn read(dir: &Path) -> Result<Entry> {
        let name = |p: Option<&std::ffi::OsStr>| p.map(|s| s.to_string_lossy().into_owned());
        let (Some(setting), Some(experiment)) = (
            name(dir.file_name()),
            name(dir.parent().and_then(Path::file_name)),
        ) else {
            return Err(Error::refused(
                "report",
                format!("{} is not results/<experiment>/<setting>", dir.display()),
            ));
        };
        let manifest = ManifestFile::read(dir)?;
        check_run(&manifest, Some(&experiment))?;
        if !dir.join(KEPT).is_file() {
            return Err(Error::refused(
                "report",
                format!(
                    "{} has no {KEPT}: entries are made by `models keep RUN_DIR`, not by hand",
                    dir.display()
                ),
            ));
        }
        let path = dir.join("evidence.txt");
        let evidence = match std::fs::read_to_string(&path) {
            Ok(text) => evidence_file::parse(&text, &path.display().to_string())?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(tensor::Error::io(path.display().to_string(), &e).into()),
        };
        Ok(Entry {
            experiment,
            setting,
            path: dir.to_path_buf(),
            manifest,
            evidence,
        })
    }
}

/// Checks that `manifest` is a finished whole run (not a shard; a merge only of
/// finished shards) built from a clean tree, of `experiment` when given.
pub fn check_run(manifest: &ManifestFile, experiment: Option<&str>) -> Result<()> {
    let origin = manifest.path.display();
    let refuse = |why: String| Err(Error::refused("results", format!("{origin}: {why}")));
    let ran = manifest.get("experiment")?;
    if let Some(expected) = experiment.filter(|e| *e != ran) {
        return refuse(format!(
            "the run is of '{ran}', but the entry sits under '{expected}'"
        ));
    }
    let outcome = manifest.get("outcome")?;
    if outcome != "completed" {
        return refuse(format!("the run did not finish (outcome: {outcome})"));
    }
    let shard = manifest.get("shard")?;
    if shard != "none" {
        return refuse(format!(
            "this is shard {shard} of a sweep, not a whole run: `models merge` the sweep's folder and keep the merge"
        ));
    }
    let tree = manifest.get("tree")?;
    if tree != "clean" {
        return refuse(format!(
            "built from a {tree} tree, so no commit says what code ran"
        ));
    }
    if let Ok(merged) = manifest.get("merged from") {
        if !merged.contains("each completed") || !merged.ends_with("(clean tree)") {
            return refuse(format!(
                "a merge of shards that were not all finished runs from a clean tree ({merged})"
            ));
        }
    }
    Ok(())
}

/// Every entry under `root` (`root/<experiment>/<setting>`), in name order; an
/// error names the first entry that fails its checks.
pub fn entries(root: &Path) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    for experiment in subfolders(root)? {
        for setting in subfolders(&experiment)? {
            out.push(Entry::read(&setting)?);
        }
    }
    Ok(out)
}

/// The repository's `results/`: `./results` when the command runs where one is,
/// else the one beside this crate's sources (a checkout's).
pub fn default_root() -> PathBuf {
    let here = PathBuf::from("results");
    if here.is_dir() {
        return here;
    }
    let beside = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    beside.canonicalize().unwrap_or(beside)
}
