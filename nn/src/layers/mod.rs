//! Layers.

pub mod dropout;
pub mod embedding;
pub mod layer_norm;
pub mod linear;
pub mod mlp;
