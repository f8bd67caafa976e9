//! `models <experiment> [options]`: runs an experiment and prints its table.
#![forbid(unsafe_code)]

use models::cli::RunConfig;
use models::error::{Error, Result};
use models::experiments::{demo, registry, run_experiment};

const COMMON: &str = "common options: --seed N  --seeds N  --threads N  --quick  --out DIR (runs)  --data DIR  --quiet  --shard i/n (run the i-th of n slices of the grid, from 0; see merge)  --trace FILE (audit trace: every op, its shape and output hash)  --trace-values-step N (keep that step's values)";

fn usage() -> String {
    let commands = [
        ("list", "this list"),
        ("--version", "the version, git commit, compiler, target and kernel path"),
        ("demo", "the quick setting of every demo experiment"),
        ("trace-diff A B", "the first op where two audit traces part"),
        (
            "merge DIR... [--out DIR]",
            "the tables, metrics and plot of a sweep from all its --shard i/n folders (or the sweep's folder)",
        ),
        (
            "resume SHARD_DIR [--threads N]",
            "finishes a killed shard from its journal: its finished cells are kept",
        ),
        (
            "keep RUN_DIR [--as SETTING] [--results DIR]",
            "makes results/<experiment>/<setting> from a finished run (default setting: quick or full)",
        ),
        (
            "report [DIR] [--readme FILE]",
            "the claims table from the committed runs in results/ (or DIR), verdicts recomputed",
        ),
        (
            "determinism-check EXP",
            "EXP's quick setting at 1 and 2 threads, traced: bit-identical or the first divergent op",
        ),
    ];
    let experiments: Vec<(&str, &str)> = registry().iter().map(|e| (e.name, e.about)).collect();
    let width = commands
        .iter()
        .chain(&experiments)
        .map(|(n, _)| n.len())
        .max()
        .unwrap_or(0);
    let mut s = String::from("usage: models <experiment> [options]   (models <experiment> --help for its options)\n\ncommands:\n");
    for (n, about) in commands {
        s.push_str(&format!("  {n:<width$}  {about}\n"));
    }
    s.push_str("\nexperiments:\n");
    for (n, about) in experiments {
        s.push_str(&format!("  {n:<width$}  {about}\n"));
    }
    s.push_str(&format!("\n{COMMON}\n"));
    s
}

/// `models EXP --help`: what the experiment compares, its options with their
/// defaults, and the common options.
fn experiment_help(e: &models::experiments::Experiment) -> String {
    let mut s = format!("models {} [options]\n\n{}\n\noptions:\n", e.name, e.about);
    let width = e.options.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, help) in e.options {
        s.push_str(&format!("  --{k:<width$}  {help}\n"));
    }
    if e.options.is_empty() {
        s.push_str("  (none of its own)\n");
    }
    s.push_str(&format!("\n{COMMON}\n"));
    s
}

/// The registered experiment called `name`.
fn find(name: &str) -> Result<models::experiments::Experiment> {
    registry()
        .into_iter()
        .find(|e| e.name == name)
        .ok_or_else(|| Error::usage(format!("unknown experiment '{name}'; run `models list`")))
}

/// `trace-diff A B`: prints where two traces part; fails (exit 1) when they do.
fn trace_diff(args: &[String]) -> Result<bool> {
    let [a, b] = args else {
        return Err(Error::usage("usage: models trace-diff A.csv B.csv"));
    };
    let (d, differences) = models::audit::trace_diff(a.as_ref(), b.as_ref())?;
    for note in differences {
        println!("note: the runs differ in {note}");
    }
    println!("{d}");
    Ok(matches!(d, autograd::trace::Divergence::Identical { .. }))
}

/// `determinism-check EXP [options]`: EXP's quick setting at 1 and 2 threads.
fn determinism_check(args: &[String]) -> Result<bool> {
    let name = args
        .first()
        .ok_or_else(|| Error::usage("usage: models determinism-check EXP [options]"))?;
    let cfg = RunConfig::parse(&args[1..])?;
    let e = find(name)?;
    let mut same = true;
    for (n, d) in models::audit::determinism_check(&e, &cfg, &[1, 2])? {
        println!("{name}, 1 vs {n} threads: {d}");
        same &= matches!(d, autograd::trace::Divergence::Identical { .. });
    }
    Ok(same)
}

/// A command's positional arguments and its `(option, value)` pairs.
type CommandArgs = (Vec<String>, Vec<(String, String)>);

/// A command's arguments: its positional ones, and the values of the options it
/// accepts (`--key value` or `--key=value`); any other option is an error naming
/// `usage`.
fn command_args(
    command: &'static str,
    usage: &str,
    args: &[String],
    accepted: &[&str],
) -> Result<CommandArgs> {
    let (mut positional, mut options) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < args.len() {
        match args[i].strip_prefix("--") {
            Some(option) => {
                let (key, value) = match option.split_once('=') {
                    Some((k, v)) => (k.to_string(), v.to_string()),
                    None => {
                        i += 1;
                        let v = args.get(i).ok_or_else(|| {
                            Error::usage(format!("{command}: --{option} needs a value"))
                        })?;
                        (option.to_string(), v.clone())
                    }
                };
                if !accepted.contains(&key.as_str()) {
                    return Err(Error::usage(format!(
                        "{command}: unknown option '--{key}' (usage: {usage})"
                    )));
                }
                options.push((key, value));
            }
            None => positional.push(args[i].clone()),
        }
        i += 1;
    }
    Ok((positional, options))
}

/// The last value given for `key`.
fn option<'a>(options: &'a [(String, String)], key: &str) -> Option<&'a str> {
    options
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// `merge DIR... [--out DIR]`: rebuilds a sharded sweep's tables and plot.
fn merge(args: &[String]) -> Result<()> {
    let usage = "models merge SHARD_DIR... [--out DIR]";
    let (dirs, options) = command_args("merge", usage, args, &["out"])?;
    let out = option(&options, "out").unwrap_or("runs");
    let dirs: Vec<std::path::PathBuf> = dirs.iter().map(Into::into).collect();
    for table in models::experiments::merge(&dirs, out.as_ref())? {
        println!("{}", table.render());
    }
    Ok(())
}

/// `resume SHARD_DIR [--threads N]`: finishes a killed shard.
fn resume(args: &[String]) -> Result<()> {
    let usage = "models resume SHARD_DIR [--threads N]";
    let (dirs, options) = command_args("resume", usage, args, &["threads"])?;
    let [dir] = dirs.as_slice() else {
        return Err(Error::usage(format!("usage: {usage}")));
    };
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(n) = option(&options, "threads") {
        let n: usize = n
            .parse()
            .map_err(|_| Error::usage(format!("resume: --threads expects a count, got '{n}'")))?;
        pool = pool.num_threads(models::cli::check_threads(n)?);
    }
    let pool = pool.build().map_err(|e| {
        tensor::Error::limit("threads", format!("cannot start the worker threads: {e}"))
    })?;
    pool.install(|| models::experiments::resume(dir.as_ref()))
}

/// `keep RUN_DIR [--as SETTING] [--results DIR]`: a new results/ entry.
fn keep(args: &[String]) -> Result<()> {
    let usage = "models keep RUN_DIR [--as SETTING] [--results DIR]";
    let (dirs, options) = command_args("keep", usage, args, &["as", "results"])?;
    let [dir] = dirs.as_slice() else {
        return Err(Error::usage(format!("usage: {usage}")));
    };
    let root = option(&options, "results").map_or_else(models::results::default_root, Into::into);
    let entry = models::results::keep::keep(dir.as_ref(), &root, option(&options, "as"))?;
    println!("kept {} as {}", dir, entry.display());
    Ok(())
}

/// `report [DIR]`: the claims table from results/.
fn report(args: &[String]) -> Result<()> {
    let usage = "models report [RESULTS_DIR] [--readme FILE]";
    let (dirs, options) = command_args("report", usage, args, &["readme"])?;
    let root = match dirs.as_slice() {
        [] => models::results::default_root(),
        [d] => d.into(),
        _ => return Err(Error::usage(format!("usage: {usage}"))),
    };
    let tables = models::results::claims::report(&root)?;
    let report = models::results::claims::render(&tables);
    print!("{report}");
    if let Some(path) = option(&options, "readme") {
        let io = |e: std::io::Error| Error::Engine(tensor::Error::io(path.to_string(), &e));
        let readme = std::fs::read_to_string(path).map_err(io)?;
        std::fs::write(
            path,
            models::results::claims::with_section(
                &readme,
                &models::results::claims::readme_section(&tables),
            )?,
        )
        .map_err(io)?;
        models::results::index::write(&root)?;
        eprintln!(
            "report: the claims section of {path} now holds this report; {} regenerated",
            root.join("README.md").display()
        );
    }
    Ok(())
}

fn run(args: &[String]) -> Result<()> {
    let name = args.first().map(String::as_str).unwrap_or("list");
    let rest = &args[args.len().min(1)..];
    if matches!(name, "--version" | "-V") {
        println!(
            "{}",
            models::provenance::Provenance::current().version_line()
        );
        return Ok(());
    }
    let verdict = match name {
        "trace-diff" => Some(trace_diff(rest)?),
        "determinism-check" => Some(determinism_check(rest)?),
        _ => None,
    };
    if let Some(same) = verdict {
        if !same {
            std::process::exit(1);
        }
        return Ok(());
    }
    if rest.iter().any(|a| a == "--help" || a == "-h") {
        let help = match name {
            "merge" => Some("usage: models merge SHARD_DIR... [--out DIR]\n\nEvery folder written by one sweep's `--shard i/n` runs (i = 0 … n-1, each once), all with the same options and build — or the sweep's folder, searched two levels down; writes the tables, metrics.csv, plot.svg and evidence.txt an unsharded run would write to OUT/<experiment>/<id>-merged, whose manifest names the shards."),
            "resume" => Some("usage: models resume SHARD_DIR [--threads N]\n\nA shard killed half-way keeps its finished cells in SHARD_DIR/cells.partial; this runs the rest, with the same experiment, options and build, in the same folder, then writes its cells.txt."),
            "keep" => Some("usage: models keep RUN_DIR [--as SETTING] [--results DIR]\n\nCopies a finished whole or merged run (clean tree) into RESULTS/<experiment>/<SETTING> (default: results/ and the run's quick or full): manifest, tables, evidence, figures and metrics thinned to at most 200 points per curve; never overwrites an entry; refreshes RESULTS/README.md."),
            "report" => Some("usage: models report [RESULTS_DIR] [--readme FILE]\n\nReads every entry of results/ (refusing one whose manifest is missing, of another experiment, from a dirty tree, unfinished, or a lone shard), recomputes every comparison's verdict and prints the claims table; --readme FILE also writes it into FILE's claims section (the top-level README's is tested to equal it) and regenerates RESULTS_DIR/README.md."),
            _ => None,
        };
        if let Some(help) = help {
            println!("{help}");
            return Ok(());
        }
        match name {
            "list" | "help" | "demo" => print!("{}", usage()),
            _ => print!("{}", experiment_help(&find(name)?)),
        }
        return Ok(());
    }
    match name {
        "merge" => return merge(rest),
        "resume" => return resume(rest),
        "keep" => return keep(rest),
        "report" => return report(rest),
        _ => {}
    }
    let cfg = RunConfig::parse(rest)?;
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(n) = cfg.threads {
        pool = pool.num_threads(n);
    }
    let pool = pool.build().map_err(|e| {
        tensor::Error::limit("threads", format!("cannot start the worker threads: {e}"))
    })?;
    // The experiment runs on a worker of the pool, not beside it: on a machine with
    // as many cores as workers, a separate main thread would compete with workers
    // that spin between small parallel kernels.
    pool.install(|| dispatch(name, &cfg))
}

fn dispatch(name: &str, cfg: &RunConfig) -> Result<()> {
    match name {
        "list" | "help" | "--help" | "-h" => print!("{}", usage()),
        "demo" => {
            demo(cfg)?;
        }
        _ => {
            let e = find(name)?;
            for table in run_experiment(&e, cfg)? {
                println!("{}", table.render());
            }
        }
    }
    Ok(())
}

/// Exit status 2 for a usage mistake (the command line), 1 for any other error.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("error: {e}");
        std::process::exit(if e.is_usage() { 2 } else { 1 });
    }
}
