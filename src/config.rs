//! `config.json`: loading, validation, source normalisation and locked atomic updates.
//!
//! The file is read as a generic JSON value first, so that every error can name the key
//! it is about and so that a rewrite keeps keys this version does not know.

use std::fmt;
use std::fs;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::format::{Family, Format, RenderOptions, TypeFilter};

/// Data directory used when neither `--data-dir` nor `$RIPE_DATA_DIR` is given.
pub const DEFAULT_DATA_DIR: &str = "/var/lib/ripe-cidr-collector";

/// Where the program keeps its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// The data directory: `config.json`, `status.json`, legacy files.
    pub data_dir: PathBuf,
    /// The SQLite database (`<data_dir>/ripe.db` unless moved with `--db`/`$RIPE_DB`).
    pub db: PathBuf,
}

impl Paths {
    /// Paths inside `data_dir`, with the database at `db` or `data_dir/ripe.db`.
    pub fn new(data_dir: impl Into<PathBuf>, db: Option<PathBuf>) -> Paths {
        let data_dir = data_dir.into();
        let db = db.unwrap_or_else(|| data_dir.join("ripe.db"));
        Paths { data_dir, db }
    }
    /// `config.json`.
    pub fn config(&self) -> PathBuf {
        self.data_dir.join("config.json")
    }
    /// `status.json`.
    pub fn status(&self) -> PathBuf {
        self.data_dir.join("status.json")
    }
    /// The legacy file of a kind: `data.json` (ASN) or `fqdn_data.json` (FQDN).
    pub fn legacy(&self, kind: Kind) -> PathBuf {
        self.data_dir.join(match kind {
            Kind::Asn => "data.json",
            Kind::Fqdn => "fqdn_data.json",
        })
    }
}

/// The two kinds of source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// An autonomous system: its announced prefixes.
    Asn,
    /// A host name: its A and AAAA addresses.
    Fqdn,
}

impl Kind {
    /// Both kinds, ASN first.
    pub const ALL: [Kind; 2] = [Kind::Asn, Kind::Fqdn];

    /// `asn` or `fqdn`: the word stored in the database's `kind` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Asn => "asn",
            Kind::Fqdn => "fqdn",
        }
    }
    /// The config key holding sources of this kind: `asns` or `fqdns`.
    pub fn key(self) -> &'static str {
        match self {
            Kind::Asn => "asns",
            Kind::Fqdn => "fqdns",
        }
    }
    /// Normalises a source given as text (CLI, API path).
    pub fn normalize(self, s: &str) -> Result<String, String> {
        match self {
            Kind::Asn => normalize_asn(s),
            Kind::Fqdn => normalize_fqdn(s),
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
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

/// HTTP API settings (`api`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiConfig {
    /// Address to listen on, e.g. `127.0.0.1:8080`.
    pub listen: SocketAddr,
    /// When set, mutating requests need `Authorization: Bearer <token>`.
    pub token: Option<String>,
}

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
}

impl OutputConfig {
    /// The name in logs, `status.json` and retries: the path, else the loaded sets.
    pub fn name(&self) -> String {
        match &self.path {
            Some(p) => p.display().to_string(),
            None => format!("nft load inet {} {}", self.render.table, self.render.set),
        }
    }
}

/// The whole configuration, validated, with defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// ASN sources, normalised (`"62041"`), without duplicates.
    pub asns: Vec<String>,
    /// FQDN sources, normalised (lower case, no trailing dot), without duplicates.
    pub fqdns: Vec<String>,
    /// When the daemon collects.
    pub schedule: Schedule,
    /// Days a value is kept after it was last seen; 0 keeps values for ever.
    pub ttl_days: u32,
    /// RIPEstat settings.
    pub ripe: RipeConfig,
    /// DNS settings.
    pub dns: DnsConfig,
    /// HTTP API settings.
    pub api: ApiConfig,
    /// Files rendered by the daemon.
    pub outputs: Vec<OutputConfig>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            asns: Vec::new(),
            fqdns: Vec::new(),
            schedule: Schedule {
                interval_minutes: 360,
                interval_seconds: None,
                retry_seconds: 60,
            },
            ttl_days: 7,
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
            api: ApiConfig {
                listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
                token: None,
            },
            outputs: Vec::new(),
        }
    }
}

impl Config {
    /// The sources of one kind.
    pub fn sources(&self, kind: Kind) -> &[String] {
        match kind {
            Kind::Asn => &self.asns,
            Kind::Fqdn => &self.fqdns,
        }
    }
}

/// A configuration that could not be read, parsed, validated or written.
#[derive(Debug)]
pub enum ConfigError {
    /// The file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// The file is not valid JSON.
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
    /// A key has a value that is not allowed.
    Invalid {
        /// The file.
        path: PathBuf,
        /// The key, dotted (`ripe.timeout_seconds`, `asns[2]`).
        key: String,
        /// What is wrong.
        message: String,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            ConfigError::Syntax {
                path,
                line,
                column,
                message,
            } => write!(
                f,
                "{}: invalid JSON at line {line}, column {column}: {message}",
                path.display()
            ),
            ConfigError::Invalid { path, key, message } => {
                write!(f, "{}: {key}: {message}", path.display())
            }
        }
    }
}

impl std::error::Error for ConfigError {}

/// Normalises an ASN: `"62041"`, `"AS62041"`, `"as62041"` → `"62041"`.
///
/// ```
/// use ripe_cidr_collector::config::normalize_asn;
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
/// use ripe_cidr_collector::config::normalize_fqdn;
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
    if name.contains('.')
        && name
            .rsplit('.')
            .next()
            .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()))
    {
        return bad("looks like an IP address, not a host name");
    }
    Ok(name)
}

/// A parsed configuration with the warnings found while reading it.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The validated configuration.
    pub config: Config,
    /// Things worth telling the administrator once (unknown keys, duplicates).
    pub warnings: Vec<String>,
}

/// Reads and validates `path`. A missing file is the empty configuration.
pub fn load(path: &Path) -> Result<Loaded, ConfigError> {
    match fs::read_to_string(path) {
        Ok(text) => parse(&text, path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Loaded {
            config: Config::default(),
            warnings: Vec::new(),
        }),
        Err(e) => Err(ConfigError::Io {
            path: path.into(),
            source: e,
        }),
    }
}

/// [`load`], logging its warnings.
pub fn load_logged(path: &Path) -> Result<Config, ConfigError> {
    let loaded = load(path)?;
    for w in &loaded.warnings {
        log::warn!("{}: {w}", path.display());
    }
    Ok(loaded.config)
}

fn read_value(text: &str, path: &Path) -> Result<Value, ConfigError> {
    serde_json::from_str::<Value>(text).map_err(|e| ConfigError::Syntax {
        path: path.into(),
        line: e.line(),
        column: e.column(),
        message: e.to_string().split(" at line ").next().unwrap_or("").into(),
    })
}

/// Parses and validates the text of a configuration file (`path` is for messages).
pub fn parse(text: &str, path: &Path) -> Result<Loaded, ConfigError> {
    // An empty file (`touch config.json`) is the empty configuration, like a missing one.
    if text.trim().is_empty() {
        return from_value(&Value::Object(Map::new()), path);
    }
    let value = read_value(text, path)?;
    from_value(&value, path)
}

/// Walks a JSON object, checking each key and collecting the unknown ones.
struct Reader<'a> {
    path: &'a Path,
    warnings: &'a mut Vec<String>,
}

impl Reader<'_> {
    fn err(&self, key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            path: self.path.into(),
            key: key.into(),
            message: message.into(),
        }
    }

    fn object<'v>(
        &mut self,
        v: &'v Value,
        key: &str,
    ) -> Result<&'v Map<String, Value>, ConfigError> {
        v.as_object()
            .ok_or_else(|| self.err(key, format!("expected an object, got {}", short(v))))
    }

    /// Warns about keys of `obj` not in `known`.
    fn unknown(&mut self, obj: &Map<String, Value>, prefix: &str, known: &[&str]) {
        for k in obj.keys().filter(|k| !known.contains(&k.as_str())) {
            self.warnings.push(format!(
                "unknown key {prefix}{k} is ignored (kept when the file is rewritten)"
            ));
        }
    }

    fn uint(
        &self,
        obj: &Map<String, Value>,
        prefix: &str,
        key: &str,
        min: u64,
        max: u64,
    ) -> Result<Option<u64>, ConfigError> {
        let full = format!("{prefix}{key}");
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
                _ => Err(self.err(
                    &full,
                    format!(
                        "expected a whole number from {min} to {max}, got {}",
                        short(v)
                    ),
                )),
            },
        }
    }

    fn string(
        &self,
        obj: &Map<String, Value>,
        prefix: &str,
        key: &str,
    ) -> Result<Option<String>, ConfigError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(self.err(
                &format!("{prefix}{key}"),
                format!("expected a string, got {}", short(v)),
            )),
        }
    }

    fn url(
        &self,
        obj: &Map<String, Value>,
        prefix: &str,
        key: &str,
    ) -> Result<Option<String>, ConfigError> {
        let s = self.string(obj, prefix, key)?;
        if let Some(u) = &s {
            if !(u.starts_with("http://") || u.starts_with("https://"))
                || u.contains(char::is_whitespace)
            {
                return Err(self.err(
                    &format!("{prefix}{key}"),
                    format!("expected an http:// or https:// URL, got {u:?}"),
                ));
            }
        }
        Ok(s)
    }

    fn word<T: std::str::FromStr<Err = crate::format::BadValue>>(
        &self,
        obj: &Map<String, Value>,
        prefix: &str,
        key: &str,
    ) -> Result<Option<T>, ConfigError> {
        // Families may be written as numbers (4, 6) as well as strings.
        let text = match obj.get(key) {
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => self.string(obj, prefix, key)?,
        };
        text.map(|s| {
            s.parse::<T>()
                .map_err(|e| self.err(&format!("{prefix}{key}"), e.0))
        })
        .transpose()
    }

    fn sources(
        &mut self,
        root: &Map<String, Value>,
        kind: Kind,
    ) -> Result<Vec<String>, ConfigError> {
        let key = kind.key();
        let list = match root.get(key) {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(a)) => a,
            Some(v) => return Err(self.err(key, format!("expected a list, got {}", short(v)))),
        };
        let mut out: Vec<String> = Vec::with_capacity(list.len());
        for (i, v) in list.iter().enumerate() {
            let norm = match kind {
                Kind::Asn => normalize_asn_value(v),
                Kind::Fqdn => match v {
                    Value::String(s) => normalize_fqdn(s),
                    other => Err(format!("expected a host name string, got {}", short(other))),
                },
            }
            .map_err(|m| self.err(&format!("{key}[{i}]"), m))?;
            if out.contains(&norm) {
                self.warnings.push(format!(
                    "{key}[{i}]: {norm} is listed twice; collected once"
                ));
            } else {
                out.push(norm);
            }
        }
        Ok(out)
    }
}

/// A short rendering of a JSON value for error messages.
fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(57).collect::<String>())
    } else {
        s
    }
}

/// Validates a parsed JSON document as a configuration.
pub fn from_value(value: &Value, path: &Path) -> Result<Loaded, ConfigError> {
    let mut warnings = Vec::new();
    let mut r = Reader {
        path,
        warnings: &mut warnings,
    };
    let root = r.object(value, "(top level)")?;
    r.unknown(
        root,
        "",
        &[
            "asns", "fqdns", "schedule", "ttl_days", "ripe", "dns", "api", "outputs",
        ],
    );
    let mut c = Config {
        asns: r.sources(root, Kind::Asn)?,
        fqdns: r.sources(root, Kind::Fqdn)?,
        ..Config::default()
    };
    if let Some(n) = r.uint(root, "", "ttl_days", 0, 36_500)? {
        c.ttl_days = n as u32;
    }
    if let Some(v) = root.get("schedule").filter(|v| !v.is_null()) {
        let o = r.object(v, "schedule")?;
        r.unknown(
            o,
            "schedule.",
            &["interval_minutes", "interval_seconds", "retry_seconds"],
        );
        if let Some(n) = r.uint(o, "schedule.", "retry_seconds", 1, 86_400)? {
            c.schedule.retry_seconds = n;
        }
        if let Some(n) = r.uint(o, "schedule.", "interval_minutes", 1, 525_600)? {
            c.schedule.interval_minutes = n;
        }
        c.schedule.interval_seconds = r.uint(o, "schedule.", "interval_seconds", 1, 31_536_000)?;
    }
    if let Some(v) = root.get("ripe").filter(|v| !v.is_null()) {
        let o = r.object(v, "ripe")?;
        r.unknown(
            o,
            "ripe.",
            &[
                "url",
                "min_peers_seeing",
                "sourceapp",
                "timeout_seconds",
                "retries",
            ],
        );
        if let Some(u) = r.url(o, "ripe.", "url")? {
            c.ripe.url = u;
        }
        c.ripe.min_peers_seeing = r.uint(o, "ripe.", "min_peers_seeing", 0, 100_000)?;
        if let Some(s) = r.string(o, "ripe.", "sourceapp")? {
            if s.is_empty()
                || !s
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            {
                return Err(r.err(
                    "ripe.sourceapp",
                    format!("expected letters, digits, '-', '_' or '.', got {s:?}"),
                ));
            }
            c.ripe.sourceapp = s;
        }
        if let Some(n) = r.uint(o, "ripe.", "timeout_seconds", 1, 3600)? {
            c.ripe.timeout_seconds = n;
        }
        if let Some(n) = r.uint(o, "ripe.", "retries", 0, 10)? {
            c.ripe.retries = n as u32;
        }
    }
    if let Some(v) = root.get("dns").filter(|v| !v.is_null()) {
        let o = r.object(v, "dns")?;
        r.unknown(o, "dns.", &["resolver", "doh_url", "timeout_seconds"]);
        match r.string(o, "dns.", "resolver")?.as_deref() {
            None | Some("system") => c.dns.resolver = Resolver::System,
            Some("doh") => c.dns.resolver = Resolver::Doh,
            Some(other) => {
                return Err(r.err(
                    "dns.resolver",
                    format!("expected \"system\" or \"doh\", got {other:?}"),
                ))
            }
        }
        if let Some(u) = r.url(o, "dns.", "doh_url")? {
            c.dns.doh_url = u;
        }
        if let Some(n) = r.uint(o, "dns.", "timeout_seconds", 1, 3600)? {
            c.dns.timeout_seconds = n;
        }
    }
    if let Some(v) = root.get("api").filter(|v| !v.is_null()) {
        let o = r.object(v, "api")?;
        r.unknown(o, "api.", &["listen", "token"]);
        if let Some(l) = r.string(o, "api.", "listen")? {
            c.api.listen = parse_listen(&l).map_err(|m| r.err("api.listen", m))?;
        }
        c.api.token = r.string(o, "api.", "token")?;
        if c.api.token.as_deref() == Some("") {
            return Err(r.err(
                "api.token",
                "an empty token would let anyone in; use null to switch it off",
            ));
        }
    }
    match root.get("outputs") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for (i, v) in list.iter().enumerate() {
                let prefix = format!("outputs[{i}].");
                let o = r.object(v, &format!("outputs[{i}]"))?;
                r.unknown(
                    o,
                    &prefix,
                    &[
                        "path",
                        "format",
                        "type",
                        "command",
                        "family",
                        "aggregate",
                        "table",
                        "set",
                        "timeout_seconds",
                        "load",
                    ],
                );
                let load = match r.string(o, &prefix, "load")?.as_deref() {
                    None => None,
                    Some("nft") => Some(LoadKind::Nft),
                    Some(l) => {
                        return Err(r.err(
                            &format!("{prefix}load"),
                            format!("invalid load {l:?}: expected nft"),
                        ))
                    }
                };
                let path = r.string(o, &prefix, "path")?.filter(|p| !p.is_empty());
                if path.is_none() && load.is_none() {
                    return Err(r.err(
                        &format!("{prefix}path"),
                        "missing: the file to write (or \"load\": \"nft\")",
                    ));
                }
                let mut render = RenderOptions {
                    format: r
                        .word::<Format>(o, &prefix, "format")?
                        .unwrap_or(Format::Text),
                    type_filter: r
                        .word::<TypeFilter>(o, &prefix, "type")?
                        .unwrap_or(TypeFilter::All),
                    family: r.word::<Family>(o, &prefix, "family")?,
                    ..RenderOptions::default()
                };
                match o.get("aggregate") {
                    None | Some(Value::Null) => {}
                    Some(Value::Bool(b)) => render.aggregate = *b,
                    Some(v) => {
                        return Err(r.err(
                            &format!("{prefix}aggregate"),
                            format!("expected true or false, got {}", short(v)),
                        ))
                    }
                }
                if let Some(t) = r.string(o, &prefix, "table")? {
                    render.table = t;
                }
                if let Some(s) = r.string(o, &prefix, "set")? {
                    render.set = s;
                }
                render
                    .check()
                    .map_err(|e| r.err(&format!("{prefix}table/set"), e.0))?;
                c.outputs.push(OutputConfig {
                    path: path.map(PathBuf::from),
                    load,
                    render,
                    command: r
                        .string(o, &prefix, "command")?
                        .filter(|s| !s.trim().is_empty()),
                    timeout_seconds: r
                        .uint(o, &prefix, "timeout_seconds", 1, 3600)?
                        .unwrap_or(60),
                });
            }
        }
        Some(v) => return Err(r.err("outputs", format!("expected a list, got {}", short(v)))),
    }
    Ok(Loaded {
        config: c,
        warnings,
    })
}

/// Parses a listen address such as `127.0.0.1:8080` or `[::1]:8080`.
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    s.parse::<SocketAddr>().map_err(|_| {
        format!(
            "invalid listen address {s:?}: expected IP:PORT such as 127.0.0.1:8080 or [::1]:8080"
        )
    })
}

/// Takes the configuration's update lock (a sibling file `.config.json.lock`) for as
/// long as the returned file is open, so that concurrent CLI commands and API requests
/// never lose each other's changes.
fn lock(path: &Path) -> Result<fs::File, ConfigError> {
    let lock_path = path.with_file_name(".config.json.lock");
    let io_err = |source| ConfigError::Io {
        path: lock_path.clone(),
        source,
    };
    let f = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io_err)?;
    match f.lock() {
        Ok(()) => Ok(f),
        // Some platforms (WASI) have no file locks; a single writer is the norm there.
        Err(e) if e.kind() == io::ErrorKind::Unsupported => Ok(f),
        Err(e) => Err(io_err(e)),
    }
}

/// Applies `change` to the JSON document of the configuration under the lock and
/// rewrites the file atomically when `change` says it changed something. The file must
/// be valid before and after; unknown keys are kept.
fn update<T>(
    path: &Path,
    change: impl FnOnce(&mut Map<String, Value>, &Config) -> Result<(T, bool), ConfigError>,
) -> Result<T, ConfigError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|source| ConfigError::Io {
            path: dir.into(),
            source,
        })?;
    }
    let _guard = lock(path)?;
    let mut doc = match fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Value::Object(Map::new()),
        Ok(text) => read_value(&text, path)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => Value::Object(Map::new()),
        Err(source) => {
            return Err(ConfigError::Io {
                path: path.into(),
                source,
            })
        }
    };
    let before = from_value(&doc, path)?.config;
    let root = doc.as_object_mut().expect("validated as an object");
    let (result, changed) = change(root, &before)?;
    if changed {
        let after = from_value(&doc, path)?.config;
        // Store every source in its normalised form ("62041", lower case), once.
        for kind in Kind::ALL {
            if root_has(&doc, kind.key()) {
                let list = after
                    .sources(kind)
                    .iter()
                    .cloned()
                    .map(Value::String)
                    .collect();
                doc[kind.key()] = Value::Array(list);
            }
        }
        let mut text = serde_json::to_string_pretty(&doc).expect("a JSON value serialises");
        text.push('\n');
        crate::util::write_atomic(path, text.as_bytes()).map_err(|source| ConfigError::Io {
            path: path.into(),
            source,
        })?;
    }
    Ok(result)
}

/// Normalises a source given to [`add_source`] or [`remove_source`].
fn normalize_arg(path: &Path, kind: Kind, source: &str) -> Result<String, ConfigError> {
    kind.normalize(source)
        .map_err(|message| ConfigError::Invalid {
            path: path.into(),
            key: kind.key().into(),
            message,
        })
}

fn root_has(doc: &Value, key: &str) -> bool {
    doc.get(key).is_some_and(|v| !v.is_null())
}

/// Adds a source (given as text) to the configuration at `path`, creating the file if
/// needed. Returns the normalised source and whether it was new.
pub fn add_source(path: &Path, kind: Kind, source: &str) -> Result<(String, bool), ConfigError> {
    let norm = normalize_arg(path, kind, source)?;
    update(path, |root, before| {
        if before.sources(kind).contains(&norm) {
            return Ok(((norm.clone(), false), false));
        }
        let list = root
            .entry(kind.key())
            .or_insert_with(|| Value::Array(Vec::new()));
        if list.is_null() {
            *list = Value::Array(Vec::new());
        }
        list.as_array_mut()
            .expect("validated as a list")
            .push(Value::String(norm.clone()));
        Ok(((norm.clone(), true), true))
    })
}

/// Removes a source (given as text) from the configuration at `path`. Returns the
/// normalised source and whether it was configured.
pub fn remove_source(path: &Path, kind: Kind, source: &str) -> Result<(String, bool), ConfigError> {
    let norm = normalize_arg(path, kind, source)?;
    update(path, |root, before| {
        if !before.sources(kind).contains(&norm) {
            return Ok(((norm.clone(), false), false));
        }
        if let Some(Value::Array(list)) = root.get_mut(kind.key()) {
            // Entries were validated, so every one normalises; drop all spellings of it.
            list.retain(|v| {
                let n = match kind {
                    Kind::Asn => normalize_asn_value(v),
                    Kind::Fqdn => v.as_str().map_or(Err(String::new()), normalize_fqdn),
                };
                n.as_deref() != Ok(norm.as_str())
            });
        }
        Ok(((norm.clone(), true), true))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("config.json")
    }

    #[test]
    fn asn_forms() {
        for s in ["62041", "AS62041", "as62041", "As62041", "062041"] {
            assert_eq!(normalize_asn(s).unwrap(), "62041", "{s}");
        }
        assert_eq!(
            normalize_asn_value(&serde_json::json!(62041)).unwrap(),
            "62041"
        );
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
        for bad in [
            serde_json::json!(-5),
            serde_json::json!(1.5),
            serde_json::json!(null),
            serde_json::json!([1]),
        ] {
            assert!(normalize_asn_value(&bad).is_err(), "{bad}");
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
    fn defaults_and_empty() {
        let c = parse("{}", p()).unwrap().config;
        assert_eq!(c, Config::default());
        assert_eq!(c.ttl_days, 7);
        assert_eq!(c.schedule.interval_secs(), 360 * 60);
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            load(&dir.path().join("config.json")).unwrap().config,
            Config::default()
        );
    }

    #[test]
    fn full_config() {
        let text = r#"{
            "asns": ["AS62041", 13335, "as62041"],
            "fqdns": ["Example.com."],
            "schedule": {"interval_minutes": 60, "interval_seconds": 5},
            "ttl_days": 0,
            "ripe": {"url": "http://127.0.0.1:1/x", "min_peers_seeing": 10, "retries": 0},
            "dns": {"resolver": "doh", "doh_url": "http://127.0.0.1:2/q"},
            "api": {"listen": "[::1]:9000", "token": "s3cret"},
            "outputs": [{"path": "/tmp/x.nft", "format": "nft", "type": "cidr", "family": 4,
                         "command": "nft -f /tmp/x.nft", "set": "tg"}],
            "extra": {"keep": true}
        }"#;
        let l = parse(text, p()).unwrap();
        let c = l.config;
        assert_eq!(c.asns, ["62041", "13335"]);
        assert_eq!(c.fqdns, ["example.com"]);
        assert_eq!(c.ttl_days, 0);
        assert_eq!(c.schedule.interval_secs(), 5);
        assert_eq!(c.ripe.min_peers_seeing, Some(10));
        assert_eq!(c.ripe.retries, 0);
        assert_eq!(c.ripe.timeout_seconds, 30);
        assert_eq!(c.dns.resolver, Resolver::Doh);
        assert_eq!(c.api.listen.to_string(), "[::1]:9000");
        assert_eq!(c.outputs[0].render.format, Format::Nft);
        assert_eq!(c.outputs[0].render.family, Some(Family::V4));
        assert_eq!(c.outputs[0].render.set, "tg");
        assert_eq!(l.warnings.len(), 2, "{:?}", l.warnings); // duplicate ASN, unknown key
        assert!(l.warnings.iter().any(|w| w.contains("extra")));
    }

    #[test]
    fn load_outputs() {
        let text = r#"{"outputs": [{"load": "nft", "table": "fw", "family": 6},
                                   {"load": "nft", "path": "/tmp/x.nft", "format": "nft"}]}"#;
        let c = parse(text, p()).unwrap().config;
        assert_eq!(c.outputs[0].load, Some(LoadKind::Nft));
        assert_eq!(c.outputs[0].path, None);
        assert_eq!(c.outputs[0].name(), "nft load inet fw ripe");
        assert_eq!(c.outputs[1].name(), "/tmp/x.nft");
    }

    #[test]
    fn errors_name_the_key() {
        let cases = [
            (r#"{"asns": ["AS62041", "ASX"]}"#, "asns[1]"),
            (r#"{"asns": "62041"}"#, "asns"),
            (r#"{"fqdns": ["1.2.3.4"]}"#, "fqdns[0]"),
            (r#"{"ttl_days": -1}"#, "ttl_days"),
            (r#"{"ttl_days": "7"}"#, "ttl_days"),
            (
                r#"{"schedule": {"interval_minutes": 0}}"#,
                "schedule.interval_minutes",
            ),
            (r#"{"ripe": {"url": "ftp://x"}}"#, "ripe.url"),
            (
                r#"{"ripe": {"timeout_seconds": 0}}"#,
                "ripe.timeout_seconds",
            ),
            (r#"{"dns": {"resolver": "udp"}}"#, "dns.resolver"),
            (r#"{"api": {"listen": "localhost"}}"#, "api.listen"),
            (r#"{"outputs": [{"format": "nft"}]}"#, "outputs[0].path"),
            (r#"{"outputs": [{"load": "ipset"}]}"#, "outputs[0].load"),
            (
                r#"{"outputs": [{"path": "/x", "format": "yaml"}]}"#,
                "outputs[0].format",
            ),
            (
                r#"{"outputs": [{"path": "/x", "set": "bad name"}]}"#,
                "outputs[0].table/set",
            ),
            ("[]", "(top level)"),
        ];
        for (text, key) in cases {
            match parse(text, p()) {
                Err(ConfigError::Invalid { key: k, .. }) => assert_eq!(k, key, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
        let e = parse("{\n  \"asns\": [1,\n}", p()).unwrap_err();
        match &e {
            ConfigError::Syntax { line, column, .. } => assert_eq!((*line, *column), (3, 1)),
            other => panic!("{other:?}"),
        }
        assert!(
            e.to_string()
                .starts_with("config.json: invalid JSON at line 3, column 1"),
            "{e}"
        );
    }

    #[test]
    fn add_remove_keep_unknown_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        assert_eq!(
            add_source(&path, Kind::Asn, "AS62041").unwrap(),
            ("62041".into(), true)
        );
        assert_eq!(
            add_source(&path, Kind::Asn, "62041").unwrap(),
            ("62041".into(), false)
        );
        fs::write(&path, r#"{"asns": ["AS62041", 13335], "mine": [1, 2]}"#).unwrap();
        assert_eq!(
            add_source(&path, Kind::Fqdn, "Example.com").unwrap(),
            ("example.com".into(), true)
        );
        assert_eq!(
            remove_source(&path, Kind::Asn, "as62041").unwrap(),
            ("62041".into(), true)
        );
        assert_eq!(
            remove_source(&path, Kind::Asn, "1").unwrap(),
            ("1".into(), false)
        );
        let v: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["mine"], serde_json::json!([1, 2]));
        // Rewrites store every source in its normalised form.
        assert_eq!(v["asns"], serde_json::json!(["13335"]));
        assert_eq!(v["fqdns"], serde_json::json!(["example.com"]));
    }

    #[test]
    fn bad_values_leave_file_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        fs::write(&path, "{\"asns\": [\"62041\"]}").unwrap();
        for bad in ["ASX", "", "AS-1", "99999999999"] {
            let e = add_source(&path, Kind::Asn, bad).unwrap_err();
            assert!(e.to_string().contains(&format!("{bad:?}")), "{e}");
        }
        for bad in ["1.2.3.4", "a b", "é.com"] {
            assert!(add_source(&path, Kind::Fqdn, bad).is_err());
        }
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "{\"asns\": [\"62041\"]}"
        );
        // An invalid file is not rewritten either.
        fs::write(&path, "{\"ttl_days\": \"x\"}").unwrap();
        assert!(add_source(&path, Kind::Asn, "1").is_err());
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"ttl_days\": \"x\"}");
    }
}
