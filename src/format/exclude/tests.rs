//! Subtraction against a reference written here: plain interval arithmetic, one
//! exclusion at a time, over seeded random prefixes of both families packed into a
//! small space so that nested, overlapping and adjacent cases are frequent.

use super::*;
use crate::format::{prepare, Family};

/// xorshift64*: reproducible without a crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random prefix inside 10.0.0.0/20 or 2001:db8::/116 (lengths down to the
/// region's own), as text.
fn random_prefix(rng: &mut Rng, v6: bool) -> String {
    let host_bits = 12;
    let len_from_region = rng.below(host_bits + 1) as u32; // 0..=12 more bits
    let offset = rng.below(1 << host_bits) as u128;
    if v6 {
        let base = u128::from("2001:db8::".parse::<Ipv6Addr>().unwrap());
        let len = 116 + len_from_region as u8;
        let net = Ipv6Net::new(Ipv6Addr::from(base + offset), len)
            .unwrap()
            .trunc();
        net.to_string()
    } else {
        let base = u32::from(Ipv4Addr::new(10, 0, 0, 0)) as u128;
        let len = 20 + len_from_region as u8;
        let net = Ipv4Net::new(Ipv4Addr::from((base + offset) as u32), len)
            .unwrap()
            .trunc();
        // Now and then a bare address, as FQDN sources store them.
        if len == 32 && rng.below(2) == 0 {
            net.addr().to_string()
        } else {
            net.to_string()
        }
    }
}

/// The reference: each value's range minus each exclusion in turn, naively.
fn reference(values: &[(u128, u128)], excl: &[(u128, u128)]) -> Vec<(u128, u128)> {
    let mut left: Vec<(u128, u128)> = values.to_vec();
    for &(ea, eb) in excl {
        let mut next = Vec::new();
        for (a, b) in left {
            if eb < a || ea > b {
                next.push((a, b));
                continue;
            }
            if ea > a {
                next.push((a, ea - 1));
            }
            if eb < b {
                next.push((eb + 1, b));
            }
        }
        left = next;
    }
    merge(left)
}

fn ranges_of<N: Span>(entries: &[Entry<N>]) -> Vec<(u128, u128)> {
    entries.iter().map(|e| e.net.range()).collect()
}

fn check_family<N: Span + std::fmt::Debug>(
    before: &[Entry<N>],
    after: &[Entry<N>],
    excl: &[(u128, u128)],
    aggregated: bool,
    case: &str,
) {
    let want = reference(&ranges_of(before), excl);
    let got = ranges_of(after);
    assert_eq!(merge(got.clone()), want, "{case}");
    // Sorted, no duplicates; nothing overlaps an exclusion.
    for w in after.windows(2) {
        assert!(w[0].net.key() < w[1].net.key(), "{case}: order {w:?}");
    }
    for (a, b) in &got {
        assert!(excl.iter().all(|(ea, eb)| eb < a || ea > b), "{case}");
    }
    if aggregated {
        for w in got.windows(2) {
            assert!(w[0].1 < w[1].0, "{case}: overlap in an aggregated list");
        }
    }
}

/// The subtraction as first written (a copy of every entry, sorted again after a
/// cut): the one in use must list exactly the same entries, bare forms included.
fn first_subtract_family<N: Span>(entries: &mut Vec<Entry<N>>, ranges: &[(u128, u128)]) {
    if ranges.is_empty() || entries.is_empty() {
        return;
    }
    let mut out = Vec::with_capacity(entries.len());
    let mut split = false;
    for e in entries.iter() {
        let (a, b) = e.net.range();
        let i = ranges.partition_point(|r| r.1 < a);
        if ranges.get(i).is_none_or(|r| r.0 > b) {
            out.push(*e);
            continue;
        }
        split = true;
        cut(a, b, &ranges[i..], &mut out);
    }
    if split {
        sort_dedup(&mut out);
    }
    *entries = out;
}

/// The subtraction in use gives exactly what [`first_subtract_family`] gives, for the
/// listing's sorted entries and for the same entries in another order.
fn same_as_first<N: Span + std::fmt::Debug>(
    entries: &[Entry<N>],
    ranges: &[(u128, u128)],
    rng: &mut Rng,
    case: &str,
) {
    let mut shuffled = entries.to_vec();
    for k in (1..shuffled.len()).rev() {
        shuffled.swap(k, rng.below(k as u64 + 1) as usize);
    }
    for input in [entries.to_vec(), shuffled] {
        let (mut got, mut want) = (input.clone(), input);
        subtract_family(&mut got, ranges);
        first_subtract_family(&mut want, ranges);
        assert_eq!(got, want, "{case}");
    }
}

#[test]
fn random_prefixes_against_the_reference() {
    for seed in 1..=300u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let n = 1 + rng.below(40) as usize;
        let m = rng.below(8) as usize;
        let values: Vec<String> = (0..n)
            .map(|_| {
                let v6 = rng.below(2) == 0;
                random_prefix(&mut rng, v6)
            })
            .collect();
        let excluded: Vec<IpNet> = (0..m)
            .map(|_| {
                let v6 = rng.below(2) == 0;
                crate::format::parse_value(&random_prefix(&mut rng, v6))
                    .unwrap()
                    .net
            })
            .collect();
        let ex = Exclusions::new(&excluded);
        for aggregate in [false, true] {
            let before = prepare(&values, None, aggregate);
            let after = subtract(before.clone(), &ex);
            let case = format!("seed {seed}, aggregate {aggregate}: {values:?} minus {excluded:?}");
            check_family(&before.v4, &after.v4, &ex.v4, aggregate, &case);
            check_family(&before.v6, &after.v6, &ex.v6, aggregate, &case);
            same_as_first(&before.v4, &ex.v4, &mut rng, &case);
            same_as_first(&before.v6, &ex.v6, &mut rng, &case);
        }
    }
}

fn listed(values: &[&str], excluded: &[&str], aggregate: bool) -> Vec<String> {
    let values: Vec<String> = values.iter().map(|s| s.to_string()).collect();
    let ex: Vec<IpNet> = excluded.iter().map(|s| s.parse().unwrap()).collect();
    let p = subtract(prepare(&values, None, aggregate), &Exclusions::new(&ex));
    let mut out: Vec<String> = p.v4.iter().map(|e| e.to_string()).collect();
    out.extend(p.v6.iter().map(|e| e.to_string()));
    out
}

#[test]
fn known_cases() {
    // The contract's example: the 8 covering prefixes, in order.
    assert_eq!(
        listed(&["10.0.0.0/8"], &["10.1.0.0/16"], false),
        [
            "10.0.0.0/16",
            "10.2.0.0/15",
            "10.4.0.0/14",
            "10.8.0.0/13",
            "10.16.0.0/12",
            "10.32.0.0/11",
            "10.64.0.0/10",
            "10.128.0.0/9"
        ]
    );
    // Untouched values keep their form; a fully excluded one disappears; an
    // exclusion of the other family changes nothing.
    assert_eq!(
        listed(
            &["192.0.2.1", "198.51.100.0/24", "2001:db8::/32"],
            &["198.51.100.0/23", "2001:db8:1::/48"],
            false
        )[0],
        "192.0.2.1"
    );
    assert_eq!(
        listed(&["198.51.100.0/24"], &["198.51.100.0/23", "::/0"], false),
        Vec::<String>::new()
    );
    // Whole address space minus its ends, both families.
    assert_eq!(
        listed(&["0.0.0.0/0"], &["0.0.0.0/32", "255.255.255.255/32"], true).len(),
        62
    );
    assert_eq!(
        listed(
            &["::/0"],
            &["::/128", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"],
            true
        )
        .len(),
        254
    );
    // Adjacent exclusions, merged, and one exclusion over several values.
    assert_eq!(
        listed(
            &["10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24"],
            &["10.0.0.128/25", "10.0.1.0/25", "10.0.1.128/25"],
            false
        ),
        ["10.0.0.0/25", "10.0.2.0/24"]
    );
    let ex = Exclusions::new(&["10.1.0.0/16".parse().unwrap()]);
    assert!(ex.hides(&"10.0.0.0/8".parse().unwrap()));
    assert!(ex.hides(&"10.1.2.3/32".parse().unwrap()));
    assert!(!ex.hides(&"10.2.0.0/16".parse().unwrap()));
    assert!(!ex.hides(&"2001:db8::/32".parse().unwrap()));
    let _ = Family::V4;
}
