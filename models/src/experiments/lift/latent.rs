//! `lift-ebm-latent`: a log-concave EBM q(x) ∝ exp(−F(x)) with an ICNN F on the
//! 32-D codes of real MNIST digits. The codes come from the lift repository's
//! non-variational convolutional autoencoder (`lift/models/conv_ae.py`): encoder
//! Conv(1→32, k4, s2, p1), SiLU, Conv(32→64, k4, s2, p1), SiLU, Linear(64·7·7 → 32);
//! BCE loss. Its decoder mirrors it with transposed convolutions; this engine has
//! none, so the decoder here is Linear(32 → 64·7·7), SiLU, then twice a nearest ×2
//! upsampling followed by a 3×3 convolution (64→32, SiLU; 32→1, sigmoid) — the same
//! resolutions and widths, resize-convolutions instead of strided transposes.
//!
//! The codes are standardised per coordinate on the training split and, by default,
//! whitened by the Gaussian fitted to them (the EBM's ½c‖x‖² term and its initial
//! potential are isotropic, the codes are strongly correlated: unwhitened, 500
//! iterations leave every strategy 17–19 nats behind the Gaussian). log Z is
//! estimated by importance sampling from the Gaussian fitted to the training codes
//! (a defensive mixture with its 2σ-wide copy),
//! log Ẑ = logsumexp_m(−F(x_m) − log g(x_m)) − log M, with fresh draws every step
//! (gradients through Ẑ, the self-normalised estimator of the authors' EBM loss, here
//! with a fixed proposal instead of their jointly trained sampler flow); the test
//! NLL uses 8 × 8192 draws and reports the estimator's standard error (delta method:
//! the spread of the importance weights). The fitted Gaussian's own test NLL is the
//! reference an EBM must beat.

use super::density::{no_scores, nothing_after, Density};
use super::groups::Rule;
use super::{icnn_config, Convention, Model, Strategy};
use crate::cli::RunConfig;
use crate::data::gaussian::Gaussian;
use crate::data::{builtin, Dataset};
use crate::error::{Error, Result};
use crate::grid::{Grid, Numbers};
use crate::report::{mean_std, Metrics, Plot, Table};
use crate::train::{train as train_loop, Batch, Batches, Budget, Cadence, Plan, Task, Training};
use autograd::{no_grad, Var};
use nn::{Conv2d, Linear, Module, ParamStore};
use optim::lift::LiftConfig;
use optim::{Adam, AdamConfig};
use tensor::{Conv2dSpec, Rng, Tensor};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    (
        "ae-epochs",
        "autoencoder epochs over the 8,000 training digits (quick 3, full 10)",
    ),
    ("iterations", "EBM iterations (quick 500, full 3000)"),
    ("width", "ICNN width (128)"),
    (
        "proposals",
        "importance samples of log Z per training step (1024)",
    ),
    (
        "whiten",
        "train the EBM on codes whitened by the fitted Gaussian (true; false: standardised only)",
    ),
    (
        "emit",
        "what the lift's hypernetwork emits: all (every ICNN parameter, as the authors' EBM; default) or constrained (only the non-negative weights, as their CP-Flow lift)",
    ),
    (
        "images",
        "keep the first N training and N/4 test images (0 = all 8,000 / 2,000)",
    ),
];

/// Dimension of the codes.
const LATENT: usize = 32;

/// The autoencoder.
struct Autoencoder {
    store: ParamStore<f64>,
    conv1: Conv2d<f64>,
    conv2: Conv2d<f64>,
    to_code: Linear<f64>,
    from_code: Linear<f64>,
    up1: Conv2d<f64>,
    up2: Conv2d<f64>,
}

/// Nearest-neighbour ×2 upsampling of `[n, c, h, w]`.
fn upsample(x: &Var<f64>) -> Result<Var<f64>> {
    let s = x.shape().to_vec();
    let ones = Var::constant(Tensor::ones(&[1, 1, 1, 2, 1, 2])?);
    Ok(x.reshape(&[s[0], s[1], s[2], 1, s[3], 1])?
        .mul(&ones)?
        .reshape(&[s[0], s[1], 2 * s[2], 2 * s[3]])?)
}

impl Autoencoder {
    fn new(rng: &mut Rng) -> Result<Self> {
        let store = ParamStore::new();
        let r = store.root();
        let down = Conv2dSpec {
            stride: (2, 2),
            padding: (1, 1),
            ..Conv2dSpec::default()
        };
        let same = Conv2dSpec {
            padding: (1, 1),
            ..Conv2dSpec::default()
        };
        Ok(Autoencoder {
            conv1: Conv2d::new(&r.sub("enc1"), (1, 32), 4, down, true, rng)?,
            conv2: Conv2d::new(&r.sub("enc2"), (32, 64), 4, down, true, rng)?,
            to_code: Linear::new(&r.sub("code"), 64 * 7 * 7, LATENT, true, rng)?,
            from_code: Linear::new(&r.sub("decode"), LATENT, 64 * 7 * 7, true, rng)?,
            up1: Conv2d::new(&r.sub("dec1"), (64, 32), 3, same, true, rng)?,
            up2: Conv2d::new(&r.sub("dec2"), (32, 1), 3, same, true, rng)?,
            store,
        })
    }

    /// Codes `[n, 32]` of images `[n, 784]`.
    fn encode(&self, x: &Var<f64>) -> Result<Var<f64>> {
        let n = x.shape()[0];
        let h = self.conv1.forward(&x.reshape(&[n, 1, 28, 28])?)?.silu()?;
        let h = self.conv2.forward(&h)?.silu()?;
        Ok(self.to_code.forward(&h.reshape(&[n, 64 * 7 * 7])?)?)
    }

    /// Reconstruction logits `[n, 784]`.
    fn decode_logits(&self, z: &Var<f64>) -> Result<Var<f64>> {
        let n = z.shape()[0];
        let h = self.from_code.forward(z)?.silu()?.reshape(&[n, 64, 7, 7])?;
        let h = self.up1.forward(&upsample(&h)?)?.silu()?;
        Ok(self.up2.forward(&upsample(&h)?)?.reshape(&[n, 784])?)
    }

    /// Codes `[n, 32]` of images `[n, 784]` without a graph, encoded 500 images at
    /// a time to bound the convolutions' working memory.
    fn codes(&self, x: &Tensor<f64>) -> Result<Tensor<f64>> {
        let n = x.shape()[0];
        let parts = (0..n)
            .step_by(500)
            .map(|start| {
                let idx: Vec<usize> = (start..(start + 500).min(n)).collect();
                no_grad(|| self.encode(&Var::constant(x.index_select(0, &idx)?)))
                    .map(|v| v.value().clone())
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Tensor::cat(&parts.iter().collect::<Vec<_>>(), 0)?)
    }

    /// Mean binary cross-entropy of the reconstructions, softplus(ℓ) − yℓ.
    fn bce(&self, x: &Var<f64>) -> Result<Var<f64>> {
        let logits = self.decode_logits(&self.encode(x)?)?;
        Ok(logits.softplus()?.sub(&logits.mul(x)?)?.mean_all()?)
    }
}

/// The autoencoder's training on the digits, as the trainer drives it.
struct Reconstruction<'a> {
    ae: &'a Autoencoder,
    training: Training<f64>,
    train: &'a Tensor<f64>,
}

impl Task for Reconstruction<'_> {
    fn set_lr_factor(&mut self, factor: f64) -> tensor::Result<()> {
        self.training.set_lr_factor(factor)
    }

    fn step(&mut self, idx: &[usize]) -> tensor::Result<f64> {
        let x = Var::constant(self.train.index_select(0, idx)?);
        let ae = self.ae;
        self.training.step(&Batch {
            loss: &|| Ok(ae.bce(&x)?),
            head: None,
        })
    }
}

/// Trains the autoencoder (full batches of 128, Adam); returns it and the mean
/// training BCE per pixel of the last epoch.
fn train_autoencoder(
    train: &Tensor<f64>,
    epochs: usize,
    seed: u64,
    quiet: bool,
) -> Result<(Autoencoder, f64)> {
    let mut rng = Rng::new(seed);
    let ae = Autoencoder::new(&mut rng)?;
    let mut plan = Plan::new(
        Budget::Epochs(epochs),
        Batches::Shuffled {
            samples: train.shape()[0],
            size: 128,
            ragged: false,
        },
        "autoencoder",
        quiet,
    );
    plan.evaluate = Cadence::Never;
    let mut task = Reconstruction {
        ae: &ae,
        training: Training::plain(Box::new(Adam::new(
            ae.store.trainable(),
            AdamConfig::adam(1e-3),
        )?)),
        train,
    };
    // The batch order continues the initialisation's generator.
    let out = train_loop(&plan, &mut task, &mut rng, &mut Metrics::default())?;
    Ok((ae, out.train_loss))
}

/// log Ẑ = logsumexp(−F(x_m) − log g(x_m)) − log M, differentiable in the weights.
fn log_partition(
    m: &Model,
    w: &[Var<f64>],
    xs: &Tensor<f64>,
    log_q: &Tensor<f64>,
) -> Result<Var<f64>> {
    let count = xs.shape()[0] as f64;
    Ok(m.net
        .forward_with(&Var::constant(xs.clone()), w)?
        .neg()?
        .sub(&Var::constant(log_q.clone()))?
        .logsumexp(&[0, 1], false)?
        .add_scalar(-count.ln())?)
}

/// log Ẑ from `repeats` × `m` draws and its delta-method standard error.
fn evaluate_log_z(
    model: &Model,
    w: &[Var<f64>],
    g: &Gaussian,
    m: usize,
    repeats: usize,
    rng: &mut Rng,
) -> Result<(f64, f64)> {
    let mut logs = Vec::new();
    for _ in 0..repeats {
        let (xs, lq) = g.sample(m, rng)?;
        let f = no_grad(|| model.net.forward_with(&Var::constant(xs.clone()), w))?;
        logs.extend(
            f.value()
                .to_vec()
                .iter()
                .zip(lq.to_vec())
                .map(|(f, q)| -f - q),
        );
    }
    let top = logs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let wts: Vec<f64> = logs.iter().map(|l| (l - top).exp()).collect();
    let n = wts.len() as f64;
    let mean = wts.iter().sum::<f64>() / n;
    let var = wts.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Ok((top + mean.ln(), (var / n).sqrt() / mean))
}

/// The options of one run.
struct Options {
    ae_epochs: usize,
    iterations: usize,
    width: usize,
    /// Importance samples of log Z per training step.
    proposals: usize,
    /// Keep the first this many training images (and a quarter as many test
    /// images); 0 keeps all.
    images: usize,
    /// Train the EBM on whitened codes.
    whiten: bool,
    /// The lift's settings (what its hypernetwork emits).
    lift: LiftConfig,
    quiet: bool,
}

impl Options {
    /// The options from the command line, checked.
    fn parse(cfg: &RunConfig) -> Result<Options> {
        cfg.check_known("lift-ebm-latent", OPTIONS)?;
        let ae_epochs: usize = cfg.opt("ae-epochs", if cfg.quick { 3 } else { 10 })?;
        let iterations: usize = cfg.opt("iterations", if cfg.quick { 500 } else { 3000 })?;
        let width: usize = cfg.opt("width", 128)?;
        let proposals: usize = cfg.opt("proposals", 1024)?;
        if ae_epochs == 0 || iterations == 0 || width == 0 || proposals < 2 {
            return Err(Error::usage(format!("needs positive --ae-epochs, --iterations, --width and --proposals ≥ 2, got {ae_epochs}, {iterations}, {width}, {proposals}"),
            ));
        }
        let images: usize = cfg.opt("images", 0)?;
        if images > 0 && images < 128 {
            return Err(Error::usage(format!(
                "--images needs at least one autoencoder batch of 128, got {images}"
            )));
        }
        Ok(Options {
            ae_epochs,
            iterations,
            width,
            proposals,
            images,
            whiten: cfg.opt("whiten", true)?,
            lift: LiftConfig {
                emit_all: super::parse_emit(&cfg.opt("emit", "all".to_string())?)?,
                ..LiftConfig::default()
            },
            quiet: cfg.quiet,
        })
    }
}

/// The MNIST digits: the first `keep` training and `keep / 4` test images, or all
/// of them when `keep` is 0.
fn images(keep: usize) -> Result<(Dataset, Dataset)> {
    let (train, test) = builtin::mnist()?;
    if keep == 0 {
        return Ok((train, test));
    }
    let first = |n: usize, d: &Dataset| d.subset(&(0..n.min(d.len())).collect::<Vec<_>>());
    Ok((first(keep, &train)?, first((keep / 4).max(1), &test)?))
}

/// The codes the EBM trains and is tested on, and the Gaussian fitted to them.
struct Codes {
    /// Training codes, standardised (and whitened with `--whiten`).
    train: Tensor<f64>,
    /// Test codes, in the training codes' coordinates.
    test: Tensor<f64>,
    /// ½ log det Σ when whitened (0 otherwise): added back to every EBM NLL so it
    /// is in the standardised coordinates.
    jacobian: f64,
    /// The Gaussian fitted to `train`: the proposal of log Z.
    gauss: Gaussian,
    /// The test NLL of the Gaussian fitted to the standardised codes.
    gauss_nll: f64,
}

impl Codes {
    /// The codes of the (train, test) images under `ae`, standardised on the
    /// training split and, with `whiten`, whitened by the fitted Gaussian.
    fn of(
        ae: &Autoencoder,
        (train, test): (&Tensor<f64>, &Tensor<f64>),
        whiten: bool,
    ) -> Result<Codes> {
        let (raw_train, raw_test) = (ae.codes(train)?, ae.codes(test)?);
        let mu = raw_train.mean(&[0], true)?;
        let sd = raw_train
            .sub(&mu)?
            .square()
            .mean(&[0], true)?
            .sqrt()
            .add_scalar(1e-8);
        let (z_train, z_test) = (raw_train.sub(&mu)?.div(&sd)?, raw_test.sub(&mu)?.div(&sd)?);
        let fitted = Gaussian::fit(&z_train)?;
        let gauss_nll = fitted.nll(&z_test)?;
        // Whitening x ↦ L⁻¹(x − μ) makes the fitted Gaussian N(0, I); densities in the
        // standardised coordinates gain the Jacobian ½ log det Σ, added back to
        // every EBM NLL so every NLL is on the same scale.
        let (train, test, jacobian) = if whiten {
            (
                fitted.whiten(&z_train)?,
                fitted.whiten(&z_test)?,
                0.5 * fitted.log_det,
            )
        } else {
            (z_train, z_test, 0.0)
        };
        Ok(Codes {
            gauss: Gaussian::fit(&train)?,
            train,
            test,
            jacobian,
            gauss_nll,
        })
    }
}

/// The table, titled with the setting, with the fitted Gaussian's row.
fn headline(o: &Options, codes: &Codes, bce: f64, seeds: usize) -> Table {
    let (width, ae_epochs, iterations, proposals) =
        (o.width, o.ae_epochs, o.iterations, o.proposals);
    let mut table = Table::new(
        &format!(
            "lift-ebm-latent: log-concave EBM (ICNN width {width} × 3, c = 0.02) on the 32-D codes of real MNIST (autoencoder {ae_epochs} epochs, train BCE {bce:.4}/pixel; {} train / {} test codes, standardised{}; NLLs in the standardised coordinates), {iterations} iterations, batch 256, log Z by importance sampling from the fitted Gaussian ({proposals} draws per step; test: 8 × 8192), {seeds} seeds; test NLL in nats (mean ± std over seeds; the estimator's standard error of log Z beside it)",
            codes.train.shape()[0],
            codes.test.shape()[0],
            if o.whiten { ", the EBM trained on them whitened" } else { "" },
        ),
        &["method", "parameters", "test NLL", "s.e. of log Ẑ", "gap to the Gaussian", "non-finite steps skipped", "s / run"],
    );
    table.row(vec![
        "fitted Gaussian (the proposal)".into(),
        (LATENT + LATENT * (LATENT + 1) / 2).to_string(),
        format!("{:.3}", codes.gauss_nll),
        "exact".into(),
        "0".into(),
        "—".into(),
        "—".into(),
    ]);
    table
}

/// One grid cell: trains the EBM of `strategy` at `seed` under `series` and scores
/// it on the test codes (`nll`, `se` of log Ẑ, `seconds`, `size`, `skipped`).
fn train_ebm(
    o: &Options,
    codes: &Codes,
    strategy: Strategy,
    (seed, series): (u64, &str),
    metrics: &mut Metrics,
) -> Result<Numbers> {
    let mut rng = Rng::new(seed);
    let m = Model::new(
        strategy,
        Convention::Ebm,
        icnn_config(LATENT, o.width, 3, 0.02),
        &o.lift,
        Rule::Adam(AdamConfig::adam(1e-3)),
        &[],
        &mut rng,
    )?;
    let mut data_rng = Rng::new(seed ^ 0x1a7e);
    let n = codes.train.shape()[0];
    let step = |m: &mut Model| -> tensor::Result<f64> {
        let idx: Vec<usize> = (0..256)
            .map(|_| data_rng.below(n as u64).map(|i| i as usize))
            .collect::<tensor::Result<_>>()?;
        let batch = codes.train.index_select(0, &idx)?;
        let (xs, lq) = codes.gauss.sample(o.proposals, &mut data_rng)?;
        let loss = |m: &Model, w: &[Var<f64>], b: &Tensor<f64>| -> tensor::Result<Var<f64>> {
            m.net
                .forward_with(&Var::constant(b.clone()), w)?
                .mean_all()?
                .add(&log_partition(m, w, &xs, &lq)?)
        };
        m.step(&batch, 1.0, &loss)
    };
    let (m, out) = Density {
        model: m,
        step: Box::new(step),
        after: nothing_after(),
        scores: no_scores(),
    }
    .train(o.iterations, o.iterations / 20, series, o.quiet, metrics)?;
    let pin = codes.train.index_select(0, &(0..256).collect::<Vec<_>>())?;
    let w: Vec<Var<f64>> = no_grad(|| m.positivity.weights(&pin))?
        .iter()
        .map(|v| v.detach())
        .collect();
    let (log_z, se) = evaluate_log_z(&m, &w, &codes.gauss, 8192, 8, &mut Rng::new(seed ^ 0xe7a1))?;
    let mean_f = no_grad(|| m.net.forward_with(&Var::constant(codes.test.clone()), &w))?
        .value()
        .mean_all()?
        .item()?;
    Ok(vec![
        ("nll".to_string(), mean_f + log_z + codes.jacobian),
        ("se".to_string(), se),
        ("seconds".to_string(), out.seconds),
        ("size".to_string(), m.size() as f64),
        ("skipped".to_string(), out.skipped as f64),
    ])
}

/// The table row of `arm` from its cells, and its test NLLs (for the evidence).
fn strategy_row(grid: &Grid, arm: &str, gauss_nll: f64) -> Result<(Vec<String>, Vec<f64>)> {
    let nlls = grid.values(arm, "", "nll")?;
    let count = |v: f64| if v.is_finite() { v as usize } else { 0 };
    let size = grid
        .values(arm, "", "size")?
        .first()
        .map_or(0, |&v| count(v));
    let skipped: usize = grid
        .values(arm, "", "skipped")?
        .into_iter()
        .map(count)
        .sum();
    let gaps: Vec<f64> = nlls.iter().map(|v| v - gauss_nll).collect();
    let row = vec![
        arm.into(),
        size.to_string(),
        mean_std(&nlls, 3),
        grid.mean_std(arm, "", "se", 4)?,
        mean_std(&gaps, 3),
        skipped.to_string(),
        grid.mean_std(arm, "", "seconds", 1)?,
    ];
    Ok((row, nlls))
}

/// Runs the experiment and returns its table.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    let o = Options::parse(cfg)?;
    let (train, test) = images(o.images)?;
    let (ae, bce) = train_autoencoder(&train.x, o.ae_epochs, cfg.seed, cfg.quiet)?;
    let codes = Codes::of(&ae, (&train.x, &test.x), o.whiten)?;
    let seeds = cfg.seed_list(3, 3)?;
    let mut table = headline(&o, &codes, bce, seeds.len());
    let mut metrics = Metrics::default();
    let mut grid = Grid::new(cfg, seeds);
    let mut by_strategy = Vec::new();
    for strategy in [Strategy::Pgd, Strategy::Softplus, Strategy::Lift] {
        let arm = strategy.name();
        grid.run(&arm, "", &mut metrics, |seed, series, metrics| {
            train_ebm(&o, &codes, strategy, (seed, series), metrics)
        })?;
        let (row, nlls) = strategy_row(&grid, &arm, codes.gauss_nll)?;
        table.row(row);
        by_strategy.push((strategy, nlls));
    }
    table.evidence = super::lift_evidence("lift-ebm-latent, MNIST codes", "test NLL", &by_strategy);
    Ok(cfg.run_dir("lift-ebm-latent")?.finish(
        "lift-ebm-latent",
        Plot::Curves {
            title: "lift-ebm-latent: training NLL (importance-sampled log Z)",
            metrics: &metrics,
            panels: &[("train_loss", false)],
            x_label: "iteration",
        },
        ae.store.to_tensors(),
        vec![table],
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The proposal's draws and log densities agree: importance sampling of the
    /// unnormalised density exp(−½(x−μ)ᵀΣ⁻¹(x−μ)) recovers its known integral
    /// (2π)^{d/2}|Σ|^{1/2} within three standard errors, and the fitted Gaussian's
    /// NLL of its own kind of data is its entropy.
    #[test]
    fn the_proposal_recovers_a_known_partition_function() {
        let mut rng = Rng::new(8);
        let a =
            Tensor::from_vec(vec![1.0, 0.0, 0.0, 0.6, 0.8, 0.0, 0.1, 0.2, 0.3], &[3, 3]).unwrap();
        let x = Tensor::<f64>::rand_normal(&[20000, 3], 0.0, 1.0, &mut rng)
            .unwrap()
            .matmul(&a.t().unwrap())
            .unwrap()
            .add_scalar(1.5);
        let g = Gaussian::fit(&x).unwrap();
        let (xs, lq) = g.sample(200_000, &mut rng).unwrap();
        // Whitened squared radius of each draw under the fitted N(μ, Σ).
        let z = g.whiten(&xs).unwrap();
        let r2 = z.square().sum(&[1], false).unwrap().to_vec();
        let logs: Vec<f64> = r2
            .iter()
            .zip(lq.to_vec())
            .map(|(r, q)| -0.5 * r - q)
            .collect();
        let w: Vec<f64> = logs.iter().map(|l| l.exp()).collect();
        let n = w.len() as f64;
        let mean = w.iter().sum::<f64>() / n;
        let se = (w.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt();
        let exact = (1.5 * (2.0 * std::f64::consts::PI).ln() + 0.5 * g.log_det).exp();
        assert!((mean - exact).abs() < 3.0 * se, "{mean} vs {exact} ± {se}");
        let entropy = 0.5 * g.log_det + 1.5 * (1.0 + (2.0 * std::f64::consts::PI).ln());
        assert!((g.nll(&x).unwrap() - entropy).abs() < 1e-9);
    }
}
