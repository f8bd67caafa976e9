//! `cells.txt`: the cells one finished shard computed, which `models merge` replays.

use super::{Fields, Recorded, Shard};
use crate::error::{Error, Result};
use crate::report::Row;
use std::path::Path;

const MAGIC: &str = "models cells v3";

/// The first line of the format before shared cells, refused with its own reason.
const MAGIC_V2: &str = "models cells v2";

/// What a shard folder's `cells.txt` holds.
#[derive(Clone, Debug)]
pub struct ShardFile {
    /// The experiment.
    pub experiment: String,
    /// The options it ran with, without `--shard`, `--out`, `--threads`, `--quiet`
    /// and the trace options (which change no result).
    pub options: Vec<String>,
    /// Which slice.
    pub shard: Shard,
    /// Cells in the whole grid.
    pub total: usize,
    /// This slice's cells.
    pub cells: Vec<Recorded>,
}

fn bits(v: f64) -> String {
    format!("{:016x}", v.to_bits())
}

impl ShardFile {
    /// The text of `cells.txt`: a header, then per cell its key, its fields and its
    /// metric points, tab-separated, numbers as the hex of their bits.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "{MAGIC}\nexperiment\t{}\noptions\t{}\nshard\t{}/{}\ntotal\t{}\n",
            self.experiment,
            self.options.join("\t"),
            self.shard.index,
            self.shard.count,
            self.total
        );
        for c in &self.cells {
            write_cell(&mut s, c);
        }
        let sum = checksum(&s);
        s.push_str(&format!("checksum\t{sum:016x}\n"));
        s
    }

    /// Writes `DIR/cells.txt` through a temporary file renamed over it, so a kill
    /// during the write never leaves half a file.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let (path, tmp) = (dir.join("cells.txt"), dir.join("cells.txt.tmp"));
        std::fs::write(&tmp, self.to_text())
            .map_err(|e| tensor::Error::io(tmp.display().to_string(), &e))?;
        Ok(std::fs::rename(&tmp, &path)
            .map_err(|e| tensor::Error::io(path.display().to_string(), &e))?)
    }

    /// Parses `cells.txt` (`origin` names it in errors).
    pub fn parse(text: &str, origin: &str) -> Result<ShardFile> {
        let bad = |line: usize, why: &str| {
            Error::refused("merge", format!("{origin}, line {}: {why}", line + 1))
        };
        let num = |line: usize, t: &str| -> Result<usize> {
            t.parse()
                .map_err(|_| bad(line, &format!("'{t}' is not a count")))
        };
        match text.lines().next() {
            Some(MAGIC) => {}
            Some(MAGIC_V2) => {
                return Err(bad(
                    0,
                    "a cells file of an older build (v2): merge it with the build that ran it",
                ));
            }
            _ => return Err(bad(0, &format!("not a cells file (no '{MAGIC}' line)"))),
        }
        let body_end = text
            .rfind("checksum\t")
            .filter(|&at| at == 0 || text[..at].ends_with('\n'));
        let Some(body_end) = body_end else {
            return Err(bad(
                text.lines().count(),
                "no checksum line: the file was cut short",
            ));
        };
        let recorded = text[body_end..]
            .trim_end()
            .strip_prefix("checksum\t")
            .and_then(|h| u64::from_str_radix(h, 16).ok());
        if recorded != Some(checksum(&text[..body_end])) {
            return Err(Error::refused("merge", format!("{origin}: its checksum does not match its contents (the file was damaged or edited)"),
            ));
        }
        let text = &text[..body_end];
        let mut lines = text.lines().enumerate();
        lines.next();
        let mut header = |name: &str| header_line(&mut lines, name, origin);
        let experiment = header("experiment")?;
        let options_line = header("options")?;
        let shard = Shard::parse(&header("shard")?)
            .map_err(|e| Error::refused("merge", format!("{origin}: {e}")))?;
        let total = num(4, &header("total")?)?;
        let options = options_line
            .split('\t')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        let rest: Vec<(usize, &str)> = lines.collect();
        let cells = read_cells(&rest, origin)?;
        if let Some(c) = cells
            .iter()
            .find(|c| c.position >= total || !(c.shared || shard.owns(c.position)))
        {
            return Err(Error::refused(
                "merge",
                format!(
                    "{origin}: cell {} is not one of shard {}/{}'s",
                    c.position, shard.index, shard.count
                ),
            ));
        }
        // Every shard holds every shared cell, so the positions left to own are
        // the others.
        let shared: std::collections::BTreeSet<usize> = cells
            .iter()
            .filter(|c| c.shared)
            .map(|c| c.position)
            .collect();
        let expected = (0..total)
            .filter(|p| shard.owns(*p) && !shared.contains(p))
            .count();
        let owned = cells.len() - shared.len();
        if owned != expected {
            return Err(Error::refused("merge", format!(
                    "{origin}: shard {}/{} should hold {expected} of the {total} cells but holds {} (an unfinished shard? `models resume` its folder)",
                    shard.index,
                    shard.count,
                    owned
                ),
            ));
        }
        Ok(ShardFile {
            experiment,
            options,
            shard,
            total,
            cells,
        })
    }

    /// Reads `DIR/cells.txt`; a folder holding only a journal is a shard that did
    /// not finish, and the error says how to resume it.
    pub fn read(dir: &Path) -> Result<ShardFile> {
        let path = dir.join("cells.txt");
        if !path.exists() && dir.join(super::journal::FILE).exists() {
            return Err(Error::refused("merge", format!(
                    "{} is a shard that did not finish (it holds {} but no cells.txt): `models resume {}` first",
                    dir.display(),
                    super::journal::FILE,
                    dir.display()
                ),
            ));
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| tensor::Error::io(path.display().to_string(), &e))?;
        ShardFile::parse(&text, &path.display().to_string())
    }
}

/// Checks that `files` are the n shards of one run, each once, and gathers their
/// cells, each shared cell once (every shard's copy must hold the same bits).
pub fn gather(files: &[(String, ShardFile)]) -> Result<(String, Vec<String>, Vec<Recorded>)> {
    let (first_name, first) = files
        .first()
        .ok_or_else(|| Error::refused("merge", "usage: models merge SHARD_DIR..."))?;
    let mut seen = vec![None::<&str>; first.shard.count];
    let mut cells = Vec::new();
    let mut shared: std::collections::BTreeMap<usize, (&str, &Recorded)> = Default::default();
    for (name, f) in files {
        let differs = |what: &str| {
            Error::refused(
                "merge",
                format!("{name} and {first_name} are not shards of one run: their {what} differ"),
            )
        };
        if f.experiment != first.experiment {
            return Err(differs("experiments"));
        }
        if f.options != first.options {
            return Err(differs("options"));
        }
        if f.shard.count != first.shard.count {
            return Err(differs("shard counts"));
        }
        if f.total != first.total {
            return Err(differs("grid sizes"));
        }
        if let Some(other) = seen[f.shard.index].replace(name) {
            return Err(Error::refused(
                "merge",
                format!(
                    "{name} and {other} are both shard {}/{}",
                    f.shard.index, f.shard.count
                ),
            ));
        }
        for c in &f.cells {
            if !c.shared {
                cells.push(c.clone());
                continue;
            }
            match shared.get(&c.position) {
                None => {
                    shared.insert(c.position, (name, c));
                    cells.push(c.clone());
                }
                Some((other, kept)) if !kept.same_as(c) => {
                    return Err(Error::refused("merge", format!(
                        "{name} and {other} computed the shared cell {} ('{}') differently: the shards did not run the same computation",
                        c.position, c.key
                    )));
                }
                Some(_) => {}
            }
        }
    }
    let missing: Vec<String> = (0..first.shard.count)
        .filter(|&i| seen[i].is_none())
        .map(|i| format!("{i}/{}", first.shard.count))
        .collect();
    if !missing.is_empty() {
        return Err(Error::refused(
            "merge",
            format!("missing shard folders for {}", missing.join(", ")),
        ));
    }
    Ok((first.experiment.clone(), first.options.clone(), cells))
}

/// Appends one cell's lines (its key, fields and metric points, numbers as the hex
/// of their bits) to `s`.
pub(super) fn write_cell(s: &mut String, c: &Recorded) {
    let fields = c.fields.pairs();
    s.push_str(&format!(
        "{}\t{}\t{}\t{}\t{}\n",
        if c.shared { "shared" } else { "cell" },
        c.position,
        c.key,
        fields.len(),
        c.rows.len()
    ));
    for (k, v) in fields {
        s.push_str(&format!("field\t{k}\t{}\n", bits(v)));
    }
    for r in &c.rows {
        s.push_str(&format!(
            "row\t{}\t{}\t{}\t{}\n",
            r.series,
            r.step,
            r.metric,
            bits(r.value)
        ));
    }
}

/// Reads cells written by [`write_cell`] from numbered lines (positions strictly
/// increasing); `origin` names the file in errors.
pub(super) fn read_cells(lines: &[(usize, &str)], origin: &str) -> Result<Vec<Recorded>> {
    let bad = |line: usize, why: &str| {
        Error::refused("merge", format!("{origin}, line {}: {why}", line + 1))
    };
    let num = |line: usize, t: &str| -> Result<usize> {
        t.parse()
            .map_err(|_| bad(line, &format!("'{t}' is not a count")))
    };
    let hex = |line: usize, t: &str| -> Result<f64> {
        u64::from_str_radix(t, 16)
            .ok()
            .filter(|_| t.len() == 16)
            .map(f64::from_bits)
            .ok_or_else(|| bad(line, &format!("'{t}' is not 16 hex digits")))
    };
    let mut cells: Vec<Recorded> = Vec::new();
    let mut fields: Vec<(String, f64)> = Vec::new();
    // The counts the open cell's line announced, and that line's number.
    let mut announced = (0, 0, 0);
    let close = |cells: &mut Vec<Recorded>,
                 fields: &mut Vec<(String, f64)>,
                 (at, n_fields, n_rows): (usize, usize, usize)|
     -> Result<()> {
        if let Some(c) = cells.last_mut() {
            if fields.len() != n_fields || c.rows.len() != n_rows {
                return Err(bad(
                    at,
                    &format!(
                        "cell {} announces {n_fields} fields and {n_rows} metric points but holds {} and {} (lines were lost)",
                        c.position,
                        fields.len(),
                        c.rows.len()
                    ),
                ));
            }
            c.fields = Fields::new(std::mem::take(fields));
        }
        Ok(())
    };
    for &(i, l) in lines {
        let parts: Vec<&str> = l.split('\t').collect();
        match parts.as_slice() {
            [tag @ ("cell" | "shared"), pos, key, n_fields, n_rows] => {
                close(&mut cells, &mut fields, announced)?;
                announced = (i, num(i, n_fields)?, num(i, n_rows)?);
                let position = num(i, pos)?;
                if cells.last().is_some_and(|c| c.position >= position) {
                    return Err(bad(i, "cells out of order"));
                }
                cells.push(Recorded {
                    position,
                    key: key.to_string(),
                    fields: Fields::default(),
                    rows: Vec::new(),
                    shared: *tag == "shared",
                });
            }
            ["field", name, v] if !cells.is_empty() => {
                if fields.iter().any(|(n, _)| n == name) {
                    return Err(bad(i, &format!("the field '{name}' is repeated")));
                }
                fields.push((name.to_string(), hex(i, v)?));
            }
            ["row", series, step, metric, v] => {
                let value = hex(i, v)?;
                let step = num(i, step)?;
                let c = cells
                    .last_mut()
                    .ok_or_else(|| bad(i, "a row before any cell"))?;
                c.rows.push(Row {
                    series: series.to_string(),
                    step,
                    metric: metric.to_string(),
                    value,
                });
            }
            _ => return Err(bad(i, "not a cell, field or row line")),
        }
    }
    close(&mut cells, &mut fields, announced)?;
    Ok(cells)
}

/// FNV-1a over the text: the checksum `cells.txt` ends with.
fn checksum(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Reads the header line `name<TAB>value` (or a bare `name`: an empty value) from
/// `lines`; `origin` names the file in errors.
pub(super) fn header_line<'a>(
    lines: &mut impl Iterator<Item = (usize, &'a str)>,
    name: &str,
    origin: &str,
) -> Result<String> {
    let bad = |line: usize, why: String| {
        Error::refused("merge", format!("{origin}, line {}: {why}", line + 1))
    };
    let (i, l) = lines
        .next()
        .ok_or_else(|| bad(0, format!("ends before its '{name}' line")))?;
    l.strip_prefix(&format!("{name}\t"))
        .or_else(|| (l == name).then_some(""))
        .map(str::to_string)
        .ok_or_else(|| bad(i, format!("expected the '{name}' line")))
}

/// `text` without its checksum line, sealed with a fresh one: what a careful
/// editor of a cells file would produce (the tests check that each record is
/// still checked).
#[cfg(test)]
pub(crate) fn reseal(text: &str) -> String {
    let body = match text.rfind("checksum\t") {
        Some(at) => &text[..at],
        None => text,
    };
    format!("{body}checksum\t{:016x}\n", checksum(body))
}
