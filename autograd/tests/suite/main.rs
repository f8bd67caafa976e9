//! The autograd crate's integration tests, one binary: one link and one set of
//! monomorphised kernels for all of them instead of one per file. (A file whose
//! switch or counter is process-wide stays a binary of its own, in `tests/`.)

mod anomaly;
mod api;
mod common;
mod gradcheck_batch_norm;
mod gradcheck_conv;
mod gradcheck_linalg_fft;
mod gradcheck_ops;
mod gradcheck_property;
mod higher_order;
mod platform_bits;
