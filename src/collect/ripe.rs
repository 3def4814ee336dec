//! RIPEstat Data API client: the prefixes an autonomous system announces
//! (`announced-prefixes` data call).
//!
//! Only `status`, `status_code`, `messages` and `data.prefixes[].prefix` are read,
//! as the body streams (`json::Scanner`): each prefix is checked and kept in its
//! compact form as soon as it is read, and nothing else of the answer is held, so a
//! large or hostile answer costs no more memory than the values it yields.

use std::cell::Cell;
use std::io::Read;
use std::thread;
use std::time::Duration;

use ipnet::IpNet;

use super::fetch::{Fetched, Keep, SourceError};
use super::fetcher::{Fetcher, Request, Transport};
use super::json::{bad_body, Next, ScanError, Scanner};
use crate::config::{MinPrefix, RipeConfig};

/// Default cap on the size of an answer. The largest networks announce some ten
/// thousand prefixes, a few MiB of JSON; a cap keeps a broken or hostile server from
/// keeping a router busy (memory does not grow with it: the body is not kept).
pub const DEFAULT_BODY_LIMIT: u64 = 16 << 20;

/// Longest single wait between two attempts, whatever the backoff says.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Longest message of an error answer kept, in bytes.
const MAX_MESSAGE: usize = 300;

/// A RIPEstat client for one collection run.
#[derive(Debug)]
pub struct RipeClient {
    fetcher: Fetcher,
    url: String,
    sourceapp: String,
    min_peers_seeing: Option<u64>,
    /// Shorter prefixes are skipped as invalid.
    pub min_prefix: MinPrefix,
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
    /// A client with the settings of `cfg` reaching RIPEstat through `transport`,
    /// with a 1 s backoff, a 10 s `Retry-After` limit, a [`DEFAULT_BODY_LIMIT`] and
    /// the default `min_prefix`.
    pub fn new(cfg: &RipeConfig, transport: &Transport) -> RipeClient {
        RipeClient {
            fetcher: Fetcher::new(transport, Duration::from_secs(cfg.timeout_seconds)),
            url: cfg.url.clone(),
            sourceapp: cfg.sourceapp.clone(),
            min_peers_seeing: cfg.min_peers_seeing,
            min_prefix: MinPrefix::default(),
            retries: cfg.retries,
            backoff: Duration::from_secs(1),
            max_retry_after: Duration::from_secs(10),
            body_limit: DEFAULT_BODY_LIMIT,
        }
    }

    /// The prefixes announced by `asn` (`"62041"`; `"AS62041"` is accepted too),
    /// normalised (host bits cleared), sorted and without duplicates. Invalid
    /// prefixes, and those shorter than `min_prefix`, are logged, counted in
    /// [`Fetched::skipped`] and left out.
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
        let rq = Request {
            url: &self.url,
            query: &query,
            accept: "application/json",
            limit: self.body_limit,
        };
        let wait = Cell::new(None);
        let min = self.min_prefix;
        self.fetcher
            .get(&rq, |answer| {
                wait.set(answer.retry_after);
                let mut keep = Keep::new(format!("AS{asn}: skipped from RIPEstat"));
                let read = read_answer(answer.body, &mut |p| {
                    keep.push(p.map_err(String::from).and_then(|p| prefix(p, min)))
                });
                judge(answer.status, read, keep)
            })
            .map_err(|e| (e, wait.get()))
    }
}

/// What an answer says besides its prefixes.
#[derive(Debug, Default)]
struct Head {
    /// `status`: `ok`, or an error.
    status: Option<String>,
    /// `status_code`, when a number.
    status_code: Option<u16>,
    /// The text of `messages`, at most [`MAX_MESSAGE`] bytes.
    message: String,
    /// Whether `data.prefixes` was a list.
    listed: bool,
}

/// The outcome of an answer with HTTP `status`, read into `read`, its prefixes in
/// `keep`.
fn judge(status: u16, read: Result<Head, SourceError>, keep: Keep) -> Result<Fetched, SourceError> {
    if !(200..300).contains(&status) {
        // RIPEstat explains a refused query in a JSON body (400 "The parameter
        // 'resource' is required."); use that message when there is one.
        return Err(match read {
            Ok(head) if head.status.as_deref().is_some_and(|s| s != "ok") => {
                SourceError::Upstream {
                    status: Some(status),
                    message: head.message,
                }
            }
            _ => SourceError::Http { status },
        });
    }
    let head = read?;
    match head.status.as_deref() {
        Some("ok") | None if head.listed => Ok(keep.finish()),
        Some("ok") | None => Err(SourceError::BadBody(
            "no data.prefixes list in the answer".into(),
        )),
        Some(_) => Err(SourceError::Upstream {
            status: head.status_code.filter(|&c| c != 200),
            message: head.message,
        }),
    }
}

/// The prefix `s` as stored, if valid and not shorter than `min`.
pub(crate) fn prefix(s: &str, min: MinPrefix) -> Result<IpNet, String> {
    let net = crate::source::normalize_prefix(s)?
        .parse::<IpNet>()
        .map_err(|_| format!("invalid prefix {s:?}"))?;
    let (least, family) = match net {
        IpNet::V4(_) => (min.ipv4, "ipv4"),
        IpNet::V6(_) => (min.ipv6, "ipv6"),
    };
    if net.prefix_len() < least {
        return Err(format!(
            "prefix {net} is shorter than /{least} (min_prefix.{family})"
        ));
    }
    Ok(net)
}

/// What one prefix entry gave: the text, or why there is none.
type Item<'a> = Result<&'a str, &'static str>;

/// Reads a RIPEstat answer, handing each `data.prefixes[].prefix` to `sink` as it
/// comes.
fn read_answer(
    body: &mut dyn Read,
    sink: &mut dyn FnMut(Item<'_>) -> Result<(), SourceError>,
) -> Result<Head, SourceError> {
    let mut sc = Scanner::new(body);
    let read = walk(&mut sc, sink).and_then(|head| sc.end().map(|_| head));
    read.map_err(|e| bad_body(e, "RIPEstat", sc.start()))
}

/// The keys of the answer that are read.
enum Key {
    Status,
    StatusCode,
    Messages,
    Data,
    Other,
}

/// Walks the top-level object.
fn walk(
    sc: &mut Scanner,
    sink: &mut dyn FnMut(Item<'_>) -> Result<(), SourceError>,
) -> Result<Head, ScanError> {
    sc.begin_object()?;
    let mut head = Head::default();
    while let Some(key) = sc.next_key()? {
        let key = match key {
            "status" => Key::Status,
            "status_code" => Key::StatusCode,
            "messages" => Key::Messages,
            "data" => Key::Data,
            _ => Key::Other,
        };
        match key {
            Key::Status if sc.null()? => head.status = None,
            Key::Status => head.status = Some(sc.string()?.unwrap_or("(too long)").to_string()),
            Key::StatusCode if sc.peek()? == Next::Number => {
                head.status_code = sc.number()?.parse().ok();
            }
            Key::Messages => head.message = messages(sc)?,
            Key::Data => head.listed = data(sc, sink)?,
            Key::StatusCode | Key::Other => sc.skip()?,
        }
    }
    Ok(head)
}

/// `data`: whether it has a `prefixes` list, whose entries go to `sink`.
fn data(
    sc: &mut Scanner,
    sink: &mut dyn FnMut(Item<'_>) -> Result<(), SourceError>,
) -> Result<bool, ScanError> {
    if sc.null()? {
        return Ok(false);
    }
    sc.begin_object()?;
    let mut listed = false;
    while let Some(key) = sc.next_key()? {
        if key != "prefixes" || sc.null()? {
            sc.skip()?;
            continue;
        }
        sc.begin_array()?;
        listed = true;
        while sc.next_item()? {
            entry(sc, sink)?;
        }
    }
    Ok(listed)
}

/// One `data.prefixes[]` entry: an object whose `prefix` goes to `sink`; its
/// `timelines` and other keys are skipped. A missing or odd `prefix` is one invalid
/// value, not a failed answer.
fn entry(
    sc: &mut Scanner,
    sink: &mut dyn FnMut(Item<'_>) -> Result<(), SourceError>,
) -> Result<(), ScanError> {
    sc.begin_object()?;
    let mut seen = false;
    while let Some(key) = sc.next_key()? {
        if key != "prefix" || seen {
            sc.skip()?;
            continue;
        }
        seen = true;
        let item = match sc.peek()? {
            Next::String => sc.string()?.ok_or("prefix is too long"),
            _ => {
                sc.skip()?;
                Err("prefix is missing or not a string")
            }
        };
        sink(item).map_err(ScanError::Failed)?;
    }
    if !seen {
        sink(Err("prefix is missing or not a string")).map_err(ScanError::Failed)?;
    }
    Ok(())
}

/// The text of RIPEstat's `messages` (`[["error", "text"], ...]`): the error
/// messages, or all of them when none is marked as an error, at most
/// [`MAX_MESSAGE`] bytes.
fn messages(sc: &mut Scanner) -> Result<String, ScanError> {
    let (mut errors, mut others) = (Vec::new(), Vec::new());
    if sc.peek()? != Next::Array {
        sc.skip()?;
        return Ok(pick_message(errors, others));
    }
    sc.begin_array()?;
    while sc.next_item()? {
        match sc.peek()? {
            Next::String => {
                let text = sc.string()?.unwrap_or("(too long)").to_string();
                keep_text(&mut others, text);
            }
            Next::Array => {
                let (mut level, mut text, mut i) = (None, None, 0);
                sc.begin_array()?;
                while sc.next_item()? {
                    match (i, sc.peek()?) {
                        (0, Next::String) => level = sc.string()?.map(|l| l == "error"),
                        (1, Next::String) => text = sc.string()?.map(str::to_string),
                        _ => sc.skip()?,
                    }
                    i += 1;
                }
                if let Some(text) = text {
                    match level {
                        Some(true) => keep_text(&mut errors, text),
                        _ => keep_text(&mut others, text),
                    }
                }
            }
            _ => sc.skip()?,
        }
    }
    Ok(pick_message(errors, others))
}

/// Adds a message unless enough text is kept already.
fn keep_text(list: &mut Vec<String>, text: String) {
    if list.iter().map(|t| t.len() + 2).sum::<usize>() <= MAX_MESSAGE {
        list.push(text);
    }
}

/// The error messages, else the others, joined and cut to [`MAX_MESSAGE`] bytes.
fn pick_message(errors: Vec<String>, others: Vec<String>) -> String {
    let chosen = if errors.is_empty() { others } else { errors };
    let mut text = chosen.join("; ");
    if text.is_empty() {
        text = "no message given".into();
    }
    // Keep status.json and the log readable whatever the server sends.
    if text.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
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
        let mut c = RipeClient::new(&cfg, &Transport::plain());
        c.backoff = Duration::from_millis(10);
        c
    }

    fn texts(f: &Fetched) -> Vec<String> {
        f.texts(crate::source::Kind::Asn)
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
            assert!(texts(&f).contains(&p.to_string()), "{p}");
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
        let mut c = RipeClient::new(&cfg, &Transport::plain());
        c.backoff = Duration::from_millis(1);
        let e = c.fetch("1").unwrap_err();
        assert!(matches!(e, SourceError::Transport { .. }), "{e:?}");
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
            texts(&f),
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

    /// The message of an error answer whose `messages` is `json`.
    fn message_of(json: &str) -> String {
        let body = format!(r#"{{"status":"error","messages":{json}}}"#);
        let mut r = body.as_bytes();
        read_answer(&mut r, &mut |_| Ok(())).unwrap().message
    }

    #[test]
    fn messages_pick_errors() {
        assert_eq!(
            message_of(r#"[["info", "a"], ["error", "b"], ["error", "c"]]"#),
            "b; c"
        );
        assert_eq!(
            message_of(r#"[["warning", "w"], "plain", 5, [1]]"#),
            "w; plain"
        );
        assert_eq!(message_of("{}"), "no message given");
        let long = format!(r#"[["error", "{}"]]"#, "é".repeat(200));
        assert!(message_of(&long).ends_with("..."));
        let many = format!("[{}]", vec![r#"["error","abcdefghij"]"#; 10_000].join(","));
        assert!(message_of(&many).len() <= MAX_MESSAGE + 3);
    }

    #[test]
    fn too_short_prefixes_are_skipped() {
        let body = answer(
            r#"{"prefix":"0.0.0.0/0"},{"prefix":"::/0"},{"prefix":"10.0.0.0/7"},
               {"prefix":"10.0.0.0/8"},{"prefix":"2001::/15"},{"prefix":"2001::/16"}"#,
        );
        let s = FakeServer::start(vec![Reply::new(200, body)]);
        let f = client(&s, "/", 0).fetch("62041").unwrap();
        assert_eq!(texts(&f), ["10.0.0.0/8", "2001::/16"]);
        assert_eq!(f.skipped, 4);
        let mut c = client(&s, "/", 0);
        c.min_prefix = MinPrefix { ipv4: 0, ipv6: 0 };
        assert_eq!(c.fetch("62041").unwrap().values.len(), 6);
        let e = prefix("0.0.0.0/0", MinPrefix::default()).unwrap_err();
        assert_eq!(e, "prefix 0.0.0.0/0 is shorter than /8 (min_prefix.ipv4)");
    }

    #[test]
    fn hostile_shapes_fail_cleanly() {
        // Entries that are not objects, nesting, long strings and too many values:
        // each fails the answer or is skipped, never a panic.
        let deep = format!(r#"{{"data":{{"prefixes":[{}]}}}}"#, "[".repeat(200));
        let long = answer(&format!(r#"{{"prefix":"{}"}}"#, "1".repeat(1 << 20)));
        let s = FakeServer::start_with(move |i, _| {
            Reply::new(200, if i == 0 { deep.clone() } else { long.clone() })
        });
        let e = client(&s, "/", 0).fetch("62041").unwrap_err();
        assert!(e.to_string().contains("not the RIPEstat JSON shape"), "{e}");
        let f = client(&s, "/", 0).fetch("62041").unwrap();
        assert_eq!((f.values.len(), f.skipped), (0, 1));
        let many: Vec<String> = (0..=crate::collect::fetch::MAX_VALUES as u32)
            .map(|i| {
                format!(
                    r#"{{"prefix":"{}/32"}}"#,
                    std::net::Ipv4Addr::from(i | 1 << 28)
                )
            })
            .collect();
        let s = FakeServer::start(vec![Reply::new(200, answer(&many.join(",")))]);
        let mut c = client(&s, "/", 0);
        c.body_limit = 64 << 20;
        // Some MB of JSON: more time than the other tests' 1 s in a debug build.
        c.fetcher = Fetcher::new(&Transport::plain(), Duration::from_secs(60));
        let e = c.fetch("62041").unwrap_err();
        assert_eq!(e.to_string(), "answer lists more than 250000 values");
    }
}
