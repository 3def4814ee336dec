//! The API's one error type and the one place that turns errors into status codes and
//! bodies.

use super::body::{json_line, Health};
use super::http::RequestError;
use crate::config::ConfigError;
use crate::db::StoreError;
use crate::sources::SourcesError;
use crate::util::json::{ToJson, Writer};

/// Longest error message sent to a client, in characters: messages quote what the
/// client sent, and a megabyte of query string must not come back as a megabyte of
/// error.
const MAX_MESSAGE: usize = 300;

/// Everything a request can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A parameter, path segment or body the client got wrong; the message names it.
    #[error("{0}")]
    BadRequest(String),
    /// The connection layer refused the request (head, framing, body).
    #[error(transparent)]
    Request(#[from] RequestError),
    /// `api.token` is set and the request did not present it.
    #[error("unauthorized")]
    Unauthorized,
    /// A mutating request sent by a page of another origin (its `Origin` names
    /// another host than the one asked); the message names both.
    #[error("{0}")]
    Forbidden(String),
    /// No such resource.
    #[error("{0}")]
    NotFound(String),
    /// The `Host` names another server (DNS rebinding); the message names it.
    #[error("{0}")]
    Misdirected(String),
    /// The path exists but not with this method; the methods it takes.
    #[error("method not allowed (allowed: {0})")]
    MethodNotAllowed(&'static str),
    /// The database failed; details are logged, never sent.
    #[error("{}", describe_store_error(.0))]
    Storage(#[from] StoreError),
    /// `GET /health` found the database failing: 503 with the health fields beside the
    /// error, so that a monitor sees `"status":"error"` and the daemon's last times.
    #[error("{}", describe_store_error(error))]
    Unhealthy {
        /// What failed.
        #[source]
        error: StoreError,
        /// The body to send (already holding `"status":"error"`), in the key order of
        /// the 200 answer.
        health: Box<Health>,
    },
    /// `config.json` could not be read or written: a problem on the server's side, so
    /// 503 naming the file and the problem (a lock the daemon's user cannot open, a
    /// syntax error).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The server is stopping and takes no more requests.
    #[error("shutting down")]
    ShuttingDown,
    /// An upstream asked on the client's behalf (`/asn-search`) failed: 502 with what
    /// failed (the failure texts describe answers, never quote them).
    #[cfg(feature = "collect")]
    #[error("{0}")]
    Upstream(String),
    /// Other clients' searches keep the one search slot busy: 503 with `Retry-After`.
    #[cfg(feature = "collect")]
    #[error("another search is in flight")]
    SearchBusy,
    /// The answers already in memory for clients that have not read them take the
    /// whole budget: 503 with `Retry-After`, rather than memory without bound.
    #[error("too many large answers in flight")]
    Busy,
    /// An answer of about this many bytes would not fit in the answer budget at all.
    #[error("an answer of about {0} bytes")]
    TooLarge(usize),
    /// One client address has this many requests waiting for a handler already.
    #[error("too many requests waiting from {0}")]
    Queued(std::net::IpAddr),
    /// The client closed its connection before its answer was rendered; nobody
    /// reads the reply.
    #[error("the client has gone")]
    ClientGone,
}

impl From<crate::listing::ListingError> for ApiError {
    fn from(e: crate::listing::ListingError) -> Self {
        match e {
            crate::listing::ListingError::Store(e) => ApiError::Storage(e),
            crate::listing::ListingError::UnknownGroup(e) => ApiError::BadRequest(e.to_string()),
        }
    }
}

impl From<SourcesError> for ApiError {
    fn from(e: SourcesError) -> Self {
        match e {
            // The client named a group that is not configured: its mistake.
            SourcesError::Config(ConfigError::UnknownGroup(e)) => {
                ApiError::BadRequest(e.to_string())
            }
            SourcesError::Config(ConfigError::Refused(m)) => ApiError::BadRequest(m),
            SourcesError::Config(e) => ApiError::Config(e),
            SourcesError::Store(e) => ApiError::Storage(e),
            SourcesError::NotFound(m) => ApiError::NotFound(m),
        }
    }
}

/// The status of a request refused by the connection layer.
fn request_status(e: &RequestError) -> u16 {
    match e {
        RequestError::LineTooLong => 414,
        RequestError::HeadTooLarge | RequestError::TooManyFields => 431,
        RequestError::BodyTooLarge => 413,
        RequestError::Expect => 417,
        RequestError::HeadTimeout | RequestError::BodyTimeout => 408,
        RequestError::Version
        | RequestError::Malformed(_)
        | RequestError::BareLf
        | RequestError::NotAscii
        | RequestError::TransferEncoding(_)
        | RequestError::LengthAndChunked
        | RequestError::Length(_)
        | RequestError::Chunked(_)
        | RequestError::BodyCut
        | RequestError::TwoAuthorizations
        | RequestError::Host(_) => 400,
    }
}

/// What an error becomes on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorReply {
    /// The status code.
    pub status: u16,
    /// Extra headers (`Allow`, `WWW-Authenticate`, `Retry-After`).
    pub headers: Vec<(&'static str, String)>,
    /// The JSON body, newline-terminated.
    pub body: Vec<u8>,
}

impl ApiError {
    /// The status code, extra headers and body of this error: the only mapping from
    /// errors to statuses in the API. Server-side failures are logged here with their
    /// details, and the client gets a generic message.
    pub fn reply(self) -> ErrorReply {
        let mut headers = Vec::new();
        let (status, message) = match self {
            ApiError::BadRequest(m) => (400, m),
            ApiError::Request(e) => (request_status(&e), e.to_string()),
            ApiError::Unauthorized => {
                headers.push(("WWW-Authenticate", "Bearer".to_string()));
                (
                    401,
                    "missing or wrong bearer token (Authorization: Bearer <api.token>)".into(),
                )
            }
            ApiError::Forbidden(m) => (403, m),
            ApiError::NotFound(m) => (404, m),
            ApiError::Misdirected(m) => (421, m),
            ApiError::MethodNotAllowed(allow) => {
                headers.push(("Allow", allow.to_string()));
                (405, format!("method not allowed; use {allow}"))
            }
            ApiError::Storage(e) => {
                log::error!("api: {}", describe_store_error(&e));
                if matches!(e, StoreError::Busy(_)) {
                    headers.push(("Retry-After", "1".to_string()));
                }
                (503, "storage unavailable".into())
            }
            ApiError::Unhealthy { error, mut health } => {
                log::error!("api: health: {}", describe_store_error(&error));
                health.error = Some("storage unavailable".into());
                return ErrorReply {
                    status: 503,
                    headers,
                    body: json_line(&*health),
                };
            }
            ApiError::Config(e) => {
                log::error!("api: {e}");
                // The file and the problem, as /health already shows them: the
                // administrator reading a refused listing must see what to fix.
                (503, format!("configuration unavailable: {e}"))
            }
            ApiError::ShuttingDown => (503, "shutting down".into()),
            #[cfg(feature = "collect")]
            ApiError::Upstream(m) => {
                log::warn!("api: {m}");
                (502, m)
            }
            #[cfg(feature = "collect")]
            ApiError::SearchBusy => {
                headers.push(("Retry-After", "5".to_string()));
                (503, "other searches are in flight; try again".into())
            }
            ApiError::Busy => {
                headers.push(("Retry-After", "1".to_string()));
                (503, "too many large answers in flight; try again".into())
            }
            ApiError::Queued(ip) => {
                headers.push(("Retry-After", "1".to_string()));
                (
                    503,
                    format!("too many requests from {ip} waiting for an answer; try again"),
                )
            }
            ApiError::ClientGone => (503, "the client has gone".into()),
            ApiError::TooLarge(n) => (
                503,
                format!(
                    "the answer would take about {n} bytes, over the answer budget of {} bytes; \
                     ask for part of it: page=1, 2, ... (format=routeros), or type=, family=, \
                     group= or aggregate=1",
                    crate::api::answers::ANSWER_BUDGET
                ),
            ),
        };
        let body = json_line(&ErrorBody {
            error: clip(&message),
        });
        ErrorReply {
            status,
            headers,
            body,
        }
    }
}

/// The body of an error answer.
struct ErrorBody {
    error: String,
}

impl ToJson for ErrorBody {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.begin_object();
        w.field("error", &self.error);
        w.end_object();
    }
}

/// A storage error as the API logs it. The store's own text for a database moved
/// aside speaks of "the next run or request"; the API opens the database anew for
/// every request, so here it is exactly the next request that starts a fresh one.
fn describe_store_error(e: &StoreError) -> String {
    match e {
        StoreError::Corrupt {
            cause,
            moved_to: Some(p),
        } => format!(
            "database corrupt ({cause}); moved aside to {}, the next request starts a fresh database",
            p.display()
        ),
        other => other.to_string(),
    }
}

/// `message` cut to [`MAX_MESSAGE`] characters.
fn clip(message: &str) -> String {
    match message.char_indices().nth(MAX_MESSAGE) {
        Some((i, _)) => format!("{}...", &message[..i]),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(r: &ErrorReply) -> serde_json::Value {
        serde_json::from_slice(&r.body).unwrap()
    }

    #[test]
    fn statuses() {
        let cases: Vec<(ApiError, u16)> = vec![
            (ApiError::BadRequest("x".into()), 400),
            (ApiError::Unauthorized, 401),
            (ApiError::Forbidden("x".into()), 403),
            (ApiError::NotFound("x".into()), 404),
            (ApiError::MethodNotAllowed("GET, HEAD"), 405),
            (ApiError::Request(RequestError::BodyTooLarge), 413),
            (ApiError::Request(RequestError::LineTooLong), 414),
            (ApiError::Request(RequestError::HeadTimeout), 408),
            (
                ApiError::Storage(StoreError::Other("disk on fire at /secret".into())),
                503,
            ),
            (ApiError::ShuttingDown, 503),
            (ApiError::Busy, 503),
            (ApiError::Queued([127, 0, 0, 2].into()), 503),
            (ApiError::ClientGone, 503),
            (ApiError::TooLarge(13 << 20), 503),
        ];
        for (e, status) in cases {
            let r = e.reply();
            assert_eq!(r.status, status);
            let v = parse(&r);
            let msg = v["error"].as_str().unwrap();
            assert!(!msg.contains("/secret"), "{msg}");
            assert!(r.body.ends_with(b"}\n"));
        }
        let r = ApiError::MethodNotAllowed("DELETE").reply();
        assert_eq!(r.headers, vec![("Allow", "DELETE".to_string())]);
        let busy = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY);
        let r = ApiError::Storage(StoreError::Busy(Box::new(rusqlite::Error::SqliteFailure(
            busy, None,
        ))))
        .reply();
        assert_eq!(r.headers, vec![("Retry-After", "1".to_string())]);
    }

    #[test]
    fn unhealthy_keeps_fields_and_hides_details() {
        let health = Health {
            status: "error",
            counts: None,
            last_success: Some("2026-11-30T09:00:00Z".into()),
            last_error: None,
            heartbeat: None,
            error: None,
        };
        let r = ApiError::Unhealthy {
            error: StoreError::Other("/var/lib/x: permission denied".into()),
            health: Box::new(health),
        }
        .reply();
        assert_eq!(r.status, 503);
        // The order of the 200 answer, the error last.
        assert_eq!(
            String::from_utf8(r.body).unwrap(),
            "{\"status\":\"error\",\"last_success\":\"2026-11-30T09:00:00Z\",\
             \"last_error\":null,\"heartbeat\":null,\"error\":\"storage unavailable\"}\n"
        );
    }

    #[test]
    fn corrupt_database_message_fits_the_api() {
        let notadb = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_NOTADB);
        let e = ApiError::Storage(StoreError::Corrupt {
            cause: Box::new(rusqlite::Error::SqliteFailure(notadb, None)),
            moved_to: Some("/data/ripe.db.corrupt-1".into()),
        });
        let m = e.to_string();
        assert!(
            m.contains("the next request starts a fresh database"),
            "{m}"
        );
        assert!(!m.contains("next start"), "{m}");
    }

    #[test]
    fn long_messages_are_clipped() {
        let r = ApiError::BadRequest(format!("invalid {}", "é".repeat(10_000))).reply();
        let v = parse(&r);
        assert!(v["error"].as_str().unwrap().chars().count() <= MAX_MESSAGE + 3);
    }
}
