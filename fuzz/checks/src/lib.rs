//! The bodies of the fuzz targets in `fuzz/fuzz_targets/`. Each takes arbitrary bytes
//! and panics only when a property fails (a reader accepting inconsistent data, a
//! round trip changing something, the engine disagreeing with the reference
//! evaluator); errors are the expected outcome of hostile input. `cargo test` runs
//! every target over its committed corpus in `fuzz/corpus/<target>/`.

pub mod differential;
pub mod input;
pub mod readers;
pub mod shapes;
pub mod sizes;

/// A fuzz target: its name (the corpus directory) and its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every target.
pub const TARGETS: &[Target] = &[
    ("safetensors", readers::safetensors),
    ("safetensors_round_trip", readers::safetensors_round_trip),
    ("idx", readers::idx),
    ("cifar", readers::cifar),
    ("csv", readers::csv),
    ("burgers_cache", readers::burgers_cache),
    ("cells", readers::cells),
    ("shapes", shapes::run),
    ("sizes", sizes::run),
    ("differential", differential::run),
];
