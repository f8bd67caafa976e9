//! libFuzzer entry for the `safetensors_round_trip` target (see `fuzz_checks::readers`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::readers::safetensors_round_trip(data));
