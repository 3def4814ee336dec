//! `asn search` and `GET /asn-search` through the real binary, against a fake
//! RIPEstat on 127.0.0.1 answering `searchcomplete` and `as-overview` in the shapes
//! of `tests/fixtures/ripestat/` (RIPEstat's documented and live answers): the
//! ranking, the cache (no second upstream call), one search in flight, bad text,
//! and garbage from the upstream.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{http_get, resource_of, FakeServer, Reply, TestDir};

/// `query` → its ASNs, each `(asn, holder, announced)`.
fn table(query: &str) -> Vec<(u32, &'static str, bool)> {
    match query {
        "telegram" => vec![
            (62014, "TELEGRAM - Telegram Messenger Inc", false),
            (62041, "TELEGRAM - Telegram Messenger Inc", true),
            (211157, "TELEGRAM-MESSENGER - Telegram Messenger Inc", true),
        ],
        "a" => vec![(1, "A", true), (2, "A2", true)],
        "b" => vec![(3, "B", true)],
        "c" => vec![(4, "C", false)],
        _ => vec![],
    }
}

fn suggest_body(query: &str) -> String {
    let s: Vec<Value> = table(query)
        .iter()
        .map(|(a, h, _)| json!({"label": format!("AS{a}"), "value": format!("AS{a}"), "description": h}))
        .collect();
    json!({"status": "ok", "status_code": 200, "data_call_name": "searchcomplete",
        "version": "2.1", "data": {"categories": [
            {"category": "ASNs", "suggestions": s},
            {"category": "Prefixes", "suggestions": [{"value": "91.108.4.0/22", "description": "x"}]}
        ], "resource": query, "limit": 8}})
    .to_string()
}

fn overview_body(asn: u32) -> String {
    let (holder, announced) = ["telegram", "a", "b", "c"]
        .iter()
        .flat_map(|q| table(q))
        .find(|(a, _, _)| *a == asn)
        .map(|(_, h, an)| (h, an))
        .unwrap_or(("UNKNOWN", false));
    json!({"status": "ok", "status_code": 200, "version": "1.3", "data_call_name": "as-overview",
        "data_call_status": "supported - based on 2.1",
        "data": {"type": "as", "resource": asn.to_string(), "holder": holder, "announced": announced}})
    .to_string()
}

/// Which search an upstream request belongs to (its query, or the query whose ASN
/// it asks about).
fn search_of(url: &str) -> String {
    // `resource_of` drops the `AS` of an ASN.
    let r = resource_of(url).unwrap_or_default();
    match r
        .parse::<u32>()
        .ok()
        .filter(|_| url.starts_with("/data/as-overview/"))
    {
        Some(asn) => ["telegram", "a", "b", "c"]
            .into_iter()
            .find(|q| table(q).iter().any(|t| t.0 == asn))
            .unwrap_or("?")
            .to_string(),
        None => r,
    }
}

/// A fake RIPEstat whose every answer takes `delay`, noting the searches with a
/// request in flight at once (the most seen goes to `most`).
fn fake(delay: Duration, most: Arc<Mutex<(Vec<String>, usize)>>) -> FakeServer {
    FakeServer::start(move |rq| {
        let who = search_of(&rq.url);
        {
            let mut m = most.lock().unwrap();
            m.0.push(who.clone());
            let distinct = m.0.iter().collect::<HashSet<_>>().len();
            m.1 = m.1.max(distinct);
        }
        thread::sleep(delay);
        let mut m = most.lock().unwrap();
        let i = m.0.iter().position(|w| *w == who).unwrap();
        m.0.remove(i);
        if rq.url.starts_with("/data/searchcomplete/") {
            Reply::json(200, suggest_body(&resource_of(&rq.url).unwrap_or_default()))
        } else if rq.url.starts_with("/data/as-overview/") {
            let asn = resource_of(&rq.url).unwrap_or_default();
            Reply::json(200, overview_body(asn.parse().unwrap_or(0)))
        } else {
            Reply::json(404, "{}")
        }
    })
}

fn setup(up: &FakeServer, extra: Value) -> TestDir {
    let t = TestDir::new();
    let mut cfg = json!({
        "asns": ["62041"],
        "groups": {"vpn": {"asns": ["211157"]}},
        "ripe": {"url": up.url("/data/announced-prefixes/data.json"), "timeout_seconds": 5, "retries": 0}
    });
    if let (Some(c), Some(e)) = (cfg.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    t.config(&cfg);
    t
}

fn searches_made(up: &FakeServer) -> usize {
    up.requests()
        .iter()
        .filter(|r| r.url.starts_with("/data/searchcomplete/"))
        .count()
}

#[test]
fn cli_ranks_announced_first_and_prints_the_apis_bytes() {
    let up = fake(Duration::ZERO, Default::default());
    let t = setup(&up, json!({}));
    let out = t.run(&["asn", "search", "telegram"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "AS62041\tTELEGRAM - Telegram Messenger Inc\tannounced\n\
         AS211157\tTELEGRAM-MESSENGER - Telegram Messenger Inc\tannounced\n\
         AS62014\tTELEGRAM - Telegram Messenger Inc\tnot announced\n"
    );
    // One searchcomplete, one as-overview per ASN, on ripe.url's host.
    assert_eq!(up.requests().len(), 4);
    let json_out = t.run(&["asn", "search", "telegram", "--json", "--limit", "3"]);
    assert_eq!(json_out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&json_out.stdout).unwrap();
    assert_eq!(v["query"], "telegram");
    assert_eq!(
        v["asns"][0],
        json!({"asn": "62041", "holder": "TELEGRAM - Telegram Messenger Inc", "announced": true, "groups": ["default"]})
    );
    assert_eq!(v["asns"][1]["groups"], json!(["vpn"]));
    assert_eq!(v["asns"][2]["groups"], json!([]));
    assert!(up.requests().iter().any(|r| r.url.contains("&limit=3")));

    let (_p, addr) = t.spawn_listening(&["serve"]);
    let (status, body) = http_get(addr, "/asn-search?q=telegram&limit=3");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body.as_bytes(), &json_out.stdout[..]);

    // Nothing found: exit 1, an empty list.
    let none = t.run(&["asn", "search", "nothing-like-it", "--json"]);
    assert_eq!(none.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&none.stdout).unwrap();
    assert_eq!(v, json!({"query": "nothing-like-it", "asns": []}));
}

#[test]
fn a_repeated_query_costs_no_upstream_call() {
    let up = fake(Duration::ZERO, Default::default());
    let t = setup(&up, json!({}));
    let (_p, addr) = t.spawn_listening(&["serve"]);
    let (s1, b1) = http_get(addr, "/asn-search?q=telegram");
    assert_eq!(s1, 200, "{b1}");
    let before = up.requests().len();
    assert_eq!(before, 4);
    let (s2, b2) = http_get(addr, "/asn-search?q=telegram");
    assert_eq!((s2, &b2), (200, &b1));
    assert_eq!(
        up.requests().len(),
        before,
        "the second answer came from the cache"
    );
    // Another text is another question.
    assert_eq!(http_get(addr, "/asn-search?q=b").0, 200);
    assert_eq!(searches_made(&up), 2);
}

#[test]
fn one_search_in_flight() {
    let most = Arc::new(Mutex::new((Vec::new(), 0)));
    let up = fake(Duration::from_millis(300), most.clone());
    let t = setup(&up, json!({}));
    let (_p, addr) = t.spawn_listening(&["serve"]);
    let clients: Vec<_> = ["a", "b", "c"]
        .into_iter()
        .map(|q| thread::spawn(move || http_get(addr, &format!("/asn-search?q={q}"))))
        .collect();
    let answers: Vec<(u16, String)> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    for (status, body) in &answers {
        // A waiting client gets its answer, or 503 when the wait is over.
        assert!(*status == 200 || *status == 503, "{status} {body}");
    }
    assert!(
        answers.iter().filter(|a| a.0 == 200).count() >= 2,
        "{answers:?}"
    );
    assert_eq!(
        most.lock().unwrap().1,
        1,
        "two searches had requests in flight at once"
    );
    // The two as-overview calls of "a" did run at once.
    let a: Value = serde_json::from_str(&answers[0].1).unwrap();
    assert_eq!(a["asns"].as_array().unwrap().len(), 2);
}

#[test]
fn bad_text_is_a_usage_error_and_asks_nobody() {
    let up = fake(Duration::ZERO, Default::default());
    let t = setup(&up, json!({}));
    let long = "x".repeat(65);
    for bad in ["", " ", "a\tb", "a\u{1}b", long.as_str()] {
        let out = t.run(&["asn", "search", bad]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.contains("search text"), "{err}");
    }
    assert_eq!(
        t.run(&["asn", "search", "x", "--limit", "21"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        t.run(&["asn", "list", "--limit", "2"]).status.code(),
        Some(2)
    );
    let (_p, addr) = t.spawn_listening(&["serve"]);
    let long_q = format!("/asn-search?q={long}");
    for target in [
        "/asn-search",
        "/asn-search?q=",
        "/asn-search?q=a%09b",
        "/asn-search?q=a%00",
        long_q.as_str(),
        "/asn-search?q=x&limit=0",
        "/asn-search?q=x&limit=99",
        "/asn-search?q=x&other=1",
    ] {
        let (status, body) = http_get(addr, target);
        assert_eq!(status, 400, "{target}: {body}");
    }
    assert!(up.requests().is_empty());
}

#[test]
fn garbage_from_the_upstream_is_a_failure_not_an_empty_answer() {
    let garbage = [
        (200, "<html>maintenance</html>"),
        (200, r#"{"status":"ok","data":{}}"#),
        (
            200,
            r#"{"status":"ok","data":{"categories":[{"category":"ASNs","suggestions":[{"value":"AS1"}]}]}}"#,
        ),
        (500, "{}"),
    ];
    for (status, body) in garbage {
        // The last body answers as-overview too: a searchcomplete that lists AS1
        // is followed by an as-overview of the same garbage.
        let up = FakeServer::start(move |_| Reply::json(status, body));
        let t = setup(&up, json!({}));
        let out = t.run(&["asn", "search", "telegram"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{body}: {err}");
        assert!(out.stdout.is_empty());
        assert!(err.contains("RIPEstat"), "{err}");
        let (_p, addr) = t.spawn_listening(&["serve"]);
        let (s, b) = http_get(addr, "/asn-search?q=telegram");
        assert_eq!(s, 502, "{body}: {b}");
        assert!(
            !b.contains("maintenance"),
            "the answer is described, not quoted: {b}"
        );
    }
}

#[test]
fn the_token_is_needed_when_set() {
    let up = fake(Duration::ZERO, Default::default());
    let t = setup(&up, json!({"api": {"token": "s3cret"}}));
    let (_p, addr) = t.spawn_listening(&["serve"]);
    assert_eq!(http_get(addr, "/asn-search?q=telegram").0, 401);
    assert!(up.requests().is_empty());
    assert_eq!(
        get_with_token(addr, "/asn-search?q=telegram", "s3cret"),
        200
    );
}

fn get_with_token(addr: SocketAddr, target: &str, token: &str) -> u16 {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        c,
        "GET {target} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    let _ = c.read_to_end(&mut raw);
    String::from_utf8_lossy(&raw)
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// A sound `searchcomplete` followed by garbage from `as-overview` (an HTML page, a
/// 500, an answer without the ASN's data, a cut-off body): a failure of the upstream,
/// as garbage from `searchcomplete` is, never a list without holders.
#[test]
fn garbage_from_as_overview_is_a_failure_too() {
    let suggestions = r#"{"status":"ok","data":{"categories":[{"category":"ASNs","suggestions":[{"value":"AS1","description":"ONE"},{"value":"AS2","description":"TWO"}]}]}}"#;
    let garbage = [
        (200, "<html>maintenance</html>"),
        (500, r#"{"status":"error"}"#),
        (200, r#"{"status":"ok","data":{}}"#),
        (200, r#"{"status":"ok","data":{"holder":"ONE","announ"#),
    ];
    for (status, body) in garbage {
        let up = FakeServer::start(move |rq| {
            if rq.url.starts_with("/data/searchcomplete/") {
                Reply::json(200, suggestions)
            } else {
                Reply::json(status, body)
            }
        });
        let t = setup(&up, json!({}));
        let out = t.run(&["asn", "search", "telegram"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{body}: {err}");
        assert!(out.stdout.is_empty(), "{body}");
        assert!(up.requests().iter().any(|r| r.url.contains("as-overview")));
        let (_p, addr) = t.spawn_listening(&["serve"]);
        let (s, b) = http_get(addr, "/asn-search?q=telegram");
        assert_eq!(s, 502, "{body}: {b}");
    }
}
