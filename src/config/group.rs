//! Groups: named lists, each with its own sources, exclusions and routing mark. The
//! top-level source keys are the group `default`; `groups` adds the others. A source
//! is collected once however many groups name it: groups only select what is listed.

use ipnet::IpNet;

use crate::format::{ALL_GROUPS, DEFAULT_GROUP};
use crate::source::Kind;

use super::Config;

/// A firewall mark and the bits of it that are set (`"mark"`, `"mark_mask"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    /// The value set on matching packets.
    pub value: u32,
    /// The bits that are changed (default all: the mark is replaced).
    pub mask: u32,
}

/// Where a group's marked traffic goes (`"route"`): an `ip rule fwmark MARK/MASK
/// lookup TABLE` and a default route via `via` in that table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The interface (`wg0`); it may not exist yet (a VPN comes up later).
    pub via: String,
    /// The next hop, if the interface needs one; its family is then the only one
    /// routed (an IPv4 gateway cannot carry IPv6).
    pub gateway: Option<std::net::IpAddr>,
    /// The routing table; `None` until one is picked and written into the file.
    pub table: Option<u32>,
}

impl Route {
    /// Whether the route carries IPv4 (`false`) or IPv6 (`true`) traffic.
    pub fn carries(&self, v6: bool) -> bool {
        self.gateway.is_none_or(|g| g.is_ipv6() == v6)
    }
}

/// A table a route may use: any but 0 (unspecified) and 253–255 (default, main,
/// local), which belong to the kernel.
pub fn table_allowed(t: u32) -> bool {
    !matches!(t, 0 | 253..=255)
}

/// The first table from 100 up that is in none of `used`.
pub fn free_table(used: &[u32]) -> u32 {
    (100..)
        .find(|t| table_allowed(*t) && !used.contains(t))
        .unwrap_or(100)
}

/// `0x200/0xff00`, or `0x200` for a mark that sets every bit.
pub fn mark_text(m: Mark) -> String {
    if m.mask == u32::MAX {
        format!("{:#x}", m.value)
    } else {
        format!("{:#x}/{:#x}", m.value, m.mask)
    }
}

/// One group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// `default` or a name of `[a-z0-9_]{1,24}`.
    pub name: String,
    /// ASN sources, normalised, without duplicates.
    pub asns: Vec<String>,
    /// FQDN sources, normalised, without duplicates.
    pub fqdns: Vec<String>,
    /// Feed URLs, normalised, without duplicates.
    pub feeds: Vec<String>,
    /// Country codes, upper-cased, without duplicates.
    pub countries: Vec<String>,
    /// Its own exclusions (the top-level `exclude` applies too; see
    /// [`Config::exclusions`]).
    pub exclude: Vec<IpNet>,
    /// The routing mark of its traffic, set by the `load` output's chain.
    pub mark: Option<Mark>,
    /// Where its marked traffic goes (`"route"`).
    pub route: Option<Route>,
    /// Its ASNs and countries keep the ranges that are otherwise skipped as special
    /// (`"allow_special": true`; see `source::special_range`).
    pub allow_special: bool,
    /// Host names of one label (`com`, `localhost`) are taken
    /// (`"allow_single_label": true`).
    pub allow_single_label: bool,
    /// The BGP community its `bird` routes carry (`"bgp_community"`).
    pub bgp_community: Option<crate::format::Community>,
    /// The catalog services it names (`"services"`), whose sources are in the lists
    /// above as if named there.
    pub services: Vec<String>,
    /// The sources of the lists above that only its services name (not written back
    /// into the file's lists).
    pub brought: Vec<(Kind, String)>,
}

impl Group {
    /// An empty group.
    pub fn new(name: &str) -> Group {
        Group {
            name: name.to_string(),
            asns: Vec::new(),
            fqdns: Vec::new(),
            feeds: Vec::new(),
            countries: Vec::new(),
            exclude: Vec::new(),
            mark: None,
            route: None,
            allow_special: false,
            allow_single_label: false,
            bgp_community: None,
            services: Vec::new(),
            brought: Vec::new(),
        }
    }

    /// Refuses a host name of one label unless the group takes them: dnsmasq's
    /// `nftset=/com/...` covers every name under `com`, and `localhost` resolves to
    /// loopback, so one is almost always a slip.
    pub fn check_fqdn(&self, name: &str) -> Result<(), String> {
        if self.allow_single_label || name.contains('.') {
            return Ok(());
        }
        Err(format!(
            "host name {name:?} has a single label, which would cover every name under it \
             (dnsmasq); a group that means it says \"allow_single_label\": true"
        ))
    }

    /// The sources of one kind.
    pub fn sources(&self, kind: Kind) -> &[String] {
        match kind {
            Kind::Asn => &self.asns,
            Kind::Fqdn => &self.fqdns,
            Kind::Feed => &self.feeds,
            Kind::Country => &self.countries,
        }
    }
    /// The sources of one kind, to fill in.
    pub(crate) fn sources_mut(&mut self, kind: Kind) -> &mut Vec<String> {
        match kind {
            Kind::Asn => &mut self.asns,
            Kind::Fqdn => &mut self.fqdns,
            Kind::Feed => &mut self.feeds,
            Kind::Country => &mut self.countries,
        }
    }

    /// Whether it names any source.
    pub fn has_sources(&self) -> bool {
        Kind::ALL.iter().any(|&k| !self.sources(k).is_empty())
    }

    /// Whether it names `source`, by hand or through a service.
    pub fn has(&self, kind: Kind, source: &str) -> bool {
        self.sources(kind).iter().any(|s| s == source)
    }

    /// Whether it names `source` by hand (in its own list in the file).
    pub fn names_own(&self, kind: Kind, source: &str) -> bool {
        self.has(kind, source) && !self.brought.iter().any(|(k, s)| *k == kind && s == source)
    }

    /// Brings the sources of `service` into its lists, each once.
    pub(crate) fn bring(&mut self, service: &crate::catalog::Service) {
        for (kind, source) in service.brings() {
            if !self.has(kind, source) {
                self.sources_mut(kind).push(source.to_string());
                self.brought.push((kind, source.to_string()));
            }
        }
    }
}

/// Why `source` may not be named by both `allowing` (which has `allow_special`) and
/// `other` (which has not): its values are stored once for every group naming it.
pub(crate) fn special_disagreement(
    kind: Kind,
    source: &str,
    allowing: &Group,
    other: &Group,
) -> String {
    format!(
        "{} is named by group {:?}, which allows special ranges, and by group {:?}, which \
         does not; its values are stored once for both, so {:?} would get its special \
         ranges (10.0.0.0/8 and the like) too: give both groups the same \"allow_special\", \
         or name it in one",
        crate::source::display(kind, source),
        allowing.name,
        other.name,
        other.name
    )
}

/// A group name that is not in the configuration (a 400 or exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown group {name:?}: configured groups are {known}")]
pub struct UnknownGroup {
    /// The name asked for.
    pub name: String,
    /// The configured names, comma-separated.
    pub known: String,
}

/// What a group selection lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selected {
    /// Every stored source: `*`, and `default` while there are no other groups (so a
    /// configuration without groups lists exactly what it listed before them).
    Everything,
    /// Every stored source except these (the default group beside named groups:
    /// its own sources, and those no group names any more, until they age out).
    AllBut(Vec<(Kind, String)>),
    /// These sources only (a named group).
    Only(Vec<(Kind, String)>),
}

impl Selected {
    /// Whether this selection names a source, by binary search in its sources sorted
    /// once (no hash table on flash, no `String` made per row looked up).
    pub fn matcher(&self) -> SourceMatch {
        let (pairs, listed) = match self {
            Selected::Everything => (None, true),
            Selected::AllBut(p) => (Some(p), false),
            Selected::Only(p) => (Some(p), true),
        };
        let sorted = pairs.map(|p| {
            let mut v = p.clone();
            crate::util::sort::sort(&mut v);
            v
        });
        SourceMatch { sorted, listed }
    }
}

/// Whether a [`Selected`] names a source (see [`Selected::matcher`]).
#[derive(Debug, Clone)]
pub struct SourceMatch {
    /// The sources given, sorted (`None`: every source).
    sorted: Option<Vec<(Kind, String)>>,
    /// What a source among them means: listed (`Only`) or not (`AllBut`).
    listed: bool,
}

impl SourceMatch {
    /// Whether the source `(kind, name)` is named.
    pub fn names(&self, kind: Kind, name: &str) -> bool {
        self.sorted.as_ref().is_none_or(|v| {
            let found = v
                .binary_search_by(|(k, n)| (*k, n.as_str()).cmp(&(kind, name)))
                .is_ok();
            found == self.listed
        })
    }
}

/// One list of a selection: some sources, minus some prefixes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The sources whose values are listed.
    pub sources: Selected,
    /// Prefixes cut out of them.
    pub exclude: Vec<IpNet>,
}

/// What a listing holds: the union of its parts (one part, except for `*` when
/// groups have exclusions of their own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// The lists merged.
    pub parts: Vec<Part>,
}

impl Default for Selection {
    /// Everything stored, nothing excluded (a configuration without groups).
    fn default() -> Self {
        Selection {
            parts: vec![Part {
                sources: Selected::Everything,
                exclude: Vec::new(),
            }],
        }
    }
}

impl Config {
    /// The group called `name`.
    pub fn group(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.name == name)
    }

    /// Gives a `bird` listing of a group the group's `bgp_community`, unless a
    /// community was asked for (a one-off `--community` / `community=`). `*` has none:
    /// its groups may carry different ones.
    pub fn bgp_defaults(&self, opts: &mut crate::format::RenderOptions) {
        if opts.format == crate::format::Format::Bird && opts.community.is_none() {
            opts.community = self.group(&opts.group).and_then(|g| g.bgp_community);
        }
    }

    /// The group `default` (always there).
    pub fn default_group(&self) -> &Group {
        &self.groups[0]
    }

    /// Checks a selection: `*` or a configured group.
    pub fn check_group(&self, name: &str) -> Result<(), UnknownGroup> {
        if name == ALL_GROUPS || self.group(name).is_some() {
            return Ok(());
        }
        Err(UnknownGroup {
            name: name.to_string(),
            known: self
                .groups
                .iter()
                .map(|g| g.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
    }

    /// The sources a selection lists (see [`Selected`]).
    fn selected(&self, name: &str) -> Result<Selected, UnknownGroup> {
        self.check_group(name)?;
        if name == ALL_GROUPS || (name == DEFAULT_GROUP && self.groups.len() == 1) {
            return Ok(Selected::Everything);
        }
        let pairs = |g: &Group| -> Vec<(Kind, String)> {
            Kind::ALL
                .into_iter()
                .flat_map(|k| g.sources(k).iter().map(move |s| (k, s.clone())))
                .collect()
        };
        if name == DEFAULT_GROUP {
            let default = self.default_group();
            let mut others: Vec<(Kind, String)> = self.groups[1..]
                .iter()
                .flat_map(pairs)
                .filter(|(k, s)| !default.has(*k, s))
                .collect();
            crate::util::sort::sort(&mut others);
            others.dedup();
            return Ok(Selected::AllBut(others));
        }
        let group = self.group(name).expect("checked above");
        Ok(Selected::Only(pairs(group)))
    }

    /// The exclusions of a group: the top-level `exclude` and its own.
    pub fn exclusions(&self, name: &str) -> Vec<IpNet> {
        let mut out = self.exclude.clone();
        if let Some(g) = self.group(name) {
            out.extend_from_slice(&g.exclude);
        }
        out
    }

    /// What a listing of `name` (a group or `*`) holds: for a group, its sources minus
    /// its exclusions; for `*`, the union of every group's list, which is everything
    /// stored minus the top-level exclusions unless groups exclude prefixes of their
    /// own (then each group is listed and the lists merged).
    pub fn selection(&self, name: &str) -> Result<Selection, UnknownGroup> {
        let own_exclusions = self.groups.iter().any(|g| !g.exclude.is_empty());
        let names: Vec<&str> = if name == ALL_GROUPS && own_exclusions {
            self.groups.iter().map(|g| g.name.as_str()).collect()
        } else {
            vec![name]
        };
        let parts = names
            .into_iter()
            .map(|n| {
                Ok(Part {
                    sources: self.selected(n)?,
                    exclude: self.exclusions(n),
                })
            })
            .collect::<Result<_, UnknownGroup>>()?;
        Ok(Selection { parts })
    }

    /// The services that bring a source into some group, each once, in catalog
    /// order: the provenance shown beside it (`"services": ["telegram"]`).
    pub fn services_of(&self, kind: Kind, source: &str) -> Vec<&str> {
        self.catalog
            .services
            .iter()
            .filter(|s| self.groups.iter().any(|g| g.services.contains(&s.name)))
            .filter(|s| s.has(kind, source))
            .map(|s| s.name.as_str())
            .collect()
    }

    /// The services behind every source they bring, for listings that ask for many
    /// sources (computed once, then found by binary search).
    pub fn provenance(&self) -> Provenance {
        let mut v: Vec<(Kind, String, String)> = Vec::new();
        for s in &self.catalog.services {
            if !self.groups.iter().any(|g| g.services.contains(&s.name)) {
                continue;
            }
            v.extend(
                s.brings()
                    .map(|(k, src)| (k, src.to_string(), s.name.clone())),
            );
        }
        crate::util::sort::sort(&mut v);
        Provenance(v)
    }

    /// The groups that name a service, in configuration order.
    pub fn groups_of_service(&self, name: &str) -> Vec<&str> {
        self.groups
            .iter()
            .filter(|g| g.services.iter().any(|s| s == name))
            .map(|g| g.name.as_str())
            .collect()
    }

    /// The groups that name a source, in configuration order (`default` first).
    pub fn groups_of(&self, kind: Kind, source: &str) -> Vec<&str> {
        self.groups
            .iter()
            .filter(|g| g.has(kind, source))
            .map(|g| g.name.as_str())
            .collect()
    }
}

/// Which services brought each source (see [`Config::provenance`]): `(kind, source,
/// service)`, sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provenance(Vec<(Kind, String, String)>);

impl Provenance {
    /// The services that bring `(kind, source)`, by name.
    pub fn of<'a>(&'a self, kind: Kind, source: &'a str) -> impl Iterator<Item = &'a str> {
        let start = self
            .0
            .partition_point(|(k, s, _)| (*k, s.as_str()) < (kind, source));
        self.0[start..]
            .iter()
            .take_while(move |(k, s, _)| *k == kind && s == source)
            .map(|(_, _, name)| name.as_str())
    }

    /// `,"services":["telegram"]` after a source's other fields; nothing when no
    /// service brings it.
    pub fn push_json(&self, out: &mut Vec<u8>, kind: Kind, source: &str) {
        for (i, name) in self.of(kind, source).enumerate() {
            out.extend_from_slice(if i == 0 { b",\"services\":[" } else { b"," });
            crate::util::json::push_string(out, name);
        }
        if self.of(kind, source).next().is_some() {
            out.push(b']');
        }
    }

    /// The text forms' column: `service:telegram,youtube`, or `None`.
    pub fn text(&self, kind: Kind, source: &str) -> Option<String> {
        let names: Vec<&str> = self.of(kind, source).collect();
        (!names.is_empty()).then(|| format!("service:{}", names.join(",")))
    }
}
