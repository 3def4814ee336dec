//! Trust (issue 28): an answer that drops most of a source's values is held until a
//! second upstream, time or a person confirms it; envelope checks fail a source with
//! its values kept; special ranges are skipped in ASN and country answers; the fetch
//! log stays bounded.

use std::sync::atomic::{AtomicBool, AtomicU8};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ripe_cidr_collector::collect::run::{collect, RunReport};
use ripe_cidr_collector::config;
use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;
use serde_json::json;

use crate::common::{http_get, http_send, resource_of, ripe_body, FakeServer, Reply, TestDir};

/// `n` distinct prefixes from the benchmarking range (never special).
fn prefixes(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("198.18.{}.0/24", i)).collect()
}

/// What the fake upstreams answer now: RIPEstat's prefixes for AS64500 (or a whole
/// body), ipverse's list, routing-status's count, the feed and country NL.
#[derive(Default)]
struct Answers {
    ripe: Vec<String>,
    ripe_body: Option<String>,
    ipverse: Option<Vec<String>>,
    routing: Option<u64>,
    feed: String,
    country: Vec<String>,
}

fn fake(a: Arc<Mutex<Answers>>) -> FakeServer {
    FakeServer::start(move |rq| {
        let a = a.lock().unwrap();
        if rq.url.starts_with("/ipverse/64500/ipv4") {
            return match &a.ipverse {
                Some(l) => Reply::json(200, l.join("\n")),
                None => Reply::json(500, "down"),
            };
        }
        if rq.url.starts_with("/ipverse/") {
            return Reply::json(404, "no");
        }
        if rq.url.starts_with("/feed") {
            return Reply::json(200, a.feed.clone());
        }
        if rq.url.starts_with("/data/routing-status/") {
            return match a.routing {
                Some(n) => Reply::json(
                    200,
                    format!(
                        r#"{{"status":"ok","data_call_name":"routing-status","data_call_status":"supported","version":"3.3","data":{{"announced_space":{{"v4":{{"prefixes":{n},"ips":1}},"v6":{{"prefixes":0}}}}}}}}"#
                    ),
                ),
                None => Reply::json(500, "down"),
            };
        }
        match resource_of(&rq.url).as_deref() {
            Some("64500") => Reply::json(
                200,
                a.ripe_body.clone().unwrap_or_else(|| ripe_body(&a.ripe)),
            ),
            Some("NL") => Reply::json(
                200,
                format!(
                    r#"{{"status":"ok","data":{{"resources":{{"ipv4":{}}}}}}}"#,
                    json!(a.country)
                ),
            ),
            _ => Reply::json(404, "{}"),
        }
    })
}

fn setup(
    a: &Arc<Mutex<Answers>>,
    order: &[&str],
    extra: serde_json::Value,
) -> (TestDir, FakeServer) {
    let up = fake(a.clone());
    let t = TestDir::new();
    let mut cfg = json!({
        "asns": ["64500"],
        "asn_upstreams": order,
        "ripe": {"url": up.url("/data/announced-prefixes/data.json"), "timeout_seconds": 2, "retries": 0},
        "ipverse": {"url": up.url("/ipverse/{asn}/ipv{family}.txt")},
        "ttl_days": 7
    });
    for (k, v) in extra.as_object().unwrap() {
        cfg[k] = v.clone();
    }
    t.config(&cfg);
    (t, up)
}

fn run(t: &TestDir) -> RunReport {
    let cfg = config::load(&t.paths().config()).unwrap().config;
    collect(
        &t.paths(),
        &cfg,
        None,
        &AtomicBool::new(false),
        &AtomicU8::new(0),
    )
    .unwrap()
}

fn stored(t: &TestDir, kind: Kind, source: &str) -> Vec<String> {
    let d = db::open(&t.paths()).unwrap();
    d.rows(kind, source)
        .unwrap()
        .into_iter()
        .map(|r| r.value)
        .collect()
}

/// Moves everything stored 30 days back, as if the last run was then: an answer
/// that lacks the values and is applied expires them (ttl_days 7), one that is held
/// keeps them.
fn age(t: &TestDir) {
    let c = rusqlite::Connection::open(&t.paths().db).unwrap();
    c.execute_batch(
        "UPDATE entries SET last_seen = last_seen - 30 * 86400;
         UPDATE fetches SET time = time - 30 * 86400, base = base - 30 * 86400;",
    )
    .unwrap();
}

fn held(t: &TestDir) -> usize {
    db::open(&t.paths()).unwrap().held().unwrap().len()
}

#[test]
fn a_shrunken_answer_is_held_until_a_second_upstream_agrees() {
    let a = Arc::new(Mutex::new(Answers::default()));
    a.lock().unwrap().ripe = prefixes(100);
    let (t, _up) = setup(&a, &["ripestat", "ipverse"], json!({}));
    run(&t);
    assert_eq!(stored(&t, Kind::Asn, "64500").len(), 100);
    age(&t);
    {
        let mut a = a.lock().unwrap();
        a.ripe = prefixes(20);
        a.ipverse = Some(prefixes(100));
    }
    let r = run(&t);
    assert!(r.sources[0].held(), "{r:?}");
    let f = r.sources[0].fetch.as_ref().unwrap();
    assert_eq!((f.answer, f.stored), (20, 100));
    assert_eq!(stored(&t, Kind::Asn, "64500").len(), 100, "the 80 stay");
    assert_eq!(held(&t), 1);
    // A second upstream giving the 100 does not confirm it: still held, values stay.
    let r = run(&t);
    assert!(r.sources[0].held());
    assert_eq!(stored(&t, Kind::Asn, "64500").len(), 100);
    // One giving the same 20 applies it: the 80 unseen for 30 days expire.
    a.lock().unwrap().ipverse = Some(prefixes(20));
    let r = run(&t);
    assert!(!r.sources[0].held(), "{r:?}");
    assert_eq!(
        r.sources[0].fetch.as_ref().unwrap().note.as_deref(),
        Some("ipverse")
    );
    assert_eq!(stored(&t, Kind::Asn, "64500").len(), 20);
    assert_eq!(held(&t), 0);
    // The log tells the story, newest last, in the overview of `GET /status`.
    let o = ripe_cidr_collector::overview::build(&db::Pool::new(t.paths(), 0));
    let states: Vec<u8> = o.groups[0].sources[0]
        .history
        .iter()
        .map(|f| f.state)
        .collect();
    assert_eq!(states, [0, 1, 1, 1, 2]);
}

#[test]
fn routing_status_and_a_person_confirm_through_the_binary() {
    let a = Arc::new(Mutex::new(Answers::default()));
    a.lock().unwrap().ripe = prefixes(100);
    let (t, _up) = setup(&a, &["ripestat"], json!({}));
    assert!(t.run(&["run"]).status.success());
    age(&t);
    {
        let mut a = a.lock().unwrap();
        a.ripe = prefixes(20);
        a.routing = Some(100);
    }
    let o = t.run(&["run"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(
        log.contains("WARN")
            && log.contains(
                "AS64500: answer shrank: it has 20 of 100 stored values; held until confirmed"
            ),
        "{log}"
    );
    assert_eq!(stored(&t, Kind::Asn, "64500").len(), 100);
    let o = t.run(&["status"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("held:")
                && l.contains("AS64500: answer shrank: it has 20 of 100")),
        "{text}"
    );
    let (p, addr) = t.spawn_listening(&["serve"]);
    let (code, body) = http_get(addr, "/health");
    assert_eq!(code, 200, "{body}");
    let h: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (h["status"].as_str(), h["held"].as_u64()),
        (Some("ok"), Some(1)),
        "{h}"
    );
    let (_, body) = http_get(addr, "/status");
    let s: serde_json::Value = serde_json::from_str(&body).unwrap();
    let src = &s["groups"][0]["sources"][0];
    assert_eq!(src["held"]["values"], 20, "{src}");
    assert_eq!(src["held"]["stored"], 100, "{src}");
    assert_eq!(src["held"]["change"], "shrank", "{src}");
    assert!(src["held"]["since"].is_string(), "{src}");
    // By hand: applied, the 80 unseen for 30 days expire now.
    let o = t.run(&["confirm", "AS64500"]);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(stored(&t, Kind::Asn, "64500").len(), 20);
    let (_, body) = http_get(addr, "/health");
    assert!(!body.contains("held"), "{body}");
    let o = t.run(&["confirm", "AS64500"]);
    assert_eq!(o.status.code(), Some(1), "not held any more: {o:?}");
    drop(p);
}

/// Sends `sig` to the process `pid`.
fn signal(pid: u32, sig: &str) {
    let sent = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status();
    assert!(sent.unwrap().success(), "kill {sig} {pid}");
}

/// Starts the daemon in `t`, has it collect every source now (SIGUSR1: the last run
/// is recent, so it would wait hours), stops it after that run: its log.
fn daemon_run(t: &TestDir) -> String {
    let mut d = t.spawn(&["daemon"]);
    let logged = |d: &mut crate::common::Proc, what: &str| {
        crate::common::eventually(Duration::from_secs(20), || d.stderr().contains(what))
    };
    assert!(logged(&mut d, "next run"), "{}", d.stderr());
    signal(d.pid(), "-USR1");
    assert!(logged(&mut d, "run finished"), "{}", d.stderr());
    signal(d.pid(), "-TERM");
    d.wait_exit(Duration::from_secs(6)).expect("daemon stopped");
    d.stderr()
}

/// The daemon's log: one WARN per held answer, with its figures. Two sources are held
/// in one run (AS64500 100 -> 20, the feed 100 -> 10), and every held answer the
/// daemon merged (one each, or more if it ran again) has exactly one line.
#[test]
fn the_daemon_logs_one_warn_per_held_answer() {
    let a = Arc::new(Mutex::new(Answers::default()));
    a.lock().unwrap().ripe = prefixes(100);
    a.lock().unwrap().feed = prefixes(100).join("\n");
    let (t, up) = setup(&a, &["ripestat"], json!({}));
    let feed = with_feed(&t, &up);
    assert!(t.run(&["run"]).status.success());
    age(&t);
    {
        let mut a = a.lock().unwrap();
        a.ripe = prefixes(20);
        a.feed = prefixes(10).join("\n");
    }
    let log = daemon_run(&t);
    let c = rusqlite::Connection::open(&t.paths().db).unwrap();
    let held_rows = |n: i64| -> usize {
        let q = "SELECT count(*) FROM fetches WHERE state = 1 AND answer = ?1";
        c.query_row(q, [n], |r| r.get::<_, i64>(0)).unwrap() as usize
    };
    for (name, figures, n) in [
        (
            "AS64500",
            "answer shrank: it has 20 of 100 stored values",
            20,
        ),
        (
            feed.as_str(),
            "answer shrank: it has 10 of 100 stored values",
            10,
        ),
    ] {
        let warned = log
            .lines()
            .filter(|l| l.contains("WARN") && l.contains(&format!("{name}: {figures}")))
            .count();
        assert!(held_rows(n) >= 1, "{name} not held: {log}");
        assert_eq!(warned, held_rows(n), "{name}: {log}");
    }
    let held_lines = log.lines().filter(|l| l.contains("held until confirmed"));
    assert!(held_lines.clone().all(|l| l.contains("WARN")), "{log}");
    assert_eq!(held_lines.count(), held_rows(20) + held_rows(10), "{log}");
}

#[test]
fn an_empty_or_unsupported_answer_removes_nothing() {
    let a = Arc::new(Mutex::new(Answers::default()));
    a.lock().unwrap().ripe = prefixes(10);
    let (t, _up) = setup(&a, &["ripestat"], json!({}));
    run(&t);
    age(&t);
    a.lock().unwrap().ripe = Vec::new();
    let r = run(&t);
    assert!(r.sources[0].held(), "empty: {r:?}");
    assert_eq!(stored(&t, Kind::Asn, "64500").len(), 10);
    a.lock().unwrap().ripe_body = Some(
        r#"{"status":"ok","data_call_name":"announced-prefixes","data_call_status":"maintenance","version":"1.2","data":{"prefixes":[]}}"#.into(),
    );
    let r = run(&t);
    let e = r.sources[0].outcome.as_ref().unwrap_err().to_string();
    assert!(e.contains("is maintenance, not supported"), "{e}");
    a.lock().unwrap().ripe_body = Some(
        r#"{"status":"ok","version":"2.0","data":{"prefixes":[{"prefix":"192.0.2.0/24"}]}}"#.into(),
    );
    let e = run(&t).sources[0].outcome.clone().unwrap_err().to_string();
    assert!(
        e.contains("version \"2.0\"; this program reads version 1"),
        "{e}"
    );
    a.lock().unwrap().ripe_body = Some(
        r#"{"status":"ok","time":"2026-11-27T19:20:20.32","data":{"prefixes":[],"latest_time":"2026-11-20T08:00:00"}}"#.into(),
    );
    let e = run(&t).sources[0].outcome.clone().unwrap_err().to_string();
    assert!(
        e.contains("stale data") && e.contains("max_age_hours 48"),
        "{e}"
    );
    assert_eq!(stored(&t, Kind::Asn, "64500").len(), 10, "nothing removed");
}

#[test]
fn special_ranges_are_skipped_in_asn_answers_only() {
    let a = Arc::new(Mutex::new(Answers::default()));
    let special = [
        "10.0.0.0/8",
        "127.0.0.1/32",
        "100.64.0.0/10",
        "224.0.0.0/4",
        "fd00::/8",
        "fe80::/10",
    ];
    let good = ["192.0.2.0/24", "198.51.100.0/24", "2001:db8::/32"];
    a.lock().unwrap().ripe = special.iter().chain(&good).map(|s| s.to_string()).collect();
    a.lock().unwrap().feed = "10.0.0.0/8\n192.0.2.0/24\n".into();
    let (t, up) = setup(&a, &["ripestat"], json!({"feeds": []}));
    let feed = up.url("/feed.txt");
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.paths().config()).unwrap()).unwrap();
    cfg["feeds"] = json!([feed]);
    t.config(&cfg);
    let r = run(&t);
    let asn = r.sources.iter().find(|s| s.kind == Kind::Asn).unwrap();
    assert_eq!(asn.skipped, 6, "{r:?}");
    let mut want: Vec<String> = good.iter().map(|s| s.to_string()).collect();
    want.sort();
    let mut got = stored(&t, Kind::Asn, "64500");
    got.sort();
    assert_eq!(got, want);
    assert!(stored(&t, Kind::Feed, &feed).contains(&"10.0.0.0/8".to_string()));
    // A group that asks for them keeps its ASN's special ranges.
    cfg["asns"] = json!([]);
    cfg["groups"] = json!({"lan": {"asns": ["64500"], "allow_special": true}});
    t.config(&cfg);
    // They widen the source by far more than max_growth_percent: held until confirmed.
    let r = run(&t);
    assert!(r.sources[0].held(), "{r:?}");
    assert!(!stored(&t, Kind::Asn, "64500").contains(&"10.0.0.0/8".to_string()));
    let out = String::from_utf8_lossy(&t.run(&["status"]).stdout).into_owned();
    assert!(
        out.contains("AS64500: answer grew: it has 6 values where 3 are stored"),
        "{out}"
    );
    let out = t.run(&["confirm", "64500"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    run(&t);
    assert!(stored(&t, Kind::Asn, "64500").contains(&"10.0.0.0/8".to_string()));
}

#[test]
fn a_feed_turning_into_an_html_page_fails_with_its_values_kept() {
    let a = Arc::new(Mutex::new(Answers::default()));
    a.lock().unwrap().feed = "192.0.2.0/24\n198.51.100.0/24\n".into();
    let (t, up) = setup(&a, &["ripestat"], json!({"asns": []}));
    let feed = up.url("/feed.txt");
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.paths().config()).unwrap()).unwrap();
    cfg["feeds"] = json!([feed]);
    t.config(&cfg);
    run(&t);
    age(&t);
    a.lock().unwrap().feed = "<!DOCTYPE html>\n<html><body>502 Bad Gateway</body></html>\n".into();
    let r = run(&t);
    let e = r.sources[0].outcome.clone().unwrap_err().to_string();
    assert!(e.contains("an HTML page, not a list"), "{e}");
    assert_eq!(stored(&t, Kind::Feed, &feed).len(), 2);
    // Lines that are none of them a value: a failure too, not an empty list.
    a.lock().unwrap().feed = "garbage\n\u{1}\u{2}\n".into();
    let e = run(&t).sources[0].outcome.clone().unwrap_err().to_string();
    assert!(e.contains("no valid line"), "{e}");
    assert_eq!(stored(&t, Kind::Feed, &feed).len(), 2);
}

/// Adds the fake's `/feed.txt` to the configuration of `t`; its URL.
fn with_feed(t: &TestDir, up: &FakeServer) -> String {
    let feed = up.url("/feed.txt");
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.paths().config()).unwrap()).unwrap();
    cfg["feeds"] = json!([feed]);
    t.config(&cfg);
    feed
}

/// Moves the `since` of held answers `secs` back, as if they were held that long.
fn held_for(t: &TestDir, secs: i64) {
    let c = rusqlite::Connection::open(&t.paths().db).unwrap();
    c.execute(
        "UPDATE fetches SET since = since - ?1 WHERE state = 1",
        [secs],
    )
    .unwrap();
}

#[test]
fn feeds_and_countries_are_held_too_until_the_same_answer_hours_later() {
    let a = Arc::new(Mutex::new(Answers::default()));
    {
        let mut a = a.lock().unwrap();
        a.feed = prefixes(100).join("\n");
        a.country = prefixes(100);
        a.country.push("10.0.0.0/8".into());
    }
    let extra = json!({"asns": [], "countries": ["NL"], "trust": {"confirm_after_hours": 1}});
    let (t, up) = setup(&a, &["ripestat"], extra);
    let feed = with_feed(&t, &up);
    let r = run(&t);
    let nl = r.sources.iter().find(|s| s.kind == Kind::Country).unwrap();
    assert_eq!(nl.skipped, 1, "a country's 10.0.0.0/8 is skipped: {r:?}");
    assert_eq!(stored(&t, Kind::Country, "NL").len(), 100);
    age(&t);
    {
        let mut a = a.lock().unwrap();
        a.feed = prefixes(20).join("\n");
        a.country = prefixes(20);
    }
    let r = run(&t);
    assert!(
        r.sources.len() == 2 && r.sources.iter().all(|s| s.held()),
        "{r:?}"
    );
    assert_eq!(stored(&t, Kind::Feed, &feed).len(), 100);
    assert_eq!(stored(&t, Kind::Country, "NL").len(), 100);
    // Half an hour later the same answers are still held; past the hour, applied.
    held_for(&t, 1800);
    assert!(run(&t).sources.iter().all(|s| s.held()));
    held_for(&t, 3600);
    let r = run(&t);
    for s in &r.sources {
        assert_eq!(
            s.fetch.as_ref().unwrap().note.as_deref(),
            Some("time"),
            "{r:?}"
        );
    }
    assert_eq!(stored(&t, Kind::Feed, &feed).len(), 20);
    assert_eq!(stored(&t, Kind::Country, "NL").len(), 20);
}

/// Runs AS64500 from 100 prefixes to 20 with `order` and `extra` (held unless a
/// second opinion agrees): the note of the last fetch, and the values stored.
fn shrink(
    a: &Arc<Mutex<Answers>>,
    order: &[&str],
    extra: serde_json::Value,
) -> (Option<String>, usize) {
    a.lock().unwrap().ripe = prefixes(100);
    let (t, _up) = setup(a, order, extra);
    run(&t);
    age(&t);
    a.lock().unwrap().ripe = prefixes(20);
    let r = run(&t);
    let note = r.sources[0].fetch.as_ref().unwrap().note.clone();
    (note, stored(&t, Kind::Asn, "64500").len())
}

#[test]
fn routing_status_or_a_confirm_with_upstream_that_agrees_applies_it() {
    let a = Arc::new(Mutex::new(Answers::default()));
    a.lock().unwrap().routing = Some(20);
    let by = shrink(&a, &["ripestat"], json!({}));
    assert_eq!(by, (Some("routing-status".into()), 20));
    // An upstream only named in confirm_with; its special ranges do not count.
    let mut twenty = prefixes(20);
    twenty.extend((1..=10).map(|i| format!("10.{i}.0.0/16")));
    a.lock().unwrap().ipverse = Some(twenty);
    a.lock().unwrap().routing = None;
    let extra = json!({"trust": {"confirm_with": ["ipverse"]}});
    assert_eq!(
        shrink(&a, &["ripestat"], extra),
        (Some("ipverse".into()), 20)
    );
}

#[test]
fn max_age_hours_is_the_configured_one() {
    let a = Arc::new(Mutex::new(Answers::default()));
    a.lock().unwrap().ripe_body = Some(
        r#"{"status":"ok","time":"2026-11-27T08:00:00","data":{"prefixes":[{"prefix":"192.0.2.0/24"}],"latest_time":"2026-11-20T08:00:00"}}"#.into(),
    );
    let (t, _up) = setup(&a, &["ripestat"], json!({"trust": {"max_age_hours": 168}}));
    let r = run(&t);
    assert!(r.sources[0].outcome.is_ok(), "168 hours old: {r:?}");
    let (t, _up) = setup(&a, &["ripestat"], json!({"trust": {"max_age_hours": 167}}));
    let e = run(&t).sources[0].outcome.clone().unwrap_err().to_string();
    assert!(
        e.contains("168 hours") && e.contains("max_age_hours 167"),
        "{e}"
    );
}

#[test]
fn a_held_answer_in_the_json_the_lookup_the_page_and_post_confirm() {
    let a = Arc::new(Mutex::new(Answers::default()));
    a.lock().unwrap().ripe = prefixes(100);
    let (t, _up) = setup(&a, &["ripestat"], json!({}));
    run(&t);
    age(&t);
    a.lock().unwrap().ripe = prefixes(20);
    assert!(run(&t).sources[0].held());
    let states = |s: &serde_json::Value| -> Vec<(u64, String)> {
        s["history"]
            .as_array()
            .unwrap_or(&Vec::new())
            .iter()
            .map(|f| {
                (
                    f["values"].as_u64().unwrap_or(0),
                    f["state"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    };
    let want = vec![(100, "applied".to_string()), (20, "held".to_string())];
    let o = t.run(&["status", "--json"]);
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        states(&s["overview"]["groups"][0]["sources"][0]),
        want,
        "{s}"
    );
    let o = t.run(&["lookup", "198.18.0.1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("AS64500: last answered by ripestat"), "{err}");
    let (_p, addr) = t.spawn_listening(&["serve"]);
    let (_, body) = http_get(addr, "/status");
    let s: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(states(&s["groups"][0]["sources"][0]), want, "{s}");
    let (_, body) = http_get(addr, "/lookup?ip=198.18.0.1");
    let l: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(l["matches"][0]["upstream"], "ripestat", "{l}");
    if let Some(mut b) = crate::web::browser() {
        b.goto(&format!("http://{addr}/"));
        let row = "tr[data-source=\"64500\"]";
        assert!(b.wait_for(
            &format!("!!document.querySelector('{row}')"),
            Duration::from_secs(20)
        ));
        let text = crate::web::text(&mut b, row);
        assert!(
            text.contains("the answer shrank: it has 20 of 100 stored values"),
            "{text}"
        );
        assert!(text.contains("100 20!"), "the history line: {text}");
    }
    let (code, body) = http_send(addr, "POST", "/confirm", r#"{"source": "AS64500"}"#);
    assert_eq!(code, 200, "{body}");
    assert!(body.contains(r#""confirmed":"AS64500""#), "{body}");
    assert_eq!(stored(&t, Kind::Asn, "64500").len(), 20);
    let (code, body) = http_send(addr, "POST", "/confirm", r#"{"source": "AS64500"}"#);
    assert_eq!(code, 404, "not held any more: {body}");
    let (code, body) = http_send(addr, "POST", "/confirm", r#"{"source": 5}"#);
    assert_eq!(code, 400, "{body}");
}
