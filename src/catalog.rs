//! The catalog of services: named, reviewed entries ("telegram") that bring their
//! ASNs, the vendor's own address lists (feeds) and host names into a group, so that
//! a user routes a service without knowing its numbers.
//!
//! The catalog is built into the program (`catalog/services.json`, whitespace taken
//! out by `build.rs`); a `services.json` in the data directory, or the file
//! `catalog.path` names, replaces it as a whole. A file that cannot be read is an
//! error naming the entry and the field, and the configuration that uses it is
//! refused as a broken `config.json` is ("Never a wrong list").

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::source;
use crate::util::json::{Map, Value, Writer};

#[cfg(test)]
mod tests;

/// The built-in catalog, compact (see `build.rs`).
pub const BUILTIN: &str = include_str!(concat!(env!("OUT_DIR"), "/services.json"));

/// The largest catalog file read: 1 MiB, as `config.json`.
pub const MAX_CATALOG_BYTES: u64 = 1 << 20;

/// One ASN of a service and its holder, as RIPEstat's `as-overview` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asn {
    /// Normalised (`"62041"`).
    pub asn: String,
    /// The holder (`"TELEGRAM"`), compared as a case-insensitive prefix.
    pub holder: String,
}

/// One entry of the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    /// `[a-z0-9-]{1,32}`.
    pub name: String,
    /// What people call it ("Telegram").
    pub title: String,
    /// A short text of what the entry brings, when given.
    pub about: Option<String>,
    /// Its ASNs.
    pub asns: Vec<Asn>,
    /// Address lists the vendor itself publishes, normalised URLs.
    pub feeds: Vec<String>,
    /// Host names, each covering its subdomains, normalised.
    pub domains: Vec<String>,
    /// Where each fact was read.
    pub sources: Vec<String>,
    /// When it was last reviewed, `YYYY-MM-DD`.
    pub reviewed: String,
}

impl Service {
    /// The sources it brings into a group, as `(kind, normalised source)`.
    pub fn brings(&self) -> impl Iterator<Item = (source::Kind, &str)> {
        use source::Kind;
        let asns = self.asns.iter().map(|a| (Kind::Asn, a.asn.as_str()));
        let feeds = self.feeds.iter().map(|f| (Kind::Feed, f.as_str()));
        let domains = self.domains.iter().map(|d| (Kind::Fqdn, d.as_str()));
        asns.chain(feeds).chain(domains)
    }

    /// Whether it brings `(kind, source)`.
    pub fn has(&self, kind: source::Kind, src: &str) -> bool {
        self.brings().any(|(k, s)| k == kind && s == src)
    }
}

/// The whole catalog, entries in file order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Catalog {
    /// The entries, names unique.
    pub services: Vec<Service>,
}

/// A catalog that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    /// Not JSON; line and column of the mistake.
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A key or value that is not allowed: `key` names the entry and the field
    /// (`services[3] (telegram).asns[0].asn`).
    #[error("{key}: {message}")]
    Invalid {
        /// Where, dotted.
        key: String,
        /// What is wrong.
        message: String,
    },
}

/// The keys of an entry (`groups`, which `GET /services` adds, is ignored).
const ENTRY_KEYS: &[&str] = &[
    "name", "title", "about", "asns", "feeds", "domains", "sources", "reviewed", "groups",
];

fn invalid(key: &str, message: impl Into<String>) -> CatalogError {
    CatalogError::Invalid {
        key: key.into(),
        message: message.into(),
    }
}

impl Catalog {
    /// The built-in catalog. Its shape is checked by a test, so a broken one never
    /// ships; an empty catalog stands in should it fail all the same.
    pub fn builtin() -> Catalog {
        Catalog::parse(BUILTIN).unwrap_or_default()
    }

    /// [`Catalog::builtin`], read once per process and shared: the configuration is
    /// read for every API request.
    pub fn shared_builtin() -> Arc<Catalog> {
        static BUILT_IN: OnceLock<Arc<Catalog>> = OnceLock::new();
        BUILT_IN
            .get_or_init(|| Arc::new(Catalog::builtin()))
            .clone()
    }

    /// The entry called `name`.
    pub fn get(&self, name: &str) -> Option<&Service> {
        self.services.iter().find(|s| s.name == name)
    }

    /// `"unknown service \"x\"; did you mean telegram?"`.
    pub fn unknown(&self, name: &str) -> String {
        let hint = crate::util::spell::did_you_mean(
            name,
            "",
            self.services.iter().map(|s| s.name.as_str()),
        );
        format!("unknown service {name:?}{hint} (`service list` shows the catalog)")
    }

    /// Reads a catalog file: `{"services": [...]}`; repeated keys, unknown keys and
    /// every invalid value are errors naming the entry and the field.
    pub fn parse(text: &str) -> Result<Catalog, CatalogError> {
        let (value, repeated) = crate::util::json::parse_repeats(text.as_bytes()).map_err(|e| {
            CatalogError::Syntax {
                line: e.line(),
                column: e.column(),
                message: e.message().into(),
            }
        })?;
        if let Some((key, line, column)) = repeated {
            return Err(CatalogError::Syntax {
                line,
                column,
                message: format!("key \"{key}\" given more than once"),
            });
        }
        let root = value
            .as_object()
            .ok_or_else(|| invalid("(top level)", "expected an object {\"services\": [...]}"))?;
        if let Some(k) = root
            .keys()
            .find(|k| !["services", "groups"].contains(&k.as_str()))
        {
            return Err(invalid(k, "unknown key; a catalog has \"services\""));
        }
        let list = match root.get("services") {
            Some(Value::Array(a)) => a,
            _ => return Err(invalid("services", "expected a list of services")),
        };
        let mut services: Vec<Service> = Vec::with_capacity(list.len());
        for (i, v) in list.iter().enumerate() {
            let s = entry(i, v)?;
            if services.iter().any(|o| o.name == s.name) {
                let key = format!("services[{i}] ({}).name", s.name);
                return Err(invalid(&key, "a service of this name comes earlier"));
            }
            services.push(s);
        }
        Ok(Catalog { services })
    }

    /// The catalog in use for a configuration read from `config`: the file `named`
    /// (`catalog.path`, relative to the configuration's directory), else
    /// `services.json` beside the configuration when there is one, else the built-in.
    /// The error names the file.
    pub fn load(config: &Path, named: Option<&str>) -> Result<Arc<Catalog>, (PathBuf, String)> {
        let dir = config.parent().unwrap_or(Path::new(""));
        let path = match named {
            Some(n) => dir.join(n),
            None => dir.join("services.json"),
        };
        match crate::util::read_text_capped(&path, MAX_CATALOG_BYTES) {
            Ok(Some(text)) => Catalog::parse(&text)
                .map(Arc::new)
                .map_err(|e| (path, e.to_string())),
            Ok(None) => Err((
                path,
                format!("larger than the limit of {MAX_CATALOG_BYTES} bytes for the catalog"),
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && named.is_none() => {
                Ok(Catalog::shared_builtin())
            }
            Err(e) => Err((path, crate::util::io_reason(&e))),
        }
    }
}

/// A string field: present, non-empty, at most `max` bytes, no control characters.
fn text(o: &Map, at: &str, key: &str, max: usize) -> Result<String, CatalogError> {
    let full = format!("{at}.{key}");
    match o.get(key) {
        None => Err(invalid(&full, "missing")),
        Some(Value::String(s)) if s.trim().is_empty() => Err(invalid(&full, "empty")),
        Some(Value::String(s)) if s.len() > max => {
            Err(invalid(&full, format!("longer than {max} bytes")))
        }
        Some(Value::String(s)) if s.chars().any(char::is_control) => {
            Err(invalid(&full, "has control characters"))
        }
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v) => Err(invalid(&full, format!("expected a string, got {v}"))),
    }
}

/// A list field of strings, each checked by `check`, none twice.
fn strings(
    o: &Map,
    at: &str,
    key: &str,
    check: impl Fn(&str) -> Result<String, String>,
) -> Result<Vec<String>, CatalogError> {
    let full = format!("{at}.{key}");
    let list = match o.get(key) {
        None => return Err(invalid(&full, "missing")),
        Some(Value::Array(a)) => a,
        Some(v) => return Err(invalid(&full, format!("expected a list, got {v}"))),
    };
    let mut out: Vec<String> = Vec::with_capacity(list.len());
    for (i, v) in list.iter().enumerate() {
        let item = format!("{full}[{i}]");
        let s = v
            .as_str()
            .ok_or_else(|| invalid(&item, format!("expected a string, got {v}")))?;
        let norm = check(s).map_err(|m| invalid(&item, m))?;
        if out.contains(&norm) {
            return Err(invalid(&item, format!("{norm} is listed twice")));
        }
        out.push(norm);
    }
    Ok(out)
}

/// A service name: `[a-z0-9-]{1,32}`.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    match ok {
        true => Ok(()),
        false => Err(format!(
            "invalid service name {name:?}: expected 1 to 32 of a-z, 0-9 and -"
        )),
    }
}

/// A host name of the catalog: valid, and of more than one label (one label would
/// cover a whole top-level domain in dnsmasq).
fn domain(s: &str) -> Result<String, String> {
    let d = source::normalize_fqdn(s)?;
    match d.contains('.') {
        true => Ok(d),
        false => Err(format!("host name {d:?} has a single label")),
    }
}

/// `YYYY-MM-DD`, a real day.
fn date(s: &str) -> Result<(), String> {
    let t = (s.len() == 10)
        .then(|| crate::util::parse_iso(&format!("{s}T00:00:00")))
        .flatten();
    match t {
        Some(t) if crate::util::iso(t).starts_with(s) => Ok(()),
        _ => Err(format!("invalid date {s:?}: expected YYYY-MM-DD")),
    }
}

/// One entry, `services[i]`.
fn entry(i: usize, v: &Value) -> Result<Service, CatalogError> {
    let at = format!("services[{i}]");
    let o = v
        .as_object()
        .ok_or_else(|| invalid(&at, format!("expected an object, got {v}")))?;
    let name = text(o, &at, "name", 32)?;
    check_name(&name).map_err(|m| invalid(&format!("{at}.name"), m))?;
    let at = format!("{at} ({name})");
    if let Some(k) = o.keys().find(|k| !ENTRY_KEYS.contains(&k.as_str())) {
        let hint = crate::util::spell::did_you_mean(k, "", ENTRY_KEYS.iter().copied());
        return Err(invalid(&format!("{at}.{k}"), format!("unknown key{hint}")));
    }
    let about = match o.get("about") {
        None => None,
        Some(_) => Some(text(o, &at, "about", 300)?),
    };
    let s = Service {
        title: text(o, &at, "title", 64)?,
        about,
        asns: asns(o, &at)?,
        feeds: strings(o, &at, "feeds", source::normalize_feed)?,
        domains: strings(o, &at, "domains", domain)?,
        sources: strings(o, &at, "sources", source::normalize_feed)?,
        reviewed: text(o, &at, "reviewed", 10)?,
        name,
    };
    date(&s.reviewed).map_err(|m| invalid(&format!("{at}.reviewed"), m))?;
    if s.sources.is_empty() {
        return Err(invalid(
            &format!("{at}.sources"),
            "empty: every fact needs the page it was read from",
        ));
    }
    if s.brings().next().is_none() {
        return Err(invalid(&at, "brings nothing: no asns, feeds or domains"));
    }
    Ok(s)
}

/// `asns`: `[{"asn": "62041", "holder": "TELEGRAM"}]`.
fn asns(o: &Map, at: &str) -> Result<Vec<Asn>, CatalogError> {
    let full = format!("{at}.asns");
    let list = match o.get("asns") {
        None => return Err(invalid(&full, "missing")),
        Some(Value::Array(a)) => a,
        Some(v) => return Err(invalid(&full, format!("expected a list, got {v}"))),
    };
    let mut out: Vec<Asn> = Vec::with_capacity(list.len());
    for (i, v) in list.iter().enumerate() {
        let item = format!("{full}[{i}]");
        let a = v.as_object().ok_or_else(|| {
            invalid(
                &item,
                format!("expected {{\"asn\": \"62041\", \"holder\": \"...\"}}, got {v}"),
            )
        })?;
        if let Some(k) = a.keys().find(|k| !["asn", "holder"].contains(&k.as_str())) {
            return Err(invalid(&format!("{item}.{k}"), "unknown key"));
        }
        let asn = match a.get("asn") {
            None => return Err(invalid(&format!("{item}.asn"), "missing")),
            Some(v) => {
                source::normalize_asn_value(v).map_err(|m| invalid(&format!("{item}.asn"), m))?
            }
        };
        let holder = text(a, &item, "holder", 128)?;
        out.push(Asn { asn, holder });
    }
    // Sorted positions, not a scan of `out` per entry: a 1 MiB file holds ~40k ASNs,
    // quadratic in that took seconds even on a PC (and no hash table code on flash).
    let numbers: Vec<&str> = out.iter().map(|a| a.asn.as_str()).collect();
    if let Some(i) = crate::util::repeats(&numbers).iter().position(|&r| r) {
        let asn = &out[i].asn;
        return Err(invalid(
            &format!("{full}[{i}].asn"),
            format!("AS{asn} is listed twice"),
        ));
    }
    Ok(out)
}

impl crate::util::json::ToJson for Service {
    /// The entry as a catalog file has it (`GET /services` adds `groups`).
    fn write_json(&self, w: &mut Writer<'_>) {
        w.begin_object();
        self.write_fields(w);
        w.end_object();
    }
}

impl Service {
    /// Its fields, inside an object the caller opened (so `groups` can follow).
    pub fn write_fields(&self, w: &mut Writer<'_>) {
        w.field("name", self.name.as_str());
        w.field("title", self.title.as_str());
        if let Some(a) = &self.about {
            w.field("about", a.as_str());
        }
        w.key("asns");
        w.begin_array();
        for a in &self.asns {
            w.begin_object();
            w.field("asn", a.asn.as_str());
            w.field("holder", a.holder.as_str());
            w.end_object();
        }
        w.end_array();
        w.field("feeds", &self.feeds);
        w.field("domains", &self.domains);
        w.field("sources", &self.sources);
        w.field("reviewed", self.reviewed.as_str());
    }
}
