//! RIPEstat Data API client: the prefixes an autonomous system announces
//! (`announced-prefixes` data call).
//!
//! Only `status`, `status_code`, `messages` and `data.prefixes[].prefix` are read; the
//! answer is parsed straight from the received bytes, borrowing the prefix strings,
//! so a large AS costs little more memory than its body.

use std::borrow::Cow;
use std::thread;
use std::time::Duration;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;

use super::fetch::{
    is_https, keep_valid, retry_after, snippet, CaRoots, Fetched, Http, SourceError,
};
use crate::config::RipeConfig;

/// Default cap on the size of an answer. The largest networks announce some ten
/// thousand prefixes, a few MiB of JSON; a cap keeps a broken or hostile server from
/// exhausting a router's memory.
pub const DEFAULT_BODY_LIMIT: u64 = 16 << 20;

/// Cap on the body of an error answer: only its message is wanted.
const ERROR_BODY_LIMIT: u64 = 64 << 10;

/// Longest single wait between two attempts, whatever the backoff says.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A RIPEstat client for one collection run.
#[derive(Debug)]
pub struct RipeClient {
    http: Http,
    url: String,
    sourceapp: String,
    min_peers_seeing: Option<u64>,
    /// Extra attempts after a 429, 5xx, transport error or timeout (2 means at most
    /// 3 requests).
    pub retries: u32,
    /// Wait before the first retry; doubled for each further one (1 s, 2 s, 4 s ...).
    pub backoff: Duration,
    /// Longest `Retry-After` that is waited for. When the server asks for a longer
    /// pause, this run gives up on the source instead of hammering it early: the
    /// next run comes soon enough and the stored prefixes stay until their TTL.
    pub max_retry_after: Duration,
    /// Largest answer accepted, in bytes.
    pub body_limit: u64,
}

impl RipeClient {
    /// A client with the settings of `cfg`, the system CA bundle (read only when the
    /// URL is https), a 1 s backoff, a 10 s `Retry-After` limit and a
    /// [`DEFAULT_BODY_LIMIT`].
    pub fn new(cfg: &RipeConfig) -> RipeClient {
        let roots = if is_https(&cfg.url) {
            CaRoots::system()
        } else {
            CaRoots::not_loaded()
        };
        RipeClient::with_roots(cfg, &roots)
    }

    /// Like [`RipeClient::new`], with root certificates loaded by the caller (shared
    /// with the DoH client of the same run).
    pub fn with_roots(cfg: &RipeConfig, roots: &CaRoots) -> RipeClient {
        RipeClient {
            http: Http::new(Duration::from_secs(cfg.timeout_seconds), roots),
            url: cfg.url.clone(),
            sourceapp: cfg.sourceapp.clone(),
            min_peers_seeing: cfg.min_peers_seeing,
            retries: cfg.retries,
            backoff: Duration::from_secs(1),
            max_retry_after: Duration::from_secs(10),
            body_limit: DEFAULT_BODY_LIMIT,
        }
    }

    /// The prefixes announced by `asn` (`"62041"`; `"AS62041"` is accepted too),
    /// normalised (host bits cleared), sorted and without duplicates. Invalid
    /// prefixes are logged, counted in [`Fetched::skipped`] and left out.
    pub fn fetch(&self, asn: &str) -> Result<Fetched, SourceError> {
        let asn = crate::source::normalize_asn(asn).map_err(SourceError::Invalid)?;
        let mut attempt = 0;
        loop {
            let (error, asked_wait) = match self.fetch_once(&asn) {
                Ok(fetched) => return Ok(fetched),
                Err(e) => e,
            };
            if attempt >= self.retries || !error.is_transient() {
                return Err(error);
            }
            let backoff = self
                .backoff
                .saturating_mul(1 << attempt.min(16))
                .min(MAX_BACKOFF);
            let wait = match asked_wait {
                Some(asked) if asked > self.max_retry_after => {
                    log::info!(
                        "AS{asn}: {error}; RIPEstat asks to wait {} s, longer than this run \
                         waits, so giving up until the next run",
                        asked.as_secs()
                    );
                    return Err(error);
                }
                Some(asked) => asked.max(backoff),
                None => backoff,
            };
            attempt += 1;
            log::info!(
                "AS{asn}: {error}; retrying in {:.1} s (retry {attempt} of {})",
                wait.as_secs_f32(),
                self.retries
            );
            thread::sleep(wait);
        }
    }

    /// One request. On failure also returns the server's `Retry-After`, if any.
    fn fetch_once(&self, asn: &str) -> Result<Fetched, (SourceError, Option<Duration>)> {
        let resource = format!("AS{asn}");
        let min_peers = self.min_peers_seeing.map(|n| n.to_string());
        let mut query = vec![
            ("resource", resource.as_str()),
            ("sourceapp", self.sourceapp.as_str()),
        ];
        if let Some(n) = &min_peers {
            query.push(("min_peers_seeing", n.as_str()));
        }
        let mut resp = self
            .http
            .get(&self.url, &query, &[("accept", "application/json")])
            .map_err(|e| (e, None))?;
        let status = resp.status();
        if !(200..300).contains(&status) {
            let wait = retry_after(&resp);
            // RIPEstat explains a refused query in a JSON body (400 "The parameter
            // 'resource' is required."); use that message when there is one.
            let error = match self.http.read_body(&mut resp, ERROR_BODY_LIMIT) {
                Ok(body) => match parse(&body) {
                    Ok(Parsed::Error { message, .. }) => SourceError::Upstream {
                        status: Some(status),
                        message,
                    },
                    _ => SourceError::Http { status },
                },
                Err(_) => SourceError::Http { status },
            };
            return Err((error, wait));
        }
        let body = self
            .http
            .read_body(&mut resp, self.body_limit)
            .map_err(|e| (e, None))?;
        drop(resp);
        match parse(&body).map_err(|e| (e, None))? {
            Parsed::Prefixes(list) => Ok(normalize(asn, list)),
            Parsed::Error {
                status_code,
                message,
            } => Err((
                SourceError::Upstream {
                    status: status_code.filter(|&c| c != 200),
                    message,
                },
                None,
            )),
        }
    }
}

/// The part of a RIPEstat answer that is read. Other keys are ignored.
#[derive(Deserialize)]
struct Answer<'a> {
    #[serde(borrow)]
    status: Option<Cow<'a, str>>,
    status_code: Option<Value>,
    messages: Option<Value>,
    #[serde(borrow)]
    data: Option<Data<'a>>,
}

#[derive(Deserialize)]
struct Data<'a> {
    #[serde(borrow)]
    prefixes: Option<Vec<Entry<'a>>>,
}

/// One `data.prefixes[]` entry; its `timelines` and other keys are skipped.
#[derive(Deserialize)]
struct Entry<'a> {
    #[serde(borrow)]
    prefix: Option<Text<'a>>,
}

/// A JSON value that should be a string; anything else is kept as "not a string" so
/// that one odd entry is skipped instead of failing the whole answer.
#[derive(Deserialize)]
#[serde(untagged)]
enum Text<'a> {
    Str(#[serde(borrow)] Cow<'a, str>),
    Other(IgnoredAny),
}

/// What an answer says.
enum Parsed<'a> {
    /// `"status": "ok"`: the prefixes, as given (`None`: not a string).
    Prefixes(Vec<Option<Cow<'a, str>>>),
    /// `"status"` other than `ok`.
    Error {
        status_code: Option<u16>,
        message: String,
    },
}

/// Parses a RIPEstat answer.
fn parse(body: &[u8]) -> Result<Parsed<'_>, SourceError> {
    let answer: Answer = serde_json::from_slice(body).map_err(|e| {
        let what = if e.is_data() {
            "not the RIPEstat JSON shape"
        } else {
            "not JSON"
        };
        SourceError::BadBody(format!("{what} ({e}), starting {}", snippet(body)))
    })?;
    match answer.status.as_deref() {
        Some("ok") | None => {}
        Some(_) => {
            return Ok(Parsed::Error {
                status_code: answer
                    .status_code
                    .as_ref()
                    .and_then(Value::as_u64)
                    .and_then(|c| u16::try_from(c).ok()),
                message: upstream_message(answer.messages.as_ref()),
            })
        }
    }
    let prefixes = answer
        .data
        .and_then(|d| d.prefixes)
        .ok_or_else(|| SourceError::BadBody("no data.prefixes list in the answer".into()))?;
    Ok(Parsed::Prefixes(
        prefixes
            .into_iter()
            .map(|e| match e.prefix {
                Some(Text::Str(s)) => Some(s),
                _ => None,
            })
            .collect(),
    ))
}

/// The text of RIPEstat's `messages` (`[["error", "text"], ...]`): the error
/// messages, or all of them when none is marked as an error.
fn upstream_message(messages: Option<&Value>) -> String {
    let mut errors = Vec::new();
    let mut others = Vec::new();
    for m in messages.and_then(Value::as_array).into_iter().flatten() {
        match m.as_array().map(Vec::as_slice) {
            Some([level, text, ..]) => {
                if let Some(t) = text.as_str() {
                    if level.as_str() == Some("error") {
                        errors.push(t);
                    } else {
                        others.push(t);
                    }
                }
            }
            _ => others.extend(m.as_str()),
        }
    }
    let chosen = if errors.is_empty() { others } else { errors };
    let mut text = chosen.join("; ");
    if text.is_empty() {
        text = "no message given".into();
    }
    // Keep status.json and the log readable whatever the server sends.
    if text.len() > 300 {
        let mut end = 300;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

/// Normalises the prefixes of an answer, logging and counting the invalid ones.
fn normalize(asn: &str, list: Vec<Option<Cow<'_, str>>>) -> Fetched {
    let items = list
        .iter()
        .map(|p| p.as_deref().ok_or("prefix is missing or not a string"));
    let context = format!("AS{asn}: skipped from RIPEstat");
    let (values, skipped) = keep_valid(items, crate::source::normalize_prefix, &context);
    Fetched::new(values, skipped)
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::super::fetch::fake::{FakeServer, Reply};
    use super::*;

    const FULL: &str = include_str!("../../tests/fixtures/ripestat/AS62041.json");
    const EMPTY: &str = include_str!("../../tests/fixtures/ripestat/empty.json");
    const ERROR: &str = include_str!("../../tests/fixtures/ripestat/error.json");

    fn client(server: &FakeServer, path: &str, retries: u32) -> RipeClient {
        let cfg = RipeConfig {
            url: format!("{}{path}", server.base),
            min_peers_seeing: None,
            sourceapp: "test-app".into(),
            timeout_seconds: 1,
            retries,
        };
        let mut c = RipeClient::new(&cfg);
        c.backoff = Duration::from_millis(10);
        c
    }

    fn answer(prefixes: &str) -> String {
        format!(r#"{{"status":"ok","status_code":200,"data":{{"prefixes":[{prefixes}]}}}}"#)
    }

    #[test]
    fn normal_answer() {
        let s = FakeServer::start(vec![Reply::new(200, FULL)]);
        let f = client(&s, "/data/announced-prefixes/data.json", 2)
            .fetch("62041")
            .unwrap();
        assert_eq!(f.skipped, 0);
        assert_eq!(f.values.len(), 12);
        for p in ["91.108.4.0/22", "149.154.160.0/20", "2001:b28:f23d::/48"] {
            assert!(f.values.contains(&p.to_string()), "{p}");
        }
        let seen = s.seen();
        assert_eq!(seen.len(), 1);
        assert_eq!(
            seen[0].url,
            "/data/announced-prefixes/data.json?resource=AS62041&sourceapp=test-app"
        );
    }

    #[test]
    fn query_parameters() {
        let s = FakeServer::start(vec![Reply::new(200, EMPTY)]);
        let mut c = client(&s, "/d.json?preferred_version=1.2", 0);
        c.min_peers_seeing = Some(10);
        assert_eq!(c.fetch("AS13335").unwrap(), Fetched::default());
        assert_eq!(
            s.seen()[0].url,
            "/d.json?preferred_version=1.2&resource=AS13335&sourceapp=test-app&min_peers_seeing=10"
        );
    }

    #[test]
    fn empty_answer_is_success() {
        let s = FakeServer::start(vec![Reply::new(200, EMPTY)]);
        assert_eq!(
            client(&s, "/", 2).fetch("64496").unwrap(),
            Fetched::default()
        );
    }

    #[test]
    fn error_answer_with_400() {
        let s = FakeServer::start(vec![Reply::new(400, ERROR)]);
        let e = client(&s, "/", 2).fetch("62041").unwrap_err();
        assert_eq!(
            e,
            SourceError::Upstream {
                status: Some(400),
                message: "The parameter 'resource' is required.".into()
            }
        );
        assert!(
            e.to_string()
                .contains("The parameter 'resource' is required."),
            "{e}"
        );
        assert_eq!(s.seen().len(), 1, "a 4xx is not retried");
    }

    #[test]
    fn error_status_with_200() {
        let s = FakeServer::start(vec![Reply::new(200, ERROR)]);
        let e = client(&s, "/", 2).fetch("62041").unwrap_err();
        assert_eq!(
            e,
            SourceError::Upstream {
                status: Some(400),
                message: "The parameter 'resource' is required.".into()
            }
        );
        let body = r#"{"status":"error","data":{},"messages":[]}"#;
        let s = FakeServer::start(vec![Reply::new(200, body)]);
        let e = client(&s, "/", 0).fetch("62041").unwrap_err();
        assert_eq!(e.to_string(), "RIPEstat error: no message given");
    }

    #[test]
    fn server_error_is_retried_then_fails() {
        let s = FakeServer::start(vec![Reply::new(500, "<html>oops</html>")]);
        let e = client(&s, "/", 2).fetch("62041").unwrap_err();
        assert_eq!(e, SourceError::Http { status: 500 });
        assert_eq!(s.seen().len(), 3);

        let s = FakeServer::start(vec![Reply::new(503, "")]);
        let e = client(&s, "/", 0).fetch("62041").unwrap_err();
        assert_eq!(e.to_string(), "HTTP status 503");
        assert_eq!(s.seen().len(), 1);
    }

    #[test]
    fn not_found_is_not_retried() {
        let s = FakeServer::start(vec![Reply::new(404, "nope")]);
        let e = client(&s, "/", 2).fetch("62041").unwrap_err();
        assert_eq!(e, SourceError::Http { status: 404 });
        assert_eq!(s.seen().len(), 1);
    }

    #[test]
    fn too_many_requests_then_success() {
        let s = FakeServer::start(vec![
            Reply::new(429, "slow down").header("Retry-After: 1"),
            Reply::new(200, FULL),
        ]);
        let started = Instant::now();
        let f = client(&s, "/", 2).fetch("62041").unwrap();
        assert_eq!(f.values.len(), 12);
        assert_eq!(s.seen().len(), 2);
        assert!(
            started.elapsed() >= Duration::from_secs(1),
            "Retry-After respected"
        );
    }

    #[test]
    fn long_retry_after_gives_up() {
        let s = FakeServer::start(vec![
            Reply::new(429, "").header("Retry-After: 3600"),
            Reply::new(200, FULL),
        ]);
        let e = client(&s, "/", 2).fetch("62041").unwrap_err();
        assert_eq!(e, SourceError::Http { status: 429 });
        assert_eq!(s.seen().len(), 1);
    }

    #[test]
    fn not_json() {
        let s = FakeServer::start(vec![Reply::new(200, "<html>maintenance</html>")]);
        let e = client(&s, "/", 2).fetch("62041").unwrap_err();
        assert!(
            matches!(&e, SourceError::BadBody(m) if m.contains("not JSON")),
            "{e}"
        );
        assert!(e.to_string().contains("maintenance"), "{e}");
        assert_eq!(s.seen().len(), 1, "a bad body is not retried");
    }

    #[test]
    fn wrong_shape() {
        for body in [
            r#"{"status":"ok","data":{}}"#,
            r#"{"status":"ok"}"#,
            r#"{"status":"ok","data":{"prefixes":{"a":1}}}"#,
            r#"{"status":"ok","data":{"prefixes":["1.2.3.0/24"]}}"#,
            r#"[1, 2]"#,
            r#""ok""#,
        ] {
            let s = FakeServer::start(vec![Reply::new(200, body)]);
            let e = client(&s, "/", 0).fetch("62041").unwrap_err();
            assert!(matches!(e, SourceError::BadBody(_)), "{body}: {e:?}");
        }
    }

    #[test]
    fn hang_times_out() {
        let s = FakeServer::start(vec![Reply::new(200, FULL).delay(Duration::from_secs(3))]);
        let started = Instant::now();
        let e = client(&s, "/", 0).fetch("62041").unwrap_err();
        assert_eq!(e, SourceError::Timeout { seconds: 1 });
        assert!(started.elapsed() < Duration::from_millis(2500));
    }

    #[test]
    fn connection_refused_is_transport_error() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let cfg = RipeConfig {
            url: format!("http://127.0.0.1:{port}/"),
            min_peers_seeing: None,
            sourceapp: "t".into(),
            timeout_seconds: 1,
            retries: 1,
        };
        let mut c = RipeClient::new(&cfg);
        c.backoff = Duration::from_millis(1);
        let e = c.fetch("1").unwrap_err();
        assert!(matches!(e, SourceError::Transport(_)), "{e:?}");
    }

    #[test]
    fn invalid_and_host_bit_prefixes() {
        let body = answer(
            r#"{"prefix":"10.0.0.1/8"},{"prefix":"2001:DB8::1/32","x":[1]},
               {"prefix":"10.0.0.0/8"},{"prefix":"999.1.1.0/24"},{"prefix":"1.2.3.0/33"},
               {"prefix":null},{"prefix":42},{"other":"x"},{"prefix":"192.0.2.7"},
               {"prefix":"198.51.100.0\/24"}"#,
        );
        let s = FakeServer::start(vec![Reply::new(200, body)]);
        let f = client(&s, "/", 0).fetch("62041").unwrap();
        assert_eq!(
            f.values,
            [
                "10.0.0.0/8",
                "192.0.2.7/32",
                "198.51.100.0/24",
                "2001:db8::/32"
            ]
        );
        assert_eq!(f.skipped, 5);
    }

    #[test]
    fn body_over_the_limit() {
        for reply in [Reply::new(200, FULL), Reply::new(200, FULL).chunked()] {
            let s = FakeServer::start(vec![reply]);
            let mut c = client(&s, "/", 2);
            c.body_limit = 1024;
            let e = c.fetch("62041").unwrap_err();
            assert_eq!(e, SourceError::TooLarge { limit: 1024 });
            assert_eq!(e.to_string(), "answer larger than the limit of 1 KiB");
            assert_eq!(s.seen().len(), 1);
        }
        // Exactly at the limit is fine.
        let s = FakeServer::start(vec![Reply::new(200, FULL)]);
        let mut c = client(&s, "/", 0);
        c.body_limit = FULL.len() as u64;
        assert_eq!(c.fetch("62041").unwrap().values.len(), 12);
    }

    #[test]
    fn invalid_asn() {
        let s = FakeServer::start(vec![Reply::new(200, EMPTY)]);
        assert!(matches!(
            client(&s, "/", 0).fetch("ASX"),
            Err(SourceError::Invalid(_))
        ));
        assert!(s.seen().is_empty());
    }

    #[test]
    fn messages_pick_errors() {
        let v: Value = serde_json::json!([["info", "a"], ["error", "b"], ["error", "c"]]);
        assert_eq!(upstream_message(Some(&v)), "b; c");
        let v: Value = serde_json::json!([["warning", "w"], "plain", 5]);
        assert_eq!(upstream_message(Some(&v)), "w; plain");
        let long = serde_json::json!([["error", "é".repeat(400)]]);
        assert!(upstream_message(Some(&long)).ends_with("..."));
    }
}
