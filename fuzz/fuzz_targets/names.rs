//! See `ripe_cidr_collector::fuzz::names`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ripe_cidr_collector::fuzz::names(data));
