//! Data: loaders for the formats users have on disk (MNIST IDX, CIFAR binary, CSV),
//! the datasets shipped with the engine, and in-memory dataset utilities.

pub mod builtin;
pub mod burgers;
pub mod cifar;
pub mod csv;
pub mod dataset;
pub mod demand;
pub mod digit_pairs;
pub mod gaussian;
pub mod idx;
pub mod mixture;
pub mod molecules;
pub mod qm9;
pub mod radial;
pub mod tabular;
pub mod toy;

pub use dataset::{Dataset, Standardizer, Targets};
