//! Tests of the routes, without sockets.
use super::sources::nested_deeper_than;
use super::*;
use crate::db;
use crate::format::{self, RenderOptions};
use serde_json::json;
use serde_json::Value;

struct T {
    _dir: tempfile::TempDir,
    ctx: Context,
}

fn setup() -> T {
    let dir = tempfile::tempdir().unwrap();
    let ctx = Context::new(Paths::new(dir.path(), None), 2);
    T { _dir: dir, ctx }
}

fn call(t: &T, method: &str, target: &str, body: &str) -> (Reply, Value) {
    call_with(
        t,
        RequestInfo {
            method: method.into(),
            target: target.into(),
            ..RequestInfo::default()
        },
        body,
    )
}

fn call_with(t: &T, req: RequestInfo, body: &str) -> (Reply, Value) {
    let r = answer(&req, body.as_bytes(), &t.ctx);
    let v = serde_json::from_slice(r.bytes()).unwrap_or(Value::Null);
    (r, v)
}

#[test]
fn routing_and_methods() {
    let t = setup();
    let (r, v) = call(&t, "GET", "/nope", "");
    assert_eq!(r.status, 404);
    // The message lists every route, the feeds and countries too.
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("/feeds, /countries, /groups and /services"),
        "{v}"
    );
    assert_eq!(call(&t, "GET", "/", "").0.status, 200);
    assert_eq!(call(&t, "POST", "/", "").0.status, 405);
    assert_eq!(call(&t, "POST", "/status", "").0.status, 405);
    assert_eq!(call(&t, "GET", "/asns/", "").0.status, 404);
    assert_eq!(call(&t, "GET", "/health/x", "").0.status, 404);
    let (r, _) = call(&t, "PUT", "/asns", "");
    assert_eq!(r.status, 405);
    assert_eq!(r.headers, vec![("Allow", "GET, HEAD, POST".to_string())]);
    assert_eq!(call(&t, "GET", "/asns/1", "").0.status, 405);
    assert_eq!(call(&t, "POST", "/health", "").0.status, 405);
    assert_eq!(call(&t, "HEAD", "/health", "").0.status, 200);
    assert_eq!(call(&t, "GET", "/health?x=1", "").0.status, 400);
    assert_eq!(call(&t, "GET", "/a%zz", "").0.status, 400);
}

#[test]
fn sources_round_trip() {
    let t = setup();
    let (r, v) = call(&t, "POST", "/asns", r#"{"asn":"AS62041"}"#);
    assert_eq!((r.status, v), (201, json!({"asn": "62041", "added": true})));
    assert_eq!(r.body, b"{\"asn\":\"62041\",\"added\":true}\n");
    let (r, v) = call(&t, "POST", "/asns", r#"{"asn":62041}"#);
    assert_eq!((r.status, v["added"].clone()), (200, json!(false)));
    let (r, v) = call(&t, "POST", "/fqdns", r#"{"fqdn":"Example.COM."}"#);
    assert_eq!((r.status, v["fqdn"].clone()), (201, json!("example.com")));
    assert_eq!(call(&t, "GET", "/asns", "").1, json!({"asns": ["62041"]}));
    assert_eq!(
        call(&t, "GET", "/fqdns", "").1,
        json!({"fqdns": ["example.com"]})
    );
    let (r, v) = call(&t, "DELETE", "/asns/as62041", "");
    assert_eq!(
        (r.status, v),
        (200, json!({"asn": "62041", "removed": true}))
    );
    assert_eq!(call(&t, "DELETE", "/asns/62041", "").0.status, 404);
    let (r, v) = call(&t, "DELETE", "/fqdns/example.com?purge=true", "");
    assert_eq!(
        (r.status, v),
        (
            200,
            json!({"fqdn": "example.com", "removed": true, "purged": 0})
        )
    );
}

#[test]
fn bad_bodies() {
    let t = setup();
    for body in [
        "",
        "  ",
        "{",
        "[]",
        "null",
        "\"AS1\"",
        r#"{"asn":null}"#,
        r#"{"asn":"ASX"}"#,
        r#"{"asn":-1}"#,
        r#"{"asn":1.5}"#,
        r#"{"asn":[1]}"#,
        r#"{"fqdn":"x.org"}"#,
        r#"{"asn":"1","x":2}"#,
        r#"{"asn":"1","asn":"1"}"#,
        "{}",
        "\u{feff}{}",
        &"[".repeat(10_000),
    ] {
        let (r, v) = call(&t, "POST", "/asns", body);
        assert_eq!(r.status, 400, "{body:?}: {v}");
        assert!(v["error"].is_string());
    }
    for body in [
        r#"{"fqdn":1}"#,
        r#"{"fqdn":"1.2.3.4"}"#,
        r#"{"fqdn":"bücher.de"}"#,
    ] {
        assert_eq!(call(&t, "POST", "/fqdns", body).0.status, 400, "{body}");
    }
    assert!(!t.ctx.paths.config().exists());
    // The message names what is wrong.
    for (body, named) in [
        (
            r#"{"asn":"1","asn":"2"}"#,
            "key \"asn\" given more than once",
        ),
        (r#"{"asn":"1","x":2}"#, "unknown key \"x\""),
        (r#"{"x":2,"asn":"1"}"#, "unknown key \"x\""),
        ("{}", "missing key \"asn\""),
        ("[1]", "not a JSON object"),
        ("null", "not a JSON object"),
        ("[1,", "not a JSON object"),
        (" \"AS1", "not a JSON object"),
        ("x", "invalid JSON body: expected value at line 1 column 1"),
        (
            "{\"asn\":\"\\ud800\"}",
            "invalid JSON body: unexpected end of hex escape",
        ),
        ("{\"asn\":", "invalid JSON body"),
        (r#"{"asn":"1"} x"#, "invalid JSON body"),
    ] {
        let (r, v) = call(&t, "POST", "/asns", body);
        let m = v["error"].as_str().unwrap_or_default();
        assert!(r.status == 400 && m.contains(named), "{body}: {m}");
    }
}

#[test]
fn nesting() {
    assert!(!nested_deeper_than(br#"{"asn":"[[[[[[[[[["}"#, 1));
    assert!(!nested_deeper_than(br#"{"asn":"\\\"[[[[[["}"#, 1));
    assert!(nested_deeper_than(br#"{"asn":[[1]]}"#, 2));
    assert!(!nested_deeper_than(br#"{"asn":[[1]]}"#, 3));
    assert!(!nested_deeper_than(b"]]]]]{", 1));
}

#[test]
fn tokens() {
    let t = setup();
    std::fs::write(t.ctx.paths.config(), r#"{"api": {"token": "s3cret"}}"#).unwrap();
    let mut req = RequestInfo {
        method: "POST".into(),
        target: "/asns".into(),
        ..RequestInfo::default()
    };
    let body = r#"{"asn":"1"}"#;
    assert_eq!(call_with(&t, req.clone(), body).0.status, 401);
    for wrong in [
        "Bearer s3cre",
        "Bearer s3cretx",
        "Basic s3cret",
        "s3cret",
        "Bearer ",
    ] {
        req.authorization = Some(wrong.into());
        let (r, _) = call_with(&t, req.clone(), body);
        assert_eq!(r.status, 401, "{wrong}");
        assert_eq!(r.headers, vec![("WWW-Authenticate", "Bearer".to_string())]);
    }
    req.authorization = Some("Bearer s3cret".into());
    assert_eq!(call_with(&t, req.clone(), body).0.status, 201);
    // Reads need no token.
    assert_eq!(call(&t, "GET", "/asns", "").0.status, 200);
    // A broken configuration is the server's problem: 503 naming the file and the
    // problem. Reads answer from the configuration read before.
    std::fs::write(t.ctx.paths.config(), "{ broken").unwrap();
    let (r, v) = call_with(&t, req, body);
    assert_eq!(r.status, 503);
    let e = v["error"].as_str().unwrap();
    assert!(e.starts_with("configuration unavailable: "), "{e}");
    assert!(e.contains("config.json: invalid JSON at line 1"), "{e}");
    assert_eq!(call(&t, "GET", "/asns", "").1, json!({"asns": ["1"]}));
    // A server that never read a good one has nothing to answer from.
    let fresh = T {
        ctx: Context::new(t.ctx.paths.clone(), 2),
        _dir: tempfile::tempdir().unwrap(),
    };
    assert_eq!(call(&fresh, "GET", "/asns", "").0.status, 503);
    assert_eq!(call(&fresh, "GET", "/addresses", "").0.status, 503);
}

/// A lock that cannot be opened (here a directory; on a router a lock root made that
/// the service's user may not open): the 503 says which file and why.
#[test]
fn a_config_lock_that_cannot_be_opened_is_named() {
    let t = setup();
    let lock = t.ctx.paths.config().with_file_name(".config.json.lock");
    std::fs::create_dir(&lock).unwrap();
    let (r, v) = call(&t, "POST", "/asns", r#"{"asn":"1"}"#);
    assert_eq!(r.status, 503);
    let want = format!(
        "configuration unavailable: cannot open {}: is a directory",
        lock.display()
    );
    assert_eq!(v, json!({ "error": want }));
}

#[test]
fn address_options() {
    assert_eq!(render_options(None).unwrap(), RenderOptions::default());
    let o = render_options(Some(
        "type=cidr&format=nft&family=6&aggregate=true&table=t1&set=s-1",
    ))
    .unwrap();
    assert_eq!(o.format, format::Format::Nft);
    assert_eq!(o.family, Some(format::Family::V6));
    assert!(o.aggregate);
    assert_eq!((o.table.as_str(), o.set.as_str()), ("t1", "s-1"));
    for (q, named) in [
        ("formt=nft", "formt"),
        ("format=yaml", "yaml"),
        ("type=everything", "everything"),
        ("family=5", "5"),
        ("aggregate=yes", "aggregate"),
        ("set=bad%20name", "bad name"),
        ("table=", "table"),
        ("format=text&format=json", "format"),
        // A bad group is named as a group, not as the set it would name.
        ("group=Bad!", "invalid group name \"Bad!\""),
        ("group=", "invalid group name \"\""),
    ] {
        let e = render_options(Some(q)).unwrap_err().to_string();
        assert!(e.contains(named), "{q}: {e}");
    }
}

#[test]
fn addresses_and_etag() {
    let t = setup();
    let mut db = db::open(&t.ctx.paths).unwrap();
    let vals: Vec<String> = ["10.0.0.0/8", "2001:db8::/32"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    db.merge_source(Kind::Asn, "1", &vals, crate::util::unix_now(), 7)
        .unwrap();
    let (r, _) = call(&t, "GET", "/addresses", "");
    assert_eq!(r.status, 200);
    assert_eq!(r.bytes(), b"10.0.0.0/8\n2001:db8::/32\n");
    assert_eq!(r.content_type, "text/plain; charset=utf-8");
    let tag = r.headers[0].1.clone();
    let (r2, _) = call_with(
        &t,
        RequestInfo {
            method: "GET".into(),
            target: "/addresses".into(),
            if_none_match: Some(format!("\"other\", {tag}")),
            ..RequestInfo::default()
        },
        "",
    );
    assert_eq!(r2.status, 304);
    assert!(r2.body.is_empty());
    assert_eq!(r2.length_without_body, Some(r.bytes().len()));
    let (r3, v) = call(&t, "GET", "/addresses?format=json&family=4", "");
    assert_eq!(r3.content_type, JSON);
    assert_eq!(v["addresses"], json!(["10.0.0.0/8"]));
    let (r4, v) = call(&t, "GET", "/health", "");
    assert_eq!(r4.status, 200);
    assert_eq!(v["counts"], json!({"asn": 2, "fqdn": 0}));
    assert_eq!(
        std::str::from_utf8(&r4.body).unwrap(),
        "{\"status\":\"ok\",\"counts\":{\"asn\":2,\"fqdn\":0},\"last_success\":null,\
             \"last_error\":null,\"heartbeat\":null}\n"
    );
    let (r5, v) = call(&t, "DELETE", "/asns/1?purge=1", "");
    assert_eq!(
        (r5.status, v["purged"].clone(), v["removed"].clone()),
        (200, json!(2), json!(false))
    );
}

#[test]
fn page_plain_and_gzip() {
    let t = setup();
    let (r, _) = call(&t, "GET", "/", "");
    assert_eq!(r.content_type, "text/html; charset=utf-8");
    assert!(r.body.starts_with(b"<!DOCTYPE html>"));
    assert!(!r.headers.iter().any(|(k, _)| *k == "Content-Encoding"));
    let req = RequestInfo {
        method: "GET".into(),
        target: "/".into(),
        accept_encoding: Some("gzip, deflate, br".into()),
        ..RequestInfo::default()
    };
    let (r, _) = call_with(&t, req, "");
    assert!(r.headers.contains(&("Content-Encoding", "gzip".into())));
    assert!(r.headers.contains(&("Vary", "Accept-Encoding".into())));
    assert!(r.body.starts_with(b"\x1f\x8b"));
    assert_eq!(call(&t, "GET", "/?x=1", "").0.status, 400);
}

#[test]
fn status_lists_sources_and_reports_broken_files() {
    let t = setup();
    call(&t, "POST", "/asns", r#"{"asn":"AS62041"}"#);
    let (r, v) = call(&t, "GET", "/status", "");
    assert_eq!(r.status, 200, "{v}");
    assert_eq!(v["groups"][0]["name"], "default");
    assert_eq!(
        v["groups"][0]["sources"][0],
        json!({"kind": "asn", "source": "62041", "values": 0, "last_seen": null, "failure": null})
    );
    assert_eq!(v["token_required"], false);
    assert_eq!(v["errors"], json!([]));
    std::fs::write(t.ctx.paths.config(), "{").unwrap();
    let (r, v) = call(&t, "GET", "/status", "");
    assert_eq!(r.status, 200, "{v}");
    assert!(
        v["errors"][0].as_str().unwrap().starts_with("config: "),
        "{v}"
    );
    assert_eq!(call(&t, "GET", "/status?x", "").0.status, 400);
}

fn with_origin(method: &str, target: &str, origin: Option<&str>) -> RequestInfo {
    RequestInfo {
        method: method.into(),
        target: target.into(),
        host: Some("router.lan:8080".into()),
        origin: origin.map(String::from),
        ..RequestInfo::default()
    }
}

#[test]
fn cross_origin_changes_are_refused_and_change_nothing() {
    let t = setup();
    let add = r#"{"asn":"AS62041"}"#;
    for origin in ["http://evil.example", "http://router.lan:9999", "null"] {
        let (r, v) = call_with(&t, with_origin("POST", "/asns", Some(origin)), add);
        assert_eq!(r.status, 403, "{origin}: {v}");
        assert!(v["error"].as_str().unwrap().contains("cross-origin"), "{v}");
    }
    assert_eq!(call(&t, "GET", "/asns", "").1, json!({"asns": []}));
    // The page's own request (same origin), then a script's (no Origin).
    let same = with_origin("POST", "/asns", Some("http://router.lan:8080"));
    assert_eq!(call_with(&t, same, add).0.status, 201);
    let evil = with_origin("DELETE", "/asns/62041", Some("http://evil.example"));
    assert_eq!(call_with(&t, evil, "").0.status, 403);
    assert_eq!(call(&t, "GET", "/asns", "").1, json!({"asns": ["62041"]}));
    let script = with_origin("DELETE", "/asns/62041", None);
    assert_eq!(call_with(&t, script, "").0.status, 200);
    // Reading stays open to other origins' GETs (the browser keeps their answers
    // from the other page anyway: no CORS headers).
    let read = with_origin("GET", "/asns", Some("http://evil.example"));
    assert_eq!(call_with(&t, read, "").0.status, 200);
}

#[test]
fn database_reads_reuse_one_kept_connection() {
    let t = setup();
    let mut db = db::open(&t.ctx.paths).unwrap();
    let vals = vec!["10.0.0.0/8".to_string()];
    db.merge_source(Kind::Asn, "1", &vals, crate::util::unix_now(), 7)
        .unwrap();
    drop(db);
    // Written long ago: the pool keeps connections only to a settled file.
    let f = std::fs::File::options()
        .write(true)
        .open(&t.ctx.paths.db)
        .unwrap();
    f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(10))
        .unwrap();
    for target in [
        "/lookup?ip=10.1.2.3",
        "/addresses?format=json",
        "/changes",
        "/status",
        "/health",
        "/lookup?ip=10.0.0.0/8",
    ] {
        let (r, _) = call(&t, "GET", target, "");
        assert_eq!(r.status, 200, "{target}");
        // One connection, opened by the first request and kept for the others.
        assert_eq!((t.ctx.db.opened(), t.ctx.db.idle()), (1, 1), "{target}");
    }
}

#[test]
fn interfaces_list_the_kernels() {
    let t = setup();
    let (r, v) = call(&t, "GET", "/interfaces", "");
    assert_eq!(r.status, 200, "{v}");
    let lo = v["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "lo")
        .unwrap_or_else(|| panic!("no lo in {v}"));
    assert!(
        lo["families"].as_array().unwrap().contains(&json!("ipv4")),
        "{v}"
    );
    assert_eq!(call(&t, "POST", "/interfaces", "").0.status, 405);
    assert_eq!(call(&t, "GET", "/interfaces?x=1", "").0.status, 400);
}

#[test]
fn a_group_is_routed_and_unrouted_by_post() {
    let t = setup();
    let set = r#"{"group": "vpn", "via": "rcc-none0"}"#;
    let (r, v) = call(&t, "POST", "/groups", set);
    assert_eq!(r.status, 201, "{v}");
    assert_eq!(v["route"]["via"], "rcc-none0", "{v}");
    assert_eq!(v["route"]["up"], false, "{v}");
    assert_eq!(v["mark"], "0x100/0xff00", "{v}");
    let table = v["route"]["table"].as_u64().unwrap();
    assert!(table >= 100, "{v}");
    let (_, g) = call(&t, "GET", "/groups", "");
    let vpn = &g["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "vpn")
        .cloned();
    assert_eq!(vpn.as_ref().unwrap()["route"]["via"], "rcc-none0", "{g}");
    // Again: nothing changes. Then cleared: the mark stays, the route goes.
    let (r, v) = call(&t, "POST", "/groups", set);
    assert_eq!((r.status, v["changed"].clone()), (200, json!(false)), "{v}");
    let (r, v) = call(&t, "POST", "/groups", r#"{"group": "vpn", "via": null}"#);
    assert_eq!(
        (r.status, v["route"].clone(), v["changed"].clone()),
        (200, Value::Null, json!(true)),
        "{v}"
    );
    assert_eq!(v["mark"], "0x100/0xff00", "{v}");
    let cfg = crate::config::load(&t.ctx.paths.config()).unwrap().config;
    assert!(cfg.group("vpn").unwrap().route.is_none());
}

#[test]
fn bad_route_requests_name_the_value_and_change_nothing() {
    let t = setup();
    for (body, says) in [
        (r#"{"group": "vpn", "via": "10.0.0.1"}"#, "10.0.0.1"),
        (r#"{"group": "vpn", "via": "w g0"}"#, "w g0"),
        (r#"{"group": "vpn", "via": 5}"#, "via: expected a string"),
        (r#"{"group": "default", "via": "wg0"}"#, "default"),
        (r#"{"group": "*", "via": "wg0"}"#, "*"),
        (r#"{"group": "no/slash", "via": "wg0"}"#, "no/slash"),
        (r#"{"via": "wg0"}"#, "missing key \"group\""),
        (r#"{"group": "vpn", "mark": "1"}"#, "mark"),
        ("[1]", "not a JSON object"),
    ] {
        let (r, v) = call(&t, "POST", "/groups", body);
        assert_eq!(r.status, 400, "{body}: {v}");
        let e = v["error"].as_str().unwrap();
        assert!(e.contains(says), "{body}: {e}");
    }
    // Clearing the route of a group that does not exist names it.
    let (r, v) = call(&t, "POST", "/groups", r#"{"group": "nope", "via": null}"#);
    assert_eq!(r.status, 400, "{v}");
    assert!(v["error"].as_str().unwrap().contains("nope"), "{v}");
    assert!(
        !t.ctx.paths.config().exists()
            || crate::config::load(&t.ctx.paths.config())
                .unwrap()
                .config
                .groups
                .is_empty()
    );
}

#[test]
fn route_changes_need_the_token_and_the_same_origin() {
    let t = setup();
    std::fs::write(t.ctx.paths.config(), r#"{"api": {"token": "s3cret"}}"#).unwrap();
    let body = r#"{"group": "vpn", "via": "wg0"}"#;
    assert_eq!(call(&t, "POST", "/groups", body).0.status, 401);
    let evil = with_origin("POST", "/groups", Some("http://evil.example"));
    assert_eq!(call_with(&t, evil, body).0.status, 403);
    let mut ok = with_origin("POST", "/groups", None);
    ok.authorization = Some("Bearer s3cret".into());
    assert_eq!(call_with(&t, ok, body).0.status, 201);
    // Reading the interfaces needs no token.
    assert_eq!(call(&t, "GET", "/interfaces", "").0.status, 200);
}
