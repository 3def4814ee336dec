//! Output formats: plain text, JSON, nftables script, ipset restore file, RouterOS
//! script, and the lists of other routing stacks (sing-box, mihomo, WireGuard, BIRD,
//! Keenetic, OpenVPN).
//!
//! `format.rs` holds the options that select and shape a listing, `names` the checks of
//! table and set names, `values` parsing, ordering and aggregation of stored values,
//! `write` the firewall writers, `routeros` the gap-free RouterOS script and its pages,
//! `stacks` the other routing stacks' writers; `dnsmasq` the `nftset=`/`ipset=` lines
//! of the dnsmasq output (host names, not addresses).

mod community;
mod dnsmasq;
mod exclude;
mod names;
mod routeros;
mod stacks;
mod values;
mod write;

pub use community::Community;
pub use dnsmasq::{
    dns_set_name, render_dnsmasq, DnsTarget, DnsmasqLineTooLong, DnsmasqOptions,
    DEFAULT_DNS_TIMEOUT_SECONDS, DNSMASQ_HEADER, DNSMASQ_MAX_LINE,
};
pub use exclude::{subtract, Exclusions};
pub use names::{check_name, mark_chains, NFT_KEYWORDS, NFT_KEYWORDS_NEWER};
pub use routeros::{routeros_page, routeros_page_of, RouterosPage, ROUTEROS_PAGE_MAX};
pub use values::{parse_value, prepare, union, Collector, Entry, Prepared};
pub use write::{
    ipset_maxelem, needs_aggregate, render, render_prepared, size_bound, IPSET_MAXELEM,
    IPSET_TMP_SUFFIX, NFT_CHUNK,
};

use std::fmt;
use std::str::FromStr;

/// Which addresses a listing holds, by the kind of their source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeFilter {
    /// Everything.
    All,
    /// Values of every prefix source: ASNs, feeds and countries.
    Cidr,
    /// Addresses resolved from host names.
    Fqdn,
    /// Values of ASN sources only.
    Asn,
    /// Values of feed sources only.
    Feed,
    /// Values of country sources only.
    Country,
}

impl TypeFilter {
    /// The kinds of source (their words in the database's `kind` column) the filter
    /// keeps, `None` for every kind. The one place that says what `cidr` means: a
    /// new kind of prefix source is added here.
    pub fn kinds(self) -> Option<&'static [&'static str]> {
        match self {
            TypeFilter::All => None,
            TypeFilter::Cidr => Some(&["asn", "feed", "country"]),
            TypeFilter::Fqdn => Some(&["fqdn"]),
            TypeFilter::Asn => Some(&["asn"]),
            TypeFilter::Feed => Some(&["feed"]),
            TypeFilter::Country => Some(&["country"]),
        }
    }

    /// Whether values of sources of `kind` (its database word) are kept.
    pub fn keeps(self, kind: &str) -> bool {
        self.kinds().is_none_or(|k| k.contains(&kind))
    }
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
    /// A MikroTik RouterOS script that updates the address list in place.
    Routeros,
    /// A sing-box rule-set source (`{"version":2,"rules":[{"ip_cidr":[..]}]}`).
    Singbox,
    /// A mihomo (Clash) rule-provider, `ipcidr` behaviour, one prefix per line.
    Mihomo,
    /// The same rule-provider in its YAML `payload:` form.
    MihomoYaml,
    /// One WireGuard `AllowedIPs = ...` line, aggregated.
    Wireguard,
    /// BIRD 2 static routes, `route PREFIX via "IFACE";`, for a `protocol static`.
    Bird,
    /// Keenetic CLI routes, `ip route NET MASK IFACE auto !COMMENT` (IPv4).
    Keenetic,
    /// OpenVPN server `push "route ..."` / `push "route-ipv6 ..."` lines.
    Openvpn,
}

impl Format {
    /// Whether the format is plain text (every format but `json` and `singbox`).
    pub fn is_text(self) -> bool {
        !matches!(self, Format::Json | Format::Singbox)
    }
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
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadValue(pub String);

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

word_enum!(TypeFilter, "type", "all" => All, "cidr" => Cidr, "fqdn" => Fqdn, "asn" => Asn, "feed" => Feed, "country" => Country);
word_enum!(Format, "format", "text" => Text, "json" => Json, "nft" => Nft, "ipset" => Ipset,
    "routeros" => Routeros, "singbox" => Singbox, "mihomo" => Mihomo, "mihomo-yaml" => MihomoYaml,
    "wireguard" => Wireguard, "bird" => Bird, "keenetic" => Keenetic, "openvpn" => Openvpn);

/// Every format, in the order `--help` and the errors name them.
pub const FORMATS: &[Format] = &[
    Format::Text,
    Format::Json,
    Format::Nft,
    Format::Ipset,
    Format::Routeros,
    Format::Singbox,
    Format::Mihomo,
    Format::MihomoYaml,
    Format::Wireguard,
    Format::Bird,
    Format::Keenetic,
    Format::Openvpn,
];
word_enum!(Family, "family", "4" => V4, "6" => V6);

/// The group of the top-level sources, listed when no group is asked for.
pub const DEFAULT_GROUP: &str = "default";
/// The group selection that lists every group.
pub const ALL_GROUPS: &str = "*";
/// Longest group name.
pub const MAX_GROUP_LEN: usize = 24;

/// Checks a group name: 1 to 24 of `a-z`, `0-9` and `_` (they become set names and
/// keys of `config.json`).
pub fn check_group_name(name: &str) -> Result<(), BadValue> {
    let ok = (1..=MAX_GROUP_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(BadValue(format!(
            "invalid group name {name:?}: use 1 to {MAX_GROUP_LEN} of a-z, 0-9 and _"
        )))
    }
}

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
    /// The group listed: `default`, a group's name, or `*` for every group.
    pub group: String,
    /// Where `bird` and `keenetic` routes go: an interface name or a gateway address
    /// (`blackhole` for BIRD's blackhole routes).
    pub via: Option<String>,
    /// The comment of `keenetic` routes (default: the set name).
    pub comment: Option<String>,
    /// The BGP community each `bird` route carries (the group's `bgp_community`, or
    /// a one-off `community=`).
    pub community: Option<Community>,
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
            group: DEFAULT_GROUP.into(),
            via: None,
            comment: None,
            community: None,
        }
    }
}

#[cfg(test)]
mod tests;
