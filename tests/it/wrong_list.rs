//! "Never a wrong list": a broken `config.json` refuses every listing (never every
//! stored value without exclusions), a server that read a good one keeps it.

use std::fs;

use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;
use serde_json::json;

use crate::common::{http_get, TestDir};

/// A group `video` and an exclusion (the LAN kept out of the VPN) over stored values
/// of two ASNs.
fn grouped(t: &TestDir) {
    let mut d = db::open(&t.paths()).unwrap();
    let now = ripe_cidr_collector::util::unix_now();
    let v = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    d.merge_source(
        Kind::Asn,
        "1",
        &v(&["10.0.0.0/8", "192.168.1.0/24"]),
        now,
        7,
    )
    .unwrap();
    d.merge_source(Kind::Asn, "2", &v(&["203.0.113.0/24"]), now, 7)
        .unwrap();
    t.config(&json!({
        "asns": ["1"], "exclude": ["192.168.0.0/16"],
        "groups": {"video": {"asns": ["2"]}}
    }));
}

const BROKEN: &str = "{\"asns\": [\"1\",";

#[test]
fn a_broken_config_refuses_every_listing_of_the_cli() {
    let t = TestDir::new();
    grouped(&t);
    let out = t.run(&["export"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "10.0.0.0/8\n");
    fs::write(t.file("config.json"), BROKEN).unwrap();
    for args in [
        &["export"][..],
        &["export", "--group", "*"],
        &["export", "--group", "default", "--format", "nft"],
        &["export", "--group", "video"],
        &["export", "--format", "json", "--details"],
        &["changes", "--group", "*"],
        &["changes", "--group", "default"],
        &["render"],
    ] {
        let out = t.run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?} printed a list");
        assert!(
            err.contains("config.json") && err.contains("line 1"),
            "{args:?} names the file and the problem: {err}"
        );
    }
}

#[test]
fn a_server_keeps_the_good_config_it_read_and_says_degraded() {
    let t = TestDir::new();
    grouped(&t);
    let (_s, addr) = t.spawn_listening(&["serve"]);
    fs::write(t.file("config.json"), BROKEN).unwrap();
    for (target, want) in [
        ("/addresses", "10.0.0.0/8\n"),
        ("/addresses?group=*", "10.0.0.0/8\n203.0.113.0/24\n"),
        ("/addresses?group=video", "203.0.113.0/24\n"),
    ] {
        assert_eq!(http_get(addr, target), (200, want.to_string()), "{target}");
    }
    let (status, body) = http_get(addr, "/health");
    let h: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!((status, h["status"].as_str()), (200, Some("degraded")));
    let e = h["error"].as_str().unwrap();
    assert!(
        e.contains("config.json") && e.contains("configuration read before"),
        "{e}"
    );
}

#[test]
fn a_server_that_never_read_a_good_config_refuses_every_listing() {
    let t = TestDir::new();
    grouped(&t);
    fs::write(t.file("config.json"), BROKEN).unwrap();
    let (_s, addr) = t.spawn_listening(&["serve"]);
    for target in [
        "/addresses",
        "/addresses?group=*",
        "/addresses?group=default&format=nft",
        "/addresses?format=json&details=1",
        "/changes?group=*",
    ] {
        let (status, body) = http_get(addr, target);
        assert_eq!(status, 503, "{target}: {body}");
        assert!(
            body.contains("config.json") && body.contains("line 1"),
            "{target}: {body}"
        );
    }
    let (_, body) = http_get(addr, "/health");
    assert!(
        body.contains("\"degraded\"") && body.contains("no listing"),
        "{body}"
    );
}

/// The sources of a row of `changes` (its third column) or of `asn list` (its first),
/// and the number of columns of each line.
fn column(out: &std::process::Output, i: usize) -> (Vec<String>, Vec<usize>) {
    let text = String::from_utf8_lossy(&out.stdout);
    let lines = text.lines();
    (
        lines
            .clone()
            .map(|l| l.split('\t').nth(i).unwrap_or_default().to_string())
            .collect(),
        lines.map(|l| l.split('\t').count()).collect(),
    )
}

#[test]
fn source_lists_and_changes_default_to_the_group_default() {
    let t = TestDir::new();
    grouped(&t);
    // `asn list`: the group `default`, in the four documented columns (the fourth:
    // the holder's name).
    assert_eq!(
        column(&t.run(&["asn", "list"]), 0),
        (vec!["1".into()], vec![4])
    );
    let all = column(&t.run(&["asn", "list", "--group", "*"]), 0);
    assert_eq!(all, (vec!["1".into(), "2".into()], vec![4, 4]));
    assert_eq!(
        column(&t.run(&["asn", "list", "--group", "video"]), 0).0,
        ["2"]
    );
    // `changes`: the changes of the default group's sources, `*` of all.
    assert_eq!(column(&t.run(&["changes"]), 2).0, ["AS1", "AS1"]);
    let all = column(&t.run(&["changes", "--group", "*"]), 2).0;
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(
        column(&t.run(&["changes", "--group", "video"]), 2).0,
        ["AS2"]
    );
    // GET /changes the same (its body is what `changes --json` prints).
    let (_s, addr) = t.spawn_listening(&["serve"]);
    let sources = |target: &str| {
        let (status, body) = http_get(addr, target);
        assert_eq!(status, 200, "{target}: {body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let rows = v["changes"].as_array().unwrap().clone();
        rows.iter()
            .map(|r| r["source"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(sources("/changes"), ["1", "1"]);
    assert_eq!(sources("/changes?group=*").len(), 3);
    // (One `since` for both: the default, 24 hours ago, may tick between them.)
    let json = t.run(&["changes", "--json", "--since", "2000-01-01T00:00:00Z"]);
    assert_eq!(
        String::from_utf8_lossy(&json.stdout),
        http_get(addr, "/changes?since=2000-01-01T00:00:00Z").1
    );
}
