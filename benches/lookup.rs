//! Lookup benchmark: 100,000 stored values (90,000 IPv4 /24s and 10,000 IPv6 /48s in
//! 100 sources, plus 1,000 FQDN addresses), then `lookup` of addresses and prefixes
//! through the library, as `GET /lookup` runs it: on a connection kept between
//! requests (`db::Pool`, one per API handler), with `config.json` (the 100 ASNs)
//! read and the JSON answer rendered. Beside it, in the same run: the same lookup on
//! a connection opened for it (what the API did before it kept connections, and what
//! the `lookup` command does once), and the open alone. Prints figures; asserts
//! nothing.
//!
//! `cargo bench --bench lookup`

use std::time::{Duration, Instant};

use ripe_cidr_collector::config::{self, Paths};
use ripe_cidr_collector::db;
use ripe_cidr_collector::inspect::lookup::{find, render, Query};
use ripe_cidr_collector::source::Kind;

const RUNS: usize = 400;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::new(dir.path(), None);
    let mut d = db::open(&paths).unwrap();
    let now = ripe_cidr_collector::util::unix_now();
    for s in 0..100u32 {
        let values: Vec<String> = (0..1000u32)
            .map(|i| {
                let n = s * 1000 + i;
                if n < 90_000 {
                    format!("{}.{}.{}.0/24", 11 + n / 65_536, (n / 256) % 256, n % 256)
                } else {
                    format!("2001:db8:{:x}::/48", n - 90_000)
                }
            })
            .collect();
        d.merge_source(Kind::Asn, &format!("{}", 64_000 + s), &values, now, 7)
            .unwrap();
    }
    let names: Vec<String> = (0..1000u32)
        .map(|i| format!("11.{}.{}.{}", i / 256 % 256, i % 256, 1 + i % 200))
        .collect();
    d.merge_source(Kind::Fqdn, "cdn.example", &names, now, 7)
        .unwrap();
    let (asn, fqdn) = d.counts().unwrap();
    drop(d);
    let asns: Vec<String> = (0..100u32).map(|s| format!("\"{}\"", 64_000 + s)).collect();
    std::fs::write(
        paths.config(),
        format!(
            "{{\"asns\": [{}], \"fqdns\": [\"cdn.example\"]}}",
            asns.join(", ")
        ),
    )
    .unwrap();
    config::load(&paths.config()).unwrap();
    let pool = db::Pool::new(paths.clone(), 1);
    // The pool keeps a connection only to a file unchanged for a moment.
    std::thread::sleep(db::SETTLED + Duration::from_millis(100));
    println!(
        "lookup in {asn} ASN and {fqdn} FQDN rows, median of {RUNS} runs each, interleaved \
         (ms per lookup):"
    );
    println!(
        "{:<18} {:>7}   {:>8} {:>10} {:>8} {:>10}",
        "query", "matches", "kept", "find only", "opened", "open only"
    );
    for q in [
        "11.1.2.3",
        "11.0.5.1",
        "99.1.2.3",
        "2001:db8:10::1",
        "11.1.0.0/16",
        "11.0.0.0/22",
        "11.0.0.0/9",
        "2001:db8::/40",
    ] {
        let query = Query::parse(q).unwrap();
        // What GET /lookup does, on the kept connection (the API now) and on one
        // opened for the request (the API before); `find` alone on the kept one; and
        // the open alone.
        let handler = |db: &db::Db| {
            let cfg = config::load(&paths.config()).unwrap().config;
            let found = find(db, &query)?;
            Ok::<_, db::StoreError>((found.rows.len(), render(&query, &found, &cfg, true)))
        };
        let (mut kept, mut only, mut opened, mut open) = (vec![], vec![], vec![], vec![]);
        let mut n = 0;
        for _ in 0..RUNS {
            let t = Instant::now();
            let (rows, body) = pool.with(handler).unwrap();
            kept.push(t.elapsed());
            std::hint::black_box(body);
            n = rows;
            let t = Instant::now();
            std::hint::black_box(pool.with(|db| find(db, &query)).unwrap());
            only.push(t.elapsed());
            let t = Instant::now();
            std::hint::black_box(handler(&db::open(&paths).unwrap()).unwrap());
            opened.push(t.elapsed());
            let t = Instant::now();
            std::hint::black_box(db::open(&paths).unwrap());
            open.push(t.elapsed());
        }
        let f = |v: Vec<Duration>| median(v).as_secs_f64() * 1e3;
        println!(
            "{q:<18} {n:>7}   {:>8.3} {:>10.3} {:>8.3} {:>10.3}",
            f(kept),
            f(only),
            f(opened),
            f(open)
        );
    }
    println!("connections kept by the pool at the end: {}", pool.idle());
    println!(
        "kept: GET /lookup's work (config.json read, find, JSON) on the API's kept \
         connection; find only: the query alone; opened: GET /lookup's work on a new \
         connection; open only: db::open"
    );
}
