//! The lift for input-convex networks: positivity strategies (PGD, direct softplus,
//! the lift and its ablations) and the cross-covariance diagnostics.

pub mod diagnostics;
pub mod gain;
pub mod strategies;

pub use diagnostics::{cross_covariance, cross_covariance_guarded, probe, CrossCov, Guards};
pub use gain::FanInGain;
pub use strategies::{Lift, LiftConfig, LiftVariant, Pgd, Positivity, Softplus};
