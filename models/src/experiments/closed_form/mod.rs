//! The closed-form last-layer experiments: a backbone trained by SGD with the last
//! layer refitted in closed form each step (proximal, or per-batch ridge), against
//! SGD and Adam training the whole network, across batch sizes and seeds.

pub mod classes;
pub mod classification;
pub mod comparison;
pub mod dfiv;
pub mod one_step;
pub mod regression;

use crate::data::Dataset;
use crate::report::Metrics;
use crate::train::{
    train as train_loop, Batch, Batches, Budget, Cadence, NonFinite, Plan, Task as TrainTask,
    Training,
};
use autograd::Var;
use nn::checkpoint::{AnyTensor, NamedTensors};
use nn::{loss, Activation, Linear, Mlp, Module, ParamStore};
use optim::closed_form::{
    squared_loss, ClosedFormHead, ClosedFormTrainer, HeadRule, Order, SolveForm,
};
use optim::{Adam, AdamConfig, Optimizer, Sgd, SgdConfig};
use std::time::Instant;
use tensor::{Result, Rng, Tensor};

/// How an arm trains.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Method {
    /// SGD with momentum on the whole network, squared loss.
    Sgd,
    /// Adam on the whole network, squared loss.
    Adam,
    /// SGD on the whole network, cross-entropy (classification only).
    CrossEntropy,
    /// SGD backbone, last layer refitted by per-batch ridge (β).
    Ridge,
    /// SGD backbone, last layer refitted by the proximal solution (λ).
    Proximal,
}

impl Method {
    /// Name in tables, without its hyper-parameter.
    pub fn name(self) -> &'static str {
        match self {
            Method::Sgd => "SGD (squared loss)",
            Method::Adam => "Adam (squared loss)",
            Method::CrossEntropy => "SGD (cross-entropy)",
            Method::Ridge => "per-batch ridge c.f.",
            Method::Proximal => "proximal c.f.",
        }
    }

    /// Name in tables, with the closed-form arms' λ or β from `s`.
    pub fn label(self, s: &Settings) -> String {
        match self {
            Method::Ridge => format!("{} (β = {})", self.name(), s.beta),
            Method::Proximal => format!("{} (λ = {})", self.name(), s.lambda),
            _ => self.name().into(),
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Method::Sgd => "sgd",
            Method::Adam => "adam",
            Method::CrossEntropy => "ce",
            Method::Ridge => "ridge",
            Method::Proximal => "prox",
        }
    }
}

/// Settings shared by the arms of one experiment.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Optimisation steps per run (the same budget for every batch size).
    pub steps: usize,
    /// SGD learning rate (momentum 0.9), for whole networks and backbones.
    pub sgd_lr: f64,
    /// Adam learning rate.
    pub adam_lr: f64,
    /// Per-batch ridge strength β (against the mean batch loss).
    pub beta: f64,
    /// Proximal strength λ (against the mean batch loss).
    pub lambda: f64,
    /// Backbone widths after the input (the last is the feature dimension).
    pub hidden: Vec<usize>,
    /// No progress lines.
    pub quiet: bool,
}

/// The network of one arm: a backbone and either a trained or a closed-form head.
struct Model {
    backbone: Mlp<f64>,
    head: Option<Linear<f64>>,
}

impl Model {
    fn features(&self, x: &Var<f64>) -> Result<Var<f64>> {
        self.backbone.forward(x)?.tanh()
    }

    /// The output, through the trained head or the given closed-form one.
    fn predict(&self, x: &Var<f64>, closed: Option<&ClosedFormHead<f64>>) -> Result<Var<f64>> {
        let phi = self.features(x)?;
        match (&self.head, closed) {
            (_, Some(h)) => h.predict(&phi),
            (Some(h), None) => h.forward(&phi),
            (None, None) => Err(tensor::Error::value("closed-form experiment", "no head")),
        }
    }
}

/// One arm's model and update rule on a training set, as the trainer drives them.
struct Regression<'a> {
    model: &'a Model,
    training: Training<f64>,
    method: Method,
    train: &'a Dataset,
    targets: &'a Tensor<f64>,
    labels: Option<&'a [usize]>,
    test: Var<f64>,
    evaluate: &'a dyn Fn(&Tensor<f64>) -> Result<f64>,
}

impl TrainTask for Regression<'_> {
    fn set_lr_factor(&mut self, factor: f64) -> Result<()> {
        self.training.set_lr_factor(factor)
    }

    fn step(&mut self, idx: &[usize]) -> Result<f64> {
        let (model, method) = (self.model, self.method);
        let xb = Var::constant(self.train.x.index_select(0, idx)?);
        let yb = self.targets.index_select(0, idx)?;
        let loss = || {
            let out = model.predict(&xb, None)?;
            match (method, self.labels) {
                (Method::CrossEntropy, Some(lab)) => {
                    let lb: Vec<usize> = idx.iter().map(|&i| lab[i]).collect();
                    loss::cross_entropy(&out, &lb, 0.0)
                }
                _ => squared_loss(&out, &yb),
            }
        };
        let features = || model.features(&xb);
        let targets = || Ok(yb.clone());
        self.training.step(&Batch {
            loss: &loss,
            head: Some((&features, &targets)),
        })
    }

    fn evaluate(&mut self) -> Result<Vec<(String, f64)>> {
        let pred = self.model.predict(&self.test, self.training.head())?;
        Ok(vec![("test_metric".into(), (self.evaluate)(pred.value())?)])
    }
}

/// Trains one arm and returns (final test metric, seconds) and the trained model's
/// tensors (the closed-form head as `head.closed_form`). `targets` are the
/// training targets of the squared loss `[n, k]`; `labels` the classes for
/// cross-entropy; `evaluate` scores test-set predictions `[n_test, k]`. A run whose
/// loss stops being finite scores NaN.
#[allow(clippy::too_many_arguments)]
pub fn run_arm(
    method: Method,
    train: &Dataset,
    targets: &Tensor<f64>,
    labels: Option<&[usize]>,
    test_x: &Tensor<f64>,
    evaluate: &dyn Fn(&Tensor<f64>) -> Result<f64>,
    batch: usize,
    seed: u64,
    s: &Settings,
    metrics: &mut Metrics,
) -> Result<((f64, f64), NamedTensors)> {
    let start = Instant::now();
    let k = targets.shape()[1];
    let d_in = train.x.shape()[1];
    let store = ParamStore::<f64>::new();
    let mut rng = Rng::new(seed);
    let mut sizes = vec![d_in];
    sizes.extend(&s.hidden);
    let d = *sizes.last().expect("sizes");
    let backbone = Mlp::new(
        &store.root().sub("backbone"),
        &sizes,
        Activation::Tanh,
        &mut rng,
    )?;
    let closed = matches!(method, Method::Ridge | Method::Proximal);
    let head = if closed {
        None
    } else {
        Some(Linear::new(
            &store.root().sub("head"),
            d,
            k,
            true,
            &mut rng,
        )?)
    };
    let model = Model { backbone, head };
    let optimizer: Box<dyn Optimizer<f64>> = match method {
        Method::Adam => Box::new(Adam::new(store.trainable(), AdamConfig::adam(s.adam_lr))?),
        _ => Box::new(Sgd::new(
            store.trainable(),
            SgdConfig::new(s.sgd_lr).momentum(0.9),
        )?),
    };
    let training = if closed {
        let rule = if method == Method::Ridge {
            HeadRule::Ridge { beta: s.beta }
        } else {
            HeadRule::Proximal { lambda: s.lambda }
        };
        Training::closed(ClosedFormTrainer {
            head: ClosedFormHead::new(d, k, true, rule, SolveForm::Auto)?,
            optimizer,
            order: Order::BackboneFirst,
            buffers: Vec::new(),
        })
    } else {
        Training::plain(optimizer)
    };
    let mut plan = Plan::new(
        Budget::Steps(s.steps),
        // Full batches only, for every arm: the same stream of equal batches.
        Batches::Shuffled {
            samples: train.len(),
            size: batch,
            ragged: false,
        },
        format!("{}/b{batch}/seed{seed}", method.tag()),
        s.quiet,
    );
    plan.evaluate = Cadence::Steps((s.steps / 20).max(1));
    plan.non_finite = NonFinite::Stop;
    let mut task = Regression {
        model: &model,
        training,
        method,
        train,
        targets,
        labels,
        test: Var::constant(test_x.clone()),
        evaluate,
    };
    let out = train_loop(&plan, &mut task, &mut Rng::new(seed ^ 0x5eed), metrics)?;
    let metric = match (out.diverged_at, &out.last) {
        (None, Some(e)) => e.get("test_metric")?,
        _ => f64::NAN,
    };
    let mut tensors = store.to_tensors();
    if let Some(head) = task.training.head() {
        tensors.push((
            "head.closed_form".into(),
            AnyTensor::from_tensor(head.weight()),
        ));
    }
    Ok(((metric, start.elapsed().as_secs_f64()), tensors))
}
