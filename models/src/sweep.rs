//! Sharded sweeps. An experiment's grid of cells (arm × setting × seed) is walked in
//! a fixed order; `--shard i/n` runs the cells whose position is `i` modulo `n` and
//! writes their results to `cells.txt` in its run folder, and `models merge DIR...`
//! replays every shard's cells through the same experiment code, so the tables, the
//! metrics and the plot it writes are the ones an unsharded run would write.
//!
//! A cell's result goes through [`CellValue`] as named `f64`s, stored as their bit
//! patterns: the merge sees exactly the numbers the shards computed. A shard sees a
//! placeholder (every field NaN) for the cells it does not own, so it writes no
//! table of its own.

use crate::report::{Metrics, Row};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use tensor::{Error, Result};

/// `--shard i/n`: the i-th (from 0) of n slices of the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This slice, `0 ≤ index < count`.
    pub index: usize,
    /// Number of slices.
    pub count: usize,
}

impl Shard {
    /// Parses `i/n` (`0 ≤ i < n`).
    pub fn parse(text: &str) -> Result<Shard> {
        let bad = |why: &str| {
            Error::value(
                "models",
                format!("--shard expects i/n with 0 ≤ i < n (e.g. 0/4), got '{text}': {why}"),
            )
        };
        let (i, n) = text.split_once('/').ok_or_else(|| bad("no '/'"))?;
        let index: usize = i.trim().parse().map_err(|_| bad("i is not a number"))?;
        let count: usize = n.trim().parse().map_err(|_| bad("n is not a number"))?;
        if count == 0 {
            return Err(bad("n must be at least 1"));
        }
        if index >= count {
            return Err(bad("i must be below n (shards count from 0)"));
        }
        Ok(Shard { index, count })
    }

    /// Whether the cell at `position` of the grid belongs to this slice.
    pub fn owns(&self, position: usize) -> bool {
        position % self.count == self.index
    }
}

/// The named numbers of one cell's result.
#[derive(Clone, Debug, Default)]
pub struct Fields {
    values: BTreeMap<String, f64>,
    placeholder: bool,
}

impl Fields {
    /// Fields from (name, value) pairs.
    pub fn new(pairs: Vec<(String, f64)>) -> Self {
        Fields {
            values: pairs.into_iter().collect(),
            placeholder: false,
        }
    }

    /// The stand-in for a cell another shard runs: every field reads NaN.
    pub fn placeholder() -> Self {
        Fields {
            values: BTreeMap::new(),
            placeholder: true,
        }
    }

    /// Whether this is a placeholder (the cell was not run here).
    pub fn is_placeholder(&self) -> bool {
        self.placeholder
    }

    /// The field `name`; NaN in a placeholder, an error when a real cell lacks it.
    pub fn get(&self, name: &str) -> Result<f64> {
        match self.values.get(name) {
            Some(v) => Ok(*v),
            None if self.placeholder => Ok(f64::NAN),
            None => Err(Error::value(
                "merge",
                format!("a recorded cell has no field '{name}' (recorded by another version?)"),
            )),
        }
    }

    /// The fields as pairs, in name order.
    pub fn pairs(&self) -> Vec<(String, f64)> {
        self.values.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }
}

/// A cell's result, as the sweep stores it.
pub trait CellValue: Sized {
    /// The result as named numbers.
    fn to_fields(&self) -> Fields;
    /// The result back from its numbers (from a placeholder, NaNs where numbers go).
    fn from_fields(fields: &Fields) -> Result<Self>;
}

impl CellValue for Vec<(String, f64)> {
    /// Keeps the order by prefixing each name with its position.
    fn to_fields(&self) -> Fields {
        Fields::new(
            self.iter()
                .enumerate()
                .map(|(i, (k, v))| (format!("{i:03}:{k}"), *v))
                .collect(),
        )
    }

    /// A placeholder gives an empty list; callers read it through [`field`].
    fn from_fields(fields: &Fields) -> Result<Self> {
        fields
            .pairs()
            .into_iter()
            .map(|(k, v)| match k.split_once(':') {
                Some((_, name)) => Ok((name.to_string(), v)),
                None => Err(Error::value("merge", format!("malformed field name '{k}'"))),
            })
            .collect()
    }
}

/// The value called `name` in a `fit`-style result list; NaN when the list is a
/// placeholder's (empty), an error when a real list lacks it.
pub fn field(result: &[(String, f64)], name: &str) -> Result<f64> {
    if result.is_empty() {
        return Ok(f64::NAN);
    }
    result
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| *v)
        .ok_or_else(|| Error::value("models", format!("no result called '{name}'")))
}

/// One cell's record: its position and key, its result, and the metric points it
/// added.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// Position in the grid's walk.
    pub position: usize,
    /// The cell's name ("adam/seed1"); a merge checks it, so a shard from other
    /// options or another version cannot be mixed in.
    pub key: String,
    /// Its result.
    pub fields: Fields,
    /// The metric points it pushed, in order.
    pub rows: Vec<Row>,
}

enum Mode {
    Shard(Shard),
    Replay(Vec<Recorded>),
}

/// The cells of one sharded or merged run.
pub struct Sweep {
    mode: Mode,
    state: Mutex<(usize, Vec<Recorded>)>,
}

impl std::fmt::Debug for Sweep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.mode {
            Mode::Shard(_) => "Sweep::Shard",
            Mode::Replay(_) => "Sweep::Replay",
        })
    }
}

impl Sweep {
    /// A sweep that runs the cells `shard` owns and records them.
    pub fn shard(shard: Shard) -> Self {
        Sweep {
            mode: Mode::Shard(shard),
            state: Mutex::new((0, Vec::new())),
        }
    }

    /// A sweep that replays recorded cells (every position once, in order).
    pub fn replay(mut cells: Vec<Recorded>) -> Self {
        cells.sort_by_key(|c| c.position);
        Sweep {
            mode: Mode::Replay(cells),
            state: Mutex::new((0, Vec::new())),
        }
    }

    /// Whether this sweep is a shard (its tables are not the run's).
    pub fn is_shard(&self) -> bool {
        matches!(self.mode, Mode::Shard(_))
    }

    /// The next cell, called `key`: computed (when this shard owns it), replayed,
    /// or a placeholder. `compute` pushes its metric points to `metrics`.
    pub fn cell<T: CellValue>(
        &self,
        key: &str,
        metrics: &mut Metrics,
        compute: impl FnOnce(&mut Metrics) -> Result<T>,
    ) -> Result<T> {
        if key.contains(['\t', '\n']) {
            return Err(Error::value(
                "sweep",
                format!("cell key {key:?} holds a tab or newline"),
            ));
        }
        let position = {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            s.0 += 1;
            s.0 - 1
        };
        match &self.mode {
            Mode::Shard(shard) if !shard.owns(position) => T::from_fields(&Fields::placeholder()),
            Mode::Shard(_) => {
                let before = metrics.rows.len();
                let value = compute(metrics)?;
                let rec = Recorded {
                    position,
                    key: key.to_string(),
                    fields: value.to_fields(),
                    rows: metrics.rows[before..].to_vec(),
                };
                self.state
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .1
                    .push(rec);
                Ok(value)
            }
            Mode::Replay(cells) => {
                let rec = cells.get(position).ok_or_else(|| {
                    Error::value(
                        "merge",
                        format!("the experiment asks for cell {position} ('{key}') but the shards hold {} cells", cells.len()),
                    )
                })?;
                if rec.key != key {
                    return Err(Error::value(
                        "merge",
                        format!(
                            "cell {position} is '{key}' here but '{}' in the shards: they were run with other options or another version",
                            rec.key
                        ),
                    ));
                }
                metrics.rows.extend(rec.rows.iter().cloned());
                T::from_fields(&rec.fields)
            }
        }
    }

    /// Cells walked so far, and the records made (a shard's own cells).
    pub fn finish(&self) -> (usize, Vec<Recorded>) {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        (s.0, s.1.clone())
    }

    /// In a replay: every recorded cell was asked for (no shard holds cells the
    /// experiment no longer walks).
    pub fn check_replayed(&self) -> Result<()> {
        if let Mode::Replay(cells) = &self.mode {
            let walked = self.finish().0;
            if walked != cells.len() {
                return Err(Error::value(
                    "merge",
                    format!(
                        "the shards hold {} cells but the experiment walked {walked}",
                        cells.len()
                    ),
                ));
            }
        }
        Ok(())
    }
}

const MAGIC: &str = "models cells v1";

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
            s.push_str(&format!("cell\t{}\t{}\n", c.position, c.key));
            for (k, v) in c.fields.pairs() {
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
        s
    }

    /// Parses `cells.txt` (`origin` names it in errors).
    pub fn parse(text: &str, origin: &str) -> Result<ShardFile> {
        let bad = |line: usize, why: &str| {
            Error::value("merge", format!("{origin}, line {}: {why}", line + 1))
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
        let mut lines = text.lines().enumerate();
        if lines.next().map(|(_, l)| l) != Some(MAGIC) {
            return Err(bad(0, "not a cells file (no 'models cells v1' line)"));
        }
        let mut header = |name: &str| -> Result<String> {
            let (i, l) = lines
                .next()
                .ok_or_else(|| bad(0, &format!("ends before its '{name}' line")))?;
            l.strip_prefix(&format!("{name}\t"))
                .or_else(|| (l == name).then_some(""))
                .map(str::to_string)
                .ok_or_else(|| bad(i, &format!("expected the '{name}' line")))
        };
        let experiment = header("experiment")?;
        let options_line = header("options")?;
        let shard = Shard::parse(&header("shard")?)
            .map_err(|e| Error::value("merge", format!("{origin}: {e}")))?;
        let total = num(4, &header("total")?)?;
        let options = options_line
            .split('\t')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        let mut cells: Vec<Recorded> = Vec::new();
        let mut fields = Vec::new();
        let close = |cells: &mut Vec<Recorded>, fields: &mut Vec<(String, f64)>| {
            if let Some(c) = cells.last_mut() {
                c.fields = Fields::new(std::mem::take(fields));
            }
        };
        for (i, l) in lines {
            let parts: Vec<&str> = l.split('\t').collect();
            match parts.as_slice() {
                ["cell", pos, key] => {
                    close(&mut cells, &mut fields);
                    let position = num(i, pos)?;
                    if position >= total || !shard.owns(position) {
                        return Err(bad(
                            i,
                            &format!(
                                "cell {position} is not one of shard {}/{}'s",
                                shard.index, shard.count
                            ),
                        ));
                    }
                    if cells.last().is_some_and(|c| c.position >= position) {
                        return Err(bad(i, "cells out of order"));
                    }
                    cells.push(Recorded {
                        position,
                        key: key.to_string(),
                        fields: Fields::default(),
                        rows: Vec::new(),
                    });
                }
                ["field", name, v] if !cells.is_empty() => {
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
        close(&mut cells, &mut fields);
        let expected = (0..total).filter(|&p| shard.owns(p)).count();
        if cells.len() != expected {
            return Err(Error::value(
                "merge",
                format!(
                    "{origin}: shard {}/{} should hold {expected} of the {total} cells but holds {} (an unfinished shard?)",
                    shard.index,
                    shard.count,
                    cells.len()
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

    /// Reads `DIR/cells.txt`.
    pub fn read(dir: &Path) -> Result<ShardFile> {
        let path = dir.join("cells.txt");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::io(path.display().to_string(), &e))?;
        ShardFile::parse(&text, &path.display().to_string())
    }
}

/// Checks that `files` are the n shards of one run, each once, and gathers their
/// cells.
pub fn gather(files: &[(String, ShardFile)]) -> Result<(String, Vec<String>, Vec<Recorded>)> {
    let (first_name, first) = files
        .first()
        .ok_or_else(|| Error::value("merge", "usage: models merge SHARD_DIR..."))?;
    let mut seen = vec![None::<&str>; first.shard.count];
    let mut cells = Vec::new();
    for (name, f) in files {
        let differs = |what: &str| {
            Error::value(
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
            return Err(Error::value(
                "merge",
                format!(
                    "{name} and {other} are both shard {}/{}",
                    f.shard.index, f.shard.count
                ),
            ));
        }
        cells.extend(f.cells.iter().cloned());
    }
    let missing: Vec<String> = (0..first.shard.count)
        .filter(|&i| seen[i].is_none())
        .map(|i| format!("{i}/{}", first.shard.count))
        .collect();
    if !missing.is_empty() {
        return Err(Error::value(
            "merge",
            format!("missing shard folders for {}", missing.join(", ")),
        ));
    }
    Ok((first.experiment.clone(), first.options.clone(), cells))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_specs_are_checked() {
        assert_eq!(Shard::parse("2/3").unwrap(), Shard { index: 2, count: 3 });
        for bad in ["3/3", "1/0", "x/2", "1", "-1/2"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    fn one_cell(sweep: &Sweep, key: &str, v: f64, m: &mut Metrics) -> Vec<(String, f64)> {
        sweep
            .cell(key, m, |m| {
                m.push(key, 1, "loss", v);
                Ok(vec![("loss".to_string(), v)])
            })
            .unwrap()
    }

    /// Three shards record disjoint cells; the replay gives every value and metric
    /// point back bit for bit, in the grid's order; the text survives a round trip.
    #[test]
    fn shards_replay_to_the_whole_grid() {
        let values = [0.1, -0.0, f64::NAN, 1e300, 3.5];
        let mut files = Vec::new();
        for i in 0..3 {
            let sweep = Sweep::shard(Shard { index: i, count: 3 });
            let mut m = Metrics::default();
            for (k, &v) in values.iter().enumerate() {
                let r = one_cell(&sweep, &format!("a/seed{k}"), v, &mut m);
                assert_eq!(r.is_empty(), k % 3 != i);
            }
            let (total, cells) = sweep.finish();
            let f = ShardFile {
                experiment: "x".into(),
                options: vec!["--quick".into(), "--epochs=2".into()],
                shard: Shard { index: i, count: 3 },
                total,
                cells,
            };
            let back = ShardFile::parse(&f.to_text(), "test").unwrap();
            assert_eq!(back.to_text(), f.to_text());
            files.push((format!("s{i}"), back));
        }
        files.reverse();
        let (_, options, cells) = gather(&files).unwrap();
        assert_eq!(options, ["--quick", "--epochs=2"]);
        let replay = Sweep::replay(cells);
        let mut m = Metrics::default();
        for (k, &v) in values.iter().enumerate() {
            let r = one_cell(&replay, &format!("a/seed{k}"), 99.0, &mut m);
            assert_eq!(r[0].1.to_bits(), v.to_bits());
            assert_eq!(m.rows[k].value.to_bits(), v.to_bits());
        }
        replay.check_replayed().unwrap();
        // Another key at a position is refused.
        let replay = Sweep::replay(gather(&files).unwrap().2);
        let err = replay.cell("b/seed0", &mut m, |_| Ok(Vec::<(String, f64)>::new()));
        assert!(err.unwrap_err().to_string().contains("other options"));
        // A missing or doubled shard is refused.
        assert!(gather(&files[..2])
            .unwrap_err()
            .to_string()
            .contains("missing"));
        let doubled = vec![files[0].clone(), files[0].clone(), files[1].clone()];
        assert!(gather(&doubled)
            .unwrap_err()
            .to_string()
            .contains("both shard"));
    }

    #[test]
    fn truncated_or_corrupt_files_are_refused() {
        let sweep = Sweep::shard(Shard { index: 0, count: 2 });
        let mut m = Metrics::default();
        for k in 0..4 {
            one_cell(&sweep, &format!("k{k}"), k as f64, &mut m);
        }
        let (total, cells) = sweep.finish();
        let text = ShardFile {
            experiment: "x".into(),
            options: vec![],
            shard: Shard { index: 0, count: 2 },
            total,
            cells,
        }
        .to_text();
        assert!(ShardFile::parse(&text, "t").is_ok());
        let lines: Vec<&str> = text.lines().collect();
        let cut = lines[..lines.len() - 3].join("\n");
        assert!(ShardFile::parse(&cut, "t")
            .unwrap_err()
            .to_string()
            .contains("should hold"));
        assert!(ShardFile::parse(
            &text.replace("field\t000:loss\t", "field\t000:loss\tzz"),
            "t"
        )
        .is_err());
        assert!(ShardFile::parse(&text.replace("cell\t2\t", "cell\t1\t"), "t").is_err());
        assert!(ShardFile::parse("hello", "t")
            .unwrap_err()
            .to_string()
            .contains("not a cells file"));
        // No folders, or a folder without cells.txt (a whole run's, or a merge's).
        assert!(gather(&[]).unwrap_err().to_string().contains("usage"));
        let dir = std::env::temp_dir().join(format!("sweep-no-cells-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(ShardFile::read(&dir)
            .unwrap_err()
            .to_string()
            .contains("cells.txt"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
