//! The lift for input-convex networks: positivity strategies (PGD, direct softplus,
//! the lift and its ablations) and the cross-covariance diagnostics.

pub mod diagnostics;
pub mod strategies;

pub use diagnostics::{cross_covariance, probe, CrossCov};
pub use strategies::{Lift, LiftConfig, LiftVariant, Pgd, Positivity, Softplus};
