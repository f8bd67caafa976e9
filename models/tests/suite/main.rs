//! The models crate's integration tests, one binary: one link and one set of
//! monomorphised kernels for all of them instead of one per file. (A file whose
//! switch or counter is process-wide stays a binary of its own, in `tests/`.)

mod burgers;
mod cifar;
mod common;
mod experiments_end_to_end;
mod fit_loop;
mod fno_burgers;
mod llqr_sam;
mod loaders;
mod mixture;
mod results;
mod runner;
mod seq2seq;
mod sweep;
mod text;
