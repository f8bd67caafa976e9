//! Operations on tensors, one family a file.

pub mod batch_norm;
pub mod binary;
pub mod conv;
pub mod index;
pub mod matmul;
pub mod reduce;
pub mod unary;
