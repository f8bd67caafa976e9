//! libFuzzer entry for the `sizes` target (see `fuzz_checks::sizes`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::sizes::run(data));
