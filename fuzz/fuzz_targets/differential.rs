//! libFuzzer entry for the `differential` target (see `fuzz_checks::differential`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::differential::run(data));
