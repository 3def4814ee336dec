//! Where the prefixes of ASNs, feeds and countries come from: the ASN upstreams in
//! the order they are tried (`asn_upstreams`), their settings (`bgptools`,
//! `ipverse`) and the feeds' size limit (`feed`).

use std::fmt;

/// One ASN upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AsnUpstream {
    /// RIPEstat `announced-prefixes` (at `ripe.url`).
    Ripestat,
    /// bgp.tools' whole-table `table.jsonl`, downloaded once for all ASNs.
    Bgptools,
    /// ipverse's per-ASN plain lists.
    Ipverse,
}

impl AsnUpstream {
    /// Every upstream.
    pub const ALL: [AsnUpstream; 3] = [
        AsnUpstream::Ripestat,
        AsnUpstream::Bgptools,
        AsnUpstream::Ipverse,
    ];

    /// Its word in `asn_upstreams` and in status: `ripestat`, `bgptools`, `ipverse`.
    pub fn as_str(self) -> &'static str {
        match self {
            AsnUpstream::Ripestat => "ripestat",
            AsnUpstream::Bgptools => "bgptools",
            AsnUpstream::Ipverse => "ipverse",
        }
    }

    /// The upstream called `word`.
    pub fn from_word(word: &str) -> Option<AsnUpstream> {
        AsnUpstream::ALL.into_iter().find(|u| u.as_str() == word)
    }
}

impl fmt::Display for AsnUpstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `bgptools`: the table's URL, the `User-Agent` it is fetched with (bgp.tools
/// refuses anonymous clients, so it has no default) and how often it is fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BgptoolsConfig {
    /// The `table.jsonl` URL.
    pub url: String,
    /// The `User-Agent`, naming a contact; required when `bgptools` is used.
    pub user_agent: Option<String>,
    /// The table is downloaded at most once per this many hours.
    pub refresh_hours: u32,
}

impl Default for BgptoolsConfig {
    fn default() -> Self {
        BgptoolsConfig {
            url: "https://bgp.tools/table.jsonl".into(),
            user_agent: None,
            refresh_hours: 2,
        }
    }
}

/// `ipverse`: the URL template of an ASN's per-family list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpverseConfig {
    /// With `{asn}` and `{family}` (`4` or `6`) replaced.
    pub url: String,
}

impl Default for IpverseConfig {
    fn default() -> Self {
        IpverseConfig {
            url: "https://raw.githubusercontent.com/ipverse/as-ip-blocks/master/as/{asn}/ipv{family}-aggregated.txt".into(),
        }
    }
}

/// Default `feed.max_bytes`: 16 MiB.
pub const DEFAULT_FEED_MAX_BYTES: u64 = 16 << 20;

/// `feed`: limits of URL feeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedConfig {
    /// A feed whose body is larger fails, and nothing of it is stored.
    pub max_bytes: u64,
}

impl Default for FeedConfig {
    fn default() -> Self {
        FeedConfig {
            max_bytes: DEFAULT_FEED_MAX_BYTES,
        }
    }
}

/// The upstream settings of a configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstreams {
    /// `asn_upstreams`: tried in this order per ASN (default `["ripestat"]`).
    pub asn: Vec<AsnUpstream>,
    /// `bgptools`.
    pub bgptools: BgptoolsConfig,
    /// `ipverse`.
    pub ipverse: IpverseConfig,
    /// `feed`.
    pub feed: FeedConfig,
}

impl Default for Upstreams {
    fn default() -> Self {
        Upstreams {
            asn: vec![AsnUpstream::Ripestat],
            bgptools: BgptoolsConfig::default(),
            ipverse: IpverseConfig::default(),
            feed: FeedConfig::default(),
        }
    }
}
