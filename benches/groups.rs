//! Group export benchmark: 100,000 stored values (90,000 IPv4 /24s and 10,000 IPv6
//! /48s in 100 ASN sources), exported as a group naming all 100 sources with 100
//! exclusions, against the plain export of the same values, in the same run (text and
//! nft). The target: at most 1.2× the plain export. Prints figures; asserts
//! nothing.
//!
//! `cargo bench --bench groups`

use std::time::{Duration, Instant};

use ripe_cidr_collector::config::{Part, Selected, Selection};
use ripe_cidr_collector::db;
use ripe_cidr_collector::format::{Format, RenderOptions};
use ripe_cidr_collector::listing;
use ripe_cidr_collector::source::Kind;

const RUNS: usize = 15;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time(db: &db::Db, selection: &Selection, opts: &RenderOptions) -> (Duration, usize) {
    let mut times = Vec::with_capacity(RUNS);
    let mut len = 0;
    for _ in 0..RUNS {
        let start = Instant::now();
        let body = listing::render_selection(db, selection, opts).unwrap();
        times.push(start.elapsed());
        len = body.len();
    }
    (median(times), len)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let paths = ripe_cidr_collector::config::Paths::new(dir.path(), None);
    let mut d = db::open(&paths).unwrap();
    let now = ripe_cidr_collector::util::unix_now();
    let mut sources = Vec::new();
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
        let name = format!("{}", 64_000 + s);
        d.merge_source(Kind::Asn, &name, &values, now, 7).unwrap();
        sources.push((Kind::Asn, name));
    }
    // 100 exclusions: 90 IPv4 /22s and 10 IPv6 /50s spread over the values, each
    // cutting into stored prefixes.
    let exclude = (0..100u32)
        .map(|i| {
            if i < 90 {
                let n = i * 1000 + 7;
                format!(
                    "{}.{}.{}.0/22",
                    11 + n / 65_536,
                    (n / 256) % 256,
                    (n % 256) & !3
                )
            } else {
                format!("2001:db8:{:x}::/50", (i - 90) * 1000 + 3)
            }
        })
        .map(|s| s.parse().unwrap())
        .collect();
    let no_exclusions = Selection {
        parts: vec![Part {
            sources: Selected::Only(sources.clone()),
            exclude: Vec::new(),
        }],
    };
    let group = Selection {
        parts: vec![Part {
            sources: Selected::Only(sources),
            exclude,
        }],
    };
    let plain = Selection::default();
    for format in [Format::Text, Format::Nft] {
        let opts = RenderOptions {
            format,
            ..RenderOptions::default()
        };
        let (a, la) = time(&d, &plain, &opts);
        let (n, _) = time(&d, &no_exclusions, &opts);
        let (b, lb) = time(&d, &group, &opts);
        println!(
            "{format}: plain export {:.1} ms ({la} bytes); the group's sources alone {:.1} ms \
             ({:.2}x); with 100 exclusions {:.1} ms ({lb} bytes): {:.2}x",
            a.as_secs_f64() * 1e3,
            n.as_secs_f64() * 1e3,
            n.as_secs_f64() / a.as_secs_f64(),
            b.as_secs_f64() * 1e3,
            b.as_secs_f64() / a.as_secs_f64()
        );
    }
}
