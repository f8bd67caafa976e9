//! What every run leaves behind: `metrics.csv` (the curves, long format),
//! `plot.svg`, `model.safetensors`, `table.txt`, `evidence.txt` (the comparisons
//! that test a claim) and the final table on stdout.

pub mod evidence;
pub mod evidence_file;
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

    /// The panels of `metrics` (name, log scale): one per metric and setting
    /// (small multiples when the series name several settings), a line per method
    /// at the mean over its seeds with a ±std band, the y axis on a log scale when
    /// asked or when the metric's positive values span two decades or more.
    pub fn panels(&self, metrics: &[(&str, bool)], x_label: &str) -> Vec<svg::Panel> {
        let mut panels = Vec::new();
        for &(m, log_y) in metrics {
            // setting → method → step → values over seeds, in order of appearance.
            type Curves = Vec<(String, BTreeMap<usize, Vec<f64>>)>;
            let mut settings: Vec<(String, Curves)> = Vec::new();
            for r in self.rows.iter().filter(|r| r.metric == m) {
                let (method, setting, _) = split_series(&r.series);
                let k = match settings.iter().position(|(s, _)| *s == setting) {
                    Some(k) => k,
                    None => {
                        settings.push((setting, Vec::new()));
                        settings.len() - 1
                    }
                };
                let curves = &mut settings[k].1;
                let c = match curves.iter().position(|(n, _)| n == method) {
                    Some(c) => c,
                    None => {
                        curves.push((method.to_string(), BTreeMap::new()));
                        curves.len() - 1
                    }
                };
                curves[c].1.entry(r.step).or_default().push(r.value);
            }
            let several = settings.len() > 1;
            for (setting, curves) in settings {
                let values: Vec<f64> = curves
                    .iter()
                    .flat_map(|(_, steps)| steps.values().flatten().copied())
                    .filter(|v| v.is_finite())
                    .collect();
                let (lo, hi) = values
                    .iter()
                    .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
                let spans_decades = !values.is_empty() && lo > 0.0 && hi / lo >= 100.0;
                let log = log_y || spans_decades;
                let series = curves
                    .into_iter()
                    .map(|(method, steps)| {
                        let mut line = Vec::new();
                        let mut band = Vec::new();
                        for (step, vals) in steps {
                            let finite: Vec<f64> =
                                vals.iter().copied().filter(|v| v.is_finite()).collect();
                            if finite.is_empty() {
                                continue;
                            }
                            let n = finite.len() as f64;
                            let mean = finite.iter().sum::<f64>() / n;
                            line.push((step as f64, mean));
                            if finite.len() > 1 {
                                let sd = (finite.iter().map(|v| (v - mean).powi(2)).sum::<f64>()
                                    / (n - 1.0))
                                    .sqrt();
                                // On a log axis the band stays positive.
                                let low = if log {
                                    (mean - sd).max(mean / 10.0)
                                } else {
                                    mean - sd
                                };
                                band.push((step as f64, low, mean + sd));
                            }
                        }
                        svg::Series {
                            label: method,
                            points: line,
                            band,
                        }
                    })
                    .collect();
                panels.push(svg::Panel {
                    title: if several {
                        format!("{m} — {setting}")
                    } else {
                        m.to_string()
                    },
                    x_label: x_label.to_string(),
                    log_y: log,
                    series,
                });
            }
        }
        panels
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

/// The median of the finite `values`, NaN if none.
pub fn median(values: &[f64]) -> f64 {
    let mut finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    finite.sort_by(f64::total_cmp);
    let n = finite.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        finite[n / 2]
    } else {
        0.5 * (finite[n / 2 - 1] + finite[n / 2])
    }
}

/// The folders directly inside `dir`, in name order.
pub fn subfolders(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir.display().to_string(), &e))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    Ok(v)
}

/// The output directory of a run, created on demand.
#[derive(Clone, Debug)]
pub struct RunDir {
    /// The directory.
    pub path: PathBuf,
    /// What the run in it is: whole, one shard, or a merge of shards.
    pub role: Role,
}

/// What a run folder holds, which decides what it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// An ordinary run: everything.
    Whole,
    /// One shard of a sweep: its cells (`cells.txt`), its own curves and model,
    /// and no table (the table needs every shard: `models merge`).
    Shard,
    /// The merge of a sweep's shards: the table, curves and plot; the models
    /// stay in the shard folders.
    Merged,
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
                Ok(()) => {
                    return Ok(RunDir {
                        path,
                        role: Role::Whole,
                    })
                }
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

    /// Writes a further figure `name` (an SVG the run drew itself: landscapes,
    /// distributions) beside plot.svg.
    pub fn write_figure(&self, name: &str, svg: &str) -> Result<()> {
        self.write(name, svg)
    }

    /// Writes plot.svg from explicit panels (for plots whose x axis is not a step).
    pub fn write_plot(&self, title: &str, panels: &[svg::Panel]) -> Result<()> {
        self.write("plot.svg", &svg::render(title, panels))
    }

    /// Writes the tables to table.txt (not in a shard's folder, whose tables hold
    /// placeholders for the other shards' cells).
    pub fn write_tables(&self, tables: &[Table]) -> Result<()> {
        if self.role == Role::Shard {
            return Ok(());
        }
        let text: Vec<String> = tables.iter().map(Table::render).collect();
        self.write("table.txt", &text.join("\n"))
    }

    /// Writes evidence.txt: every comparison the tables make, with its values
    /// (nothing in a shard's folder, or when the tables make none).
    pub fn write_evidence(&self, tables: &[Table]) -> Result<()> {
        let evidence: Vec<_> = tables.iter().flat_map(|t| t.evidence.clone()).collect();
        if self.role == Role::Shard || evidence.is_empty() {
            return Ok(());
        }
        self.write("evidence.txt", &evidence_file::to_text(&evidence)?)
    }

    /// Writes model.safetensors (not in a merged folder: each shard folder holds the
    /// models its cells trained; not in a shard that trained none of them).
    pub fn write_model(
        &self,
        tensors: Vec<(String, AnyTensor)>,
        metadata: Vec<(String, String)>,
    ) -> Result<()> {
        if self.role == Role::Merged || (self.role == Role::Shard && tensors.is_empty()) {
            return Ok(());
        }
        checkpoint::save(
            self.path.join("model.safetensors"),
            &Checkpoint { tensors, metadata },
        )
    }
}

/// The plot a run leaves: curves from its metrics, or panels it drew itself.
pub enum Plot<'a> {
    /// metrics.csv and the curves of `panels` (metric, whether a loss) against
    /// `x_label`.
    Curves {
        /// The plot's title.
        title: &'a str,
        /// The run's curves.
        metrics: &'a Metrics,
        /// The metrics to draw, each with whether it is a loss.
        panels: &'a [(&'a str, bool)],
        /// The x axis ("epoch", "step").
        x_label: &'a str,
    },
    /// Panels whose x axis is not a step.
    Panels {
        /// The plot's title.
        title: &'a str,
        /// The panels.
        panels: &'a [svg::Panel],
    },
}

impl RunDir {
    /// The ending every experiment shares: writes the plot (and metrics.csv), the
    /// model (when there is one) tagged with `experiment`, and the tables, says
    /// where they are, and returns the tables.
    pub fn finish(
        &self,
        experiment: &str,
        plot: Plot<'_>,
        model: Vec<(String, AnyTensor)>,
        tables: Vec<Table>,
    ) -> Result<Vec<Table>> {
        match plot {
            Plot::Curves {
                title,
                metrics,
                panels,
                x_label,
            } => self.write_metrics(title, metrics, panels, x_label)?,
            Plot::Panels { title, panels } => self.write_plot(title, panels)?,
        }
        if !model.is_empty() {
            self.write_model(model, vec![("experiment".into(), experiment.into())])?;
        }
        self.write_tables(&tables)?;
        eprintln!("{experiment}: results in {}", self.path.display());
        Ok(tables)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_skips_non_finite_values() {
        assert_eq!(median(&[3.0, f64::NAN, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, f64::INFINITY, 2.0, 3.0]), 2.5);
        assert!(median(&[f64::NAN]).is_nan() && median(&[]).is_nan());
    }

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

    /// Seeds become one line (their mean) with a ±std band, settings become small
    /// multiples, and a metric spanning decades gets a log axis.
    #[test]
    fn panels_average_the_seeds_and_split_the_settings() {
        let mut m = Metrics::default();
        for (seed, v) in [(0, 1.0), (1, 3.0)] {
            m.push(&format!("adam/b8/seed{seed}"), 1, "loss", v);
            m.push(&format!("sgd/b8/seed{seed}"), 1, "loss", 10.0 * v);
            m.push(&format!("adam/b32/seed{seed}"), 1, "loss", 1000.0 * v);
        }
        let p = m.panels(&[("loss", false)], "step");
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].title, "loss — b8");
        assert_eq!(p[0].series.len(), 2);
        let adam = &p[0].series[0];
        assert_eq!(adam.label, "adam");
        assert_eq!(adam.points, vec![(1.0, 2.0)]);
        let sd = 2f64.sqrt();
        assert_eq!(adam.band, vec![(1.0, 2.0 - sd, 2.0 + sd)]);
        // 10–30 within b8 does not span two decades; nothing else is mixed in.
        assert!(!p[0].log_y);
        assert_eq!(p[1].series.len(), 1);
        let mut wide = Metrics::default();
        wide.push("a/seed0", 1, "err", 1e-4);
        wide.push("a/seed0", 2, "err", 1e-1);
        assert!(wide.panels(&[("err", false)], "step")[0].log_y);
    }
}
