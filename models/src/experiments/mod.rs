//! The experiments, and the registry the command line dispatches through.

pub mod cifar;
pub mod closed_form;
pub mod diabetes;
pub mod digits;
pub mod fno_burgers;
pub mod images;
pub mod lift;
pub mod llqr_sam;
pub mod seq2seq;
mod sharding;
pub mod vit;

use crate::cli::RunConfig;
use crate::error::{Error, Result};
use crate::provenance::{run_description, Manifest};
use crate::report::Table;
use crate::sweep::Sweep;
use std::sync::Arc;

pub use sharding::{merge, resume};

/// A registered experiment.
pub struct Experiment {
    /// Name on the command line.
    pub name: &'static str,
    /// One line saying what it shows.
    pub about: &'static str,
    /// Part of `demo` (its quick setting).
    pub in_demo: bool,
    /// Its own options (`--key value`), with help.
    pub options: &'static [(&'static str, &'static str)],
    /// Reads files from `--data DIR` (for the others `--data` is an error, not
    /// silently ignored).
    pub reads_data: bool,
    /// Walks its grid through [`RunConfig::cell`], so `--shard i/n` and
    /// `models merge` work on it.
    pub shards: bool,
    /// Runs it, returning the result tables.
    pub run: fn(&RunConfig) -> Result<Vec<Table>>,
}

/// Every experiment, in the order `list` and `demo` show them.
pub fn registry() -> Vec<Experiment> {
    vec![
        Experiment {
            name: "digits",
            about: "MLP classifier on the UCI digits: SGD vs Adam, cross-entropy vs squared loss on one-hot targets",
            in_demo: false,
            options: digits::OPTIONS,
            reads_data: true,
            shards: true,
            run: digits::run,
        },
        Experiment {
            name: "mnist",
            about: "MLP classifier on 10,000 real MNIST digits: SGD vs Adam, cross-entropy vs squared loss on one-hot targets",
            in_demo: true,
            options: digits::MNIST_OPTIONS,
            reads_data: true,
            shards: true,
            run: digits::run_mnist,
        },
        Experiment {
            name: "diabetes",
            about: "MLP regression on the diabetes set: SGD vs Adam against the mean predictor",
            in_demo: true,
            options: diabetes::OPTIONS,
            reads_data: false,
            shards: true,
            run: diabetes::run,
        },
        Experiment {
            name: "closed-form-regression",
            about: "closed-form proximal last layer vs SGD, Adam and per-batch ridge on molecular energies and diabetes, across batch sizes",
            in_demo: true,
            options: closed_form::regression::OPTIONS,
            reads_data: false,
            shards: true,
            run: closed_form::regression::run,
        },
        Experiment {
            name: "closed-form-classification",
            about: "real MNIST with squared loss and a closed-form last layer vs cross-entropy and squared-loss SGD, across batch sizes",
            in_demo: true,
            options: closed_form::classification::OPTIONS,
            reads_data: true,
            shards: true,
            run: closed_form::classification::run,
        },
        Experiment {
            name: "closed-form-pairs",
            about: "100 classes (MNIST pairs, label 10a + b): the closed-form heads over SGD and Adam backbones vs cross-entropy and the squared loss, epoch-matched across batch sizes",
            in_demo: false,
            options: closed_form::pairs::OPTIONS,
            reads_data: false,
            shards: true,
            run: closed_form::pairs::run,
        },
        Experiment {
            name: "closed-form-classes",
            about: "closed-form head on one-hot targets vs cross-entropy as the number of classes grows (Gaussian mixture, fixed samples per class)",
            in_demo: false,
            options: closed_form::classes::OPTIONS,
            reads_data: false,
            shards: true,
            run: closed_form::classes::run,
        },
        Experiment {
            name: "closed-form-one-step",
            about: "frozen random backbone: loss after one closed-form step vs one gradient step at the best step size, against the features' condition number",
            in_demo: true,
            options: closed_form::one_step::OPTIONS,
            reads_data: false,
            shards: false,
            run: closed_form::one_step::run,
        },
        Experiment {
            name: "dfiv",
            about: "deep feature IV regression on the demand design: per-batch ridge stages with and without DFIV's final full refit vs proximal closed-form heads (structural MSE, wall time)",
            in_demo: false,
            options: closed_form::dfiv::OPTIONS,
            reads_data: false,
            shards: true,
            run: closed_form::dfiv::run,
        },
        Experiment {
            name: "cifar",
            about: "ResNet-18/34, VGG16-BN or WRN on CIFAR-10/100 (--data DIR) or real MNIST padded to 32×32×3: SGD, Adam, SAM, LLQR+SAM and a closed-form head",
            in_demo: false,
            options: cifar::OPTIONS,
            reads_data: true,
            shards: true,
            run: cifar::run,
        },
        Experiment {
            name: "fno-burgers",
            about: "Fourier neural operator on Burgers (generated in Rust): Adam on the relative L2 loss, Adam and SGD on the squared loss, per-batch ridge and proximal closed-form heads, across batch sizes",
            in_demo: true,
            options: fno_burgers::OPTIONS,
            reads_data: true,
            shards: true,
            run: fno_burgers::run,
        },
        Experiment {
            name: "lift-ebm-1d",
            about: "log-concave 1-D EBMs (Gumbel, Laplace) with an ICNN energy: PGD vs softplus vs the lift, and the controls: learned-code lift, softplus with the latents' lr × M, width-matched softplus (TV, NLL, shoulder occupancy)",
            in_demo: true,
            options: lift::ebm1d::OPTIONS,
            reads_data: false,
            shards: true,
            run: lift::ebm1d::run,
        },
        Experiment {
            name: "lift-flow-2d",
            about: "convex potential flows on 8 Gaussians and 2 spirals: PGD vs softplus vs the lift, and the same controls (test NLL vs entropy)",
            in_demo: true,
            options: lift::flow2d::OPTIONS,
            reads_data: false,
            shards: true,
            run: lift::flow2d::run,
        },
        Experiment {
            name: "lift-ebm-latent",
            about: "log-concave EBM on the 32-D codes of a conv autoencoder trained on real MNIST: PGD vs softplus vs the lift (test NLL, log Z by importance sampling with its standard error)",
            in_demo: false,
            options: lift::latent::OPTIONS,
            reads_data: false,
            shards: true,
            run: lift::latent::run,
        },
        Experiment {
            name: "lift-flow-tabular",
            about: "21-D convex potential flow (exact 21×21 log-det) on HEPMASS with MAF's preprocessing (--data DIR) or a built-in stand-in with exact entropy: PGD vs softplus vs the lift, the learned-code and step-size controls (test NLL)",
            in_demo: false,
            options: lift::tabular::OPTIONS,
            reads_data: true,
            shards: true,
            run: lift::tabular::run,
        },
        Experiment {
            name: "llqr-sam",
            about: "MNIST MLP or CNN trained until the noisy labels are memorised: SGD, SAM and LLQR+SAM (also F-SAM, Fisher-SAM, LLQR alone, LLQR+F-SAM) at 0-80 % label noise, ρ chosen on validation; U's effect on a held-out gradient, its spread and the cost per step",
            in_demo: true,
            options: llqr_sam::classify::OPTIONS,
            reads_data: true,
            shards: true,
            run: llqr_sam::classify::run,
        },
        Experiment {
            name: "seq2seq",
            about: "encoder-decoder Transformer on a synthetic language pair (or --data parallel text): Adam with inverse-sqrt warm-up, SAM, LLQR+SAM; BLEU of greedy and beam-search translations",
            in_demo: false,
            options: seq2seq::OPTIONS,
            reads_data: true,
            shards: true,
            run: seq2seq::run,
        },
        Experiment {
            name: "vit",
            about: "Vision Transformer (ViT-Tiny preset; 2 layers and 8-pixel patches in the quick setting) on the cifar images: AdamW, SAM around AdamW, LLQR+SAM",
            in_demo: false,
            options: vit::OPTIONS,
            reads_data: true,
            shards: true,
            run: vit::run,
        },
        Experiment {
            name: "llqr-premise",
            about: "whether U, learned by LlqrSam at the authors' inner settings, reaches the curvature it should invert: a 32-D quadratic (Newton) and a softmax regression (NGD) whose curvatures are known in closed form",
            in_demo: false,
            options: llqr_sam::premise::OPTIONS,
            reads_data: false,
            shards: false,
            run: llqr_sam::premise::run,
        },
        Experiment {
            name: "pothole",
            about: "two-scale landscape: which optimisers escape a narrow dip in a broad bowl, and the SAM/LLQR+SAM hovering amplitudes vs closed forms",
            in_demo: false,
            options: llqr_sam::pothole::OPTIONS,
            reads_data: false,
            shards: false,
            run: llqr_sam::pothole::run,
        },
    ]
}

/// Runs one experiment with its run folder created first (an unwritable `--out`
/// fails before any training); a run that fails before writing anything leaves no
/// empty folder behind.
pub fn run_experiment(e: &Experiment, cfg: &RunConfig) -> Result<Vec<Table>> {
    if let Some(path) = &cfg.trace {
        let mut inner = cfg.clone();
        inner.trace = None;
        let header = run_description(e.name, e.options, cfg);
        return Ok(autograd::trace::traced(
            path,
            cfg.trace_values_step,
            header,
            || Ok(run_experiment(e, &inner)?),
        )?);
    }
    if let (Some(dir), false) = (&cfg.data, e.reads_data) {
        return Err(Error::usage(format!(
                "{} reads no data, so --data {} would be ignored (the experiments that read --data: {})",
                e.name,
                dir.display(),
                names_where(|e| e.reads_data)
            ),
        ));
    }
    if let (Some(shard), false) = (cfg.shard, e.shards) {
        return Err(Error::usage(format!(
                "{} does not walk its grid cell by cell, so --shard {}/{} cannot split it (the experiments that shard: {})",
                e.name,
                shard.index,
                shard.count,
                names_where(|e| e.shards)
            ),
        ));
    }
    let mut cfg = cfg.clone();
    if let (Some(shard), None) = (cfg.shard, &cfg.sweep) {
        cfg.sweep = Some(Arc::new(Sweep::shard(shard)));
    }
    let manifest = Manifest::start();
    let cfg = cfg.prepare_run_dir(e.name)?;
    if let (Some(sweep), Some(dir)) = (&cfg.sweep, cfg.prepared_dir()) {
        sweep.keep_journal(&dir.path, e.name, &cfg.options)?;
    }
    let out = (e.run)(&cfg).and_then(|tables| sharding::finish_sweep(e, &cfg, tables));
    let Some(dir) = cfg.prepared_dir() else {
        return out;
    };
    match &out {
        Ok(tables) => {
            dir.write_evidence(tables)?;
            manifest.write(&dir.path, e.name, e.options, &cfg, "completed")?
        }
        Err(err) => {
            // Succeeds only on an empty folder: partial results are kept, with
            // the manifest saying how the run ended.
            if std::fs::remove_dir(&dir.path).is_err() {
                let failed = format!("failed: {err}");
                manifest.write(&dir.path, e.name, e.options, &cfg, &failed)?;
            }
        }
    }
    out
}

/// The names of the registered experiments for which `has` holds, for the errors
/// that point a user to them.
fn names_where(has: impl Fn(&Experiment) -> bool) -> String {
    let names: Vec<&str> = registry()
        .iter()
        .filter(|e| has(e))
        .map(|e| e.name)
        .collect();
    names.join(", ")
}

/// Runs the quick setting of every demo experiment, one after another, then prints
/// the summary: every comparison of the run that tests a paper's claim, with its
/// verdict by the stated rule, and one verdict per claim (also written to
/// `OUT/demo/<run-id>/table.txt`).
pub fn demo(cfg: &RunConfig) -> Result<Vec<Table>> {
    cfg.check_known("demo", &[])?;
    if cfg.data.is_some() {
        return Err(tensor::Error::value(
            "demo",
            "the demo runs every experiment on its built-in data: --data is for one experiment",
        )
        .into());
    }
    if cfg.shard.is_some() {
        return Err(tensor::Error::value(
            "demo",
            "the demo runs every experiment once: --shard is for one experiment's sweep",
        )
        .into());
    }
    let mut quick = cfg.clone();
    quick.quick = true;
    let mut tables = Vec::new();
    for e in registry().into_iter().filter(|e| e.in_demo) {
        eprintln!("== {}: {}", e.name, e.about);
        // One trace per experiment: `--trace P` writes P.<experiment>.csv.
        let mut one = quick.clone();
        one.trace = cfg
            .trace
            .as_ref()
            .map(|p| p.with_extension(format!("{}.csv", e.name)));
        let t = run_experiment(&e, &one)?;
        for table in &t {
            println!("{}", table.render());
        }
        tables.extend(t);
    }
    let evidence: Vec<_> = tables.iter().flat_map(|t| t.evidence.clone()).collect();
    // The committed full-setting verdicts beside the quick run's; a results/
    // that cannot be read is said, not fatal to the demo.
    let kept = match crate::results::entries(&crate::results::default_root()) {
        Ok(entries) => Some(crate::results::claims::tallies(&entries)),
        Err(e) => {
            eprintln!("demo: the verdicts from results/ are not shown: {e}");
            None
        }
    };
    let summary = crate::report::evidence::summary(&evidence, kept.as_deref());
    for table in &summary {
        println!("{}", table.render());
    }
    let dir = cfg.prepare_run_dir("demo")?.run_dir("demo")?;
    dir.write_tables(&summary)?;
    eprintln!("demo: summary in {}", dir.path.display());
    tables.extend(summary);
    Ok(tables)
}
