//! `results/README.md`: what each entry is, the commands that reproduce it and
//! every comparison the entries make, generated from the entries' manifests (by `models keep`, and checked by a test
//! against the entries, so it cannot drift from them).

use super::{claims, entries, Entry};
use crate::error::Result;
use std::path::Path;

/// The manifest lines of a merge's shards, in shard order: (shard, command line,
/// wall time, machine).
fn shards(e: &Entry) -> Vec<(String, String, String, String)> {
    let lines = &e.manifest.lines;
    lines
        .iter()
        .filter_map(|(k, v)| {
            let shard = k.strip_prefix("shard ")?.strip_suffix(" command line")?;
            let get = |what: &str| {
                lines
                    .iter()
                    .find(|(k, _)| *k == format!("shard {shard} {what}"))
                    .map_or("not recorded".to_string(), |(_, v)| v.clone())
            };
            Some((
                shard.to_string(),
                v.clone(),
                get("wall time"),
                get("machine"),
            ))
        })
        .collect()
}

/// The text of `results/README.md` for `entries`.
pub fn render(entries: &[Entry]) -> String {
    let mut s = String::from(
        "# results/\n\nThe full-setting runs that back the claims, one folder per experiment and setting. \
Generated: every entry was made by `models keep RUN_DIR --as SETTING` from a finished run \
(whole, or merged from all its shards) built from a clean tree, and this file by the same \
command; a test checks both against the entries, so nothing here is edited by hand.\n\n\
Each entry holds the run's `manifest.txt` (command, options, commit, machine, wall time), \
`table.txt`, `evidence.txt` (every comparison with its values over seeds), the SVG figures, \
`metrics.csv` (thinned: `kept.txt` says how) and `kept.txt`. The model weights are not kept.\n\n\
`cargo run --release -p models -- report` recomputes every verdict from these files and \
prints the claims table the top-level README shows. The command lines are as recorded: \
the program is `target/release/models` (`cargo build --release -p models`) built at the \
entry's commit; the shard runs of one sweep may run in any order and on any machines.\n",
    );
    for e in entries {
        let get = |k: &str| e.manifest.get(k).unwrap_or("not recorded").to_string();
        s.push_str(&format!("\n## {}\n\n", e.name()));
        let shards = shards(e);
        if shards.is_empty() {
            s.push_str(&format!(
                "- command: `{}`\n- wall time: {} at {} threads, on {}\n",
                get("command line"),
                get("wall time"),
                get("threads"),
                get("machine")
            ));
        } else {
            s.push_str(&format!("- {} shards, then merged:\n", shards.len()));
            for (shard, command, wall, machine) in &shards {
                s.push_str(&format!(
                    "  - shard {shard}: `{command}` — {wall}, on {machine}\n"
                ));
            }
            s.push_str(&format!("  - merge: `{}`\n", get("command line")));
        }
        s.push_str(&format!(
            "- then: `models keep <its run folder> --as {}`\n- built from: commit {} ({} tree), {}, kernels {}; started {} UTC\n- comparisons that test a claim: {}\n",
            e.setting,
            get("commit"),
            get("tree"),
            get("rustc"),
            get("kernel path"),
            get("start (UTC)"),
            e.evidence.len()
        ));
    }
    let report = claims::tables(entries);
    s.push_str(&format!(
        "\n## Every comparison\n\n`models report` recomputes these from the entries' `evidence.txt`.\n\n```text\n{}```\n",
        claims::render(&report[1..])
    ));
    s
}

/// Rewrites `root/README.md` from the entries under `root`.
pub fn write(root: &Path) -> Result<()> {
    let text = render(&entries(root)?);
    let path = root.join("README.md");
    Ok(std::fs::write(&path, text)
        .map_err(|e| tensor::Error::io(path.display().to_string(), &e))?)
}
