//! What every run leaves behind: `metrics.csv` (the curves, long format),
//! `plot.svg`, `model.safetensors`, `table.txt`, and the final table on stdout.

pub mod evidence;
pub mod heatmap;
pub mod progress;
pub mod svg;

use nn::checkpoint::{self, AnyTensor, Checkpoint};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use tensor::{Error, Result};

/// One point of one curve: (series, step, metric) → value.
#[derive(Clone, Debug)]
pub struct Row {
    /// The curve the point belongs to, by the convention
    /// `method/setting…/seed<N>` ("adam/b32/seed0"): the method first, then any
    /// settings, then the seed.
    pub series: String,
    /// Step or epoch.
    pub step: usize,
    /// Metric name ("train_loss", "test_accuracy").
    pub metric: String,
    /// The value.
    pub value: f64,
}

/// The curves of a run.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    /// All points, in insertion order.
    pub rows: Vec<Row>,
}

impl Metrics {
    /// Adds one point.
    pub fn push(&mut self, series: &str, step: usize, metric: &str, value: f64) {
        self.rows.push(Row {
            series: series.to_string(),
            step,
            metric: metric.to_string(),
            value,
        });
    }

    /// Appends another run's points.
    pub fn extend(&mut self, other: Metrics) {
        self.rows.extend(other.rows);
    }

    /// The CSV text: `series,method,setting,seed,step,metric,value`, the series also
    /// split into its method (first part), setting (the middle parts, joined by
    /// `/`) and seed (the number of a last part `seed<N>`; empty without one).
    /// Fields holding a comma or a quote are quoted (RFC 4180).
    pub fn to_csv(&self) -> String {
        let mut s = String::from("series,method,setting,seed,step,metric,value\n");
        for r in &self.rows {
            let (method, setting, seed) = split_series(&r.series);
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{:e}",
                csv_field(&r.series),
                csv_field(method),
                csv_field(&setting),
                seed.map_or_else(String::new, |n| n.to_string()),
                r.step,
                csv_field(&r.metric),
                r.value
            );
        }
        s
    }

    /// One panel per metric in `metrics`, a line per series.
    pub fn panels(&self, metrics: &[(&str, bool)], x_label: &str) -> Vec<svg::Panel> {
        metrics
            .iter()
            .map(|&(m, log_y)| {
                let mut by_series: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
                for r in self.rows.iter().filter(|r| r.metric == m) {
                    by_series
                        .entry(&r.series)
                        .or_default()
                        .push((r.step as f64, r.value));
                }
                svg::Panel {
                    title: m.to_string(),
                    x_label: x_label.to_string(),
                    log_y,
                    series: by_series
                        .into_iter()
                        .map(|(k, v)| svg::Series {
                            label: k.to_string(),
                            points: v,
                        })
                        .collect(),
                }
            })
            .collect()
    }
}

/// A series `method/setting…/seed<N>` as (method, setting, seed).
pub fn split_series(series: &str) -> (&str, String, Option<u64>) {
    let mut parts: Vec<&str> = series.split('/').collect();
    let seed = parts
        .last()
        .and_then(|p| p.strip_prefix("seed"))
        .and_then(|n| n.parse().ok());
    if seed.is_some() {
        parts.pop();
    }
    let method = if parts.is_empty() {
        ""
    } else {
        parts.remove(0)
    };
    (method, parts.join("/"), seed)
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A results table.
#[derive(Clone, Debug, Default)]
pub struct Table {
    /// Title line.
    pub title: String,
    /// Column headers.
    pub headers: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
    /// The comparisons among these rows that test a paper's claim (gathered by the
    /// demo's summary).
    pub evidence: Vec<evidence::Evidence>,
}

impl Table {
    /// A table with headers.
    pub fn new(title: &str, headers: &[&str]) -> Self {
        Table {
            title: title.to_string(),
            headers: headers.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
            evidence: Vec::new(),
        }
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        // A row of another width is the experiment's own bug (a header it forgot),
        // caught where the tests run experiments.
        debug_assert_eq!(
            cells.len(),
            self.headers.len(),
            "table '{}': a row of {} cells under {} headers",
            self.title,
            cells.len(),
            self.headers.len()
        );
        self.rows.push(cells);
    }

    /// The table as aligned text.
    pub fn render(&self) -> String {
        let n = self.headers.len();
        let mut w: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(n) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |cells: &[String]| -> String {
            let parts: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{c:<width$}", width = w[i.min(n - 1)]))
                .collect();
            format!("| {} |", parts.join(" | "))
        };
        let mut s = format!("{}\n", self.title);
        s.push_str(&line(&self.headers));
        s.push('\n');
        s.push_str(&format!(
            "|{}|\n",
            w.iter()
                .map(|&k| "-".repeat(k + 2))
                .collect::<Vec<_>>()
                .join("|")
        ));
        for r in &self.rows {
            s.push_str(&line(r));
            s.push('\n');
        }
        s
    }
}

/// Mean and (sample) standard deviation, formatted "mean ± std" (just the mean for
/// one value).
pub fn mean_std(values: &[f64], digits: usize) -> String {
    if values.is_empty() {
        return "—".into();
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() == 1 {
        return format!("{mean:.digits$}");
    }
    let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    format!("{mean:.digits$} ± {sd:.digits$}")
}

/// The output directory of a run, created on demand.
#[derive(Clone, Debug)]
pub struct RunDir {
    /// The directory.
    pub path: PathBuf,
}

impl RunDir {
    /// `out/<experiment>/<run_id>`, created exclusively: a folder that already
    /// exists (another run started in the same second) is never reused; the run gets
    /// `<run_id>-2`, `-3`, … instead.
    pub fn create(out: &Path, experiment: &str, run_id: &str) -> Result<Self> {
        let parent = out.join(experiment);
        std::fs::create_dir_all(&parent)
            .map_err(|e| Error::io(parent.display().to_string(), &e))?;
        for n in 1..=10_000 {
            let path = if n == 1 {
                parent.join(run_id)
            } else {
                parent.join(format!("{run_id}-{n}"))
            };
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(RunDir { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io(path.display().to_string(), &e)),
            }
        }
        Err(Error::value(
            "RunDir",
            format!(
                "10,000 run folders named {run_id} already exist in {}",
                parent.display()
            ),
        ))
    }

    fn write(&self, name: &str, text: &str) -> Result<()> {
        let p = self.path.join(name);
        std::fs::write(&p, text).map_err(|e| Error::io(p.display().to_string(), &e))
    }

    /// Writes metrics.csv and plot.svg, with `metrics` choosing the panels.
    pub fn write_metrics(
        &self,
        title: &str,
        m: &Metrics,
        panels: &[(&str, bool)],
        x_label: &str,
    ) -> Result<()> {
        self.write("metrics.csv", &m.to_csv())?;
        self.write("plot.svg", &svg::render(title, &m.panels(panels, x_label)))
    }

    /// Writes plot.svg from explicit panels (for plots whose x axis is not a step).
    pub fn write_plot(&self, title: &str, panels: &[svg::Panel]) -> Result<()> {
        self.write("plot.svg", &svg::render(title, panels))
    }

    /// Writes the tables to table.txt.
    pub fn write_tables(&self, tables: &[Table]) -> Result<()> {
        let text: Vec<String> = tables.iter().map(Table::render).collect();
        self.write("table.txt", &text.join("\n"))
    }

    /// Writes model.safetensors.
    pub fn write_model(
        &self,
        tensors: Vec<(String, AnyTensor)>,
        metadata: Vec<(String, String)>,
    ) -> Result<()> {
        checkpoint::save(
            self.path.join("model.safetensors"),
            &Checkpoint { tensors, metadata },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_split_into_method_setting_and_seed() {
        assert_eq!(
            split_series("adam/b32/seed3"),
            ("adam", "b32".into(), Some(3))
        );
        assert_eq!(
            split_series("lift, no slack/8gaussians/slack0/seed12"),
            ("lift, no slack", "8gaussians/slack0".into(), Some(12))
        );
        assert_eq!(split_series("sgd"), ("sgd", String::new(), None));
        assert_eq!(
            split_series("sgd/seedling"),
            ("sgd", "seedling".into(), None)
        );
    }

    #[test]
    fn the_csv_has_one_column_per_part_and_quotes_commas() {
        let mut m = Metrics::default();
        m.push("lift, no slack/Gumbel/seed1", 5, "train_nll", 0.5);
        m.push("adam/seed0", 1, "train_loss", 2.0);
        let csv = m.to_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "series,method,setting,seed,step,metric,value");
        assert_eq!(
            lines[1],
            "\"lift, no slack/Gumbel/seed1\",\"lift, no slack\",Gumbel,1,5,train_nll,5e-1"
        );
        assert_eq!(lines[2], "adam/seed0,adam,,0,1,train_loss,2e0");
    }
}
