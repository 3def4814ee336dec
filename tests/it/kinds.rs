//! The kinds `feed` and `country` end to end through the real binary: the CLI's
//! `feed` and `country` commands, bad input refused naming the value with nothing
//! stored lost, and `run` collecting a feed (comments, bad lines, CRLF, a BOM, IPv6;
//! the size limit) and a country (ranges split into prefixes) from fakes on
//! 127.0.0.1.

use std::fs;

use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;
use serde_json::json;

use crate::common::{http_send, FakeServer, Reply, TestDir};

const FEED: &str = "\u{feff}; Spamhaus DROP List\r\n\
                    1.10.16.0/20 ; SBL256894\r\n\
                    # comment\r\n\
                    not-an-address\r\n\
                    192.0.2.77\r\n\
                    2001:db8::/32 ; v6\r\n";

const COUNTRY: &str = r#"{"status":"ok","status_code":200,"messages":[],"data":{
    "resources":{"asn":["1103"],
      "ipv4":["11.0.0.0-11.0.2.255","192.0.2.1-192.0.2.12","11.8.0.1-11.9.0.0","198.51.100.0/24"],
      "ipv6":["2001:db8::/32"]}}}"#;

fn values(t: &TestDir, kind: Kind, source: &str) -> Vec<String> {
    let d = db::open(&t.paths()).unwrap();
    d.rows(kind, source)
        .unwrap()
        .into_iter()
        .map(|r| r.value)
        .collect()
}

fn fakes() -> FakeServer {
    FakeServer::start(|rq| {
        let plain = |status, body: &str| {
            let mut r = Reply::json(status, body.as_bytes().to_vec());
            r.headers = vec![("Content-Type".into(), "text/plain".into())];
            r
        };
        if rq.url.starts_with("/drop.txt") {
            plain(200, FEED)
        } else if rq.url.starts_with("/big.txt") {
            plain(200, &"192.0.2.1\n".repeat(200))
        } else if rq.url.starts_with("/gone.txt") {
            plain(404, "no")
        } else if rq
            .url
            .starts_with("/data/country-resource-list/data.json?resource=NL")
        {
            Reply::json(200, COUNTRY)
        } else {
            Reply::json(404, "{}")
        }
    })
}

#[test]
fn cli_feed_and_country_commands() {
    let t = TestDir::new();
    t.config(&json!({"asns": ["62041"]}));
    for args in [
        &["feed", "add", "https://example.org/drop.txt"][..],
        &["country", "add", "nl"],
        &["country", "add", "DE", "--group", "video"],
    ] {
        let out = t.run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        // `--group video` names a group that does not exist: refused, exit 2.
        if args.contains(&"video") {
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(err.contains("video"), "{err}");
        } else {
            assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        }
    }
    let cfg: serde_json::Value =
        serde_json::from_slice(&fs::read(t.file("config.json")).unwrap()).unwrap();
    assert_eq!(cfg["feeds"], json!(["https://example.org/drop.txt"]));
    assert_eq!(cfg["countries"], json!(["NL"]));
    let list = t.run(&["country", "list"]);
    assert_eq!(String::from_utf8_lossy(&list.stdout), "NL\t0\t-\n");
    let list = t.run(&["feed", "list"]);
    assert!(String::from_utf8_lossy(&list.stdout).starts_with("https://example.org/drop.txt\t"));
    // Bad input: a clear error naming the value (the code upper-cased), exit 2, the
    // configuration untouched.
    let before = fs::read(t.file("config.json")).unwrap();
    for (args, names) in [
        (
            &["feed", "add", "ftp://example.org/x"][..],
            "\"ftp://example.org/x\"",
        ),
        (
            &["feed", "add", "example.org/drop.txt"],
            "\"example.org/drop.txt\"",
        ),
        (&["country", "add", "nld"], "\"NLD\""),
        (&["country", "add", "1x"], "\"1X\""),
        (&["country", "remove", "n"], "\"N\""),
    ] {
        let out = t.run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(names), "{args:?}: {err}");
    }
    assert_eq!(fs::read(t.file("config.json")).unwrap(), before);
    let help = t.run(&["feed", "--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("feed.max_bytes"));
    let out = t.run(&["country", "remove", "nl", "--purge"]);
    assert_eq!(out.status.code(), Some(0));
    let cfg: serde_json::Value =
        serde_json::from_slice(&fs::read(t.file("config.json")).unwrap()).unwrap();
    assert_eq!(cfg["countries"], json!([]));
}

#[test]
fn config_refuses_bad_feeds_and_countries_naming_them() {
    for (cfg, names) in [
        (json!({"feeds": ["file:///etc/passwd"]}), "feeds[0]"),
        (json!({"countries": ["NL", "Holland"]}), "countries[1]"),
        (
            json!({"groups": {"v": {"countries": [31]}}}),
            "groups.v.countries[0]",
        ),
    ] {
        let t = TestDir::new();
        t.config(&cfg);
        let out = t.run(&["feed", "list"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{cfg}");
        assert!(err.contains(names), "{cfg}: {err}");
    }
}

#[test]
fn run_collects_feeds_and_countries() {
    let up = fakes();
    let t = TestDir::new();
    t.config(&json!({
        "feeds": [up.url("/drop.txt")],
        "countries": ["nl"],
        "groups": {"v": {"feeds": [up.url("/drop.txt")]}},
        "ripe": {"url": up.url("/data/announced-prefixes/data.json"), "timeout_seconds": 2, "retries": 0}
    }));
    let out = t.run(&["run"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let feed = values(&t, Kind::Feed, &up.url("/drop.txt"));
    assert_eq!(
        feed,
        ["1.10.16.0/20", "192.0.2.77/32", "2001:db8::/32"],
        "{err}"
    );
    assert!(err.contains("1 invalid skipped"), "{err}");
    assert!(err.contains("not-an-address"), "{err}");
    let nl = values(&t, Kind::Country, "NL");
    assert_eq!(nl.len(), 2 + 5 + 17 + 1 + 1, "{nl:?}");
    assert!(nl.contains(&"11.0.2.0/24".to_string()));
    // The feed is fetched once although two groups name it.
    let fetched = up
        .requests()
        .iter()
        .filter(|s| s.url.starts_with("/drop.txt"))
        .count();
    assert_eq!(fetched, 1);
    // Listed by type: feed, country, and cidr (every prefix kind).
    let count = |ty: &str| {
        let out = t.run(&["export", "--type", ty]);
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    assert_eq!(count("feed"), 3);
    assert_eq!(count("country"), 26);
    assert!(count("cidr") >= 26);
    // Lookup names the feed.
    let out = t.run(&["lookup", "192.0.2.77", "--json"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("drop.txt"));
}

#[test]
fn feed_over_max_bytes_or_failing_keeps_what_is_stored() {
    let up = fakes();
    let t = TestDir::new();
    let (big, gone) = (up.url("/big.txt"), up.url("/gone.txt"));
    t.config(&json!({"feeds": [big, gone], "feed": {"max_bytes": 1000}}));
    {
        let mut d = db::open(&t.paths()).unwrap();
        let now = ripe_cidr_collector::util::unix_now();
        for f in [&big, &gone] {
            d.merge_source(Kind::Feed, f, &["203.0.113.0/24".to_string()], now, 7)
                .unwrap();
        }
    }
    let out = t.run(&["run"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("larger than the limit"), "{err}");
    assert!(err.contains("404"), "{err}");
    for f in [&big, &gone] {
        assert_eq!(values(&t, Kind::Feed, f), ["203.0.113.0/24"], "{f}");
    }
}

/// A feed with an `ETag` and a `Last-Modified`: 304 when asked with its `ETag`.
fn conditional_feed() -> FakeServer {
    FakeServer::start(|rq| {
        if rq.header("If-None-Match") == Some("\"v1\"") {
            let mut r = Reply::json(304, Vec::new());
            r.headers = vec![("ETag".into(), "\"v1\"".into())];
            return r;
        }
        let mut r = Reply::json(200, FEED.as_bytes().to_vec());
        r.headers = vec![
            ("Content-Type".into(), "text/plain".into()),
            ("ETag".into(), "\"v1\"".into()),
            (
                "Last-Modified".into(),
                "Tue, 01 Dec 2026 10:00:00 GMT".into(),
            ),
        ];
        r
    })
}

#[test]
fn feed_304_counts_as_seen_again() {
    let up = conditional_feed();
    let t = TestDir::new();
    let url = up.url("/drop.txt");
    t.config(&json!({"feeds": [url]}));
    let run = |code| {
        let out = t.run(&["run"]);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(code), "{err}");
        err
    };
    run(0);
    let first = db::open(&t.paths())
        .unwrap()
        .rows(Kind::Feed, &url)
        .unwrap();
    assert_eq!(first.len(), 3);
    // The first request is plain; the next carries the validators and gets a 304.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let err = run(0);
    assert!(err.contains("not modified"), "{err}");
    let seen = up.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].header("If-None-Match"), None);
    assert_eq!(seen[1].header("If-None-Match"), Some("\"v1\""));
    assert_eq!(
        seen[1].header("If-Modified-Since"),
        Some("Tue, 01 Dec 2026 10:00:00 GMT")
    );
    let again = db::open(&t.paths())
        .unwrap()
        .rows(Kind::Feed, &url)
        .unwrap();
    assert_eq!(
        again.iter().map(|r| &r.value).collect::<Vec<_>>(),
        first.iter().map(|r| &r.value).collect::<Vec<_>>()
    );
    for (a, b) in again.iter().zip(&first) {
        assert!(a.last_seen > b.last_seen, "seen again: {a:?} {b:?}");
    }
    // Purged: nothing stored, so the next request is plain and stores the values.
    assert_eq!(
        t.run(&["feed", "remove", &url, "--purge"]).status.code(),
        Some(0)
    );
    assert_eq!(t.run(&["feed", "add", &url]).status.code(), Some(0));
    run(0);
    assert_eq!(up.requests()[2].header("If-None-Match"), None);
    assert_eq!(values(&t, Kind::Feed, &url).len(), 3);
}

/// A feed URL is shown in pages (LuCI, the web page): quotes, `<`, `>` and spaces are
/// refused unencoded by every way in, the error naming the URL, nothing changed.
#[test]
fn feed_urls_with_markup_are_refused_everywhere() {
    let t = TestDir::new();
    t.config(&json!({"feeds": ["https://example.org/a.txt"]}));
    let before = fs::read_to_string(t.file("config.json")).unwrap();
    let bad = "https://example.org/<img src=x onerror=alert(1)>";
    let out = t.run(&["feed", "add", bad]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains(bad) && err.contains("percent-encoded"),
        "{err}"
    );
    let s = t.spawn_listening(&["serve"]);
    for url in [
        bad,
        "https://example.org/a b",
        "https://example.org/\"x\"",
        "https://example.org/it's",
    ] {
        let body = json!({ "feed": url }).to_string();
        let (status, answer) = http_send(s.1, "POST", "/feeds", &body);
        assert_eq!(status, 400, "{url}: {answer}");
        assert!(answer.contains("invalid feed URL"), "{url}: {answer}");
    }
    assert_eq!(fs::read_to_string(t.file("config.json")).unwrap(), before);
    t.config(&json!({"feeds": [bad]}));
    let out = t.run(&["feed", "list"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("feeds[0]") && err.contains(bad),
        "{err}"
    );
}
