//! Group export benchmark: 100,000 stored values (90,000 IPv4 /24s and 10,000 IPv6
//! /48s in 100 ASN sources), exported as a group naming the 100 sources with 100
//! exclusions, against the plain export of the same values, in the same run (text and
//! nft). The target: at most 1.2× the plain export. Prints figures; asserts
//! nothing.
//!
//! Two layouts of the values over the sources: in blocks (source `s` holds values
//! `1000 s ..`), and interleaved (source `s` holds every value `n` with
//! `n / 10 % 100 == s`, as announced prefixes of different ASNs lie side by side).
//! And a group that is a subset: the same 100 sources in a store that also holds 10
//! other sources (10,000 more values), against the plain export of a store holding the
//! group's values only; the others stored after the group's sources (the ids of each
//! are one run), or one after every tenth (mixed ids).
//!
//! The cases of one line are timed in turns (one run of each, each turn starting at
//! the next case), so that a load swing of the shared machine hits all of them alike:
//! the times are medians of the runs, the ratios medians of each turn's ratio to the
//! plain export.
//!
//! `cargo bench --bench groups`

use std::time::{Duration, Instant};

use ipnet::IpNet;
use ripe_cidr_collector::config::{Part, Selected, Selection};
use ripe_cidr_collector::db;
use ripe_cidr_collector::format::{Format, RenderOptions};
use ripe_cidr_collector::listing;
use ripe_cidr_collector::source::Kind;

const RUNS: usize = 31;

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

/// The `n`th value: an IPv4 /24 below 90,000, an IPv6 /48 above.
fn value(n: u32) -> String {
    if n < 90_000 {
        format!("{}.{}.{}.0/24", 11 + n / 65_536, (n / 256) % 256, n % 256)
    } else {
        format!("2001:db8:{:x}::/48", n - 90_000)
    }
}

/// A store of the 100 group sources (values laid out by `source_of`), and `extra`
/// sources of 1,000 other values each: stored after them, or (`mixed`) one after every
/// tenth group source, so that neither the group's ids nor the others' are one run.
/// The group's sources.
fn store(
    source_of: fn(u32) -> u32,
    extra: u32,
    mixed: bool,
) -> (tempfile::TempDir, db::Db, Vec<(Kind, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let paths = ripe_cidr_collector::config::Paths::new(dir.path(), None);
    let mut d = db::open(&paths).unwrap();
    let now = ripe_cidr_collector::util::unix_now();
    let other = |d: &mut db::Db, s: u32| {
        let values: Vec<String> = (0..1000u32)
            .map(|i| format!("10.{}.{}.0/24", s * 4 + i / 256, i % 256))
            .collect();
        let name = format!("{}", 65_000 + s);
        d.merge_source(Kind::Asn, &name, &values, now, 7).unwrap();
    };
    let mut sources = Vec::new();
    for s in 0..100u32 {
        let values: Vec<String> = (0..100_000u32)
            .filter(|n| source_of(*n) == s)
            .map(value)
            .collect();
        let name = format!("{}", 64_000 + s);
        d.merge_source(Kind::Asn, &name, &values, now, 7).unwrap();
        sources.push((Kind::Asn, name));
        if mixed && s % 10 == 4 && s / 10 < extra {
            other(&mut d, s / 10);
        }
    }
    for s in (0..extra).filter(|_| !mixed) {
        other(&mut d, s);
    }
    (dir, d, sources)
}

/// 100 exclusions: 90 IPv4 /22s and 10 IPv6 /50s spread over the values, each cutting
/// into stored prefixes.
fn exclusions() -> Vec<IpNet> {
    (0..100u32)
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
        .collect()
}

fn group(sources: &[(Kind, String)], exclude: Vec<IpNet>) -> Selection {
    Selection {
        parts: vec![Part {
            sources: Selected::Only(sources.to_vec()),
            exclude,
        }],
    }
}

/// What [`time`] measured of each case: median time (ms), median of its ratios to the
/// first case's run of the same turn, and its last body.
struct Timed {
    ms: f64,
    ratio: f64,
    body: Vec<u8>,
}

/// Times each `(store, selection)` in turns.
fn time(cases: &[(&db::Db, &Selection)], opts: &RenderOptions) -> Vec<Timed> {
    let mut times = vec![Vec::with_capacity(RUNS); cases.len()];
    let mut ratios = vec![Vec::with_capacity(RUNS); cases.len()];
    let mut bodies = vec![Vec::new(); cases.len()];
    for run in 0..RUNS {
        // Each turn starts at another case, so that none always follows the same one.
        let mut turn = vec![Duration::ZERO; cases.len()];
        for k in 0..cases.len() {
            let i = (run + k) % cases.len();
            let (d, selection) = cases[i];
            let start = Instant::now();
            bodies[i] = listing::render_selection(d, selection, opts).unwrap();
            turn[i] = start.elapsed();
        }
        for (i, t) in turn.iter().enumerate() {
            times[i].push(*t);
            ratios[i].push(t.as_secs_f64() / turn[0].as_secs_f64());
        }
    }
    let median_of = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    times
        .into_iter()
        .zip(ratios)
        .zip(bodies)
        .map(|((t, r), body)| Timed {
            ms: median(t),
            ratio: median_of(r),
            body,
        })
        .collect()
}

/// One line of figures: the plain export, the group's sources alone (with whether its
/// bytes are the plain export's) and with the exclusions.
fn report(what: &str, t: &[Timed]) {
    println!(
        "{what}: plain export {:.1} ms ({} bytes); the group's sources alone {:.1} ms \
         ({:.2}x, same bytes: {}); with 100 exclusions {:.1} ms ({} bytes): {:.2}x",
        t[0].ms,
        t[0].body.len(),
        t[1].ms,
        t[1].ratio,
        t[1].body == t[0].body,
        t[2].ms,
        t[2].body.len(),
        t[2].ratio,
    );
}

/// A layout of the values over the sources: its name, and the source of value `n`.
type Layout = (&'static str, fn(u32) -> u32);

fn main() {
    let layouts: [Layout; 2] = [("blocks", |n| n / 1000), ("interleaved", |n| n / 10 % 100)];
    let plain = Selection::default();
    for (layout, source_of) in layouts {
        let (_dir, d, sources) = store(source_of, 0, false);
        let alone = group(&sources, Vec::new());
        let with = group(&sources, exclusions());
        for format in [Format::Text, Format::Nft] {
            let opts = RenderOptions {
                format,
                ..RenderOptions::default()
            };
            let t = time(&[(&d, &plain), (&d, &alone), (&d, &with)], &opts);
            report(&format!("{layout}, {format}"), &t);
        }
    }
    // A group of 100 of the 110 stored sources, against the plain export of a store
    // holding its values only.
    let (_d1, only, sources) = store(|n| n / 10 % 100, 0, false);
    for mixed in [false, true] {
        let (_d2, more, _) = store(|n| n / 10 % 100, 10, mixed);
        let alone = group(&sources, Vec::new());
        let with = group(&sources, exclusions());
        let ids = if mixed {
            "ids mixed"
        } else {
            "others stored after"
        };
        for format in [Format::Text, Format::Nft] {
            let opts = RenderOptions {
                format,
                ..RenderOptions::default()
            };
            let t = time(&[(&only, &plain), (&more, &alone), (&more, &with)], &opts);
            report(&format!("subset (100 of 110 sources, {ids}), {format}"), &t);
        }
    }
}
