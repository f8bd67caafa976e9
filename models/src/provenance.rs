//! Where a run's numbers came from: the crate version, the git commit and whether
//! the tree was dirty, the compiler, the target, the CPU features detected and the
//! kernel path taken, and the worker threads. Written to every run folder's
//! `manifest.txt`, to the head of every audit trace, and by `models --version`.

use crate::cli::{utc_stamp, RunConfig};
use std::path::Path;
use std::time::Instant;
use tensor::{Error, Result};

/// The build and machine a run executes on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provenance {
    /// The `models` crate version.
    pub version: &'static str,
    /// The git commit built, or "unknown" outside a checkout.
    pub commit: &'static str,
    /// "clean" or "dirty" (tracked files changed at build time), or "unknown".
    pub tree: &'static str,
    /// `rustc --version` of the compiler.
    pub rustc: &'static str,
    /// The target triple.
    pub target: &'static str,
    /// The SIMD features the CPU reports.
    pub cpu_features: Vec<&'static str>,
    /// The kernels that run: avx512, avx2 or portable.
    pub kernel_path: &'static str,
    /// Worker threads of the current pool.
    pub threads: usize,
    /// The machine: the CPU's model name and the logical CPUs the process may use.
    pub machine: String,
}

impl Provenance {
    /// This build on this machine, in the current thread pool.
    pub fn current() -> Provenance {
        Provenance {
            version: env!("CARGO_PKG_VERSION"),
            commit: env!("MODELS_GIT_COMMIT"),
            tree: env!("MODELS_GIT_TREE"),
            rustc: env!("MODELS_RUSTC"),
            target: env!("MODELS_TARGET"),
            cpu_features: tensor::platform::cpu_features(),
            kernel_path: tensor::platform::kernel_path(),
            threads: rayon::current_num_threads(),
            machine: machine(),
        }
    }

    /// As `key: value` pairs, in the manifest's order.
    pub fn pairs(&self) -> Vec<(String, String)> {
        let features = if self.cpu_features.is_empty() {
            "none detected".to_string()
        } else {
            self.cpu_features.join(" ")
        };
        [
            ("version", self.version.to_string()),
            ("commit", self.commit.to_string()),
            ("tree", self.tree.to_string()),
            ("rustc", self.rustc.to_string()),
            ("target", self.target.to_string()),
            ("cpu features", features),
            (KERNEL_PATH, self.kernel_path.to_string()),
            ("threads", self.threads.to_string()),
            ("machine", self.machine.clone()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// `models --version`: one line.
    pub fn version_line(&self) -> String {
        format!(
            "models {} (commit {}, {} tree; {}; {}; kernels {})",
            self.version, self.commit, self.tree, self.rustc, self.target, self.kernel_path
        )
    }
}

/// The CPU's model name (from /proc/cpuinfo where there is one) and the logical
/// CPUs available, e.g. "Intel(R) Xeon(R) CPU @ 2.60GHz, 2 logical CPUs".
fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| format!("unknown {} CPU", std::env::consts::ARCH));
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{model}, {cpus} logical CPUs")
}

/// The key under which the kernel path is recorded (trace-diff compares it).
pub const KERNEL_PATH: &str = "kernel path";

/// The command line, quoted where an argument holds a space or a quote.
fn command_line() -> String {
    std::env::args()
        .map(|a| {
            if a.is_empty() || a.contains([' ', '\'', '"']) {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a run of `experiment` (whose own options are `options`) was asked to do
/// and where it ran: the command line, every option with its value (given, or its
/// default as the help states it), the seeds and the [`Provenance`].
pub fn run_description(
    experiment: &str,
    options: &[(&str, &str)],
    cfg: &RunConfig,
) -> Vec<(String, String)> {
    let given = |key: &str| {
        let prefix = format!("--{key}=");
        cfg.options
            .iter()
            .find_map(|o| o.strip_prefix(&prefix).map(str::to_string))
    };
    let mut out = vec![
        ("experiment".to_string(), experiment.to_string()),
        ("command line".to_string(), command_line()),
        (
            "setting".to_string(),
            if cfg.quick { "quick" } else { "full" }.to_string(),
        ),
        ("seed".to_string(), cfg.seed.to_string()),
        (
            "seeds".to_string(),
            cfg.seeds
                .map_or("the setting's default".to_string(), |n| n.to_string()),
        ),
        (
            "shard".to_string(),
            cfg.shard
                .map_or("none".to_string(), |s| format!("{}/{}", s.index, s.count)),
        ),
        (
            "data".to_string(),
            cfg.data
                .as_ref()
                .map_or("built-in".to_string(), |d| d.display().to_string()),
        ),
    ];
    for (key, help) in options {
        let value = given(key).unwrap_or_else(|| format!("default: {help}"));
        out.push((format!("--{key}"), value));
    }
    out.extend(Provenance::current().pairs());
    out
}

/// The run's `manifest.txt`, begun when the run starts.
pub struct Manifest {
    started: String,
    clock: Instant,
}

impl Manifest {
    /// Notes the start time.
    pub fn start() -> Manifest {
        Manifest {
            started: utc_stamp(),
            clock: Instant::now(),
        }
    }

    /// Writes `manifest.txt` in `dir`: [`run_description`], the start time, the
    /// wall time so far and the run's `outcome`.
    pub fn write(
        &self,
        dir: &Path,
        experiment: &str,
        options: &[(&str, &str)],
        cfg: &RunConfig,
        outcome: &str,
    ) -> Result<()> {
        let mut text = String::new();
        let mut lines = run_description(experiment, options, cfg);
        lines.push(("start (UTC)".into(), self.started.clone()));
        lines.push((
            "wall time".into(),
            format!("{:.1} s", self.clock.elapsed().as_secs_f64()),
        ));
        lines.extend(cfg.notes.iter().cloned());
        lines.push(("outcome".into(), outcome.replace('\n', " ")));
        for (k, v) in lines {
            text.push_str(&format!("{k}: {v}\n"));
        }
        let path = dir.join("manifest.txt");
        std::fs::write(&path, text).map_err(|e| Error::io(path.display().to_string(), &e))
    }
}

/// A `manifest.txt` read back: its `key: value` lines, in order.
#[derive(Clone, Debug)]
pub struct ManifestFile {
    /// Where it was read from.
    pub path: std::path::PathBuf,
    /// Its lines.
    pub lines: Vec<(String, String)>,
}

impl ManifestFile {
    /// Reads `DIR/manifest.txt`.
    pub fn read(dir: &Path) -> Result<ManifestFile> {
        let path = dir.join("manifest.txt");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::io(path.display().to_string(), &e))?;
        let lines = text
            .lines()
            .map(|l| {
                l.split_once(": ")
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .ok_or_else(|| {
                        Error::value(
                            "manifest",
                            format!("{}: '{l}' is not a 'key: value' line", path.display()),
                        )
                    })
            })
            .collect::<Result<_>>()?;
        Ok(ManifestFile { path, lines })
    }

    /// The value of `key`, or an error naming the manifest that lacks it.
    pub fn get(&self, key: &str) -> Result<&str> {
        self.lines
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .ok_or_else(|| {
                Error::value(
                    "manifest",
                    format!("{} has no '{key}' line", self.path.display()),
                )
            })
    }
}
