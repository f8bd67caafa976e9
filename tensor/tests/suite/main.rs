//! The tensor crate's integration tests, one binary: one link and one set of
//! monomorphised kernels for all of them instead of one per file. (A file whose
//! switch or counter is process-wide stays a binary of its own, in `tests/`.)

mod batch_norm;
mod common;
mod conv;
mod differential;
mod elementwise;
mod errors;
mod fft;
mod gemm;
mod hostile;
mod laws;
mod linalg;
mod lu;
mod matmul;
mod nan_semantics;
mod reduce;
mod reproducibility;
mod strategies;
mod suite_layout;
mod unsafe_confined;
mod views_and_indexing;
