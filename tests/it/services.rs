//! Services end to end (issue 40): a catalog file in the data directory, `service
//! add` into a group collecting each ASN, feed and host name once (the fake upstream
//! counts its requests), provenance in `lookup`, `--purge` deleting only what nothing
//! else names, a broken catalog refusing listings, and the `/services` routes.

use std::collections::BTreeMap;

use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;
use serde_json::{json, Value};

use crate::common::{http_get, http_send, resource_of, ripe_body, FakeServer, Reply, TestDir};

/// Two services sharing an ASN, a feed and a host name; `chat` also brings what only
/// it names.
fn catalog(fake: &FakeServer) -> Value {
    let entry = |name: &str, asns: &[&str], feeds: Vec<String>, domains: &[&str]| {
        json!({
            "name": name, "title": name.to_uppercase(),
            "asns": asns.iter().map(|a| json!({"asn": a, "holder": "HOLDER"})).collect::<Vec<_>>(),
            "feeds": feeds, "domains": domains,
            "sources": ["https://example.org/facts"], "reviewed": "2026-12-01"
        })
    };
    json!({"services": [
        entry("chat", &["64500", "64501"], vec![fake.url("/shared.txt"), fake.url("/chat.txt")],
              &["chat.example.test", "shared.example.test"]),
        entry("video", &["64501", "64502"], vec![fake.url("/shared.txt")], &["shared.example.test"]),
    ]})
}

/// RIPEstat, two feeds and DoH, answering every ASN and name with one value of its own.
fn fake() -> FakeServer {
    FakeServer::start(|rq| {
        let plain = |body: &str| {
            let mut r = Reply::json(200, body.as_bytes().to_vec());
            r.headers = vec![("Content-Type".into(), "text/plain".into())];
            r
        };
        if rq.url.starts_with("/data/announced-prefixes/") {
            let asn: u32 = resource_of(&rq.url).unwrap().parse().unwrap();
            return Reply::json(200, ripe_body(&[format!("20.{}.0.0/16", asn - 64400)]));
        }
        match rq.url.as_str() {
            "/shared.txt" => plain("45.0.0.0/25\n"),
            "/chat.txt" => plain("45.0.0.128/25\n"),
            u if u.starts_with("/dns-query") => {
                let name = u
                    .split(['?', '&'])
                    .find_map(|kv| kv.strip_prefix("name="))
                    .unwrap_or("");
                let ip = if name.starts_with("chat") {
                    "46.0.0.1"
                } else {
                    "46.0.0.2"
                };
                let body = if u.contains("type=A&") || u.ends_with("type=A") {
                    json!({"Status": 0, "Answer": [{"name": name, "type": 1, "TTL": 60, "data": ip}]})
                } else {
                    json!({"Status": 0, "Answer": []})
                };
                Reply::json(200, body.to_string())
            }
            _ => Reply::json(404, "{}"),
        }
    })
}

fn setup(fake: &FakeServer) -> TestDir {
    let t = TestDir::new();
    std::fs::write(t.file("services.json"), catalog(fake).to_string()).unwrap();
    t.config(&json!({
        "asns": ["64500"],
        "groups": {"vpn": {}},
        "ripe": {"url": fake.url("/data/announced-prefixes/data.json"), "retries": 0},
        "dns": {"resolver": "doh", "doh_url": fake.url("/dns-query"), "timeout_seconds": 5}
    }));
    t
}

fn ok(t: &TestDir, args: &[&str]) -> String {
    let out = t.run(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn service_add_collects_each_source_once() {
    let fake = fake();
    let t = setup(&fake);
    // By hand in `default` and by `chat`; `chat` and `video` share an ASN, a feed and a name.
    ok(&t, &["asn", "add", "64501", "--group", "vpn"]);
    ok(&t, &["service", "add", "chat", "video", "--group", "vpn"]);
    ok(&t, &["run"]);
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for rq in fake.requests() {
        let key = match resource_of(&rq.url) {
            Some(asn) if rq.url.contains("announced-prefixes") => format!("AS{asn}"),
            _ => rq.url.clone(),
        };
        *count.entry(key).or_default() += 1;
    }
    for asn in ["AS64500", "AS64501", "AS64502"] {
        assert_eq!(count.get(asn), Some(&1), "{asn} fetched once: {count:?}");
    }
    assert_eq!(count.get("/shared.txt"), Some(&1), "{count:?}");
    assert_eq!(count.get("/chat.txt"), Some(&1), "{count:?}");
    // A and AAAA of each name, once each.
    for name in ["chat.example.test", "shared.example.test"] {
        let asked: Vec<_> = count.iter().filter(|(k, _)| k.contains(name)).collect();
        assert!(
            asked.len() == 2 && asked.iter().all(|(_, n)| **n == 1),
            "{name}: {count:?}"
        );
    }
    // The group lists what its services brought, as if named there.
    let list = ok(&t, &["export", "--group", "vpn"]);
    for v in [
        "20.100.0.0/16",
        "20.101.0.0/16",
        "20.102.0.0/16",
        "45.0.0.0/25",
        "45.0.0.128/25",
        "46.0.0.1",
        "46.0.0.2",
    ] {
        assert!(list.lines().any(|l| l == v), "{v} in\n{list}");
    }
    // Only what was named by hand is written into the file's lists.
    let cfg: Value =
        serde_json::from_str(&std::fs::read_to_string(t.file("config.json")).unwrap()).unwrap();
    assert_eq!(cfg["groups"]["vpn"]["asns"], json!(["64501"]));
    assert_eq!(cfg["groups"]["vpn"]["services"], json!(["chat", "video"]));
    // The dnsmasq-style host names cover subdomains: the group's fqdn list has them.
    let fqdns = ok(&t, &["fqdn", "list", "--group", "vpn"]);
    assert!(fqdns.contains("chat.example.test"), "{fqdns}");
}

#[test]
fn lookup_names_the_services_behind_a_source() {
    let fake = fake();
    let t = setup(&fake);
    ok(&t, &["service", "add", "chat", "video", "--group", "vpn"]);
    ok(&t, &["run"]);
    let v: Value = serde_json::from_str(&ok(&t, &["lookup", "20.101.0.1", "--json"])).unwrap();
    assert_eq!(v["matches"][0]["source"], "64501");
    assert_eq!(v["matches"][0]["services"], json!(["chat", "video"]));
    let v: Value = serde_json::from_str(&ok(&t, &["lookup", "20.100.0.1", "--json"])).unwrap();
    assert_eq!(v["matches"][0]["services"], json!(["chat"]), "{v}");
    let text = ok(&t, &["lookup", "20.102.0.1"]);
    assert!(text.trim_end().ends_with("\tservice:video"), "{text}");
    // `status --json` and `/status` carry it per source.
    let st: Value = serde_json::from_str(&ok(&t, &["status", "--json"])).unwrap();
    let vpn = st["overview"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "vpn")
        .unwrap()
        .clone();
    let line = vpn["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["source"] == "64502")
        .unwrap()
        .clone();
    assert_eq!(line["services"], json!(["video"]));
    // `changes`, the detailed listing and `explain` name them too.
    let ch: Value =
        serde_json::from_str(&ok(&t, &["changes", "--group", "vpn", "--json"])).unwrap();
    let row = ch["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["source"] == "64502")
        .unwrap()
        .clone();
    assert_eq!(row["services"], json!(["video"]), "{ch}");
    assert!(ok(&t, &["changes", "--group", "vpn"]).contains("\tservice:video\n"));
    let det = ok(
        &t,
        &["export", "--group", "vpn", "--format", "json", "--details"],
    );
    let det: Value = serde_json::from_str(&det).unwrap();
    let v = det["addresses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["value"] == "20.101.0.0/16")
        .unwrap()
        .clone();
    assert_eq!(v["sources"][0]["services"], json!(["chat", "video"]), "{v}");
    let out = t.run(&["explain", "20.101.0.1", "--group", "vpn"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("from AS64501 (service chat, video)"),
        "{text}"
    );
    // A source only a service brings is not removed by hand: the message says which.
    let out = t.run(&["asn", "remove", "64502", "--group", "vpn"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("brought by service video"), "{err}");
}

#[test]
fn purge_deletes_only_what_nothing_else_names() {
    let fake = fake();
    let t = setup(&fake);
    ok(&t, &["service", "add", "chat", "video", "--group", "vpn"]);
    ok(&t, &["run"]);
    ok(
        &t,
        &["service", "remove", "chat", "--group", "vpn", "--purge"],
    );
    let d = db::open(&t.paths()).unwrap();
    let stored = |k: Kind, s: &str| !d.rows(k, s).unwrap().is_empty();
    // Named by hand in `default`, or brought by `video` too: kept.
    assert!(stored(Kind::Asn, "64500"));
    assert!(stored(Kind::Asn, "64501"));
    assert!(stored(Kind::Feed, &fake.url("/shared.txt")));
    assert!(stored(Kind::Fqdn, "shared.example.test"));
    // Only `chat` named them: deleted now.
    assert!(!stored(Kind::Feed, &fake.url("/chat.txt")));
    assert!(!stored(Kind::Fqdn, "chat.example.test"));
    // Removing it again: not configured (exit 1, as for a source).
    let out = t.run(&["service", "remove", "chat", "--group", "vpn"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn unknown_services_are_refused_with_a_hint_changing_nothing() {
    let fake = fake();
    let t = setup(&fake);
    let before = std::fs::read(t.file("config.json")).unwrap();
    let out = t.run(&["service", "add", "chat", "vidoe", "--group", "vpn"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("\"vidoe\"") && err.contains("did you mean video"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(t.file("config.json")).unwrap(),
        before,
        "all or nothing"
    );
    // In config.json: the file's error names the key and the service.
    t.config(&json!({"services": ["chatt"]}));
    let out = t.run(&["export"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("services[0]") && err.contains("did you mean chat"),
        "{err}"
    );
}

#[test]
fn a_broken_catalog_refuses_export_and_addresses() {
    let fake = fake();
    let t = setup(&fake);
    ok(&t, &["service", "add", "chat", "--group", "vpn"]);
    ok(&t, &["run"]);
    let broken = catalog(&fake)
        .to_string()
        .replacen("\"64500\"", "\"AS-x\"", 1);
    std::fs::write(t.file("services.json"), broken).unwrap();
    for group in ["vpn", "default", "*"] {
        let out = t.run(&["export", "--group", group]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{group}: {err}");
        assert!(out.stdout.is_empty());
        assert!(
            err.contains("services.json") && err.contains("services[0] (chat).asns[0].asn"),
            "{err}"
        );
    }
    let (mut serve, addr) = t.spawn_listening(&["serve"]);
    let (status, body) = http_get(addr, "/addresses?group=vpn");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("services.json"), "{body}");
    let (status, _) = http_get(addr, "/addresses");
    assert_eq!(status, 503);
    let (_, body) = http_get(addr, "/health");
    assert!(
        body.contains("degraded") && body.contains("services.json"),
        "{body}"
    );
    drop(serve.0.kill());
    // Mended, a server lists again; broken under it, /health says so at once.
    std::fs::write(t.file("services.json"), catalog(&fake).to_string()).unwrap();
    let (mut serve, addr) = t.spawn_listening(&["serve"]);
    assert_eq!(http_get(addr, "/addresses?group=vpn").0, 200);
    std::fs::write(t.file("services.json"), "{").unwrap();
    let (_, body) = http_get(addr, "/health");
    assert!(
        body.contains("degraded") && body.contains("services.json"),
        "{body}"
    );
    drop(serve.0.kill());
}

#[test]
fn the_services_routes() {
    let fake = fake();
    let t = setup(&fake);
    let (mut serve, addr) = t.spawn_listening(&["serve"]);
    let (status, body) = http_send(
        addr,
        "POST",
        "/services",
        r#"{"service": "chat", "group": "vpn"}"#,
    );
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"service": "chat", "group": "vpn", "added": true})
    );
    let (status, _) = http_send(
        addr,
        "POST",
        "/services?group=vpn",
        r#"{"service": "chat"}"#,
    );
    assert_eq!(status, 200, "already there");
    for (bad, word) in [
        (
            r#"{"service": "chta", "group": "vpn"}"#,
            "did you mean chat",
        ),
        (r#"{"service": "Chat!"}"#, "Chat!"),
        (r#"{"service": "chat", "extra": 1}"#, "extra"),
        (r#"{"service": "chat", "group": "nope"}"#, "nope"),
        ("[1", "JSON"),
    ] {
        let (status, body) = http_send(addr, "POST", "/services", bad);
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body.contains(word), "{bad}: {body}");
    }
    let (status, body) = http_get(addr, "/services");
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["services"][0]["name"], "chat");
    assert_eq!(v["services"][0]["groups"], json!(["vpn"]));
    assert_eq!(v["services"][1]["groups"], json!([]));
    assert_eq!(
        v["services"][0]["asns"][0],
        json!({"asn": "64500", "holder": "HOLDER"})
    );
    // The answer is a catalog file: saved as services.json it reads back.
    std::fs::write(t.file("copy.json"), &body).unwrap();
    let (status, _) = http_send(addr, "DELETE", "/services/chat?group=vpn", "");
    assert_eq!(status, 200);
    let (status, body) = http_send(addr, "DELETE", "/services/chat?group=vpn", "");
    assert_eq!(status, 404, "{body}");
    drop(serve.0.kill());
    t.config(&json!({"catalog": {"path": "copy.json"}, "services": ["video"]}));
    assert!(ok(&t, &["service", "list"]).contains("video\tVIDEO\t2\t1\t1\t2026-12-01\tdefault"));
}

#[test]
fn the_routes_need_the_token_when_one_is_set() {
    let fake = fake();
    let t = setup(&fake);
    t.config(&json!({"groups": {"vpn": {}}, "api": {"token": "s3cret"}}));
    let (mut serve, addr) = t.spawn_listening(&["serve"]);
    let (status, _) = http_send(addr, "POST", "/services", r#"{"service": "chat"}"#);
    assert_eq!(status, 401);
    let (status, _) = http_send(addr, "DELETE", "/services/chat", "");
    assert_eq!(status, 401);
    let (status, _) = http_get(addr, "/services");
    assert_eq!(status, 200);
    drop(serve.0.kill());
}
