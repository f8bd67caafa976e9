//! Every fuzz target over its committed corpus (seeds and the regression inputs the
//! fuzzer found), and over random bytes, as plain tests: CI covers the targets
//! without libFuzzer.

use fuzz_checks::TARGETS;
use proptest::prelude::*;
use std::path::PathBuf;

#[test]
fn every_target_passes_over_its_committed_corpus() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    for (name, target) in TARGETS {
        let dir = root.join(name);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{name} has no corpus");
        for f in files {
            let bytes = std::fs::read(&f).unwrap();
            let outcome = std::panic::catch_unwind(|| target(&bytes));
            assert!(outcome.is_ok(), "{name} fails on {}", f.display());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]
    #[test]
    fn every_target_survives_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        for (_, target) in TARGETS {
            target(&bytes);
        }
    }
}
