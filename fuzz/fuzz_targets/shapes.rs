//! libFuzzer entry for the `shapes` target (see `fuzz_checks::shapes`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::shapes::run(data));
