//! Sources and values: the kinds of source, how ASNs, host names, feed URLs and
//! country codes are written
//! and shown, and how collected values are normalised. Every layer uses these, so
//! there is one definition of each rule.

use std::fmt;
use std::net::IpAddr;

use crate::util::json::Value;
use ipnet::IpNet;

/// The kinds of source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// An autonomous system: its announced prefixes.
    Asn,
    /// A host name: its A and AAAA addresses.
    Fqdn,
    /// The URL of a plain list of addresses and prefixes.
    Feed,
    /// A country (ISO 3166 alpha-2): the prefixes registered to it.
    Country,
}

impl Kind {
    /// Every kind, in the order runs and listings take them.
    pub const ALL: [Kind; 4] = [Kind::Asn, Kind::Fqdn, Kind::Feed, Kind::Country];

    /// `asn`, `fqdn`, `feed` or `country`: the word stored in the database's `kind`
    /// column (text, so a new kind needs no schema change).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Asn => "asn",
            Kind::Fqdn => "fqdn",
            Kind::Feed => "feed",
            Kind::Country => "country",
        }
    }
    /// The kind stored as `word` in the database.
    pub fn from_word(word: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == word)
    }
    /// The config key holding sources of this kind: `asns`, `fqdns`, `feeds`,
    /// `countries`.
    pub fn key(self) -> &'static str {
        match self {
            Kind::Asn => "asns",
            Kind::Fqdn => "fqdns",
            Kind::Feed => "feeds",
            Kind::Country => "countries",
        }
    }
    /// Whether its values are prefixes (everything but host names, whose values are
    /// addresses).
    pub fn has_prefixes(self) -> bool {
        self != Kind::Fqdn
    }
    /// Normalises a source given as text (CLI, API path).
    pub fn normalize(self, s: &str) -> Result<String, String> {
        match self {
            Kind::Asn => normalize_asn(s),
            Kind::Fqdn => normalize_fqdn(s),
            Kind::Feed => normalize_feed(s),
            Kind::Country => normalize_country(s),
        }
    }
    /// Normalises a source given as JSON (configuration, API body): ASNs may be
    /// numbers, every other kind is a string.
    pub fn normalize_json(self, v: &Value) -> Result<String, String> {
        match (self, v) {
            (Kind::Asn, v) => normalize_asn_value(v),
            (_, Value::String(s)) => self.normalize(s),
            (_, other) => {
                let mut shown = other.to_string();
                if shown.len() > 60 {
                    shown = format!("{}...", shown.chars().take(57).collect::<String>());
                }
                Err(format!("invalid {self} {shown}: expected a string"))
            }
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a source is shown to people: `AS62041`, the host name, the feed's URL or
/// `country NL`.
pub fn display(kind: Kind, source: &str) -> String {
    match kind {
        Kind::Asn => format!("AS{source}"),
        Kind::Country => format!("country {source}"),
        Kind::Fqdn | Kind::Feed => source.to_string(),
    }
}

/// Longest feed URL accepted, in bytes.
const MAX_URL: usize = 2048;

/// Normalises a feed URL: `http://` or `https://` (scheme and host lower-cased), a
/// host, no spaces, quotes, `<`, `>`, backslashes or control characters, at most
/// 2048 bytes.
///
/// ```
/// use ripe_cidr_collector::source::normalize_feed;
/// assert_eq!(normalize_feed("HTTPS://Example.org/drop.txt").unwrap(), "https://example.org/drop.txt");
/// assert!(normalize_feed("ftp://example.org/x").unwrap_err().contains("\"ftp://example.org/x\""));
/// ```
pub fn normalize_feed(s: &str) -> Result<String, String> {
    let bad = |why: &str| Err(format!("invalid feed URL {s:?}: {why}"));
    let t = s.trim();
    let Some((scheme, rest)) = t.split_once("://") else {
        return bad("expected an http:// or https:// URL");
    };
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return bad("only http:// and https:// are fetched");
    }
    if t.len() > MAX_URL {
        return bad("longer than 2048 bytes");
    }
    // Quotes and angle brackets too: a URL is shown in pages (LuCI, the web page) and
    // written into scripts, and no server needs them unencoded.
    if t.bytes()
        .any(|b| b <= b' ' || b == 0x7f || b"<>\"'`\\".contains(&b))
        || !t.is_ascii()
    {
        return bad(
            "spaces, quotes, <, >, \\, control and non-ASCII characters must be percent-encoded",
        );
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if authority.contains('@') {
        return bad("user names and passwords are not supported");
    }
    let host = match authority.rsplit_once(':') {
        Some((h, port)) if !h.ends_with(']') || authority.starts_with('[') => {
            if !port.is_empty() && port.parse::<u16>().is_err() && !authority.ends_with(']') {
                return bad("invalid port");
            }
            h
        }
        _ => authority,
    };
    if host.is_empty() {
        return bad("no host");
    }
    if path.starts_with('#') {
        return bad("a fragment is not part of what is fetched");
    }
    Ok(format!(
        "{scheme}://{}{path}",
        authority.to_ascii_lowercase()
    ))
}

/// Normalises a country code: two ASCII letters, upper-cased (`nl` → `NL`).
///
/// ```
/// use ripe_cidr_collector::source::normalize_country;
/// assert_eq!(normalize_country("nl").unwrap(), "NL");
/// assert!(normalize_country("NLD").unwrap_err().contains("\"NLD\""));
/// ```
pub fn normalize_country(s: &str) -> Result<String, String> {
    if s.len() == 2 && s.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Ok(s.to_ascii_uppercase());
    }
    Err(format!(
        "invalid country code {:?}: expected two letters (ISO 3166 alpha-2) such as NL",
        s.to_uppercase()
    ))
}

/// Normalises an ASN: `"62041"`, `"AS62041"`, `"as62041"` → `"62041"`.
///
/// ```
/// use ripe_cidr_collector::source::normalize_asn;
/// assert_eq!(normalize_asn("AS62041").unwrap(), "62041");
/// assert!(normalize_asn("ASX").unwrap_err().contains("\"ASX\""));
/// ```
pub fn normalize_asn(s: &str) -> Result<String, String> {
    let digits = s
        .strip_prefix("AS")
        .or_else(|| s.strip_prefix("as"))
        .or_else(|| s.strip_prefix("As"))
        .or_else(|| s.strip_prefix("aS"))
        .unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "invalid ASN {s:?}: expected a number such as 62041 or AS62041"
        ));
    }
    match digits.parse::<u32>() {
        Ok(0) => Err(format!("invalid ASN {s:?}: AS0 is reserved")),
        Ok(n) => Ok(n.to_string()),
        Err(_) => Err(format!("invalid ASN {s:?}: ASNs go up to 4294967295")),
    }
}

/// Longest `asn search` text, in bytes.
pub const MAX_SEARCH_TEXT: usize = 64;
/// `asn search` candidates asked for when no limit is given, and the most there may be.
pub const DEFAULT_SEARCH_LIMIT: usize = 8;
pub const MAX_SEARCH_LIMIT: usize = 20;

/// Checks a search text: not empty, at most [`MAX_SEARCH_TEXT`] bytes, no control
/// characters. The error names the text (escaped).
pub fn check_search_text(text: &str) -> Result<(), String> {
    let why = if text.trim().is_empty() {
        "is empty"
    } else if text.len() > MAX_SEARCH_TEXT {
        "is longer than 64 bytes"
    } else if text.chars().any(char::is_control) {
        "has control characters"
    } else {
        return Ok(());
    };
    let mut shown: String = text.chars().take(MAX_SEARCH_TEXT + 1).collect();
    if shown.len() < text.len() {
        shown.push_str("...");
    }
    Err(format!("search text {shown:?} {why}"))
}

/// Reads a `--limit` / `limit=` value: 1 to [`MAX_SEARCH_LIMIT`].
pub fn parse_search_limit(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX_SEARCH_LIMIT).contains(&n) => Ok(n),
        _ => Err(format!(
            "invalid limit {s:?}: expected 1 to {MAX_SEARCH_LIMIT}"
        )),
    }
}

/// Normalises an ASN given as JSON: a string as in [`normalize_asn`] or a whole number.
pub fn normalize_asn_value(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => normalize_asn(s),
        Value::Number(n) => match n.as_u64() {
            Some(n) => normalize_asn(&n.to_string()),
            None => Err(format!("invalid ASN {n}: expected a whole number")),
        },
        other => Err(format!(
            "invalid ASN {other}: expected a string such as \"AS62041\" or a number"
        )),
    }
}

/// Normalises a host name: lower case, trailing dot dropped; rejects IP literals,
/// spaces and other invalid characters, empty labels, labels over 63 bytes, names over
/// 253 bytes and non-ASCII names (those must be given in their `xn--` form).
///
/// ```
/// use ripe_cidr_collector::source::normalize_fqdn;
/// assert_eq!(normalize_fqdn("Example.COM.").unwrap(), "example.com");
/// assert!(normalize_fqdn("192.0.2.1").is_err());
/// ```
pub fn normalize_fqdn(s: &str) -> Result<String, String> {
    let bad = |why: &str| Err(format!("invalid host name {s:?}: {why}"));
    let name = s.strip_suffix('.').unwrap_or(s).to_ascii_lowercase();
    if name.is_empty() {
        return bad("empty");
    }
    if !name.is_ascii() {
        return bad("not ASCII; give internationalised names in their xn-- form");
    }
    if name.parse::<IpAddr>().is_ok() {
        return bad("an IP address, not a host name");
    }
    if s.contains(':') {
        return bad("':' is not allowed (no port, no IPv6 address)");
    }
    if name.len() > 253 {
        return bad("longer than 253 bytes");
    }
    for label in name.split('.') {
        if label.is_empty() {
            return bad("empty label");
        }
        if label.len() > 63 {
            return bad("a label is longer than 63 bytes");
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return bad("only letters, digits, '-' and '_' are allowed in a label");
        }
        if label.starts_with('-') || label.ends_with('-') {
            return bad("a label starts or ends with '-'");
        }
    }
    // A top-level label is never all digits; this also catches things like 300.1.1.1.
    // libc's resolver reads a name whose last label is a number (`2130706433`, `0x7f`,
    // `10.1`) as an IPv4 address (inet_aton forms), so those are IP literals too.
    let top = name.rsplit('.').next().unwrap_or("");
    let hex = top
        .strip_prefix("0x")
        .map(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
    if hex.unwrap_or_else(|| top.bytes().all(|b| b.is_ascii_digit())) {
        return bad("looks like an IP address, not a host name");
    }
    Ok(name)
}

/// Normalises a prefix from an ASN source: host bits cleared (`10.0.0.1/8` →
/// `10.0.0.0/8`), IPv6 in canonical lower-case form. A bare address becomes a host
/// prefix (`/32`, `/128`).
pub fn normalize_prefix(s: &str) -> Result<String, String> {
    let t = s.trim();
    if let Ok(net) = t.parse::<IpNet>() {
        return Ok(net.trunc().to_string());
    }
    if let Ok(ip) = t.parse::<IpAddr>() {
        return Ok(IpNet::from(ip).to_string());
    }
    Err(format!("invalid prefix {s:?}"))
}

/// Normalises an address from an FQDN source: a bare address in canonical form.
pub fn normalize_address(s: &str) -> Result<String, String> {
    s.trim()
        .parse::<IpAddr>()
        .map(|ip| ip.to_string())
        .map_err(|_| format!("invalid IP address {s:?}"))
}

/// Normalises a value for a source of `kind`.
pub fn normalize_value(kind: Kind, s: &str) -> Result<String, String> {
    match kind {
        Kind::Fqdn => normalize_address(s),
        Kind::Asn | Kind::Feed | Kind::Country => normalize_prefix(s),
    }
}

/// The ranges that would capture the router's own or its LAN's traffic, as
/// (first address, prefix length, name): "this network", RFC 1918, shared address
/// space, loopback, link-local, multicast, reserved; `::`, `::1`, unique local,
/// link-local and multicast for IPv6. Documentation and benchmarking ranges are not
/// here: they route nowhere, and tests and examples use them.
const SPECIAL_V4: [(u32, u8, &str); 10] = [
    (0, 8, "this network"),
    (0x0a00_0000, 8, "private"),
    (0x6440_0000, 10, "shared address space"),
    (0x7f00_0000, 8, "loopback"),
    (0xa9fe_0000, 16, "link-local"),
    (0xac10_0000, 12, "private"),
    (0xc000_0000, 24, "protocol assignments"),
    (0xc0a8_0000, 16, "private"),
    (0xe000_0000, 4, "multicast"),
    (0xf000_0000, 4, "reserved"),
];
const SPECIAL_V6: [(u128, u8, &str); 5] = [
    (0, 128, "unspecified"),
    (1, 128, "loopback"),
    (0xfc00 << 112, 7, "unique local"),
    (0xfe80 << 112, 10, "link-local"),
    (0xff00 << 112, 8, "multicast"),
];

/// IPv6 ranges that carry an IPv4 address, as (first address, prefix length, the
/// bit where the embedded IPv4 address ends): IPv4-mapped `::ffff:0:0/96`, NAT64
/// `64:ff9b::/96` and 6to4 `2002::/16`. A host or a translator reaches the embedded
/// IPv4 address through them, so the special IPv4 ranges are special there too.
const EMBEDDING_V6: [(u128, u8, u8); 3] = [
    (0xffff << 32, 96, 128),
    (0x64_ff9b << 96, 96, 128),
    (0x2002 << 112, 16, 48),
];

/// The name of the special range `net` overlaps (it lies in one, or holds one), if
/// any: such a prefix from an ASN or a country would send the LAN's own traffic
/// where the list's traffic goes.
pub fn special_range(net: &IpNet) -> Option<&'static str> {
    // Two prefixes overlap when the shorter one's bits agree with the other's start.
    fn overlaps(a: u128, alen: u8, b: u128, blen: u8, bits: u8) -> bool {
        let len = alen.min(blen);
        let shift = bits - len;
        len == 0 || (a >> shift) == (b >> shift)
    }
    match net {
        IpNet::V4(n) => {
            let a = u128::from(u32::from(n.network()));
            SPECIAL_V4
                .iter()
                .find(|(b, l, _)| overlaps(a, n.prefix_len(), u128::from(*b), *l, 32))
                .map(|s| s.2)
        }
        IpNet::V6(n) => {
            let (a, len) = (u128::from(n.network()), n.prefix_len());
            let direct = SPECIAL_V6
                .iter()
                .find(|(b, l, _)| overlaps(a, len, *b, *l, 128))
                .map(|s| s.2);
            direct.or_else(|| {
                EMBEDDING_V6.iter().find_map(|&(b, l, end)| {
                    if !overlaps(a, len, b, l, 128) {
                        return None;
                    }
                    // Shorter than the embedding range: it holds every special form.
                    let Some(v4len) = len.checked_sub(l) else {
                        return Some("IPv4-embedding");
                    };
                    let v4 = (a >> (128 - u32::from(end))) as u32;
                    let v4 = ipnet::Ipv4Net::new(v4.into(), v4len.min(32)).ok()?;
                    special_range(&IpNet::V4(v4.trunc()))
                })
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_ranges() {
        let sp = |s: &str| special_range(&s.parse().unwrap());
        for (p, name) in [
            ("10.0.0.0/8", "private"),
            ("10.1.2.0/24", "private"),
            ("127.0.0.1/32", "loopback"),
            ("100.64.0.0/10", "shared address space"),
            ("100.100.0.0/16", "shared address space"),
            ("224.0.0.0/4", "multicast"),
            ("172.0.0.0/8", "private"),
            ("255.255.255.255/32", "reserved"),
            ("0.0.0.0/8", "this network"),
            ("169.254.1.0/24", "link-local"),
            ("fd00::/8", "unique local"),
            ("fe80::/10", "link-local"),
            ("::/128", "unspecified"),
            ("::1/128", "loopback"),
            ("ff02::/16", "multicast"),
            ("192.0.0.0/24", "protocol assignments"),
            ("::ffff:127.0.0.1/128", "loopback"),
            ("::ffff:10.0.0.0/104", "private"),
            ("::ffff:0:0/96", "this network"),
            ("64:ff9b::192.168.1.1/128", "private"),
            ("64:ff9b::a9fe:0/112", "link-local"),
            ("2002:c0a8:101::/48", "private"),
            ("2002:a00::/24", "private"),
            ("2002:7f00:1::1/128", "loopback"),
            ("2002::/15", "IPv4-embedding"),
        ] {
            assert_eq!(sp(p), Some(name), "{p}");
        }
        for p in [
            "192.0.2.0/24",
            "198.51.100.0/24",
            "203.0.113.0/24",
            "198.18.0.0/15",
            "100.128.0.0/10",
            "11.0.0.0/8",
            "172.32.0.0/11",
            "2001:db8::/32",
            "2001:67c:4e8::/48",
            "::2/128",
            "::ffff:8.8.8.8/128",
            "64:ff9b::808:808/128",
            "2002:808:808::/48",
            "2002:c000:200::/40",
        ] {
            assert_eq!(sp(p), None, "{p}");
        }
    }

    fn json(text: &str) -> Value {
        crate::util::json::parse(text).unwrap()
    }

    #[test]
    fn asn_forms() {
        for s in ["62041", "AS62041", "as62041", "As62041", "062041"] {
            assert_eq!(normalize_asn(s).unwrap(), "62041", "{s}");
        }
        assert_eq!(normalize_asn_value(&json("62041")).unwrap(), "62041");
        assert_eq!(normalize_asn("4294967295").unwrap(), "4294967295");
        for bad in [
            "",
            "AS",
            "ASN62041",
            "62041a",
            " 62041",
            "-1",
            "4294967296",
            "0",
            "AS 1",
            "1.5",
        ] {
            let e = normalize_asn(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
        for bad in ["-5", "1.5", "null", "[1]", "4294967296", "1e3"] {
            assert!(normalize_asn_value(&json(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn fqdn_forms() {
        assert_eq!(normalize_fqdn("Example.COM.").unwrap(), "example.com");
        assert_eq!(normalize_fqdn("localhost").unwrap(), "localhost");
        assert_eq!(
            normalize_fqdn("xn--bcher-kva.example").unwrap(),
            "xn--bcher-kva.example"
        );
        let long_label = "a".repeat(64);
        let long_name = [
            "a".repeat(63),
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(62),
        ]
        .join(".");
        assert_eq!(long_name.len(), 254);
        for bad in [
            "",
            ".",
            "1.2.3.4",
            "::1",
            "2001:db8::1",
            "[::1]",
            "exa mple.com",
            "bücher.example",
            "a..b",
            ".example.com",
            "-a.example",
            "a-.example",
            "ex/ample.com",
            "300.1.1.1",
            &long_label,
            &long_name,
            "example.com..",
        ] {
            let e = normalize_fqdn(bad).unwrap_err();
            assert!(e.contains("invalid host name"), "{bad}: {e}");
        }
    }

    #[test]
    fn feed_and_country_forms() {
        assert_eq!(
            normalize_feed(" HTTP://Example.ORG:8080/Drop.txt?x=1 ").unwrap(),
            "http://example.org:8080/Drop.txt?x=1"
        );
        assert_eq!(
            normalize_feed("https://[2001:db8::1]/a").unwrap(),
            "https://[2001:db8::1]/a"
        );
        for bad in [
            "",
            "example.org/drop.txt",
            "ftp://example.org/x",
            "file:///etc/passwd",
            "https://",
            "https:///x",
            "https://a b/x",
            "https://user@example.org/",
            "https://example.org:99999/",
            "https://example.org/<img src=x>",
            "https://example.org/\"",
            "https://example.org/it's",
            "https://example.org/a`b",
            "https://example.org/a\\b",
            "https://example.org/a b",
        ] {
            let e = normalize_feed(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
        // Their encoded forms are fine.
        assert!(normalize_feed("https://example.org/%3Cimg%3E%22%27").is_ok());
        assert_eq!(normalize_country("nL").unwrap(), "NL");
        for bad in ["", "N", "nld", "N1", "1", "  ", "ÄÖ"] {
            let e = normalize_country(bad).unwrap_err();
            assert!(e.contains(&format!("{:?}", bad.to_uppercase())), "{e}");
        }
        assert_eq!(
            Kind::Feed.normalize_json(&json("5")).unwrap_err(),
            "invalid feed 5: expected a string"
        );
        for k in Kind::ALL {
            assert_eq!(Kind::from_word(k.as_str()), Some(k));
        }
    }

    #[test]
    fn normalises_values() {
        assert_eq!(normalize_prefix("10.0.0.1/8").unwrap(), "10.0.0.0/8");
        assert_eq!(
            normalize_prefix("2001:DB8:0:0::1/32").unwrap(),
            "2001:db8::/32"
        );
        assert_eq!(normalize_prefix("1.2.3.4").unwrap(), "1.2.3.4/32");
        assert!(normalize_prefix("1.2.3.4/33").is_err());
        assert!(normalize_prefix("garbage").is_err());
        assert_eq!(
            normalize_address("2606:2800:0:0:0:0:0:1").unwrap(),
            "2606:2800::1"
        );
        assert!(normalize_address("1.2.3.0/24").is_err());
    }
}
