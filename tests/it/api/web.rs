//! `GET /` (the built-in page, gzip when accepted), `GET /status`, and the refusal of
//! mutating requests from another origin, through the real binary.

use super::*;

#[test]
fn page_is_html_gzip_when_accepted_and_self_contained() {
    let t = TestDir::new();
    let s = serve(&t);
    let plain = get(s.addr, "/");
    assert_eq!(plain.status, 200);
    framed(&plain);
    assert_eq!(
        plain.header("Content-Type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(plain.header("Content-Encoding"), None);
    let html = plain.text();
    assert!(html.starts_with("<!DOCTYPE html>"), "{html:.80}");
    // No external host: nothing to load from elsewhere, and the browser is told so.
    for external in ["http://", "https://", "src=\"//", "href=\"//"] {
        assert!(!html.contains(external), "{external}");
    }
    let csp = plain.header("Content-Security-Policy").unwrap();
    assert!(csp.contains("default-src 'none'") && csp.contains("connect-src 'self'"));

    let gz = call(
        s.addr,
        "GET",
        "/",
        &[("Accept-Encoding", "gzip, deflate")],
        None,
    );
    assert_eq!(gz.status, 200);
    assert_eq!(gz.header("Content-Encoding"), Some("gzip"));
    assert_eq!(gz.header("Vary"), Some("Accept-Encoding"));
    assert!(gz.body.len() * 2 < plain.body.len(), "{}", gz.body.len());
    // What a browser gets back after decompressing is the page.
    let path = t.file("page.gz");
    fs::write(&path, &gz.body).unwrap();
    let out = Command::new("gzip").arg("-dc").arg(&path).output().unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout, plain.body);

    let head = call(s.addr, "HEAD", "/", &[("Accept-Encoding", "gzip")], None);
    assert_eq!(
        head.header("Content-Length"),
        Some(gz.body.len().to_string().as_str())
    );
    assert_error(
        &call(s.addr, "POST", "/", &[], Some("{}")),
        405,
        "GET, HEAD",
    );
}

#[test]
fn status_shows_sources_failures_and_counts() {
    let t = TestDir::new();
    fill(&t);
    t.config(&json!({"asns": ["62041", "64500"], "fqdns": ["t.example"]}));
    fs::write(
        t.file("status.json"),
        r#"{"heartbeat": "2026-12-01T10:00:00Z", "pid": 1, "failures": {"AS64500": "HTTP status 503"}}"#,
    )
    .unwrap();
    let s = serve(&t);
    let a = get(s.addr, "/status");
    assert_eq!(a.status, 200);
    assert_eq!(a.header("Content-Type"), Some("application/json"));
    let v = a.json();
    assert_eq!(v["daemon"]["heartbeat"], "2026-12-01T10:00:00Z");
    assert!(v["journal_mode"].is_string(), "{v}");
    let g = &v["groups"][0];
    assert_eq!(g["name"], "default");
    let sources = g["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 3, "{v}");
    assert_eq!(sources[1]["source"], "64500");
    assert_eq!(sources[1]["values"], 0);
    assert_eq!(sources[1]["failure"], "HTTP status 503");
    let stored = |k: &str| v["counts"][k].as_u64().unwrap();
    let health = get(s.addr, "/health").json();
    assert_eq!(stored("asn"), health["counts"]["asn"].as_u64().unwrap());
    assert_eq!(stored("fqdn"), health["counts"]["fqdn"].as_u64().unwrap());
    assert_eq!(g["counts"]["asn"], sources[0]["values"]);
    // The CLI's `status --json` carries the same overview (the LuCI app reads it).
    let out = t.run(&["status", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let cli: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cli["overview"], v);
}

/// A page elsewhere in the LAN cannot change the sources through a visitor's browser;
/// the page itself (same origin) and scripts (no Origin) can.
#[test]
fn cross_origin_changes_get_403_and_change_nothing() {
    let t = TestDir::new();
    t.config(&json!({"asns": ["62041"], "fqdns": []}));
    let s = serve(&t);
    let before = fs::read(t.file("config.json")).unwrap();
    let body = r#"{"asn": "AS64496"}"#;
    for origin in ["http://attacker.lan", "http://192.168.1.50:8080", "null"] {
        let a = call(s.addr, "POST", "/asns", &[("Origin", origin)], Some(body));
        assert_error(&a, 403, "cross-origin");
        let a = call(s.addr, "DELETE", "/asns/62041", &[("Origin", origin)], None);
        assert_error(&a, 403, "cross-origin");
    }
    assert_eq!(fs::read(t.file("config.json")).unwrap(), before);

    // The same request from the page itself: Origin is this server (the raw requests
    // here send `Host: localhost`).
    let a = call(
        s.addr,
        "POST",
        "/asns",
        &[("Origin", "http://localhost")],
        Some(body),
    );
    assert_eq!(a.status, 201, "{}", a.text());
    // And from curl or a script: no Origin, unchanged behaviour.
    let a = call(s.addr, "DELETE", "/asns/64496", &[], None);
    assert_eq!(a.status, 200, "{}", a.text());
    assert_eq!(get(s.addr, "/asns").json(), json!({"asns": ["62041"]}));
}

/// DNS rebinding: a page of `evil.example`, its name re-pointed at this server, is
/// same-origin to the browser (Origin and Host agree), yet must not change or read
/// anything: every route answers 421 to a Host that does not name this server.
#[test]
fn hosts_that_do_not_name_this_server_get_421() {
    let t = TestDir::new();
    t.config(&json!({"asns": ["62041"], "api": {"hosts": ["router.lan"]}}));
    let s = serve(&t);
    let before = fs::read(t.file("config.json")).unwrap();
    let port = s.addr.port();
    let evil = format!("evil.example:{port}");
    let origin = format!("http://{evil}");
    let hdrs = [("Host", evil.as_str()), ("Origin", origin.as_str())];
    let body = r#"{"asn": "AS64496"}"#;
    assert_error(
        &call(s.addr, "POST", "/asns", &hdrs, Some(body)),
        421,
        &evil,
    );
    assert_error(
        &call(s.addr, "DELETE", "/asns/62041", &hdrs, None),
        421,
        "api.hosts",
    );
    for path in ["/status", "/", "/addresses", "/health", "/asns"] {
        assert_error(&call(s.addr, "GET", path, &hdrs, None), 421, "evil.example");
    }
    assert_eq!(fs::read(t.file("config.json")).unwrap(), before);

    // Loopback by address and name, and a name of api.hosts, with matching Origins.
    let hosts = [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "Router.lan:80".into(),
    ];
    for (i, host) in hosts.iter().enumerate() {
        let origin = format!("http://{host}");
        let hdrs = [("Host", host.as_str()), ("Origin", origin.as_str())];
        assert_eq!(
            call(s.addr, "GET", "/status", &hdrs, None).status,
            200,
            "{host}"
        );
        let asn = format!(r#"{{"asn": "AS{}"}}"#, 64496 + i);
        let a = call(s.addr, "POST", "/asns", &hdrs, Some(&asn));
        assert_eq!(a.status, 201, "{host}: {}", a.text());
    }
    // HTTP/1.1 needs exactly one Host.
    let none = b"GET /status HTTP/1.1\r\nConnection: close\r\n\r\n";
    assert_error(&exchange(s.addr, none, false).unwrap(), 400, "Host");
    let two = b"GET /status HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n";
    assert_error(&exchange(s.addr, two, false).unwrap(), 400, "Host");
}
