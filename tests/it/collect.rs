//! Collection through the real binary: `run` and `daemon` against a fake RIPEstat and
//! a fake DoH server on 127.0.0.1.

use std::collections::HashMap;
use std::fs;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ripe_cidr_collector::db::{self, Row};
use ripe_cidr_collector::source::Kind;
use serde_json::json;

use crate::common::*;

const AS62041: &str = include_str!("../fixtures/ripestat/AS62041.json");
const EMPTY: &str = include_str!("../fixtures/ripestat/empty.json");
const ERROR: &str = include_str!("../fixtures/ripestat/error.json");

/// Thirty days ago: old enough that a merge would expire these rows (ttl 7).
fn old() -> i64 {
    ripe_cidr_collector::util::unix_now() - 30 * 86_400
}

fn rows(t: &TestDir, kind: Kind, source: &str) -> Vec<Row> {
    db::open(&t.paths()).unwrap().rows(kind, source).unwrap()
}

fn values(t: &TestDir, kind: Kind, source: &str) -> Vec<String> {
    rows(t, kind, source).into_iter().map(|r| r.value).collect()
}

/// A fake RIPEstat where each ASN answers in its own way.
fn fake_ripe() -> FakeServer {
    let calls_429 = Arc::new(AtomicUsize::new(0));
    FakeServer::start(move |rq| {
        match resource_of(&rq.url).as_deref() {
            Some("62041") => Reply::json(200, AS62041),
            Some("64496") => Reply::json(200, EMPTY),
            Some("64500") => Reply::json(500, "oops"),
            Some("64501") => {
                // 429 first, then a good answer.
                if calls_429.fetch_add(1, Ordering::SeqCst) == 0 {
                    Reply::json(429, "slow down")
                } else {
                    Reply::json(200, ripe_body(&["203.0.113.0/24".into()]))
                }
            }
            Some("64502") => Reply::json(200, "<html>not json</html>"),
            Some("64503") => Reply::json(400, ERROR),
            Some("64504") => Reply::json(200, ripe_body(&["198.51.100.0/24".into()]))
                .delayed(Duration::from_secs(4)),
            Some("64505") => Reply::json(
                200,
                ripe_body(&[
                    "not-a-prefix".into(),
                    "11.1.2.3/8".into(),
                    "2001:DB8::1/32".into(),
                    "300.1.1.0/24".into(),
                ]),
            ),
            Some("64506") => Reply::json(200, r#"{"status":"ok","data":{"something":"else"}}"#),
            _ => Reply::json(404, "{}"),
        }
    })
}

fn base_config(ripe: &FakeServer, asns: &[&str]) -> serde_json::Value {
    json!({
        "asns": asns,
        "fqdns": [],
        "ttl_days": 7,
        "ripe": {"url": ripe.url("/data/announced-prefixes/data.json"), "timeout_seconds": 1, "retries": 1,
                 "sourceapp": "rcc-test"}
    })
}

#[test]
fn run_normal_answer() {
    let ripe = fake_ripe();
    let t = TestDir::new();
    t.config(&base_config(&ripe, &["AS62041", "64496"]));
    let out = t.run(&["run"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = values(&t, Kind::Asn, "62041");
    assert!(v.contains(&"91.108.4.0/22".to_string()), "{v:?}");
    assert!(v.iter().any(|p| p.contains(':')), "IPv6 stored too: {v:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("AS62041:"), "{err}");
    assert!(err.contains("run finished"), "{err}");
    // The request names the resource and the sourceapp.
    let seen = ripe.requests();
    let q = seen.iter().find(|s| s.url.contains("AS62041")).unwrap();
    assert!(q.url.contains("resource=AS62041"), "{}", q.url);
    assert!(q.url.contains("sourceapp=rcc-test"), "{}", q.url);
    assert!(!q.url.contains("min_peers_seeing"));
    // `run` records itself in status.json too.
    let st = read_status(&t);
    assert!(st["last_success"].is_string(), "{st}");
    assert!(st["pid"].is_null());
}

#[test]
fn failures_keep_rows_and_exit_3() {
    let ripe = fake_ripe();
    let t = TestDir::new();
    let failing = ["64500", "64502", "64503", "64504", "64506"];
    let mut asns = vec!["62041", "64501", "64505"];
    asns.extend(failing);
    // The good answers replace every stored value at once: the trust gate would hold
    // them (tests/it/trust.rs); here they are to be merged as answers always were.
    let mut cfg = base_config(&ripe, &asns);
    cfg["trust"] = json!({"max_shrink_percent": 100});
    t.config(&cfg);
    {
        let mut d = db::open(&t.paths()).unwrap();
        for (i, asn) in asns.iter().enumerate() {
            d.merge_source(Kind::Asn, asn, &[format!("100.{i}.0.0/16")], old(), 0)
                .unwrap();
        }
    }
    let before: HashMap<&str, Vec<Row>> = failing
        .iter()
        .map(|a| (*a, rows(&t, Kind::Asn, a)))
        .collect();
    let out = t.run(&["run"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    for a in failing {
        assert_eq!(rows(&t, Kind::Asn, a), before[a], "AS{a} untouched");
        assert!(
            err.contains(&format!("AS{a}: failed")),
            "AS{a} named in the log: {err}"
        );
    }
    assert!(err.contains("HTTP status 500"), "{err}");
    assert!(err.contains("timed out"), "{err}");
    assert!(
        err.contains("The parameter 'resource' is required."),
        "{err}"
    );
    // The good sources were merged: old rows expired, new ones stored.
    assert!(values(&t, Kind::Asn, "62041").contains(&"91.108.4.0/22".to_string()));
    assert!(!values(&t, Kind::Asn, "62041").contains(&"100.0.0.0/16".to_string()));
    assert_eq!(
        values(&t, Kind::Asn, "64501"),
        ["203.0.113.0/24"],
        "429 then success"
    );
    assert_eq!(
        values(&t, Kind::Asn, "64505"),
        ["11.0.0.0/8", "2001:db8::/32"],
        "invalid skipped, host bits cleared"
    );
    // 500 is retried (retries: 1 → two requests); 400 is not.
    let count = |asn: &str| {
        ripe.requests()
            .iter()
            .filter(|s| s.url.contains(&format!("AS{asn}&")) && !is_name_lookup(&s.url))
            .count()
    };
    assert_eq!(count("64500"), 2);
    assert_eq!(count("64503"), 1);
}

fn fake_doh() -> FakeServer {
    FakeServer::start(|rq| {
        let name = rq
            .url
            .split(['?', '&'])
            .find_map(|kv| kv.strip_prefix("name="))
            .unwrap_or("")
            .to_string();
        let ty = rq
            .url
            .split(['?', '&'])
            .find_map(|kv| kv.strip_prefix("type="))
            .unwrap_or("")
            .to_string();
        if rq.header("accept") != Some("application/dns-json") {
            return Reply::json(415, "{}");
        }
        let body = match (name.as_str(), ty.as_str()) {
            ("www.example.test", "A") => json!({"Status": 0, "Answer": [
                {"name": "www.example.test.", "type": 5, "TTL": 60, "data": "edge.example.test."},
                {"name": "edge.example.test.", "type": 1, "TTL": 60, "data": "192.0.2.10"},
                {"name": "edge.example.test.", "type": 1, "TTL": 60, "data": "192.0.2.11"}]}),
            ("www.example.test", "AAAA") => json!({"Status": 0, "Answer": [
                {"name": "www.example.test.", "type": 5, "TTL": 60, "data": "edge.example.test."},
                {"name": "edge.example.test.", "type": 28, "TTL": 60, "data": "2001:DB8:0::10"}]}),
            _ => json!({"Status": 3}),
        };
        Reply::json(200, body.to_string())
    })
}

#[test]
fn dns_doh_and_system() {
    let doh = fake_doh();
    let t = TestDir::new();
    t.config(&json!({
        "fqdns": ["www.example.test", "gone.example.test"],
        "dns": {"resolver": "doh", "doh_url": doh.url("/dns-query"), "timeout_seconds": 2}
    }));
    {
        let mut d = db::open(&t.paths()).unwrap();
        d.merge_source(
            Kind::Fqdn,
            "gone.example.test",
            &["192.0.2.99".to_string()],
            old(),
            0,
        )
        .unwrap();
    }
    let before = rows(&t, Kind::Fqdn, "gone.example.test");
    let out = t.run(&["run"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("gone.example.test: failed"), "{err}");
    assert_eq!(
        values(&t, Kind::Fqdn, "www.example.test"),
        ["192.0.2.10", "192.0.2.11", "2001:db8::10"]
    );
    assert_eq!(rows(&t, Kind::Fqdn, "gone.example.test"), before);

    // The system resolver: "localhost" is loopback, kept only where the group allows
    // special ranges (a poisoned answer never puts the router itself in a list).
    let t = TestDir::new();
    t.config(&json!({"fqdns": ["localhost"], "allow_single_label": true}));
    let out = t.run(&["run"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("localhost: skipped"), "{err}");
    assert_eq!(values(&t, Kind::Fqdn, "localhost"), Vec::<String>::new());
    t.config(&json!({"fqdns": ["localhost"], "allow_single_label": true, "allow_special": true}));
    let out = t.run(&["run"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = values(&t, Kind::Fqdn, "localhost");
    assert!(v.iter().any(|a| a == "127.0.0.1" || a == "::1"), "{v:?}");
}

/// A DoH answer naming the router, its LAN or link-local addresses (a poisoned or
/// rebinding answer) stores none of them: the special ranges of ASN answers apply.
#[test]
fn dns_answers_skip_special_ranges() {
    let doh = FakeServer::start(|rq| {
        let body = if rq.url.contains("type=AAAA") {
            json!({"Status": 0, "Answer": [
                {"name": "bad.example.test.", "type": 28, "TTL": 60, "data": "::1"},
                {"name": "bad.example.test.", "type": 28, "TTL": 60, "data": "fe80::1"},
                {"name": "bad.example.test.", "type": 28, "TTL": 60, "data": "::ffff:192.168.1.1"},
                {"name": "bad.example.test.", "type": 28, "TTL": 60, "data": "2001:db8::7"}]})
        } else {
            json!({"Status": 0, "Answer": [
                {"name": "bad.example.test.", "type": 1, "TTL": 60, "data": "127.0.0.1"},
                {"name": "bad.example.test.", "type": 1, "TTL": 60, "data": "10.1.2.3"},
                {"name": "bad.example.test.", "type": 1, "TTL": 60, "data": "192.168.1.1"},
                {"name": "bad.example.test.", "type": 1, "TTL": 60, "data": "192.0.2.7"}]})
        };
        Reply::json(200, body.to_string())
    });
    let t = TestDir::new();
    let dns = json!({"resolver": "doh", "doh_url": doh.url("/dns-query"), "timeout_seconds": 2});
    t.config(&json!({"fqdns": ["bad.example.test"], "dns": dns}));
    let out = t.run(&["run"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("bad.example.test: skipped 127.0.0.1"), "{err}");
    assert_eq!(
        values(&t, Kind::Fqdn, "bad.example.test"),
        ["192.0.2.7", "2001:db8::7"]
    );
    // A group that wants them says so.
    t.config(&json!({"fqdns": ["bad.example.test"], "dns": dns, "allow_special": true}));
    let out = t.run(&["run"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(values(&t, Kind::Fqdn, "bad.example.test").len(), 8);
}

#[test]
fn source_removed_during_run_is_not_written() {
    let ripe = fake_ripe();
    let t = TestDir::new();
    let mut cfg = base_config(&ripe, &["62041", "64504"]);
    cfg["ripe"]["timeout_seconds"] = json!(10);
    t.config(&cfg);
    let mut child = t.spawn(&["run"]);
    // AS64504 answers after 4 s; remove it meanwhile.
    assert!(eventually(Duration::from_secs(5), || ripe
        .requests()
        .iter()
        .any(|s| s.url.contains("AS64504"))));
    assert!(t.run(&["asn", "remove", "64504"]).status.success());
    let status = child
        .wait_exit(Duration::from_secs(20))
        .expect("run finished");
    let err = child.stderr();
    assert!(status.success(), "{err}");
    assert!(values(&t, Kind::Asn, "64504").is_empty(), "{err}");
    assert!(
        err.contains("AS64504: removed from the configuration during the run"),
        "{err}"
    );
    assert!(!values(&t, Kind::Asn, "62041").is_empty());
}

fn read_status(t: &TestDir) -> serde_json::Value {
    fs::read(t.file("status.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(json!({}))
}

#[test]
fn daemon_lifecycle() {
    let ripe = fake_ripe();
    let t = TestDir::new();
    let mut cfg = base_config(&ripe, &["62041"]);
    cfg["schedule"] = json!({"interval_seconds": 3600});
    cfg["outputs"] = json!([{"path": t.file("out.txt").to_str().unwrap(), "format": "text", "type": "cidr",
                             "command": format!("touch {}", t.file("command-ran").display())}]);
    t.config(&cfg);
    let mut d = t.spawn(&["daemon"]);
    // Collection at start, then the outputs.
    assert!(eventually(Duration::from_secs(10), || !values(
        &t,
        Kind::Asn,
        "62041"
    )
    .is_empty()));
    assert!(eventually(Duration::from_secs(10), || t
        .file("command-ran")
        .exists()));
    let out = fs::read_to_string(t.file("out.txt")).unwrap();
    assert!(out.starts_with("91.108.4.0/22\n"), "{out}");
    let st = read_status(&t);
    assert_eq!(st["pid"], json!(d.pid()));
    assert!(st["heartbeat"].is_string());
    assert!(eventually(Duration::from_secs(5), || read_status(&t)
        ["last_success"]
        .is_string()));
    assert!(read_status(&t)["next_run"].is_string());

    // A new source is picked up without waiting for the interval.
    assert!(t.run(&["asn", "add", "64501"]).status.success());
    assert!(eventually(Duration::from_secs(15), || !values(
        &t,
        Kind::Asn,
        "64501"
    )
    .is_empty()));

    // A broken config is recorded and survived; the last good one stays in force.
    fs::write(t.file("config.json"), "{\"asns\": [").unwrap();
    assert!(eventually(Duration::from_secs(10), || read_status(&t)
        ["last_error"]
        .as_str()
        .is_some_and(|e| e.contains("config.json"))));
    assert!(d.0.try_wait().unwrap().is_none(), "daemon still running");
    let mut fixed = cfg.clone();
    fixed["asns"] = json!(["62041", "64501", "64496"]);
    t.config(&fixed);
    assert!(eventually(Duration::from_secs(15), || ripe
        .requests()
        .iter()
        .any(|s| s.url.contains("AS64496"))));

    // SIGTERM: out within 5 s, exit 0.
    let start = std::time::Instant::now();
    send_signal(d.pid(), "TERM");
    let status = d.wait_exit(Duration::from_secs(6)).expect("daemon stopped");
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(status.success(), "{status:?}");
    assert!(d.stderr().contains("stopping"));
    assert!(
        read_status(&t)["pid"].is_null(),
        "a stopped daemon leaves no pid"
    );
}

#[test]
fn daemon_stops_promptly_while_fetching() {
    // AS64504 answers after 4 s and the timeout is 10 s: SIGTERM must not wait for it.
    let ripe = fake_ripe();
    let t = TestDir::new();
    let mut cfg = base_config(&ripe, &["64504", "64504"]);
    cfg["asns"] = json!(["64504"]);
    cfg["ripe"]["timeout_seconds"] = json!(30);
    t.config(&cfg);
    let mut d = t.spawn(&["daemon"]);
    assert!(eventually(Duration::from_secs(5), || !ripe
        .requests()
        .is_empty()));
    let start = std::time::Instant::now();
    send_signal(d.pid(), "INT");
    let status = d.wait_exit(Duration::from_secs(6)).expect("daemon stopped");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(status.success());
}

#[test]
fn daemon_survives_corrupt_database() {
    let ripe = fake_ripe();
    let t = TestDir::new();
    let mut cfg = base_config(&ripe, &["62041"]);
    cfg["schedule"] = json!({"interval_seconds": 2});
    t.config(&cfg);
    fs::write(t.file("ripe.db"), vec![0x42u8; 8192]).unwrap();
    let _d = t.spawn(&["daemon"]);
    assert!(eventually(Duration::from_secs(10), || read_status(&t)
        ["last_error"]
        .as_str()
        .is_some_and(|e| e.contains("corrupt"))));
    // The next run starts a fresh database and succeeds.
    assert!(eventually(Duration::from_secs(90), || t
        .file("ripe.db")
        .exists()
        && db::open(&t.paths())
            .map(|d| d.count_values(Kind::Asn).unwrap_or(0) > 0)
            .unwrap_or(false)));
    assert!(fs::read_dir(t.path()).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with("ripe.db.corrupt-")));
}

fn send_signal(pid: u32, sig: &str) {
    let ok = std::process::Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(ok.success());
}

#[test]
fn daemon_catch_up_only_when_due() {
    let ripe = fake_ripe();
    let t = TestDir::new();
    let mut cfg = base_config(&ripe, &["62041"]);
    cfg["schedule"] = json!({"interval_seconds": 3600});
    cfg["outputs"] = json!([{"path": t.file("out.txt").to_str().unwrap()}]);
    t.config(&cfg);
    let now = ripe_cidr_collector::util::unix_now();
    {
        let mut d = db::open(&t.paths()).unwrap();
        d.merge_source(Kind::Asn, "62041", &["10.0.0.0/8".to_string()], now, 7)
            .unwrap();
    }
    // Last success ten minutes ago: not due, but the outputs are rendered once at start.
    fs::write(
        t.file("status.json"),
        json!({"last_success": ripe_cidr_collector::util::iso(now - 600)}).to_string(),
    )
    .unwrap();
    {
        let d = t.spawn(&["daemon"]);
        // The render at start: a collection due would have fetched before it (a
        // render alone is what the schedule starts when no run is due).
        assert!(eventually(Duration::from_secs(10), || t
            .file("out.txt")
            .exists()));
        assert!(
            ripe.requests().is_empty(),
            "no collection when the last one is recent"
        );
        let next = read_status(&t)["next_run"].as_str().unwrap().to_string();
        assert_eq!(next, ripe_cidr_collector::util::iso(now - 600 + 3600));
        drop(d);
    }
    // Last success two hours ago: collected at start.
    fs::write(
        t.file("status.json"),
        json!({"last_success": ripe_cidr_collector::util::iso(now - 7200)}).to_string(),
    )
    .unwrap();
    let _d = t.spawn(&["daemon"]);
    assert!(eventually(Duration::from_secs(10), || !ripe
        .requests()
        .is_empty()));
}

#[test]
fn daemon_with_broken_config_at_start_touches_nothing() {
    let ripe = fake_ripe();
    let t = TestDir::new();
    {
        let mut d = db::open(&t.paths()).unwrap();
        d.merge_source(Kind::Asn, "64496", &["100.64.0.0/16".to_string()], old(), 0)
            .unwrap();
    }
    let before = rows(&t, Kind::Asn, "64496");
    fs::write(
        t.file("config.json"),
        "{\"asns\": [\"64496\",], \"ttl_days\": 0}",
    )
    .unwrap();
    let _d = t.spawn(&["daemon"]);
    assert!(eventually(Duration::from_secs(10), || read_status(&t)
        ["last_error"]
        .as_str()
        .is_some_and(|e| e.contains("config.json"))));
    assert!(ripe.requests().is_empty(), "nothing collected");
    assert_eq!(rows(&t, Kind::Asn, "62041"), []);
    assert_eq!(rows(&t, Kind::Asn, "64496"), before, "nothing swept");
    // Fixed: collected at once.
    let mut cfg = base_config(&ripe, &["62041"]);
    cfg["ttl_days"] = json!(0);
    t.config(&cfg);
    assert!(eventually(Duration::from_secs(10), || !values(
        &t,
        Kind::Asn,
        "62041"
    )
    .is_empty()));
    assert_eq!(rows(&t, Kind::Asn, "64496"), before, "ttl_days 0: kept");
    // Whatever the daemon did before the fix, it did before this run.
    assert!(
        !ripe
            .requests()
            .iter()
            .any(|r| resource_of(&r.url).as_deref() == Some("64496")),
        "nothing collected from the broken configuration"
    );
}

#[test]
fn daemon_retries_failed_outputs_and_never_renders_a_reset_database() {
    let ripe = fake_ripe();
    let t = TestDir::new();
    let mut cfg = base_config(&ripe, &["62041"]);
    cfg["schedule"] = json!({"interval_seconds": 3600});
    let flag = t.file("firewall-ready");
    let log = t.file("loads.log");
    // The "firewall" is not ready at first: the command fails until the flag exists.
    cfg["outputs"] = json!([{"path": t.file("out.txt").to_str().unwrap(),
        "command": format!("test -e {} && wc -l < {} >> {}", flag.display(), t.file("out.txt").display(), log.display())}]);
    cfg["schedule"] = json!({"interval_seconds": 2});
    t.config(&cfg);
    // Start over a corrupt database: moved aside, and no empty list is rendered from
    // the fresh one before a run has filled it.
    fs::write(t.file("ripe.db"), vec![0x42u8; 8192]).unwrap();
    let _d = t.spawn(&["daemon"]);
    assert!(eventually(Duration::from_secs(10), || read_status(&t)
        ["output_failures"]
        .as_object()
        .is_some_and(|m| !m.is_empty())));
    assert!(fs::read_to_string(t.file("out.txt"))
        .unwrap()
        .starts_with("91.108.4.0/22"));
    fs::write(&flag, "").unwrap();
    // Retried without any change in the data.
    assert!(eventually(Duration::from_secs(15), || log.exists()));
    assert!(eventually(Duration::from_secs(5), || read_status(&t)
        ["output_failures"]
        .as_object()
        .is_some_and(|m| m.is_empty())));
    let loads = fs::read_to_string(&log).unwrap();
    assert!(
        loads.lines().all(|n| n.trim() != "0"),
        "an empty list was loaded: {loads}"
    );
}

#[test]
fn daemon_collects_at_start_when_database_is_empty() {
    let ripe = fake_ripe();
    let t = TestDir::new();
    let mut cfg = base_config(&ripe, &["62041"]);
    cfg["schedule"] = json!({"interval_seconds": 3600});
    t.config(&cfg);
    // A recent success, but the database (in RAM, say) is gone.
    fs::write(
        t.file("status.json"),
        json!({"last_success": ripe_cidr_collector::util::iso(ripe_cidr_collector::util::unix_now() - 60)}).to_string(),
    )
    .unwrap();
    let _d = t.spawn(&["daemon"]);
    assert!(eventually(Duration::from_secs(10), || !values(
        &t,
        Kind::Asn,
        "62041"
    )
    .is_empty()));
}

#[cfg(feature = "api")]
#[test]
fn daemon_listen_answers_while_collecting() {
    let ripe = fake_ripe();
    let t = TestDir::new();
    let mut cfg = base_config(&ripe, &["64504"]); // answers after 4 s
    cfg["ripe"]["timeout_seconds"] = json!(10);
    t.config(&cfg);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], free_port()));
    let _d = t.spawn(&["daemon", "--listen", &addr.to_string()]);
    assert!(wait_listening(addr, Duration::from_secs(10)));
    assert!(eventually(Duration::from_secs(5), || !ripe
        .requests()
        .is_empty()));
    // The collection is in flight: the API answers meanwhile.
    let (status, body) = http_get(addr, "/health");
    assert_eq!(status, 200, "{body}");
    assert!(
        values(&t, Kind::Asn, "64504").is_empty(),
        "still collecting"
    );
    assert!(eventually(Duration::from_secs(10), || http_get(
        addr,
        "/addresses"
    )
    .1
        == "198.51.100.0/24\n"));
}

#[test]
fn daemon_retries_failed_sources_before_the_interval() {
    // The first two requests fail (the WAN is not up yet), then RIPEstat answers.
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let ripe = FakeServer::start(move |rq| {
        if is_name_lookup(&rq.url) {
            return Reply::json(404, "{}");
        }
        if c.fetch_add(1, Ordering::SeqCst) < 2 {
            Reply::json(503, "down")
        } else {
            Reply::json(200, AS62041)
        }
    });
    let t = TestDir::new();
    let mut cfg = base_config(&ripe, &["62041"]);
    cfg["ripe"]["retries"] = json!(0);
    cfg["schedule"] = json!({"interval_seconds": 3600, "retry_seconds": 1});
    t.config(&cfg);
    let _d = t.spawn(&["daemon"]);
    // Tried at start, again after 1 s, again after 2 s: in well under the interval.
    assert!(eventually(Duration::from_secs(15), || !values(
        &t,
        Kind::Asn,
        "62041"
    )
    .is_empty()));
    assert!(eventually(Duration::from_secs(5), || read_status(&t)
        ["failures"]
        .as_object()
        .is_some_and(|m| m.is_empty())));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[test]
fn daemon_keeps_its_config_when_the_file_goes_or_changes_quietly() {
    let ripe = fake_ripe();
    let t = TestDir::new();
    let mut cfg = base_config(&ripe, &["62041"]);
    cfg["schedule"] = json!({"interval_seconds": 3600});
    cfg["ttl_days"] = json!(0);
    t.config(&cfg);
    let mut d = t.spawn(&["daemon"]);
    assert!(eventually(Duration::from_secs(10), || !values(
        &t,
        Kind::Asn,
        "62041"
    )
    .is_empty()));
    // Deleted: an error, and the last good configuration stays (nothing re-fetched
    // as "new" when the file comes back).
    fs::remove_file(t.file("config.json")).unwrap();
    assert!(eventually(Duration::from_secs(10), || read_status(&t)
        ["last_error"]
        .as_str()
        .is_some_and(|e| e.contains("config.json"))));
    t.config(&cfg);
    // The daemon starts a collection of new sources in the same turn of its loop as
    // it reloads; SIGUSR1 is read at the start of a later turn, so once it is logged
    // that turn is over.
    assert!(eventually(Duration::from_secs(10), || d
        .stderr()
        .contains("changed; reloaded")));
    send_signal(d.pid(), "USR1");
    assert!(eventually(Duration::from_secs(10), || d
        .stderr()
        .contains("collection asked for")));
    assert!(
        !d.stderr().contains("collecting new sources"),
        "restored sources are not new: {}",
        d.stderr()
    );
    // A change that keeps the size and the modification time is still noticed.
    let text = fs::read_to_string(t.file("config.json")).unwrap();
    let mtime = fs::metadata(t.file("config.json"))
        .unwrap()
        .modified()
        .unwrap();
    let changed = text.replace("62041", "64496");
    assert_eq!(changed.len(), text.len());
    fs::write(t.file("config.json.new"), &changed).unwrap();
    fs::File::options()
        .write(true)
        .open(t.file("config.json.new"))
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    fs::rename(t.file("config.json.new"), t.file("config.json")).unwrap();
    assert!(eventually(Duration::from_secs(10), || ripe
        .requests()
        .iter()
        .any(|s| s.url.contains("AS64496"))));
}

#[test]
fn daemon_keeps_retrying_failed_sources_while_others_are_added() {
    let ripe = fake_ripe();
    // Collections only: each source's holder name is an as-overview call of the same
    // resource, made after its prefixes, which must not count as a second collection
    // (counting it made `== 1` true only in the moment between the two calls).
    let calls = |asn: &str| {
        ripe.requests()
            .iter()
            .filter(|s| s.url.contains("/announced-prefixes/"))
            .filter(|s| s.url.contains(&format!("resource=AS{asn}&")))
            .count()
    };
    let t = TestDir::new();
    let mut cfg = base_config(&ripe, &["62041", "64500"]); // 64500 always answers 500
    cfg["ripe"]["retries"] = json!(0);
    cfg["schedule"] = json!({"interval_seconds": 3600, "retry_seconds": 2});
    t.config(&cfg);
    let _d = t.spawn(&["daemon"]);
    assert!(eventually(Duration::from_secs(10), || calls("64500") == 1));
    // A new source, collected on its own, does not drop the planned retry.
    assert!(t.run(&["asn", "add", "64496"]).status.success());
    assert!(eventually(Duration::from_secs(10), || calls("64496") == 1));
    assert!(eventually(Duration::from_secs(10), || calls("64500") >= 2));
}

#[test]
fn daemon_retries_only_the_failed_output() {
    let ripe = fake_ripe();
    let t = TestDir::new();
    let mut cfg = base_config(&ripe, &["62041"]);
    cfg["schedule"] = json!({"interval_seconds": 3600, "retry_seconds": 1});
    let good = t.file("good.log");
    cfg["outputs"] = json!([
        {"path": t.file("good.txt").to_str().unwrap(), "command": format!("echo x >> {}", good.display())},
        {"path": t.file("bad.txt").to_str().unwrap(), "command": format!("echo y >> {}; exit 1", t.file("bad.log").display())}
    ]);
    t.config(&cfg);
    let _d = t.spawn(&["daemon"]);
    // The bad output is tried again and again (1 s, 2 s, 4 s, ...)...
    assert!(eventually(Duration::from_secs(10), || read_status(&t)
        ["output_failures"]
        .as_object()
        .is_some_and(|m| m.len() == 1)));
    assert!(eventually(Duration::from_secs(15), || fs::read_to_string(
        t.file("bad.log")
    )
    .is_ok_and(|l| l.lines().count() >= 3)));
    // ...but the good one's command ran once.
    assert_eq!(fs::read_to_string(&good).unwrap().lines().count(), 1);
    assert!(read_status(&t)["output_failures"]
        .as_object()
        .unwrap()
        .keys()
        .all(|k| k.ends_with("bad.txt")));
}
