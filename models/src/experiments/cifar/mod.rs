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
use crate::experiments::images::ImageSet;
use crate::experiments::llqr_sam::{preconditioning_batch, Hyper, Method, Spread, Stepper};
use crate::report::{mean_std, progress::Progress, Metrics, Table};
use crate::sweep::{CellValue, Fields};
use crate::train::batch_x;
use autograd::{no_grad, Var};
use data::{one_hot, Images};
use network::Network;
use nn::augment::Augment;
use nn::checkpoint::{AnyTensor, NamedTensors};
use nn::nets::Classifier;
use nn::{loss, Param, ParamStore};
use optim::closed_form::{ClosedFormHead, ClosedFormTrainer, HeadRule, Order, SolveForm};
use optim::llqr::{Geometry, PerturbationNorm};
use optim::{Adam, AdamConfig, Sam, SamVariant, Schedule, Sgd, SgdConfig};
use std::time::Instant;
use tensor::{Error, Result, Rng, Tensor};

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
                return Err(Error::value(
                    "cifar",
                    format!(
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

/// What the table needs of one [`ArmResult`]: one cell of the sweep.
struct SeedCell {
    accuracy: f64,
    train_loss: f64,
    seconds_per_epoch: f64,
    preconditioner: Option<Spread>,
}

impl CellValue for SeedCell {
    fn to_fields(&self) -> Fields {
        let mut f = vec![
            ("accuracy".to_string(), self.accuracy),
            ("train_loss".to_string(), self.train_loss),
            ("seconds_per_epoch".to_string(), self.seconds_per_epoch),
        ];
        f.extend(Spread::fields(self.preconditioner));
        Fields::new(f)
    }

    fn from_fields(f: &Fields) -> Result<Self> {
        Ok(SeedCell {
            accuracy: f.get("accuracy")?,
            train_loss: f.get("train_loss")?,
            seconds_per_epoch: f.get("seconds_per_epoch")?,
            preconditioner: Spread::from_fields(f)?,
        })
    }
}

/// How an arm updates the network.
enum Training {
    /// A first-order, SAM or LLQR step on the cross-entropy.
    Step(Stepper),
    /// A backbone step under a closed-form head.
    Closed(ClosedFormTrainer<f32>),
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

/// Builds the arm's training state over the network in `store`.
fn training(
    opt: Optimiser,
    net: &dyn Classifier<f32>,
    store: &ParamStore<f32>,
    s: &Settings,
) -> Result<Training> {
    let h = &s.hyper;
    let method = |m| Stepper::new(m, store.trainable(), h).map(Training::Step);
    let adamw = || -> Result<Box<dyn optim::Optimizer<f32>>> {
        Ok(Box::new(Adam::new(
            store.trainable(),
            AdamConfig::adamw(s.adam_lr)
                .weight_decay(s.adamw_decay)
                .mask_vector_decay(),
        )?))
    };
    match opt {
        Optimiser::Sgd => method(Method::Sgd),
        Optimiser::Sam => method(Method::Sam),
        Optimiser::LlqrSam => method(Method::LlqrSam(
            Geometry::Fisher,
            PerturbationNorm::Euclidean,
        )),
        Optimiser::LlqrSamAdamW => Stepper::around(
            Method::LlqrSam(Geometry::Fisher, PerturbationNorm::Euclidean),
            adamw()?,
            h,
        )
        .map(Training::Step),
        Optimiser::LlqrFsam => method(Method::LlqrFriendlySam(
            Geometry::Fisher,
            PerturbationNorm::Euclidean,
        )),
        Optimiser::LlqrFsamAdamW => Stepper::around(
            Method::LlqrFriendlySam(Geometry::Fisher, PerturbationNorm::Euclidean),
            adamw()?,
            h,
        )
        .map(Training::Step),
        Optimiser::Adam => Ok(Training::Step(Stepper::Plain(Box::new(Adam::new(
            store.trainable(),
            AdamConfig::adam(s.adam_lr).weight_decay(h.weight_decay),
        )?)))),
        Optimiser::AdamW => Ok(Training::Step(Stepper::Plain(adamw()?))),
        Optimiser::SamAdamW => Ok(Training::Step(Stepper::Sam(Sam::new(
            adamw()?,
            h.rho,
            SamVariant::Sam,
        )?))),
        Optimiser::ClosedForm => {
            let backbone: Vec<Param<f32>> = store
                .trainable()
                .into_iter()
                .filter(|p| !p.name().starts_with("net.head."))
                .collect();
            let head = net.head();
            Ok(Training::Closed(ClosedFormTrainer {
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
        return Err(Error::value("cifar", "needs training and test images"));
    }
    let store = ParamStore::<f32>::new();
    let mut rng = Rng::new(seed);
    let net = s
        .network
        .build(&store.root().sub("net"), classes, &mut rng)?;
    let mut training = training(opt, net.as_ref(), &store, s)?;
    let base_lr = opt.base_lr(s);
    let per_epoch = images.train.len().div_ceil(s.batch);
    let total = per_epoch * s.epochs;
    let schedule = Schedule::Cosine {
        total,
        min_factor: 0.0,
    };
    let series = format!("{}/seed{seed}", opt.tag());
    let mut progress = Progress::new(&series, total, s.quiet);
    let (mut order, mut augment_rng, mut precond_rng) = (
        Rng::new(seed + 1000),
        Rng::new(seed + 2000),
        Rng::new(seed + 3000),
    );
    let (mut step, mut busy, mut last_loss, mut acc) = (0, 0.0, f64::NAN, f64::NAN);
    for epoch in 1..=s.epochs {
        let mut sum = 0.0;
        // The closed-form head drops a ragged last batch (a head fitted on a short
        // batch is not the head of this batch size).
        let batches = match &training {
            Training::Closed(_) => images.train.full_batches(s.batch, Some(&mut order))?,
            Training::Step(_) => images.train.batches(s.batch, Some(&mut order))?,
        };
        for idx in &batches {
            let start = Instant::now();
            let x = Var::constant(
                s.augment
                    .apply(&batch_x(&images.train, idx)?, &mut augment_rng)?,
            );
            let y: Vec<usize> = idx.iter().map(|&i| labels[i]).collect();
            let lr = base_lr * schedule.factor(step);
            let value = match &mut training {
                Training::Step(stepper) => {
                    stepper.set_lr(lr)?;
                    if let (true, Stepper::Llqr(l)) = (stepper.refresh_due(), &mut *stepper) {
                        let pick = preconditioning_batch(
                            &mut precond_rng,
                            s.hyper.precond_batch,
                            labels.len(),
                        )?;
                        let xp = Var::constant(batch_x(&images.train, &pick)?);
                        let yp: Vec<usize> = pick.iter().map(|&i| labels[i]).collect();
                        // The inner solve sees the inference-mode network (BatchNorm
                        // running statistics), as the authors' refresh does.
                        store.eval();
                        let refreshed = l.refresh(&|| net.forward(&xp), &yp, 0.0);
                        store.train();
                        refreshed?;
                        if let Some(u) = stepper.preconditioner_summary() {
                            u.log(metrics, &series, step);
                        }
                    }
                    // SAM-type steps run two passes on the batch; BatchNorm keeps the
                    // running statistics of the perturbed one only (the authors'
                    // handlers), so the first pass's update is undone before it.
                    let saved = buffers(&store);
                    let passes = std::cell::Cell::new(0);
                    stepper.step(&|| {
                        if passes.replace(passes.get() + 1) == 1 {
                            for (p, v) in &saved {
                                p.set(v.clone())?;
                            }
                        }
                        loss::cross_entropy(&net.forward(&x)?, &y, 0.0)
                    })?
                }
                Training::Closed(t) => {
                    t.optimizer.set_lr(lr)?;
                    t.step(|| net.features(&x), &one_hot(&images.train, idx)?)?
                }
            };
            busy += start.elapsed().as_secs_f64();
            sum += value;
            step += 1;
            progress.update(step, epoch, value);
        }
        last_loss = sum / batches.len() as f64;
        metrics.push(&series, epoch, "train_loss", last_loss);
        store.eval();
        let head = match &training {
            Training::Closed(t) => Some(&t.head),
            Training::Step(_) => None,
        };
        let evaluated = accuracy(net.as_ref(), head, images);
        store.train();
        acc = evaluated?;
        metrics.push(&series, epoch, "test_accuracy", acc);
    }
    let mut tensors = store.to_tensors();
    if let Training::Closed(t) = &training {
        tensors.push((
            "net.head.closed_form".into(),
            AnyTensor::from_tensor(t.head.weight()),
        ));
    }
    let preconditioner = match &training {
        Training::Step(stepper) => stepper.preconditioner_summary(),
        Training::Closed(_) => None,
    };
    Ok(ArmResult {
        accuracy: acc,
        train_loss: last_loss,
        seconds_per_epoch: busy / s.epochs as f64,
        preconditioner,
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
                return Err(Error::value(
                    "cifar",
                    format!("unknown augmentation '{name}': expected crop, flip, cutout or none"),
                ))
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

/// Runs the experiment with `defaults` and returns its table.
pub fn run_with(cfg: &RunConfig, defaults: &Defaults) -> Result<Vec<Table>> {
    let name = defaults.experiment;
    cfg.check_known(name, OPTIONS)?;
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
    let network = Network::parse(&cfg.opt("model", defaults.model.to_string())?, width, vit)?;
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
        return Err(Error::value("cifar", "--optimisers names none"));
    }
    let images = data::load(
        cfg.data.as_deref(),
        ImageSet::parse(&cfg.opt("dataset", "mnist".to_string())?)?,
        (
            cfg.opt("train-limit", if q { 1000 } else { 0 })?,
            cfg.opt("test-limit", if q { 500 } else { 0 })?,
        ),
    )?;
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
        },
        adam_lr: cfg.opt("adam-lr", 1e-3)?,
        adamw_decay: cfg.opt("adamw-decay", 0.05)?,
        lambda: cfg.opt("lambda", 1.0)?,
        augment: augmentation(cfg, &images)?,
        quiet: cfg.quiet,
    };
    if s.epochs == 0 || s.batch == 0 {
        return Err(Error::value(
            "cifar",
            "--epochs and --batch must be positive",
        ));
    }
    let seeds = cfg.seed_list(1, 3)?;
    let mut table = Table::new(
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
            n = seeds.len(),
        ),
        &[
            "optimiser",
            "test accuracy",
            "last-epoch train loss",
            "s / epoch",
            "× first row",
            "U entries (first seed): median [min, max], moved > 1 %",
        ],
    );
    let mut metrics = Metrics::default();
    let mut model = Vec::new();
    let mut first_time = None;
    for &opt in &optimisers {
        let (mut accs, mut losses, mut times) = (Vec::new(), Vec::new(), Vec::new());
        let mut spread = None;
        for &seed in &seeds {
            let key = format!("{}/seed{seed}", opt.tag());
            let r = cfg.cell(&key, &mut metrics, |metrics| {
                let r = train_arm(opt, &images, &s, seed, metrics)?;
                let cell = SeedCell {
                    accuracy: r.accuracy,
                    train_loss: r.train_loss,
                    seconds_per_epoch: r.seconds_per_epoch,
                    preconditioner: r.preconditioner,
                };
                if seed == seeds[0] {
                    model.extend(
                        r.tensors
                            .into_iter()
                            .map(|(n, t)| (format!("{}.{n}", opt.tag()), t)),
                    );
                }
                Ok(cell)
            })?;
            accs.push(r.accuracy);
            losses.push(r.train_loss);
            times.push(r.seconds_per_epoch);
            if seed == seeds[0] {
                spread = r.preconditioner;
            }
        }
        let time = times.iter().sum::<f64>() / times.len() as f64;
        let base = *first_time.get_or_insert(time);
        table.row(vec![
            opt.name(&s),
            mean_std(&accs, 2) + " %",
            mean_std(&losses, 4),
            format!("{time:.1}"),
            format!("{:.2}", time / base),
            spread.map_or("—".into(), Spread::cell),
        ]);
    }
    let dir = cfg.run_dir(name)?;
    dir.write_metrics(
        &format!("{name}: training loss and test accuracy by epoch"),
        &metrics,
        &[("train_loss", true), ("test_accuracy", false)],
        "epoch",
    )?;
    dir.write_model(model, vec![("experiment".into(), name.into())])?;
    let tables = vec![table];
    dir.write_tables(&tables)?;
    eprintln!("{name}: results in {}", dir.path.display());
    Ok(tables)
}
