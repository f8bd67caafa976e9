//! libFuzzer entry for the `cells` target (see `fuzz_checks::readers`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::readers::cells(data));
