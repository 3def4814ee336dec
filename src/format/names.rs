//! Table and set names: what nft, ipset and RouterOS accept unquoted.

use super::{BadValue, Family, Format, RenderOptions, MAX_SET_LEN, MAX_TABLE_LEN};

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
    /// Validates the table and set names, and the options the format needs (`via`,
    /// `comment`, `family`).
    pub fn check(&self) -> Result<(), BadValue> {
        self.check_names()?;
        self.check_route_options()
    }

    /// Validates the group, table and set names.
    pub fn check_names(&self) -> Result<(), BadValue> {
        // The group first: its name is the default set name, and a bad group named as
        // a bad set (`group=Bad!` said `invalid set name "Bad!"`) misleads.
        if self.group != super::ALL_GROUPS {
            super::check_group_name(&self.group)?;
        }
        check_name("table", &self.table, MAX_TABLE_LEN)?;
        check_name("set", &self.set, MAX_SET_LEN)?;
        Ok(())
    }

    /// `via` and `comment` are written unquoted into route lines, so they are plain
    /// words; `via` is required where a route needs a target, and refused elsewhere
    /// (a `via` that changes nothing would hide a mistake).
    pub fn check_route_options(&self) -> Result<(), BadValue> {
        let f = self.format;
        let routes = matches!(f, Format::Bird | Format::Keenetic);
        match (&self.via, routes) {
            (None, true) => {
                return Err(BadValue(format!(
                    "format {f} needs via: the interface (or gateway address) the routes go \
                     through{}",
                    if f == Format::Bird {
                        ", or blackhole"
                    } else {
                        ""
                    }
                )))
            }
            (Some(_), false) => {
                return Err(BadValue(format!(
                    "via is for the bird and keenetic formats, not {f}"
                )))
            }
            (Some(v), true) => check_word("via", v, b"_.:/-")?,
            (None, false) => {}
        }
        if self.community.is_some() && f != Format::Bird {
            return Err(BadValue(format!(
                "community is for the bird format, not {f}"
            )));
        }
        match &self.comment {
            Some(_) if f != Format::Keenetic => {
                return Err(BadValue(format!(
                    "comment is for the keenetic format, not {f}"
                )))
            }
            Some(c) => check_word("comment", c, b"_.-")?,
            None => {}
        }
        // A `protocol static` holds one family (BIRD: "incompatible with channel
        // type"); Keenetic's `ip route` is IPv4 only.
        match (f, self.family) {
            (Format::Bird, None) => Err(BadValue(
                "format bird needs family 4 or 6: a BIRD protocol static holds one address \
                 family (make one include per family)"
                    .into(),
            )),
            (Format::Keenetic, Some(Family::V6)) => Err(BadValue(
                "format keenetic is IPv4 only (Keenetic's ip route): use family 4".into(),
            )),
            _ => Ok(()),
        }
    }

    /// Selects `group`; a group other than `default` (and `*`) names the sets after
    /// itself unless a set name was given (`set_given`).
    pub fn select_group(&mut self, group: &str, set_given: bool) {
        self.group = group.to_string();
        if !set_given && group != super::DEFAULT_GROUP && group != super::ALL_GROUPS {
            self.set = group.to_string();
        }
    }
}

/// Checks a word written unquoted into a line: 1 to 32 ASCII letters, digits and the
/// bytes of `extra`.
fn check_word(what: &str, value: &str, extra: &[u8]) -> Result<(), BadValue> {
    let ok = (1..=32).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || extra.contains(&b));
    if ok {
        Ok(())
    } else {
        let extra: String = extra.iter().map(|&b| format!(" '{}'", b as char)).collect();
        Err(BadValue(format!(
            "invalid {what} {value:?}: use 1 to 32 ASCII letters, digits or{extra}"
        )))
    }
}

/// The names of the chains that mark a group's traffic: `<set>_mark` (prerouting) and
/// `<set>_mark_out` (output), kept by the `load` output, read by `explain`.
pub fn mark_chains(set: &str) -> [String; 2] {
    [format!("{set}_mark"), format!("{set}_mark_out")]
}
