//! Routing and the handlers. Independent of the HTTP server: a request comes in as a
//! [`RequestInfo`] and its whole body (read, bounded and de-chunked by the connection
//! layer), an answer goes out as a [`Reply`], so that all of
//! it can be unit-tested without sockets. `addresses`, `health` and `sources` hold the
//! handlers of their paths.

pub(crate) mod addresses;
mod changes;
mod explain;
mod files;
mod groups;
mod health;
mod lookup;
mod page;
#[cfg(feature = "collect")]
mod search;
mod services;
mod sources;
mod status;
#[cfg(test)]
mod tests;

use super::body::JSON;
use super::error::ApiError;
use super::headers::{bearer, same_secret};
use super::limit::Limit;
use super::query::{parse_bool, parse_query, path_segments, quoted, split_target};
use crate::config::{self, Paths};
use crate::format::BadValue;
use crate::source::Kind;

#[cfg(test)]
use addresses::render_options;
use addresses::{addresses, listing_options};
use changes::{changes, changes_query};
use explain::{explain, explain_query};
use health::health;
use lookup::{lookup, lookup_query};
use page::{page, same_origin};
use sources::{add, groups, list, remove};
use status::status;

/// What the handlers need to know about a request (the body comes separately).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestInfo {
    /// `GET`, `POST`, ... as sent.
    pub method: String,
    /// The request target: path and query, still percent-encoded.
    pub target: String,
    /// The `Authorization` header (a request with two never gets here).
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
    /// A body shared with other clients of the same answer (a large listing kept
    /// once however many clients read it); sent instead of `body` when set.
    pub shared: Option<std::sync::Arc<Vec<u8>>>,
    /// For `304 Not Modified`: the length of the body a 200 would have had, sent as
    /// `Content-Length` without a body, as RFC 9110 allows (never a wrong `0`).
    pub length_without_body: Option<usize>,
}

impl Reply {
    /// The body as sent: the shared one when set.
    #[cfg(test)]
    pub fn bytes(&self) -> &[u8] {
        self.shared.as_deref().unwrap_or(&self.body)
    }

    /// A 200 JSON answer with a body held in the answer budget.
    fn held((body, _tag): crate::api::answers::Listing) -> Reply {
        Reply {
            shared: Some(body),
            ..Reply::json(200, Vec::new())
        }
    }

    fn json(status: u16, body: Vec<u8>) -> Reply {
        Reply {
            status,
            content_type: JSON,
            headers: Vec::new(),
            body,
            length_without_body: None,
            shared: None,
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
            shared: None,
        }
    }
}

/// What the handlers share: where the files are, the limit on requests doing
/// database work at once, and the database connections kept between requests.
#[derive(Debug)]
pub struct Context {
    /// The data directory and database.
    pub paths: Paths,
    /// Requests whose handlers may run at the same time: each may hold a full
    /// listing in memory and a few files open.
    pub active: std::sync::Arc<Limit>,
    /// One connection per handler doing database work, kept open: opening parses
    /// the schema, which costs more than a lookup (`db::Pool`).
    pub db: crate::db::Pool,
    /// The byte budget of answer bodies (`answers.rs`).
    pub answers: crate::api::answers::Answers,
    /// `/asn-search`'s kept answers and its one search in flight.
    #[cfg(feature = "collect")]
    pub searches: search::Searches,
    /// The last `config.json` that could be read (`Context::config`).
    good_config: std::sync::Mutex<KeptConfig>,
}

/// The last good configuration, and the problem of the file last logged.
type KeptConfig = (Option<std::sync::Arc<config::Config>>, Option<String>);

impl Context {
    /// The context of a server whose handlers do database work `active` at a time
    /// (plus the `/health` lane's one and the quick lane's two).
    pub fn new(paths: Paths, active: usize) -> Context {
        let ctx = Context {
            db: crate::db::Pool::new(paths.clone(), active + 3),
            paths,
            active: std::sync::Arc::new(Limit::new(active)),
            answers: Default::default(),
            #[cfg(feature = "collect")]
            searches: Default::default(),
            good_config: std::sync::Mutex::new((None, None)),
        };
        // Read at start, so that a file broken before the first request still leaves
        // the server on the configuration it started with.
        let _ = ctx.config();
        ctx
    }

    /// `config.json` as it is now; while it cannot be read, the last one that could
    /// (the listings stay those of a good configuration, and `/health` says
    /// `degraded`); an error only when none was ever read. Never "no configuration":
    /// that would list every stored value without exclusions.
    pub fn config(&self) -> Result<std::sync::Arc<config::Config>, ApiError> {
        let read = config::load(&self.paths.config());
        let mut kept = self.kept();
        match read {
            Ok(l) => {
                kept.1 = None;
                Ok(kept.0.insert(std::sync::Arc::new(l.config)).clone())
            }
            Err(e) => {
                let Some(cfg) = kept.0.clone() else {
                    return Err(e.into());
                };
                // Once per problem, not once per request.
                let said = e.to_string();
                if kept.1.as_ref() != Some(&said) {
                    log::warn!("api: {said}; answering from the configuration read before");
                    kept.1 = Some(said);
                }
                Ok(cfg)
            }
        }
    }

    /// A unit of [`Context::active`] for a handler of the general lane; none on a
    /// lane of its own (bounded by its threads), which must not wait for the
    /// permits that large listings hold while they wait for their render.
    fn permit(&self) -> Option<super::limit::Permit> {
        match OWN_LANE.with(std::cell::Cell::get) {
            true => None,
            false => Some(self.active.acquire()),
        }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, KeptConfig> {
        self.good_config
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a good configuration was read (what `/health` says while the file
    /// is broken).
    fn has_good_config(&self) -> bool {
        self.kept().0.is_some()
    }
}

thread_local! {
    /// This thread handles a lane of its own (`/health`, quick requests).
    static OWN_LANE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Says whether this handler thread serves a lane of its own (see [`Context::permit`]).
pub fn on_own_lane(own: bool) {
    OWN_LANE.with(|c| c.set(own));
}

/// Whether a request is quick, for a lane that never waits behind large renders: a
/// listing already rendered for this database state, or a lookup (a small render,
/// which has its own turn). Cheap: no database work, a few `stat`s.
pub fn quick(req: &RequestInfo, ctx: &Context) -> bool {
    if !matches!(req.method.as_str(), "GET" | "HEAD") {
        return false;
    }
    match split_target(&req.target).0 {
        "/lookup" => true,
        "/addresses" => addresses::held(&req.target, ctx),
        _ => false,
    }
}

/// The places the API knows.
enum Route {
    Page,
    Status,
    Addresses,
    Changes,
    Health,
    Lookup,
    Explain,
    Sources(Kind),
    Source(Kind, String),
    Confirm,
    Groups,
    Interfaces,
    AsnSearch,
    Services,
    Service(String),
}

/// Answers one request with its `body`. Never panics and never fails: errors become
/// their replies.
pub fn answer(req: &RequestInfo, body: &[u8], ctx: &Context) -> Reply {
    match route(req, body, ctx) {
        Ok(r) => r,
        Err(e) => e.into(),
    }
}

/// What is checked before a client that sent `Expect: 100-continue` is invited to
/// send its body: the origin and the token of a mutating request, so that a client
/// refused anyway is refused before it uploads anything. Everything else is checked
/// with the body.
pub fn check_before_body(req: &RequestInfo, ctx: &Context) -> Result<(), ApiError> {
    if matches!(req.method.as_str(), "GET" | "HEAD") {
        return Ok(());
    }
    same_origin(req)?;
    let _p = ctx.active.acquire();
    authorize(req, ctx)
}

fn route(req: &RequestInfo, body: &[u8], ctx: &Context) -> Result<Reply, ApiError> {
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
        ["explain"] => (Route::Explain, "GET, HEAD"),
        ["changes"] => (Route::Changes, "GET, HEAD"),
        ["confirm"] => (Route::Confirm, "POST"),
        ["asns"] => (Route::Sources(Kind::Asn), "GET, HEAD, POST"),
        ["fqdns"] => (Route::Sources(Kind::Fqdn), "GET, HEAD, POST"),
        ["feeds"] => (Route::Sources(Kind::Feed), "GET, HEAD, POST"),
        ["countries"] => (Route::Sources(Kind::Country), "GET, HEAD, POST"),
        ["groups"] => (Route::Groups, "GET, HEAD, POST"),
        ["interfaces"] => (Route::Interfaces, "GET, HEAD"),
        ["asn-search"] => (Route::AsnSearch, "GET, HEAD"),
        ["services"] => (Route::Services, "GET, HEAD, POST"),
        ["services", s] if !s.is_empty() => (Route::Service(s.to_string()), "DELETE"),
        ["asns", s] if !s.is_empty() => (Route::Source(Kind::Asn, s.to_string()), "DELETE"),
        ["fqdns", s] if !s.is_empty() => (Route::Source(Kind::Fqdn, s.to_string()), "DELETE"),
        ["feeds", s] if !s.is_empty() => (Route::Source(Kind::Feed, s.to_string()), "DELETE"),
        ["countries", s] if !s.is_empty() => {
            (Route::Source(Kind::Country, s.to_string()), "DELETE")
        }
        _ => {
            return Err(ApiError::NotFound(format!(
            "no such path {}; the API has /, /interfaces, /status, /addresses, /health, /lookup, /explain, /changes, /confirm, /asns, /asn-search, /fqdns, /feeds, /countries, /groups and /services",
            quoted(path)
        )))
        }
    };
    // HEAD is GET without the body; the server leaves the body out and keeps the length.
    let read_only = matches!(req.method.as_str(), "GET" | "HEAD");
    // Handlers touch files (database, config.json) only while holding a permit, so
    // that memory and file descriptors stay bounded however many connections there
    // are.
    let permit = || ctx.permit();
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
            let (opts, details, page) = listing_options(query)?;
            let _p = permit();
            addresses(&opts, details, page, req, ctx)
        }
        (Route::Lookup, _) if read_only => {
            let q = lookup_query(query)?;
            let _p = permit();
            lookup(&q, &req.target, ctx)
        }
        (Route::Explain, _) if read_only => {
            let (q, group) = explain_query(query)?;
            let _p = permit();
            explain(&q, group.as_deref(), ctx)
        }
        (Route::Changes, _) if read_only => {
            let q = changes_query(query)?;
            let _p = permit();
            changes(&q, &req.target, ctx)
        }
        (Route::Health, _) if read_only => {
            parse_query(query, &[])?;
            // No permit: `/health` runs on a lane of its own (one thread, see
            // `server.rs`), so it is bounded there and never waits behind listings.
            health(ctx)
        }
        (Route::Sources(kind), _) if read_only => {
            let group = group_param(parse_query(query, &["group"])?);
            let _p = permit();
            list(kind, group.as_deref(), ctx)
        }
        (Route::Groups, _) if read_only => {
            parse_query(query, &[])?;
            let _p = permit();
            groups(ctx)
        }
        (Route::Interfaces, _) if read_only => {
            parse_query(query, &[])?;
            Ok(groups::interfaces())
        }
        (Route::Groups, "POST") => {
            let _p = permit();
            authorize(req, ctx)?;
            parse_query(query, &[])?;
            groups::set_route(body, ctx)
        }
        (Route::AsnSearch, _) if read_only => {
            // The token first: a client without it learns nothing, not even
            // whether its text was valid.
            {
                let _p = permit();
                authorize(req, ctx)?;
            }
            asn_search(query, ctx)
        }
        (Route::Sources(kind), "POST") => {
            {
                let _p = permit();
                authorize(req, ctx)?;
            }
            let group = group_param(parse_query(query, &["group"])?);
            let _p = permit();
            add(kind, body, group.as_deref(), ctx)
        }
        (Route::Source(kind, source), "DELETE") => {
            let _p = permit();
            authorize(req, ctx)?;
            let (purge, group) = purge_and_group(query)?;
            remove(kind, &source, purge, group.as_deref(), ctx)
        }
        (Route::Services, _) if read_only => {
            parse_query(query, &[])?;
            let _p = permit();
            services::list(ctx)
        }
        (Route::Services, "POST") => {
            let _p = permit();
            authorize(req, ctx)?;
            let group = group_param(parse_query(query, &["group"])?);
            services::add(body, group.as_deref(), ctx)
        }
        (Route::Service(name), "DELETE") => {
            let _p = permit();
            authorize(req, ctx)?;
            let (purge, group) = purge_and_group(query)?;
            services::remove(&name, purge, group.as_deref(), ctx)
        }
        (Route::Confirm, "POST") => {
            let _p = permit();
            authorize(req, ctx)?;
            parse_query(query, &[])?;
            sources::confirm(body, ctx)
        }
        _ => Err(ApiError::MethodNotAllowed(allow)),
    }
}

/// `GET /asn-search`: without the network parts, no such search.
fn asn_search(query: Option<&str>, ctx: &Context) -> Result<Reply, ApiError> {
    #[cfg(feature = "collect")]
    {
        let (q, limit) = search::search_query(query)?;
        // No permit while RIPEstat answers: the search touches no database, and
        // its wait must not hold back the listings.
        search::asn_search(&q, limit, ctx)
    }
    #[cfg(not(feature = "collect"))]
    {
        let _ = (query, ctx);
        Err(ApiError::NotFound(
            "/asn-search needs a build with the collect feature".into(),
        ))
    }
}

/// `purge=` and `group=` of a DELETE of a source or a service: the same two
/// parameters with the same rules for both.
fn purge_and_group(query: Option<&str>) -> Result<(bool, Option<String>), ApiError> {
    let (mut purge, mut group) = (false, None);
    for (k, v) in parse_query(query, &["purge", "group"])? {
        match k.as_str() {
            "group" => group = Some(v),
            _ => purge = parse_bool(&k, &v)?,
        }
    }
    Ok((purge, group))
}

/// The value of `group=` among parsed query parameters (the only one allowed).
fn group_param(params: Vec<(String, String)>) -> Option<String> {
    params.into_iter().next().map(|(_, v)| v)
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
