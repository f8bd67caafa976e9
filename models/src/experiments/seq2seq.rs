//! `seq2seq`: the encoder–decoder Transformer trained for translation — on parallel
//! text given with `--data DIR` (`train.src`, `train.tgt`, `test.src`, `test.tgt`,
//! one sentence per line) or on the built-in synthetic language pair — by Adam with
//! the inverse-square-root warm-up, SAM around that Adam, and LLQR+SAM; corpus BLEU
//! (sacreBLEU's default definition) of greedy and beam-search translations of the
//! held-out sentences.

use crate::cli::RunConfig;
use crate::error::{Error, Result};
use crate::grid::Grid;
use crate::report::evidence::{Better, Claim, Evidence};
use crate::report::{Metrics, Plot, Table};
use crate::text::bleu::{corpus_bleu, tokenize_13a};
use crate::text::synthetic;
use crate::text::vocab::{Vocab, BOS, EOS, PAD};
use crate::train::set_mode;
use crate::train::{
    preconditioning_batch, train as train_loop, Batch, Batches, Budget, Hyper, Method, Plan,
    Preconditioning, Task, Training, CONVERGED_DAMPING,
};
use autograd::Var;
use nn::decode::{beam_search, greedy, DecodeConfig};
use nn::nets::transformer::{TokenBatch, Transformer, TransformerConfig};
use nn::{loss, ParamStore};
use optim::llqr::{Geometry, PerturbationNorm};
use optim::{Adam, AdamConfig, Optimizer, Schedule};
use std::path::Path;
use tensor::Rng;

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    ("pairs", "synthetic training pairs (quick 3000, full 20000)"),
    (
        "test-pairs",
        "synthetic held-out pairs, none seen in training (quick 200, full 1000)",
    ),
    (
        "optimisers",
        "comma-separated among adam, sam, llqr-sam (all)",
    ),
    ("dim", "model width (quick 64, full 256)"),
    ("heads", "attention heads (4)"),
    (
        "layers",
        "encoder and decoder layers each (quick 2, full 3)",
    ),
    ("norm", "pre or post (pre)"),
    ("dropout", "dropout (quick 0, full 0.1)"),
    (
        "epochs",
        "passes over the training pairs (quick 4, full 30)",
    ),
    ("batch", "sentence pairs per batch (64)"),
    (
        "lr",
        "Adam's peak learning rate after warm-up, β = (0.9, 0.98), for every arm (1e-3)",
    ),
    (
        "warmup",
        "warm-up steps of the inverse-square-root schedule (quick 100, full 1000)",
    ),
    ("rho", "SAM and LLQR+SAM radius (0.05)"),
    ("smoothing", "label smoothing (0.1)"),
    ("beam", "beam width of the second BLEU column (4)"),
    (
        "max-vocab",
        "largest joint vocabulary for --data text (16000)",
    ),
];

/// Parallel sentences.
pub struct Corpus {
    /// Training (source, target) pairs.
    pub train: Vec<(String, String)>,
    /// Held-out pairs.
    pub test: Vec<(String, String)>,
    /// Description for the table title.
    pub source: String,
}

fn read_lines(dir: &Path, name: &str) -> Result<Vec<String>> {
    let path = dir.join(name);
    let what = path.display().to_string();
    let text = std::fs::read_to_string(&path).map_err(|e| tensor::Error::io(&what, &e))?;
    Ok(text.lines().map(str::to_string).collect())
}

fn read_pairs(dir: &Path, split: &str) -> Result<Vec<(String, String)>> {
    let (src, tgt) = (
        read_lines(dir, &format!("{split}.src"))?,
        read_lines(dir, &format!("{split}.tgt"))?,
    );
    if src.len() != tgt.len() || src.is_empty() {
        return Err(tensor::Error::format(
            dir.display().to_string(),
            format!(
                "{split}.src has {} lines and {split}.tgt {}: they must be equal and non-zero",
                src.len(),
                tgt.len()
            ),
        )
        .into());
    }
    Ok(src.into_iter().zip(tgt).collect())
}

/// The corpus of a run: files from `dir`, or synthetic pairs with no test sentence
/// among the training ones.
pub fn corpus(dir: Option<&Path>, train: usize, test: usize) -> Result<Corpus> {
    match dir {
        Some(d) => Ok(Corpus {
            train: read_pairs(d, "train")?,
            test: read_pairs(d, "test")?,
            source: format!("parallel text from {}", d.display()),
        }),
        None => {
            let train = synthetic::pairs(train, 1)?;
            let seen: std::collections::HashSet<&String> = train.iter().map(|p| &p.0).collect();
            let test: Vec<(String, String)> = synthetic::pairs(4 * test + 100, 2)?
                .into_iter()
                .filter(|p| !seen.contains(&p.0))
                .take(test)
                .collect();
            Ok(Corpus {
                train,
                test,
                source: "the synthetic language pair (verb-final, noun–adjective order, case and agreement)".into(),
            })
        }
    }
}

/// An optimiser of the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Optimiser {
    /// Adam with the inverse-square-root schedule.
    Adam,
    /// SAM around that Adam.
    Sam,
    /// LLQR+SAM (NGD, diagonal U, ‖Ug‖₂) with its outer momentum SGD.
    LlqrSam,
}

impl Optimiser {
    fn parse(name: &str) -> Result<Self> {
        match name {
            "adam" => Ok(Optimiser::Adam),
            "sam" => Ok(Optimiser::Sam),
            "llqr-sam" => Ok(Optimiser::LlqrSam),
            _ => Err(Error::usage(format!(
                "unknown optimiser '{name}': expected adam, sam or llqr-sam"
            ))),
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Optimiser::Adam => "adam",
            Optimiser::Sam => "sam",
            Optimiser::LlqrSam => "llqr-sam",
        }
    }
}

/// Training settings.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The model.
    pub model: TransformerConfig,
    /// Passes over the training pairs.
    pub epochs: usize,
    /// Pairs per batch.
    pub batch: usize,
    /// Adam's peak rate.
    pub lr: f64,
    /// SAM radius, LLQR settings and the outer SGD rate of LLQR+SAM.
    pub hyper: Hyper,
    /// Warm-up steps.
    pub warmup: usize,
    /// Label smoothing.
    pub smoothing: f64,
    /// No progress lines.
    pub quiet: bool,
}

/// Encoded pairs: source ids, decoder inputs (`<bos>` + target) and labels
/// (target + `<eos>`).
struct Encoded {
    src: Vec<Vec<usize>>,
    tgt_in: Vec<Vec<usize>>,
    labels: Vec<Vec<usize>>,
}

fn encode(vocab: &Vocab, pairs: &[(String, String)]) -> Encoded {
    let mut e = Encoded {
        src: Vec::new(),
        tgt_in: Vec::new(),
        labels: Vec::new(),
    };
    for (s, t) in pairs {
        let labels = vocab.encode(t);
        let mut tgt_in = vec![BOS];
        tgt_in.extend_from_slice(&labels[..labels.len() - 1]);
        e.src.push(vocab.encode(s));
        e.tgt_in.push(tgt_in);
        e.labels.push(labels);
    }
    e
}

/// Logits of the non-padding target positions `[tokens, vocab]` and their labels.
fn batch_logits(
    model: &Transformer<f32>,
    data: &Encoded,
    idx: &[usize],
) -> Result<(Var<f32>, Vec<usize>)> {
    let pick =
        |v: &Vec<Vec<usize>>| -> Vec<Vec<usize>> { idx.iter().map(|&i| v[i].clone()).collect() };
    let (src, tgt) = (
        TokenBatch::new(&pick(&data.src), PAD)?,
        TokenBatch::new(&pick(&data.tgt_in), PAD)?,
    );
    let logits = model.forward(&src, &tgt)?;
    let v = logits.shape()[2];
    let rows: Vec<usize> = tgt
        .lengths
        .iter()
        .enumerate()
        .flat_map(|(b, &l)| (0..l).map(move |t| b * tgt.len + t))
        .collect();
    Ok((
        logits
            .reshape(&[tgt.batch() * tgt.len, v])?
            .index_select(0, &rows)?,
        batch_labels(data, idx),
    ))
}

/// The labels of the pairs at `idx`, in the order of [`batch_logits`]'s rows.
fn batch_labels(data: &Encoded, idx: &[usize]) -> Vec<usize> {
    idx.iter()
        .flat_map(|&i| data.labels[i].iter().copied())
        .collect()
}

/// What one arm produced.
pub struct ArmResult {
    /// BLEU of greedy translations.
    pub bleu_greedy: f64,
    /// BLEU of beam-search translations.
    pub bleu_beam: f64,
    /// Held-out sentences translated exactly (greedy), in percent.
    pub exact: f64,
    /// Mean training loss of the last epoch.
    pub train_loss: f64,
    /// Training seconds per epoch.
    pub seconds_per_epoch: f64,
    /// Example translations (source, reference, greedy output).
    pub examples: Vec<(String, String, String)>,
}

/// One arm's Transformer, update rule and encoded training pairs, as the trainer
/// drives them (scored after training, by decoding).
struct Translation<'a> {
    model: &'a Transformer<f32>,
    store: &'a ParamStore<f32>,
    training: Training<f32>,
    train: &'a Encoded,
    smoothing: f64,
    precond_batch: usize,
    precond_rng: Rng,
    series: String,
}

impl Task for Translation<'_> {
    fn set_lr_factor(&mut self, factor: f64) -> tensor::Result<()> {
        self.training.set_lr_factor(factor)
    }

    /// The inner solve sees the inference-mode model (no dropout) and the training
    /// loss's label smoothing, as the authors' refresh does.
    fn before_step(&mut self, step: usize, metrics: &mut Metrics) -> tensor::Result<()> {
        let (model, train, smoothing) = (self.model, self.train, self.smoothing);
        let (rng, count) = (&mut self.precond_rng, self.precond_batch);
        self.training.refresh_if_due(
            self.store,
            || {
                let pick = preconditioning_batch(rng, count, train.labels.len())?;
                let labels = batch_labels(train, &pick);
                Ok(Preconditioning {
                    logits: Box::new(
                        move || Ok(batch_logits(model, train, &pick).map(|(x, _)| x)?),
                    ),
                    labels,
                    smoothing,
                    held_out: None,
                })
            },
            (metrics, &self.series, step),
        )
    }

    fn step(&mut self, idx: &[usize]) -> tensor::Result<f64> {
        let (model, train, smoothing) = (self.model, self.train, self.smoothing);
        let loss = || {
            let (logits, labels) = batch_logits(model, train, idx)?;
            loss::cross_entropy(&logits, &labels, smoothing)
        };
        self.training.step(&Batch {
            loss: &loss,
            head: None,
        })
    }

    fn set_training(&self, on: bool) {
        set_mode(self.store, on)
    }
}

/// The update rule of `opt` over the parameters in `store`: Adam (β = (0.9, 0.98))
/// alone, or SAM or LLQR+SAM around it.
fn training(opt: Optimiser, store: &ParamStore<f32>, s: &Settings) -> Result<Training<f32>> {
    let adam = || -> Result<Box<dyn Optimizer<f32>>> {
        Ok(Box::new(Adam::new(
            store.trainable(),
            AdamConfig::adam(s.lr).betas(0.9, 0.98),
        )?))
    };
    Ok(match opt {
        Optimiser::Adam => Training::plain(adam()?),
        Optimiser::Sam => Training::around(Method::Sam, adam()?, &s.hyper)?,
        // LLQR+SAM hands U·∇L(θ⁺) to the same Adam, on the same schedule, as the
        // authors' Transformer runs do.
        Optimiser::LlqrSam => Training::around(
            Method::LlqrSam(Geometry::Fisher, PerturbationNorm::Euclidean),
            adam()?,
            &s.hyper,
        )?,
    })
}

/// Trains one arm and translates the held-out sentences.
pub fn train_arm(
    opt: Optimiser,
    corpus: &Corpus,
    vocab: &Vocab,
    s: &Settings,
    beam: usize,
    seed: u64,
    metrics: &mut Metrics,
) -> Result<ArmResult> {
    let train = encode(vocab, &corpus.train);
    let store = ParamStore::<f32>::new();
    let model = Transformer::new(
        &store.root().sub("transformer"),
        s.model,
        &mut Rng::new(seed),
    )?;
    let training = training(opt, &store, s)?;
    let series = format!("{}/seed{seed}", opt.tag());
    let mut plan = Plan::new(
        Budget::Epochs(s.epochs),
        Batches::Shuffled {
            samples: corpus.train.len(),
            size: s.batch,
            ragged: true,
        },
        series.clone(),
        s.quiet,
    );
    plan.schedule = Some(Schedule::InverseSqrt { warmup: s.warmup });
    let mut task = Translation {
        model: &model,
        store: &store,
        training,
        train: &train,
        smoothing: s.smoothing,
        precond_batch: s.hyper.precond_batch,
        precond_rng: Rng::new(seed + 2000),
        series,
    };
    let out = train_loop(&plan, &mut task, &mut Rng::new(seed + 1000), metrics)?;
    store.eval();
    let base = DecodeConfig {
        pad: PAD,
        bos: BOS,
        eos: EOS,
        max_len: 1,
    };
    let (mut greedy_out, mut beam_out, mut exact) = (Vec::new(), Vec::new(), 0usize);
    let mut examples = Vec::new();
    for (src, reference) in &corpus.test {
        let ids = vocab.encode(src);
        let cfg = DecodeConfig {
            max_len: decode_budget(ids.len(), s.model.max_len),
            ..base
        };
        let g = vocab.decode(&greedy(&model, &ids, &cfg)?);
        let b = vocab.decode(&beam_search(&model, &ids, beam, 0.6, &cfg)?);
        // The output is 13a tokens joined by spaces; so is the reference compared.
        exact += usize::from(g == tokenize_13a(reference));
        if examples.len() < 3 {
            examples.push((src.clone(), reference.clone(), g.clone()));
        }
        greedy_out.push(g);
        beam_out.push(b);
    }
    let refs: Vec<String> = corpus.test.iter().map(|p| p.1.clone()).collect();
    Ok(ArmResult {
        bleu_greedy: corpus_bleu(&greedy_out, &refs)?.score,
        bleu_beam: corpus_bleu(&beam_out, &refs)?.score,
        exact: 100.0 * exact as f64 / corpus.test.len().max(1) as f64,
        train_loss: out.train_loss,
        seconds_per_epoch: out.step_seconds / s.epochs as f64,
        examples,
    })
}

/// The longest output decoded for a source of `source` tokens: twice the source plus
/// 10, and never past the model's `positions` − 1 (the BOS takes one). It depends on
/// the sentence being translated only, so one very long training line cannot make
/// every decode run for minutes.
pub fn decode_budget(source: usize, positions: usize) -> usize {
    (2 * source + 10).min(positions.saturating_sub(1)).max(1)
}

/// The options of one run, with the corpus and the vocabulary they were read for
/// (the model's vocabulary and positions depend on them).
struct Options {
    corpus: Corpus,
    vocab: Vocab,
    optimisers: Vec<Optimiser>,
    settings: Settings,
    /// The beam width of the second BLEU column.
    beam: usize,
}

impl Options {
    /// The options from the command line, checked, reading the corpus on the way.
    fn parse(cfg: &RunConfig) -> Result<Options> {
        cfg.check_known("seq2seq", OPTIONS)?;
        let q = cfg.quick;
        let corpus = corpus(
            cfg.data.as_deref(),
            cfg.opt("pairs", if q { 3000 } else { 20000 })?,
            cfg.opt("test-pairs", if q { 200 } else { 1000 })?,
        )?;
        if corpus.test.is_empty() {
            return Err(tensor::Error::value("seq2seq", "no held-out pairs").into());
        }
        let vocab = Vocab::build(
            corpus
                .train
                .iter()
                .flat_map(|(a, b)| [a.as_str(), b.as_str()]),
            1,
            cfg.opt("max-vocab", 16000usize)?,
        )?;
        let optimisers: Vec<Optimiser> = cfg
            .opt_list("optimisers", &["adam", "sam", "llqr-sam"].map(String::from))?
            .iter()
            .map(|o| Optimiser::parse(o))
            .collect::<Result<_>>()?;
        let settings = settings(cfg, &corpus, &vocab)?;
        if settings.epochs == 0 || settings.batch == 0 || optimisers.is_empty() {
            return Err(Error::usage(
                "--epochs, --batch and --optimisers must be non-empty",
            ));
        }
        Ok(Options {
            beam: cfg.opt("beam", 4)?,
            corpus,
            vocab,
            optimisers,
            settings,
        })
    }

    /// The name of `opt` in the table.
    fn name(&self, opt: Optimiser) -> String {
        let s = &self.settings;
        match opt {
            Optimiser::Adam => format!("Adam (peak lr {})", s.lr),
            Optimiser::Sam => format!("SAM around Adam, ρ = {}", s.hyper.rho),
            Optimiser::LlqrSam => format!(
                "LLQR+SAM around Adam (NGD, ‖Ug‖₂), ρ = {}, T_U = {}",
                s.hyper.rho, s.hyper.refresh_every
            ),
        }
    }
}

/// The model and training options, the model sized for `corpus` in `vocab`.
fn settings(cfg: &RunConfig, corpus: &Corpus, vocab: &Vocab) -> Result<Settings> {
    let q = cfg.quick;
    let dim: usize = cfg.opt("dim", if q { 64 } else { 256 })?;
    let layers = cfg.opt("layers", if q { 2 } else { 3 })?;
    let pre_norm = match cfg.opt("norm", "pre".to_string())?.as_str() {
        "pre" => true,
        "post" => false,
        other => {
            return Err(Error::usage(format!(
                "--norm must be pre or post, got '{other}'"
            )))
        }
    };
    let longest = corpus
        .train
        .iter()
        .chain(&corpus.test)
        .map(|(a, b)| vocab.encode(a).len().max(vocab.encode(b).len()))
        .max()
        .unwrap_or(1);
    Ok(Settings {
        model: TransformerConfig {
            vocab: vocab.len(),
            dim,
            heads: cfg.opt("heads", 4)?,
            ff: 4 * dim,
            encoder_layers: layers,
            decoder_layers: layers,
            dropout: cfg.opt("dropout", if q { 0.0 } else { 0.1 })?,
            pre_norm,
            max_len: 2 * longest + 8,
        },
        epochs: cfg.opt_positive("epochs", if q { 4 } else { 30 })?,
        batch: cfg.opt("batch", 64usize)?,
        lr: cfg.opt("lr", 1e-3)?,
        hyper: Hyper {
            // LLQR+SAM steps through the Adam arm's optimiser and schedule.
            lr: cfg.opt("lr", 1e-3)?,
            momentum: 0.9,
            weight_decay: 0.0,
            rho: cfg.opt("rho", 0.05)?,
            fsam_sigma: 1.0,
            fsam_decay: 0.9,
            refresh_every: 100,
            precond_batch: 64,
            inner_lr: 1e-3,
            converged_damping: CONVERGED_DAMPING,
        },
        warmup: cfg.opt("warmup", if q { 100 } else { 1000 })?,
        smoothing: cfg.opt("smoothing", 0.1)?,
        quiet: cfg.quiet,
    })
}

/// The tables a run fills: the BLEU of every optimiser, and the first optimiser's
/// first translations.
struct Tables {
    results: Table,
    examples: Table,
}

impl Tables {
    /// The empty tables of a run over `seeds` seeds.
    fn new(o: &Options, seeds: usize) -> Tables {
        let (s, m, c) = (&o.settings, &o.settings.model, &o.corpus);
        let (dim, layers) = (m.dim, m.encoder_layers);
        Tables {
            results: Table::new(
                &format!(
                    "seq2seq: Transformer ({}-norm, d {dim}, {} heads, {layers}+{layers} layers, tied embeddings) on {} ({} train / {} test pairs, vocabulary {}), {} epochs, batch {}, inverse-sqrt warm-up {}; corpus BLEU (sacreBLEU default definition); {} seed(s)",
                    if m.pre_norm { "pre" } else { "post" },
                    m.heads,
                    c.source,
                    c.train.len(),
                    c.test.len(),
                    o.vocab.len(),
                    s.epochs,
                    s.batch,
                    s.warmup,
                    seeds
                ),
                &["optimiser", "BLEU greedy", &format!("BLEU beam {}", o.beam), "exact (%)", "last-epoch loss", "s / epoch"],
            ),
            examples: Table::new(
                "seq2seq: first held-out translations of the first optimiser (greedy)",
                &["source", "reference", "output"],
            ),
        }
    }
}

/// Every optimiser over the grid's seeds: its row of the results (and, for the
/// first one at the first seed, the example translations). Returns each
/// optimiser with its name in the table.
fn arms(
    o: &Options,
    grid: &mut Grid,
    (t, metrics): (&mut Tables, &mut Metrics),
) -> Result<Vec<(Optimiser, String)>> {
    let first = grid.seeds()[0];
    let mut named = Vec::new();
    for &opt in &o.optimisers {
        let arm = opt.tag();
        grid.run(arm, "", metrics, |seed, _, metrics| {
            let (corpus, vocab, s) = (&o.corpus, &o.vocab, &o.settings);
            let r = train_arm(opt, corpus, vocab, s, o.beam, seed, metrics)?;
            if opt == o.optimisers[0] && seed == first {
                for (a, b, c) in &r.examples {
                    t.examples.row(vec![a.clone(), b.clone(), c.clone()]);
                }
            }
            Ok(vec![
                ("bleu_greedy".to_string(), r.bleu_greedy),
                ("bleu_beam".to_string(), r.bleu_beam),
                ("exact".to_string(), r.exact),
                ("train_loss".to_string(), r.train_loss),
                ("seconds_per_epoch".to_string(), r.seconds_per_epoch),
            ])
        })?;
        let name = o.name(opt);
        let times = grid.values(arm, "", "seconds_per_epoch")?;
        t.results.row(vec![
            name.clone(),
            grid.mean_std(arm, "", "bleu_greedy", 2)?,
            grid.mean_std(arm, "", "bleu_beam", 2)?,
            grid.mean_std(arm, "", "exact", 1)?,
            grid.mean_std(arm, "", "train_loss", 4)?,
            format!("{:.1}", times.iter().sum::<f64>() / times.len() as f64),
        ]);
        named.push((opt, name));
    }
    Ok(named)
}

/// LLQR+SAM against each other optimiser of `named` on beam BLEU, if it ran.
fn evidence(o: &Options, grid: &Grid, named: &[(Optimiser, String)]) -> Result<Vec<Evidence>> {
    let mut out = Vec::new();
    if let Some((_, name)) = named.iter().find(|(x, _)| *x == Optimiser::LlqrSam) {
        let mine = grid.values(Optimiser::LlqrSam.tag(), "", "bleu_beam")?;
        for (opt, other) in named.iter().filter(|(x, _)| *x != Optimiser::LlqrSam) {
            out.push(Evidence {
                claim: Claim::LlqrSam,
                setting: "seq2seq, synthetic translation".into(),
                metric: format!("BLEU beam {}", o.beam),
                better: Better::Higher,
                method: (name.clone(), mine.clone()),
                baseline: (other.clone(), grid.values(opt.tag(), "", "bleu_beam")?),
                paired: true,
                idle: None,
            });
        }
    }
    Ok(out)
}

/// Runs the experiment and returns its tables.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    let o = Options::parse(cfg)?;
    let seeds = cfg.seed_list(1, 3)?;
    let mut t = Tables::new(&o, seeds.len());
    let mut grid = Grid::new(cfg, seeds);
    let mut metrics = Metrics::default();
    let named = arms(&o, &mut grid, (&mut t, &mut metrics))?;
    t.results.evidence.extend(evidence(&o, &grid, &named)?);
    Ok(cfg.run_dir("seq2seq")?.finish(
        "seq2seq",
        Plot::Curves {
            title: "seq2seq: training loss by epoch",
            metrics: &metrics,
            panels: &[("train_loss", true)],
            x_label: "epoch",
        },
        Vec::new(),
        vec![t.results, t.examples],
    )?)
}
