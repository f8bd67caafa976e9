//! The LLQR+SAM experiments: image classification with every optimiser of the
//! comparison (SGD, SAM, F-SAM, Fisher-SAM, LLQR alone, LLQR+SAM in every geometry
//! and both norms, LLQR+F-SAM; named in [`crate::train::Method`]), the
//! one-dimensional pothole landscape, and whether U learned at the authors' inner
//! settings reaches the curvature it should invert.

pub mod classify;
pub mod network;
pub mod pothole;
pub mod premise;
