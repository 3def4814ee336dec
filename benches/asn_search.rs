//! `asn search` against a fake RIPEstat on 127.0.0.1 whose every answer takes 200 ms:
//! one `searchcomplete` naming 8 ASNs, then 8 `as-overview` calls, at most 4 at once.
//! The wall time is printed beside one call's delay (goal: at most 3×, which a
//! search one call at a time, 9 × 200 ms, would miss by far). Prints figures;
//! asserts nothing.
//!
//! `cargo bench --bench asn_search`

use std::time::{Duration, Instant};

use ripe_cidr_collector::collect::ripe::RipeClient;
use ripe_cidr_collector::collect::Transport;
use ripe_cidr_collector::config::RipeConfig;

#[path = "../tests/it/upstream.rs"]
mod upstream;

const DELAY: Duration = Duration::from_millis(200);
const CANDIDATES: u32 = 8;

fn main() {
    let up = upstream::FakeServer::start(|rq| {
        let body = if rq.url.starts_with("/data/searchcomplete/") {
            let s: Vec<String> = (1..=CANDIDATES)
                .map(|a| format!(r#"{{"value":"AS{a}","description":"HOLDER {a}"}}"#))
                .collect();
            format!(
                r#"{{"status":"ok","data":{{"categories":[{{"category":"ASNs","suggestions":[{}]}}]}}}}"#,
                s.join(",")
            )
        } else {
            r#"{"status":"ok","data":{"holder":"HOLDER","announced":true}}"#.to_string()
        };
        upstream::Reply::json(200, body).delayed(DELAY)
    });
    let cfg = RipeConfig {
        url: up.url("/data/announced-prefixes/data.json"),
        min_peers_seeing: None,
        sourceapp: "bench".into(),
        timeout_seconds: 10,
        retries: 0,
    };
    let client = RipeClient::new(&cfg, &Transport::plain());
    // One call as this machine makes it: the delay plus the request's own cost.
    let one = (0..3)
        .map(|_| {
            let start = Instant::now();
            client.overview("AS1").expect("as-overview");
            start.elapsed()
        })
        .min()
        .unwrap();
    println!("one as-overview call: {} ms", one.as_millis());
    println!(
        "asn search: {CANDIDATES} candidates, {} ms per upstream call",
        DELAY.as_millis()
    );
    let mut best = Duration::MAX;
    for run in 1..=5 {
        let start = Instant::now();
        let found = client
            .search("holder", CANDIDATES as usize)
            .expect("search");
        let took = start.elapsed();
        best = best.min(took);
        assert_eq!(found.len(), CANDIDATES as usize);
        println!(
            "  run {run}: {} ms wall, {:.2}x one call's delay",
            took.as_millis(),
            took.as_secs_f64() / DELAY.as_secs_f64()
        );
    }
    println!(
        "best: {} ms = {:.2}x one call (goal at most 3x; one call at a time would be {}x)",
        best.as_millis(),
        best.as_secs_f64() / DELAY.as_secs_f64(),
        CANDIDATES + 1
    );
    println!(
        "best against one measured call: {:.2}x (the floor is 3x: one searchcomplete, then \
         8 as-overview calls 4 at a time, two rounds)",
        best.as_secs_f64() / one.as_secs_f64()
    );
    println!("requests made: {}", up.requests().len());
}
