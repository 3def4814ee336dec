//! See `ripe_cidr_collector::fuzz::bgptools`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ripe_cidr_collector::fuzz::bgptools(data));
