//! Routing and the handlers. Independent of the HTTP server: a request comes in as a
//! [`RequestInfo`] and a body reader, an answer goes out as a [`Reply`], so that all of
//! it can be unit-tested without sockets.

use std::fmt;
use std::io::Read;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::Serialize;
use serde_json::Value;

use super::error::{json_line, ApiError};
use super::http::{
    bearer, etag, none_match, parse_bool, parse_query, path_segments, quoted, same_secret,
    split_target,
};
use super::server::Limit;
use super::MAX_BODY;
use crate::config::{self, Kind, Paths};
use crate::db;
use crate::format::{self, BadValue, RenderOptions};
use crate::status;

/// `Content-Type` of JSON answers and errors.
pub const JSON: &str = "application/json";

/// The query parameters of `GET /addresses`.
const ADDRESS_PARAMS: &[&str] = &["type", "format", "family", "aggregate", "table", "set"];

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
    Addresses,
    Health,
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
    let (route, allow) = match segments.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["addresses"] => (Route::Addresses, "GET, HEAD"),
        ["health"] => (Route::Health, "GET, HEAD"),
        ["asns"] => (Route::Sources(Kind::Asn), "GET, HEAD, POST"),
        ["fqdns"] => (Route::Sources(Kind::Fqdn), "GET, HEAD, POST"),
        ["asns", s] if !s.is_empty() => (Route::Source(Kind::Asn, s.to_string()), "DELETE"),
        ["fqdns", s] if !s.is_empty() => (Route::Source(Kind::Fqdn, s.to_string()), "DELETE"),
        _ => {
            return Err(ApiError::NotFound(format!(
                "no such path {}; the API has /addresses, /health, /asns and /fqdns",
                quoted(path)
            )))
        }
    };
    // HEAD is GET without the body; tiny_http leaves the body out and keeps the length.
    let read_only = matches!(req.method.as_str(), "GET" | "HEAD");
    // Handlers touch files (database, config.json) only while holding a permit, so
    // that memory and file descriptors stay bounded however many connections there
    // are. Bodies are read without one: a slow client must not hold it.
    let permit = || ctx.active.acquire();
    match (route, req.method.as_str()) {
        (Route::Addresses, _) if read_only => {
            let opts = render_options(query)?;
            let _p = permit();
            addresses(&opts, req, ctx)
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

/// The render options of a `GET /addresses` query: the same names and values as the
/// options of `export`.
pub fn render_options(query: Option<&str>) -> Result<RenderOptions, ApiError> {
    let mut o = RenderOptions::default();
    for (k, v) in parse_query(query, ADDRESS_PARAMS)? {
        match k.as_str() {
            "type" => o.type_filter = word(&k, &v)?,
            "format" => o.format = word(&k, &v)?,
            "family" => o.family = Some(word(&k, &v)?),
            "aggregate" => o.aggregate = parse_bool(&k, &v)?,
            "table" => o.table = v,
            "set" => o.set = v,
            // parse_query let only ADDRESS_PARAMS through.
            _ => {}
        }
    }
    o.check().map_err(|e| ApiError::BadRequest(e.0))?;
    Ok(o)
}

fn addresses(opts: &RenderOptions, req: &RequestInfo, ctx: &Context) -> Result<Reply, ApiError> {
    let body = {
        let db = db::open(&ctx.paths)?;
        crate::listing(&db, opts)?
    };
    let tag = etag(&body);
    let content_type = format::content_type(opts.format);
    if req
        .if_none_match
        .as_deref()
        .is_some_and(|h| none_match(h, &tag))
    {
        return Ok(Reply {
            status: 304,
            content_type,
            headers: vec![("ETag", tag)],
            length_without_body: Some(body.len()),
            body: Vec::new(),
        });
    }
    Ok(Reply {
        status: 200,
        content_type,
        headers: vec![("ETag", tag)],
        body,
        length_without_body: None,
    })
}

/// The body of `GET /health`, its keys in the order of the contract for both the 200
/// and the 503 answer (a struct keeps its field order; a `serde_json::Map` would sort
/// them).
#[derive(Debug, Serialize)]
pub struct Health {
    /// `ok`, or `error` when the database fails.
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
    /// The generic message of a 503 (set by [`ApiError::reply`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'static str>,
}

/// Stored values per kind of source.
#[derive(Debug, Serialize)]
pub struct Counts {
    asn: u64,
    fqdn: u64,
}

fn health(ctx: &Context) -> Result<Reply, ApiError> {
    // status.json is the daemon's (rewritten at least every minute); a broken one
    // must not make the API look down, nor flood the log of a frequent monitor.
    let st = status::read(&ctx.paths.status())
        .unwrap_or_else(|e| {
            log::debug!("api: health: {e}");
            None
        })
        .unwrap_or_default();
    let counts = db::open(&ctx.paths)
        .and_then(|db| db.counts())
        .map(|(asn, fqdn)| Counts { asn, fqdn });
    let mut h = Health {
        status: "ok",
        counts: None,
        last_success: st.last_success,
        last_error: st.last_error,
        heartbeat: st.heartbeat,
        error: None,
    };
    match counts {
        Ok(counts) => {
            h.counts = Some(counts);
            Ok(Reply::json(200, json_line(&h)))
        }
        Err(error) => {
            h.status = "error";
            Err(ApiError::Unhealthy {
                error,
                health: Box::new(h),
            })
        }
    }
}

/// The key of one source in request and answer bodies: `asn` or `fqdn`.
fn singular(kind: Kind) -> &'static str {
    match kind {
        Kind::Asn => "asn",
        Kind::Fqdn => "fqdn",
    }
}

/// The source named in an answer: `"asn":"62041"` or `"fqdn":"example.com"`, first.
#[derive(Serialize)]
struct Named<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    asn: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fqdn: Option<&'a str>,
}

impl<'a> Named<'a> {
    fn new(kind: Kind, source: &'a str) -> Named<'a> {
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
struct Added<'a> {
    #[serde(flatten)]
    source: Named<'a>,
    added: bool,
}

/// The answer to `DELETE`: `{"asn":"62041","removed":true[,"purged":N]}`.
#[derive(Serialize)]
struct Removed<'a> {
    #[serde(flatten)]
    source: Named<'a>,
    removed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    purged: Option<usize>,
}

/// The answer to `GET /asns` and `GET /fqdns`: `{"asns":[...]}`, `{"fqdns":[...]}`.
#[derive(Serialize)]
struct Listed<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    asns: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fqdns: Option<&'a [String]>,
}

fn list(kind: Kind, ctx: &Context) -> Result<Reply, ApiError> {
    let cfg = config::load(&ctx.paths.config())?.config;
    let sources = cfg.sources(kind);
    let listed = match kind {
        Kind::Asn => Listed {
            asns: Some(sources),
            fqdns: None,
        },
        Kind::Fqdn => Listed {
            asns: None,
            fqdns: Some(sources),
        },
    };
    Ok(Reply::json(200, json_line(&listed)))
}

/// The members of a JSON object in the order written, repeated keys included
/// (`serde_json::Value` keeps only the last of a repeated key).
struct Members(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Members, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut out = Vec::new();
                while let Some(member) = map.next_entry::<String, Value>()? {
                    out.push(member);
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// The source in a `POST` body: `{"asn": "AS62041"}` (or a number), `{"fqdn": "..."}`.
fn source_from_body(kind: Kind, body: &[u8]) -> Result<String, ApiError> {
    let key = singular(kind);
    let example = match kind {
        Kind::Asn => r#"{"asn": "AS62041"}"#,
        Kind::Fqdn => r#"{"fqdn": "example.com"}"#,
    };
    let bad = |why: String| {
        ApiError::BadRequest(format!("{why}; expected a JSON body such as {example}"))
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(bad("empty request body".into()));
    }
    if nested_deeper_than(body, 4) {
        return Err(bad("the JSON body is nested too deeply".into()));
    }
    let Members(members) = serde_json::from_slice(body).map_err(|e| match e.classify() {
        // Valid JSON, but not an object.
        serde_json::error::Category::Data => bad("the body is not a JSON object".into()),
        _ => bad(format!("invalid JSON body: {e}")),
    })?;
    if let Some((other, _)) = members.iter().find(|(k, _)| k.as_str() != key) {
        return Err(bad(format!("unknown key {} in the body", quoted(other))));
    }
    let v = match &members[..] {
        [] => return Err(bad(format!("missing key {key:?}"))),
        [(_, v)] => v,
        _ => return Err(bad(format!("key {key:?} given more than once in the body"))),
    };
    let norm = match (kind, v) {
        (Kind::Asn, v) => config::normalize_asn_value(v),
        (Kind::Fqdn, Value::String(s)) => config::normalize_fqdn(s),
        (Kind::Fqdn, _) => Err("invalid fqdn: expected a string".to_string()),
    };
    norm.map_err(|m| ApiError::BadRequest(format!("{key}: {m}")))
}

/// Whether arrays and objects in `json` nest deeper than `max` (outside strings). The
/// bodies we take are one level deep; refusing deep ones before serde_json parses
/// them keeps its recursion (up to 128 levels, a few hundred bytes of stack each)
/// off the small connection-thread stacks.
fn nested_deeper_than(json: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in json {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

fn add(kind: Kind, body: &[u8], ctx: &Context) -> Result<Reply, ApiError> {
    let source = source_from_body(kind, body)?;
    let (norm, added) = config::add_source(&ctx.paths.config(), kind, &source)?;
    let shown = crate::cli::display_source(kind, &norm);
    if added {
        log::info!("api: added {shown}; a running daemon collects it within seconds");
    }
    let status = if added { 201 } else { 200 };
    let answer = Added {
        source: Named::new(kind, &norm),
        added,
    };
    Ok(Reply::json(status, json_line(&answer)))
}

fn remove(kind: Kind, raw: &str, purge: bool, ctx: &Context) -> Result<Reply, ApiError> {
    let key = singular(kind);
    let source = kind
        .normalize(raw)
        .map_err(|m| ApiError::BadRequest(format!("{key}: {m}")))?;
    let (norm, removed) = config::remove_source(&ctx.paths.config(), kind, &source)?;
    let shown = crate::cli::display_source(kind, &norm);
    let purged = if purge {
        Some(db::open(&ctx.paths)?.purge_source(kind, &norm)?)
    } else {
        None
    };
    // Like `asn remove --purge`, purging the leftovers of a source that is no longer
    // configured is allowed; 404 only when there was nothing at all to do.
    if !removed && purged.unwrap_or(0) == 0 {
        return Err(ApiError::NotFound(format!("{shown} is not configured")));
    }
    match (removed, purged) {
        (true, None) => log::info!("api: removed {shown}; its values expire after ttl_days"),
        (true, Some(n)) => log::info!("api: removed {shown} and deleted its {n} stored values"),
        (false, n) => log::info!(
            "api: {shown} was not configured; deleted its {} stored values",
            n.unwrap_or(0)
        ),
    }
    let answer = Removed {
        source: Named::new(kind, &norm),
        removed,
        purged,
    };
    Ok(Reply::json(200, json_line(&answer)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::Cursor;
    use std::sync::Arc;

    struct T {
        _dir: tempfile::TempDir,
        ctx: Context,
    }

    fn setup() -> T {
        let dir = tempfile::tempdir().unwrap();
        let ctx = Context {
            paths: Paths::new(dir.path(), None),
            active: Arc::new(Limit::new(2)),
        };
        T { _dir: dir, ctx }
    }

    fn call(t: &T, method: &str, target: &str, body: &str) -> (Reply, Value) {
        call_with(
            t,
            RequestInfo {
                method: method.into(),
                target: target.into(),
                content_length: if body.is_empty() {
                    Vec::new()
                } else {
                    vec![body.len().to_string()]
                },
                ..RequestInfo::default()
            },
            body,
        )
    }

    fn call_with(t: &T, req: RequestInfo, body: &str) -> (Reply, Value) {
        let r = answer(&req, &mut Cursor::new(body.as_bytes().to_vec()), &t.ctx);
        let v = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
        (r, v)
    }

    #[test]
    fn routing_and_methods() {
        let t = setup();
        assert_eq!(call(&t, "GET", "/nope", "").0.status, 404);
        assert_eq!(call(&t, "GET", "/", "").0.status, 404);
        assert_eq!(call(&t, "GET", "/asns/", "").0.status, 404);
        assert_eq!(call(&t, "GET", "/health/x", "").0.status, 404);
        let (r, _) = call(&t, "PUT", "/asns", "");
        assert_eq!(r.status, 405);
        assert_eq!(r.headers, vec![("Allow", "GET, HEAD, POST".to_string())]);
        assert_eq!(call(&t, "GET", "/asns/1", "").0.status, 405);
        assert_eq!(call(&t, "POST", "/health", "").0.status, 405);
        assert_eq!(call(&t, "HEAD", "/health", "").0.status, 200);
        assert_eq!(call(&t, "GET", "/health?x=1", "").0.status, 400);
        assert_eq!(call(&t, "GET", "/a%zz", "").0.status, 400);
    }

    #[test]
    fn sources_round_trip() {
        let t = setup();
        let (r, v) = call(&t, "POST", "/asns", r#"{"asn":"AS62041"}"#);
        assert_eq!((r.status, v), (201, json!({"asn": "62041", "added": true})));
        assert_eq!(r.body, b"{\"asn\":\"62041\",\"added\":true}\n");
        let (r, v) = call(&t, "POST", "/asns", r#"{"asn":62041}"#);
        assert_eq!((r.status, v["added"].clone()), (200, json!(false)));
        let (r, v) = call(&t, "POST", "/fqdns", r#"{"fqdn":"Example.COM."}"#);
        assert_eq!((r.status, v["fqdn"].clone()), (201, json!("example.com")));
        assert_eq!(call(&t, "GET", "/asns", "").1, json!({"asns": ["62041"]}));
        assert_eq!(
            call(&t, "GET", "/fqdns", "").1,
            json!({"fqdns": ["example.com"]})
        );
        let (r, v) = call(&t, "DELETE", "/asns/as62041", "");
        assert_eq!(
            (r.status, v),
            (200, json!({"asn": "62041", "removed": true}))
        );
        assert_eq!(call(&t, "DELETE", "/asns/62041", "").0.status, 404);
        let (r, v) = call(&t, "DELETE", "/fqdns/example.com?purge=true", "");
        assert_eq!(
            (r.status, v),
            (
                200,
                json!({"fqdn": "example.com", "removed": true, "purged": 0})
            )
        );
    }

    #[test]
    fn bad_bodies() {
        let t = setup();
        for body in [
            "",
            "  ",
            "{",
            "[]",
            "null",
            "\"AS1\"",
            r#"{"asn":null}"#,
            r#"{"asn":"ASX"}"#,
            r#"{"asn":-1}"#,
            r#"{"asn":1.5}"#,
            r#"{"asn":[1]}"#,
            r#"{"fqdn":"x.org"}"#,
            r#"{"asn":"1","x":2}"#,
            r#"{"asn":"1","asn":"1"}"#,
            "{}",
            "\u{feff}{}",
            &"[".repeat(10_000),
        ] {
            let (r, v) = call(&t, "POST", "/asns", body);
            assert_eq!(r.status, 400, "{body:?}: {v}");
            assert!(v["error"].is_string());
        }
        for body in [
            r#"{"fqdn":1}"#,
            r#"{"fqdn":"1.2.3.4"}"#,
            r#"{"fqdn":"bücher.de"}"#,
        ] {
            assert_eq!(call(&t, "POST", "/fqdns", body).0.status, 400, "{body}");
        }
        assert!(!t.ctx.paths.config().exists());
        // The message names what is wrong.
        for (body, named) in [
            (
                r#"{"asn":"1","asn":"2"}"#,
                "key \"asn\" given more than once",
            ),
            (r#"{"asn":"1","x":2}"#, "unknown key \"x\""),
            (r#"{"x":2,"asn":"1"}"#, "unknown key \"x\""),
            ("{}", "missing key \"asn\""),
            ("[1]", "not a JSON object"),
            ("null", "not a JSON object"),
            ("{\"asn\":", "invalid JSON body"),
            (r#"{"asn":"1"} x"#, "invalid JSON body"),
        ] {
            let (r, v) = call(&t, "POST", "/asns", body);
            let m = v["error"].as_str().unwrap_or_default();
            assert!(r.status == 400 && m.contains(named), "{body}: {m}");
        }
    }

    #[test]
    fn nesting() {
        assert!(!nested_deeper_than(br#"{"asn":"[[[[[[[[[["}"#, 1));
        assert!(!nested_deeper_than(br#"{"asn":"\\\"[[[[[["}"#, 1));
        assert!(nested_deeper_than(br#"{"asn":[[1]]}"#, 2));
        assert!(!nested_deeper_than(br#"{"asn":[[1]]}"#, 3));
        assert!(!nested_deeper_than(b"]]]]]{", 1));
    }

    #[test]
    fn body_limits() {
        let t = setup();
        let req = |cl: &str| RequestInfo {
            method: "POST".into(),
            target: "/asns".into(),
            content_length: vec![cl.into()],
            ..RequestInfo::default()
        };
        assert_eq!(call_with(&t, req("99999999999"), "").0.status, 413);
        assert_eq!(
            call_with(&t, req("999999999999999999999999999"), "")
                .0
                .status,
            413
        );
        assert_eq!(call_with(&t, req("65537"), "").0.status, 413);
        assert_eq!(call_with(&t, req("-1"), "").0.status, 400);
        assert_eq!(call_with(&t, req("abc"), "").0.status, 400);
        // A body without a declared length (chunked) is cut at the limit.
        let mut chunked = req("0");
        chunked.content_length = Vec::new();
        let big = format!("{{\"asn\":\"{}\"}}", "1".repeat(70_000));
        assert_eq!(call_with(&t, chunked, &big).0.status, 413);
        // Also for a GET: the declared length is checked first.
        let (r, _) = call_with(
            &t,
            RequestInfo {
                method: "GET".into(),
                target: "/health".into(),
                content_length: vec!["1000000".into()],
                ..RequestInfo::default()
            },
            "",
        );
        assert_eq!(r.status, 413);
        // Several Content-Length headers: equal ones are one, different ones a 400
        // naming both (before the size check: the framing is unknown).
        let body = r#"{"asn":"1"}"#;
        let mut dup = req("11");
        dup.content_length.push(" 11".into());
        assert_eq!(call_with(&t, dup.clone(), body).0.status, 201);
        dup.content_length.push("12".into());
        let (r, v) = call_with(&t, dup, body);
        assert_eq!(r.status, 400);
        assert_eq!(
            v["error"],
            "conflicting Content-Length headers \"11\" and \"12\""
        );
        let mut dup = req("99999999999");
        dup.content_length.push("5".into());
        assert_eq!(call_with(&t, dup, "").0.status, 400);
    }

    #[test]
    fn tokens() {
        let t = setup();
        std::fs::write(t.ctx.paths.config(), r#"{"api": {"token": "s3cret"}}"#).unwrap();
        let mut req = RequestInfo {
            method: "POST".into(),
            target: "/asns".into(),
            ..RequestInfo::default()
        };
        let body = r#"{"asn":"1"}"#;
        assert_eq!(call_with(&t, req.clone(), body).0.status, 401);
        for wrong in [
            "Bearer s3cre",
            "Bearer s3cretx",
            "Basic s3cret",
            "s3cret",
            "Bearer ",
        ] {
            req.authorization = Some(wrong.into());
            let (r, _) = call_with(&t, req.clone(), body);
            assert_eq!(r.status, 401, "{wrong}");
            assert_eq!(r.headers, vec![("WWW-Authenticate", "Bearer".to_string())]);
        }
        req.authorization = Some("Bearer s3cret".into());
        assert_eq!(call_with(&t, req.clone(), body).0.status, 201);
        // Reads need no token.
        assert_eq!(call(&t, "GET", "/asns", "").0.status, 200);
        // A broken configuration is the server's problem: 503, details not sent.
        std::fs::write(t.ctx.paths.config(), "{ broken").unwrap();
        let (r, v) = call_with(&t, req, body);
        assert_eq!(r.status, 503);
        assert_eq!(v, json!({"error": "configuration unavailable"}));
        assert_eq!(call(&t, "GET", "/asns", "").0.status, 503);
    }

    #[test]
    fn address_options() {
        assert_eq!(render_options(None).unwrap(), RenderOptions::default());
        let o = render_options(Some(
            "type=cidr&format=nft&family=6&aggregate=true&table=t1&set=s-1",
        ))
        .unwrap();
        assert_eq!(o.format, format::Format::Nft);
        assert_eq!(o.family, Some(format::Family::V6));
        assert!(o.aggregate);
        assert_eq!((o.table.as_str(), o.set.as_str()), ("t1", "s-1"));
        for (q, named) in [
            ("formt=nft", "formt"),
            ("format=yaml", "yaml"),
            ("type=everything", "everything"),
            ("family=5", "5"),
            ("aggregate=yes", "aggregate"),
            ("set=bad%20name", "bad name"),
            ("table=", "table"),
            ("format=text&format=json", "format"),
        ] {
            let e = render_options(Some(q)).unwrap_err().to_string();
            assert!(e.contains(named), "{q}: {e}");
        }
    }

    #[test]
    fn addresses_and_etag() {
        let t = setup();
        let mut db = db::open(&t.ctx.paths).unwrap();
        let vals: Vec<String> = ["10.0.0.0/8", "2001:db8::/32"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        db.merge_source(Kind::Asn, "1", &vals, crate::util::unix_now(), 7)
            .unwrap();
        let (r, _) = call(&t, "GET", "/addresses", "");
        assert_eq!(r.status, 200);
        assert_eq!(r.body, b"10.0.0.0/8\n2001:db8::/32\n");
        assert_eq!(r.content_type, "text/plain; charset=utf-8");
        let tag = r.headers[0].1.clone();
        let (r2, _) = call_with(
            &t,
            RequestInfo {
                method: "GET".into(),
                target: "/addresses".into(),
                if_none_match: Some(format!("\"other\", {tag}")),
                ..RequestInfo::default()
            },
            "",
        );
        assert_eq!(r2.status, 304);
        assert!(r2.body.is_empty());
        assert_eq!(r2.length_without_body, Some(r.body.len()));
        let (r3, v) = call(&t, "GET", "/addresses?format=json&family=4", "");
        assert_eq!(r3.content_type, JSON);
        assert_eq!(v["addresses"], json!(["10.0.0.0/8"]));
        let (r4, v) = call(&t, "GET", "/health", "");
        assert_eq!(r4.status, 200);
        assert_eq!(v["counts"], json!({"asn": 2, "fqdn": 0}));
        assert_eq!(
            std::str::from_utf8(&r4.body).unwrap(),
            "{\"status\":\"ok\",\"counts\":{\"asn\":2,\"fqdn\":0},\"last_success\":null,\
             \"last_error\":null,\"heartbeat\":null}\n"
        );
        let (r5, v) = call(&t, "DELETE", "/asns/1?purge=1", "");
        assert_eq!(
            (r5.status, v["purged"].clone(), v["removed"].clone()),
            (200, json!(2), json!(false))
        );
    }
}
