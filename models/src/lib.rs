//! Experiments for the engine's methods: datasets (loaders for real formats and the
//! shipped sets), the shared training loop, reports (metrics CSV, SVG plots, tables)
//! and the experiment registry behind the `models` command.
#![forbid(unsafe_code)]

pub mod audit;
pub mod cli;
pub mod data;
pub mod experiments;
pub mod report;
pub mod text;
pub mod train;
