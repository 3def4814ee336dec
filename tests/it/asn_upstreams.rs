//! ASN upstreams in order: RIPEstat answering 500, then timing out, then 400 for an
//! unknown ASN, each time the next upstream answers (bgp.tools' table, fetched once
//! for all ASNs with the configured User-Agent and not again within refresh_hours;
//! ipverse's per-family lists); which upstream answered is in status.json and
//! `asn list`. `bgptools` without a `user_agent` is a config error naming the key.

use std::fs;
use std::sync::atomic::{AtomicBool, AtomicU8};
use std::time::Duration;

use ripe_cidr_collector::collect::run::collect;
use ripe_cidr_collector::config;
use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;
use serde_json::json;

use crate::common::{resource_of, FakeServer, Reply, TestDir};

const UA: &str = "rcc-test - admin@example.org";
const ERROR: &str = include_str!("../fixtures/ripestat/error.json");

fn fake() -> FakeServer {
    FakeServer::start(|rq| {
        let plain = |status, body: String| {
            let mut r = Reply::json(status, body.into_bytes());
            r.headers = vec![("Content-Type".into(), "text/plain".into())];
            r
        };
        if rq.url.starts_with("/table.jsonl") {
            let mut t = String::new();
            for i in 0..2000u32 {
                // Other ASNs' lines, dropped as they stream.
                t.push_str(&format!(
                    "{{\"CIDR\":\"10.{}.{}.0/24\",\"ASN\":{},\"Hits\":3}}\n",
                    i / 256,
                    i % 256,
                    100 + i
                ));
            }
            t.push_str("{\"CIDR\":\"198.51.100.0/24\",\"ASN\":64500,\"Hits\":9}\n");
            // With spaces, as JSON writers put them (a mirror's table): read whole,
            // not cut at the first space as a feed's line is.
            t.push_str("{\"CIDR\": \"2001:db8:500::/48\", \"ASN\": 64500, \"Hits\": 9}\n");
            t.push_str("{\"CIDR\":\"203.0.113.0/24\",\"ASN\":64501,\"Hits\":9}\n");
            return plain(200, t);
        }
        if rq.url == "/ipverse/64502/ipv4.txt" {
            return plain(200, "# AS64502\n192.0.2.0/24\n".into());
        }
        if rq.url.starts_with("/ipverse/") {
            return plain(404, "not found".into());
        }
        match resource_of(&rq.url).as_deref() {
            Some("64500") => Reply::json(500, "oops"),
            Some("64501") => Reply::json(200, "{}").delayed(Duration::from_secs(3)),
            Some("64502") | Some("64503") => Reply::json(400, ERROR),
            _ => Reply::json(404, "{}"),
        }
    })
}

fn cfg_json(up: &FakeServer, order: &[&str]) -> serde_json::Value {
    json!({
        "asns": ["64500", "64501", "64502", "64503"],
        "asn_upstreams": order,
        "ripe": {"url": up.url("/data/announced-prefixes/data.json"), "timeout_seconds": 1, "retries": 0},
        "bgptools": {"url": up.url("/table.jsonl"), "user_agent": UA, "refresh_hours": 2},
        "ipverse": {"url": up.url("/ipverse/{asn}/ipv{family}.txt")}
    })
}

fn values(t: &TestDir, asn: &str) -> Vec<String> {
    let d = db::open(&t.paths()).unwrap();
    d.rows(Kind::Asn, asn)
        .unwrap()
        .into_iter()
        .map(|r| r.value)
        .collect()
}

#[test]
fn failover_through_bgptools_and_ipverse() {
    let up = fake();
    let t = TestDir::new();
    t.config(&cfg_json(&up, &["ripestat", "bgptools", "ipverse"]));
    let cfg = config::load(&t.paths().config()).unwrap().config;
    let (stop, phase) = (AtomicBool::new(false), AtomicU8::new(0));
    let report = collect(&t.paths(), &cfg, None, &stop, &phase).unwrap();
    let by = |asn: &str| {
        report
            .sources
            .iter()
            .find(|s| s.source == asn)
            .unwrap_or_else(|| panic!("{asn} not in {report:?}"))
    };
    // 500 -> bgptools, timeout -> bgptools, 400 unknown -> bgptools has not it ->
    // ipverse; unknown everywhere fails.
    assert_eq!(by("64500").upstream, Some("bgptools"));
    assert_eq!(by("64501").upstream, Some("bgptools"));
    assert_eq!(by("64502").upstream, Some("ipverse"));
    assert!(by("64503").outcome.is_err());
    assert_eq!(
        values(&t, "64500"),
        ["198.51.100.0/24", "2001:db8:500::/48"]
    );
    assert_eq!(values(&t, "64501"), ["203.0.113.0/24"]);
    assert_eq!(values(&t, "64502"), ["192.0.2.0/24"]);
    let tables: Vec<_> = up
        .requests()
        .into_iter()
        .filter(|s| s.url.starts_with("/table.jsonl"))
        .collect();
    assert_eq!(tables.len(), 1, "one download for every ASN");
    assert_eq!(tables[0].header("User-Agent"), Some(UA));
    // Again within refresh_hours: answered from what the download kept.
    let again = collect(&t.paths(), &cfg, None, &stop, &phase).unwrap();
    assert!(again.sources.iter().filter(|s| s.outcome.is_ok()).count() == 3);
    let downloads = up
        .requests()
        .iter()
        .filter(|s| s.url.starts_with("/table.jsonl"))
        .count();
    assert_eq!(downloads, 1, "not again within refresh_hours");
    // Other requests go out with the program's own User-Agent.
    let ripe = up.requests();
    let ripe = ripe.iter().find(|s| s.url.contains("64500")).unwrap();
    assert!(ripe
        .header("User-Agent")
        .unwrap()
        .starts_with("ripe-cidr-collector/"));
}

#[test]
fn status_and_asn_list_name_the_upstream() {
    let up = fake();
    let t = TestDir::new();
    t.config(&cfg_json(&up, &["ripestat", "ipverse"]));
    let out = t.run(&["run"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("ripestat failed"), "{err}");
    let st = t.run(&["status", "--json"]);
    let st: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(st["status"]["upstreams"]["AS64502"], "ipverse", "{st}");
    // `asn list` keeps to its three documented columns; the upstream is in status.
    let list = t.run(&["asn", "list"]);
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.lines()
            .any(|l| l.starts_with("64502\t1\t") && l.split('\t').count() == 4),
        "{list}"
    );
}

#[test]
fn bgptools_without_user_agent_is_a_config_error() {
    let up = fake();
    let t = TestDir::new();
    let mut cfg = cfg_json(&up, &["bgptools"]);
    cfg["bgptools"]
        .as_object_mut()
        .unwrap()
        .remove("user_agent");
    t.config(&cfg);
    {
        let mut d = db::open(&t.paths()).unwrap();
        d.merge_source(Kind::Asn, "64500", &["198.18.0.0/15".to_string()], 1_000, 0)
            .unwrap();
    }
    let before = fs::read(t.file("config.json")).unwrap();
    for args in [&["run"][..], &["asn", "add", "1"]] {
        let out = t.run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        assert!(err.contains("bgptools.user_agent"), "{args:?}: {err}");
    }
    assert_eq!(fs::read(t.file("config.json")).unwrap(), before);
    assert_eq!(values(&t, "64500"), ["198.18.0.0/15"]);
    assert!(up.requests().is_empty(), "nothing fetched");
}

#[test]
fn separate_runs_download_the_table_once_per_refresh_hours() {
    let up = fake();
    let t = TestDir::new();
    let mut cfg = cfg_json(&up, &["bgptools", "ipverse"]);
    cfg["asns"] = json!(["64500", "64502"]);
    t.config(&cfg);
    let out = t.run(&["run"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = |t: &TestDir| {
        let d = db::open(&t.paths()).unwrap();
        d.rows(Kind::Asn, "64500").unwrap()[0].last_seen.clone()
    };
    let first_seen = seen(&t);
    std::thread::sleep(Duration::from_millis(1100));
    // A cron `run` between downloads succeeds: 64500, which the table answered, keeps
    // its values as seen again (as a feed's 304); 64502 (not in the table) is
    // answered by the next upstream.
    let out = t.run(&["run"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let downloads = |up: &FakeServer| {
        up.requests()
            .iter()
            .filter(|s| s.url.starts_with("/table.jsonl"))
            .count()
    };
    assert_eq!(downloads(&up), 1, "{err}");
    assert_eq!(
        values(&t, "64500"),
        ["198.51.100.0/24", "2001:db8:500::/48"]
    );
    assert!(seen(&t) > first_seen, "seen again");
    assert_eq!(values(&t, "64502"), ["192.0.2.0/24"]);
    let st = t.run(&["status", "--json"]);
    let st: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(st["status"]["upstreams"]["AS64500"], "bgptools", "{st}");
    assert_eq!(st["status"]["failures"], json!({}), "{st}");
    // An ASN added since the download waits for the next one; the error names
    // bgp.tools, not RIPEstat.
    cfg["asns"] = json!(["64500", "64501"]);
    cfg["asn_upstreams"] = json!(["bgptools"]);
    t.config(&cfg);
    let out = t.run(&["run"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("AS64501") && err.contains("bgp.tools error") && err.contains("added since"),
        "{err}"
    );
    assert!(!err.contains("RIPEstat"), "{err}");
    assert_eq!(downloads(&up), 1, "{err}");
}
