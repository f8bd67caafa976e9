//! `models <experiment> [options]`: runs an experiment and prints its table.
#![forbid(unsafe_code)]

use models::cli::RunConfig;
use models::experiments::{demo, registry, run_experiment};

const COMMON: &str = "common options: --seed N  --seeds N  --threads N  --quick  --out DIR (runs)  --data DIR  --quiet";

fn usage() -> String {
    let mut s = String::from("usage: models <experiment> [options]\n\nexperiments:\n");
    s.push_str(
        "  list        this list\n  demo        the quick setting of every demo experiment\n",
    );
    for e in registry() {
        s.push_str(&format!("  {:<11} {}\n", e.name, e.about));
    }
    s.push_str(&format!("\n{COMMON}\n"));
    s
}

fn run(args: &[String]) -> tensor::Result<()> {
    let name = args.first().map(String::as_str).unwrap_or("list");
    let cfg = RunConfig::parse(&args[args.len().min(1)..])?;
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(n) = cfg.threads {
        pool = pool.num_threads(n);
    }
    let pool = pool.build().map_err(|e| {
        tensor::Error::value("models", format!("cannot start the worker threads: {e}"))
    })?;
    // The experiment runs on a worker of the pool, not beside it: on a machine with
    // as many cores as workers, a separate main thread would compete with workers
    // that spin between small parallel kernels.
    pool.install(|| dispatch(name, &cfg))
}

fn dispatch(name: &str, cfg: &RunConfig) -> tensor::Result<()> {
    match name {
        "list" | "help" | "--help" | "-h" => print!("{}", usage()),
        "demo" => {
            demo(cfg)?;
        }
        _ => {
            let e = registry()
                .into_iter()
                .find(|e| e.name == name)
                .ok_or_else(|| {
                    tensor::Error::value(
                        "models",
                        format!("unknown experiment '{name}'; run `models list`"),
                    )
                })?;
            for table in run_experiment(&e, cfg)? {
                println!("{}", table.render());
            }
        }
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}
