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

/// The source named in an answer: `"asn":"62041"` or `"fqdn":"example.com"`, first.
#[derive(Serialize)]
pub struct Named<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    asn: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fqdn: Option<&'a str>,
}

impl<'a> Named<'a> {
    pub fn new(kind: Kind, source: &'a str) -> Named<'a> {
        match kind {
            Kind::Asn => Named {
                asn: Some(source),
                fqdn: None,
            },
            Kind::Fqdn => Named {
                asn: None,
                fqdn: Some(source),
            },
        }
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
#[derive(Serialize)]
pub struct Listed<'a> {
    /// `GET /asns`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asns: Option<&'a [String]>,
    /// `GET /fqdns`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fqdns: Option<&'a [String]>,
    /// The groups of each source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<std::collections::BTreeMap<&'a str, Vec<&'a str>>>,
}
