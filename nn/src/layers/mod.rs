//! Layers.

pub mod deepsets;
pub mod dropout;
pub mod embedding;
pub mod icnn;
pub mod layer_norm;
pub mod linear;
pub mod mlp;
