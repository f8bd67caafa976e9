//! Learning-rate schedules: a function of the step number.

use tensor::{Error, Result};

/// A learning-rate schedule.
///
/// ```
/// use nn::ParamStore;
/// use optim::{Optimizer, Schedule, Sgd, SgdConfig};
/// # fn main() -> tensor::Result<()> {
/// let s = Schedule::WarmupCosine { warmup: 4, total: 14, min_factor: 0.1 };
/// s.validate()?;
/// assert_eq!((s.factor(0), s.factor(3), s.factor(4)), (0.25, 1.0, 1.0)); // linear warm-up
/// assert!((s.factor(9) - 0.55).abs() < 1e-12); // half-way down the cosine
/// assert!((s.factor(14) - 0.1).abs() < 1e-12);
/// let step = Schedule::Step { every: 10, gamma: 0.5 };
/// assert_eq!((step.factor(9), step.factor(10), step.factor(25)), (1.0, 0.5, 0.25));
/// assert!(Schedule::Cosine { total: 0, min_factor: 0.0 }.validate().is_err());
/// // A training loop sets the rate from the base each step.
/// let mut sgd = Sgd::new(ParamStore::<f64>::new().trainable(), SgdConfig::new(0.2))?;
/// sgd.set_lr(0.2 * s.factor(0))?;
/// assert_eq!(sgd.lr(), 0.05);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Schedule {
    /// The base rate throughout.
    Constant,
    /// Multiply by `gamma` every `every` steps.
    Step {
        /// Steps between decays.
        every: usize,
        /// Decay factor.
        gamma: f64,
    },
    /// Cosine decay from the base rate to `min_factor`·base over `total` steps.
    Cosine {
        /// Length of the decay.
        total: usize,
        /// Final rate as a fraction of the base.
        min_factor: f64,
    },
    /// Linear warm-up from 0 over `warmup` steps, then cosine decay to
    /// `min_factor`·base at `total`.
    WarmupCosine {
        /// Warm-up length.
        warmup: usize,
        /// Total length.
        total: usize,
        /// Final rate as a fraction of the base.
        min_factor: f64,
    },
    /// Linear warm-up over `warmup` steps, then base·√(warmup/step) (the Transformer
    /// schedule).
    InverseSqrt {
        /// Warm-up length.
        warmup: usize,
    },
}

impl Schedule {
    /// Checks the schedule's parameters.
    pub fn validate(&self) -> Result<()> {
        let ok = match *self {
            Schedule::Constant => true,
            Schedule::Step { every, gamma } => every > 0 && gamma.is_finite() && gamma > 0.0,
            Schedule::Cosine { total, min_factor } => {
                total > 0 && (0.0..=1.0).contains(&min_factor)
            }
            Schedule::WarmupCosine {
                warmup,
                total,
                min_factor,
            } => total > warmup && (0.0..=1.0).contains(&min_factor),
            Schedule::InverseSqrt { warmup } => warmup > 0,
        };
        if ok {
            Ok(())
        } else {
            Err(Error::value(
                "Schedule",
                format!("invalid schedule {self:?}"),
            ))
        }
    }

    /// The multiplier of the base rate at step `step` (0-based).
    pub fn factor(&self, step: usize) -> f64 {
        let cosine = |t: f64, min: f64| {
            min + (1.0 - min) * 0.5 * (1.0 + (std::f64::consts::PI * t.min(1.0)).cos())
        };
        match *self {
            Schedule::Constant => 1.0,
            Schedule::Step { every, gamma } => gamma.powi((step / every.max(1)) as i32),
            Schedule::Cosine { total, min_factor } => {
                cosine(step as f64 / total.max(1) as f64, min_factor)
            }
            Schedule::WarmupCosine {
                warmup,
                total,
                min_factor,
            } => {
                if step < warmup {
                    (step + 1) as f64 / warmup as f64
                } else {
                    cosine(
                        (step - warmup) as f64 / (total - warmup).max(1) as f64,
                        min_factor,
                    )
                }
            }
            Schedule::InverseSqrt { warmup } => {
                let s = (step + 1) as f64;
                let w = warmup as f64;
                if s < w {
                    s / w
                } else {
                    (w / s).sqrt()
                }
            }
        }
    }
}
