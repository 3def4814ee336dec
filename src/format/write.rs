//! The writers of the firewall formats (and the one entry to every writer).

use std::io::Write as _;

use super::values::{prepare, Entry, Net, Prepared};
use super::{Family, Format, RenderOptions};

/// Elements per nftables `add element` statement. nft parses and overlap-checks each
/// statement as a whole, so very long statements get slow and memory-hungry on small
/// routers; a thousand elements per statement keeps that cheap while the file as a
/// whole still loads as one transaction.
pub const NFT_CHUNK: usize = 1000;

/// `maxelem` of the ipset sets for any list of up to this many entries per family.
///
/// `ipset create -exist` accepts an existing set only when its parameters, maxelem
/// included, are identical, and at every `swap` the live name takes the temporary
/// set's parameters. A maxelem that followed the count would make the next load fail
/// as soon as the list grew or shrank across a step; a constant keeps every load
/// compatible with the previous one. A hash set's memory follows its content, not
/// maxelem, so the large limit costs nothing. Longer lists get the next power of two
/// (see [`ipset_maxelem`]); when that step changes, the live set has to be destroyed
/// once by hand. A set created by other means (e.g. fw3 `config ipset`) must use
/// `hash:net`, the same family and this maxelem.
pub const IPSET_MAXELEM: usize = 1 << 20;

/// Suffix of ipset's temporary swap sets, `<set>_v4_new`; [`MAX_SET_LEN`] keeps the
/// name within ipset's 31-byte limit.
pub const IPSET_TMP_SUFFIX: &str = "_new";

/// Renders the distinct stored `values` (prefixes and bare addresses, in any order,
/// duplicates allowed; invalid strings are skipped) in `opts.format`.
///
/// Every format lists IPv4 before IPv6, each in numeric order (network address, then
/// prefix length) without duplicates, and every non-empty output ends with a newline.
/// Values are printed as stored (bare addresses stay bare) unless aggregated, when
/// all are prefixes (`93.184.216.34/32`); see [`prepare`].
///
/// * `text`: one value per line. Empty list: zero bytes.
/// * `json`: `{"type":"all","count":2,"addresses":["91.108.4.0/22","2001:b28:f23d::/48"]}`
///   and a newline, like the other formats, so that a terminal prompt does not run on
///   and a file is a proper text file; JSON parsers ignore it.
/// * `nft`: `add table inet <table>`, then per family `add set` (interval set;
///   idempotent), `flush set` and `add element` statements of at most [`NFT_CHUNK`]
///   elements. Always aggregated, so no elements overlap (nft rejects overlaps
///   without `auto-merge`); no `add element` for an empty family. One file is one
///   transaction: the sets never appear empty or half-filled.
/// * `ipset`: per family, `create <set>_v4 hash:net family inet maxelem M -exist` (the
///   live set, if missing); the temporary `<set>_v4_new` created the same way and
///   flushed (it may be left over from an interrupted load); `add` lines into it;
///   `swap` with the live set and `destroy` of the temporary. The live set changes
///   atomically and keeps the references of iptables rules. `M` is
///   [`ipset_maxelem`]. Aggregated only on request (hash:net accepts overlapping
///   entries). `hash:net` cannot hold a `/0`: a family containing one is written as
///   its two `/1` halves, which match exactly the same addresses (every other entry is
///   inside them).
/// * `routeros`: per family, `/ip firewall address-list` (`/ipv6 ...`), then an
///   update in place of the list `<set>` (see `routeros`): entries that stay are
///   never removed, those that left are, entries of others are left alone. RouterOS
///   keeps IPv4 and IPv6 lists apart, so both use the name `<set>`. An empty family
///   is written too, so that stale entries go away.
/// * `singbox`, `mihomo`, `mihomo-yaml`, `wireguard`, `bird`, `keenetic`, `openvpn`:
///   the lists of other routing stacks (see `stacks`), always in prefix notation;
///   `wireguard` is always aggregated.
///
/// With a `family` filter the scripts leave the other family alone: they neither
/// create, flush nor remove anything of it.
///
/// `opts.table` and `opts.set` are written unquoted: callers validate them first with
/// [`RenderOptions::check`].
///
/// ```
/// use ripe_cidr_collector::format::{render, Format, RenderOptions};
/// let values = vec!["2001:db8::/32".to_string(), "10.0.0.0/8".to_string(), "9.0.0.0/8".to_string()];
/// let opts = RenderOptions { format: Format::Text, ..RenderOptions::default() };
/// assert_eq!(render(&values, &opts), b"9.0.0.0/8\n10.0.0.0/8\n2001:db8::/32\n");
/// ```
pub fn render(values: &[String], opts: &RenderOptions) -> Vec<u8> {
    let p = prepare(values, opts.family, needs_aggregate(opts));
    render_prepared(&p, opts)
}

/// Whether `opts` asks for aggregated lists: when requested, and always for `nft`
/// (interval sets must not overlap) and `wireguard` (one peer's list, as short as
/// it can be).
pub fn needs_aggregate(opts: &RenderOptions) -> bool {
    opts.aggregate || matches!(opts.format, Format::Nft | Format::Wireguard)
}

/// [`render`] of lists already prepared (with [`needs_aggregate`] honoured).
pub fn render_prepared(p: &Prepared, opts: &RenderOptions) -> Vec<u8> {
    let v4 = opts.family != Some(Family::V6);
    let v6 = opts.family != Some(Family::V4);
    // Allocated once (and never far beyond the body: the bound is tight).
    let mut out = Vec::with_capacity(size_bound(p, opts));
    // Writing to a Vec cannot fail: the `let _ = write!` below ignore nothing real.
    match opts.format {
        Format::Text => {
            lines(&mut out, b"", &p.v4);
            lines(&mut out, b"", &p.v6);
        }
        Format::Json => {
            let _ = write!(
                out,
                "{{\"type\":\"{}\",\"count\":{},\"addresses\":[",
                opts.type_filter.as_str(),
                p.len()
            );
            // IP syntax needs no JSON escaping.
            for e in &p.v4 {
                out.push(b'"');
                Net::write(e, &mut out);
                out.extend_from_slice(b"\",");
            }
            for e in &p.v6 {
                out.push(b'"');
                Net::write(e, &mut out);
                out.extend_from_slice(b"\",");
            }
            if !p.is_empty() {
                out.pop(); // the last comma
            }
            out.extend_from_slice(b"]}\n");
        }
        Format::Nft => {
            let _ = writeln!(out, "add table inet {}", opts.table);
            if v4 {
                nft_family(&mut out, &opts.table, &opts.set, &p.v4);
            }
            if v6 {
                nft_family(&mut out, &opts.table, &opts.set, &p.v6);
            }
        }
        Format::Ipset => {
            if v4 {
                ipset_family(&mut out, &opts.set, &p.v4);
            }
            if v6 {
                ipset_family(&mut out, &opts.set, &p.v6);
            }
        }
        Format::Routeros => {
            if v4 {
                super::routeros::family(&mut out, &opts.set, &p.v4);
            }
            if v6 {
                super::routeros::family(&mut out, &opts.set, &p.v6);
            }
        }
        _ => super::stacks::render(&mut out, p, opts, v4, v6),
    }
    out
}

/// The most bytes [`render_prepared`] writes for `p` in `opts.format`: the longest
/// line of each family's entry (an address of 15 or 39 characters, with its length
/// 18 or 43), times the entries, plus the fixed parts. Known before the body is
/// written, so that a server can refuse one that would not fit its memory; close to
/// the real size (the tests hold it within a quarter of a render of long addresses).
pub fn size_bound(p: &Prepared, opts: &RenderOptions) -> usize {
    let n4 = if opts.family == Some(Family::V6) {
        0
    } else {
        p.v4.len()
    };
    // Keenetic's routes are IPv4 only.
    let no_v6 = opts.family == Some(Family::V4) || opts.format == Format::Keenetic;
    let n6 = if no_v6 { 0 } else { p.v6.len() };
    let (set, table) = (opts.set.len(), opts.table.len());
    let len = |o: &Option<String>| o.as_ref().map_or(0, String::len);
    let (via, comment) = (len(&opts.via), len(&opts.comment).max(set));
    // Bytes of an entry besides its address (v4, v6): the line's fixed text.
    let (f4, f6) = match opts.format {
        Format::Text | Format::Mihomo | Format::Nft | Format::Wireguard => (2, 2),
        Format::Json | Format::Singbox => (3, 3),
        Format::MihomoYaml => (7, 7),
        Format::Ipset => (13 + set, 13 + set),
        // `:do {add ...} on-error={set [find ...] ...}`, the address twice.
        Format::Routeros => (133 + 5 * set + 18, 133 + 5 * set + 43),
        // `route P via "IFACE" { bgp_community.add(...); };`
        Format::Bird => {
            let community = opts
                .community
                .as_ref()
                .map_or(0, |c| c.bird_add().len() + 5);
            (21 + via + community, 21 + via + community)
        }
        // `ip route NET MASK IFACE auto !COMMENT`: the mask's 15 more (IPv4 only).
        Format::Keenetic => (31 + via + comment, 0),
        Format::Openvpn => (30, 19),
    };
    let names: usize = p.names.iter().map(|n| n.len() + 3).sum();
    // Headers (nft's statement every NFT_CHUNK entries, menus, sets, removals).
    let fixed = 1024 + 8 * (set + table) + (n4 + n6) / NFT_CHUNK * (40 + set + table);
    n4 * (18 + f4) + n6 * (43 + f6) + names + fixed
}

/// One line per entry, each `prefix` then the entry.
fn lines<N: Net>(out: &mut Vec<u8>, prefix: &[u8], entries: &[Entry<N>]) {
    for e in entries {
        out.extend_from_slice(prefix);
        N::write(e, out);
        out.push(b'\n');
    }
}

/// One family of the nft script.
fn nft_family<N: Net>(out: &mut Vec<u8>, table: &str, set: &str, entries: &[Entry<N>]) {
    let d = N::DIGIT;
    let _ = writeln!(
        out,
        "add set inet {table} {set}_v{d} {{ type ipv{d}_addr; flags interval; }}"
    );
    let _ = writeln!(out, "flush set inet {table} {set}_v{d}");
    for chunk in entries.chunks(NFT_CHUNK) {
        let _ = write!(out, "add element inet {table} {set}_v{d} {{ ");
        for (i, e) in chunk.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(b", ");
            }
            N::write(e, out);
        }
        out.extend_from_slice(b" }\n");
    }
}

/// One family of the ipset restore file.
fn ipset_family<N: Net>(out: &mut Vec<u8>, set: &str, entries: &[Entry<N>]) {
    let halves;
    let entries = if entries.iter().any(|e| e.net.prefix_len() == 0) {
        halves = N::halves().map(|net| Entry { net, bare: false });
        &halves[..]
    } else {
        entries
    };
    let (d, family) = (N::DIGIT, N::IPSET_FAMILY);
    let maxelem = ipset_maxelem(entries.len());
    let live = format!("{set}_v{d}");
    let tmp = format!("{live}{IPSET_TMP_SUFFIX}");
    for name in [&live, &tmp] {
        let _ = writeln!(
            out,
            "create {name} hash:net family {family} maxelem {maxelem} -exist"
        );
    }
    let _ = writeln!(out, "flush {tmp}");
    lines(out, format!("add {tmp} ").as_bytes(), entries);
    let _ = writeln!(out, "swap {tmp} {live}");
    let _ = writeln!(out, "destroy {tmp}");
}

/// The ipset `maxelem` for `count` entries: [`IPSET_MAXELEM`], or for a longer list
/// the next power of two (within ipset's 32-bit limit).
pub fn ipset_maxelem(count: usize) -> u64 {
    if count <= IPSET_MAXELEM {
        IPSET_MAXELEM as u64
    } else {
        (count as u64)
            .checked_next_power_of_two()
            .unwrap_or(u64::MAX)
            .min(u64::from(u32::MAX))
    }
}
