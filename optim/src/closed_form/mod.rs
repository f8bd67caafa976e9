//! The closed-form last layer: ridge and proximal solutions, and a trainer that
//! alternates backbone gradient steps with closed-form refits.

pub mod solve;
pub mod trainer;

pub use solve::{
    proximal, proximal_objective, proximal_solution, proximal_var, ridge, ridge_solution,
    ridge_var, Solution, SolveForm, SolvePath, JITTER,
};
pub use trainer::{squared_loss, ClosedFormHead, ClosedFormTrainer, HeadRule, Order, SolveCounts};
