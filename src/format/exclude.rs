//! Exclusions: prefixes cut out of a listing, exactly. `10.0.0.0/8` minus
//! `10.1.0.0/16` is the 8 prefixes that cover what remains, never the whole /8 and
//! never a gap.
//!
//! The exclusions are merged once into sorted, disjoint address ranges per family;
//! the listed values (sorted) are then walked beside them, each finding the exclusions
//! it overlaps from where the value before it stopped, so the cost is
//! O(n + m log m) for n values and m exclusions (plus the pieces written), never a
//! pass over all values per exclusion. The values an exclusion does not touch stay in
//! place: the list is not copied.

use std::net::{Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

use super::values::{sort_dedup, Entry, Net, Prepared};

/// Sorted, disjoint, non-adjacent inclusive address ranges of one family.
type Ranges = Vec<(u128, u128)>;

/// Exclusions ready to subtract: merged ranges per family.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exclusions {
    v4: Ranges,
    v6: Ranges,
}

impl Exclusions {
    /// Merges `nets` (any order, overlaps allowed).
    pub fn new(nets: &[IpNet]) -> Exclusions {
        let mut v4 = Vec::new();
        let mut v6 = Vec::new();
        for net in nets {
            match net {
                IpNet::V4(n) => v4.push(n.range()),
                IpNet::V6(n) => v6.push(n.range()),
            }
        }
        Exclusions {
            v4: merge(v4),
            v6: merge(v6),
        }
    }

    /// Whether nothing is excluded.
    pub fn is_empty(&self) -> bool {
        self.v4.is_empty() && self.v6.is_empty()
    }

    /// Whether an exclusion overlaps `net` (for `lookup`'s `"excluded"`: a match that
    /// the listing does not show in full).
    pub fn hides(&self, net: &IpNet) -> bool {
        let ((a, b), ranges) = match net {
            IpNet::V4(n) => (n.range(), &self.v4),
            IpNet::V6(n) => (n.range(), &self.v6),
        };
        let i = ranges.partition_point(|e| e.1 < a);
        ranges.get(i).is_some_and(|e| e.0 <= b)
    }
}

impl Exclusions {
    /// Whether the exclusions cover all of `net` (it is not listed at all).
    pub fn covers(&self, net: &IpNet) -> bool {
        let ((a, b), ranges) = match net {
            IpNet::V4(n) => (n.range(), &self.v4),
            IpNet::V6(n) => (n.range(), &self.v6),
        };
        let i = ranges.partition_point(|e| e.1 < a);
        ranges.get(i).is_some_and(|e| e.0 <= a && e.1 >= b)
    }
}

/// Sorts and merges overlapping and adjacent ranges.
fn merge(mut ranges: Ranges) -> Ranges {
    crate::util::sort::sort(&mut ranges);
    let mut out: Ranges = Vec::with_capacity(ranges.len());
    for (a, b) in ranges {
        match out.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// What exclusion needs of a network type: its address range and the way back.
pub(crate) trait Span: Net {
    /// Address bits: 32 or 128.
    const BITS: u32;
    /// First and last address, as integers.
    fn range(&self) -> (u128, u128);
    /// The prefix at `start` of length `len`.
    fn from_start(start: u128, len: u8) -> Self;
}

impl Span for Ipv4Net {
    const BITS: u32 = 32;
    fn range(&self) -> (u128, u128) {
        (
            u128::from(u32::from(self.network())),
            u128::from(u32::from(self.broadcast())),
        )
    }
    fn from_start(start: u128, len: u8) -> Self {
        Ipv4Net::new_assert(Ipv4Addr::from(start as u32), len)
    }
}

impl Span for Ipv6Net {
    const BITS: u32 = 128;
    fn range(&self) -> (u128, u128) {
        (u128::from(self.network()), u128::from(self.broadcast()))
    }
    fn from_start(start: u128, len: u8) -> Self {
        Ipv6Net::new_assert(Ipv6Addr::from(start), len)
    }
}

/// The size of a block of prefix length `len`, minus one.
fn block_last(bits: u32, len: u32) -> u128 {
    match bits - len {
        128 => u128::MAX,
        host => (1u128 << host) - 1,
    }
}

/// Appends the fewest prefixes that cover exactly `start..=end`.
fn cover<N: Span>(mut start: u128, end: u128, out: &mut Vec<Entry<N>>) {
    loop {
        // The largest block aligned at `start`, shrunk until it ends within the range.
        let mut len = N::BITS - start.trailing_zeros().min(N::BITS);
        while start + block_last(N::BITS, len) > end {
            len += 1;
        }
        out.push(Entry {
            net: N::from_start(start, len as u8),
            bare: false,
        });
        let last = start + block_last(N::BITS, len);
        if last >= end {
            return;
        }
        start = last + 1;
    }
}

/// Subtracts `ranges` from one family's entries, in place. Sorted input stays sorted;
/// aggregated input stays aggregated (pieces of two disjoint prefixes can never merge).
///
/// The entries come sorted (by address), so the first range that can overlap an entry
/// only moves forward: found by stepping from the previous one, O(n + m) in all (a
/// binary search only if an entry starts before the one before it). Only the entries
/// an exclusion touches are cut; the rest stay where they are, so a long list with a
/// few exclusions costs one pass over it, not a copy.
fn subtract_family<N: Span>(entries: &mut Vec<Entry<N>>, ranges: &[(u128, u128)]) {
    if ranges.is_empty() || entries.is_empty() {
        return;
    }
    // The pieces of the entries an exclusion touches, and where those are.
    let (mut pieces, mut touched) = (Vec::new(), Vec::new());
    let (mut i, mut last_start, mut last_key) = (0, 0, None);
    // Whether the entries are strictly in key order (as every listing holds them).
    let mut sorted = true;
    for (at, e) in entries.iter().enumerate() {
        let (a, b) = e.net.range();
        if a < last_start {
            i = ranges.partition_point(|r| r.1 < a);
        }
        last_start = a;
        let key = e.net.key();
        sorted = sorted && last_key.is_none_or(|l| l < key);
        last_key = Some(key);
        while ranges.get(i).is_some_and(|r| r.1 < a) {
            i += 1;
        }
        if ranges.get(i).is_some_and(|r| r.0 <= b) {
            touched.push(at);
            cut(a, b, &ranges[i..], &mut pieces);
        }
    }
    if touched.is_empty() {
        return;
    }
    // The entries between two cut ones move down as blocks.
    let mut to = touched[0];
    for (k, &at) in touched.iter().enumerate() {
        let next = touched.get(k + 1).copied().unwrap_or(entries.len());
        entries.copy_within(at + 1..next, to);
        to += next - at - 1;
    }
    entries.truncate(to);
    sort_dedup(&mut pieces);
    if !sorted {
        entries.extend_from_slice(&pieces);
        sort_dedup(entries);
    } else if merge_in(entries, &pieces) {
        // A piece equal to an entry nested in the one it was cut from.
        entries.dedup_by(|later, first| later.net == first.net);
    }
}

/// Merges sorted `pieces` into sorted `entries` (in the order of `sort_dedup`), from
/// the back, in place; whether a piece and an entry are the same network.
fn merge_in<N: Span>(entries: &mut Vec<Entry<N>>, pieces: &[Entry<N>]) -> bool {
    let order = |e: &Entry<N>| (e.net.key(), e.bare);
    let (mut i, mut j) = (entries.len(), pieces.len());
    entries.extend_from_slice(pieces);
    let mut same = false;
    while j > 0 {
        let k = i + j - 1;
        let p = pieces[j - 1];
        match i.checked_sub(1).map(|x| entries[x]) {
            Some(e) if order(&e) > order(&p) => {
                same |= e.net == p.net;
                entries[k] = e;
                i -= 1;
            }
            e => {
                same |= e.is_some_and(|e| e.net == p.net);
                entries[k] = p;
                j -= 1;
            }
        }
    }
    same
}

/// Appends the pieces of `a..=b` outside `ranges` (those from the first that can
/// overlap it).
fn cut<N: Span>(a: u128, b: u128, ranges: &[(u128, u128)], out: &mut Vec<Entry<N>>) {
    // The first address not yet decided; `None` once past the value's end.
    let mut cur = Some(a);
    for &(ra, rb) in ranges {
        let Some(c) = cur else { break };
        if ra > b {
            break;
        }
        if ra > c {
            cover(c, ra - 1, out);
        }
        cur = (rb < b).then(|| rb + 1);
    }
    if let Some(c) = cur {
        cover(c, b, out);
    }
}

/// Cuts `exclusions` out of prepared lists (aggregated ones stay aggregated). Values
/// not touched keep their form (a bare address stays bare); the pieces of a split
/// value are prefixes.
pub fn subtract(mut p: Prepared, exclusions: &Exclusions) -> Prepared {
    subtract_family(&mut p.v4, &exclusions.v4);
    subtract_family(&mut p.v6, &exclusions.v6);
    p
}

#[cfg(test)]
mod tests;
