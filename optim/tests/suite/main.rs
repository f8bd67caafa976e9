//! The optim crate's integration tests, one binary: one link and one set of
//! monomorphised kernels for all of them instead of one per file. (A file whose
//! switch or counter is process-wide stays a binary of its own, in `tests/`.)

mod closed_form;
mod closed_form_audit;
mod closure_step;
mod common;
mod lift;
mod llqr_converged;
mod llqr_refresh;
mod llqr_sam;
mod llqr_step;
mod optimizers;
mod resume;
