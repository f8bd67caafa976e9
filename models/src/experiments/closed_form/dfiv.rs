//! `dfiv`: deep feature instrumental-variable regression (Xu et al. 2021) on the
//! demand design, as the authors' trainer runs it (liyuan9988/DeepFeatureIV,
//! `src/models/DFIV/trainer.py`), with its two ridge stages solved per mini-batch —
//! and the same training with proximal closed-form heads in place of the per-batch
//! ridge solves. The claim under test (the closed-form last-layer paper): the
//! proximal heads make DFIV's costly final refit on the full data unnecessary.
//!
//! DFIV, per paired mini-batch of the two stage halves:
//! 1. instrument net ψ_Z, 20 Adam steps on the stage-1 ridge loss ‖ψ_X(p) − [ψ_Z(z), 1]Vᵀ‖²
//!    with V solved on the batch (treatment net fixed);
//! 2. covariate net ψ_C, 20 Adam steps on the stage-2 loss ‖y − Φ₂uᵀ‖² with
//!    Φ₂ = [V̂ψ_Z, 1] ⊗ [ψ_C(t, s), 1] (34 features) and u solved on the batch;
//! 3. treatment net ψ_X, 1 Adam step on the stage-2 loss, its gradient flowing through
//!    the stage-1 solve V(ψ_X) (the stage-1 weight minimises a different objective,
//!    so the envelope theorem does not cover it);
//!
//! then, after the last epoch, V and u refitted on the whole stage halves
//! (`fit_t`), which is what the authors score. λ₁ = λ₂ = 0.1 scaled by each stage's
//! sample count, Adam at 10⁻³, weight decay 0.1 on the covariate net only, networks of
//! `nn_structure_for_demand.py` with their BatchNorm train/eval modes.
//!
//! Both closed-form weights inside the loss are treated by the envelope theorem (the
//! loss is the objective the solve minimises, so the gradient with W held at W* is
//! exact) except V in step 3. The proximal arm keeps DFIV's ridge term and adds the
//! pull toward the previous solution with the same λ, untuned:
//! u = argmin Σ‖y − Φ₂uᵀ‖² + λ‖u‖² + λ‖u − u_{t−1}‖², anchored at the u carried from
//! the previous mini-batch; V stays DFIV's per-batch ridge, because V estimates the
//! conditional expectation of the treatment features that the treatment net is
//! still moving — an anchored V lags them, and the test predictions, which use the
//! treatment net directly, disagree with the u fitted on the lagging V
//! (`--proximal-stages 1,2` anchors V too, to show it). After each mini-batch both
//! weights are refitted at the updated networks (evaluation-mode features, as at
//! test time) and carried
//! on. Scored: the structural MSE on the 2,800-point test grid with the weights left
//! by training ("no refit") and after DFIV's final full refit, and the wall time of
//! training and of that refit. The budget is the authors' epoch count, so smaller
//! batches take more steps, as in their trainer; ragged last batches are dropped.

use crate::cli::RunConfig;
use crate::data::demand::{self, Demand};
use crate::error::{Error, Result};
use crate::grid::{Grid, Numbers};
use crate::report::{mean_std, Metrics, Plot, Table};
use crate::sweep::field;
use crate::train::{train as train_loop, Batches, Budget, Cadence, Plan, Task};
use autograd::{backward, Var};
use nn::checkpoint::{AnyTensor, NamedTensors};
use nn::{Activation, BatchNorm, Linear, Module, ParamGrads, ParamStore, Sequential};
use optim::closed_form::{
    proximal_solution, proximal_var, ridge_solution, ridge_var, SolveForm, SolvePath,
};
use optim::{Adam, AdamConfig, Optimizer};
use std::time::Instant;
use tensor::{Rng, Tensor};

/// Options of this experiment.
pub const OPTIONS: &[(&str, &str)] = &[
    (
        "samples",
        "training samples, half per stage (quick 1000, full 5000)",
    ),
    ("rho", "correlation ρ of the price and demand noise (0.5)"),
    (
        "batches",
        "mini-batch sizes per stage, 0 = the whole stage half (quick 25,100,0; full 25,100,500,0)",
    ),
    (
        "epochs",
        "epochs over the stage halves (100, the authors')",
    ),
    (
        "proximal-stages",
        "which weights the proximal arm anchors: 2 = the stage-2 last layer u only (default; the envelope theorem covers only it), 1,2 = V too",
    ),
    (
        "pulls",
        "the proximal pull toward the previous u as multiples of λ, swept at the first seed in a table of its own and scored on the observable stage-2 loss of held-out samples (0.1,1,10; empty to skip)",
    ),
    (
        "lambda",
        "λ₁ = λ₂ against a stage's mean loss (0.1, the authors'); the proximal heads use the same λ as their pull toward the previous weights",
    ),
];

/// Adam steps of the instrument net per mini-batch (the authors' `stage1_iter`).
const STAGE1_ITER: usize = 20;
/// Adam steps of the covariate net per mini-batch (`covariate_iter`).
const COVARIATE_ITER: usize = 20;
/// Adam steps of the treatment net per mini-batch (`stage2_iter`).
const STAGE2_ITER: usize = 1;

/// How the closed-form weights are solved during training.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Heads {
    /// Ridge on the mini-batch (DFIV).
    Ridge,
    /// Proximal ridge anchored at the previous mini-batch's weights.
    Proximal,
}

/// One of DFIV's three feature networks, its store (for its own train/eval mode)
/// and its Adam optimiser.
struct Net {
    store: ParamStore<f64>,
    body: Sequential<f64>,
    opt: Adam<f64>,
}

impl Net {
    /// Builds a network from (layer kind, width) steps after the input.
    fn new(name: &str, layers: &[Layer], weight_decay: f64, rng: &mut Rng) -> Result<Self> {
        let store = ParamStore::new();
        let root = store.root().sub(name);
        let mut body = Sequential::new();
        let mut width = 0;
        for (i, layer) in layers.iter().enumerate() {
            let scope = root.sub(i.to_string());
            body = match *layer {
                Layer::Input(n) => {
                    width = n;
                    continue;
                }
                Layer::Linear(n) => {
                    let l = Linear::new(&scope, width, n, true, rng)?;
                    width = n;
                    body.push(l)
                }
                Layer::Relu => body.push(Activation::Relu),
                Layer::BatchNorm => body.push(BatchNorm::new(&scope, width)?),
            };
        }
        let opt = Adam::new(
            store.trainable(),
            AdamConfig {
                weight_decay,
                ..AdamConfig::adam(1e-3)
            },
        )?;
        Ok(Net { store, body, opt })
    }

    /// The features of `x`, in training or evaluation mode.
    fn forward(&self, x: &Tensor<f64>, training: bool) -> Result<Var<f64>> {
        if training {
            self.store.train();
        } else {
            self.store.eval();
        }
        Ok(self.body.forward(&Var::constant(x.clone()))?)
    }

    /// One Adam step on `loss`.
    fn step(&mut self, loss: &Var<f64>) -> Result<()> {
        let grads = ParamGrads::collect(self.opt.params(), &backward(loss)?);
        Ok(self.opt.step(&grads)?)
    }
}

/// A layer of [`Net::new`].
#[derive(Clone, Copy)]
enum Layer {
    Input(usize),
    Linear(usize),
    Relu,
    BatchNorm,
}

/// The three networks of `nn_structure_for_demand.py`.
struct Networks {
    treatment: Net,
    instrument: Net,
    covariate: Net,
}

impl Networks {
    fn new(seed: u64) -> Result<Self> {
        use Layer::*;
        let mut rng = Rng::new(seed);
        Ok(Networks {
            treatment: Net::new(
                "treatment",
                &[Input(1), Linear(16), Relu, Linear(1)],
                0.0,
                &mut rng,
            )?,
            instrument: Net::new(
                "instrument",
                &[
                    Input(3),
                    Linear(128),
                    Relu,
                    Linear(64),
                    Relu,
                    Linear(32),
                    BatchNorm,
                ],
                0.0,
                &mut rng,
            )?,
            covariate: Net::new(
                "covariate",
                &[
                    Input(2),
                    Linear(128),
                    Relu,
                    Linear(32),
                    BatchNorm,
                    Relu,
                    Linear(16),
                    Relu,
                ],
                0.1,
                &mut rng,
            )?,
        })
    }
}

/// `[x, 1]`: the intercept column of DFIV's `add_const_col`.
fn with_ones(x: &Var<f64>) -> Result<Var<f64>> {
    let ones = Var::constant(Tensor::ones(&[x.shape()[0], 1])?);
    Ok(Var::cat(&[x, &ones], 1)?)
}

/// The stage-2 features: the row-wise outer product [t̂, 1] ⊗ [c, 1], flattened.
fn stage2_features(treatment: &Var<f64>, covariate: &Var<f64>) -> Result<Var<f64>> {
    let a = with_ones(treatment)?;
    let c = with_ones(covariate)?;
    let (b, i, j) = (a.shape()[0], a.shape()[1], c.shape()[1]);
    Ok(a.reshape(&[b, i, 1])?
        .mul(&c.reshape(&[b, 1, j])?)?
        .reshape(&[b, i * j])?)
}

/// Σ‖y − ΦWᵀ‖² with W held constant (the envelope-theorem loss).
fn fit_loss(phi: &Var<f64>, w: &Tensor<f64>, y: &Tensor<f64>) -> Result<Var<f64>> {
    Ok(phi
        .matmul(&Var::constant(w.t()?))?
        .sub(&Var::constant(y.clone()))?
        .square()?
        .sum_all()?)
}

/// The two ridge stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// V: instrument features → treatment features.
    One,
    /// u: stage-2 features → outcome (the last layer).
    Two,
}

/// The closed-form solves of one arm, counting the paths they took.
struct Solver {
    /// How V is solved.
    stage1: Heads,
    /// How u is solved.
    stage2: Heads,
    /// The proximal pull toward the previous weight, as a multiple of the ridge λ.
    pull: f64,
    /// Solves that needed the jitter or the QR fallback.
    fallbacks: usize,
}

impl Solver {
    /// Both stages by ridge.
    fn ridge() -> Self {
        Solver {
            stage1: Heads::Ridge,
            stage2: Heads::Ridge,
            pull: 0.0,
            fallbacks: 0,
        }
    }

    /// argmin Σ‖y − Φwᵀ‖² + λ‖w‖² + pull·λ‖w − w_prev‖² is the proximal solution of
    /// strength (1 + pull)λ anchored at w_prev·pull/(1 + pull).
    fn proximal_terms(&self, prev: &Tensor<f64>, lam: f64) -> (Tensor<f64>, f64) {
        (
            prev.mul_scalar(self.pull / (1.0 + self.pull)),
            (1.0 + self.pull) * lam,
        )
    }

    fn heads(&self, stage: Stage) -> Heads {
        match stage {
            Stage::One => self.stage1,
            Stage::Two => self.stage2,
        }
    }

    /// The stage's weight for features `phi`, targets `y`, previous weight `prev`.
    fn fit(
        &mut self,
        stage: Stage,
        phi: &Tensor<f64>,
        y: &Tensor<f64>,
        prev: &Tensor<f64>,
        lam: f64,
    ) -> Result<Tensor<f64>> {
        let solution = match self.heads(stage) {
            Heads::Ridge => ridge_solution(phi, y, lam, SolveForm::Auto)?,
            Heads::Proximal => {
                let (anchor, strength) = self.proximal_terms(prev, lam);
                proximal_solution(phi, y, &anchor, strength, SolveForm::Auto)?
            }
        };
        if solution.path != SolvePath::Cholesky {
            self.fallbacks += 1;
        }
        Ok(solution.w)
    }

    /// The stage-1 solve, differentiable in the targets.
    fn fit_stage1_var(
        &self,
        phi: &Var<f64>,
        y: &Var<f64>,
        prev: &Tensor<f64>,
        lam: f64,
    ) -> Result<Var<f64>> {
        match self.stage1 {
            Heads::Ridge => Ok(ridge_var(phi, y, lam)?),
            Heads::Proximal => {
                let (anchor, strength) = self.proximal_terms(prev, lam);
                Ok(proximal_var(phi, y, &anchor, strength)?)
            }
        }
    }
}

/// The two closed-form weights: stage 1 V `[1, 33]`, stage 2 u `[1, 34]`.
#[derive(Clone)]
struct Weights {
    v: Tensor<f64>,
    u: Tensor<f64>,
}

/// Fits both stages on `stage1`/`stage2` with evaluation-mode features.
fn fit_stages(
    nets: &Networks,
    solver: &mut Solver,
    stage1: &Demand,
    stage2: &Demand,
    anchor: &Weights,
    lam: (f64, f64),
) -> Result<Weights> {
    let z1 = with_ones(&nets.instrument.forward(&stage1.instrument, false)?)?;
    let z2 = with_ones(&nets.instrument.forward(&stage2.instrument, false)?)?;
    let t1 = nets.treatment.forward(&stage1.treatment, false)?;
    let v = solver.fit(Stage::One, z1.value(), t1.value(), &anchor.v, lam.0)?;
    let predicted = z2.matmul(&Var::constant(v.t()?))?;
    let c2 = nets.covariate.forward(&stage2.covariate, false)?;
    let phi = stage2_features(&predicted, &c2)?;
    let u = solver.fit(Stage::Two, phi.value(), &stage2.outcome, &anchor.u, lam.1)?;
    Ok(Weights { v, u })
}

/// Structural MSE of the networks with stage-2 weight `u` on the test grid.
fn structural_mse(nets: &Networks, u: &Tensor<f64>, test: &Demand) -> Result<f64> {
    let t = nets.treatment.forward(&test.treatment, false)?;
    let c = nets.covariate.forward(&test.covariate, false)?;
    let pred = stage2_features(&t, &c)?.matmul(&Var::constant(u.t()?))?;
    Ok(pred
        .value()
        .sub(&test.structural)?
        .square()
        .mean_all()?
        .item()?)
}

/// The out-of-sample stage-2 loss mean (y − Φ₂uᵀ)² on held-out samples, with their
/// treatment features predicted from the instrument through V: observable without
/// the structural function, DFIV's validation criterion.
fn stage2_loss(nets: &Networks, w: &Weights, val: &Demand) -> Result<f64> {
    let z = with_ones(&nets.instrument.forward(&val.instrument, false)?)?;
    let predicted = z.matmul(&Var::constant(w.v.t()?))?;
    let c = nets.covariate.forward(&val.covariate, false)?;
    let pred = stage2_features(&predicted, &c)?.matmul(&Var::constant(w.u.t()?))?;
    Ok(pred
        .value()
        .sub(&val.outcome)?
        .square()
        .mean_all()?
        .item()?)
}

/// The measurements of one training run.
struct Outcome {
    /// Test MSE with the weights left by training.
    mse_no_refit: f64,
    /// Validation stage-2 loss with those weights.
    validation_no_refit: f64,
    /// Test MSE after the final full refit.
    mse_refit: f64,
    /// Seconds of training (test evaluations excluded).
    train_secs: f64,
    /// Seconds of the final full refit.
    refit_secs: f64,
    /// Solves that needed the jitter or the QR fallback.
    fallbacks: usize,
    /// The trained networks and the no-refit weights.
    tensors: NamedTensors,
}

/// Everything one run needs.
struct Setup<'a> {
    stage1: &'a Demand,
    stage2: &'a Demand,
    test: &'a Demand,
    batch: usize,
    epochs: usize,
    lambda: f64,
    seed: u64,
    /// The proximal arm anchors the stage-1 weight too (else only the last layer u).
    proximal_stage1: bool,
    /// The proximal pull as a multiple of λ (1 in the headline arms).
    pull: f64,
    /// Held-out samples for the observable stage-2 loss (the validation criterion).
    validation: &'a Demand,
    quiet: bool,
}

/// A shuffled epoch of full batches of `batch` indices below `n` (ragged rest dropped).
fn shuffled_batches(n: usize, batch: usize, rng: &mut Rng) -> Vec<Vec<usize>> {
    rng.permutation(n)
        .chunks_exact(batch)
        .map(<[usize]>::to_vec)
        .collect()
}

/// One DFIV run as the trainer drives it: each step takes the next pair of stage
/// batches (both stages shuffled afresh each epoch, from one order), trains the
/// three networks in the authors' order and carries the stage weights on.
struct TwoStage<'a> {
    nets: Networks,
    solver: Solver,
    w: Weights,
    /// λ scaled by each stage's whole sample count.
    lam: (f64, f64),
    s: &'a Setup<'a>,
    order: Rng,
    queue: std::vec::IntoIter<(Vec<usize>, Vec<usize>)>,
}

impl Task for TwoStage<'_> {
    fn set_lr_factor(&mut self, _factor: f64) -> tensor::Result<()> {
        Ok(())
    }

    fn step(&mut self, _batch: &[usize]) -> tensor::Result<f64> {
        let (s, lam) = (self.s, self.lam);
        let (i1, i2) = match self.queue.next() {
            Some(pair) => pair,
            None => {
                let b1 = shuffled_batches(s.stage1.len(), s.batch, &mut self.order);
                let b2 = shuffled_batches(s.stage2.len(), s.batch, &mut self.order);
                self.queue = b1.into_iter().zip(b2).collect::<Vec<_>>().into_iter();
                self.queue.next().ok_or_else(|| {
                    tensor::Error::value("dfiv", "a stage half holds no full batch")
                })?
            }
        };
        let (nets, solver, w) = (&mut self.nets, &mut self.solver, &self.w);
        let (b1, b2) = (s.stage1.select(&i1)?, s.stage2.select(&i2)?);
        // 1. Instrument net on the stage-1 loss (treatment features fixed).
        let t1 = nets
            .treatment
            .forward(&b1.treatment, false)?
            .value()
            .clone();
        for _ in 0..STAGE1_ITER {
            let z1 = with_ones(&nets.instrument.forward(&b1.instrument, true)?)?;
            let v = solver.fit(Stage::One, z1.value(), &t1, &w.v, lam.0)?;
            let loss = fit_loss(&z1, &v, &t1)?;
            nets.instrument.step(&loss)?;
        }
        // 2. Covariate net on the stage-2 loss (predicted treatment fixed).
        let z1 = with_ones(&nets.instrument.forward(&b1.instrument, false)?)?;
        let z2 = with_ones(&nets.instrument.forward(&b2.instrument, false)?)?;
        let v = solver.fit(Stage::One, z1.value(), &t1, &w.v, lam.0)?;
        let predicted = z2.matmul(&Var::constant(v.t()?))?;
        for _ in 0..COVARIATE_ITER {
            let c2 = nets.covariate.forward(&b2.covariate, true)?;
            let phi = stage2_features(&predicted, &c2)?;
            let u = solver.fit(Stage::Two, phi.value(), &b2.outcome, &w.u, lam.1)?;
            let loss = fit_loss(&phi, &u, &b2.outcome)?;
            nets.covariate.step(&loss)?;
        }
        // 3. Treatment net through the stage-1 solve.
        let c2 = Var::constant(
            nets.covariate
                .forward(&b2.covariate, false)?
                .value()
                .clone(),
        );
        let z1 = Var::constant(z1.value().clone());
        let z2 = Var::constant(z2.value().clone());
        let mut stage2 = f64::NAN;
        for _ in 0..STAGE2_ITER {
            let t1 = nets.treatment.forward(&b1.treatment, true)?;
            let v = solver.fit_stage1_var(&z1, &t1, &w.v, lam.0)?;
            let phi = stage2_features(&z2.matmul(&v.t()?)?, &c2)?;
            let u = solver.fit(Stage::Two, phi.value(), &b2.outcome, &w.u, lam.1)?;
            let loss = fit_loss(&phi, &u, &b2.outcome)?;
            stage2 = loss.item()?;
            nets.treatment.step(&loss)?;
        }
        // The weights at the updated networks, carried to the next mini-batch.
        self.w = fit_stages(nets, solver, &b1, &b2, w, lam)?;
        Ok(stage2)
    }

    fn evaluate(&mut self) -> tensor::Result<Vec<(String, f64)>> {
        let mse = structural_mse(&self.nets, &self.w.u, self.s.test)?;
        Ok(vec![("test_mse".into(), mse)])
    }
}

/// One DFIV training run with the given heads.
fn train(heads: Heads, s: &Setup, metrics: &mut Metrics) -> Result<Outcome> {
    let solver = Solver {
        stage1: if s.proximal_stage1 {
            heads
        } else {
            Heads::Ridge
        },
        stage2: heads,
        pull: s.pull,
        fallbacks: 0,
    };
    let (n1, n2) = (s.stage1.len(), s.stage2.len());
    let tag = match heads {
        Heads::Ridge => "ridge",
        Heads::Proximal => "prox",
    };
    let mut plan = Plan::new(
        Budget::Epochs(s.epochs),
        Batches::Drawn {
            per_pass: (n1 / s.batch).min(n2 / s.batch),
        },
        format!("{tag}/b{}/seed{}", s.batch, s.seed),
        s.quiet,
    );
    plan.evaluate = Cadence::Epochs(10);
    let mut task = TwoStage {
        nets: Networks::new(s.seed)?,
        solver,
        w: Weights {
            v: Tensor::zeros(&[1, 33])?,
            u: Tensor::zeros(&[1, 34])?,
        },
        // The authors scale λ by each stage's whole sample count, also for
        // mini-batches.
        lam: (s.lambda * n1 as f64, s.lambda * n2 as f64),
        s,
        order: Rng::new(s.seed ^ 0xd1f1),
        queue: Vec::new().into_iter(),
    };
    let out = train_loop(&plan, &mut task, &mut Rng::new(0), metrics)?;
    let TwoStage {
        nets,
        solver,
        w,
        lam,
        ..
    } = task;
    let mse_no_refit = structural_mse(&nets, &w.u, s.test)?;
    let validation_no_refit = stage2_loss(&nets, &w, s.validation)?;
    let start = Instant::now();
    let mut refit_solver = Solver::ridge();
    let refit = fit_stages(&nets, &mut refit_solver, s.stage1, s.stage2, &w, lam)?;
    let refit_secs = start.elapsed().as_secs_f64();
    let mse_refit = structural_mse(&nets, &refit.u, s.test)?;
    let mut tensors = Vec::new();
    for net in [&nets.treatment, &nets.instrument, &nets.covariate] {
        tensors.extend(net.store.to_tensors());
    }
    tensors.push(("stage1.weight".into(), AnyTensor::from_tensor(&w.v)));
    tensors.push(("stage2.weight".into(), AnyTensor::from_tensor(&w.u)));
    Ok(Outcome {
        mse_no_refit,
        validation_no_refit,
        mse_refit,
        train_secs: out.step_seconds,
        refit_secs,
        fallbacks: solver.fallbacks + refit_solver.fallbacks,
        tensors,
    })
}

impl Outcome {
    /// The cell's numbers.
    fn numbers(&self) -> Numbers {
        vec![
            ("mse_no_refit".into(), self.mse_no_refit),
            ("validation_no_refit".into(), self.validation_no_refit),
            ("mse_refit".into(), self.mse_refit),
            ("train_secs".into(), self.train_secs),
            ("refit_secs".into(), self.refit_secs),
            ("fallbacks".into(), self.fallbacks as f64),
        ]
    }
}

/// The grid arm of a head.
fn tag(heads: Heads) -> &'static str {
    match heads {
        Heads::Ridge => "ridge",
        Heads::Proximal => "prox",
    }
}

/// The options of one run.
struct Options {
    samples: usize,
    rho: f64,
    epochs: usize,
    lambda: f64,
    batches: Vec<usize>,
    proximal_stage1: bool,
    pulls: Vec<f64>,
    quiet: bool,
}

impl Options {
    /// The options from the command line, checked.
    fn parse(cfg: &RunConfig) -> Result<Options> {
        cfg.check_known("dfiv", OPTIONS)?;
        let default_batches: &[usize] = if cfg.quick {
            &[25, 100, 0]
        } else {
            &[25, 100, 500, 0]
        };
        let o = Options {
            samples: cfg.opt("samples", if cfg.quick { 1000 } else { 5000 })?,
            rho: cfg.opt("rho", 0.5)?,
            epochs: cfg.opt("epochs", 100)?,
            lambda: cfg.opt("lambda", 0.1)?,
            batches: cfg.opt_list("batches", default_batches)?,
            proximal_stage1: match cfg.opt("proximal-stages", "2".to_string())?.as_str() {
                "2" => false,
                "1,2" => true,
                other => {
                    return Err(Error::usage(format!(
                        "--proximal-stages must be 2 or 1,2, got '{other}'"
                    )))
                }
            },
            pulls: cfg.opt_list("pulls", &[0.1, 1.0, 10.0])?,
            quiet: cfg.quiet,
        };
        let (samples, epochs, lambda) = (o.samples, o.epochs, o.lambda);
        if samples < 4 || epochs == 0 || !(lambda > 0.0 && lambda.is_finite()) {
            return Err(Error::usage(format!("needs --samples ≥ 4, --epochs > 0 and a finite --lambda > 0, got {samples}, {epochs}, {lambda}"),
            ));
        }
        let half = o.half();
        if let Some(&b) = o.batches.iter().find(|&&b| b > half || b == 1) {
            return Err(Error::usage(format!(
                "--batches: {b} is not in 2..={half} (half of --samples) or 0 for the whole half"
            )));
        }
        if o.pulls.iter().any(|p| !(p.is_finite() && *p > 0.0)) {
            return Err(Error::usage(format!(
                "--pulls need finite values > 0, got {:?}",
                o.pulls
            )));
        }
        Ok(o)
    }

    /// Samples per stage.
    fn half(&self) -> usize {
        self.samples / 2
    }

    /// The batch size of a `--batches` entry (0: the whole half).
    fn batch(&self, b: usize) -> usize {
        if b == 0 {
            self.half()
        } else {
            b
        }
    }

    /// The column header of a `--batches` entry.
    fn column(&self, b: usize) -> String {
        let half = self.half();
        if b == 0 || b == half {
            format!("whole half ({half})")
        } else {
            format!("batch {b}")
        }
    }

    /// One run's setup on `data` at `batch` (an actual size) with `pull`.
    fn setup<'a>(
        &self,
        data: &'a SeedData,
        test: &'a Demand,
        batch: usize,
        pull: f64,
    ) -> Setup<'a> {
        Setup {
            stage1: &data.stage1,
            stage2: &data.stage2,
            test,
            batch,
            epochs: self.epochs,
            lambda: self.lambda,
            seed: data.seed,
            proximal_stage1: self.proximal_stage1,
            pull,
            validation: &data.validation,
            quiet: self.quiet,
        }
    }
}

/// One seed's data: the two stage halves and held-out validation samples.
struct SeedData {
    seed: u64,
    stage1: Demand,
    stage2: Demand,
    validation: Demand,
}

impl SeedData {
    fn of(o: &Options, seed: u64) -> Result<SeedData> {
        let data = demand::train(o.samples, o.rho, seed)?;
        let (stage1, stage2) = data.halves(&mut Rng::new(seed ^ 0x5917))?;
        let validation = demand::train(o.half(), o.rho, seed ^ 0x7a11d)?;
        Ok(SeedData {
            seed,
            stage1,
            stage2,
            validation,
        })
    }
}

/// Both heads at every batch size and seed; the first seed's models go into
/// `model`.
fn run_cells(
    o: &Options,
    data: &[SeedData],
    test: &Demand,
    grid: &mut Grid,
    (metrics, model): (&mut Metrics, &mut NamedTensors),
) -> Result<()> {
    let of = |seed: u64| {
        data.iter()
            .find(|d| d.seed == seed)
            .expect("every seed's data")
    };
    for &b in &o.batches {
        let batch = o.batch(b);
        for heads in [Heads::Ridge, Heads::Proximal] {
            grid.run(
                tag(heads),
                &format!("b{batch}"),
                metrics,
                |seed, _, metrics| {
                    let out = train(heads, &o.setup(of(seed), test, batch, 1.0), metrics)?;
                    if seed == data[0].seed {
                        let prefix = format!("{}.b{batch}", tag(heads));
                        model.extend(
                            out.tensors
                                .iter()
                                .map(|(k, x)| (format!("{prefix}.{k}"), x.clone())),
                        );
                    }
                    Ok(out.numbers())
                },
            )?;
        }
    }
    Ok(())
}

/// The structural-MSE and wall-time tables of the four arms.
fn tables(o: &Options, grid: &Grid, setting: &str) -> Result<(Table, Table)> {
    let mut headers = vec!["arm".to_string()];
    headers.extend(o.batches.iter().map(|&b| o.column(b)));
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut mse = Table::new(
        &format!("dfiv: out-of-sample structural MSE on the 2,800-point grid — {setting}"),
        &headers,
    );
    let mut time = Table::new(&format!("dfiv: wall time per run, s — {setting}"), &headers);
    let arms = [
        (Heads::Ridge, false, "per-batch ridge, no refit"),
        (
            Heads::Ridge,
            true,
            "per-batch ridge + final full refit (DFIV)",
        ),
        (Heads::Proximal, false, "proximal c.f., no refit"),
        (Heads::Proximal, true, "proximal c.f. + final full refit"),
    ];
    let settings: Vec<String> = o
        .batches
        .iter()
        .map(|&b| format!("b{}", o.batch(b)))
        .collect();
    for (heads, refit, label) in arms {
        let (mut row, mut trow) = (vec![label.to_string()], vec![label.to_string()]);
        for at in &settings {
            let name = if refit { "mse_refit" } else { "mse_no_refit" };
            row.push(grid.mean_std(tag(heads), at, name, 1)?);
            let mut secs = grid.values(tag(heads), at, "train_secs")?;
            if refit {
                let refit_secs = grid.values(tag(heads), at, "refit_secs")?;
                secs.iter_mut().zip(refit_secs).for_each(|(s, r)| *s += r);
            }
            trow.push(mean_std(&secs, 2));
        }
        mse.row(row);
        time.row(trow);
    }
    let mut row = vec!["the final full refit alone".to_string()];
    let (mut fallbacks, mut refit_secs) = (0.0, Vec::new());
    for at in &settings {
        for heads in [Heads::Ridge, Heads::Proximal] {
            refit_secs.push(grid.values(tag(heads), at, "refit_secs")?);
            let f = grid.values(tag(heads), at, "fallbacks")?;
            fallbacks += f.iter().filter(|v| v.is_finite()).sum::<f64>();
        }
        let both = refit_secs.concat();
        refit_secs.clear();
        row.push(mean_std(&both, 4));
    }
    time.row(row);
    if fallbacks > 0.0 {
        mse.title.push_str(&format!(
            " [{fallbacks} solves needed the jitter or the QR fallback]"
        ));
    }
    Ok((mse, time))
}

/// The proximal arm at each pull and batch size, at the first seed: the
/// validation stage-2 loss (the choice a user could make without the structural
/// function) and the test structural MSE.
fn pull_sweep(o: &Options, data: &SeedData, test: &Demand, grid: &mut Grid) -> Result<Table> {
    let mut headers = vec!["pull (× λ)".to_string()];
    headers.extend(o.batches.iter().map(|&b| o.column(b)));
    let mut cells = vec![vec![(f64::NAN, f64::NAN); o.batches.len()]; o.pulls.len()];
    for (pi, &pull) in o.pulls.iter().enumerate() {
        for (bi, &b) in o.batches.iter().enumerate() {
            let (arm, at) = (format!("prox-pull{pull}"), format!("b{}", o.batch(b)));
            let setup = o.setup(data, test, o.batch(b), pull);
            grid.run_first(&arm, &at, &mut Metrics::default(), |_, _, m| {
                Ok(train(Heads::Proximal, &setup, m)?.numbers())
            })?;
            let numbers = grid.numbers(&arm, &at, data.seed)?;
            let get = |name| field(numbers, name);
            cells[pi][bi] = (get("validation_no_refit")?, get("mse_no_refit")?);
        }
    }
    let (seed, samples, rho, epochs, lambda, half) =
        (data.seed, o.samples, o.rho, o.epochs, o.lambda, o.half());
    let mut table = Table {
        title: format!(
            "dfiv: the proximal pull swept (u only, no refit), seed {seed}, n = {samples}, ρ = {rho}, {epochs} epochs, λ = {lambda} — validation stage-2 loss on {half} held-out samples / test structural MSE; ← = lowest validation loss per column"
        ),
        headers,
        rows: Vec::new(),
        evidence: Vec::new(),
    };
    for (pi, &pull) in o.pulls.iter().enumerate() {
        let mut row = vec![pull.to_string()];
        for bi in 0..o.batches.len() {
            let best = (0..o.pulls.len())
                .min_by(|&a, &b| cells[a][bi].0.total_cmp(&cells[b][bi].0))
                .expect("a pull");
            let (v, t) = cells[pi][bi];
            row.push(format!(
                "{v:.1} / {t:.1}{}",
                if best == pi { " ←" } else { "" }
            ));
        }
        table.row(row);
    }
    Ok(table)
}

/// Runs the experiment and returns its tables.
pub fn run(cfg: &RunConfig) -> Result<Vec<Table>> {
    let o = Options::parse(cfg)?;
    let seeds = cfg.seed_list(3, 10)?;
    let test = demand::test_grid()?;
    let setting = format!(
        "n = {} ({} per stage), ρ = {}, {} epochs, λ = {}, proximal on {}, {} seeds (mean ± std)",
        o.samples,
        o.half(),
        o.rho,
        o.epochs,
        o.lambda,
        if o.proximal_stage1 { "V and u" } else { "u" },
        seeds.len()
    );
    let data = seeds
        .iter()
        .map(|&seed| SeedData::of(&o, seed))
        .collect::<Result<Vec<_>>>()?;
    let mut grid = Grid::new(cfg, seeds);
    let (mut metrics, mut model) = (Metrics::default(), Vec::new());
    run_cells(&o, &data, &test, &mut grid, (&mut metrics, &mut model))?;
    let (mse, time) = tables(&o, &grid, &setting)?;
    let mut tables = vec![mse, time];
    if !o.pulls.is_empty() {
        tables.push(pull_sweep(&o, &data[0], &test, &mut grid)?);
    }
    Ok(cfg.run_dir("dfiv")?.finish(
        "dfiv",
        Plot::Curves {
            title: "dfiv: structural test MSE (no refit) by epoch",
            metrics: &metrics,
            panels: &[("test_mse", true)],
            x_label: "epoch",
        },
        model,
        tables,
    )?)
}
