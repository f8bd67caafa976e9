//! libFuzzer entry for the `burgers_cache` target (see `fuzz_checks::readers`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::readers::burgers_cache(data));
