//! libFuzzer entry for the `cifar` target (see `fuzz_checks::readers`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::readers::cifar(data));
