//! Update rules over the parameters of an `nn` model: the [`Optimizer`] trait, SGD,
//! Adam and AdamW, learning-rate schedules, and checkpoints of a whole training state
//! (model, optimiser, generators) that resume bit-identically.
//!
//! ```
//! use nn::ParamStore;
//! use optim::{Optimizer, Sam, SamVariant, Sgd, SgdConfig};
//! use tensor::Tensor;
//! # fn main() -> tensor::Result<()> {
//! // Minimise ½‖θ − 3‖² with SAM around SGD: `step_closure` is the step every
//! // optimiser shares (SAM evaluates the loss twice).
//! let store = ParamStore::<f64>::new();
//! let theta = store.root().param("theta", Tensor::zeros(&[2])?)?;
//! let sgd = Sgd::new(store.trainable(), SgdConfig::new(0.5))?;
//! let mut sam = Sam::new(Box::new(sgd), 0.01, SamVariant::Sam)?;
//! for _ in 0..50 {
//!     sam.step_closure(&|| theta.var().add_scalar(-3.0)?.square()?.sum_all()?.mul_scalar(0.5))?;
//! }
//! assert!(theta.value().to_vec().iter().all(|v| (v - 3.0).abs() < 0.02));
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

pub mod adam;
pub mod closed_form;
mod closure;
pub mod lift;
pub mod llqr;
pub mod optimizer;
pub mod sam;
pub mod schedule;
pub mod sgd;
pub mod training_state;

pub use adam::{Adam, AdamConfig};
pub use optimizer::{Optimizer, OptimizerState};
pub use sam::{Sam, SamVariant};
pub use schedule::Schedule;
pub use sgd::{Sgd, SgdConfig};
