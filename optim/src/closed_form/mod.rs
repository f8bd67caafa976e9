//! The closed-form last layer: ridge and proximal solutions, and a trainer that
//! alternates backbone gradient steps with closed-form refits.

pub mod solve;
pub mod trainer;

pub use solve::{proximal, proximal_objective, proximal_var, ridge, ridge_var, SolveForm};
pub use trainer::{
    squared_loss, ClosedFormHead, ClosedFormTrainer, HeadRule, Normalisation, Order,
};
