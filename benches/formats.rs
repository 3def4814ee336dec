//! Render benchmark of every format: 100,000 stored values (90,000 IPv4 prefixes,
//! 10,000 IPv6) rendered from the prepared list, as `GET /addresses` and `export` do
//! after reading the database, each format beside `text` in the same run (the target:
//! every format within 1.5x of `text`). Median of 15 renders each, formats
//! interleaved so that a drift of the machine's speed hits them alike. Prints
//! figures; asserts nothing.
//!
//! `cargo bench --bench formats`

use std::time::Instant;

use ripe_cidr_collector::format::{
    prepare, render_prepared, Family, Format, RenderOptions, FORMATS,
};

fn values() -> Vec<String> {
    let mut v: Vec<String> = (0..90_000u32)
        .map(|i| {
            let x = i.wrapping_mul(2_654_435_761);
            format!(
                "{}.{}.{}.0/24",
                1 + x % 223,
                (x >> 8) & 255,
                (x >> 16) & 255
            )
        })
        .collect();
    v.extend((0..10_000u32).map(|i| format!("2001:db8:{:x}:{:x}::/64", i >> 8, i & 255)));
    v
}

fn options(format: Format, family: Option<Family>) -> RenderOptions {
    let routes = matches!(format, Format::Bird | Format::Keenetic);
    RenderOptions {
        format,
        via: routes.then(|| "wg0".to_string()),
        family: if format == Format::Bird {
            Some(Family::V4)
        } else {
            family
        },
        ..RenderOptions::default()
    }
}

fn main() {
    let values = values();
    const RUNS: usize = 15;
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); FORMATS.len()];
    let mut sizes = vec![0usize; FORMATS.len()];
    // Prepared once per aggregation setting, as the listing does before rendering.
    let plain = prepare(&values, None, false);
    let aggregated = prepare(&values, None, true);
    let v4 = prepare(&values, Some(Family::V4), false);
    for _ in 0..RUNS {
        for (i, &f) in FORMATS.iter().enumerate() {
            let o = options(f, None);
            let p = if ripe_cidr_collector::format::needs_aggregate(&o) {
                &aggregated
            } else if o.family.is_some() {
                &v4
            } else {
                &plain
            };
            let start = Instant::now();
            let out = render_prepared(p, &o);
            times[i].push(start.elapsed().as_secs_f64() * 1e3);
            sizes[i] = std::hint::black_box(out).len();
        }
    }
    let median = |t: &mut Vec<f64>| {
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    };
    let text = median(&mut times[0].clone());
    println!("render of {} values, median of {RUNS}:", values.len());
    for (i, f) in FORMATS.iter().enumerate() {
        let m = median(&mut times[i]);
        println!(
            "  {:<12} {:>7.2} ms  {:>5.2}x text  {:>9} bytes",
            f.as_str(),
            m,
            m / text,
            sizes[i]
        );
    }
}
