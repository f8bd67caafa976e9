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
//!
//! A *shared* cell ([`Sweep::shared_cell`]) is one every shard needs before it
//! can go on, such as a validation score that chooses the hyper-parameter of the
//! cells after it: every shard computes it and records it, a resumed shard and
//! the merge take it from the record instead of computing it again, and the
//! merge refuses shards whose copies differ in a single bit.

pub mod journal;
pub(crate) mod shard_file;

pub use journal::Journal;
pub use shard_file::{gather, ShardFile};

use crate::error::{Error, Result};
use crate::report::{Metrics, Row};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The most slices a sweep may be cut into.
pub const MAX_SHARDS: usize = 1_000_000;

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
            Error::usage(format!(
                "--shard expects i/n with 0 ≤ i < n (e.g. 0/4), got '{text}': {why}"
            ))
        };
        let (i, n) = text.split_once('/').ok_or_else(|| bad("no '/'"))?;
        let index: usize = i.trim().parse().map_err(|_| bad("i is not a number"))?;
        let count: usize = n.trim().parse().map_err(|_| bad("n is not a number"))?;
        if count == 0 {
            return Err(bad("n must be at least 1"));
        }
        if count > MAX_SHARDS {
            return Err(bad(&format!("n is at most {MAX_SHARDS}")));
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
            None => Err(Error::refused(
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
                None => Err(Error::refused(
                    "merge",
                    format!("malformed field name '{k}'"),
                )),
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
        .ok_or_else(|| Error::usage(format!("no result called '{name}'")))
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
    /// Computed by every shard ([`Sweep::shared_cell`]), not by its owner alone.
    pub shared: bool,
}

impl Recorded {
    /// Whether `other` records the same cell with the same bits (key, fields,
    /// metric points): two shards' copies of a shared cell must.
    pub fn same_as(&self, other: &Recorded) -> bool {
        let bits = |r: &Recorded| -> Vec<(String, u64)> {
            r.fields
                .pairs()
                .into_iter()
                .map(|(k, v)| (k, v.to_bits()))
                .collect()
        };
        let rows = |r: &Recorded| -> Vec<(String, usize, String, u64)> {
            r.rows
                .iter()
                .map(|w| {
                    (
                        w.series.clone(),
                        w.step,
                        w.metric.clone(),
                        w.value.to_bits(),
                    )
                })
                .collect()
        };
        (self.position, &self.key, self.shared) == (other.position, &other.key, other.shared)
            && bits(self) == bits(other)
            && rows(self) == rows(other)
    }
}

enum Mode {
    Shard { shard: Shard, prior: Vec<Recorded> },
    Replay(Vec<Recorded>),
}

/// A recorded cell given back where the walk asks for `key`: its metric points
/// added to `metrics`, its value returned; an error (as `what`, naming `source`)
/// when the record is another cell's.
fn given_back<T: CellValue>(
    rec: &Recorded,
    key: &str,
    (what, source): (&'static str, &str),
    metrics: &mut Metrics,
) -> Result<T> {
    if rec.key != key {
        return Err(Error::refused(what, format!(
                "cell {} is '{key}' here but '{}' in {source}: it was run with other options or another version",
                rec.position, rec.key
            ),
        ));
    }
    metrics.rows.extend(rec.rows.iter().cloned());
    T::from_fields(&rec.fields)
}

/// The cells of one sharded or merged run.
pub struct Sweep {
    mode: Mode,
    state: Mutex<(usize, Vec<Recorded>)>,
    /// The shard folder whose journal each finished cell is appended to.
    journal: Mutex<Option<PathBuf>>,
}

impl std::fmt::Debug for Sweep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.mode {
            Mode::Shard { .. } => "Sweep::Shard",
            Mode::Replay(_) => "Sweep::Replay",
        })
    }
}

impl Sweep {
    /// A sweep that runs the cells `shard` owns and records them.
    pub fn shard(shard: Shard) -> Self {
        Sweep::resumed(shard, Vec::new())
    }

    /// A shard that resumes: the cells in `prior` (from its journal) are given
    /// back as recorded, the others it owns are computed.
    pub fn resumed(shard: Shard, prior: Vec<Recorded>) -> Self {
        Sweep {
            mode: Mode::Shard { shard, prior },
            state: Mutex::new((0, Vec::new())),
            journal: Mutex::new(None),
        }
    }

    /// A sweep that replays recorded cells (every position once, in order).
    pub fn replay(mut cells: Vec<Recorded>) -> Self {
        cells.sort_by_key(|c| c.position);
        Sweep {
            mode: Mode::Replay(cells),
            state: Mutex::new((0, Vec::new())),
            journal: Mutex::new(None),
        }
    }

    /// In a shard: writes the journal `dir/cells.partial` (its header and the cells
    /// resumed from), and appends every cell finished from now on to it.
    pub fn keep_journal(&self, dir: &Path, experiment: &str, options: &[String]) -> Result<()> {
        let Mode::Shard { shard, prior } = &self.mode else {
            return Ok(());
        };
        Journal {
            experiment: experiment.to_string(),
            options: options.to_vec(),
            shard: *shard,
            build: journal::this_build(),
            cells: prior.clone(),
        }
        .write(dir)?;
        *self.journal.lock().unwrap_or_else(|e| e.into_inner()) = Some(dir.to_path_buf());
        Ok(())
    }

    /// The cells a resumed shard took from its journal.
    pub fn resumed_cells(&self) -> usize {
        match &self.mode {
            Mode::Shard { prior, .. } => prior.len(),
            Mode::Replay(_) => 0,
        }
    }

    /// Whether this sweep is a shard (its tables are not the run's).
    pub fn is_shard(&self) -> bool {
        matches!(self.mode, Mode::Shard { .. })
    }

    /// The next cell, called `key`: computed (when this shard owns it), replayed,
    /// or a placeholder. `compute` pushes its metric points to `metrics`.
    pub fn cell<T: CellValue>(
        &self,
        key: &str,
        metrics: &mut Metrics,
        compute: impl FnOnce(&mut Metrics) -> Result<T>,
    ) -> Result<T> {
        self.walk(key, false, metrics, compute)
    }

    /// The next cell, called `key`, computed by every shard (none sees a
    /// placeholder): a result every shard needs to go on, such as a validation
    /// score. A resumed shard and the merge give back the recorded one.
    pub fn shared_cell<T: CellValue>(
        &self,
        key: &str,
        metrics: &mut Metrics,
        compute: impl FnOnce(&mut Metrics) -> Result<T>,
    ) -> Result<T> {
        self.walk(key, true, metrics, compute)
    }

    /// The next cell, `shared` or owned by one shard.
    fn walk<T: CellValue>(
        &self,
        key: &str,
        shared: bool,
        metrics: &mut Metrics,
        compute: impl FnOnce(&mut Metrics) -> Result<T>,
    ) -> Result<T> {
        if key.contains(['\t', '\n']) {
            return Err(tensor::Error::value(
                "sweep",
                format!("cell key {key:?} holds a tab or newline"),
            )
            .into());
        }
        let position = {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            s.0 += 1;
            s.0 - 1
        };
        match &self.mode {
            Mode::Shard { shard, .. } if !shared && !shard.owns(position) => {
                T::from_fields(&Fields::placeholder())
            }
            Mode::Shard { prior, .. } => {
                if let Some(rec) = prior.iter().find(|c| c.position == position) {
                    let value = given_back(rec, key, ("resume", "the journal"), metrics)?;
                    self.record(rec.clone(), false)?;
                    return Ok(value);
                }
                let before = metrics.rows.len();
                let value = compute(metrics)?;
                self.record(
                    Recorded {
                        position,
                        key: key.to_string(),
                        fields: value.to_fields(),
                        rows: metrics.rows[before..].to_vec(),
                        shared,
                    },
                    true,
                )?;
                Ok(value)
            }
            Mode::Replay(cells) => {
                let rec = cells.get(position).ok_or_else(|| {
                    Error::refused("merge", format!("the experiment asks for cell {position} ('{key}') but the shards hold {} cells", cells.len()),
                    )
                })?;
                given_back(rec, key, ("merge", "the shards"), metrics)
            }
        }
    }

    /// Keeps a shard's cell, and appends it to the journal when it is `new`.
    fn record(&self, rec: Recorded, new: bool) -> Result<()> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if new {
            if let Some(dir) = &*self.journal.lock().unwrap_or_else(|e| e.into_inner()) {
                journal::append(dir, &rec)?;
            }
        }
        state.1.push(rec);
        Ok(())
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
                return Err(Error::refused(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_specs_are_checked() {
        assert_eq!(Shard::parse("2/3").unwrap(), Shard { index: 2, count: 3 });
        for bad in ["3/3", "1/0", "x/2", "1", "-1/2", "0/18446744073709551615"] {
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

    /// A shared cell (a validation score) then the owned cells, walked by one
    /// shard; `computed` counts the shared cell's computations.
    fn walk_with_shared(sweep: &Sweep, score: f64, computed: &mut usize) -> Vec<f64> {
        let mut m = Metrics::default();
        let shared: Vec<(String, f64)> = sweep
            .shared_cell("choice/seed0", &mut m, |_| {
                *computed += 1;
                Ok(vec![("score".to_string(), score)])
            })
            .unwrap();
        let mut seen = vec![shared[0].1];
        for k in 0..4 {
            seen.extend(
                one_cell(sweep, &format!("a/seed{k}"), k as f64, &mut m)
                    .first()
                    .map(|c| c.1),
            );
        }
        seen
    }

    /// Every shard computes a shared cell; a resumed shard and the merge take it
    /// from the records; shards whose copies differ are refused.
    #[test]
    fn shared_cells_run_in_every_shard_and_once_in_the_merge() {
        let mut computed = 0;
        let mut files = Vec::new();
        for i in 0..2 {
            let sweep = Sweep::shard(Shard { index: i, count: 2 });
            let seen = walk_with_shared(&sweep, 0.25, &mut computed);
            // The score, then this shard's two owned cells of the four.
            assert_eq!(seen.len(), 3);
            let (total, cells) = sweep.finish();
            let f = ShardFile {
                experiment: "x".into(),
                options: vec![],
                shard: Shard { index: i, count: 2 },
                total,
                cells,
            };
            files.push((
                format!("s{i}"),
                ShardFile::parse(&f.to_text(), "t").unwrap(),
            ));
        }
        assert_eq!(computed, 2);
        let replay = Sweep::replay(gather(&files).unwrap().2);
        assert_eq!(
            walk_with_shared(&replay, 9.0, &mut computed),
            [0.25, 0.0, 1.0, 2.0, 3.0]
        );
        assert_eq!(computed, 2);
        replay.check_replayed().unwrap();
        // A resumed shard gives its journal's shared cell back.
        let prior = files[1].1.cells.clone();
        let journal = Journal {
            experiment: "x".into(),
            options: vec![],
            shard: Shard { index: 1, count: 2 },
            build: "b".into(),
            cells: prior,
        };
        let back = Journal::parse(&journal.to_text(), "j").unwrap();
        let resumed = Sweep::resumed(back.shard, back.cells);
        assert_eq!(walk_with_shared(&resumed, 9.0, &mut computed)[0], 0.25);
        assert_eq!(computed, 2);
        // One bit apart: the shards did not compute the same thing.
        let sweep = Sweep::shard(Shard { index: 1, count: 2 });
        walk_with_shared(&sweep, f64::from_bits(0.25f64.to_bits() + 1), &mut computed);
        let (total, cells) = sweep.finish();
        files[1].1 = ShardFile {
            experiment: "x".into(),
            options: vec![],
            shard: Shard { index: 1, count: 2 },
            total,
            cells,
        };
        let err = gather(&files).unwrap_err().to_string();
        assert!(err.contains("differently"), "{err}");
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
        let err = |t: &str| ShardFile::parse(t, "t").unwrap_err().to_string();
        // Cut short, or edited without its checksum: refused whole.
        let lines: Vec<&str> = text.lines().collect();
        assert!(err(&lines[..lines.len() - 3].join("\n")).contains("cut short"));
        let edited = text.replace("field\t000:loss\t", "field\t000:loss\t1");
        assert!(err(&edited).contains("checksum does not match"));
        // Edited and resealed: each record is still checked.
        let lost_field =
            shard_file::reseal(&text.replacen("field\t000:loss\t0000000000000000\n", "", 1));
        assert!(
            err(&lost_field).contains("announces 1 fields"),
            "{}",
            err(&lost_field)
        );
        let lost_row =
            shard_file::reseal(&text.replacen("row\tk0\t1\tloss\t0000000000000000\n", "", 1));
        assert!(
            err(&lost_row).contains("1 metric points"),
            "{}",
            err(&lost_row)
        );
        let repeated = shard_file::reseal(&text.replacen(
            "field\t000:loss\t0000000000000000\n",
            "field\t000:loss\t0000000000000000\nfield\t000:loss\t3ff0000000000000\n",
            1,
        ));
        assert!(err(&repeated).contains("repeated"), "{}", err(&repeated));
        let cell2 = text.find("cell\t2\t").unwrap();
        let missing_cell = shard_file::reseal(&text[..cell2]);
        assert!(
            err(&missing_cell).contains("should hold"),
            "{}",
            err(&missing_cell)
        );
        let reordered = shard_file::reseal(&text.replace("cell\t2\t", "cell\t0\t"));
        assert!(err(&reordered).contains("out of order"));
        assert!(err("hello").contains("not a cells file"));
        let older = text.replacen("models cells v3", "models cells v2", 1);
        assert!(err(&older).contains("older build"), "{}", err(&older));
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
