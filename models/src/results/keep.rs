//! `models keep RUN_DIR [--as SETTING]`: makes a `results/` entry from a finished
//! run folder — its small files copied, its curves thinned, `kept.txt` saying from
//! where — and refreshes `results/README.md`.

use super::{check_run, index, KEPT};
use crate::cli::utc_stamp;
use crate::error::{Error, Result};
use crate::provenance::ManifestFile;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// At most this many points of each curve (series × metric) are kept: evenly
/// spaced ones, always with the curve's last point.
pub const POINTS_PER_CURVE: usize = 200;

fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| tensor::Error::io(path.display().to_string(), &e).into()
}

/// The fields of one CSV line (RFC 4180 quoting, as `Metrics::to_csv` writes).
fn csv_fields(line: &str) -> Vec<String> {
    let (mut fields, mut field, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    fields.push(field);
    fields
}

/// `metrics.csv` with each curve (series × metric) thinned to at most
/// [`POINTS_PER_CURVE`] points: every k-th point and the last, k the smallest
/// stride that fits. Returns the text and a line saying what was done.
pub fn thin_metrics(csv: &str) -> (String, String) {
    let mut lines = csv.lines();
    let header = lines.next().unwrap_or_default();
    let body: Vec<&str> = lines.collect();
    let curve = |line: &str| {
        let f = csv_fields(line);
        (f.first().cloned(), f.get(5).cloned())
    };
    let mut counts: HashMap<_, usize> = HashMap::new();
    for l in &body {
        *counts.entry(curve(l)).or_default() += 1;
    }
    let mut seen: HashMap<_, usize> = HashMap::new();
    let mut out = format!("{header}\n");
    let mut kept = 0;
    for l in &body {
        let key = curve(l);
        let n = counts[&key];
        let i = seen.entry(key).or_default();
        // Multiples of the stride (at most P − 1 of them) and the last point.
        let stride = if n <= POINTS_PER_CURVE {
            1
        } else {
            (n - 1).div_ceil(POINTS_PER_CURVE - 2)
        };
        if *i % stride == 0 || *i == n - 1 {
            out.push_str(l);
            out.push('\n');
            kept += 1;
        }
        *i += 1;
    }
    let note = if kept == body.len() {
        format!(
            "all {} points (no curve has more than {POINTS_PER_CURVE})",
            body.len()
        )
    } else {
        format!(
            "{kept} of {} points: each curve (series × metric) thinned to at most {POINTS_PER_CURVE} evenly spaced points, its last always kept",
            body.len()
        )
    };
    (out, note)
}

/// A setting name: letters, digits, `-`, `_` and `.`, not starting with a dot.
fn check_setting(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(Error::usage(format!(
            "keep: --as '{name}': a setting name is letters, digits, '-', '_' and '.'"
        )))
    }
}

/// Keeps the finished run in `run` as `root/<experiment>/<setting>` (setting:
/// `setting`, else the run's quick/full), refusing a run that `check_run` refuses
/// and an entry that exists; the entry appears whole or not at all. Returns its
/// folder.
pub fn keep(run: &Path, root: &Path, setting: Option<&str>) -> Result<PathBuf> {
    let manifest = ManifestFile::read(run)?;
    check_run(&manifest, None)?;
    let experiment = manifest.get("experiment")?.to_string();
    let setting = match setting {
        Some(s) => s.to_string(),
        None => manifest.get("setting")?.to_string(),
    };
    check_setting(&setting)?;
    let parent = root.join(&experiment);
    let dest = parent.join(&setting);
    if dest.exists() {
        return Err(Error::refused("keep", format!(
                "{} exists: an entry is never overwritten (remove it with git, or keep this run under another --as)",
                dest.display()
            ),
        ));
    }
    std::fs::create_dir_all(&parent).map_err(io(&parent))?;
    let staging = parent.join(format!(".{setting}.keeping"));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(io(&staging))?;
    }
    std::fs::create_dir(&staging).map_err(io(&staging))?;
    let mut names: Vec<String> = std::fs::read_dir(run)
        .map_err(io(run))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            matches!(n.as_str(), "manifest.txt" | "table.txt" | "evidence.txt")
                || n.ends_with(".svg")
        })
        .collect();
    names.sort();
    if !names.iter().any(|n| n == "table.txt") {
        return Err(Error::refused(
            "keep",
            format!("{} has no table.txt", run.display()),
        ));
    }
    for n in &names {
        let (from, to) = (run.join(n), staging.join(n));
        std::fs::copy(&from, &to).map_err(io(&from))?;
    }
    let metrics = run.join("metrics.csv");
    let metrics_note = match std::fs::read_to_string(&metrics) {
        Ok(csv) => {
            let (thin, note) = thin_metrics(&csv);
            let to = staging.join("metrics.csv");
            std::fs::write(&to, thin).map_err(io(&to))?;
            note
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "none (the run wrote none)".into(),
        Err(e) => return Err(tensor::Error::io(metrics.display().to_string(), &e).into()),
    };
    let kept = format!(
        "kept from: {}\nkept at (UTC): {}\nfiles: {}\nmetrics.csv: {metrics_note}\nleft out: the model weights and the shards' cells, which stay in the run folder\n",
        run.display(),
        utc_stamp(),
        names.join(", ")
    );
    let to = staging.join(KEPT);
    std::fs::write(&to, kept).map_err(io(&to))?;
    std::fs::rename(&staging, &dest).map_err(io(&dest))?;
    index::write(root)?;
    Ok(dest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_csv_fields_split_right() {
        assert_eq!(
            csv_fields("\"a, b\",x,\"say \"\"hi\"\"\",3"),
            ["a, b", "x", "say \"hi\"", "3"]
        );
    }

    /// A long curve keeps at most the bound, evenly spaced, with its first and last
    /// points; short curves and other metrics are untouched.
    #[test]
    fn long_curves_are_thinned_short_ones_kept() {
        let mut csv = String::from("series,method,setting,seed,step,metric,value\n");
        for step in 0..1001 {
            csv.push_str(&format!("\"a, b/seed0\",a,b,0,{step},loss,{step}e0\n"));
            if step < 10 {
                csv.push_str(&format!("a/seed0,a,,0,{step},acc,1e0\n"));
            }
        }
        let (thin, note) = thin_metrics(&csv);
        let loss: Vec<usize> = thin
            .lines()
            .skip(1)
            .filter(|l| l.contains("loss"))
            .map(|l| csv_fields(l)[4].parse().unwrap())
            .collect();
        assert!(loss.len() <= POINTS_PER_CURVE, "{}", loss.len());
        assert!(loss.len() >= POINTS_PER_CURVE / 2);
        assert_eq!((loss[0], *loss.last().unwrap()), (0, 1000));
        let gaps: Vec<usize> = loss.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|&g| g <= 6), "{gaps:?}");
        assert_eq!(thin.lines().filter(|l| l.contains(",acc,")).count(), 10);
        assert!(note.contains("thinned"));
        let (same, note) =
            thin_metrics("series,method,setting,seed,step,metric,value\nx,x,,,1,m,1e0\n");
        assert_eq!(same.lines().count(), 2);
        assert!(note.starts_with("all 1"));
    }
}
