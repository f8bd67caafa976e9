//! The LLQR+SAM experiments: image classification with every optimiser of the
//! comparison (SGD, SAM, F-SAM, Fisher-SAM, LLQR alone, LLQR+SAM in every geometry
//! and both norms, LLQR+F-SAM; named in [`crate::train::Method`]), and the
//! one-dimensional pothole landscape.

pub mod classify;
pub mod network;
pub mod pothole;
