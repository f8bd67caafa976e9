//! Training: the one loop every experiment runs through ([`trainer`]), where its
//! batches come from ([`batches`]), the update rules an arm can use as one type
//! ([`training`], named in [`method`]), the spread of LLQR's preconditioner
//! ([`spread`]), the validation choice of a hyper-parameter ([`choice`]), and the
//! supervised shortcut over all of them ([`mod@fit`]).

pub mod batches;
pub mod choice;
pub mod fit;
pub mod method;
pub mod spread;
pub mod trainer;
pub mod training;
pub mod u_effect;

pub use batches::Batches;
pub use choice::{choose, Choice};
pub use fit::{batch_x, fit, FitSettings, OptimizerKind};
pub use method::{preconditioning_batch, Hyper, Method, CONVERGED_DAMPING};
pub use spread::Spread;
pub use trainer::{
    set_mode, train, Budget, Cadence, Evaluation, Flow, NonFinite, Outcome, Plan, Task,
};
pub use training::{Batch, Preconditioning, Recorded, Rule, Targets, Training};
