//! The API server's request head parser: any bytes a client sends before the body.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ripe_cidr_collector::fuzz::http_head(data));
