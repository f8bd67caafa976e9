//! Update rules over the parameters of an `nn` model: the [`Optimizer`] trait, SGD,
//! Adam and AdamW, learning-rate schedules, and checkpoints of a whole training state
//! (model, optimiser, generators) that resume bit-identically.
#![forbid(unsafe_code)]

pub mod adam;
pub mod closed_form;
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
