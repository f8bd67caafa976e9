//! The lift experiments: log-concave energy-based models in 1-D and convex potential
//! flows in 2-D and 21-D, each trained with PGD, the direct softplus
//! reparametrisation and the lift, and with the three controls that isolate the
//! lift's mechanism: a softplus widened to the lift's parameter count (capacity),
//! a softplus whose latents' learning rate is multiplied by M (step size), and the
//! lift conditioned on a learned code instead of the batch (the batch coupling).

pub mod cells;
pub mod controls;
pub mod density;
pub mod ebm1d;
pub mod flow2d;
pub mod groups;
pub mod landscape;
pub mod latent;
pub mod shoulder;
pub mod tabular;

use crate::report::evidence::{Better, Claim, Evidence};
use crate::report::Metrics;
use autograd::{backward, Var};
use groups::{OptimizerGroups, Rule};
use nn::{init, Activation, Icnn, IcnnConfig, ParamGrads, ParamStore};
use optim::lift::{
    probe, CrossCov, FanInGain, Lift, LiftConfig, LiftVariant, Pgd, Positivity, Softplus,
};
use tensor::{Error, Result, Rng, Tensor};

/// A positivity strategy to compare.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Strategy {
    /// Projection after each step.
    Pgd,
    /// W = softplus(W̃).
    Softplus,
    /// The lift (full: batch body and slack).
    Lift,
    /// The capacity control: softplus on an ICNN widened to the lift's parameter
    /// count.
    SoftplusWide,
    /// The step-size control (the authors' `direct_m<M>`): softplus whose latents'
    /// Adam learning rate is multiplied by M, as the lift's emitted latents move
    /// about ‖h‖₁ times farther per step than a plain parameter.
    SoftplusFast(f64),
    /// The coupling control (CP-Flow's `condition_on='code'`): the lift's
    /// hypernetwork and slack fed a learned code instead of the batch, so its
    /// emission does not depend on the batch and σ²_Jac ≡ 0.
    LiftCode,
}

impl Strategy {
    /// PGD, softplus and the lift: the arms of the paper's claim.
    pub const BASE: [Strategy; 3] = [Strategy::Pgd, Strategy::Softplus, Strategy::Lift];

    /// The arms every setting trains before the step-size control's choice: PGD,
    /// softplus, the lift, the width-matched softplus (with `wide`) and the
    /// learned-code lift.
    pub fn arms(wide: bool) -> Vec<Strategy> {
        let mut arms = Strategy::BASE.to_vec();
        if wide {
            arms.push(Strategy::SoftplusWide);
        }
        arms.push(Strategy::LiftCode);
        arms
    }

    /// Name in tables.
    pub fn name(self) -> String {
        match self {
            Strategy::Pgd => "PGD".into(),
            Strategy::Softplus => "softplus".into(),
            Strategy::Lift => "lift".into(),
            Strategy::SoftplusWide => "softplus, width-matched".into(),
            Strategy::SoftplusFast(m) => format!("softplus, latent lr × {m}"),
            Strategy::LiftCode => "lift, learned code".into(),
        }
    }

    /// Emits its weights through the lift's hypernetwork.
    pub fn lifts(self) -> bool {
        matches!(self, Strategy::Lift | Strategy::LiftCode)
    }

    /// The claim the lift's comparison against this arm tests: the paper's
    /// ([`Claim::Lift`]) against PGD and softplus, and against each control the
    /// claim that control isolates (capacity, step size, batch coupling).
    pub fn claim(self) -> Claim {
        match self {
            Strategy::SoftplusWide => Claim::LiftCapacity,
            Strategy::SoftplusFast(_) => Claim::LiftStepSize,
            Strategy::LiftCode => Claim::LiftCoupling,
            Strategy::Pgd | Strategy::Softplus | Strategy::Lift => Claim::Lift,
        }
    }
}

/// Whose conventions set the constrained layers' gain and initial values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Convention {
    /// The lift repository's EBM: raw non-negative weights, folded-normal initial
    /// values (mean 1/√width), the lift's slack at `LiftConfig::slack_init`.
    Ebm,
    /// CP-Flow's `PosLinear`: weights divided by their fan-in, PGD starting at
    /// softplus(U(±1/√n)), softplus latents at U(±1/√n), the lift's slack at its
    /// `slack_init` (the toy recipe's 0) — the same effective start for every
    /// strategy.
    CpFlow,
    /// The shoulder start: the EBM's raw weights, every constrained latent at the
    /// given value (the shoulder begins below −2.94): softplus latents there, PGD at
    /// the same effective weights softplus(value), the lift's slack there (its
    /// emitted latents spread around it by Θ_E·h).
    Shoulder(f64),
}

impl Convention {
    /// As a table's caption states it.
    pub fn describe(self) -> String {
        match self {
            Convention::CpFlow => "CP-Flow conventions (1/fan_in gain)".into(),
            Convention::Ebm => "EBM conventions (raw weights)".into(),
            Convention::Shoulder(l) => {
                format!("the shoulder start (raw weights, every latent at {l})")
            }
        }
    }

    /// Parses `ebm` or `cpflow`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "ebm" => Ok(Convention::Ebm),
            "cpflow" => Ok(Convention::CpFlow),
            other => Err(Error::value(
                "lift experiment",
                format!("--convention must be ebm or cpflow, got '{other}'"),
            )),
        }
    }
}

/// A training loss of the model, its emitted weights and a batch.
pub type StepLoss<'a> = dyn Fn(&Model, &[Var<f64>], &Tensor<f64>) -> Result<Var<f64>> + 'a;

/// A model: an ICNN, its positivity strategy, and extra trainable scalars (the flow's
/// potential scales) in one store, with its optimiser groups.
pub struct Model {
    /// All parameters.
    pub store: ParamStore<f64>,
    /// The network.
    pub net: Icnn<f64>,
    /// Where its non-negative weights come from.
    pub positivity: Box<dyn Positivity<f64>>,
    /// The optimiser over every trainable parameter.
    pub optimizer: OptimizerGroups,
}

/// Trainable parameters of an ICNN with its constrained weights, for `width`
/// (without its ActNorms: [`act_norm_params`]).
fn icnn_params(input: usize, width: usize, layers: usize) -> usize {
    width * input
        + width
        + (layers - 1) * (width * input + width)
        + input
        + (layers - 1) * width * width
        + width
}

/// Trainable parameters of an ICNN's ActNorms (a shift and a log-scale per unit of
/// each hidden layer and of the output), 0 without them.
fn act_norm_params(cfg: &IcnnConfig, width: usize) -> usize {
    if cfg.act_norm {
        2 * (width * cfg.layers + 1)
    } else {
        0
    }
}

/// Trainable parameters of the lift's hypernetwork for an ICNN of `width` (with
/// `emit_all`, the free ICNN parameters are emitted too).
fn lift_params(input: usize, width: usize, layers: usize, cfg: &LiftConfig) -> usize {
    let mut sizes = vec![input];
    sizes.extend(&cfg.hidden);
    sizes.push(cfg.summary);
    let body: usize = sizes.windows(2).map(|w| w[0] * w[1] + w[1]).sum();
    let constrained = (layers - 1) * width * width + width;
    let emitted = if cfg.emit_all {
        icnn_params(input, width, layers)
    } else {
        constrained
    };
    body + emitted * (cfg.summary + 1)
}

/// Parses `--emit`: `constrained` (CP-Flow's lift, the default) or `all` (the
/// authors' EBM lift emits every ICNN parameter).
pub fn parse_emit(s: &str) -> Result<bool> {
    match s {
        "constrained" => Ok(false),
        "all" => Ok(true),
        other => Err(Error::value(
            "lift experiment",
            format!("--emit must be constrained or all, got '{other}'"),
        )),
    }
}

impl Model {
    /// Builds a model trained by `rule`; `extra` scalars (name, initial value) are
    /// registered too.
    pub fn new(
        strategy: Strategy,
        convention: Convention,
        cfg: IcnnConfig,
        lift: &LiftConfig,
        rule: Rule,
        extra: &[(&str, f64)],
        rng: &mut Rng,
    ) -> Result<Model> {
        let mut cfg = cfg;
        if cfg.act_norm && lift.emit_all && strategy.lifts() {
            return Err(Error::value(
                "lift experiment",
                "ActNorm inside the ICNN goes with a lift that emits only the constrained weights (CP-Flow's); --emit all emits every other parameter",
            ));
        }
        if strategy == Strategy::SoftplusWide {
            // The smallest width whose softplus ICNN has at least the lift's count
            // (the ICNN's own free parameters, unless the lift emits them too).
            let own_free = if lift.emit_all {
                0
            } else {
                icnn_params(cfg.input, cfg.width, cfg.layers)
                    - ((cfg.layers - 1) * cfg.width * cfg.width + cfg.width)
                    + act_norm_params(&cfg, cfg.width)
            };
            let target = own_free + lift_params(cfg.input, cfg.width, cfg.layers, lift);
            let mut w = cfg.width;
            while icnn_params(cfg.input, w, cfg.layers) + act_norm_params(&cfg, w) < target {
                w += 1;
            }
            cfg.width = w;
        }
        let store = ParamStore::new();
        // A lift that emits every parameter evaluates the ICNN as a template whose
        // own parameters are not trained: they live outside the model's store.
        let emit_all = strategy.lifts() && lift.emit_all;
        let template = ParamStore::new();
        let net_store = if emit_all { &template } else { &store };
        let net = Icnn::new(&net_store.root().sub("icnn"), cfg.clone(), rng)?;
        let scope = store.root().sub("positivity");
        let init = match convention {
            Convention::Ebm => net.init_constrained(rng)?,
            Convention::Shoulder(latent) => net
                .constrained_shapes()
                .iter()
                .map(|s| Tensor::full(s, latent.exp().ln_1p()))
                .collect::<Result<_>>()?,
            Convention::CpFlow => net
                .constrained_shapes()
                .iter()
                .map(|s| {
                    let a = 1.0 / (s[1] as f64).sqrt();
                    Ok(init::uniform::<f64>(s, -a, a, rng)?.softplus())
                })
                .collect::<Result<_>>()?,
        };
        let shoulder;
        let lift = match convention {
            Convention::Shoulder(latent) => {
                shoulder = LiftConfig {
                    slack_init: latent,
                    slack_std: 0.0,
                    ..lift.clone()
                };
                &shoulder
            }
            _ => lift,
        };
        let positivity: Box<dyn Positivity<f64>> = match strategy {
            Strategy::Pgd => Box::new(Pgd::new(&scope, init)?),
            Strategy::Softplus | Strategy::SoftplusWide | Strategy::SoftplusFast(_) => {
                Box::new(Softplus::new(&scope, init)?)
            }
            Strategy::Lift | Strategy::LiftCode => {
                let code = LiftConfig {
                    variant: LiftVariant::Code,
                    ..lift.clone()
                };
                Box::new(Lift::emitting_all(
                    &scope,
                    cfg.input,
                    net.constrained_shapes(),
                    if emit_all {
                        net.free_shapes()
                    } else {
                        Vec::new()
                    },
                    if strategy == Strategy::LiftCode {
                        &code
                    } else {
                        lift
                    },
                    rng,
                )?)
            }
        };
        let positivity = match convention {
            Convention::Ebm | Convention::Shoulder(_) => positivity,
            Convention::CpFlow => Box::new(FanInGain::new(positivity, &net.constrained_shapes())?),
        };
        for (name, v) in extra {
            store.root().param(name, Tensor::scalar(*v))?;
        }
        let factor = match strategy {
            Strategy::SoftplusFast(m) => m,
            _ => 1.0,
        };
        let optimizer = OptimizerGroups::new(
            store.trainable(),
            rule,
            |p| p.name().starts_with("positivity"),
            factor,
        )?;
        Ok(Model {
            store,
            net,
            positivity,
            optimizer,
        })
    }

    /// The scalar parameter registered as `name`.
    pub fn scalar(&self, name: &str) -> Result<Var<f64>> {
        self.store
            .get(name)
            .map(|p| p.var())
            .ok_or_else(|| Error::value("lift experiment", format!("no parameter '{name}'")))
    }

    /// Number of trainable scalars.
    pub fn size(&self) -> usize {
        self.store.num_trainable()
    }

    /// One step: loss on `batch` with weights conditioned on `batch`, global-norm
    /// clipping at `clip`, Adam, projection. Non-finite losses are skipped (as the
    /// reference trainer does) and reported as NaN.
    pub fn step(&mut self, batch: &Tensor<f64>, clip: f64, loss: &StepLoss<'_>) -> Result<f64> {
        let w = self.positivity.weights(batch)?;
        let l = loss(self, &w, batch)?;
        let v = l.item()?;
        if !v.is_finite() {
            return Ok(f64::NAN);
        }
        let mut g = ParamGrads::collect(self.optimizer.params(), &backward(&l)?);
        if g.tensors().iter().any(|t| !t.all_finite()) {
            return Ok(f64::NAN);
        }
        g.clip_global_norm(clip)?;
        self.optimizer.step(&g)?;
        self.positivity.project()?;
        Ok(v)
    }
}

/// Default ICNN for the experiments.
pub fn icnn_config(input: usize, width: usize, layers: usize, strong_convexity: f64) -> IcnnConfig {
    IcnnConfig {
        input,
        width,
        layers,
        activation: Activation::Softplus,
        strong_convexity,
        act_norm: false,
    }
}

/// What the sign of σ²_Jac means, for the tables' captions. The estimator is the
/// authors' (emission θ̃ in the left slot, ∂NLL/∂b in the right, each centred at
/// its probe mean, divisor B − 1), so a negative trace is theirs too.
pub const SIGMA_SIGN: &str = "σ²_Jac is signed: a negative trace means that batches which raise an emitted latent have below-average slack gradients, so their step pushes the slack up too (the emission anticipates the batch's step instead of being corrected by it); for a locally convex loss that lowers the gradient noise below direct softplus's, so under the paper's later noise reading it predicts slower, not faster, escape from the shoulder, and the arXiv-era modulus μ_eff ∝ σ²_Jac would be negative";

/// Probe batches per σ²_Jac snapshot.
pub const PROBES: usize = 16;

/// The table name of a strategy cell: the strategy, or the lift's ablation.
pub fn cell_name(strategy: Strategy, variant: LiftVariant) -> String {
    match (strategy, variant) {
        (Strategy::Lift, LiftVariant::NoSlack) => "lift, no slack".into(),
        (Strategy::Lift, LiftVariant::Code) => Strategy::LiftCode.name(),
        (s, _) => s.name(),
    }
}

/// One σ²_Jac snapshot of the model at its current parameters, at iteration `it` of
/// the run seeded `seed`: [`PROBES`] fresh batches from `sample`, each conditioning
/// the weights and scored by `loss` (the training objective). The reading (`None`
/// when the strategy has no slack channel) is appended to `probes` and its trace to
/// `metrics` as `sigma2_jac`.
#[allow(clippy::too_many_arguments)]
pub fn record_sigma(
    m: &Model,
    sample: &mut dyn FnMut(&mut Rng) -> Result<Tensor<f64>>,
    loss: &StepLoss<'_>,
    seed: u64,
    it: usize,
    series: &str,
    metrics: &mut Metrics,
    probes: &mut Vec<(usize, Option<CrossCov>)>,
) -> Result<()> {
    let mut data = Rng::new(seed ^ 0x9e0c ^ it as u64);
    let batches: Vec<(Tensor<f64>, Tensor<f64>)> = (0..PROBES)
        .map(|_| {
            let b = sample(&mut data)?;
            Ok((b.clone(), b))
        })
        .collect::<Result<_>>()?;
    let objective = |w: &[Var<f64>], b: &Tensor<f64>| loss(m, w, b);
    let mut rng = Rng::new(seed ^ 0x9e0b ^ it as u64);
    let reading = probe(m.positivity.as_ref(), &batches, &objective, 200, &mut rng)?;
    if let Some(r) = &reading {
        metrics.push(series, it, "sigma2_jac", r.trace);
    }
    probes.push((it, reading));
    Ok(())
}

/// "iteration: trace \[p\]" for each snapshot, "—" without a slack channel.
pub fn snapshots(probes: &[(usize, Option<CrossCov>)]) -> String {
    probes
        .iter()
        .map(|(it, r)| match r {
            Some(r) => format!("{it}: {:.2e} [{:.2}]", r.trace, r.p_value),
            None => format!("{it}: —"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Per-entry shoulder membership over training: at each snapshot, which latent
/// entries sit on the softplus shoulder (sigmoid(θ̃) ≤ 0.05; for PGD, weights clamped
/// to exactly 0). It shows whether entries that reach the shoulder leave it again
/// (the lift's escape) or stay (softplus's vanishing gradient).
#[derive(Default)]
pub struct ShoulderTrack {
    states: Vec<Vec<bool>>,
}

/// What a [`ShoulderTrack`] saw.
pub struct Escape {
    /// Share of entries on the shoulder at some snapshot.
    pub ever: f64,
    /// Share of entries that were on the shoulder and off it at a later snapshot.
    pub left: f64,
    /// Mean number of state changes per entry.
    pub changes: f64,
}

impl Escape {
    /// As a cell's numbers: `escape_ever`, `escape_left`, `escape_changes`.
    pub fn numbers(&self) -> crate::grid::Numbers {
        vec![
            ("escape_ever".to_string(), self.ever),
            ("escape_left".to_string(), self.left),
            ("escape_changes".to_string(), self.changes),
        ]
    }
}

impl ShoulderTrack {
    /// Records the state of every latent entry at `pin`; returns the share of
    /// entries that left the shoulder since the previous snapshot.
    pub fn record(&mut self, m: &Model, pin: &Tensor<f64>, pgd: bool) -> Result<f64> {
        let edge = (0.05f64 / 0.95).ln();
        let now: Vec<bool> = m
            .positivity
            .latents(pin)?
            .iter()
            .flat_map(|t| t.to_vec())
            .map(|v| if pgd { v == 0.0 } else { v <= edge })
            .collect();
        let exits = match self.states.last() {
            Some(prev) => {
                prev.iter().zip(&now).filter(|(a, b)| **a && !**b).count() as f64
                    / now.len().max(1) as f64
            }
            None => 0.0,
        };
        self.states.push(now);
        Ok(exits)
    }

    /// The summary over all snapshots.
    pub fn escape(&self) -> Escape {
        let n = self.states.first().map_or(0, Vec::len);
        let (mut ever, mut left, mut changes) = (0usize, 0usize, 0usize);
        for j in 0..n {
            let path: Vec<bool> = self.states.iter().map(|s| s[j]).collect();
            if let Some(first) = path.iter().position(|&on| on) {
                ever += 1;
                if path[first..].iter().any(|&on| !on) {
                    left += 1;
                }
            }
            changes += path.windows(2).filter(|w| w[0] != w[1]).count();
        }
        let n = n.max(1) as f64;
        Escape {
            ever: ever as f64 / n,
            left: left as f64 / n,
            changes: changes as f64 / n,
        }
    }
}

/// The lift's claims tested on one metric (lower is better) of one setting: the
/// lift's values over seeds against every other arm's in `results`, each under
/// the claim that arm tests ([`Strategy::claim`]).
pub fn lift_evidence(
    setting: &str,
    metric: &str,
    results: &[(Strategy, Vec<f64>)],
) -> Vec<Evidence> {
    let Some((_, lift)) = results.iter().find(|(s, _)| *s == Strategy::Lift) else {
        return Vec::new();
    };
    results
        .iter()
        .filter(|(s, _)| *s != Strategy::Lift)
        .map(|(s, values)| Evidence {
            claim: s.claim(),
            setting: setting.into(),
            metric: metric.into(),
            better: Better::Lower,
            method: (Strategy::Lift.name(), lift.clone()),
            baseline: (s.name(), values.clone()),
            paired: true,
            idle: None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shoulder_start_puts_every_latent_at_its_value() {
        // Softplus latents exactly at −4 (all on the shoulder), PGD at the same
        // effective weights softplus(−4), the lift's slack at −4; the authors'
        // start has softplus latents off the shoulder.
        let cfg = icnn_config(1, 6, 3, 0.02);
        let lift = LiftConfig::default();
        let pin = Tensor::from_vec(vec![0.5, -1.0, 2.0], &[3, 1]).unwrap();
        let model = |strategy, convention| {
            let adam = Rule::Adam(optim::AdamConfig::adam(1e-3));
            Model::new(
                strategy,
                convention,
                cfg.clone(),
                &lift,
                adam,
                &[],
                &mut Rng::new(1),
            )
            .unwrap()
        };
        let shoulder = Convention::Shoulder(-4.0);
        let latents = |m: &Model| -> Vec<f64> {
            m.positivity
                .latents(&pin)
                .unwrap()
                .iter()
                .flat_map(|t| t.to_vec())
                .collect()
        };
        let softplus = model(Strategy::Softplus, shoulder);
        assert!(latents(&softplus).iter().all(|&v| (v + 4.0).abs() < 1e-12));
        assert_eq!(softplus.positivity.shoulder_occupancy(&pin).unwrap(), 1.0);
        let pgd = model(Strategy::Pgd, shoulder);
        let w = pgd.positivity.weights(&pin).unwrap();
        let at = (-4.0f64).exp().ln_1p();
        assert!(w
            .iter()
            .flat_map(|v| v.value().to_vec())
            .all(|v| (v - at).abs() < 1e-15));
        let lifted = model(Strategy::Lift, shoulder);
        let slacks: Vec<f64> = lifted
            .store
            .trainable()
            .iter()
            .filter(|p| p.name().ends_with("slack"))
            .flat_map(|p| p.value().to_vec())
            .collect();
        assert!(!slacks.is_empty() && slacks.iter().any(|&v| v == -4.0));
        let authors = model(Strategy::Softplus, Convention::Ebm);
        assert!(authors.positivity.shoulder_occupancy(&pin).unwrap() < 0.5);
    }

    #[test]
    fn the_width_matched_control_counts_the_act_norms_too() {
        // With ActNorm (CP-Flow's lift: constrained emission), the widened softplus
        // has at least the lift's trainable count and one unit less would not.
        let cfg = IcnnConfig {
            act_norm: true,
            ..icnn_config(3, 8, 3, 0.0)
        };
        let lift = LiftConfig {
            hidden: vec![16],
            summary: 8,
            emit_all: false,
            ..LiftConfig::default()
        };
        let build = |strategy, cfg: &IcnnConfig| {
            let adam = Rule::Adam(optim::AdamConfig::adam(1e-3));
            Model::new(
                strategy,
                Convention::CpFlow,
                cfg.clone(),
                &lift,
                adam,
                &[],
                &mut Rng::new(2),
            )
        };
        let lifted = build(Strategy::Lift, &cfg).unwrap().size();
        let wide = build(Strategy::SoftplusWide, &cfg).unwrap();
        let w = wide.net.config().width;
        assert!(wide.size() >= lifted, "{} < {lifted}", wide.size());
        let narrower = IcnnConfig {
            width: w - 1,
            ..cfg.clone()
        };
        assert!(build(Strategy::Softplus, &narrower).unwrap().size() < lifted);
        assert_eq!(wide.net.act_norms.len(), 4);
        // ActNorm with a lift that emits every parameter is refused: the norms
        // would sit in the untrained template.
        let all = LiftConfig {
            emit_all: true,
            ..lift.clone()
        };
        let adam = Rule::Adam(optim::AdamConfig::adam(1e-3));
        let e = Model::new(
            Strategy::Lift,
            Convention::CpFlow,
            cfg,
            &all,
            adam,
            &[],
            &mut Rng::new(2),
        );
        assert!(e.is_err_and(|e| e.to_string().contains("ActNorm")));
    }

    #[test]
    fn the_escape_summary_counts_entries_that_leave_the_shoulder() {
        // Entry 0: on, off, on (left once, 2 changes); entry 1: off, off, on (never
        // left, 1 change); entry 2 never on.
        let track = ShoulderTrack {
            states: vec![
                vec![true, false, false],
                vec![false, false, false],
                vec![true, true, false],
            ],
        };
        let e = track.escape();
        assert_eq!((e.ever, e.left, e.changes), (2.0 / 3.0, 1.0 / 3.0, 1.0));
    }
}
