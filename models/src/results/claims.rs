//! `models report [DIR]`: every comparison the committed entries make, its verdict
//! recomputed by the evidence rule from the values over seeds, and one line per
//! claim — the README's claims section holds the claim lines, `results/README.md`
//! every comparison.

use super::{entries, Entry};
use crate::error::{Error, Result};
use crate::report::evidence::{
    comparison_row, tally, Claim, Tally, COMPARISON_HEADERS, OVERALL_RULE, RULE,
};
use crate::report::Table;
use std::path::Path;

/// Each claim's tally over every entry's comparisons.
pub fn tallies(entries: &[Entry]) -> Vec<Tally> {
    tally(entries.iter().flat_map(|e| &e.evidence))
}

/// The report's tables for `entries`: the claims, every comparison with the entry
/// it comes from, and the entries.
pub fn tables(entries: &[Entry]) -> Vec<Table> {
    let mut claims = Table::new(
        &format!("claims — verdicts from the committed runs in results/: {OVERALL_RULE}"),
        &[
            "method",
            "comparisons",
            "hold",
            "do not hold",
            "cannot tell",
            "verdict",
            "entries",
        ],
    );
    for t in tallies(entries) {
        let from: Vec<String> = entries
            .iter()
            .filter(|e| e.evidence.iter().any(|v| v.claim == t.claim))
            .map(Entry::name)
            .collect();
        claims.row(vec![
            t.claim.method().into(),
            t.comparisons.to_string(),
            t.hold.to_string(),
            t.fail.to_string(),
            (t.comparisons - t.hold - t.fail).to_string(),
            t.verdict.into(),
            if from.is_empty() {
                "—".into()
            } else {
                from.join(", ")
            },
        ]);
    }
    let mut headers = vec!["entry"];
    headers.extend(COMPARISON_HEADERS);
    headers.push("seeds");
    let mut rows = Table::new(
        &format!("claims — every comparison in results/; rule: {RULE}"),
        &headers,
    );
    for claim in Claim::ALL {
        for e in entries {
            for v in e.evidence.iter().filter(|v| v.claim == claim) {
                let mut row = vec![e.name()];
                row.extend(comparison_row(v));
                row.push(format!(
                    "{}{}",
                    v.method.1.len().min(v.baseline.1.len()),
                    if v.paired { ", paired" } else { "" }
                ));
                rows.row(row);
            }
        }
    }
    let mut list = Table::new(
        "claims — the entries (results/README.md has their commands)",
        &["entry", "comparisons", "commit", "wall time", "machine"],
    );
    for e in entries {
        let get = |k: &str| e.manifest.get(k).unwrap_or("—").to_string();
        list.row(vec![
            e.name(),
            e.evidence.len().to_string(),
            get("commit").chars().take(12).collect(),
            get("wall time"),
            get("machine"),
        ]);
    }
    vec![claims, rows, list]
}

/// Reads every entry under `root` (refusing any that fails its checks) and
/// returns the report's tables.
pub fn report(root: &Path) -> Result<Vec<Table>> {
    Ok(tables(&entries(root)?))
}

/// The report as `models report` prints it and the README's claims section holds
/// it: the tables, one blank line apart.
pub fn render(tables: &[Table]) -> String {
    tables
        .iter()
        .map(Table::render)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The README's claims section: the claims table of `tables` (the first of
/// [`tables`]) and where the comparisons behind it are listed — the
/// per-comparison table is long and goes to `results/README.md` instead.
pub fn readme_section(tables: &[Table]) -> String {
    format!(
        "{}\nevery comparison behind these verdicts, with its values and t: results/README.md\n",
        render(&tables[..1.min(tables.len())])
    )
}

const BEGIN: &str = "<!-- claims:begin -->\n```text\n";
const END: &str = "```\n<!-- claims:end -->";

/// `readme` with its claims section (between `<!-- claims:begin -->` and
/// `<!-- claims:end -->`, in a text block) replaced by `report`.
pub fn with_section(readme: &str, report: &str) -> Result<String> {
    let missing = || {
        Error::refused("report", "the README has no claims section (<!-- claims:begin --> and <!-- claims:end --> around a ```text block)",
        )
    };
    let start = readme.find(BEGIN).ok_or_else(missing)? + BEGIN.len();
    let stop = readme[start..].find(END).ok_or_else(missing)? + start;
    Ok(format!("{}{report}{}", &readme[..start], &readme[stop..]))
}
