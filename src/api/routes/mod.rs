//! Routing and the handlers. Independent of the HTTP server: a request comes in as a
//! [`RequestInfo`] and a body reader, an answer goes out as a [`Reply`], so that all of
//! it can be unit-tested without sockets. `addresses`, `health` and `sources` hold the
//! handlers of their paths.

mod addresses;
mod changes;
mod health;
mod lookup;
mod page;
mod sources;
mod status;
#[cfg(test)]
mod tests;

use std::io::Read;

use super::body::JSON;
use super::error::ApiError;
use super::headers::{bearer, same_secret};
use super::limit::Limit;
use super::query::{parse_bool, parse_query, path_segments, quoted, split_target};
use super::MAX_BODY;
use crate::config::{self, Paths};
use crate::format::BadValue;
use crate::source::Kind;

#[cfg(test)]
use addresses::render_options;
use addresses::{addresses, listing_options};
use changes::{changes, changes_query};
use health::health;
use lookup::{lookup, lookup_query};
use page::{page, same_origin};
use sources::{add, list, remove};
use status::status;

/// What the handlers need to know about a request (the body comes separately).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestInfo {
    /// `GET`, `POST`, ... as sent.
    pub method: String,
    /// The request target: path and query, still percent-encoded.
    pub target: String,
    /// The values of the `Content-Length` headers, in the order sent (more than one
    /// only from a confused or hostile client).
    pub content_length: Vec<String>,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// The `If-None-Match` header.
    pub if_none_match: Option<String>,
    /// The `Host` header: the host the client asked.
    pub host: Option<String>,
    /// The `Origin` header: the page that made a browser send the request.
    pub origin: Option<String>,
    /// The `Accept-Encoding` header.
    pub accept_encoding: Option<String>,
}

/// An answer, before it becomes an HTTP response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The `Content-Type`.
    pub content_type: &'static str,
    /// Further headers (`ETag`, `Allow`, ...).
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// For `304 Not Modified`: the length of the body a 200 would have had, sent as
    /// `Content-Length` without a body, as RFC 9110 allows (never a wrong `0`).
    pub length_without_body: Option<usize>,
}

impl Reply {
    fn json(status: u16, body: Vec<u8>) -> Reply {
        Reply {
            status,
            content_type: JSON,
            headers: Vec::new(),
            body,
            length_without_body: None,
        }
    }
}

impl From<ApiError> for Reply {
    fn from(e: ApiError) -> Reply {
        let r = e.reply();
        Reply {
            status: r.status,
            content_type: JSON,
            headers: r.headers,
            body: r.body,
            length_without_body: None,
        }
    }
}

/// What the handlers share: where the files are and the limit on requests doing
/// database work at once.
#[derive(Debug)]
pub struct Context {
    /// The data directory and database.
    pub paths: Paths,
    /// Requests whose handlers may run at the same time: each may hold a full
    /// listing in memory and a few files open.
    pub active: std::sync::Arc<Limit>,
}

/// The places the API knows.
enum Route {
    Page,
    Status,
    Addresses,
    Changes,
    Health,
    Lookup,
    Sources(Kind),
    Source(Kind, String),
}

/// Answers one request. Never panics and never fails: errors become their replies.
pub fn answer(req: &RequestInfo, body: &mut dyn Read, ctx: &Context) -> Reply {
    match route(req, body, ctx) {
        Ok(r) => r,
        Err(e) => e.into(),
    }
}

fn route(req: &RequestInfo, body: &mut dyn Read, ctx: &Context) -> Result<Reply, ApiError> {
    // A body declared too large is refused before anything else, without reading it.
    let declared = declared_length(req)?;
    let (path, query) = split_target(&req.target);
    let segments = path_segments(path)?;
    // Before anything is read or changed: a browser on another site's page must not
    // change the sources of a visitor's router (requests without Origin are not from
    // a page of another site, and keep working).
    if !matches!(req.method.as_str(), "GET" | "HEAD") {
        same_origin(req)?;
    }
    let (route, allow) = match segments.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => (Route::Page, "GET, HEAD"),
        ["status"] => (Route::Status, "GET, HEAD"),
        ["addresses"] => (Route::Addresses, "GET, HEAD"),
        ["health"] => (Route::Health, "GET, HEAD"),
        ["lookup"] => (Route::Lookup, "GET, HEAD"),
        ["changes"] => (Route::Changes, "GET, HEAD"),
        ["asns"] => (Route::Sources(Kind::Asn), "GET, HEAD, POST"),
        ["fqdns"] => (Route::Sources(Kind::Fqdn), "GET, HEAD, POST"),
        ["asns", s] if !s.is_empty() => (Route::Source(Kind::Asn, s.to_string()), "DELETE"),
        ["fqdns", s] if !s.is_empty() => (Route::Source(Kind::Fqdn, s.to_string()), "DELETE"),
        _ => {
            return Err(ApiError::NotFound(format!(
            "no such path {}; the API has /, /status, /addresses, /health, /lookup, /changes, /asns and /fqdns",
            quoted(path)
        )))
        }
    };
    // HEAD is GET without the body; the server leaves the body out and keeps the length.
    let read_only = matches!(req.method.as_str(), "GET" | "HEAD");
    // Handlers touch files (database, config.json) only while holding a permit, so
    // that memory and file descriptors stay bounded however many connections there
    // are. Bodies are read without one: a slow client must not hold it.
    let permit = || ctx.active.acquire();
    match (route, req.method.as_str()) {
        (Route::Page, _) if read_only => {
            parse_query(query, &[])?;
            Ok(page(req))
        }
        (Route::Status, _) if read_only => {
            parse_query(query, &[])?;
            let _p = permit();
            status(ctx)
        }
        (Route::Addresses, _) if read_only => {
            let (opts, details) = listing_options(query)?;
            let _p = permit();
            addresses(&opts, details, req, ctx)
        }
        (Route::Lookup, _) if read_only => {
            let q = lookup_query(query)?;
            let _p = permit();
            lookup(&q, ctx)
        }
        (Route::Changes, _) if read_only => {
            let (since, filter) = changes_query(query)?;
            let _p = permit();
            changes(&since, filter, ctx)
        }
        (Route::Health, _) if read_only => {
            parse_query(query, &[])?;
            let _p = permit();
            health(ctx)
        }
        (Route::Sources(kind), _) if read_only => {
            parse_query(query, &[])?;
            let _p = permit();
            list(kind, ctx)
        }
        (Route::Sources(kind), "POST") => {
            {
                let _p = permit();
                authorize(req, ctx)?;
            }
            parse_query(query, &[])?;
            let bytes = read_body(body, declared)?;
            let _p = permit();
            add(kind, &bytes, ctx)
        }
        (Route::Source(kind, source), "DELETE") => {
            let _p = permit();
            authorize(req, ctx)?;
            let mut purge = false;
            for (k, v) in parse_query(query, &["purge"])? {
                purge = parse_bool(&k, &v)?;
            }
            remove(kind, &source, purge, ctx)
        }
        _ => Err(ApiError::MethodNotAllowed(allow)),
    }
}

/// The declared `Content-Length`: 413 when over [`MAX_BODY`], 400 when it is no
/// number or when several `Content-Length` headers disagree (RFC 9112, section 6.3:
/// the body's framing is then unknown; repeated equal values are taken as one). A
/// chunked body has no declared length; [`read_body`] stops it at the limit.
fn declared_length(req: &RequestInfo) -> Result<Option<u64>, ApiError> {
    let Some(raw) = req.content_length.first() else {
        return Ok(None);
    };
    if let Some(other) = req.content_length.iter().find(|v| v.trim() != raw.trim()) {
        return Err(ApiError::BadRequest(format!(
            "conflicting Content-Length headers {} and {}",
            quoted(raw),
            quoted(other)
        )));
    }
    match raw.trim().parse::<u64>() {
        Ok(n) if n > MAX_BODY => Err(ApiError::PayloadTooLarge),
        Ok(n) => Ok(Some(n)),
        // All digits but too long for u64: certainly too large.
        Err(_) if !raw.trim().is_empty() && raw.trim().bytes().all(|b| b.is_ascii_digit()) => {
            Err(ApiError::PayloadTooLarge)
        }
        Err(_) => Err(ApiError::BadRequest(format!(
            "invalid Content-Length {}",
            quoted(raw)
        ))),
    }
}

/// Reads the body, at most [`MAX_BODY`] bytes (one more tells that it is too long).
/// A body shorter than its declared length (the client closed early) is refused
/// rather than acted on: it may be cut in a place that is still valid JSON.
fn read_body(body: &mut dyn Read, declared: Option<u64>) -> Result<Vec<u8>, ApiError> {
    let mut buf = Vec::new();
    body.take(MAX_BODY + 1).read_to_end(&mut buf).map_err(|e| {
        log::debug!("api: reading a request body: {e}");
        ApiError::BadRequest(
            "the request body could not be read (malformed, cut short or too slow)".into(),
        )
    })?;
    if buf.len() as u64 > MAX_BODY {
        return Err(ApiError::PayloadTooLarge);
    }
    if let Some(n) = declared.filter(|&n| n != buf.len() as u64) {
        return Err(ApiError::BadRequest(format!(
            "the request body has {} bytes, not the {n} of its Content-Length",
            buf.len()
        )));
    }
    Ok(buf)
}

/// Checks the bearer token when `api.token` is set. The configuration is read for
/// every mutating request, so that a changed token applies at once.
fn authorize(req: &RequestInfo, ctx: &Context) -> Result<(), ApiError> {
    let cfg = config::load(&ctx.paths.config())?.config;
    let Some(token) = cfg.api.token else {
        return Ok(());
    };
    match req.authorization.as_deref().and_then(bearer) {
        Some(given) if same_secret(given.as_bytes(), token.as_bytes()) => Ok(()),
        _ => Err(ApiError::Unauthorized),
    }
}

/// Parses a word-valued parameter (`type`, `format`, `family`).
fn word<T: std::str::FromStr<Err = BadValue>>(name: &str, value: &str) -> Result<T, ApiError> {
    if value.len() > 32 {
        return Err(ApiError::BadRequest(format!(
            "invalid {name} {}",
            quoted(value)
        )));
    }
    value.parse::<T>().map_err(|e| ApiError::BadRequest(e.0))
}
