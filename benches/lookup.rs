//! Lookup benchmark: 100,000 stored values (90,000 IPv4 /24s and 10,000 IPv6 /48s in
//! 100 sources, plus 1,000 FQDN addresses), then `lookup` of addresses and prefixes
//! through the library, as `GET /lookup` and `lookup` run it (database open included,
//! as each API request opens its own connection). Prints figures; asserts nothing.
//!
//! `cargo bench --bench lookup`

use std::time::{Duration, Instant};

use ripe_cidr_collector::config::Paths;
use ripe_cidr_collector::db;
use ripe_cidr_collector::inspect::lookup::{find, Query};
use ripe_cidr_collector::source::Kind;

const RUNS: usize = 200;

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
    println!("lookup in {asn} ASN and {fqdn} FQDN rows, median of {RUNS} runs each");
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
        let mut times = Vec::new();
        let mut n = 0;
        for _ in 0..RUNS {
            let t = Instant::now();
            let db = db::open(&paths).unwrap();
            let found = find(&db, &query).unwrap();
            times.push(t.elapsed());
            n = found.rows.len();
        }
        println!(
            "{q:<18} {n:>6} matches   {:>8.3} ms per lookup (open included)",
            median(times).as_secs_f64() * 1e3
        );
    }
}
