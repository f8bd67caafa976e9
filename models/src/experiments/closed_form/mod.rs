//! The closed-form last-layer experiments: a backbone trained by SGD or Adam with the last
//! layer refitted in closed form each step (proximal, or per-batch ridge), against
//! SGD and Adam training the whole network, across batch sizes and seeds.

pub mod classes;
pub mod classification;
pub mod comparison;
pub mod dfiv;
pub mod one_step;
pub mod pairs;
pub mod regression;

use crate::data::Dataset;
use crate::report::evidence::Better;
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

/// The optimiser of the network, or of the backbone under a closed-form head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backbone {
    /// SGD with momentum 0.9.
    Sgd,
    /// Adam.
    Adam,
}

impl Backbone {
    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Backbone::Sgd => "SGD",
            Backbone::Adam => "Adam",
        }
    }
}

/// How an arm trains.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Method {
    /// The whole network on the squared loss.
    Squared(Backbone),
    /// The whole network on cross-entropy (classification only).
    CrossEntropy(Backbone),
    /// The backbone by its optimiser, the last layer refitted by per-batch ridge (β).
    Ridge(Backbone),
    /// The backbone by its optimiser, the last layer refitted by the proximal
    /// solution (λ).
    Proximal(Backbone),
}

impl Method {
    /// The optimiser that takes the gradient steps.
    pub fn backbone(self) -> Backbone {
        match self {
            Method::Squared(b)
            | Method::CrossEntropy(b)
            | Method::Ridge(b)
            | Method::Proximal(b) => b,
        }
    }

    /// Whether the last layer is refitted in closed form.
    pub fn closed_form(self) -> bool {
        matches!(self, Method::Ridge(_) | Method::Proximal(_))
    }

    /// Name in tables, without its hyper-parameter (the SGD-backbone heads keep
    /// their short names).
    pub fn name(self) -> String {
        match self {
            Method::Squared(b) => format!("{} (squared loss)", b.name()),
            Method::CrossEntropy(b) => format!("{} (cross-entropy)", b.name()),
            Method::Ridge(Backbone::Sgd) => "per-batch ridge c.f.".into(),
            Method::Proximal(Backbone::Sgd) => "proximal c.f.".into(),
            Method::Ridge(b) => format!("per-batch ridge c.f., {} backbone", b.name()),
            Method::Proximal(b) => format!("proximal c.f., {} backbone", b.name()),
        }
    }

    /// Name in tables, with the closed-form arms' λ or β from `s`.
    pub fn label(self, s: &Settings) -> String {
        match self {
            Method::Ridge(_) => format!("{} (β = {})", self.name(), s.beta),
            Method::Proximal(_) => format!("{} (λ = {})", self.name(), s.lambda),
            _ => self.name(),
        }
    }

    /// The grid arm and curve name.
    fn tag(self) -> &'static str {
        match self {
            Method::Squared(Backbone::Sgd) => "sgd",
            Method::Squared(Backbone::Adam) => "adam",
            Method::CrossEntropy(Backbone::Sgd) => "ce",
            Method::CrossEntropy(Backbone::Adam) => "ce-adam",
            Method::Ridge(Backbone::Sgd) => "ridge",
            Method::Ridge(Backbone::Adam) => "adam-ridge",
            Method::Proximal(Backbone::Sgd) => "prox",
            Method::Proximal(Backbone::Adam) => "adam-prox",
        }
    }
}

/// Settings shared by the arms of one experiment.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The training budget of every run: the same epochs at every batch size (the
    /// paper's regime), or the same steps.
    pub budget: Budget,
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

impl Settings {
    /// The x axis of the curves: evaluations come per epoch under an epoch
    /// budget, every 1/20 of a step budget.
    pub fn x_label(&self) -> &'static str {
        match self.budget {
            Budget::Epochs(_) => "epoch",
            Budget::Steps(_) => "step",
        }
    }

    /// The budget as the titles state it: "20 epochs" or "300 steps".
    pub fn describe_budget(&self) -> String {
        match self.budget {
            Budget::Epochs(e) => format!("{e} epochs at every batch size"),
            Budget::Steps(n) => format!("{n} steps at every batch size"),
        }
    }
}

/// A training set with its squared-loss targets, and how predictions are scored.
pub struct Task<'a> {
    /// The training inputs.
    pub train: &'a Dataset,
    /// The squared-loss targets `[n, k]` of `train`.
    pub targets: &'a Tensor<f64>,
    /// The classes of `train`, for cross-entropy.
    pub labels: Option<&'a [usize]>,
    /// The inputs to score.
    pub x: &'a Tensor<f64>,
    /// Scores predictions `[n_x, k]` of `x`.
    pub evaluate: &'a dyn Fn(&Tensor<f64>) -> Result<f64>,
    /// Which way the score improves (for the best evaluation).
    pub better: Better,
}

/// What one arm's run measured.
pub struct ArmRun {
    /// The test metric after the last step (NaN when the loss stopped being finite).
    pub last: f64,
    /// The best test metric over the evaluations (per epoch, or every 1/20 of a
    /// step budget).
    pub best: f64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// The trained model's tensors (the closed-form head as `head.closed_form`).
    pub tensors: NamedTensors,
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
                (Method::CrossEntropy(_), Some(lab)) => {
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

/// Trains one arm on `task` at `batch` and `seed`, scoring `task.x` at every
/// evaluation. The squared-loss arms fit `task.targets`, cross-entropy the
/// labels. A run whose loss stops being finite scores NaN.
pub fn run_arm(
    method: Method,
    task: &Task,
    (batch, seed): (usize, u64),
    s: &Settings,
    metrics: &mut Metrics,
) -> Result<ArmRun> {
    let Task {
        train,
        targets,
        labels,
        x: test_x,
        evaluate,
        better,
    } = *task;
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
    let closed = method.closed_form();
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
    let optimizer: Box<dyn Optimizer<f64>> = match method.backbone() {
        Backbone::Adam => Box::new(Adam::new(store.trainable(), AdamConfig::adam(s.adam_lr))?),
        Backbone::Sgd => Box::new(Sgd::new(
            store.trainable(),
            SgdConfig::new(s.sgd_lr).momentum(0.9),
        )?),
    };
    let training = if closed {
        let rule = if let Method::Ridge(_) = method {
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
        s.budget,
        // Full batches only, for every arm: the same stream of equal batches.
        Batches::Shuffled {
            samples: train.len(),
            size: batch,
            ragged: false,
        },
        format!("{}/b{batch}/seed{seed}", method.tag()),
        s.quiet,
    );
    plan.evaluate = match s.budget {
        Budget::Epochs(_) => Cadence::Epochs(1),
        Budget::Steps(n) => Cadence::Steps((n / 20).max(1)),
    };
    plan.best = Some(("test_metric".into(), better));
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
    let (last, best) = match (out.diverged_at, &out.last, &out.best) {
        (None, Some(last), Some(best)) => (last.get("test_metric")?, best.get("test_metric")?),
        _ => (f64::NAN, f64::NAN),
    };
    let mut tensors = store.to_tensors();
    if let Some(head) = task.training.head() {
        tensors.push((
            "head.closed_form".into(),
            AnyTensor::from_tensor(head.weight()),
        ));
    }
    Ok(ArmRun {
        last,
        best,
        seconds: start.elapsed().as_secs_f64(),
        tensors,
    })
}
