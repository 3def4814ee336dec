//! Config loading benchmark: `config.json` with 50,000 ASNs, and with 50,000 unknown
//! keys, parsed and validated as every command and each daemon re-read does. The
//! duplicate checks were quadratic (7.4 s and 4.6 s per load); they are now hash sets.
//! 5,000, 50,000 and 500,000 are timed: the cost should grow about tenfold
//! per step. Prints figures; asserts nothing.
//!
//! `cargo bench --bench config`

use std::path::Path;
use std::time::{Duration, Instant};

use ripe_cidr_collector::config;

fn time(text: &str) -> Duration {
    let start = Instant::now();
    let loaded = config::parse(text, Path::new("config.json")).unwrap();
    let took = start.elapsed();
    std::hint::black_box(loaded);
    took
}

fn asns(n: usize) -> String {
    let list: Vec<String> = (1..=n).map(|i| format!("\"AS{i}\"")).collect();
    format!("{{\"asns\":[{}]}}", list.join(","))
}

fn keys(n: usize) -> String {
    let list: Vec<String> = (1..=n).map(|i| format!("\"k{i}\":{i}")).collect();
    format!("{{\"extra\":{{{}}}}}", list.join(","))
}

fn main() {
    for (what, make) in [("ASNs", asns as fn(usize) -> String), ("keys", keys)] {
        let figures: Vec<String> = [5_000, 50_000, 500_000]
            .into_iter()
            .map(|n| format!("{n}: {:.1} ms", time(&make(n)).as_secs_f64() * 1e3))
            .collect();
        println!("config.json with N {what}: {}", figures.join(", "));
    }
}
