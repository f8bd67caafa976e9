//! `cells.partial`: a shard's journal. Each cell the shard finishes is appended,
//! closed by an end mark, as soon as it is done, so a shard killed half-way keeps
//! its finished cells and `models resume DIR` computes only the rest. A finished
//! shard replaces its journal by `cells.txt`.

use super::shard_file::{header_line, read_cells, write_cell};
use super::{Recorded, Shard};
use crate::error::{Error, Result};
use std::io::Write as _;
use std::path::Path;

/// The journal's file name in a shard folder.
pub const FILE: &str = "cells.partial";
const MAGIC: &str = "models cells journal v2";

/// What a shard's journal holds: which run it belongs to, the build that ran it,
/// and the cells it finished.
#[derive(Clone, Debug)]
pub struct Journal {
    /// The experiment.
    pub experiment: String,
    /// The options that decide the results (as in `cells.txt`).
    pub options: Vec<String>,
    /// Which slice.
    pub shard: Shard,
    /// The build that ran it (`"<commit> (<clean or dirty> tree)"`): a resume must run
    /// the same code, or its cells would not belong with these.
    pub build: String,
    /// The finished cells, in the grid's order.
    pub cells: Vec<Recorded>,
}

/// The build this binary is, as a journal records it.
pub fn this_build() -> String {
    let p = crate::provenance::Provenance::current();
    format!("{} ({} tree)", p.commit, p.tree)
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| tensor::Error::io(path.display().to_string(), &e).into()
}

impl Journal {
    /// The text: the header, then each cell followed by `end<TAB>position`.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "{MAGIC}\nexperiment\t{}\noptions\t{}\nshard\t{}/{}\nbuild\t{}\n",
            self.experiment,
            self.options.join("\t"),
            self.shard.index,
            self.shard.count,
            self.build
        );
        for c in &self.cells {
            s.push_str(&cell_text(c));
        }
        s
    }

    /// Parses a journal; a last cell without its end mark (the shard was killed
    /// while writing it) is dropped, to be computed again.
    pub fn parse(text: &str, origin: &str) -> Result<Journal> {
        let mut lines = text.lines().enumerate();
        if lines.next().map(|(_, l)| l) != Some(MAGIC) {
            return Err(Error::refused(
                "resume",
                format!("{origin} is not a shard journal (no '{MAGIC}' line)"),
            ));
        }
        let mut header = |name: &str| header_line(&mut lines, name, origin);
        let experiment = header("experiment")?;
        let options = header("options")?
            .split('\t')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        let shard = Shard::parse(&header("shard")?)?;
        let build = header("build")?;
        let rest: Vec<(usize, &str)> = lines.collect();
        // Everything up to the last end mark is whole.
        let whole = rest
            .iter()
            .rposition(|(_, l)| l.starts_with("end\t"))
            .map_or(0, |k| k + 1);
        let body: Vec<(usize, &str)> = rest[..whole]
            .iter()
            .copied()
            .filter(|(_, l)| !l.starts_with("end\t"))
            .collect();
        let cells = read_cells(&body, origin)?;
        let marks = rest[..whole]
            .iter()
            .filter(|(_, l)| l.starts_with("end\t"))
            .count();
        if marks != cells.len() {
            return Err(Error::refused(
                "resume",
                format!(
                    "{origin}: {} cells but {marks} end marks (the journal is damaged)",
                    cells.len()
                ),
            ));
        }
        if let Some(c) = cells.iter().find(|c| !(c.shared || shard.owns(c.position))) {
            return Err(Error::refused(
                "resume",
                format!(
                    "{origin}: cell {} is not one of shard {}/{}'s",
                    c.position, shard.index, shard.count
                ),
            ));
        }
        Ok(Journal {
            experiment,
            options,
            shard,
            build,
            cells,
        })
    }

    /// Reads `DIR/cells.partial`; a finished shard (it has `cells.txt`) has nothing
    /// to resume, and says so.
    pub fn read(dir: &Path) -> Result<Journal> {
        if dir.join("cells.txt").exists() {
            return Err(Error::refused("resume", format!(
                    "{} holds a finished shard (cells.txt): nothing to resume; `models merge` it with the others",
                    dir.display()
                ),
            ));
        }
        let path = dir.join(FILE);
        let text = std::fs::read_to_string(&path).map_err(io(&path))?;
        Journal::parse(&text, &path.display().to_string())
    }

    /// Writes the whole journal to `DIR/cells.partial` through a temporary file
    /// renamed over it, so a kill during the write leaves the old journal whole.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let path = dir.join(FILE);
        let tmp = dir.join(format!("{FILE}.tmp"));
        std::fs::write(&tmp, self.to_text()).map_err(io(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(io(&path))
    }
}

/// One cell's lines and its end mark.
fn cell_text(c: &Recorded) -> String {
    let mut s = String::new();
    write_cell(&mut s, c);
    s.push_str(&format!("end\t{}\n", c.position));
    s
}

/// Appends a finished cell to `DIR/cells.partial` in one write.
pub fn append(dir: &Path, cell: &Recorded) -> Result<()> {
    let path = dir.join(FILE);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .map_err(io(&path))?;
    f.write_all(cell_text(cell).as_bytes())
        .and_then(|()| f.flush())
        .map_err(io(&path))
}
