//! Experiments for the engine's methods: datasets (loaders for real formats and the
//! shipped sets), the shared training loop, reports (metrics CSV, SVG plots, tables)
//! and the experiment registry behind the `models` command.
//!
//! ```
//! use models::report::evidence::{Better, Claim, Evidence, Verdict};
//! # fn main() -> tensor::Result<()> {
//! // The digits shipped with the engine, split reproducibly.
//! let (train, test) = models::data::builtin::digits()?.split(0.2, &mut tensor::Rng::new(0))?;
//! assert_eq!(train.len() + test.len(), 1797);
//! // A comparison over seeds and its verdict by the demo's rule.
//! let e = Evidence {
//!     claim: Claim::Lift,
//!     setting: "toy".into(),
//!     metric: "test NLL".into(),
//!     better: Better::Lower,
//!     method: ("lift".into(), vec![1.00, 1.02, 0.98]),
//!     baseline: ("PGD".into(), vec![1.20, 1.22, 1.18]),
//!     paired: true,
//!     idle: None,
//! };
//! assert_eq!(e.verdict(), Verdict::Holds);
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

pub mod audit;
pub mod cli;
pub mod data;
pub mod error;
pub mod experiments;
pub mod grid;
pub mod provenance;
pub mod report;
pub mod results;
pub mod sweep;
pub mod text;
pub mod train;
