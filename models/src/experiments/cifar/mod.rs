//! `cifar`: a CIFAR image classifier (ResNet-18/34, VGG16-BN or a wide ResNet) trained
//! with SGD, Adam, SAM, LLQR+SAM and a closed-form proximal head, on CIFAR-10/100
//! binary files (`--data DIR`) or on the built-in substitute, the shipped real MNIST
//! padded to 32×32×3 (`--dataset digits`: the UCI digits upscaled to it): real
//! images, small enough that `--quick` trains every optimiser in minutes on two
//! cores (CIFAR itself cannot ship with the binary, and a procedural task would
//! measure only what its generator put in).

pub mod data;
pub mod network;

use crate::cli::RunConfig;
use crate::error::{Error, Result};
use crate::experiments::images::ImageSet;
use crate::grid::Grid;
use crate::report::{Metrics, Plot, Table};
use crate::train::set_mode;
use crate::train::{
    batch_x, preconditioning_batch, train, Batch, Batches, Budget, Hyper, Method, Plan,
    Preconditioning, Spread, Task, Training, CONVERGED_DAMPING,
};
use autograd::{no_grad, Var};
use data::{one_hot, Images};
use network::Network;
use nn::augment::Augment;
use nn::checkpoint::{AnyTensor, NamedTensors};
use nn::nets::Classifier;
use nn::{loss, Param, ParamStore};
use optim::closed_form::{ClosedFormHead, ClosedFormTrainer, HeadRule, Order, SolveForm};
use optim::llqr::{Geometry, PerturbationNorm};
use optim::{Adam, AdamConfig, Schedule, Sgd, SgdConfig};
use tensor::{Rng, Tensor};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    (
        "model",
        "resnet18, resnet34, vgg16, wrn-D-K such as wrn-16-4, or vit-tiny, vit-small, vit-base, vit-large (cifar: resnet18; vit: vit-tiny)",
    ),
    ("patch", "ViT patch side (cifar 4; vit: quick 8, full 4)"),
    (
        "depth",
        "ViT encoder layers (cifar quick 4, vit quick 2; full: the preset's)",
    ),
    (
        "width",
        "base width of the ResNets; VGG channels scale by width/64 (quick 8, full 16; 64 is the published network)",
    ),
    (
        "optimisers",
        "comma-separated among sgd, adam, adamw, sam, sam-adamw, llqr-sam, llqr-sam-adamw, llqr-fsam, llqr-fsam-adamw, closed-form (cifar: sgd, adam, sam, llqr-sam, closed-form; vit: adamw, sam-adamw, llqr-sam-adamw)",
    ),
    (
        "epochs",
        "passes over the training set (cifar: quick 4, full 30; vit: quick 30, full 100)",
    ),
    ("batch", "mini-batch size (64)"),
    ("lr", "SGD learning rate, momentum 0.9, cosine to 0 (0.05)"),
    ("adam-lr", "Adam and AdamW learning rate, cosine to 0 (1e-3)"),
    ("adamw-decay", "AdamW's decoupled weight decay (0.05)"),
    ("weight-decay", "L2 weight decay of every optimiser (5e-4)"),
    ("rho", "SAM and LLQR+SAM radius ρ (0.05)"),
    (
        "lambda",
        "closed-form head: proximal strength λ against the mean batch loss (1)",
    ),
    (
        "refresh",
        "LLQR: steps between refreshes of U (quick 50, full 200)",
    ),
    (
        "augment",
        "comma-separated among crop, flip, cutout, or none (crop,flip,cutout on CIFAR; crop on the digits, whose labels flips do not preserve)",
    ),
    (
        "train-limit",
        "train on the first N training images, 0 for all (quick 1000, full 0)",
    ),
    ("test-limit", "test on the first N test images, 0 for all (quick 500, full 0)"),
    (
        "dataset",
        "the substitute without --data: mnist (the shipped real digits padded to 32×32) or digits (UCI 8×8 upscaled) (mnist)",
    ),
];

/// An optimiser of the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Optimiser {
    /// SGD with momentum on the cross-entropy.
    Sgd,
    /// Adam on the cross-entropy.
    Adam,
    /// AdamW (decoupled weight decay) on the cross-entropy.
    AdamW,
    /// SAM around SGD.
    Sam,
    /// SAM around AdamW (the ViT recipe of Chen et al.).
    SamAdamW,
    /// LLQR+SAM (NGD geometry, diagonal U, Euclidean perturbation norm) around SGD.
    LlqrSam,
    /// LLQR+SAM around the AdamW of the `adamw` arm (the authors' ViT recipe).
    LlqrSamAdamW,
    /// LLQR+F-SAM (perturbation along U(g − ḡ)) around SGD.
    LlqrFsam,
    /// LLQR+F-SAM around AdamW.
    LlqrFsamAdamW,
    /// SGD on the backbone under a closed-form proximal head (squared loss on one-hot
    /// targets).
    ClosedForm,
}

impl Optimiser {
    /// Parses a command-line name.
    pub fn parse(name: &str) -> Result<Optimiser> {
        Ok(match name {
            "sgd" => Optimiser::Sgd,
            "adam" => Optimiser::Adam,
            "adamw" => Optimiser::AdamW,
            "sam" => Optimiser::Sam,
            "sam-adamw" => Optimiser::SamAdamW,
            "llqr-sam" => Optimiser::LlqrSam,
            "llqr-sam-adamw" => Optimiser::LlqrSamAdamW,
            "llqr-fsam" => Optimiser::LlqrFsam,
            "llqr-fsam-adamw" => Optimiser::LlqrFsamAdamW,
            "closed-form" => Optimiser::ClosedForm,
            _ => {
                return Err(Error::usage(format!(
                    "unknown optimiser '{name}': expected sgd, adam, adamw, sam, sam-adamw, llqr-sam, llqr-sam-adamw, llqr-fsam, llqr-fsam-adamw or closed-form"
                ),
                ))
            }
        })
    }

    /// Its command-line name (also the metrics series and checkpoint prefix).
    pub fn tag(self) -> &'static str {
        match self {
            Optimiser::Sgd => "sgd",
            Optimiser::Adam => "adam",
            Optimiser::AdamW => "adamw",
            Optimiser::Sam => "sam",
            Optimiser::SamAdamW => "sam-adamw",
            Optimiser::LlqrSam => "llqr-sam",
            Optimiser::LlqrSamAdamW => "llqr-sam-adamw",
            Optimiser::LlqrFsam => "llqr-fsam",
            Optimiser::LlqrFsamAdamW => "llqr-fsam-adamw",
            Optimiser::ClosedForm => "closed-form",
        }
    }

    /// The peak learning rate of its schedule: Adam's for every arm stepping through
    /// Adam or AdamW (SAM and LLQR around AdamW included), SGD's otherwise.
    pub fn base_lr(self, s: &Settings) -> f64 {
        match self {
            Optimiser::Adam
            | Optimiser::AdamW
            | Optimiser::SamAdamW
            | Optimiser::LlqrSamAdamW
            | Optimiser::LlqrFsamAdamW => s.adam_lr,
            Optimiser::Sgd
            | Optimiser::Sam
            | Optimiser::LlqrSam
            | Optimiser::LlqrFsam
            | Optimiser::ClosedForm => s.hyper.lr,
        }
    }

    /// Its name in tables.
    pub fn name(self, s: &Settings) -> String {
        match self {
            Optimiser::Sgd => "SGD (cross-entropy)".into(),
            Optimiser::Adam => "Adam (cross-entropy)".into(),
            Optimiser::AdamW => format!("AdamW, decay {}", s.adamw_decay),
            Optimiser::Sam => format!("SAM, ρ = {}", s.hyper.rho),
            Optimiser::SamAdamW => format!("SAM around AdamW, ρ = {}", s.hyper.rho),
            Optimiser::LlqrSam => format!(
                "LLQR+SAM (NGD, ‖Ug‖₂), ρ = {}, T_U = {}",
                s.hyper.rho, s.hyper.refresh_every
            ),
            Optimiser::LlqrSamAdamW => format!(
                "LLQR+SAM around AdamW (NGD, ‖Ug‖₂), ρ = {}, T_U = {}",
                s.hyper.rho, s.hyper.refresh_every
            ),
            Optimiser::LlqrFsam => format!(
                "LLQR+F-SAM (NGD, ‖Ug‖₂), ρ = {}, T_U = {}",
                s.hyper.rho, s.hyper.refresh_every
            ),
            Optimiser::LlqrFsamAdamW => format!(
                "LLQR+F-SAM around AdamW (NGD, ‖Ug‖₂), ρ = {}, T_U = {}",
                s.hyper.rho, s.hyper.refresh_every
            ),
            Optimiser::ClosedForm => {
                format!("SGD + closed-form head (squared loss, λ = {})", s.lambda)
            }
        }
    }
}

/// Everything an arm needs besides its optimiser and seed.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The network.
    pub network: Network,
    /// Passes over the training set.
    pub epochs: usize,
    /// Mini-batch size.
    pub batch: usize,
    /// SGD, SAM and LLQR settings (the SGD rate is `hyper.lr`).
    pub hyper: Hyper,
    /// Adam's and AdamW's learning rate.
    pub adam_lr: f64,
    /// AdamW's decoupled weight decay.
    pub adamw_decay: f64,
    /// The closed-form head's proximal strength.
    pub lambda: f64,
    /// Training-time augmentation.
    pub augment: Augment,
    /// No progress lines.
    pub quiet: bool,
}

/// What one arm produced on one seed.
pub struct ArmResult {
    /// Test accuracy (%) after the last epoch.
    pub accuracy: f64,
    /// Mean training loss of the last epoch (cross-entropy, or squared loss for the
    /// closed-form head).
    pub train_loss: f64,
    /// Training seconds per epoch (evaluation excluded).
    pub seconds_per_epoch: f64,
    /// For LLQR arms, the spread of U after the last step.
    pub preconditioner: Option<Spread>,
    /// The trained parameters (the closed-form head as `net.head.closed_form`).
    pub tensors: NamedTensors,
}

/// The state of the network's buffers (BatchNorm running statistics), so that a
/// SAM-type step can undo the first of its two passes' updates.
fn buffers(store: &ParamStore<f32>) -> Vec<(Param<f32>, Tensor<f32>)> {
    store
        .all()
        .into_iter()
        .filter(|p| !p.trainable())
        .map(|p| {
            let v = p.value();
            (p, v)
        })
        .collect()
}

/// Builds the arm's update rule over the network in `store`.
fn training(
    opt: Optimiser,
    net: &dyn Classifier<f32>,
    store: &ParamStore<f32>,
    s: &Settings,
) -> Result<Training<f32>> {
    let h = &s.hyper;
    let adamw = || -> Result<Box<dyn optim::Optimizer<f32>>> {
        Ok(Box::new(Adam::new(
            store.trainable(),
            AdamConfig::adamw(s.adam_lr)
                .weight_decay(s.adamw_decay)
                .mask_vector_decay(),
        )?))
    };
    let ngd = (Geometry::Fisher, PerturbationNorm::Euclidean);
    match opt {
        Optimiser::Sgd => Ok(Training::method(Method::Sgd, store.trainable(), h)?),
        Optimiser::Sam => Ok(Training::method(Method::Sam, store.trainable(), h)?),
        Optimiser::LlqrSam => Ok(Training::method(
            Method::LlqrSam(ngd.0, ngd.1),
            store.trainable(),
            h,
        )?),
        Optimiser::LlqrSamAdamW => Ok(Training::around(
            Method::LlqrSam(ngd.0, ngd.1),
            adamw()?,
            h,
        )?),
        Optimiser::LlqrFsam => Ok(Training::method(
            Method::LlqrFriendlySam(ngd.0, ngd.1),
            store.trainable(),
            h,
        )?),
        Optimiser::LlqrFsamAdamW => Ok(Training::around(
            Method::LlqrFriendlySam(ngd.0, ngd.1),
            adamw()?,
            h,
        )?),
        Optimiser::Adam => Ok(Training::plain(Box::new(Adam::new(
            store.trainable(),
            AdamConfig::adam(s.adam_lr).weight_decay(h.weight_decay),
        )?))),
        Optimiser::AdamW => Ok(Training::plain(adamw()?)),
        Optimiser::SamAdamW => Ok(Training::around(Method::Sam, adamw()?, h)?),
        Optimiser::ClosedForm => {
            let backbone: Vec<Param<f32>> = store
                .trainable()
                .into_iter()
                .filter(|p| !p.name().starts_with("net.head."))
                .collect();
            let head = net.head();
            Ok(Training::closed(ClosedFormTrainer {
                head: ClosedFormHead::new(
                    head.inputs(),
                    head.outputs(),
                    true,
                    HeadRule::Proximal { lambda: s.lambda },
                    SolveForm::Auto,
                )?,
                optimizer: Box::new(Sgd::new(
                    backbone,
                    SgdConfig::new(h.lr)
                        .momentum(h.momentum)
                        .weight_decay(h.weight_decay),
                )?),
                order: Order::BackboneFirst,
                buffers: store.all().into_iter().filter(|p| !p.trainable()).collect(),
            }))
        }
    }
}

/// Test accuracy (%) in evaluation mode, in chunks, without recording.
fn accuracy(
    net: &dyn Classifier<f32>,
    head: Option<&ClosedFormHead<f32>>,
    images: &Images,
) -> Result<f64> {
    let (labels, _) = images.test.labels()?;
    let n = images.test.len();
    let mut correct = 0.0;
    for start in (0..n).step_by(250) {
        let idx: Vec<usize> = (start..(start + 250).min(n)).collect();
        let x = Var::constant(batch_x(&images.test, &idx)?);
        let logits = no_grad(|| match head {
            Some(h) => h.predict(&net.features(&x)?),
            None => net.forward(&x),
        })?;
        let picked: Vec<usize> = idx.iter().map(|&i| labels[i]).collect();
        correct += loss::accuracy(logits.value(), &picked)? * idx.len() as f64;
    }
    Ok(100.0 * correct / n as f64)
}

/// One arm's network, update rule and data, as the trainer drives them.
struct ImageTask<'a> {
    net: &'a dyn Classifier<f32>,
    store: &'a ParamStore<f32>,
    training: Training<f32>,
    images: &'a Images,
    labels: &'a [usize],
    s: &'a Settings,
    augment_rng: Rng,
    precond_rng: Rng,
    series: String,
}

impl Task for ImageTask<'_> {
    fn set_lr_factor(&mut self, factor: f64) -> tensor::Result<()> {
        self.training.set_lr_factor(factor)
    }

    fn before_step(&mut self, step: usize, metrics: &mut Metrics) -> tensor::Result<()> {
        let (net, images, labels) = (self.net, self.images, self.labels);
        let (rng, count) = (&mut self.precond_rng, self.s.hyper.precond_batch);
        self.training.refresh_if_due(
            self.store,
            || {
                let pick = preconditioning_batch(rng, count, labels.len())?;
                let xp = Var::constant(batch_x(&images.train, &pick)?);
                Ok(Preconditioning {
                    logits: Box::new(move || net.forward(&xp)),
                    labels: pick.iter().map(|&i| labels[i]).collect(),
                    smoothing: 0.0,
                    held_out: None,
                })
            },
            (metrics, &self.series, step),
        )
    }

    fn step(&mut self, idx: &[usize]) -> tensor::Result<f64> {
        let x = Var::constant(
            self.s
                .augment
                .apply(&batch_x(&self.images.train, idx)?, &mut self.augment_rng)?,
        );
        let y: Vec<usize> = idx.iter().map(|&i| self.labels[i]).collect();
        let net = self.net;
        // SAM-type steps run two passes on the batch; BatchNorm keeps the running
        // statistics of the perturbed one only (the authors' handlers), so the first
        // pass's update is undone before it.
        let saved = buffers(self.store);
        let passes = std::cell::Cell::new(0);
        let loss = || {
            if passes.replace(passes.get() + 1) == 1 {
                for (p, v) in &saved {
                    p.set(v.clone())?;
                }
            }
            loss::cross_entropy(&net.forward(&x)?, &y, 0.0)
        };
        let features = || net.features(&x);
        let targets = || one_hot(&self.images.train, idx);
        self.training.step(&Batch {
            loss: &loss,
            head: Some((&features, &targets)),
        })
    }

    fn evaluate(&mut self) -> tensor::Result<Vec<(String, f64)>> {
        let acc = accuracy(self.net, self.training.head(), self.images)?;
        Ok(vec![("test_accuracy".into(), acc)])
    }

    fn set_training(&self, on: bool) {
        set_mode(self.store, on)
    }
}

/// Trains one arm with one seed on `images`.
pub fn train_arm(
    opt: Optimiser,
    images: &Images,
    s: &Settings,
    seed: u64,
    metrics: &mut Metrics,
) -> Result<ArmResult> {
    let (labels, classes) = images.train.labels()?;
    if images.train.is_empty() || images.test.is_empty() {
        return Err(tensor::Error::value("cifar", "needs training and test images").into());
    }
    let store = ParamStore::<f32>::new();
    let net = s
        .network
        .build(&store.root().sub("net"), classes, &mut Rng::new(seed))?;
    let training = training(opt, net.as_ref(), &store, s)?;
    let closed = training.head().is_some();
    let series = format!("{}/seed{seed}", opt.tag());
    let mut plan = Plan::new(
        Budget::Epochs(s.epochs),
        // The closed-form head drops a ragged last batch (a head fitted on a short
        // batch is not the head of this batch size).
        Batches::Shuffled {
            samples: images.train.len(),
            size: s.batch,
            ragged: !closed,
        },
        series.clone(),
        s.quiet,
    );
    plan.schedule = Some(Schedule::Cosine {
        total: images.train.len().div_ceil(s.batch) * s.epochs,
        min_factor: 0.0,
    });
    let mut task = ImageTask {
        net: net.as_ref(),
        store: &store,
        training,
        images,
        labels,
        s,
        augment_rng: Rng::new(seed + 2000),
        precond_rng: Rng::new(seed + 3000),
        series,
    };
    let out = train(&plan, &mut task, &mut Rng::new(seed + 1000), metrics)?;
    let mut tensors = store.to_tensors();
    if let Some(head) = task.training.head() {
        tensors.push((
            "net.head.closed_form".into(),
            AnyTensor::from_tensor(head.weight()),
        ));
    }
    Ok(ArmResult {
        accuracy: out
            .last
            .as_ref()
            .map_or(Ok(f64::NAN), |e| e.get("test_accuracy"))?,
        train_loss: out.train_loss,
        seconds_per_epoch: out.step_seconds / s.epochs as f64,
        preconditioner: task.training.preconditioner_summary(),
        tensors,
    })
}

/// Parses `--augment`.
fn augmentation(cfg: &RunConfig, images: &Images) -> Result<Augment> {
    let default: &[&str] = if images.flips_preserve_labels {
        &["crop", "flip", "cutout"]
    } else {
        &["crop"]
    };
    let default: Vec<String> = default.iter().map(|s| s.to_string()).collect();
    let mut a = Augment {
        crop_padding: 0,
        reflect: true,
        flip: 0.0,
        cutout: None,
    };
    for name in cfg.opt_list("augment", &default)? {
        match name.as_str() {
            "crop" => a.crop_padding = 4,
            "flip" => a.flip = 0.5,
            "cutout" => a.cutout = Augment::cifar().cutout,
            "none" => {}
            _ => {
                return Err(Error::usage(format!(
                    "unknown augmentation '{name}': expected crop, flip, cutout or none"
                )))
            }
        }
    }
    Ok(a)
}

fn describe_augment(a: &Augment) -> String {
    let mut parts = Vec::new();
    if a.crop_padding > 0 {
        parts.push(format!("reflect-pad {} and crop", a.crop_padding));
    }
    if a.flip > 0.0 {
        parts.push("flip".to_string());
    }
    if let Some((side, p)) = a.cutout {
        parts.push(format!("Cutout {side} px, p = {p}"));
    }
    if parts.is_empty() {
        "no augmentation".into()
    } else {
        parts.join(", ")
    }
}

/// The defaults that tell the `cifar` and `vit` experiments apart.
pub struct Defaults {
    /// The experiment's name (run directory, errors).
    pub experiment: &'static str,
    /// The default `--model`.
    pub model: &'static str,
    /// The default `--optimisers`.
    pub optimisers: &'static [&'static str],
    /// Default `--epochs` (quick, full).
    pub epochs: (usize, usize),
    /// Default ViT `--patch` and, in the quick setting, `--depth`.
    pub vit: (usize, usize),
}

/// Runs `cifar`: ResNet-18 and the SGD-family comparison by default.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    run_with(
        cfg,
        &Defaults {
            experiment: "cifar",
            model: "resnet18",
            optimisers: &["sgd", "adam", "sam", "llqr-sam", "closed-form"],
            epochs: (4, 30),
            vit: (4, 4),
        },
    )
}

/// The options of one run, with the images they were read for (the default
/// augmentation depends on them).
struct Options {
    optimisers: Vec<Optimiser>,
    images: Images,
    settings: Settings,
}

impl Options {
    /// The options from the command line, checked, loading the images on the way.
    fn parse(cfg: &RunConfig, defaults: &Defaults) -> Result<Options> {
        cfg.check_known(defaults.experiment, OPTIONS)?;
        let q = cfg.quick;
        let network = network(cfg, defaults)?;
        let optimisers: Vec<Optimiser> = cfg
            .opt_list(
                "optimisers",
                &defaults
                    .optimisers
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>(),
            )?
            .iter()
            .map(|n| Optimiser::parse(n))
            .collect::<Result<_>>()?;
        if optimisers.is_empty() {
            return Err(Error::usage("--optimisers names none"));
        }
        let images = data::load(
            cfg.data.as_deref(),
            ImageSet::parse(&cfg.opt("dataset", "mnist".to_string())?)?,
            (
                cfg.opt("train-limit", if q { 1000 } else { 0 })?,
                cfg.opt("test-limit", if q { 500 } else { 0 })?,
            ),
        )?;
        let settings = settings(cfg, defaults, network, &images)?;
        Ok(Options {
            optimisers,
            images,
            settings,
        })
    }
}

/// Parses `--width`, `--patch`, `--depth` and `--model`.
fn network(cfg: &RunConfig, defaults: &Defaults) -> Result<Network> {
    let q = cfg.quick;
    let width = cfg.opt("width", if q { 8 } else { 16 })?;
    let vit = network::VitOptions {
        patch: cfg.opt("patch", defaults.vit.0)?,
        depth: if q {
            Some(cfg.opt("depth", defaults.vit.1)?)
        } else {
            cfg.opt("depth", 0usize).map(|d| (d > 0).then_some(d))?
        },
    };
    Ok(Network::parse(
        &cfg.opt("model", defaults.model.to_string())?,
        width,
        vit,
    )?)
}

/// The settings every arm trains `network` with, checked; the default augmentation
/// is that of `images`.
fn settings(
    cfg: &RunConfig,
    defaults: &Defaults,
    network: Network,
    images: &Images,
) -> Result<Settings> {
    let q = cfg.quick;
    let s = Settings {
        network,
        epochs: cfg.opt(
            "epochs",
            if q {
                defaults.epochs.0
            } else {
                defaults.epochs.1
            },
        )?,
        batch: cfg.opt("batch", 64usize)?,
        hyper: Hyper {
            lr: cfg.opt("lr", 0.05)?,
            momentum: 0.9,
            weight_decay: cfg.opt("weight-decay", 5e-4)?,
            rho: cfg.opt("rho", 0.05)?,
            fsam_sigma: 1.0,
            fsam_decay: 0.9,
            refresh_every: cfg.opt("refresh", if q { 50 } else { 200 })?,
            precond_batch: 64,
            inner_lr: 1e-3,
            converged_damping: CONVERGED_DAMPING,
        },
        adam_lr: cfg.opt("adam-lr", 1e-3)?,
        adamw_decay: cfg.opt("adamw-decay", 0.05)?,
        lambda: cfg.opt("lambda", 1.0)?,
        augment: augmentation(cfg, images)?,
        quiet: cfg.quiet,
    };
    if s.epochs == 0 || s.batch == 0 {
        return Err(Error::usage("--epochs and --batch must be positive"));
    }
    Ok(s)
}

/// The empty results table of the experiment `name` over `seeds` seeds.
fn results_table(name: &str, o: &Options, seeds: usize) -> Table {
    let (s, images) = (&o.settings, &o.images);
    Table::new(
        &format!(
            "{name}: {net} on {src} ({train} train / {test} test), {e} epochs, batch {b}, {aug}, weight decay {wd}; {n} seed(s); test accuracy after the last epoch",
            net = s.network.describe(),
            src = images.source,
            train = images.train.len(),
            test = images.test.len(),
            e = s.epochs,
            b = s.batch,
            aug = describe_augment(&s.augment),
            wd = s.hyper.weight_decay,
            n = seeds,
        ),
        &[
            "optimiser",
            "test accuracy",
            "last-epoch train loss",
            "s / epoch",
            "× first row",
            "U entries (first seed): median [min, max], moved > 1 %",
        ],
    )
}

/// Every optimiser over the grid's seeds, one row of `table` each (its time also
/// against the first row's); the first seed's parameters go into `model`.
fn arms(
    o: &Options,
    grid: &mut Grid,
    (table, metrics, model): (&mut Table, &mut Metrics, &mut NamedTensors),
) -> Result<()> {
    let mut first_time = None;
    let first = grid.seeds()[0];
    for &opt in &o.optimisers {
        let arm = opt.tag();
        grid.run(arm, "", metrics, |seed, _, metrics| {
            let r = train_arm(opt, &o.images, &o.settings, seed, metrics)?;
            if seed == first {
                model.extend(
                    r.tensors
                        .into_iter()
                        .map(|(n, t)| (format!("{arm}.{n}"), t)),
                );
            }
            let mut numbers = vec![
                ("accuracy".to_string(), r.accuracy),
                ("train_loss".to_string(), r.train_loss),
                ("seconds_per_epoch".to_string(), r.seconds_per_epoch),
            ];
            numbers.extend(Spread::fields(r.preconditioner));
            Ok(numbers)
        })?;
        let times = grid.values(arm, "", "seconds_per_epoch")?;
        let time = times.iter().sum::<f64>() / times.len() as f64;
        let base = *first_time.get_or_insert(time);
        table.row(vec![
            opt.name(&o.settings),
            grid.mean_std(arm, "", "accuracy", 2)? + " %",
            grid.mean_std(arm, "", "train_loss", 4)?,
            format!("{time:.1}"),
            format!("{:.2}", time / base),
            Spread::from_numbers(grid.numbers(arm, "", first)?)?.map_or("—".into(), Spread::cell),
        ]);
    }
    Ok(())
}

/// Runs the experiment with `defaults` and returns its table.
pub fn run_with(cfg: &RunConfig, defaults: &Defaults) -> Result<Vec<Table>> {
    let name = defaults.experiment;
    let o = Options::parse(cfg, defaults)?;
    let seeds = cfg.seed_list(1, 3)?;
    let mut table = results_table(name, &o, seeds.len());
    let mut grid = Grid::new(cfg, seeds);
    let (mut metrics, mut model) = (Metrics::default(), Vec::new());
    arms(&o, &mut grid, (&mut table, &mut metrics, &mut model))?;
    Ok(cfg.run_dir(name)?.finish(
        name,
        Plot::Curves {
            title: &format!("{name}: training loss and test accuracy by epoch"),
            metrics: &metrics,
            panels: &[("train_loss", true), ("test_accuracy", false)],
            x_label: "epoch",
        },
        model,
        vec![table],
    )?)
}
