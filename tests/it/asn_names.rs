//! Holder names of the configured ASNs: fetched (`as-overview`, from a fake RIPEstat
//! on 127.0.0.1 in the shape of `tests/fixtures/ripestat/as-overview.json`) when an
//! ASN is first collected, kept in `ripe.db`, not fetched again within a week, shown
//! in `asn list`, `asn list --json` = `GET /asns`, and `status`; a name that cannot
//! be fetched is unknown and never fails its source.

use serde_json::{json, Value};

use crate::common::{http_get, resource_of, FakeServer, Reply, TestDir};

const PREFIXES: &str = include_str!("../fixtures/ripestat/AS62041.json");
const OVERVIEW: &str = include_str!("../fixtures/ripestat/as-overview.json");
const HOLDER: &str = "TELEGRAM - Telegram Messenger Inc";

fn fake() -> FakeServer {
    FakeServer::start(|rq| {
        let asn = resource_of(&rq.url).unwrap_or_default();
        if rq.url.starts_with("/data/announced-prefixes/") {
            Reply::json(200, PREFIXES)
        } else if rq.url.starts_with("/data/as-overview/") && asn == "62041" {
            Reply::json(200, OVERVIEW)
        } else {
            // AS211157's name cannot be had.
            Reply::json(500, "{}")
        }
    })
}

fn overviews(up: &FakeServer, asn: &str) -> usize {
    up.requests()
        .iter()
        .filter(|r| r.url.starts_with("/data/as-overview/"))
        .filter(|r| resource_of(&r.url).as_deref() == Some(asn))
        .count()
}

#[test]
fn names_are_fetched_once_kept_and_shown() {
    let up = fake();
    let t = TestDir::new();
    t.config(&json!({
        "asns": ["62041", "211157"],
        "ripe": {"url": up.url("/data/announced-prefixes/data.json"), "timeout_seconds": 2, "retries": 0}
    }));
    // Before any run: no name known, the column says so.
    let out = t.run(&["asn", "list"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "62041\t0\t-\t-\n211157\t0\t-\t-\n"
    );
    let run = t.run(&["run"]);
    let err = String::from_utf8_lossy(&run.stderr);
    // The failed name of AS211157 fails nothing.
    assert_eq!(run.status.code(), Some(0), "{err}");
    assert_eq!((overviews(&up, "62041"), overviews(&up, "211157")), (1, 1));

    let out = t.run(&["asn", "list"]);
    let listed = String::from_utf8_lossy(&out.stdout).to_string();
    let lines: Vec<Vec<&str>> = listed.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(lines[0][0], "62041");
    assert_eq!(lines[0][1], "12");
    assert_eq!(lines[0][3], HOLDER, "{listed}");
    assert_eq!(lines[1][0], "211157");
    assert_eq!(lines[1][3], "-", "{listed}");

    let json_out = t.run(&["asn", "list", "--json"]);
    let v: Value = serde_json::from_slice(&json_out.stdout).unwrap();
    assert_eq!(
        v,
        json!({"asns": ["62041", "211157"], "names": {"62041": HOLDER}})
    );
    let (_p, addr) = t.spawn_listening(&["serve"]);
    let (status, body) = http_get(addr, "/asns");
    assert_eq!(status, 200);
    assert_eq!(body.as_bytes(), &json_out.stdout[..]);
    let (_, st) = http_get(addr, "/status");
    let st: Value = serde_json::from_str(&st).unwrap();
    let line = |asn: &str| {
        st["groups"][0]["sources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["source"] == asn)
            .cloned()
            .unwrap()
    };
    assert_eq!(line("62041")["holder"], HOLDER);
    assert_eq!(line("211157").get("holder"), None);

    // Within the week the name is not asked again; the unknown one is.
    let again = t.run(&["run"]);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!((overviews(&up, "62041"), overviews(&up, "211157")), (1, 2));
}
