//! Reading `config.json`: JSON syntax errors with line and column, then every key
//! validated and named in its error, unknown keys collected as warnings.

use std::path::Path;

use crate::util::json::{Map, Value};

use super::*;
use crate::source::Kind;

pub(super) mod api;
mod dnsmasq;
mod groups;
mod load;
mod outputs;
mod route;
mod upstreams;

pub(crate) use groups::{parse_exclusion, parse_mark};
pub use route::check_via;
pub(crate) use route::marks_collide;

pub(super) fn read_value(text: &str, path: &Path) -> Result<Value, ConfigError> {
    let parsed = crate::util::json::parse_repeats(text.as_bytes());
    let (mut value, repeated) = parsed.map_err(|e| ConfigError::Syntax {
        path: path.into(),
        line: e.line(),
        column: e.column(),
        message: e.message().into(),
    })?;
    // A key given twice (`"asns"` pasted in again, say): the value keeps the last,
    // and the next rewrite by `asn add` would drop the other silently.
    if let Some((key, line, column)) = repeated {
        return Err(ConfigError::Syntax {
            path: path.into(),
            line,
            column,
            message: format!("key \"{key}\" given more than once"),
        });
    }
    // Keys in name order, as serde_json's maps kept them: groups are read in that
    // order, and a rewrite writes it.
    value.sort_keys();
    Ok(value)
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

    fn object<'v>(&mut self, v: &'v Value, key: &str) -> Result<&'v Map, ConfigError> {
        v.as_object()
            .ok_or_else(|| self.err(key, format!("expected an object, got {}", short(v))))
    }

    /// Warns about keys of `obj` not in `known`.
    fn unknown(&mut self, obj: &Map, prefix: &str, known: &[&str]) {
        for k in obj.keys().filter(|k| !known.contains(&k.as_str())) {
            let hint = crate::util::spell::did_you_mean(k, prefix, known.iter().copied());
            self.warnings.push(format!(
                "unknown key {prefix}{k} is ignored (kept when the file is rewritten){hint}"
            ));
        }
    }

    fn uint(
        &self,
        obj: &Map,
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

    /// A `true`/`false` key, `false` when absent.
    fn flag(&self, obj: &Map, prefix: &str, key: &str) -> Result<bool, ConfigError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(self.err(
                &format!("{prefix}{key}"),
                format!("expected true or false, got {}", short(v)),
            )),
        }
    }

    fn string(&self, obj: &Map, prefix: &str, key: &str) -> Result<Option<String>, ConfigError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(self.err(
                &format!("{prefix}{key}"),
                format!("expected a string, got {}", short(v)),
            )),
        }
    }

    fn url(&self, obj: &Map, prefix: &str, key: &str) -> Result<Option<String>, ConfigError> {
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
        obj: &Map,
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

    fn sources(&mut self, root: &Map, kind: Kind) -> Result<Vec<String>, ConfigError> {
        self.sources_in(root, "", kind)
    }

    /// The sources of one kind in `obj` (`prefix` names it in errors and warnings).
    fn sources_in(
        &mut self,
        obj: &Map,
        prefix: &str,
        kind: Kind,
    ) -> Result<Vec<String>, ConfigError> {
        let key = format!("{prefix}{}", kind.key());
        let list = match obj.get(kind.key()) {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(a)) => a,
            Some(v) => return Err(self.err(&key, format!("expected a list, got {}", short(v)))),
        };
        let mut norms: Vec<String> = Vec::with_capacity(list.len());
        for (i, v) in list.iter().enumerate() {
            let norm = kind
                .normalize_json(v)
                .map_err(|m| self.err(&format!("{key}[{i}]"), m))?;
            norms.push(norm);
        }
        // Duplicates are found by sorting, not by scanning `out`: a list of 50,000
        // ASNs must not cost 50,000² comparisons on every load.
        let repeated = crate::util::repeats(&norms);
        let mut out: Vec<String> = Vec::with_capacity(norms.len());
        for (i, (norm, again)) in norms.into_iter().zip(repeated).enumerate() {
            if again {
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

/// The top-level keys this version reads.
const ROOT_KEYS: &[&str] = &[
    "asns",
    "fqdns",
    "feeds",
    "countries",
    "feed",
    "asn_upstreams",
    "bgptools",
    "ipverse",
    "schedule",
    "ttl_days",
    "history_days",
    "ripe",
    "dns",
    "api",
    "outputs",
    "storage",
    "exclude",
    "groups",
    "fetch",
    "min_prefix",
    "trust",
    "allow_special",
    "allow_single_label",
    "bgp_community",
    "services",
    "catalog",
];

/// Validates a parsed JSON document as a configuration.
pub fn from_value(value: &Value, path: &Path) -> Result<Loaded, ConfigError> {
    let mut warnings = Vec::new();
    let mut r = Reader {
        path,
        warnings: &mut warnings,
    };
    let root = r.object(value, "(top level)")?;
    r.unknown(root, "", ROOT_KEYS);
    let mut c = Config::default();
    for kind in Kind::ALL {
        *c.sources_mut(kind) = r.sources(root, kind)?;
    }
    if let Some(n) = r.uint(root, "", "ttl_days", 0, 36_500)? {
        c.ttl_days = n as u32;
    }
    if let Some(n) = r.uint(root, "", "history_days", 0, 36_500)? {
        c.history_days = n as u32;
    }
    if let Some(o) = r.section(root, "schedule", SCHEDULE_KEYS)? {
        r.schedule(o, &mut c.schedule)?;
    }
    if let Some(o) = r.section(root, "ripe", RIPE_KEYS)? {
        r.ripe(o, &mut c.ripe)?;
    }
    if let Some(o) = r.section(root, "dns", DNS_KEYS)? {
        r.dns(o, &mut c.dns)?;
    }
    if let Some(o) = r.section(root, "storage", STORAGE_KEYS)? {
        if let Some(n) = r.uint(o, "storage.", "snapshot_interval_hours", 0, 87_600)? {
            c.storage.snapshot_interval_hours = n as u32;
        }
    }
    if let Some(o) = r.section(root, "api", api::KEYS)? {
        r.api(o, &mut c.api)?;
    }
    c.exclude = r.exclusions(root, "", "top level")?;
    r.catalog(root, &mut c)?;
    r.groups(root, &mut c)?;
    c.outputs = r.outputs(root)?;
    load::kernel_keys(&r, root, &mut c)?;
    r.resolve_output_groups(&mut c)?;
    r.upstream_keys(root, &mut c)?;
    r.upstreams(root, &mut c.upstreams)?;
    r.trust(root, &mut c)?;
    dnsmasq::resolve(&r, &mut c)?;
    Ok(Loaded {
        config: c,
        warnings,
    })
}

const SCHEDULE_KEYS: &[&str] = &["interval_minutes", "interval_seconds", "retry_seconds"];
const RIPE_KEYS: &[&str] = &[
    "url",
    "min_peers_seeing",
    "sourceapp",
    "timeout_seconds",
    "retries",
];
const DNS_KEYS: &[&str] = &["resolver", "doh_url", "timeout_seconds"];
const STORAGE_KEYS: &[&str] = &["snapshot_interval_hours"];

/// The sections of the file, one function each.
impl Reader<'_> {
    /// Every listing output names a configured group (or `*`): its selection and mark
    /// are filled in from the group.
    fn resolve_output_groups(&self, c: &mut Config) -> Result<(), ConfigError> {
        for i in 0..c.outputs.len() {
            if c.outputs[i].dnsmasq.is_some() {
                continue;
            }
            let group = c.outputs[i].render.group.clone();
            let selection = c
                .selection(&group)
                .map_err(|e| self.err(&format!("outputs[{i}].group"), e.to_string()))?;
            let mark = c.group(&group).and_then(|g| g.mark);
            let has_sources = match c.group(&group) {
                Some(g) => g.has_sources(),
                None => c.groups.iter().any(|g| g.has_sources()),
            };
            let mut render = c.outputs[i].render.clone();
            c.bgp_defaults(&mut render);
            let routes: Vec<_> = c
                .groups
                .iter()
                .filter_map(|g| Some((g.name.clone(), g.mark?, g.route.clone()?)))
                .collect();
            let out = &mut c.outputs[i];
            out.render = render;
            out.has_sources = has_sources;
            out.selection = selection;
            out.mark = mark.filter(|_| out.load.is_some());
            if out.load.is_some() {
                out.routes = routes;
            }
        }
        Ok(())
    }

    /// The object under `key` of `root` (None when absent or null), its unknown keys
    /// warned about.
    fn section<'v>(
        &mut self,
        root: &'v Map,
        key: &str,
        known: &[&str],
    ) -> Result<Option<&'v Map>, ConfigError> {
        let Some(v) = root.get(key).filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        let o = self.object(v, key)?;
        self.unknown(o, &format!("{key}."), known);
        Ok(Some(o))
    }

    fn schedule(&self, o: &Map, s: &mut Schedule) -> Result<(), ConfigError> {
        if let Some(n) = self.uint(o, "schedule.", "retry_seconds", 1, 86_400)? {
            s.retry_seconds = n;
        }
        if let Some(n) = self.uint(o, "schedule.", "interval_minutes", 1, 525_600)? {
            s.interval_minutes = n;
        }
        s.interval_seconds = self.uint(o, "schedule.", "interval_seconds", 1, 31_536_000)?;
        Ok(())
    }

    fn ripe(&self, o: &Map, c: &mut RipeConfig) -> Result<(), ConfigError> {
        if let Some(u) = self.url(o, "ripe.", "url")? {
            c.url = u;
        }
        c.min_peers_seeing = self.uint(o, "ripe.", "min_peers_seeing", 0, 100_000)?;
        if let Some(s) = self.string(o, "ripe.", "sourceapp")? {
            if s.is_empty()
                || !s
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            {
                return Err(self.err(
                    "ripe.sourceapp",
                    format!("expected letters, digits, '-', '_' or '.', got {s:?}"),
                ));
            }
            c.sourceapp = s;
        }
        if let Some(n) = self.uint(o, "ripe.", "timeout_seconds", 1, 3600)? {
            c.timeout_seconds = n;
        }
        if let Some(n) = self.uint(o, "ripe.", "retries", 0, 10)? {
            c.retries = n as u32;
        }
        Ok(())
    }

    fn dns(&self, o: &Map, c: &mut DnsConfig) -> Result<(), ConfigError> {
        match self.string(o, "dns.", "resolver")?.as_deref() {
            None | Some("system") => c.resolver = Resolver::System,
            Some("doh") => c.resolver = Resolver::Doh,
            Some(other) => {
                return Err(self.err(
                    "dns.resolver",
                    format!("expected \"system\" or \"doh\", got {other:?}"),
                ))
            }
        }
        if let Some(u) = self.url(o, "dns.", "doh_url")? {
            c.doh_url = u;
        }
        if let Some(n) = self.uint(o, "dns.", "timeout_seconds", 1, 3600)? {
            c.timeout_seconds = n;
        }
        Ok(())
    }
}

const FETCH_KEYS: &[&str] = &["command"];
const TRUST_KEYS: &[&str] = &[
    "max_shrink_percent",
    "max_growth_percent",
    "reference_days",
    "max_age_hours",
    "confirm_after_hours",
    "confirm_with",
];
const MIN_PREFIX_KEYS: &[&str] = &["ipv4", "ipv6"];

/// How upstreams are asked, and what is taken from them.
impl Reader<'_> {
    /// `fetch` and `min_prefix`.
    fn upstream_keys(&mut self, root: &Map, c: &mut Config) -> Result<(), ConfigError> {
        if let Some(o) = self.section(root, "fetch", FETCH_KEYS)? {
            c.fetch.command = self.fetch_command(o)?;
        }
        if let Some(o) = self.section(root, "min_prefix", MIN_PREFIX_KEYS)? {
            if let Some(n) = self.uint(o, "min_prefix.", "ipv4", 0, 32)? {
                c.min_prefix.ipv4 = n as u8;
            }
            if let Some(n) = self.uint(o, "min_prefix.", "ipv6", 0, 128)? {
                c.min_prefix.ipv6 = n as u8;
            }
        }
        Ok(())
    }

    /// `trust`; `bgptools` in `trust.confirm_with` needs `bgptools.user_agent` as in
    /// `asn_upstreams`.
    fn trust(&mut self, root: &Map, c: &mut Config) -> Result<(), ConfigError> {
        let Some(o) = self.section(root, "trust", TRUST_KEYS)? else {
            return Ok(());
        };
        let t = &mut c.trust;
        if let Some(n) = self.uint(o, "trust.", "max_shrink_percent", 0, 100)? {
            t.max_shrink_percent = n as u32;
        }
        if let Some(n) = self.uint(o, "trust.", "max_growth_percent", 1, 1_000_000)? {
            t.max_growth_percent = n as u32;
        }
        if let Some(n) = self.uint(o, "trust.", "reference_days", 0, 365)? {
            t.reference_days = n as u32;
        }
        if let Some(n) = self.uint(o, "trust.", "max_age_hours", 1, 87_600)? {
            t.max_age_hours = n as u32;
        }
        if let Some(n) = self.uint(o, "trust.", "confirm_after_hours", 0, 87_600)? {
            t.confirm_after_hours = n as u32;
        }
        let list = match o.get("confirm_with") {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Array(a)) => a,
            Some(v) => {
                return Err(self.err(
                    "trust.confirm_with",
                    format!("expected a list, got {}", short(v)),
                ))
            }
        };
        let mut words = Vec::new();
        for (i, v) in list.iter().enumerate() {
            let w = v
                .as_str()
                .and_then(|w| super::OPINIONS.iter().find(|o| **o == w));
            match w {
                Some(w) if !words.contains(w) => words.push(*w),
                Some(_) => {}
                None => {
                    return Err(self.err(
                        &format!("trust.confirm_with[{i}]"),
                        format!("unknown upstream {}: expected ripestat, bgptools, ipverse or routing-status", short(v)),
                    ))
                }
            }
        }
        if words.contains(&"bgptools") && c.upstreams.bgptools.user_agent.is_none() {
            return Err(self.err("bgptools.user_agent", "bgptools is in trust.confirm_with, and bgp.tools refuses anonymous clients: set a User-Agent naming a contact"));
        }
        c.trust.confirm_with = Some(words);
        Ok(())
    }

    /// `fetch.command`: a program and its arguments, one of which has `{url}`.
    fn fetch_command(&self, o: &Map) -> Result<Option<Vec<String>>, ConfigError> {
        let key = "fetch.command";
        let list = match o.get("command") {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Array(a)) => a,
            Some(v) => {
                return Err(self.err(
                    key,
                    format!("expected a list (program and arguments), got {}", short(v)),
                ))
            }
        };
        let mut argv = Vec::with_capacity(list.len());
        for (i, v) in list.iter().enumerate() {
            match v {
                Value::String(s) if !(i == 0 && s.trim().is_empty()) => argv.push(s.clone()),
                other => {
                    return Err(self.err(
                        &format!("{key}[{i}]"),
                        format!("expected a non-empty string, got {}", short(other)),
                    ))
                }
            }
        }
        if argv.is_empty() {
            return Err(self.err(key, "the list is empty; use null for the built-in client"));
        }
        if !argv[1..].iter().any(|a| a.contains("{url}")) {
            return Err(self.err(key, "no argument has {url}, where the URL to fetch goes"));
        }
        Ok(Some(argv))
    }
}
