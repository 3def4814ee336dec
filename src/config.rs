//! `config.json`: loading, validation, source normalisation and locked atomic updates.
//!
//! The file is read as a generic JSON value first, so that every error can name the key
//! it is about and so that a rewrite keeps keys this version does not know.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::format::{Family, Format, RenderOptions, TypeFilter};
use crate::source::Kind;

mod check;
mod edit;
mod group;
mod read;
#[cfg(test)]
mod tests;
pub mod upstreams;

pub use check::{check, Checked};
pub use edit::{
    add_exclusions, add_group, add_services, add_source, add_sources, clear_route,
    remove_exclusions, remove_group, remove_service, remove_source, remove_sources,
    set_route_table, GroupAdded, GroupRemoved, NewGroup,
};
pub use group::{
    free_table, mark_text, table_allowed, Group, Mark, Part, Provenance, Route, Selected,
    Selection, SourceMatch, UnknownGroup,
};
pub use read::check_via;
pub use read::{api::parse_listen, from_value, parse};
pub(crate) use read::{marks_collide, parse_exclusion, parse_mark};

/// Data directory used when neither `--data-dir` nor `$RIPE_DATA_DIR` is given.
pub const DEFAULT_DATA_DIR: &str = "/var/lib/ripe-cidr-collector";

/// `history_days` when the file does not set it.
pub const DEFAULT_HISTORY_DAYS: u32 = 30;

/// Where the program keeps its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// The data directory: `config.json`, `status.json`, legacy files.
    pub data_dir: PathBuf,
    /// The SQLite database (`<data_dir>/ripe.db` unless moved with `--db`/`$RIPE_DB`).
    pub db: PathBuf,
    /// A copy of the database on persistent storage (`--snapshot`/`$RIPE_SNAPSHOT`),
    /// for a database kept in RAM; see `db::snapshot`.
    pub snapshot: Option<PathBuf>,
}

impl Paths {
    /// Paths inside `data_dir`, with the database at `db` or `data_dir/ripe.db`.
    pub fn new(data_dir: impl Into<PathBuf>, db: Option<PathBuf>) -> Paths {
        let data_dir = data_dir.into();
        let db = db.unwrap_or_else(|| data_dir.join("ripe.db"));
        Paths {
            data_dir,
            db,
            snapshot: None,
        }
    }
    /// The same paths with a snapshot file.
    pub fn with_snapshot(mut self, snapshot: Option<PathBuf>) -> Paths {
        self.snapshot = snapshot;
        self
    }
    /// `config.json`.
    pub fn config(&self) -> PathBuf {
        self.data_dir.join("config.json")
    }
    /// `status.json`.
    pub fn status(&self) -> PathBuf {
        self.data_dir.join("status.json")
    }
    /// The legacy file of a kind: `data.json` (ASN) or `fqdn_data.json` (FQDN);
    /// the kinds added since have none.
    pub fn legacy(&self, kind: Kind) -> Option<PathBuf> {
        let name = match kind {
            Kind::Asn => "data.json",
            Kind::Fqdn => "fqdn_data.json",
            Kind::Feed | Kind::Country => return None,
        };
        Some(self.data_dir.join(name))
    }
}

/// When the daemon collects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// Minutes between runs (`schedule.interval_minutes`, default 360).
    pub interval_minutes: u64,
    /// Seconds between runs (`schedule.interval_seconds`); overrides the minutes when
    /// set. Meant for tests and experiments: RIPEstat asks clients not to poll often.
    pub interval_seconds: Option<u64>,
    /// First delay before failed sources and outputs are tried again
    /// (`schedule.retry_seconds`, default 60); it doubles while they keep failing, up
    /// to the interval.
    pub retry_seconds: u64,
}

impl Schedule {
    /// The interval in seconds.
    pub fn interval_secs(&self) -> u64 {
        self.interval_seconds
            .unwrap_or(self.interval_minutes.saturating_mul(60))
    }
}

/// RIPEstat client settings (`ripe`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RipeConfig {
    /// The `announced-prefixes` data call URL.
    pub url: String,
    /// Passed as `min_peers_seeing` when set.
    pub min_peers_seeing: Option<u64>,
    /// Passed as `sourceapp`, identifying this tool to RIPE.
    pub sourceapp: String,
    /// Timeout of one request, in seconds.
    pub timeout_seconds: u64,
    /// Extra attempts after a 429, 5xx or transport error (2 means at most 3 requests).
    pub retries: u32,
}

/// How host names are resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolver {
    /// The libc resolver (dnsmasq on a router).
    System,
    /// DNS-over-HTTPS JSON API at `dns.doh_url`.
    Doh,
}

/// DNS settings (`dns`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsConfig {
    /// `system` or `doh`.
    pub resolver: Resolver,
    /// The DoH JSON endpoint (`http://` works too, for local resolvers and tests).
    pub doh_url: String,
    /// Timeout of one lookup, in seconds.
    pub timeout_seconds: u64,
}

/// How upstream requests are made (`fetch`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FetchConfig {
    /// `fetch.command`: a program and its arguments run for every upstream request
    /// (`{url}` and `{user_agent}` replaced), its standard output read as the answer.
    /// `None`: the built-in HTTP client.
    pub command: Option<Vec<String>>,
}

/// The shortest prefixes taken from an upstream (`min_prefix`): a shorter one
/// (`0.0.0.0/0` would match all traffic) is skipped and logged as invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinPrefix {
    /// Shortest IPv4 prefix length (default 8).
    pub ipv4: u8,
    /// Shortest IPv6 prefix length (default 16).
    pub ipv6: u8,
}

impl Default for MinPrefix {
    fn default() -> Self {
        MinPrefix { ipv4: 8, ipv6: 16 }
    }
}

/// HTTP API settings (`api`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiConfig {
    /// Address to listen on, e.g. `127.0.0.1:8080`.
    pub listen: SocketAddr,
    /// Whether config.json names `api.listen` (the daemon, which serves the API only
    /// with `--listen`, says it does not serve it).
    pub listen_set: bool,
    /// When set, mutating requests need `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// Names and addresses (`api.hosts`) a request's `Host` may give besides
    /// loopback and this host's own addresses: lower case, addresses in canonical form.
    pub hosts: Vec<String>,
}

/// Storage settings (`storage`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageConfig {
    /// Least hours between two snapshots written after runs that changed something
    /// (`storage.snapshot_interval_hours`, default 24; 0 = after every change).
    pub snapshot_interval_hours: u32,
}

/// `trust`: the checks an answer passes before it changes a source (see
/// `db::trust`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustConfig {
    /// An answer that would drop more than this share of a source's values, or all
    /// of them, is held (`trust.max_shrink_percent`, default 30; 100 turns it off).
    pub max_shrink_percent: u32,
    /// An answer covering more than this share more addresses (and at least a /16 of
    /// IPv4 or a /32 of IPv6 more) is held (`trust.max_growth_percent`, default 100).
    pub max_growth_percent: u32,
    /// The largest answer applied in this many days is the reference a drift is
    /// measured against (`trust.reference_days`, default 7; 0: the last one only).
    pub reference_days: u32,
    /// A RIPEstat answer whose data is older than this before the answer's own time
    /// fails (`trust.max_age_hours`, default 48).
    pub max_age_hours: u32,
    /// The same held answer again after this many hours applies it
    /// (`trust.confirm_after_hours`, default 6).
    pub confirm_after_hours: u32,
    /// The upstreams asked for a second opinion on a held ASN (`trust.confirm_with`);
    /// `None`: those after the one that answered in `asn_upstreams`, then RIPEstat's
    /// `routing-status`.
    pub confirm_with: Option<Vec<&'static str>>,
}

impl Default for TrustConfig {
    fn default() -> Self {
        TrustConfig {
            max_shrink_percent: 30,
            max_growth_percent: 100,
            reference_days: 7,
            max_age_hours: 48,
            confirm_after_hours: 6,
            confirm_with: None,
        }
    }
}

/// The words of `trust.confirm_with`: the ASN upstreams and RIPEstat's cheap
/// `routing-status` (an ASN's prefix count in a few hundred bytes).
pub const OPINIONS: [&str; 4] = ["ripestat", "bgptools", "ipverse", "routing-status"];

/// What an output loads itself (`outputs[].load`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadKind {
    /// The `nft` format's table and sets, over netlink.
    Nft,
}

/// One file the daemon renders, or sets it loads, after a run that changed anything
/// (`outputs[]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputConfig {
    /// Where the rendering is written (atomically); optional with `load`.
    pub path: Option<PathBuf>,
    /// Load the sets into the kernel directly.
    pub load: Option<LoadKind>,
    /// What is rendered and how.
    pub render: RenderOptions,
    /// Run with `/bin/sh -c` after the file is written, e.g. `nft -f <path>`.
    pub command: Option<String>,
    /// Time limit of `command`, in seconds (default 60).
    pub timeout_seconds: u64,
    /// A dnsmasq config file instead of a listing (`"dnsmasq": PATH`).
    pub dnsmasq: Option<DnsmasqOutput>,
    /// What it lists: its group's sources and exclusions, taken from the groups when
    /// the configuration is read (so a changed group is a changed output).
    pub selection: Selection,
    /// For a `load` output of a group with a `mark`: the chain that marks its traffic.
    pub mark: Option<Mark>,
    /// For a `load` output whose sets a dnsmasq output in the same configuration
    /// names: the timeout of the dns sets (`<set>_dns_v4/_v6`) it creates if missing.
    pub dns_sets: Option<u32>,
    /// For a `load` output with `"timeout": true`: the kernel timeout of its
    /// elements, in seconds (`ttl_days`).
    pub kernel_timeout: Option<u32>,
    /// For a `load` output: `max_kernel_mib` (`None`: a quarter of MemTotal).
    pub max_kernel_mib: Option<u64>,
    /// Whether its group names any source (for `*`: any group): a `bird` include
    /// of a group with sources is never written empty.
    pub has_sources: bool,
    /// For a `load` output: the route of every group that has one (group, mark,
    /// route), kept beside the sets; every load keeps them all, so that a route whose
    /// group went is deleted by the next load.
    pub routes: Vec<(String, Mark, Route)>,
}

/// The `dnsmasq` output: `nftset=` (or `ipset=`) lines for a group's host names,
/// so that dnsmasq adds every address it resolves for them, and their subdomains, to
/// the group's dns sets. See `format::dnsmasq`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsmasqOutput {
    /// The file written.
    pub path: PathBuf,
    /// The group whose names are written (`"group"`, default `default`).
    pub group: String,
    /// `ipset=` lines for fw3 routers (`"ipset": true`) instead of `nftset=`.
    pub ipset: bool,
    /// Seconds after which an address dnsmasq added leaves the dns sets
    /// (`"set_timeout_seconds"`, default a day).
    pub set_timeout_seconds: u32,
    /// The names and the sets they go to, taken from the sources when the
    /// configuration is read (so a changed source list is a changed output).
    pub targets: Vec<(crate::format::DnsTarget, Vec<String>)>,
}

impl OutputConfig {
    /// The name in logs, `status.json` and retries: the path, else the loaded sets.
    pub fn name(&self) -> String {
        if let Some(d) = &self.dnsmasq {
            return d.path.display().to_string();
        }
        match &self.path {
            Some(p) => p.display().to_string(),
            None => format!("nft load inet {} {}", self.render.table, self.render.set),
        }
    }
}

/// The whole configuration, validated, with defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// ASN sources of every group, normalised (`"62041"`), without duplicates: what is
    /// collected. The top-level list alone is `groups[0]`, the group `default`.
    pub asns: Vec<String>,
    /// FQDN sources of every group, normalised (lower case, no trailing dot), without
    /// duplicates.
    pub fqdns: Vec<String>,
    /// Feed URLs of every group, normalised, without duplicates.
    pub feeds: Vec<String>,
    /// Country codes of every group, upper-cased, without duplicates.
    pub countries: Vec<String>,
    /// When the daemon collects.
    pub schedule: Schedule,
    /// Days a value is kept after it was last seen; 0 keeps values for ever.
    pub ttl_days: u32,
    /// Days the record of added and removed values (`changes`) is kept; 0 keeps none.
    pub history_days: u32,
    /// RIPEstat settings.
    pub ripe: RipeConfig,
    /// DNS settings.
    pub dns: DnsConfig,
    /// How upstream requests are made.
    pub fetch: FetchConfig,
    /// The shortest prefixes taken from an upstream.
    pub min_prefix: MinPrefix,
    /// ASN upstreams and their settings, feed limits.
    pub upstreams: upstreams::Upstreams,
    /// HTTP API settings.
    pub api: ApiConfig,
    /// Files rendered by the daemon.
    pub outputs: Vec<OutputConfig>,
    /// Storage settings.
    pub storage: StorageConfig,
    /// The checks answers pass.
    pub trust: TrustConfig,
    /// The groups, `default` (the top-level sources) first, then `groups` by name.
    /// `asns` and `fqdns` above are the sources of all of them, collected once.
    pub groups: Vec<Group>,
    /// Top-level exclusions, cut out of every group's lists.
    pub exclude: Vec<ipnet::IpNet>,
    /// The service catalog in use: the built-in one, or the file that replaces it.
    pub catalog: std::sync::Arc<crate::catalog::Catalog>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            asns: Vec::new(),
            fqdns: Vec::new(),
            feeds: Vec::new(),
            countries: Vec::new(),
            schedule: Schedule {
                interval_minutes: 360,
                interval_seconds: None,
                retry_seconds: 60,
            },
            ttl_days: 7,
            history_days: DEFAULT_HISTORY_DAYS,
            ripe: RipeConfig {
                url: "https://stat.ripe.net/data/announced-prefixes/data.json".into(),
                min_peers_seeing: None,
                sourceapp: "ripe-cidr-collector".into(),
                timeout_seconds: 30,
                retries: 2,
            },
            dns: DnsConfig {
                resolver: Resolver::System,
                doh_url: "https://cloudflare-dns.com/dns-query".into(),
                timeout_seconds: 10,
            },
            fetch: FetchConfig::default(),
            min_prefix: MinPrefix::default(),
            upstreams: upstreams::Upstreams::default(),
            api: ApiConfig {
                listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
                listen_set: false,
                token: None,
                hosts: Vec::new(),
            },
            outputs: Vec::new(),
            storage: StorageConfig {
                snapshot_interval_hours: 24,
            },
            trust: TrustConfig::default(),
            groups: vec![Group::new(crate::format::DEFAULT_GROUP)],
            exclude: Vec::new(),
            catalog: crate::catalog::Catalog::shared_builtin(),
        }
    }
}

impl Config {
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
    /// Whether a group naming `source` takes special ranges from it
    /// (`"allow_special": true`).
    pub fn allows_special(&self, kind: Kind, source: &str) -> bool {
        self.groups
            .iter()
            .any(|g| g.allow_special && g.has(kind, source))
    }
    /// Whether no source of any kind is configured.
    pub fn has_no_sources(&self) -> bool {
        Kind::ALL.iter().all(|k| self.sources(*k).is_empty())
    }
}

/// A configuration that could not be read, parsed, validated or written.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read or written.
    #[error("{}: {}", path.display(), crate::util::io_reason(source))]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// The update lock (`.config.json.lock`) could not be opened or taken.
    #[error("cannot open {}: {}", path.display(), crate::util::io_reason(.source))]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// The file is not valid JSON.
    #[error("{}: invalid JSON at line {line}, column {column}: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// The file is larger than [`MAX_CONFIG_BYTES`] (or would become so).
    #[error(
        "{}: larger than the limit of {limit} bytes for the configuration; nothing was read or changed",
        path.display()
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit in bytes.
        limit: u64,
    },
    /// A source command named a group that is not configured.
    #[error("{0}")]
    UnknownGroup(#[from] UnknownGroup),
    /// A source command gave a source its group does not take; the text names it.
    #[error("{0}")]
    Refused(String),
    /// The service catalog file (`services.json`, `catalog.path`) cannot be read: the
    /// configuration that uses it is refused as a broken one is.
    #[error("{}: {message}", path.display())]
    Catalog {
        /// The catalog file.
        path: PathBuf,
        /// What is wrong, naming the entry and the field.
        message: String,
    },
    /// A key has a value that is not allowed.
    #[error("{}: {key}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The key, dotted (`ripe.timeout_seconds`, `asns[2]`).
        key: String,
        /// What is wrong.
        message: String,
    },
}

/// A parsed configuration with the warnings found while reading it.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The validated configuration.
    pub config: Config,
    /// Things worth telling the administrator once (unknown keys, duplicates).
    pub warnings: Vec<String>,
}

/// The largest `config.json` read or written: 1 MiB, room for about 100,000 sources.
/// A parsed JSON document takes many times its text in memory, so a file without a
/// limit could take all of a router's RAM.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The text of the configuration file, `None` when it does not exist.
fn read_text(path: &Path) -> Result<Option<String>, ConfigError> {
    match crate::util::read_text_capped(path, MAX_CONFIG_BYTES) {
        // Editors on Windows (Notepad) save UTF-8 with a byte order mark, which JSON
        // does not allow: it would fail as "expected value at line 1, column 1".
        Ok(Some(text)) => Ok(Some(match text.strip_prefix('\u{feff}') {
            Some(rest) => rest.to_string(),
            None => text,
        })),
        Ok(None) => Err(ConfigError::TooLarge {
            path: path.into(),
            limit: MAX_CONFIG_BYTES,
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConfigError::Io {
            path: path.into(),
            source: e,
        }),
    }
}

/// Reads and validates `path`. A missing file is the empty configuration.
pub fn load(path: &Path) -> Result<Loaded, ConfigError> {
    // A missing file is the empty configuration, with the catalog in use.
    parse(&read_text(path)?.unwrap_or_default(), path)
}

/// [`load`], logging its warnings.
pub fn load_logged(path: &Path) -> Result<Config, ConfigError> {
    let loaded = load(path)?;
    for w in &loaded.warnings {
        log::warn!("{}: {w}", path.display());
    }
    Ok(loaded.config)
}
