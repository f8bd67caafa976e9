//! Audit traces of whole runs: `--trace PATH` on any experiment, `trace-diff A B`,
//! and `determinism-check EXP`, which runs an experiment's quick setting at 1 and 2
//! threads with tracing on and names the first op where the runs part.

use crate::cli::RunConfig;
use crate::error::{Error, Result};
use crate::experiments::{run_experiment, Experiment};
use crate::provenance::run_description;
use autograd::trace::{diff, header_differences, traced, Divergence, Trace};
use std::path::Path;

/// Compares two trace files: where they part, and the header entries (options,
/// build, machine, kernel path) in which the two runs differ — all but the command
/// line, which differs at least by the trace's own path.
pub fn trace_diff(a: &Path, b: &Path) -> Result<(Divergence, Vec<String>)> {
    let (a, b) = (Trace::read(a)?, Trace::read(b)?);
    let notes = header_differences(&a, &b)
        .into_iter()
        .filter(|n| !n.starts_with("command line: "))
        .collect();
    Ok((diff(&a, &b), notes))
}

/// Runs `e`'s quick setting once per thread count in `threads`, each in its own
/// worker pool with tracing on, and compares every trace with the first. The runs
/// write to folders under `cfg.out`; their traces go beside them.
pub fn determinism_check(
    e: &Experiment,
    cfg: &RunConfig,
    threads: &[usize],
) -> Result<Vec<(usize, Divergence)>> {
    if threads.len() < 2 || threads.contains(&0) {
        return Err(Error::usage(format!(
            "needs at least two positive thread counts, got {threads:?}"
        )));
    }
    let mut quick = cfg.clone();
    quick.quick = true;
    quick.quiet = true;
    let dir = quick
        .prepare_run_dir("determinism-check")?
        .run_dir("determinism-check")?;
    let mut traces = Vec::new();
    for &n in threads {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|err| Error::usage(format!("cannot start {n} threads: {err}")))?;
        let path = dir.path.join(format!("{}-{n}threads.trace.csv", e.name));
        let mut run = quick.clone();
        run.trace = None;
        run.out = dir.path.join(format!("{n}threads"));
        let header = run_description(e.name, e.options, &run);
        pool.install(|| {
            traced(&path, cfg.trace_values_step, header, || {
                Ok(run_experiment(e, &run)?)
            })
        })?;
        traces.push((n, Trace::read(&path)?));
    }
    let (_, first) = &traces[0];
    Ok(traces[1..]
        .iter()
        .map(|(n, t)| (*n, diff(first, t)))
        .collect())
}
