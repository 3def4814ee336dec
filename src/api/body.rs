//! The JSON bodies of answers, their keys in the order of the contract.

use crate::source::Kind;
use crate::util::json::{self, ToJson, Writer};

/// `Content-Type` of JSON answers and errors.
pub const JSON: &str = "application/json";

/// `value` as JSON with a trailing newline (so that `curl` output ends its line).
pub fn json_line<T: ToJson + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = json::to_vec(value);
    out.push(b'\n');
    out
}

/// The body of `GET /health`, its keys in the order of the contract for both the 200
/// and the 503 answer.
#[derive(Debug)]
pub struct Health {
    /// `ok`; `degraded` while `config.json` cannot be read (the daemon runs on the
    /// last good one, or on none); `error` when the database fails.
    pub status: &'static str,
    /// The stored values per kind of source; left out on a storage error.
    pub counts: Option<Counts>,
    /// From the daemon's `status.json`.
    pub last_success: Option<String>,
    /// From the daemon's `status.json`.
    pub last_error: Option<String>,
    /// From the daemon's `status.json`.
    pub heartbeat: Option<String>,
    /// With `degraded`, what is wrong with `config.json`; with `error`, the
    /// generic message of the 503 (set by [`ApiError::reply`]); left out otherwise.
    pub error: Option<String>,
}

/// Stored values per kind of source.
#[derive(Debug)]
pub struct Counts {
    /// Rows of ASN sources.
    pub asn: u64,
    /// Rows of FQDN sources.
    pub fqdn: u64,
    /// Sources whose last answer the gate holds (`"held"`, left out when none: the
    /// lists are the last good ones, so still `ok`).
    pub held: u64,
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

impl Named<'_> {
    /// The member, in the object being written.
    fn write_field(&self, w: &mut Writer<'_>) {
        w.field(self.kind.as_str(), self.source);
    }
}

/// The answer to `POST`: `{"asn":"62041","added":true}`.
pub struct Added<'a> {
    /// The source.
    pub source: Named<'a>,
    /// Whether it was new.
    pub added: bool,
}

/// The answer to `DELETE`: `{"asn":"62041","removed":true[,"purged":N]}`.
pub struct Removed<'a> {
    /// The source.
    pub source: Named<'a>,
    /// Whether it was configured.
    pub removed: bool,
    /// Values deleted now, with `purge`; left out without it.
    pub purged: Option<usize>,
}

impl ToJson for Health {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.begin_object();
        w.field("status", self.status);
        if let Some(c) = &self.counts {
            w.key("counts");
            w.begin_object();
            w.field("asn", &c.asn);
            w.field("fqdn", &c.fqdn);
            w.end_object();
            if c.held > 0 {
                w.field("held", &c.held);
            }
        }
        w.field("last_success", &self.last_success);
        w.field("last_error", &self.last_error);
        w.field("heartbeat", &self.heartbeat);
        if let Some(e) = &self.error {
            w.field("error", e);
        }
        w.end_object();
    }
}

impl ToJson for Added<'_> {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.begin_object();
        self.source.write_field(w);
        w.field("added", &self.added);
        w.end_object();
    }
}

impl ToJson for Removed<'_> {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.begin_object();
        self.source.write_field(w);
        w.field("removed", &self.removed);
        if let Some(n) = &self.purged {
            w.field("purged", n);
        }
        w.end_object();
    }
}
