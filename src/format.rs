//! Output formats: plain text, JSON, nftables script, ipset restore file, RouterOS script.

use std::fmt;
use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

/// Which addresses a listing holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeFilter {
    /// Everything.
    All,
    /// Values from ASN sources (prefixes).
    Cidr,
    /// Values from FQDN sources (addresses).
    Fqdn,
}

/// The output format of a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One value per line.
    Text,
    /// `{"type":..,"count":..,"addresses":[..]}`.
    Json,
    /// An `nft -f` script.
    Nft,
    /// An `ipset restore` file.
    Ipset,
    /// A MikroTik RouterOS script.
    Routeros,
}

/// Keeps one address family only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// IPv4 only.
    V4,
    /// IPv6 only.
    V6,
}

/// A word that is not one of the accepted values; the message names the value and the choices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadValue(pub String);

impl fmt::Display for BadValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadValue {}

macro_rules! word_enum {
    ($ty:ident, $what:literal, $($word:literal => $var:ident),+) => {
        impl FromStr for $ty {
            type Err = BadValue;
            fn from_str(s: &str) -> Result<Self, BadValue> {
                match s {
                    $($word => Ok($ty::$var),)+
                    _ => Err(BadValue(format!(
                        concat!("invalid ", $what, " {:?}: expected one of ", $($word, " "),+),
                        s
                    ).trim_end().to_string())),
                }
            }
        }
        impl $ty {
            /// The word that names this value in config, CLI and API.
            pub fn as_str(self) -> &'static str {
                match self { $($ty::$var => $word,)+ }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

word_enum!(TypeFilter, "type", "all" => All, "cidr" => Cidr, "fqdn" => Fqdn);
word_enum!(Format, "format", "text" => Text, "json" => Json, "nft" => Nft, "ipset" => Ipset, "routeros" => Routeros);
word_enum!(Family, "family", "4" => V4, "6" => V6);

/// Default nftables table name.
pub const DEFAULT_TABLE: &str = "ripe_cidr";
/// Default set (and RouterOS list) name; families get `_v4`/`_v6` suffixes.
pub const DEFAULT_SET: &str = "ripe";
/// Longest accepted set name: `<set>_v4` plus the 4-byte suffix of ipset's temporary
/// swap set must fit ipset's 31-byte limit.
pub const MAX_SET_LEN: usize = 24;
/// Longest accepted table name.
pub const MAX_TABLE_LEN: usize = 64;

/// Everything that selects and shapes one listing: the same options for the API's
/// query parameters, `export` and the daemon's `outputs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderOptions {
    /// Which sources' values.
    pub type_filter: TypeFilter,
    /// Output format.
    pub format: Format,
    /// One family only, or both when `None`.
    pub family: Option<Family>,
    /// Merge overlapping and adjacent prefixes (always done for `nft`).
    pub aggregate: bool,
    /// nftables table name.
    pub table: String,
    /// Set / address-list base name.
    pub set: String,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            type_filter: TypeFilter::All,
            format: Format::Text,
            family: None,
            aggregate: false,
            table: DEFAULT_TABLE.into(),
            set: DEFAULT_SET.into(),
        }
    }
}

/// The words nft 1.0.6 reads as keywords wherever a table name stands (its scanner's
/// rules without a start condition). A table named like one of them makes `nft -f`
/// fail with "syntax error, unexpected ...", and quoting does not help. Generated from
/// `src/scanner.l` and checked with the real `nft`: each of these fails as a table
/// name, every other word of the scanner loads (`tests/it/formats_real.rs` checks the
/// list again where nft is installed). The match is exact: `TABLE` or `table1` is fine.
#[rustfmt::skip]
pub const NFT_KEYWORDS: &[&str] = &[
    "accept", "add", "ah", "all", "and", "arp", "auto-merge", "bridge", "cgroup", "chain",
    "comment", "comp", "constant", "continue", "counter", "cpu", "create", "ct", "day",
    "dccp", "define", "delete", "describe", "device", "devices", "dnat", "drop", "dst",
    "dup", "dynamic", "ecn", "element", "elements", "eq", "esp", "ether", "exists",
    "expires", "export", "exthdr", "fib", "flags", "flow", "flowtable", "flush", "frag",
    "fwd", "gc-interval", "ge", "get", "goto", "gt", "handle", "hbh", "hook", "hour",
    "ibriport", "ibrname", "icmp", "icmpv6", "igmp", "iif", "iifgroup", "iifname",
    "iiftype", "import", "include", "index", "inet", "insert", "interval", "ip", "ip6",
    "ipsec", "jhash", "jump", "le", "limit", "list", "log", "lshift", "lt", "map", "mark",
    "masquerade", "meta", "meter", "mh", "missing", "monitor", "ne", "netdev", "nftrace",
    "not", "notrack", "numgen", "obriport", "obrname", "offload", "oif", "oifgroup",
    "oifname", "oiftype", "or", "osf", "pkttype", "policy", "position", "priority",
    "queue", "quota", "random", "redefine", "redirect", "reject", "rename", "replace",
    "reset", "return", "rshift", "rt", "rt0", "rt2", "rtclassid", "rule", "ruleset",
    "sctp", "secmark", "set", "size", "skgid", "skuid", "snat", "socket", "srh", "symhash",
    "synproxy", "table", "tcp", "th", "time", "timeout", "tproxy", "type", "typeof", "udp",
    "udplite", "undefine", "update", "vlan", "vmap", "xor", "xt",
];

/// Words that became keywords in later nft releases (1.0.8 to 1.1.x, from their
/// `scanner.l`), rejected as well so that a name works on newer routers too. (Releases
/// before 1.0.6 had many more keywords, e.g. `name`, `port` or `version`.)
#[rustfmt::skip]
pub const NFT_KEYWORDS_NEWER: &[&str] = &[
    "destroy", "geneve", "gre", "gretap", "last", "tunnel", "vni", "vxlan",
];

/// Whether nft reads `word` as a keyword (see [`NFT_KEYWORDS`]).
fn is_nft_keyword(word: &str) -> bool {
    NFT_KEYWORDS.contains(&word) || NFT_KEYWORDS_NEWER.contains(&word)
}

/// Checks a table or set name: an ASCII letter, then letters, digits, `_` or `-`, so
/// that it is a valid nftables identifier and ipset name and needs no quoting anywhere.
/// A table name must not be an nft keyword ([`NFT_KEYWORDS`]); set names are written
/// with a `_v4`/`_v6` suffix, and those forms must not be keywords either (no keyword
/// has such a suffix, so every valid set name passes).
pub fn check_name(what: &str, name: &str, max: usize) -> Result<(), BadValue> {
    let mut chars = name.chars();
    let ok_first = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let ok_rest = chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !ok_first || !ok_rest {
        return Err(BadValue(format!(
            "invalid {what} name {name:?}: use an ASCII letter followed by letters, digits, '_' or '-'"
        )));
    }
    if name.len() > max {
        return Err(BadValue(format!(
            "invalid {what} name {name:?}: at most {max} characters"
        )));
    }
    if what == "table" && is_nft_keyword(name) {
        return Err(BadValue(format!(
            "invalid table name {name:?}: it is an nftables keyword"
        )));
    }
    if what == "set" {
        for suffixed in [format!("{name}_v4"), format!("{name}_v6")] {
            if is_nft_keyword(&suffixed) {
                return Err(BadValue(format!(
                    "invalid set name {name:?}: {suffixed:?} is an nftables keyword"
                )));
            }
        }
    }
    Ok(())
}

impl RenderOptions {
    /// Validates the table and set names.
    pub fn check(&self) -> Result<(), BadValue> {
        check_name("table", &self.table, MAX_TABLE_LEN)?;
        check_name("set", &self.set, MAX_SET_LEN)
    }
}

// ---------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------

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
trait Net: Copy + Ord {
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
        for (i, octet) in entry.net.addr().octets().into_iter().enumerate() {
            if i > 0 {
                out.push(b'.');
            }
            push_decimal(out, octet);
        }
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
fn parse_ipv4_fast(s: &[u8]) -> Option<(Ipv4Addr, Option<u8>)> {
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

    /// Sorts, removes duplicates and, with `aggregate`, merges overlapping and
    /// adjacent prefixes.
    pub fn finish(self, aggregate: bool) -> Prepared {
        let mut v4 = self.v4;
        v4.sort_unstable();
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
        };
        if aggregate {
            aggregate_family(&mut out.v4);
            aggregate_family(&mut out.v6);
        } else {
            // `bare == false` sorts first, so dedup keeps the prefix form of a network
            // stored both ways, whatever the input order.
            out.v6.sort_unstable_by_key(|e| (e.net.key(), e.bare));
            out.v6.dedup_by(|later, first| later.net == first.net);
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
    // the output contract independent of that implementation detail.
    entries.sort_unstable_by_key(|e| e.net.key());
}

/// The HTTP `Content-Type` of a format.
pub fn content_type(format: Format) -> &'static str {
    match format {
        Format::Json => "application/json",
        Format::Text | Format::Nft | Format::Ipset | Format::Routeros => {
            "text/plain; charset=utf-8"
        }
    }
}

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
/// * `routeros`: per family, `/ip firewall address-list` (`/ipv6 ...`),
///   `remove [find list=<set>]`, then `add list=<set> address=...` lines. RouterOS
///   keeps IPv4 and IPv6 lists apart, so both use the name `<set>`. The `remove` is
///   written for an empty family too, so that stale entries go away.
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
/// (interval sets must not overlap).
pub fn needs_aggregate(opts: &RenderOptions) -> bool {
    opts.aggregate || opts.format == Format::Nft
}

/// [`render`] of lists already prepared (with [`needs_aggregate`] honoured).
pub fn render_prepared(p: &Prepared, opts: &RenderOptions) -> Vec<u8> {
    let v4 = opts.family != Some(Family::V6);
    let v6 = opts.family != Some(Family::V4);
    // About the longest line per entry, so that the buffer is allocated once.
    let per_entry = 48 + opts.set.len();
    let mut out = Vec::with_capacity(p.len() * per_entry + 512);
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
                routeros_family(&mut out, &opts.set, &p.v4);
            }
            if v6 {
                routeros_family(&mut out, &opts.set, &p.v6);
            }
        }
    }
    out
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

/// One family of the RouterOS script.
fn routeros_family<N: Net>(out: &mut Vec<u8>, set: &str, entries: &[Entry<N>]) {
    let _ = writeln!(out, "{} firewall address-list", N::ROUTEROS_MENU);
    let _ = writeln!(out, "remove [find list={set}]");
    lines(out, format!("add list={set} address=").as_bytes(), entries);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both families, unsorted, with duplicates, an FQDN address inside an ASN prefix
    /// (91.108.4.5 in 91.108.4.0/22, 2001:67c:4e8::1 in 2001:67c:4e8::/48), adjacent
    /// prefixes that merge (91.108.8.0/22 + 91.108.12.0/22, 2001:b28:f23c::/48 +
    /// 2001:b28:f23d::/48) and adjacent ones that cannot (9.0.0.0/8 + 10.0.0.0/8).
    fn sample() -> Vec<String> {
        [
            "91.108.12.0/22",
            "2606:2800::1",
            "10.0.0.0/8",
            "91.108.4.5",
            "2001:b28:f23d::/48",
            "9.0.0.0/8",
            "91.108.4.0/22",
            "2001:67c:4e8::1",
            "10.0.0.0/8",
            "93.184.216.34",
            "2001:b28:f23c::/48",
            "91.108.8.0/22",
            "2606:2800::1",
            "2001:67c:4e8::/48",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|s| s.to_string()).collect()
    }

    fn opts(format: Format) -> RenderOptions {
        RenderOptions {
            format,
            ..RenderOptions::default()
        }
    }

    fn run(values: &[String], o: &RenderOptions) -> String {
        String::from_utf8(render(values, o)).expect("output is UTF-8")
    }

    const TEXT: &str = "\
9.0.0.0/8
10.0.0.0/8
91.108.4.0/22
91.108.4.5
91.108.8.0/22
91.108.12.0/22
93.184.216.34
2001:67c:4e8::/48
2001:67c:4e8::1
2001:b28:f23c::/48
2001:b28:f23d::/48
2606:2800::1
";

    const TEXT_AGGREGATED: &str = "\
9.0.0.0/8
10.0.0.0/8
91.108.4.0/22
91.108.8.0/21
93.184.216.34/32
2001:67c:4e8::/48
2001:b28:f23c::/47
2606:2800::1/128
";

    const NFT: &str = "\
add table inet ripe_cidr
add set inet ripe_cidr ripe_v4 { type ipv4_addr; flags interval; }
flush set inet ripe_cidr ripe_v4
add element inet ripe_cidr ripe_v4 { 9.0.0.0/8, 10.0.0.0/8, 91.108.4.0/22, 91.108.8.0/21, 93.184.216.34/32 }
add set inet ripe_cidr ripe_v6 { type ipv6_addr; flags interval; }
flush set inet ripe_cidr ripe_v6
add element inet ripe_cidr ripe_v6 { 2001:67c:4e8::/48, 2001:b28:f23c::/47, 2606:2800::1/128 }
";

    const IPSET: &str = "\
create ripe_v4 hash:net family inet maxelem 1048576 -exist
create ripe_v4_new hash:net family inet maxelem 1048576 -exist
flush ripe_v4_new
add ripe_v4_new 9.0.0.0/8
add ripe_v4_new 10.0.0.0/8
add ripe_v4_new 91.108.4.0/22
add ripe_v4_new 91.108.4.5
add ripe_v4_new 91.108.8.0/22
add ripe_v4_new 91.108.12.0/22
add ripe_v4_new 93.184.216.34
swap ripe_v4_new ripe_v4
destroy ripe_v4_new
create ripe_v6 hash:net family inet6 maxelem 1048576 -exist
create ripe_v6_new hash:net family inet6 maxelem 1048576 -exist
flush ripe_v6_new
add ripe_v6_new 2001:67c:4e8::/48
add ripe_v6_new 2001:67c:4e8::1
add ripe_v6_new 2001:b28:f23c::/48
add ripe_v6_new 2001:b28:f23d::/48
add ripe_v6_new 2606:2800::1
swap ripe_v6_new ripe_v6
destroy ripe_v6_new
";

    const ROUTEROS: &str = "\
/ip firewall address-list
remove [find list=ripe]
add list=ripe address=9.0.0.0/8
add list=ripe address=10.0.0.0/8
add list=ripe address=91.108.4.0/22
add list=ripe address=91.108.4.5
add list=ripe address=91.108.8.0/22
add list=ripe address=91.108.12.0/22
add list=ripe address=93.184.216.34
/ipv6 firewall address-list
remove [find list=ripe]
add list=ripe address=2001:67c:4e8::/48
add list=ripe address=2001:67c:4e8::1
add list=ripe address=2001:b28:f23c::/48
add list=ripe address=2001:b28:f23d::/48
add list=ripe address=2606:2800::1
";

    #[test]
    fn text_exact() {
        assert_eq!(run(&sample(), &opts(Format::Text)), TEXT);
    }

    #[test]
    fn text_aggregated_exact() {
        let o = RenderOptions {
            aggregate: true,
            ..opts(Format::Text)
        };
        assert_eq!(run(&sample(), &o), TEXT_AGGREGATED);
    }

    #[test]
    fn text_empty_is_zero_bytes() {
        assert!(render(&[], &opts(Format::Text)).is_empty());
        // Only invalid values, or only the filtered-out family: also nothing.
        assert!(render(&strings(&["junk", ""]), &opts(Format::Text)).is_empty());
        let o = RenderOptions {
            family: Some(Family::V6),
            ..opts(Format::Text)
        };
        assert!(render(&strings(&["10.0.0.0/8"]), &o).is_empty());
    }

    #[test]
    fn text_family_filters() {
        let v4 = RenderOptions {
            family: Some(Family::V4),
            ..opts(Format::Text)
        };
        assert_eq!(
            run(&sample(), &v4),
            "9.0.0.0/8\n10.0.0.0/8\n91.108.4.0/22\n91.108.4.5\n91.108.8.0/22\n\
             91.108.12.0/22\n93.184.216.34\n"
        );
        let v6 = RenderOptions {
            family: Some(Family::V6),
            aggregate: true,
            ..opts(Format::Text)
        };
        assert_eq!(
            run(&sample(), &v6),
            "2001:67c:4e8::/48\n2001:b28:f23c::/47\n2606:2800::1/128\n"
        );
    }

    #[test]
    fn json_exact() {
        assert_eq!(
            run(&sample(), &opts(Format::Json)),
            "{\"type\":\"all\",\"count\":12,\"addresses\":[\"9.0.0.0/8\",\"10.0.0.0/8\",\
             \"91.108.4.0/22\",\"91.108.4.5\",\"91.108.8.0/22\",\"91.108.12.0/22\",\
             \"93.184.216.34\",\"2001:67c:4e8::/48\",\"2001:67c:4e8::1\",\
             \"2001:b28:f23c::/48\",\"2001:b28:f23d::/48\",\"2606:2800::1\"]}\n"
        );
        let o = RenderOptions {
            aggregate: true,
            type_filter: TypeFilter::Cidr,
            ..opts(Format::Json)
        };
        assert_eq!(
            run(&sample(), &o),
            "{\"type\":\"cidr\",\"count\":8,\"addresses\":[\"9.0.0.0/8\",\"10.0.0.0/8\",\
             \"91.108.4.0/22\",\"91.108.8.0/21\",\"93.184.216.34/32\",\
             \"2001:67c:4e8::/48\",\"2001:b28:f23c::/47\",\"2606:2800::1/128\"]}\n"
        );
    }

    #[test]
    fn json_empty_and_family() {
        let o = RenderOptions {
            type_filter: TypeFilter::Fqdn,
            ..opts(Format::Json)
        };
        assert_eq!(
            run(&[], &o),
            "{\"type\":\"fqdn\",\"count\":0,\"addresses\":[]}\n"
        );
        let o = RenderOptions {
            family: Some(Family::V6),
            ..opts(Format::Json)
        };
        assert_eq!(
            run(&strings(&["10.0.0.0/8", "2001:b28:f23d::/48"]), &o),
            "{\"type\":\"all\",\"count\":1,\"addresses\":[\"2001:b28:f23d::/48\"]}\n"
        );
    }

    #[test]
    fn json_is_valid_json() {
        let out = render(&sample(), &opts(Format::Json));
        let v: serde_json::Value = serde_json::from_slice(&out).expect("valid JSON");
        assert_eq!(v["count"], 12);
        assert_eq!(v["addresses"].as_array().map(Vec::len), Some(12));
    }

    #[test]
    fn nft_exact_always_aggregated() {
        assert_eq!(run(&sample(), &opts(Format::Nft)), NFT);
        let o = RenderOptions {
            aggregate: true,
            ..opts(Format::Nft)
        };
        assert_eq!(run(&sample(), &o), NFT);
    }

    #[test]
    fn nft_empty_has_no_add_element() {
        assert_eq!(
            run(&[], &opts(Format::Nft)),
            "add table inet ripe_cidr\n\
             add set inet ripe_cidr ripe_v4 { type ipv4_addr; flags interval; }\n\
             flush set inet ripe_cidr ripe_v4\n\
             add set inet ripe_cidr ripe_v6 { type ipv6_addr; flags interval; }\n\
             flush set inet ripe_cidr ripe_v6\n"
        );
        // One family empty: its set is still created and flushed (stale elements go).
        assert_eq!(
            run(&strings(&["2001:db8::/32"]), &opts(Format::Nft)),
            "add table inet ripe_cidr\n\
             add set inet ripe_cidr ripe_v4 { type ipv4_addr; flags interval; }\n\
             flush set inet ripe_cidr ripe_v4\n\
             add set inet ripe_cidr ripe_v6 { type ipv6_addr; flags interval; }\n\
             flush set inet ripe_cidr ripe_v6\n\
             add element inet ripe_cidr ripe_v6 { 2001:db8::/32 }\n"
        );
    }

    #[test]
    fn nft_family_filter_and_names() {
        let o = RenderOptions {
            family: Some(Family::V4),
            table: "fw".into(),
            set: "tg".into(),
            ..opts(Format::Nft)
        };
        assert_eq!(
            run(&sample(), &o),
            "add table inet fw\n\
             add set inet fw tg_v4 { type ipv4_addr; flags interval; }\n\
             flush set inet fw tg_v4\n\
             add element inet fw tg_v4 { 9.0.0.0/8, 10.0.0.0/8, 91.108.4.0/22, \
             91.108.8.0/21, 93.184.216.34/32 }\n"
        );
        // The filtered family is empty: no add element line, and v4 is not touched.
        let o = RenderOptions {
            family: Some(Family::V6),
            ..opts(Format::Nft)
        };
        assert_eq!(
            run(&strings(&["10.0.0.0/8"]), &o),
            "add table inet ripe_cidr\n\
             add set inet ripe_cidr ripe_v6 { type ipv6_addr; flags interval; }\n\
             flush set inet ripe_cidr ripe_v6\n"
        );
    }

    #[test]
    fn nft_splits_long_lists() {
        // 2500 non-adjacent /32s (every other address), so none merge.
        let values: Vec<String> = (0..2500u32)
            .map(|i| Ipv4Addr::from(0x0a00_0000 + 2 * i).to_string())
            .collect();
        let out = run(&values, &opts(Format::Nft));
        let adds: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("add element"))
            .collect();
        assert_eq!(adds.len(), 3);
        let counts: Vec<usize> = adds.iter().map(|l| l.matches(", ").count() + 1).collect();
        assert_eq!(counts, [1000, 1000, 500]);
        assert!(
            adds[0].starts_with("add element inet ripe_cidr ripe_v4 { 10.0.0.0/32, 10.0.0.2/32,")
        );
        assert!(adds[2].ends_with(", 10.0.19.134/32 }"));
        assert!(out.ends_with(" }\nadd set inet ripe_cidr ripe_v6 { type ipv6_addr; flags interval; }\nflush set inet ripe_cidr ripe_v6\n"));
    }

    #[test]
    fn ipset_exact() {
        assert_eq!(run(&sample(), &opts(Format::Ipset)), IPSET);
    }

    #[test]
    fn ipset_aggregated_family_and_empty() {
        let o = RenderOptions {
            aggregate: true,
            family: Some(Family::V6),
            set: "x".into(),
            ..opts(Format::Ipset)
        };
        assert_eq!(
            run(&sample(), &o),
            "create x_v6 hash:net family inet6 maxelem 1048576 -exist\n\
             create x_v6_new hash:net family inet6 maxelem 1048576 -exist\n\
             flush x_v6_new\n\
             add x_v6_new 2001:67c:4e8::/48\n\
             add x_v6_new 2001:b28:f23c::/47\n\
             add x_v6_new 2606:2800::1/128\n\
             swap x_v6_new x_v6\n\
             destroy x_v6_new\n"
        );
        // Empty: the sets are still swapped for empty ones, so stale entries go.
        let o = RenderOptions {
            family: Some(Family::V4),
            ..opts(Format::Ipset)
        };
        assert_eq!(
            run(&[], &o),
            "create ripe_v4 hash:net family inet maxelem 1048576 -exist\n\
             create ripe_v4_new hash:net family inet maxelem 1048576 -exist\n\
             flush ripe_v4_new\n\
             swap ripe_v4_new ripe_v4\n\
             destroy ripe_v4_new\n"
        );
    }

    #[test]
    fn ipset_writes_zero_prefix_as_halves() {
        let values = strings(&["10.0.0.0/8", "0.0.0.0/0", "::/0", "2001:db8::/32"]);
        let out = run(&values, &opts(Format::Ipset));
        let adds: Vec<&str> = out.lines().filter(|l| l.starts_with("add ")).collect();
        assert_eq!(
            adds,
            [
                "add ripe_v4_new 0.0.0.0/1",
                "add ripe_v4_new 128.0.0.0/1",
                "add ripe_v6_new ::/1",
                "add ripe_v6_new 8000::/1",
            ]
        );
        // Other formats keep the /0 as it is.
        assert_eq!(
            run(&values, &opts(Format::Text)),
            "0.0.0.0/0\n10.0.0.0/8\n::/0\n2001:db8::/32\n"
        );
        assert!(run(&values, &opts(Format::Nft)).contains("{ 0.0.0.0/0 }\n"));
    }

    #[test]
    fn names_checked() {
        let ok = "ripe_cidr fw4 mytable tg TABLE Inet table1 ip6_nat a-b";
        for name in ok.split(' ') {
            assert_eq!(check_name("table", name, MAX_TABLE_LEN), Ok(()), "{name}");
        }
        let refused = "table inet ip set flush add counter vmap define include elements \
                       gc-interval destroy last";
        for kw in refused.split_whitespace() {
            let e = check_name("table", kw, MAX_TABLE_LEN).unwrap_err().0;
            assert_eq!(
                e,
                format!("invalid table name \"{kw}\": it is an nftables keyword")
            );
        }
        // Every listed keyword is refused, and each is a valid name otherwise (so that
        // the keyword check is what refuses it).
        for kw in NFT_KEYWORDS.iter().chain(NFT_KEYWORDS_NEWER) {
            let e = check_name("table", kw, MAX_TABLE_LEN).unwrap_err().0;
            assert!(e.ends_with("it is an nftables keyword"), "{kw}: {e}");
            // Sets always get a suffix: a keyword is a fine set name.
            assert_eq!(check_name("set", kw, MAX_SET_LEN), Ok(()), "{kw}");
        }
        assert!(NFT_KEYWORDS
            .iter()
            .chain(NFT_KEYWORDS_NEWER)
            .all(|k| !k.ends_with("_v4") && !k.ends_with("_v6")));
        let mut sorted = NFT_KEYWORDS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, NFT_KEYWORDS, "sorted, without duplicates");
        // The other checks still come first and name the value.
        let e = check_name("table", "a b", MAX_TABLE_LEN).unwrap_err().0;
        assert!(
            e.starts_with("invalid table name \"a b\": use an ASCII letter"),
            "{e}"
        );
        let e = check_name("set", &"s".repeat(25), MAX_SET_LEN)
            .unwrap_err()
            .0;
        assert!(e.contains("at most 24 characters"), "{e}");
        let o = RenderOptions {
            table: "vmap".into(),
            ..RenderOptions::default()
        };
        assert!(o.check().unwrap_err().0.contains("\"vmap\""));
    }

    #[test]
    fn ipset_names_fit_the_limit() {
        let set = "a".repeat(MAX_SET_LEN);
        let o = RenderOptions {
            set: set.clone(),
            ..opts(Format::Ipset)
        };
        assert!(o.check().is_ok());
        let out = run(&[], &o);
        let longest = out
            .split_whitespace()
            .filter(|w| w.starts_with(&set))
            .map(str::len)
            .max();
        assert_eq!(longest, Some(31));
    }

    #[test]
    fn ipset_maxelem_steps() {
        assert_eq!(ipset_maxelem(0), 1 << 20);
        assert_eq!(ipset_maxelem(70_000), 1 << 20);
        assert_eq!(ipset_maxelem(1 << 20), 1 << 20);
        assert_eq!(ipset_maxelem((1 << 20) + 1), 1 << 21);
        assert_eq!(ipset_maxelem(usize::MAX), u64::from(u32::MAX));
    }

    #[test]
    fn routeros_exact() {
        assert_eq!(run(&sample(), &opts(Format::Routeros)), ROUTEROS);
    }

    #[test]
    fn routeros_empty_still_removes_and_filter_leaves_other_family() {
        assert_eq!(
            run(&[], &opts(Format::Routeros)),
            "/ip firewall address-list\nremove [find list=ripe]\n\
             /ipv6 firewall address-list\nremove [find list=ripe]\n"
        );
        let o = RenderOptions {
            family: Some(Family::V6),
            aggregate: true,
            set: "tg".into(),
            ..opts(Format::Routeros)
        };
        assert_eq!(
            run(&sample(), &o),
            "/ipv6 firewall address-list\nremove [find list=tg]\n\
             add list=tg address=2001:67c:4e8::/48\n\
             add list=tg address=2001:b28:f23c::/47\n\
             add list=tg address=2606:2800::1/128\n"
        );
    }

    #[test]
    fn numeric_not_string_order() {
        let values = strings(&[
            "10.0.0.0/16",
            "10.0.0.0/8",
            "100.0.0.0/8",
            "9.0.0.0/8",
            "2001:db8::/48",
            "200::/8",
            "2001:db8::/32",
            "::1",
        ]);
        assert_eq!(
            run(&values, &opts(Format::Text)),
            "9.0.0.0/8\n10.0.0.0/8\n10.0.0.0/16\n100.0.0.0/8\n\
             ::1\n200::/8\n2001:db8::/32\n2001:db8::/48\n"
        );
    }

    #[test]
    fn bare_and_host_prefix_are_one_value() {
        for values in [
            strings(&["10.0.0.1", "10.0.0.1/32", "::1", "::1/128"]),
            strings(&["10.0.0.1/32", "10.0.0.1", "::1/128", "::1"]),
        ] {
            assert_eq!(run(&values, &opts(Format::Text)), "10.0.0.1/32\n::1/128\n");
        }
    }

    #[test]
    fn invalid_values_skipped_and_host_bits_cleared() {
        let values = strings(&[
            "",
            "junk",
            "10.0.0.0/33",
            "10.0.0.0/+8",
            "10.0.0.0/",
            "256.0.0.0/8",
            "01.2.3.4",
            "1.2.3",
            "1.2.3.4.5",
            "2001:db8::/129",
            "fe80::1%eth0",
            "10.1.2.3/8",
            " 192.0.2.1 ",
            "2001:DB8::1:0/112",
        ]);
        assert_eq!(
            run(&values, &opts(Format::Text)),
            "10.0.0.0/8\n192.0.2.1\n2001:db8::1:0/112\n"
        );
    }

    #[test]
    fn fast_ipv4_parser_agrees_with_std() {
        for s in [
            "0.0.0.0",
            "255.255.255.255",
            "1.2.3.4",
            "01.2.3.4",
            "1.02.3.4",
            "1.2.3.004",
            "0.0.0.00",
            "256.1.1.1",
            "1.2.3",
            "1.2.3.4.",
            ".1.2.3.4",
            "1..2.3",
            "1.2.3.4444",
            "1.2.3.-4",
            "",
            "a.b.c.d",
        ] {
            let fast = parse_ipv4_fast(s.as_bytes()).map(|(a, _)| a);
            assert_eq!(fast, s.parse::<Ipv4Addr>().ok(), "{s:?}");
            let with_len = format!("{s}/24");
            let fast = parse_ipv4_fast(with_len.as_bytes());
            assert_eq!(
                fast,
                s.parse::<Ipv4Addr>().ok().map(|a| (a, Some(24))),
                "{with_len:?}"
            );
        }
        assert_eq!(parse_ipv4_fast(b"1.2.3.4/"), None);
        assert_eq!(parse_ipv4_fast(b"1.2.3.4/1234"), None);
        assert_eq!(parse_ipv4_fast(b"1.2.3.4/8x"), None);
    }

    #[test]
    fn parse_value_forms() {
        let e = parse_value("91.108.4.0/22").expect("prefix");
        assert_eq!(
            (e.to_string(), e.bare),
            ("91.108.4.0/22".to_string(), false)
        );
        let e = parse_value("2606:2800::1").expect("address");
        assert_eq!((e.to_string(), e.bare), ("2606:2800::1".to_string(), true));
        assert_eq!(e.net.prefix_len(), 128);
        assert!(parse_value("example.com").is_none());
    }

    #[test]
    fn content_types() {
        assert_eq!(content_type(Format::Json), "application/json");
        for f in [Format::Text, Format::Nft, Format::Ipset, Format::Routeros] {
            assert_eq!(content_type(f), "text/plain; charset=utf-8");
        }
    }

    #[test]
    fn large_list_renders_every_format() {
        // 100,000 values: 75,000 distinct IPv4 /24s and 25,000 IPv6 /48s, shuffled.
        let mut values = Vec::with_capacity(100_000);
        let mut x: u64 = 1;
        for i in 0..100_000u32 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            if i % 4 == 0 {
                values.push(format!("2001:{:x}:{:x}::/48", i >> 16, i & 0xffff));
            } else {
                values.push(format!("{}/24", Ipv4Addr::from((x >> 32) as u32 & !0xff)));
            }
        }
        let p = prepare(&values, None, false);
        assert_eq!(p.v6.len(), 25_000);
        assert!(p.v4.windows(2).all(|w| w[0].net < w[1].net));
        for format in [
            Format::Text,
            Format::Json,
            Format::Nft,
            Format::Ipset,
            Format::Routeros,
        ] {
            let out = render(&values, &opts(format));
            assert!(out.ends_with(b"\n"), "{format}");
        }
        let text = run(&values, &opts(Format::Text));
        assert_eq!(text.lines().count(), p.len());
    }
}
