//! The closed-form last-layer experiments: a backbone trained by SGD with the last
//! layer refitted in closed form each step (proximal, or per-batch ridge), against
//! SGD and Adam training the whole network, across batch sizes and seeds.

pub mod classes;
pub mod classification;
pub mod regression;

use crate::data::Dataset;
use crate::report::{mean_std, Metrics, Table};
use autograd::{backward, no_grad, Var};
use nn::checkpoint::{AnyTensor, NamedTensors};
use nn::{loss, Activation, Linear, Mlp, Module, ParamGrads, ParamStore};
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
    /// Name in tables.
    pub fn label(self, s: &Settings) -> String {
        match self {
            Method::Sgd => "SGD (squared loss)".into(),
            Method::Adam => "Adam (squared loss)".into(),
            Method::CrossEntropy => "SGD (cross-entropy)".into(),
            Method::Ridge => format!("per-batch ridge c.f. (β = {})", s.beta),
            Method::Proximal => format!("proximal c.f. (λ = {})", s.lambda),
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

/// How an arm updates its model.
enum Training {
    /// A gradient optimiser over the whole network.
    Gradient(Box<dyn Optimizer<f64>>),
    /// A backbone optimiser with a closed-form head.
    Closed(ClosedFormTrainer<f64>),
}

/// Trains one arm and returns (final test metric, seconds) and the trained model's
/// tensors (the closed-form head as `head.closed_form`). `targets` are the
/// training targets of the squared loss `[n, k]`; `labels` the classes for
/// cross-entropy; `evaluate` scores test-set predictions `[n_test, k]`.
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
    let mut training = if closed {
        let rule = if method == Method::Ridge {
            HeadRule::Ridge { beta: s.beta }
        } else {
            HeadRule::Proximal { lambda: s.lambda }
        };
        Training::Closed(ClosedFormTrainer {
            head: ClosedFormHead::new(d, k, true, rule, SolveForm::Auto)?,
            optimizer,
            order: Order::BackboneFirst,
            buffers: Vec::new(),
        })
    } else {
        Training::Gradient(optimizer)
    };
    let series = format!("{}/b{batch}/seed{seed}", method.tag());
    let test = Var::constant(test_x.clone());
    let eval_every = (s.steps / 20).max(1);
    let mut order_rng = Rng::new(seed ^ 0x5eed);
    let mut queue: Vec<Vec<usize>> = Vec::new();
    let mut progress = crate::report::progress::Progress::new(&series, s.steps, s.quiet);
    let mut last_metric = f64::NAN;
    for step in 1..=s.steps {
        if queue.is_empty() {
            // Full batches only, for every arm: the same stream of equal batches.
            queue = train.full_batches(batch, Some(&mut order_rng))?;
            queue.reverse();
        }
        let idx = queue.pop().expect("a batch");
        let xb = Var::constant(train.x.index_select(0, &idx)?);
        let yb = targets.index_select(0, &idx)?;
        let loss = match &mut training {
            Training::Closed(trainer) => trainer.step(|| model.features(&xb), &yb)?,
            Training::Gradient(optimizer) => {
                let out = model.predict(&xb, None)?;
                let l = match (method, labels) {
                    (Method::CrossEntropy, Some(lab)) => {
                        let lb: Vec<usize> = idx.iter().map(|&i| lab[i]).collect();
                        loss::cross_entropy(&out, &lb, 0.0)?
                    }
                    _ => squared_loss(&out, &yb)?,
                };
                let g = ParamGrads::collect(optimizer.params(), &backward(&l)?);
                optimizer.step(&g)?;
                l.item()?
            }
        };
        progress.update(step, step * batch / train.len().max(1), loss);
        if step % eval_every == 0 || step == s.steps {
            let head = match &training {
                Training::Closed(t) => Some(&t.head),
                Training::Gradient(_) => None,
            };
            let pred = no_grad(|| model.predict(&test, head))?;
            last_metric = evaluate(pred.value())?;
            metrics.push(&series, step, "train_loss", loss);
            metrics.push(&series, step, "test_metric", last_metric);
        }
    }
    let mut tensors = store.to_tensors();
    if let Training::Closed(t) = &training {
        tensors.push((
            "head.closed_form".into(),
            AnyTensor::from_tensor(t.head.weight()),
        ));
    }
    Ok(((last_metric, start.elapsed().as_secs_f64()), tensors))
}

/// Runs every method at every batch size over the seeds and tabulates the final
/// test metric (mean ± std over seeds), one column per batch size.
#[allow(clippy::too_many_arguments)]
pub fn sweep(
    title: &str,
    methods: &[Method],
    train: &Dataset,
    targets: &Tensor<f64>,
    labels: Option<&[usize]>,
    test_x: &Tensor<f64>,
    evaluate: &dyn Fn(&Tensor<f64>) -> Result<f64>,
    batches: &[usize],
    seeds: &[u64],
    s: &Settings,
    metric_name: &str,
    digits: usize,
    metrics: &mut Metrics,
    model: &mut NamedTensors,
) -> Result<Table> {
    let mut headers = vec!["method".to_string()];
    headers.extend(batches.iter().map(|&b| {
        if b >= train.len() {
            format!("full batch ({b})")
        } else {
            format!("batch {b}")
        }
    }));
    headers.push("s / run".into());
    let mut table = Table {
        title: format!(
            "{title} — test {metric_name}, {} steps, {} seeds (mean ± std)",
            s.steps,
            seeds.len()
        ),
        headers,
        rows: Vec::new(),
    };
    for &m in methods {
        let mut row = vec![m.label(s)];
        let mut secs = Vec::new();
        for &b in batches {
            let mut vals = Vec::new();
            for &seed in seeds {
                let ((v, t), tensors) = run_arm(
                    m,
                    train,
                    targets,
                    labels,
                    test_x,
                    evaluate,
                    b.min(train.len()),
                    seed,
                    s,
                    metrics,
                )?;
                if seed == seeds[0] {
                    model.extend(
                        tensors
                            .into_iter()
                            .map(|(k, x)| (format!("{}.b{b}.{k}", m.tag()), x)),
                    );
                }
                vals.push(v);
                secs.push(t);
            }
            row.push(mean_std(&vals, digits));
        }
        row.push(mean_std(&secs, 2));
        table.row(row);
    }
    Ok(table)
}
