//! Command-line options shared by every experiment.

use crate::error::{Error, Result};
use crate::report::{Metrics, Role, RunDir};
use crate::sweep::{CellValue, Shard, Sweep};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Options of one run: the common ones, plus experiment-specific `--key value` pairs.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Base seed; seeds `seed, seed + 1, ...` are used for repeated runs.
    pub seed: u64,
    /// Number of seeds (repetitions), if given.
    pub seeds: Option<usize>,
    /// Worker threads (rayon), if given.
    pub threads: Option<usize>,
    /// The quick setting (about a minute on two cores).
    pub quick: bool,
    /// Root of the run directories.
    pub out: PathBuf,
    /// A directory of real data, for experiments that accept one.
    pub data: Option<PathBuf>,
    /// No progress lines on stderr.
    pub quiet: bool,
    /// Write the run's audit trace (every op: name, shape, output hash) here.
    pub trace: Option<PathBuf>,
    /// Keep every op's input and output values in the trace during this step.
    pub trace_values_step: Option<u64>,
    /// `--shard i/n`: run only the i-th of n slices of the experiment's grid.
    pub shard: Option<Shard>,
    /// The options that decide the results (all but `--out`, `--threads`,
    /// `--quiet`, `--shard` and the trace options), sorted, as `--key=value`: what
    /// the shards of one sweep must share.
    pub options: Vec<String>,
    /// The sharded or merged sweep this run walks its cells through, if any.
    pub sweep: Option<Arc<Sweep>>,
    /// A folder to run in instead of a new one: the shard folder `models resume`
    /// continues.
    pub resume_in: Option<PathBuf>,
    /// Further `key: value` lines for the manifest (a merge's shards).
    pub notes: Vec<(String, String)>,
    extra: BTreeMap<String, String>,
    /// The run folder the runner created before training, with its experiment.
    prepared: Option<(String, RunDir)>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            seed: 0,
            seeds: None,
            threads: None,
            quick: false,
            out: PathBuf::from("runs"),
            data: None,
            quiet: false,
            trace: None,
            trace_values_step: None,
            shard: None,
            options: Vec::new(),
            sweep: None,
            resume_in: None,
            notes: Vec::new(),
            extra: BTreeMap::new(),
            prepared: None,
        }
    }
}

fn parse_num<T: std::str::FromStr>(key: &str, v: &str) -> Result<T> {
    v.parse()
        .map_err(|_| Error::usage(format!("--{key} expects a number, got '{v}'")))
}

impl RunConfig {
    /// Parses `--key value` (or `--key=value`) and flag arguments (everything after the experiment name).
    pub fn parse(args: &[String]) -> Result<Self> {
        let mut cfg = RunConfig::default();
        let mut given = std::collections::BTreeSet::new();
        let mut i = 0;
        while i < args.len() {
            let arg = args[i]
                .strip_prefix("--")
                .ok_or_else(|| Error::usage(format!("unexpected argument '{}'", args[i])))?;
            // `--key=value` or `--key value`.
            let (key, inline) = match arg.split_once('=') {
                Some((k, v)) => (k.to_string(), Some(v.to_string())),
                None => (arg.to_string(), None),
            };
            if !given.insert(key.clone()) {
                return Err(Error::usage(format!(
                    "--{key} is given twice: give each option once"
                )));
            }
            match key.as_str() {
                "quick" | "quiet" if inline.is_some() => {
                    return Err(Error::usage(format!("--{key} takes no value")))
                }
                "quick" => {
                    cfg.quick = true;
                    cfg.options.push("--quick".into())
                }
                "quiet" => cfg.quiet = true,
                _ => {
                    let v = match &inline {
                        Some(v) => v,
                        None => {
                            i += 1;
                            args.get(i)
                                .ok_or_else(|| Error::usage(format!("--{key} needs a value")))?
                        }
                    };
                    if !matches!(
                        key.as_str(),
                        "out" | "threads" | "trace" | "trace-values-step" | "shard"
                    ) {
                        cfg.options.push(format!("--{key}={v}"));
                    }
                    match key.as_str() {
                        "shard" => cfg.shard = Some(Shard::parse(v)?),
                        "seed" => cfg.seed = parse_num(&key, v)?,
                        "seeds" => {
                            let n: usize = parse_num(&key, v)?;
                            if n == 0 {
                                return Err(Error::usage("--seeds must be at least 1"));
                            }
                            cfg.seeds = Some(n)
                        }
                        "threads" => cfg.threads = Some(check_threads(parse_num(&key, v)?)?),
                        "out" => cfg.out = PathBuf::from(v),
                        "data" => cfg.data = Some(PathBuf::from(v)),
                        "trace" => cfg.trace = Some(PathBuf::from(v)),
                        "trace-values-step" => cfg.trace_values_step = Some(parse_num(&key, v)?),
                        _ => {
                            cfg.extra.insert(key, v.clone());
                        }
                    }
                }
            }
            i += 1;
        }
        if cfg.trace_values_step.is_some() && cfg.trace.is_none() {
            return Err(Error::usage(
                "--trace-values-step keeps values in the audit trace, so it needs --trace FILE",
            ));
        }
        cfg.options.sort();
        Ok(cfg)
    }

    /// The next cell of the experiment's grid (one arm, setting and seed), called
    /// `key`: `compute` runs it, pushing its curves to `metrics`. Without a sweep it
    /// simply runs; in a shard it runs only when the shard owns the cell (the others
    /// give placeholders); in a merge it is replayed from the shards' records.
    pub fn cell<T: CellValue>(
        &self,
        key: &str,
        metrics: &mut Metrics,
        compute: impl FnOnce(&mut Metrics) -> Result<T>,
    ) -> Result<T> {
        match &self.sweep {
            None => compute(metrics),
            Some(s) => s.cell(key, metrics, compute),
        }
    }

    /// A score every shard needs before it can go on, called `key`: a validation
    /// score that chooses the hyper-parameter of the cells after it. Every shard
    /// computes it and records it; a resumed shard and the merge give back the
    /// record instead of training again. Without a sweep it simply runs.
    pub fn shared_score(
        &self,
        key: &str,
        compute: impl FnOnce() -> tensor::Result<f64>,
    ) -> tensor::Result<f64> {
        let run = |_: &mut Metrics| -> Result<Vec<(String, f64)>> {
            Ok(vec![("score".to_string(), compute()?)])
        };
        let mut metrics = Metrics::default();
        let numbers = match &self.sweep {
            None => run(&mut metrics)?,
            Some(s) => s.shared_cell(key, &mut metrics, run)?,
        };
        Ok(crate::sweep::field(&numbers, "score")?)
    }

    /// Rejects experiment-specific options the experiment does not know.
    pub fn check_known(&self, experiment: &str, known: &[(&str, &str)]) -> Result<()> {
        for k in self.extra.keys() {
            if !known.iter().any(|(n, _)| n == k) {
                let list: Vec<&str> = known.iter().map(|(n, _)| *n).collect();
                return Err(Error::usage(format!(
                    "{experiment} has no option --{k} (its options: {})",
                    if list.is_empty() {
                        "none".into()
                    } else {
                        list.join(", ")
                    }
                )));
            }
        }
        Ok(())
    }

    /// Whether the experiment option `key` was given.
    pub fn has(&self, key: &str) -> bool {
        self.extra.contains_key(key)
    }

    /// An experiment option parsed as `T`, or `default` when absent.
    pub fn opt<T: std::str::FromStr>(&self, key: &str, default: T) -> Result<T> {
        match self.extra.get(key) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| Error::usage(format!("--{key}: cannot parse '{v}'"))),
        }
    }

    /// A comma-separated list option (an empty value is an empty list).
    pub fn opt_list<T: std::str::FromStr + Clone>(
        &self,
        key: &str,
        default: &[T],
    ) -> Result<Vec<T>> {
        match self.extra.get(key) {
            None => Ok(default.to_vec()),
            Some(v) if v.trim().is_empty() => Ok(Vec::new()),
            Some(v) => v
                .split(',')
                .map(|s| {
                    s.trim()
                        .parse()
                        .map_err(|_| Error::usage(format!("--{key}: cannot parse '{s}'")))
                })
                .collect(),
        }
    }

    /// `--key` as a count that must be at least 1 (sizes, epochs, steps): zero is an
    /// error naming the option, before any work.
    pub fn opt_positive(&self, key: &str, default: usize) -> Result<usize> {
        let v: usize = self.opt(key, default)?;
        if v == 0 {
            return Err(Error::usage(format!("--{key} must be at least 1, got 0")));
        }
        Ok(v)
    }

    /// The seeds to run: `--seeds`, else `quick` or `full` by setting.
    /// Seeds past `u64::MAX` are an error, not a silent wrap to 0.
    pub fn seed_list(&self, quick: usize, full: usize) -> Result<Vec<u64>> {
        let n = self.seeds.unwrap_or(if self.quick { quick } else { full });
        (0..n as u64)
            .map(|i| {
                self.seed.checked_add(i).ok_or_else(|| {
                    Error::usage(format!(
                        "--seed {} with {n} seeds runs past the largest seed, {}",
                        self.seed,
                        u64::MAX
                    ))
                })
            })
            .collect()
    }

    /// A copy of these options whose run folder for `experiment` is created now,
    /// before any training: an unwritable `--out` fails in the first second, and
    /// the folder's name is taken before the run starts.
    pub fn prepare_run_dir(&self, experiment: &str) -> Result<RunConfig> {
        let dir = self.new_dir(experiment)?;
        Ok(RunConfig {
            prepared: Some((experiment.to_string(), dir)),
            ..self.clone()
        })
    }

    /// The folder an experiment writes its results to: the one prepared for it
    /// (see [`RunConfig::prepare_run_dir`]), or a new one for a caller that did not
    /// prepare it.
    pub fn run_dir(&self, experiment: &str) -> Result<RunDir> {
        match &self.prepared {
            Some((name, dir)) if name == experiment => Ok(dir.clone()),
            _ => self.new_dir(experiment),
        }
    }

    fn new_dir(&self, experiment: &str) -> Result<RunDir> {
        let mut dir = match &self.resume_in {
            Some(path) => RunDir {
                path: path.clone(),
                role: Role::Shard,
            },
            None => RunDir::create(&self.out, experiment, &self.run_id())?,
        };
        dir.role = match &self.sweep {
            None => Role::Whole,
            Some(s) if s.is_shard() => Role::Shard,
            Some(_) => Role::Merged,
        };
        Ok(dir)
    }

    /// The prepared run folder, if any (the runner removes it when the run fails
    /// before writing anything).
    pub fn prepared_dir(&self) -> Option<&RunDir> {
        self.prepared.as_ref().map(|(_, d)| d)
    }

    /// The run identifier: UTC time, seed and setting.
    pub fn run_id(&self) -> String {
        let role = match (&self.sweep, self.shard) {
            (Some(s), Some(shard)) if s.is_shard() => {
                format!("-shard{}of{}", shard.index, shard.count)
            }
            (Some(_), _) => "-merged".into(),
            _ => String::new(),
        };
        format!(
            "{}-seed{}{}{role}",
            utc_stamp(),
            self.seed,
            if self.quick { "-quick" } else { "" }
        )
    }
}

/// The most worker threads a run may start: 8 per logical CPU available, unless
/// the environment variable `MODELS_MAX_THREADS` says otherwise.
pub fn max_threads() -> usize {
    std::env::var("MODELS_MAX_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| 8 * std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// `n` as a worker-thread count: at least 1 and at most [`max_threads`].
pub fn check_threads(n: usize) -> Result<usize> {
    let max = max_threads();
    if n == 0 {
        return Err(Error::usage("--threads must be at least 1"));
    }
    if n > max {
        return Err(Error::usage(format!(
                "--threads {n}: at most {max} (8 per logical CPU available; set MODELS_MAX_THREADS to allow more)"
            ),
        ));
    }
    Ok(n)
}

/// `YYYYMMDD-HHMMSS` in UTC (for folder names and manifests; never used as a
/// seed).
pub fn utc_stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
