//! The one chunked decoder and Content-Length parser (API server and collect client).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ripe_cidr_collector::fuzz::http_body(data));
