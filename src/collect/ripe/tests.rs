//! Tests of the RIPEstat client against fake servers on 127.0.0.1.

use std::time::Instant;

use super::super::fetch::fake::{FakeServer, Reply};
use super::*;

const FULL: &str = include_str!("../../../tests/fixtures/ripestat/AS62041.json");
const EMPTY: &str = include_str!("../../../tests/fixtures/ripestat/empty.json");
const ERROR: &str = include_str!("../../../tests/fixtures/ripestat/error.json");

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
    assert!(
        matches!(
            e,
            SourceError::Upstream {
                status: Some(400),
                ..
            }
        ),
        "{e}"
    );
    // RIPEstat's words go to the log, never into the failure text (status.json).
    assert!(!e.to_string().contains("resource"), "{e}");
    assert_eq!(s.seen().len(), 1, "a 4xx is not retried");
}

#[test]
fn error_status_with_200() {
    let s = FakeServer::start(vec![Reply::new(200, ERROR)]);
    let e = client(&s, "/", 2).fetch("62041").unwrap_err();
    assert_eq!(
        e,
        SourceError::Upstream {
            upstream: "RIPEstat",
            status: Some(400),
            message: "the query was refused (its message is in the log)".into()
        }
    );
    let body = r#"{"status":"error","data":{},"messages":[]}"#;
    let s = FakeServer::start(vec![Reply::new(200, body)]);
    let e = client(&s, "/", 0).fetch("62041").unwrap_err();
    assert_eq!(
        e.to_string(),
        "RIPEstat error: the query was refused (its message is in the log)"
    );
    // A list in an answer whose status is not "ok" is refused too, not stored.
    let body = r#"{"status":"error","data":{"prefixes":[{"prefix":"192.0.2.0/24"}]}}"#;
    let s = FakeServer::start(vec![Reply::new(200, body)]);
    let e = client(&s, "/", 0).fetch("62041").unwrap_err();
    assert!(matches!(e, SourceError::Upstream { .. }), "{e}");
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
    assert!(e.to_string().ends_with("an HTML page"), "{e}");
    assert!(!e.to_string().contains("maintenance"), "{e}");
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
    let s = FakeServer::start(vec![Reply::new(200, FULL).delay(Duration::from_secs(20))]);
    let started = Instant::now();
    let e = client(&s, "/", 0).fetch("62041").unwrap_err();
    assert_eq!(e, SourceError::Timeout { seconds: 1 });
    // 1 s normally (the timeout); the answer comes after 20 s.
    assert!(started.elapsed() < Duration::from_secs(5));
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

#[test]
fn chunked_answer_streams() {
    // Chunks of 1000 bytes: chunk lines and data cross the client's reads.
    let many: Vec<String> = (0..5000u32)
        .map(|i| {
            format!(
                r#"{{"prefix":"{}/32"}}"#,
                std::net::Ipv4Addr::from(i | 1 << 28)
            )
        })
        .collect();
    let s = FakeServer::start(vec![Reply::new(200, answer(&many.join(","))).chunked()]);
    let f = client(&s, "/", 0).fetch("62041").unwrap();
    assert_eq!((f.values.len(), f.skipped), (5000, 0));
    let s = FakeServer::start(vec![Reply::new(200, FULL).chunked()]);
    assert_eq!(client(&s, "/", 0).fetch("62041").unwrap().values.len(), 12);
}

/// An answer of `time` 2026-11-27T08:00:00 with one prefix and `times` (the data's
/// `latest_time` / `query_time` members, each `,"key":"value"`).
fn dated(times: &str) -> String {
    format!(
        r#"{{"status":"ok","time":"2026-11-27T08:00:00","data":{{"prefixes":[{{"prefix":"192.0.2.0/24"}}]{times}}}}}"#
    )
}

/// Freshness (trust.max_age_hours, 48 here): without `data.latest_time` the data's
/// time is `data.query_time` (country-resource-list and routing-status give only
/// that); with both, `latest_time` decides, whichever comes first.
#[test]
fn query_time_is_the_data_time_without_latest_time() {
    let (stale, fresh) = ("2026-11-20T08:00:00", "2026-11-27T07:00:00");
    let fetch = |times: String| {
        let s = FakeServer::start(vec![Reply::new(200, dated(&times))]);
        client(&s, "/", 0).fetch("64496").map(|f| f.values.len())
    };
    let e = fetch(format!(r#","query_time":"{stale}""#)).unwrap_err();
    assert!(
        e.to_string()
            .contains("stale data: of 2026-11-20T08:00:00, 168 hours"),
        "{e}"
    );
    assert_eq!(fetch(format!(r#","query_time":"{fresh}""#)), Ok(1));
    let both = |l: &str, q: &str| {
        let (l, q) = (
            format!(r#","latest_time":"{l}""#),
            format!(r#","query_time":"{q}""#),
        );
        [fetch(format!("{l}{q}")), fetch(format!("{q}{l}"))]
    };
    assert_eq!(both(fresh, stale), [Ok(1), Ok(1)]);
    assert!(both(stale, fresh).iter().all(Result::is_err));
    // routing-status (the second opinion) and a country answer: the same check.
    let routing = format!(
        r#"{{"status":"ok","time":"2026-11-27T08:00:00","data":{{"announced_space":{{"v4":{{"prefixes":9}}}},"query_time":"{stale}"}}}}"#
    );
    let s = FakeServer::start(vec![Reply::new(200, routing)]);
    let e = client(&s, "/data/announced-prefixes/data.json", 0)
        .prefix_count("64496")
        .unwrap_err();
    assert!(e.to_string().contains("stale data"), "{e}");
    let country = format!(
        r#"{{"status":"ok","time":"2026-11-27T08:00:00","data":{{"resources":{{"ipv4":["192.0.2.0/24"]}},"query_time":"{stale}"}}}}"#
    );
    let e = crate::collect::country::parse_answer(country.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("stale data"), "{e}");
}

/// An envelope field that is wrong fails the answer with a text that says what was
/// wrong, never what the field held: the text reaches `status.json`, the API and
/// LuCI. Times that start as ISO times and go on with markup are read as the times
/// they start with and shown as this program writes them.
#[test]
fn envelope_failures_never_quote_the_answer() {
    let markup = "<img src=x onerror=alert(1)>";
    let stale = format!("2026-11-20T08:00:00{markup}");
    let cases = [
        (
            format!(r#""data_call_name":"{markup}""#),
            "the answer is of another data call than announced-prefixes".to_string(),
        ),
        (
            format!(r#""data_call_status":"{markup}""#),
            "RIPEstat says data call announced-prefixes is not supported \
             (an unknown data_call_status)"
                .into(),
        ),
        (
            format!(r#""version":"{markup}""#),
            "data call announced-prefixes answered an unknown major version; \
             this program reads version 1.x"
                .into(),
        ),
        (
            format!(r#""time":"{markup}","data":{{"latest_time":"2026-11-27T08:00:00"}}"#),
            "the answer's time is not an ISO 8601 time".into(),
        ),
        (
            format!(r#""time":"2026-11-27T08:00:00","data":{{"latest_time":"{markup}"}}"#),
            "the data's time (data.latest_time, else data.query_time) is not an ISO 8601 \
             time"
                .into(),
        ),
        (
            format!(r#""time":"2026-11-27T08:00:00{markup}","data":{{"query_time":"{stale}"}}"#),
            "stale data: of 2026-11-20T08:00:00Z, 168 hours before the answer's time \
             2026-11-27T08:00:00Z (trust.max_age_hours 48)"
                .into(),
        ),
    ];
    for (fields, says) in cases {
        let body = format!(r#"{{"status":"ok",{fields}}}"#);
        let s = FakeServer::start(vec![Reply::new(200, body.clone())]);
        let e = client(&s, "/", 0).fetch("64496").unwrap_err().to_string();
        assert!(!e.contains('<') && !e.contains("onerror"), "{body}: {e}");
        assert_eq!(e, format!("unexpected answer: {says}"), "{body}");
    }
    // What has a strict shape, or is a word this program knows, is named.
    for (fields, says) in [
        (
            r#""data_call_name":"routing-status""#,
            "the answer is of data call routing-status, not announced-prefixes",
        ),
        (
            r#""data_call_status":"maintenance - back soon""#,
            "RIPEstat says data call announced-prefixes is maintenance, not supported",
        ),
        (
            r#""version":"2.1""#,
            "data call announced-prefixes answered version \"2.1\"; this program reads \
             version 1.x",
        ),
    ] {
        let body = format!(r#"{{"status":"ok",{fields}}}"#);
        let s = FakeServer::start(vec![Reply::new(200, body.clone())]);
        let e = client(&s, "/", 0).fetch("64496").unwrap_err().to_string();
        assert_eq!(e, format!("unexpected answer: {says}"), "{body}");
    }
}

/// An answer trimmed of its top-level `time` is still checked: its `query_time` is
/// the reference, and `latest_time` the data's time.
#[test]
fn query_time_is_the_reference_without_time() {
    let fetch = |latest: &str| {
        let body = format!(
            r#"{{"status":"ok","data":{{"prefixes":[{{"prefix":"192.0.2.0/24"}}],"latest_time":"{latest}","query_time":"2026-11-27T08:00:00"}}}}"#
        );
        let s = FakeServer::start(vec![Reply::new(200, body)]);
        client(&s, "/", 0).fetch("64496").map(|f| f.values.len())
    };
    // 100 hours before the query_time (trust.max_age_hours is 48 here).
    let e = fetch("2026-11-23T04:00:00").unwrap_err();
    assert!(
        e.to_string().contains(
            "stale data: of 2026-11-23T04:00:00, 100 hours before the answer's query_time 2026-11-27T08:00:00"
        ),
        "{e}"
    );
    assert_eq!(fetch("2026-11-27T00:00:00"), Ok(1));
}
