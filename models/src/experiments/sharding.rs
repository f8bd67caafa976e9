//! The commands around sharded sweeps: the end of a shard (its `cells.txt`),
//! `models merge` (the whole run's tables from every shard) and `models resume`
//! (a killed shard finishes from its journal).

use super::{registry, run_experiment, Experiment};
use crate::cli::RunConfig;
use crate::error::{Error, Result};
use crate::provenance::ManifestFile;
use crate::report::{subfolders, Table};
use crate::sweep::{self, journal, Journal, ShardFile, Sweep};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// After a sharded run: writes the shard's cells to `cells.txt`, drops its journal,
/// and returns no tables (its tables hold placeholders). After a merge: checks that
/// every recorded cell was used.
pub(super) fn finish_sweep(
    e: &Experiment,
    cfg: &RunConfig,
    tables: Vec<Table>,
) -> Result<Vec<Table>> {
    let (Some(sweep), Some(dir)) = (&cfg.sweep, cfg.prepared_dir()) else {
        return Ok(tables);
    };
    let Some(shard) = cfg.shard.filter(|_| sweep.is_shard()) else {
        sweep.check_replayed()?;
        return Ok(tables);
    };
    let (total, cells) = sweep.finish();
    let file = ShardFile {
        experiment: e.name.to_string(),
        options: cfg.options.clone(),
        shard,
        total,
        cells,
    };
    file.write(&dir.path)?;
    let journal = dir.path.join(journal::FILE);
    std::fs::remove_file(&journal)
        .map_err(|err| tensor::Error::io(journal.display().to_string(), &err))?;
    eprintln!(
        "{}: shard {}/{} ran {} of the {total} cells; `models merge` its folder with the other shards' for the tables: {}",
        e.name,
        shard.index,
        shard.count,
        file.cells.len(),
        dir.path.display()
    );
    Ok(Vec::new())
}

/// Whether `dir` is a shard folder (finished, or with a journal).
fn is_shard_folder(dir: &Path) -> bool {
    dir.join("cells.txt").is_file() || dir.join(journal::FILE).is_file()
}

/// The shard folders `paths` name: each path is a shard folder, or a sweep's folder
/// (`--out` of its shards, or its `<experiment>` folder) searched two levels down.
fn shard_folders(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for path in paths {
        if is_shard_folder(path) {
            found.push(path.clone());
            continue;
        }
        let mut here = Vec::new();
        for child in subfolders(path)? {
            if is_shard_folder(&child) {
                here.push(child);
            } else {
                here.extend(
                    subfolders(&child)?
                        .into_iter()
                        .filter(|g| is_shard_folder(g)),
                );
            }
        }
        if here.is_empty() {
            return Err(Error::refused("merge", format!(
                    "{} is neither a shard folder nor a sweep's folder: no cells.txt in it or two levels below",
                    path.display()
                ),
            ));
        }
        found.extend(here);
    }
    Ok(found)
}

/// Checks the shards' manifests (each completed, all from one build) and returns
/// the lines the merged run's manifest records about them.
fn shard_provenance(dirs: &[PathBuf]) -> Result<Vec<(String, String)>> {
    let mut builds = Vec::new();
    let mut notes = Vec::new();
    for dir in dirs {
        let m = ManifestFile::read(dir)?;
        let outcome = m.get("outcome")?;
        if !outcome.starts_with("completed") {
            return Err(Error::refused(
                "merge",
                format!("{}: the shard's manifest says '{outcome}'", dir.display()),
            ));
        }
        let build = format!("{} ({} tree)", m.get("commit")?, m.get("tree")?);
        let shard = m.get("shard")?;
        for (what, value) in [
            ("folder", dir.display().to_string()),
            ("command line", m.get("command line")?.to_string()),
            ("wall time", m.get("wall time")?.to_string()),
            (
                "machine",
                m.get("machine").unwrap_or("not recorded").to_string(),
            ),
        ] {
            notes.push((format!("shard {shard} {what}"), value));
        }
        builds.push((dir, build));
    }
    if let Some((dir, build)) = builds.iter().find(|(_, b)| *b != builds[0].1) {
        return Err(Error::refused("merge", format!(
                "{} was built from {build} but {} from {}: shards of one sweep must run the same code",
                dir.display(),
                builds[0].0.display(),
                builds[0].1
            ),
        ));
    }
    notes.sort();
    notes.insert(
        0,
        (
            "merged from".into(),
            format!(
                "{} shards, each completed, all built from {}",
                dirs.len(),
                builds.first().map_or("", |b| b.1.as_str())
            ),
        ),
    );
    Ok(notes)
}

/// The run options a cells file or journal recorded, parsed as the command line is,
/// refusing any a shard never records (an edited file): `--out`, `--threads`,
/// `--quiet`, `--shard` and the trace options.
fn recorded_options(options: &[String], what: &'static str) -> Result<RunConfig> {
    for o in options {
        let key = o
            .strip_prefix("--")
            .map(|k| k.split('=').next().unwrap_or(k));
        if matches!(
            key,
            None | Some("out" | "threads" | "quiet" | "shard" | "trace" | "trace-values-step")
        ) {
            return Err(Error::refused(
                what,
                format!(
                    "the recorded options hold '{o}', which no shard records: the file was edited"
                ),
            ));
        }
    }
    RunConfig::parse(options)
}

fn find(name: &str, what: &'static str) -> Result<Experiment> {
    registry()
        .into_iter()
        .find(|e| e.name == name)
        .ok_or_else(|| {
            Error::refused(
                what,
                format!("the shards ran '{name}', which this build does not have"),
            )
        })
}

/// `models merge DIR...`: checks that the folders (shard folders, or a sweep's
/// folder holding them) are every shard of one sweep, each finished and all run by
/// one build, then runs the experiment with every cell replayed from them, writing
/// the tables, `metrics.csv`, `plot.svg` and `evidence.txt` an unsharded run would
/// write to a new `-merged` folder under `--out` (default `runs`), whose manifest
/// names the shards. Returns the tables.
pub fn merge(paths: &[PathBuf], out: &Path) -> Result<Vec<Table>> {
    if paths.is_empty() {
        return Err(Error::refused(
            "merge",
            "usage: models merge SHARD_DIR... (or the sweep's folder)",
        ));
    }
    let dirs = shard_folders(paths)?;
    let files = dirs
        .iter()
        .map(|d| Ok((d.display().to_string(), ShardFile::read(d)?)))
        .collect::<Result<Vec<_>>>()?;
    let (name, options, cells) = sweep::gather(&files)?;
    let notes = shard_provenance(&dirs)?;
    let e = find(&name, "merge")?;
    let mut cfg = recorded_options(&options, "merge")?;
    cfg.out = out.to_path_buf();
    cfg.quiet = true;
    cfg.notes = notes;
    cfg.sweep = Some(Arc::new(Sweep::replay(cells)));
    run_experiment(&e, &cfg)
}

/// `models resume DIR`: finishes the shard in DIR from its journal (same
/// experiment, options and slice; the cells it finished are kept, the rest are
/// computed), in the same folder. Refuses a journal written by another build.
pub fn resume(dir: &Path) -> Result<()> {
    let journal = Journal::read(dir)?;
    let here = journal::this_build();
    if journal.build != here {
        return Err(Error::refused("resume", format!(
                "{} was run by {} but this is {here}: resume it with that build, or run the shard anew",
                dir.display(),
                journal.build
            ),
        ));
    }
    if journal.build.contains("dirty") {
        eprintln!("resume: warning: the shard was built from a dirty tree, so this build cannot check that the code is the same");
    }
    let e = find(&journal.experiment, "resume")?;
    let mut cfg = recorded_options(&journal.options, "resume")?;
    cfg.shard = Some(journal.shard);
    cfg.resume_in = Some(dir.to_path_buf());
    cfg.notes = vec![(
        "resumed".into(),
        format!(
            "{} cells from the journal of an earlier attempt (its time is not in the wall time)",
            journal.cells.len()
        ),
    )];
    cfg.sweep = Some(Arc::new(Sweep::resumed(journal.shard, journal.cells)));
    run_experiment(&e, &cfg).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cells file's options are parsed as the command line is, and the options a
    /// shard never records (an edited file) are refused.
    #[test]
    fn edited_recorded_options_are_refused() {
        let opts = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(recorded_options(&opts(&["--quick", "--epochs=2"]), "merge").is_ok());
        for bad in [
            &["--trace=/tmp/x.csv"][..],
            &["--threads=4"],
            &["--out=elsewhere"],
            &["epochs=2"],
            &["--epochs=3", "--epochs=2"],
        ] {
            assert!(recorded_options(&opts(bad), "merge").is_err(), "{bad:?}");
        }
    }
}
