//! What every upstream client shares: the result of one source ([`Fetched`]), why a
//! source failed ([`SourceError`]) and how the values of an answer are kept
//! ([`Keep`]). The transports (the built-in HTTP client, the `fetch.command`) are
//! behind the one fetch layer in `fetcher`.

use std::fmt;
use std::sync::Arc;

use ipnet::IpNet;

use crate::source::Kind;

/// The values one source produced, kept compact (18 bytes each) until the merge
/// turns them into text one source at a time: a 100,000-prefix answer costs 1.8 MB
/// here instead of the 5.6 MB of as many `String`s.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fetched {
    /// Prefixes (host bits cleared) or addresses (as /32 and /128), sorted, without
    /// duplicates.
    pub values: Vec<IpNet>,
    /// How many values in the answer were invalid and left out (each is logged).
    pub skipped: usize,
    /// The ASN upstream that answered (`ripestat`, `bgptools`, `ipverse`); `None`
    /// for the other kinds.
    pub upstream: Option<&'static str>,
    /// A feed's validators for the next conditional request.
    pub validators: Option<super::Validators>,
    /// A feed answered 304: nothing changed since the validators sent; the stored
    /// values count as seen again.
    pub not_modified: bool,
    /// The share of the values answers may hold at once that these values count in.
    pub(crate) lease: super::budget::Lease,
}

impl Fetched {
    /// Sorts and deduplicates `values`.
    pub(crate) fn new(mut values: Vec<IpNet>, skipped: usize) -> Fetched {
        crate::util::sort::sort(&mut values);
        values.dedup();
        values.shrink_to_fit();
        Fetched {
            values,
            skipped,
            upstream: None,
            validators: None,
            not_modified: false,
            lease: super::budget::Lease::default(),
        }
    }

    /// The values as stored for a source of `kind`: `192.0.2.0/24` for ASNs, the bare
    /// address for host names.
    pub fn texts(&self, kind: Kind) -> Vec<String> {
        self.values.iter().map(|v| text(kind, v)).collect()
    }

    /// Moves the values into the store's compact form through one text buffer,
    /// giving back the parsed ones a chunk at a time: never held whole twice (4.5 MB
    /// parsed beside 2 MB compact for 250,000; issue 38, item 15).
    pub fn take_values(&mut self, kind: Kind) -> crate::db::Values {
        use std::fmt::Write;
        const CHUNK: usize = 16_384;
        let v4 = self.values.iter().filter(|v| v.addr().is_ipv4()).count();
        let mut values = crate::db::Values::with_capacity(v4, self.values.len() - v4);
        let mut buf = String::with_capacity(48);
        while !self.values.is_empty() {
            let from = self.values.len().saturating_sub(CHUNK);
            for v in self.values.drain(from..) {
                buf.clear();
                let _ = match kind {
                    Kind::Fqdn => write!(buf, "{}", v.addr()),
                    Kind::Asn | Kind::Feed | Kind::Country => write!(buf, "{v}"),
                };
                values.push(&buf);
            }
            self.values.shrink_to_fit(); // mapped (`budget::one_heap`): given back
        }
        values
    }
}

/// One value as stored for a source of `kind`.
pub fn text(kind: Kind, v: &IpNet) -> String {
    match kind {
        Kind::Fqdn => v.addr().to_string(),
        Kind::Asn | Kind::Feed | Kind::Country => v.to_string(),
    }
}

/// The error underneath a [`SourceError`] (an I/O or TLS error, a failed `spawn`),
/// kept as its `source()`. Shared so that reports stay cheap to clone; compared by
/// its text, so that reports compare too.
#[derive(Debug, Clone)]
pub struct Cause(Arc<dyn std::error::Error + Send + Sync>);

impl Cause {
    /// Wraps `e`.
    pub fn new(e: impl std::error::Error + Send + Sync + 'static) -> Cause {
        Cause(Arc::new(e))
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Cause) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}

impl Eq for Cause {}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Why one source could not be fetched. The messages do not name the source: the
/// caller prefixes it (`AS62041: timed out after 30 s`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    /// The connection failed: refused, reset, the server's name did not resolve, a
    /// broken answer ...
    #[error("connection failed: {message}")]
    Transport {
        /// What failed.
        message: String,
        /// The I/O error, when there is one.
        #[source]
        cause: Option<Cause>,
    },
    /// TLS failed, or https is needed and cannot be done (no CA certificates, or a
    /// build without TLS).
    #[error("TLS: {message}")]
    Tls {
        /// What failed.
        message: String,
        /// The TLS error, when there is one.
        #[source]
        cause: Option<Cause>,
    },
    /// A redirect that is not followed: from https to http, or too many.
    #[error("redirect refused: {0}")]
    Redirect(String),
    /// No answer within the timeout.
    #[error("timed out after {seconds} s")]
    Timeout {
        /// The timeout, in seconds.
        seconds: u64,
    },
    /// The server answered with an HTTP status other than 2xx.
    #[error("HTTP status {status}")]
    Http {
        /// The status code.
        status: u16,
    },
    /// The answer is not the expected JSON shape.
    #[error("unexpected answer: {0}")]
    BadBody(String),
    /// The server broke HTTP framing (a bad `Content-Length`, a broken chunked
    /// body): the same request gets the same answer, so not retried early.
    #[error("the server broke HTTP: {0}")]
    Protocol(String),
    /// The answer is larger than allowed.
    #[error("answer larger than the limit of {}", human_bytes(*limit))]
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// The answer lists more values than one source may have.
    #[error("answer lists more than {limit} values")]
    TooMany {
        /// The limit.
        limit: usize,
    },
    /// An upstream said no in its own words: RIPEstat answered `"status": "error"`,
    /// bgp.tools cannot answer before its next download.
    #[error("{upstream} error{}: {message}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
    Upstream {
        /// Who said it (`RIPEstat`, `bgp.tools`).
        upstream: &'static str,
        /// The HTTP status of the answer, when it was not 200.
        status: Option<u16>,
        /// What RIPEstat said (its `messages`).
        message: String,
    },
    /// The `fetch.command` could not be run, or exited with a failure.
    #[error("fetch command {program}: {message}")]
    Command {
        /// The program (`uclient-fetch`).
        program: String,
        /// What went wrong: the exit status, classified by its error output (which
        /// goes to the log only).
        message: String,
        /// Whether waiting may help, judged as the built-in client's error would be.
        transient: bool,
        /// The error of starting or reading it, when there is one.
        #[source]
        cause: Option<Cause>,
    },
    /// The host name does not exist.
    #[error("no such host name (NXDOMAIN)")]
    NxDomain,
    /// Any other DNS failure (SERVFAIL, resolver unreachable, ...).
    #[error("DNS lookup failed: {0}")]
    Dns(String),
    /// The source itself is not valid (not an ASN, not a host name).
    #[error("{0}")]
    Invalid(String),
    /// Every ASN upstream failed: the error kept, with the upstream it came from.
    #[error("{upstream}: {error}")]
    Via {
        /// The upstream (`ripestat`, `bgptools`, `ipverse`).
        upstream: &'static str,
        /// Its error.
        error: Box<SourceError>,
    },
}

impl SourceError {
    /// Whether trying again soon may help: transport errors, timeouts, 429 and 5xx,
    /// a DNS failure other than NXDOMAIN (SERVFAIL, no answer, no network: the WAN
    /// down at boot), and a fetch command's failure of one of these kinds.
    pub fn is_transient(&self) -> bool {
        match self {
            SourceError::Transport { .. } | SourceError::Timeout { .. } | SourceError::Dns(_) => {
                true
            }
            SourceError::Command { transient, .. } => *transient,
            SourceError::Http { status } => *status == 429 || *status >= 500,
            SourceError::Upstream {
                status: Some(status),
                ..
            } => *status == 429 || *status >= 500,
            SourceError::Via { error, .. } => error.is_transient(),
            _ => false,
        }
    }

    /// A transport error without an underlying error value.
    /// The same error naming `host`, the server of the configured URL, where the
    /// message is about the connection to it (never a host an answer named: a
    /// redirect's target is the answer's text).
    pub(crate) fn at(self, host: &str) -> SourceError {
        match self {
            SourceError::Transport { message, cause } => SourceError::Transport {
                message: format!("{host}: {message}"),
                cause,
            },
            SourceError::Tls { message, cause } => SourceError::Tls {
                message: format!("{host}: {message}"),
                cause,
            },
            SourceError::Protocol(m) => SourceError::Protocol(format!("{host}: {m}")),
            other => other,
        }
    }

    pub(crate) fn transport(message: impl Into<String>) -> SourceError {
        SourceError::Transport {
            message: message.into(),
            cause: None,
        }
    }

    /// A TLS error without an underlying error value.
    pub(crate) fn tls(message: impl Into<String>) -> SourceError {
        SourceError::Tls {
            message: message.into(),
            cause: None,
        }
    }
}

/// How many invalid values of one answer are logged one by one; the rest are counted
/// in one line, so that a broken upstream cannot flood the log.
const LOGGED_INVALID: usize = 5;

/// Most values one source may have. Far above any real autonomous system (the
/// largest announce some tens of thousands), and what keeps a hostile answer within
/// the body cap from filling memory with valid prefixes: 250,000 × 18 bytes.
pub const MAX_VALUES: usize = 250_000;

/// Keeps the valid values of one answer as it is read, counting (and logging the
/// first [`LOGGED_INVALID`] of) the invalid ones as `<context>: <why>`.
pub(crate) struct Keep {
    values: Vec<IpNet>,
    skipped: usize,
    context: String,
    lease: super::budget::Lease,
}

impl Keep {
    /// Nothing kept yet; `context` prefixes the log lines.
    pub(crate) fn new(context: String) -> Keep {
        Keep {
            values: Vec::new(),
            skipped: 0,
            context,
            lease: super::budget::Lease::default(),
        }
    }

    /// Keeps a value, or counts and logs why it is not kept. Fails once more than
    /// [`MAX_VALUES`] are kept.
    pub(crate) fn push(&mut self, v: Result<IpNet, String>) -> Result<(), SourceError> {
        match v {
            Ok(_) if self.values.len() >= MAX_VALUES => {
                Err(SourceError::TooMany { limit: MAX_VALUES })
            }
            Ok(v) => {
                // Counted before it is kept: a large answer waits while another is.
                if self.values.len() % super::budget::CHUNK == 0 {
                    self.lease.grow();
                }
                self.values.push(v);
                Ok(())
            }
            Err(e) => {
                self.skipped += 1;
                if self.skipped <= LOGGED_INVALID {
                    log::warn!("{}: {e}", self.context);
                }
                Ok(())
            }
        }
    }

    /// The values kept, sorted and without duplicates.
    pub(crate) fn finish(self) -> Fetched {
        if self.skipped > LOGGED_INVALID {
            log::warn!(
                "{}: {} more invalid values",
                self.context,
                self.skipped - LOGGED_INVALID
            );
        }
        self.lease.read();
        let mut f = Fetched::new(self.values, self.skipped);
        f.lease = self.lease;
        f
    }
}

/// `16 MiB`, `1 KiB` or `1000 bytes`, for messages.
fn human_bytes(n: u64) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n % (1 << 10) == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// Whether `url` is an https URL (the only kind that needs CA certificates).
pub fn is_https(url: &str) -> bool {
    url.get(..6)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https:"))
}

/// What the start of an answer that is not what was asked looks like, for failure
/// texts, which never quote it: they end up in `status.json`, the web page and LuCI,
/// and an upstream (or whatever a redirect reached) must not put its text there.
pub(crate) fn looks_like(start: &[u8]) -> &'static str {
    let t = start
        .strip_prefix(b"\xef\xbb\xbf")
        .unwrap_or(start)
        .trim_ascii_start();
    let lower = t.to_ascii_lowercase();
    let has = |w: &[u8]| lower.windows(w.len()).any(|x| x == w);
    if t.is_empty() {
        "an empty answer"
    } else if t[0] == b'<' && (has(b"<html") || has(b"<!doctype html")) {
        "an HTML page"
    } else if t[0] == b'<' {
        "markup (XML or HTML)"
    } else if std::str::from_utf8(t)
        .is_ok_and(|s| !s.contains(|c: char| c.is_control() && !c.is_whitespace()))
    {
        "text"
    } else {
        "binary data"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages() {
        assert_eq!(
            SourceError::TooLarge { limit: 16 << 20 }.to_string(),
            "answer larger than the limit of 16 MiB"
        );
        assert_eq!(
            SourceError::Timeout { seconds: 30 }.to_string(),
            "timed out after 30 s"
        );
        assert_eq!(
            SourceError::Upstream {
                upstream: "RIPEstat",
                status: Some(400),
                message: "bad".into()
            }
            .to_string(),
            "RIPEstat error (HTTP 400): bad"
        );
        assert_eq!(
            SourceError::Upstream {
                upstream: "bgp.tools",
                status: None,
                message: "bad".into()
            }
            .to_string(),
            "bgp.tools error: bad"
        );
        let via = SourceError::Via {
            upstream: "ipverse",
            error: Box::new(SourceError::Http { status: 503 }),
        };
        assert_eq!(via.to_string(), "ipverse: HTTP status 503");
        assert!(via.is_transient());
        assert!(SourceError::Http { status: 503 }.is_transient());
        assert!(SourceError::Http { status: 429 }.is_transient());
        assert!(!SourceError::Http { status: 404 }.is_transient());
        // Only NXDOMAIN is a DNS answer that waiting cannot change.
        assert!(SourceError::Dns("Temporary failure in name resolution".into()).is_transient());
        assert!(SourceError::Dns("DoH status 2 (SERVFAIL)".into()).is_transient());
        assert!(!SourceError::NxDomain.is_transient());
        assert!(!SourceError::BadBody(String::new()).is_transient());
        assert!(!SourceError::Redirect(String::new()).is_transient());
        assert!(!SourceError::Protocol(String::new()).is_transient());
    }

    #[test]
    fn causes_are_kept() {
        use std::error::Error;
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let e = SourceError::Transport {
            message: "refused".into(),
            cause: Some(Cause::new(io)),
        };
        assert_eq!(e.to_string(), "connection failed: refused");
        assert_eq!(e.source().unwrap().to_string(), "refused");
        assert_eq!(e.clone(), e);
    }

    #[test]
    fn keep_counts_and_caps() {
        let mut k = Keep::new("t".into());
        k.push(Ok("10.0.0.0/8".parse().unwrap())).unwrap();
        k.push(Ok("10.0.0.0/8".parse().unwrap())).unwrap();
        k.push(Err("bad".into())).unwrap();
        let f = k.finish();
        assert_eq!(f.texts(Kind::Asn), ["10.0.0.0/8"]);
        assert_eq!(f.skipped, 1);
        let mut k = Keep::new("t".into());
        let v: IpNet = "192.0.2.1/32".parse().unwrap();
        for _ in 0..MAX_VALUES {
            k.push(Ok(v)).unwrap();
        }
        assert_eq!(
            k.push(Ok(v)),
            Err(SourceError::TooMany { limit: MAX_VALUES })
        );
        assert_eq!(Fetched::new(vec![v], 0).texts(Kind::Fqdn), ["192.0.2.1"]);
    }

    #[test]
    fn answers_are_described_not_quoted() {
        assert_eq!(looks_like(b"  <!DOCTYPE HTML><p>x"), "an HTML page");
        assert_eq!(looks_like(b"\xef\xbb\xbf<html><script>"), "an HTML page");
        assert_eq!(looks_like(b"<?xml version='1.0'?>"), "markup (XML or HTML)");
        assert_eq!(looks_like(b"Service down\r\n"), "text");
        assert_eq!(looks_like(b"\x1f\x8b\x08"), "binary data");
        assert_eq!(looks_like(b" \n"), "an empty answer");
    }
}

/// The std-only fake upstream shared with the integration tests.
#[cfg(test)]
#[path = "../../tests/it/upstream.rs"]
mod upstream;

/// A scripted HTTP server on 127.0.0.1 for the client tests.
#[cfg(test)]
pub(crate) mod fake {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::upstream;

    /// One scripted answer.
    #[derive(Clone)]
    pub(crate) struct Reply {
        pub status: u16,
        pub body: Vec<u8>,
        pub headers: Vec<String>,
        pub delay: Duration,
        /// Send without `Content-Length` (chunked).
        pub chunked: bool,
    }

    impl Reply {
        pub(crate) fn new(status: u16, body: impl Into<Vec<u8>>) -> Reply {
            Reply {
                status,
                body: body.into(),
                headers: Vec::new(),
                delay: Duration::ZERO,
                chunked: false,
            }
        }
        pub(crate) fn header(mut self, h: &str) -> Reply {
            self.headers.push(h.into());
            self
        }
        pub(crate) fn delay(mut self, d: Duration) -> Reply {
            self.delay = d;
            self
        }
        pub(crate) fn chunked(mut self) -> Reply {
            self.chunked = true;
            self
        }
    }

    /// What the server was asked.
    #[derive(Debug, Clone)]
    pub(crate) struct Seen {
        pub url: String,
        pub accept: Option<String>,
        pub user_agent: Option<String>,
    }

    /// The server; stops when dropped.
    pub(crate) struct FakeServer {
        pub base: String,
        seen: Arc<Mutex<Vec<Seen>>>,
        _server: upstream::FakeServer,
    }

    impl FakeServer {
        /// Answers requests with `replies` in order, repeating the last one; `pick`
        /// may choose by URL instead.
        pub(crate) fn start(replies: Vec<Reply>) -> FakeServer {
            FakeServer::start_with(move |i, _url| replies[i.min(replies.len() - 1)].clone())
        }

        /// Answers each request with `pick(index, url)`.
        pub(crate) fn start_with(
            pick: impl Fn(usize, &str) -> Reply + Send + Sync + 'static,
        ) -> FakeServer {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let (log, count) = (seen.clone(), AtomicUsize::new(0));
            let server = upstream::FakeServer::start(move |rq| {
                log.lock().unwrap().push(Seen {
                    url: rq.url.clone(),
                    accept: rq.header("accept").map(str::to_string),
                    user_agent: rq.header("user-agent").map(str::to_string),
                });
                let r = pick(count.fetch_add(1, Ordering::SeqCst), &rq.url);
                let mut headers: Vec<(String, String)> = r
                    .headers
                    .iter()
                    .filter_map(|h| h.split_once(':'))
                    .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                    .collect();
                if r.chunked {
                    headers.push(("Transfer-Encoding".into(), "chunked".into()));
                }
                upstream::Reply {
                    status: r.status,
                    body: r.body,
                    delay: r.delay,
                    headers,
                }
            });
            FakeServer {
                base: server.url(""),
                seen,
                _server: server,
            }
        }

        /// The requests so far.
        pub(crate) fn seen(&self) -> Vec<Seen> {
            self.seen.lock().unwrap().clone()
        }
    }
}
