//! `service verify` through the real binary, against a fake RIPEstat `as-overview`
//! (the shape of `tests/fixtures/ripestat/as-overview.json`) and fake vendor feeds on
//! 127.0.0.1, with a catalog file in the data directory: every check holding (exit
//! 0), a holder that drifted, an ASN no longer announced and an empty feed (exit 1,
//! each listed), an upstream that failed (exit 3).

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::common::{resource_of, FakeServer, Reply, TestDir};

/// What the fake says: ASN -> (holder, announced), or a status to fail with; the feed.
#[derive(Clone)]
struct World {
    holders: Vec<(&'static str, &'static str, bool)>,
    fail: Option<u16>,
    feed: &'static str,
}

fn fake(world: Arc<Mutex<World>>) -> FakeServer {
    FakeServer::start(move |rq| {
        let w = world.lock().unwrap().clone();
        if rq.url.starts_with("/data/as-overview/") {
            if let Some(status) = w.fail {
                return Reply::json(status, "{}");
            }
            let asn = resource_of(&rq.url).unwrap_or_default();
            let (_, holder, announced) = w.holders.iter().find(|h| h.0 == asn).unwrap();
            let body = json!({"status": "ok", "status_code": 200, "version": "1.3",
                "data_call_name": "as-overview", "data_call_status": "supported - based on 2.1",
                "data": {"type": "as", "resource": asn, "holder": holder, "announced": announced}});
            return Reply::json(200, body.to_string());
        }
        let mut r = Reply::json(200, w.feed.as_bytes().to_vec());
        r.headers = vec![("Content-Type".into(), "text/plain".into())];
        r
    })
}

fn setup(up: &FakeServer) -> TestDir {
    let t = TestDir::new();
    let entry = |name: &str, asns: &[(&str, &str)], feeds: Vec<String>| {
        json!({"name": name, "title": name, "asns": asns.iter()
            .map(|(a, h)| json!({"asn": a, "holder": h})).collect::<Vec<_>>(),
            "feeds": feeds, "domains": [], "sources": ["https://example.org/facts"],
            "reviewed": "2026-12-06"})
    };
    let catalog = json!({"services": [
        entry("chat", &[("62041", "TELEGRAM"), ("62014", "telegram")], vec![up.url("/cidr.txt")]),
        entry("cdn", &[("13335", "CLOUDFLARENET")], vec![]),
    ]});
    std::fs::write(t.file("services.json"), catalog.to_string()).unwrap();
    t.config(&json!({
        "ripe": {"url": up.url("/data/announced-prefixes/data.json"), "timeout_seconds": 2, "retries": 0}
    }));
    t
}

fn good() -> World {
    World {
        holders: vec![
            ("62041", "TELEGRAM - Telegram Messenger Inc", true),
            ("62014", "TELEGRAM - Telegram Messenger Inc", true),
            ("13335", "CLOUDFLARENET - Cloudflare, Inc.", true),
        ],
        fail: None,
        feed: "91.108.56.0/22\n2001:b28:f23d::/48\n",
    }
}

#[test]
fn verify_finds_drift_and_upstream_failures() {
    let world = Arc::new(Mutex::new(good()));
    let up = fake(world.clone());
    let t = setup(&up);
    let out = t.run(&["service", "verify"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(out.stdout.is_empty());
    // Three ASNs and one feed checked.
    assert_eq!(up.requests().len(), 4);
    let v: Value = serde_json::from_slice(&t.run(&["service", "verify", "--json"]).stdout).unwrap();
    assert_eq!(v["holds"], true);
    assert_eq!(v["checks"].as_array().unwrap().len(), 4);

    // The holder drifted, another ASN is no longer announced, the feed is empty.
    {
        let mut w = world.lock().unwrap();
        w.holders[0].1 = "VK-AS - VK LLC";
        w.holders[2].2 = false;
        w.feed = "# nothing here any more\n";
    }
    let out = t.run(&["service", "verify"]);
    assert_eq!(out.status.code(), Some(1));
    let listed = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 3, "{listed}");
    assert!(
        lines[0].starts_with(
            "chat\tAS62041\tholder \"VK-AS - VK LLC\" does not start with \"TELEGRAM\""
        ),
        "{listed}"
    );
    assert_eq!(lines[1], "cdn\tAS13335\tnot announced");
    assert!(
        lines[2].starts_with(&format!("chat\t{}\tno valid line", up.url("/cidr.txt"))),
        "{listed}"
    );
    // One service only: its checks alone.
    let out = t.run(&["service", "verify", "cdn", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["checks"],
        json!([{"service": "cdn", "what": "AS13335", "holds": false, "drift": "not announced"}])
    );

    // RIPEstat fails: nothing can be said, exit 3.
    *world.lock().unwrap() = World {
        fail: Some(500),
        ..good()
    };
    let out = t.run(&["service", "verify", "chat"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("failed: RIPEstat as-overview: HTTP status 500"));

    // An unknown service is a usage error naming it.
    let out = t.run(&["service", "verify", "chatt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("chat"));
}
