//! The JSON bodies of answers, their keys in the order of the contract (a struct
//! keeps its field order; a `serde_json::Map` would sort them).

use serde::Serialize;

use crate::source::Kind;

/// `Content-Type` of JSON answers and errors.
pub const JSON: &str = "application/json";

/// `value` as JSON with a trailing newline (so that `curl` output ends its line).
pub fn json_line<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = serde_json::to_vec(value).unwrap_or_default();
    out.push(b'\n');
    out
}

/// The body of `GET /health`, its keys in the order of the contract for both the 200
/// and the 503 answer (a struct keeps its field order; a `serde_json::Map` would sort
/// them).
#[derive(Debug, Serialize)]
pub struct Health {
    /// `ok`; `degraded` while `config.json` cannot be read (the daemon runs on the
    /// last good one, or on none); `error` when the database fails.
    pub status: &'static str,
    /// The stored values per kind of source; left out on a storage error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counts: Option<Counts>,
    /// From the daemon's `status.json`.
    pub last_success: Option<String>,
    /// From the daemon's `status.json`.
    pub last_error: Option<String>,
    /// From the daemon's `status.json`.
    pub heartbeat: Option<String>,
    /// With `degraded`, what is wrong with `config.json`; with `error`, the
    /// generic message of the 503 (set by [`ApiError::reply`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Stored values per kind of source.
#[derive(Debug, Serialize)]
pub struct Counts {
    /// Rows of ASN sources.
    pub asn: u64,
    /// Rows of FQDN sources.
    pub fqdn: u64,
}

/// The source named in an answer, under its kind's word: `"asn":"62041"`,
/// `"fqdn":"example.com"`, `"feed":"https://..."`, `"country":"NL"`, first.
pub struct Named<'a> {
    kind: Kind,
    source: &'a str,
}

impl<'a> Named<'a> {
    pub fn new(kind: Kind, source: &'a str) -> Named<'a> {
        Named { kind, source }
    }
}

impl Serialize for Named<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry(self.kind.as_str(), self.source)?;
        m.end()
    }
}

/// The answer to `POST`: `{"asn":"62041","added":true}`.
#[derive(Serialize)]
pub struct Added<'a> {
    /// The source.
    #[serde(flatten)]
    pub source: Named<'a>,
    /// Whether it was new.
    pub added: bool,
}

/// The answer to `DELETE`: `{"asn":"62041","removed":true[,"purged":N]}`.
#[derive(Serialize)]
pub struct Removed<'a> {
    /// The source.
    #[serde(flatten)]
    pub source: Named<'a>,
    /// Whether it was configured.
    pub removed: bool,
    /// Values deleted now, with `purge`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub purged: Option<usize>,
}

/// The answer to `GET /asns` and `GET /fqdns`: `{"asns":[...]}`, `{"fqdns":[...]}`,
/// and, when the configuration has groups besides `default`, `"groups"`: each
/// listed source with the groups that name it (`{"62041":["default","video"]}`).
/// (`GET /feeds` and `GET /countries` alike, under `"feeds"` and `"countries"`.)
pub struct Listed<'a> {
    /// The kind listed: its config key names the list.
    pub kind: Kind,
    /// The sources.
    pub sources: &'a [String],
    /// The groups of each source.
    pub groups: Option<std::collections::BTreeMap<&'a str, Vec<&'a str>>>,
}

impl Serialize for Listed<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry(self.kind.key(), self.sources)?;
        if let Some(g) = &self.groups {
            m.serialize_entry("groups", g)?;
        }
        m.end()
    }
}
