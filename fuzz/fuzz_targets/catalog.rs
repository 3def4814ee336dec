//! See `ripe_cidr_collector::fuzz::catalog`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        ripe_cidr_collector::fuzz::catalog(text);
    }
});
