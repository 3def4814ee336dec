//! Stored values as networks: parsing, numeric order, de-duplication and aggregation.

use std::fmt;
use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

use super::Family;

/// One listed value: a network with host bits cleared, and whether it is written as a
/// bare address (an FQDN address as stored) rather than in prefix notation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Entry<N> {
    /// The network; a bare address is its host route (`/32`, `/128`).
    pub net: N,
    /// Written without prefix length.
    pub bare: bool,
}

macro_rules! entry_display {
    ($($net:ty),+) => {$(
        impl fmt::Display for Entry<$net> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                if self.bare {
                    fmt::Display::fmt(&self.net.addr(), f)
                } else {
                    fmt::Display::fmt(&self.net, f)
                }
            }
        }
    )+};
}
entry_display!(Ipv4Net, Ipv6Net, IpNet);

/// Values ready to print: per family, sorted by network address then prefix length,
/// without duplicates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prepared {
    /// IPv4 values.
    pub v4: Vec<Entry<Ipv4Net>>,
    /// IPv6 values.
    pub v6: Vec<Entry<Ipv6Net>>,
    /// Host names of the listed host-name sources, sorted and distinct: filled only
    /// for the formats that list names as well as addresses (`singbox`).
    pub names: Vec<String>,
}

impl Prepared {
    /// Number of values of both families.
    pub fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }

    /// Whether there is nothing to list.
    pub fn is_empty(&self) -> bool {
        self.v4.is_empty() && self.v6.is_empty()
    }
}

/// What the generic writers need to know about `Ipv4Net` / `Ipv6Net`.
pub(crate) trait Net: Copy + Ord {
    /// Numeric sort key: network address, then prefix length.
    type Key: Ord + Copy;
    /// `"4"` or `"6"`: the suffix of set names and of nft's `ipv4_addr`.
    const DIGIT: &'static str;
    /// ipset's `family` word.
    const IPSET_FAMILY: &'static str;
    /// RouterOS menu.
    const ROUTEROS_MENU: &'static str;
    fn key(&self) -> Self::Key;
    fn prefix_len(&self) -> u8;
    fn aggregate(nets: Vec<Self>) -> Vec<Self>;
    /// The two `/1` halves of the address space.
    fn halves() -> [Self; 2];
    /// Appends the entry's text; the bulk of every output, hence not `Display`.
    fn write(entry: &Entry<Self>, out: &mut Vec<u8>);
}

impl Net for Ipv4Net {
    type Key = u64;
    const DIGIT: &'static str = "4";
    const IPSET_FAMILY: &'static str = "inet";
    const ROUTEROS_MENU: &'static str = "/ip";
    fn key(&self) -> u64 {
        (u64::from(u32::from(self.addr())) << 8) | u64::from(Ipv4Net::prefix_len(self))
    }
    fn prefix_len(&self) -> u8 {
        Ipv4Net::prefix_len(self)
    }
    fn aggregate(nets: Vec<Self>) -> Vec<Self> {
        Ipv4Net::aggregate(&nets)
    }
    fn halves() -> [Self; 2] {
        [
            Ipv4Net::new_assert(Ipv4Addr::new(0, 0, 0, 0), 1),
            Ipv4Net::new_assert(Ipv4Addr::new(128, 0, 0, 0), 1),
        ]
    }
    fn write(entry: &Entry<Self>, out: &mut Vec<u8>) {
        // By hand: `fmt` machinery costs several times more than the digits.
        push_ipv4(out, entry.net.addr());
        if !entry.bare {
            out.push(b'/');
            push_decimal(out, entry.net.prefix_len());
        }
    }
}

impl Net for Ipv6Net {
    type Key = (u128, u8);
    const DIGIT: &'static str = "6";
    const IPSET_FAMILY: &'static str = "inet6";
    const ROUTEROS_MENU: &'static str = "/ipv6";
    fn key(&self) -> (u128, u8) {
        (u128::from(self.addr()), Ipv6Net::prefix_len(self))
    }
    fn prefix_len(&self) -> u8 {
        Ipv6Net::prefix_len(self)
    }
    fn aggregate(nets: Vec<Self>) -> Vec<Self> {
        Ipv6Net::aggregate(&nets)
    }
    fn halves() -> [Self; 2] {
        [
            Ipv6Net::new_assert(Ipv6Addr::from(0u128), 1),
            Ipv6Net::new_assert(Ipv6Addr::from(1u128 << 127), 1),
        ]
    }
    fn write(entry: &Entry<Self>, out: &mut Vec<u8>) {
        // std's canonical (RFC 5952) form, as the database stores it; writing to a
        // Vec cannot fail.
        let _ = write!(out, "{}", entry.net.addr());
        if !entry.bare {
            out.push(b'/');
            push_decimal(out, entry.net.prefix_len());
        }
    }
}

/// Appends an IPv4 address in dotted decimal (by hand, as [`Net::write`] does).
pub(super) fn push_ipv4(out: &mut Vec<u8>, addr: Ipv4Addr) {
    for (i, octet) in addr.octets().into_iter().enumerate() {
        if i > 0 {
            out.push(b'.');
        }
        push_decimal(out, octet);
    }
}

/// Appends `n` in decimal.
fn push_decimal(out: &mut Vec<u8>, n: u8) {
    if n >= 100 {
        out.push(b'0' + n / 100);
    }
    if n >= 10 {
        out.push(b'0' + n / 10 % 10);
    }
    out.push(b'0' + n % 10);
}

/// A parsed value of either family, without the cost of `IpNet`'s generality.
enum Parsed {
    V4(Entry<Ipv4Net>),
    V6(Entry<Ipv6Net>),
}

/// Parses one stored value: a prefix (`91.108.4.0/22`; host bits are cleared should
/// any be set) or a bare address (`93.184.216.34`, kept bare). Surrounding whitespace
/// is ignored; anything else gives `None`.
pub fn parse_value(value: &str) -> Option<Entry<IpNet>> {
    Some(match parse(value)? {
        Parsed::V4(e) => Entry {
            net: IpNet::V4(e.net),
            bare: e.bare,
        },
        Parsed::V6(e) => Entry {
            net: IpNet::V6(e.net),
            bare: e.bare,
        },
    })
}

fn parse(value: &str) -> Option<Parsed> {
    // IPv4 dominates real lists and parsing is most of the cost of rendering, hence
    // the one-pass fast path; whatever it does not take goes the general way.
    if let Some((addr, len)) = parse_ipv4_fast(value.as_bytes()) {
        return ipv4_entry(addr, len);
    }
    let value = value.trim();
    let (addr, len) = match value.split_once('/') {
        Some((addr, len)) => {
            // `u8::from_str` would take a `+` sign; a prefix length is digits only.
            if len.is_empty() || len.len() > 3 || !len.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (addr, Some(len.parse::<u8>().ok()?))
        }
        None => (value, None),
    };
    match addr.parse::<IpAddr>().ok()? {
        IpAddr::V4(addr) => ipv4_entry(addr, len),
        IpAddr::V6(addr) => {
            let net = Ipv6Net::new(addr, len.unwrap_or(128)).ok()?.trunc();
            Some(Parsed::V6(Entry {
                net,
                bare: len.is_none(),
            }))
        }
    }
}

fn ipv4_entry(addr: Ipv4Addr, len: Option<u8>) -> Option<Parsed> {
    let net = Ipv4Net::new(addr, len.unwrap_or(32)).ok()?.trunc();
    Some(Parsed::V4(Entry {
        net,
        bare: len.is_none(),
    }))
}

/// `a.b.c.d` or `a.b.c.d/len` in one pass: 1–3 digits per octet without leading
/// zeros, octets up to 255 (the syntax of `Ipv4Addr::from_str`), a length of 1–3
/// digits. Anything else gives `None`; the length's range is checked by the caller.
pub(super) fn parse_ipv4_fast(s: &[u8]) -> Option<(Ipv4Addr, Option<u8>)> {
    let mut octets = [0u8; 4];
    let mut i = 0;
    for (n, octet) in octets.iter_mut().enumerate() {
        if n > 0 {
            if s.get(i) != Some(&b'.') {
                return None;
            }
            i += 1;
        }
        let (v, digits) = digits(&s[i.min(s.len())..])?;
        // A leading zero is only allowed for the octet 0 itself.
        if digits > 1 && s[i] == b'0' {
            return None;
        }
        *octet = u8::try_from(v).ok()?;
        i += digits;
    }
    let addr = Ipv4Addr::from(octets);
    match s.get(i) {
        None => Some((addr, None)),
        Some(b'/') => {
            let rest = &s[i + 1..];
            let (v, digits) = digits(rest)?;
            if digits != rest.len() {
                return None;
            }
            Some((addr, Some(u8::try_from(v).ok()?)))
        }
        Some(_) => None,
    }
}

/// The value of the 1–3 leading ASCII digits of `s` and how many there are.
fn digits(s: &[u8]) -> Option<(u16, usize)> {
    let mut v: u16 = 0;
    let mut n = 0;
    for &b in s.iter().take(3) {
        if !b.is_ascii_digit() {
            break;
        }
        v = v * 10 + u16::from(b - b'0');
        n += 1;
    }
    if n == 0 || s.get(n).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    Some((v, n))
}

/// Collects values one at a time, so that a caller streaming rows from the database
/// needs no `String` per value. [`Collector::finish`] gives the [`Prepared`] lists.
#[derive(Debug, Default)]
pub struct Collector {
    family: Option<Family>,
    // IPv4 is collected as packed integers (address, length, bare: in sort order),
    // because sorting plain `u64`s is several times faster than sorting structs and
    // sorting is the largest cost for big lists.
    v4: Vec<u64>,
    v6: Vec<Entry<Ipv6Net>>,
}

impl Collector {
    /// A collector keeping `family` only (both when `None`).
    pub fn new(family: Option<Family>) -> Collector {
        Collector {
            family,
            ..Collector::default()
        }
    }

    /// A collector with room for `n` values.
    pub fn with_capacity(family: Option<Family>, n: usize) -> Collector {
        let mut c = Collector::new(family);
        if family != Some(Family::V6) {
            c.v4.reserve(n);
        }
        c
    }

    /// Adds one value; invalid ones and those of the other family are skipped.
    pub fn push(&mut self, value: &str) {
        match parse(value) {
            Some(Parsed::V4(e)) if self.family != Some(Family::V6) => {
                self.v4.push((e.net.key() << 1) | u64::from(e.bare));
            }
            Some(Parsed::V6(e)) if self.family != Some(Family::V4) => self.v6.push(e),
            _ => {}
        }
    }

    /// Adds one IPv4 value given as numbers: what [`Collector::push`] does with its
    /// text `addr/len` (`addr` alone when `len` is `None`), without the text.
    pub fn push_v4(&mut self, addr: Ipv4Addr, len: Option<u8>) {
        if self.family == Some(Family::V6) {
            return;
        }
        if let Some(Parsed::V4(e)) = ipv4_entry(addr, len) {
            self.v4.push((e.net.key() << 1) | u64::from(e.bare));
        }
    }

    /// Sorts, removes duplicates and, with `aggregate`, merges overlapping and
    /// adjacent prefixes.
    pub fn finish(self, aggregate: bool) -> Prepared {
        let mut v4 = self.v4;
        crate::util::sort::sort(&mut v4);
        // Keys differing only in the `bare` bit are the same network: keep the first,
        // the prefix form.
        v4.dedup_by_key(|k| *k >> 1);
        let mut out = Prepared {
            v4: v4
                .into_iter()
                .filter_map(|k| {
                    let net = Ipv4Net::new(Ipv4Addr::from((k >> 9) as u32), (k >> 1) as u8).ok()?;
                    Some(Entry {
                        net,
                        bare: k & 1 == 1,
                    })
                })
                .collect(),
            v6: self.v6,
            names: Vec::new(),
        };
        if aggregate {
            aggregate_family(&mut out.v4);
            aggregate_family(&mut out.v6);
        } else {
            sort_dedup(&mut out.v6);
        }
        out
    }
}

/// Parses, filters, sorts and de-duplicates `values`; with `aggregate`, merges
/// overlapping and adjacent networks into the fewest covering prefixes.
///
/// * Invalid strings are skipped (the database only holds normalised values).
/// * A network stored both bare and as a host prefix (`10.0.0.1` and `10.0.0.1/32`)
///   is listed once, as the prefix.
/// * Aggregated output is always in prefix notation, host routes included
///   (`93.184.216.34/32`): after merging, an entry no longer stands for one stored
///   value, and uniform CIDR is the easiest to consume.
pub fn prepare(values: &[String], family: Option<Family>, aggregate: bool) -> Prepared {
    let mut c = Collector::with_capacity(family, values.len());
    for v in values {
        c.push(v);
    }
    c.finish(aggregate)
}

/// Merges prepared lists (of several groups): sorted, duplicates removed, with
/// `aggregate` the fewest covering prefixes.
pub fn union(parts: Vec<Prepared>, aggregate: bool) -> Prepared {
    let mut out = Prepared::default();
    for p in parts {
        out.v4.extend(p.v4);
        out.v6.extend(p.v6);
        out.names.extend(p.names);
    }
    crate::util::sort::sort(&mut out.names);
    out.names.dedup();
    if aggregate {
        aggregate_family(&mut out.v4);
        aggregate_family(&mut out.v6);
    } else {
        sort_dedup(&mut out.v4);
        sort_dedup(&mut out.v6);
    }
    out
}

/// Replaces one family by the fewest prefixes that cover exactly the same addresses.
fn aggregate_family<N: Net>(entries: &mut Vec<Entry<N>>) {
    if entries.is_empty() {
        return;
    }
    let nets: Vec<N> = entries.iter().map(|e| e.net).collect();
    *entries = N::aggregate(nets)
        .into_iter()
        .map(|net| Entry { net, bare: false })
        .collect();
    // ipnet returns them in order already; sorting a sorted list is cheap and keeps
    // the output contract independent of that implementation detail. All are
    // prefixes and distinct, so this is a plain sort by network.
    sort_dedup(entries);
}

/// Sorts by network and removes duplicates. `bare == false` sorts first, so dedup
/// keeps the prefix form of a network stored both ways, whatever the input order.
/// The one sort of entry lists: each `sort_*_by_key` closure is its own copy of the
/// sort code (4-5 KB each, docs/size.md).
pub(super) fn sort_dedup<N: Net>(entries: &mut Vec<Entry<N>>) {
    crate::util::sort::sort_by_key(entries, |e| (e.net.key(), e.bare));
    entries.dedup_by(|later, first| later.net == first.net);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `push_v4` keeps, drops and shapes exactly what `push` does with the text.
    #[test]
    fn push_v4_is_push_of_the_text() {
        let cases: [(Ipv4Addr, Option<u8>); 8] = [
            (Ipv4Addr::new(10, 0, 0, 0), Some(8)),
            (Ipv4Addr::new(10, 0, 0, 1), Some(24)),
            (Ipv4Addr::new(93, 184, 216, 34), None),
            (Ipv4Addr::new(93, 184, 216, 34), Some(32)),
            (Ipv4Addr::new(0, 0, 0, 0), Some(0)),
            (Ipv4Addr::new(1, 2, 3, 4), Some(33)),
            (Ipv4Addr::new(1, 2, 3, 4), Some(63)),
            (Ipv4Addr::new(255, 255, 255, 255), None),
        ];
        for family in [None, Some(Family::V4), Some(Family::V6)] {
            let (mut by_text, mut by_numbers) = (Collector::new(family), Collector::new(family));
            for (addr, len) in cases {
                let text = match len {
                    Some(l) => format!("{addr}/{l}"),
                    None => addr.to_string(),
                };
                by_text.push(&text);
                by_numbers.push_v4(addr, len);
            }
            for aggregate in [false, true] {
                let (a, b) = (
                    Collector {
                        family,
                        v4: by_text.v4.clone(),
                        v6: Vec::new(),
                    },
                    Collector {
                        family,
                        v4: by_numbers.v4.clone(),
                        v6: Vec::new(),
                    },
                );
                assert_eq!(a.finish(aggregate), b.finish(aggregate), "{family:?}");
            }
            assert_eq!(by_text.v4, by_numbers.v4, "{family:?}");
        }
    }
}
