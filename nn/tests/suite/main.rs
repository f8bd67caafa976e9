//! The nn crate's integration tests, one binary: one link and one set of
//! monomorphised kernels for all of them instead of one per file. (A file whose
//! switch or counter is process-wide stays a binary of its own, in `tests/`.)

mod checkpoint;
mod common;
mod fno;
mod icnn;
mod layers;
mod losses;
mod torch_interop;
mod transformer;
mod vision;
