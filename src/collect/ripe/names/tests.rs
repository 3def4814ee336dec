//! `as-overview` and `searchcomplete` against fake servers on 127.0.0.1 (the answers
//! in `tests/fixtures/ripestat/` have the shape RIPEstat's documentation and live
//! answers show).

use super::super::super::fetch::fake::{FakeServer, Reply};
use super::*;
use crate::collect::Transport;
use crate::config::RipeConfig;

const OVERVIEW: &str = include_str!("../../../../tests/fixtures/ripestat/as-overview.json");
const SUGGEST: &str = include_str!("../../../../tests/fixtures/ripestat/searchcomplete.json");

fn client(server: &FakeServer) -> RipeClient {
    let cfg = RipeConfig {
        url: format!("{}/data/announced-prefixes/data.json", server.base),
        min_peers_seeing: None,
        sourceapp: "test-app".into(),
        timeout_seconds: 2,
        retries: 0,
    };
    RipeClient::new(&cfg, &Transport::plain())
}

fn overview(holder: &str, announced: bool) -> String {
    format!(
        r#"{{"status":"ok","status_code":200,"data_call_name":"as-overview",
            "data":{{"holder":"{holder}","announced":{announced}}}}}"#
    )
}

#[test]
fn overview_of_the_real_shape() {
    let s = FakeServer::start(vec![Reply::new(200, OVERVIEW)]);
    let o = client(&s).overview("AS62041").unwrap();
    assert_eq!(
        o.holder.as_deref(),
        Some("TELEGRAM - Telegram Messenger Inc")
    );
    assert!(o.announced);
    let url = &s.seen()[0].url;
    assert!(
        url.starts_with("/data/as-overview/data.json?resource=AS62041&sourceapp=test-app"),
        "{url}"
    );
}

#[test]
fn suggestions_of_the_asns_category_only() {
    let s = FakeServer::start(vec![Reply::new(200, SUGGEST)]);
    let c = client(&s);
    let got = c.suggest("telegram", 8).unwrap();
    let asns: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(asns, ["62041", "211157", "62014"]);
    assert_eq!(got[1].1, "TELEGRAM-MESSENGER - Telegram Messenger Inc");
    assert_eq!(c.suggest("telegram", 2).unwrap().len(), 2);
    let url = &s.seen()[0].url;
    assert!(
        url.starts_with("/data/searchcomplete/data.json?resource=telegram&limit=8"),
        "{url}"
    );
}

/// Announced ASNs first; within each half the upstream's order.
#[test]
fn announced_first_then_the_upstreams_order() {
    let suggest = r#"{"status":"ok","data":{"categories":[{"suggestions":[
        {"value":"AS1","description":"d1"},{"value":"AS2","description":"d2"},
        {"value":"AS3","description":"d3"},{"value":"AS4","description":"d4"}],
        "category":"ASNs"}]}}"#;
    let s = FakeServer::start_with(move |_, url| {
        let body = match url {
            u if u.contains("searchcomplete") => suggest.to_string(),
            u if u.contains("=AS2&") || u.contains("=AS4&") => overview("H", true),
            u if u.contains("=AS3&") => {
                r#"{"status":"ok","data":{"holder":null,"announced":false}}"#.into()
            }
            _ => overview("H", false),
        };
        Reply::new(200, body)
    });
    let found = client(&s).search("x", 8).unwrap();
    let order: Vec<&str> = found.iter().map(|f| f.asn.as_str()).collect();
    assert_eq!(order, ["2", "4", "1", "3"]);
    // No holder from as-overview: searchcomplete's description.
    assert_eq!(found[3].holder, "d3");
    assert_eq!(s.seen().len(), 5);
}

/// Anything but the documented shape fails, never an empty success.
#[test]
fn garbage_is_an_upstream_failure() {
    let good = r#"{"status":"ok","data":{"categories":[{"category":"ASNs","suggestions":[{"value":"AS1"}]}]}}"#;
    let cases: [(&str, &str); 7] = [
        ("<html>busy</html>", good),
        (r#"{"status":"ok","data":{}}"#, good),
        (
            r#"{"status":"ok","data":{"categories":[{"category":"ASNs","suggestions":[{"value":"x1"}]}]}}"#,
            good,
        ),
        (r#"{"status":"ok","data":null}"#, good),
        (
            good,
            r#"{"status":"ok","data":{"holder":"H","announced":"yes"}}"#,
        ),
        (good, r#"{"status":"ok","data":{"holder":"H"}}"#),
        (
            good,
            r#"{"status":"error","messages":[["error","no"]],"data":{}}"#,
        ),
    ];
    for (suggest, over) in cases {
        let s = FakeServer::start_with(move |_, url| match url.contains("searchcomplete") {
            true => Reply::new(200, suggest),
            false => Reply::new(200, over),
        });
        let e = client(&s).search("x", 8).unwrap_err();
        assert!(
            matches!(e, SourceError::BadBody(_) | SourceError::Upstream { .. }),
            "{suggest} / {over}: {e}"
        );
    }
    let s = FakeServer::start(vec![Reply::new(503, "{}")]);
    assert_eq!(
        client(&s).search("x", 8).unwrap_err(),
        SourceError::Http { status: 503 }
    );
    // The answer of another data call.
    let s = FakeServer::start(vec![Reply::new(200, OVERVIEW)]);
    assert!(client(&s).suggest("x", 8).is_err());
}

#[test]
fn texts_and_limits() {
    assert!(check_text("telegram").is_ok());
    assert!(check_text("Телеграм").is_ok());
    for (bad, why) in [
        ("", "is empty"),
        ("  ", "is empty"),
        ("a\tb", "control characters"),
        ("a\u{7f}", "control characters"),
    ] {
        let e = check_text(bad).unwrap_err();
        assert!(e.contains(why), "{e}");
    }
    let long = "x".repeat(65);
    assert!(check_text(&long)
        .unwrap_err()
        .contains("longer than 64 bytes"));
    assert!(check_text(&"x".repeat(64)).is_ok());
    assert_eq!(parse_limit("20"), Ok(20));
    for bad in ["0", "21", "-1", "x", ""] {
        assert!(parse_limit(bad).unwrap_err().contains("1 to 20"), "{bad}");
    }
    assert_eq!(
        data_url(
            "https://stat.ripe.net/data/announced-prefixes/data.json",
            "as-overview"
        ),
        "https://stat.ripe.net/data/as-overview/data.json"
    );
}
