//! Layers.

pub mod act_norm;
pub mod attention;
pub mod conv;
pub mod deepsets;
pub mod dropout;
pub mod embedding;
pub mod fno;
pub mod icnn;
pub mod layer_norm;
pub mod linear;
pub mod mlp;
pub mod norm;
pub mod pool;
pub mod positional;
pub mod spectral_conv;
pub mod transformer;
