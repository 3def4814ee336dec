//! The one fetch layer: every upstream request (RIPEstat, DoH, and whatever upstream
//! comes next) goes through [`Fetcher::get`], which runs it with the built-in HTTP
//! client or with the configured `fetch.command`, bounded in size and time the same
//! way, and hands the body to the caller's parser as it streams.

use std::io::{self, Read};
use std::time::{Duration, Instant};

use super::client::{retry_after, Http, TlsSetup};
use super::command;
use super::fetch::{is_https, Cause, SourceError};
use super::url::Url;
use crate::config::FetchConfig;

/// The `User-Agent` of every request (`{user_agent}` of `fetch.command`).
pub const USER_AGENT: &str = concat!("ripe-cidr-collector/", env!("CARGO_PKG_VERSION"));

/// Cap on the body of an answer whose status is not 2xx: only its message is wanted.
const ERROR_BODY_LIMIT: u64 = 64 << 10;

/// How the upstreams of one run are reached; shared by its clients, so that the CA
/// bundle is read at most once.
#[derive(Debug, Clone)]
pub struct Transport {
    /// `fetch.command`, when set.
    command: Option<Vec<String>>,
    /// The built-in client's TLS settings.
    tls: TlsSetup,
}

impl Transport {
    /// The transport `fetch` configures. Without a command, the system CA bundle is
    /// read when one of `urls` is https (and the build has TLS).
    pub fn new(fetch: &FetchConfig, urls: &[&str]) -> Transport {
        let command = fetch.command.clone().filter(|c| !c.is_empty());
        let https = command.is_none() && urls.iter().any(|u| is_https(u));
        Transport {
            command,
            tls: TlsSetup::for_https(https),
        }
    }

    /// The built-in client without CA certificates: plain http only (tests).
    pub fn plain() -> Transport {
        Transport {
            command: None,
            tls: TlsSetup::for_https(false),
        }
    }

    /// Requests run by `argv` (`{url}` and `{user_agent}` replaced).
    pub fn command(argv: Vec<String>) -> Transport {
        Transport {
            command: Some(argv),
            tls: TlsSetup::for_https(false),
        }
    }
}

/// One request.
pub(crate) struct Request<'a> {
    /// The URL, to which `query` is appended.
    pub url: &'a str,
    /// `name=value` pairs, percent-encoded on the way.
    pub query: &'a [(&'a str, &'a str)],
    /// The `Accept` header (the built-in client only: a command sends its own).
    pub accept: &'a str,
    /// The largest body read, in bytes.
    pub limit: u64,
}

/// An answer whose body is being read.
pub(crate) struct Answer<'a> {
    /// The HTTP status; a command that exits with 0 counts as 200.
    pub status: u16,
    /// The server's `Retry-After` in seconds, when given.
    pub retry_after: Option<Duration>,
    /// The body; errors are [`SourceError`]s inside `io::Error` ([`from_io`]).
    pub body: &'a mut dyn Read,
    /// The answer's `ETag` and `Last-Modified` (the built-in client only).
    pub validators: Validators,
}

/// What a conditional request sends back (`If-None-Match`, `If-Modified-Since`).
/// (Each kept in `feed_validators.json` only when given.)
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators {
    /// The last answer's `ETag`.
    pub etag: Option<String>,
    /// The last answer's `Last-Modified`.
    pub last_modified: Option<String>,
}

impl Validators {
    /// Whether there is nothing to send.
    pub fn is_empty(&self) -> bool {
        self.etag.is_none() && self.last_modified.is_none()
    }
}

/// Makes the requests of one kind of source.
#[derive(Debug)]
pub(crate) struct Fetcher {
    timeout: Duration,
    how: How,
    /// The `User-Agent` sent ([`USER_AGENT`] unless an upstream wants its own).
    user_agent: String,
}

#[derive(Debug)]
enum How {
    Builtin(Http),
    Command(Vec<String>),
}

impl Fetcher {
    /// Requests through `transport`, each within `timeout` end to end.
    pub(crate) fn new(transport: &Transport, timeout: Duration) -> Fetcher {
        let how = match &transport.command {
            Some(argv) => How::Command(argv.clone()),
            None => How::Builtin(Http::new(timeout, &transport.tls)),
        };
        Fetcher {
            timeout,
            how,
            user_agent: USER_AGENT.to_string(),
        }
    }

    /// The same, sending `user_agent` (also as `{user_agent}` of `fetch.command`).
    pub(crate) fn with_user_agent(mut self, user_agent: &str) -> Fetcher {
        self.user_agent = user_agent.to_string();
        self
    }

    /// Makes the request and hands its answer to `parse`. A status other than 2xx is
    /// `parse`'s to judge; its body is then capped at 64 KiB.
    pub(crate) fn get<T>(
        &self,
        rq: &Request,
        parse: impl FnOnce(Answer<'_>) -> Result<T, SourceError>,
    ) -> Result<T, SourceError> {
        self.get_if(rq, &Validators::default(), parse)
    }

    /// [`Fetcher::get`], conditional on `since` (a 304 is `parse`'s to judge). A
    /// `fetch.command` cannot send the validators: its requests are plain.
    pub(crate) fn get_if<T>(
        &self,
        rq: &Request,
        since: &Validators,
        parse: impl FnOnce(Answer<'_>) -> Result<T, SourceError>,
    ) -> Result<T, SourceError> {
        // The configured URL's server, named in errors of the connection to it (a
        // fetch command's errors name its program and exit status, as it reports them).
        let host = Url::parse(rq.url)
            .map(|u| u.host_header())
            .unwrap_or_default();
        let named = |e: SourceError| if host.is_empty() { e } else { e.at(&host) };
        match &self.how {
            How::Builtin(http) => self.builtin(http, rq, since, parse).map_err(named),
            How::Command(argv) => {
                let mut url = Url::parse(rq.url)
                    .map_err(|e| SourceError::transport(format!("bad URL: {e}")))?;
                url.add_query(rq.query);
                let deadline = Instant::now() + self.timeout;
                let seconds = self.timeout.as_secs().max(1);
                let url = url.to_string();
                command::run(
                    argv,
                    &url,
                    &self.user_agent,
                    deadline,
                    seconds,
                    rq.limit,
                    |body| {
                        parse(Answer {
                            status: 200,
                            retry_after: None,
                            body,
                            validators: Validators::default(),
                        })
                    },
                )
            }
        }
    }

    /// [`Fetcher::get_if`] with the built-in client.
    fn builtin<T>(
        &self,
        http: &Http,
        rq: &Request,
        since: &Validators,
        parse: impl FnOnce(Answer<'_>) -> Result<T, SourceError>,
    ) -> Result<T, SourceError> {
        let mut headers = vec![("accept", rq.accept), ("user-agent", &self.user_agent)];
        if let Some(e) = &since.etag {
            headers.push(("if-none-match", e));
        }
        if let Some(m) = &since.last_modified {
            headers.push(("if-modified-since", m));
        }
        let mut resp = http.get(rq.url, rq.query, &headers)?;
        // Kept only when short and printable: they go back in a header.
        let keep = |v: Option<&str>| {
            v.filter(|v| v.len() <= 256 && v.bytes().all(|b| (b' '..=b'~').contains(&b)))
                .map(str::to_string)
        };
        let validators = Validators {
            etag: keep(resp.header("etag")),
            last_modified: keep(resp.header("last-modified")),
        };
        let status = resp.status();
        let retry_after = retry_after(&resp);
        let limit = match status {
            200..=299 => rq.limit,
            _ => rq.limit.min(ERROR_BODY_LIMIT),
        };
        let mut body = resp.body(limit);
        parse(Answer {
            status,
            retry_after,
            body: &mut body,
            validators,
        })
    }
}

/// The [`SourceError`] of a failed body read: the fetch layer's own errors travel
/// inside `io::Error`; any other is a transport error.
pub(crate) fn from_io(e: io::Error) -> SourceError {
    if e.get_ref().is_some_and(|inner| inner.is::<SourceError>()) {
        if let Some(Ok(inner)) = e.into_inner().map(|i| i.downcast::<SourceError>()) {
            return *inner;
        }
        return SourceError::transport("lost an error of the body");
    }
    SourceError::Transport {
        message: e.to_string(),
        cause: Some(Cause::new(e)),
    }
}
