//! Server-side request forgery through redirects, and answers leaking into failure
//! texts (issue 27, item 9). A feed on a public address must not be able to point
//! the collector at the router's own services (a redirect to 127.0.0.1 stored their
//! list and served it), and no failure text in `status.json` (which the web page and
//! LuCI show) may carry what a server sent.
//!
//! The public address is 192.0.2.10 on the loopback device of the test's own network
//! namespace (`unshare(CLONE_NEWNET)`, as in `netlink.rs`), so nothing leaves the host.

use std::process::Command;

use ripe_cidr_collector::source::Kind;
use serde_json::json;

use crate::common::*;
use crate::netlink::find;

/// Moves this thread into a fresh network namespace with loopback up and 192.0.2.10
/// on it (a public address as far as the collector can tell).
fn public_address() -> Result<&'static str, String> {
    let ip = find("ip").ok_or("`ip` not found (apt-get install iproute2)")?;
    // SAFETY: plain system call; it only changes this thread's namespace.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(format!(
            "cannot create a network namespace (needs root): {}",
            std::io::Error::last_os_error()
        ));
    }
    for args in [
        &["link", "set", "lo", "up"][..],
        &["addr", "add", "192.0.2.10/32", "dev", "lo"],
    ] {
        let o = Command::new(&ip)
            .args(args)
            .output()
            .map_err(|e| e.to_string())?;
        if !o.status.success() {
            return Err(format!(
                "ip {args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
        }
    }
    Ok("192.0.2.10")
}

fn redirect_to(location: String) -> Reply {
    let mut r = Reply::json(302, "");
    r.headers.push(("Location".into(), location));
    r
}

fn stored(t: &TestDir, kind: Kind, source: &str) -> Vec<String> {
    let db = ripe_cidr_collector::db::open(&t.paths()).unwrap();
    let rows = db.rows(kind, source).unwrap();
    rows.into_iter().map(|r| r.value).collect()
}

#[test]
fn public_feeds_cannot_redirect_to_internal_addresses() {
    let public = match public_address() {
        Ok(a) => a,
        Err(why) => return cannot_run(&why),
    };
    // The router's own service, with a list that must not leave it.
    let internal = FakeServer::start(|s| match s.url.as_str() {
        "/secret" => Reply::json(200, "10.66.0.0/16\n"),
        _ => redirect_to("/secret".into()),
    });
    let port = internal.addr.port();
    let feed = FakeServer::start_on(&format!("{public}:0"), move |s| match s.url.as_str() {
        "/literal" => redirect_to(format!("http://127.0.0.1:{port}/secret")),
        // Checked on the address the name resolves to, not on the literal.
        "/name" => redirect_to(format!("http://localhost:{port}/secret")),
        "/v6" => redirect_to(format!("http://[::ffff:127.0.0.1]:{port}/secret")),
        "/hop" => redirect_to("/list".into()),
        _ => Reply::json(200, "198.51.100.0/24\n"),
    });
    let feeds = ["/literal", "/name", "/v6"].map(|p| feed.url(p));
    let loopback_hop = internal.url("/hop");
    let t = TestDir::new();
    let mut all: Vec<String> = feeds.to_vec();
    all.push(feed.url("/hop"));
    all.push(loopback_hop.clone());
    t.config(&json!({"feeds": all}));
    let out = t.run(&["run"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    for f in &feeds {
        assert!(stored(&t, Kind::Feed, f).is_empty(), "{f}: {err}");
        let line = err
            .lines()
            .find(|l| l.contains(&format!("{f}: ")))
            .unwrap_or_default();
        assert!(
            line.contains("redirect refused: to an internal address"),
            "{err}"
        );
    }
    assert_eq!(
        internal
            .requests()
            .iter()
            .filter(|s| s.url == "/secret")
            .count(),
        1,
        "only the loopback feed's own redirect reached the internal service"
    );
    // A public feed may redirect on its public host; a configured loopback URL (the
    // user's own choice) may redirect to loopback.
    assert_eq!(
        stored(&t, Kind::Feed, &feed.url("/hop")),
        ["198.51.100.0/24"]
    );
    assert_eq!(stored(&t, Kind::Feed, &loopback_hop), ["10.66.0.0/16"]);
    let status = std::fs::read_to_string(t.file("status.json")).unwrap();
    assert!(
        status.contains("redirect refused: to an internal address (127.0.0.1)"),
        "{status}"
    );
}

/// Failure texts say what was wrong, never what was there: a non-JSON answer, an HTML
/// error page, RIPEstat's `messages` and a DoH answer full of markup leave no byte of
/// theirs in `status.json` (which `GET /status`, the web page and LuCI show).
#[test]
fn failure_texts_never_quote_answers() {
    const MARKUP: &str = "<script>alert(1)</script><img src=x onerror=alert(2)>";
    let fake = FakeServer::start(|s| {
        if s.url.starts_with("/dns-query") {
            return Reply::json(200, MARKUP);
        }
        match resource_of(&s.url).as_deref() {
            Some("1") => Reply::json(200, format!("<html><body>{MARKUP}</body></html>")),
            Some("2") => Reply::json(
                400,
                format!(
                    r#"{{"status":"error","status_code":400,"messages":[["error","{MARKUP}"]],"data":{{}}}}"#
                ),
            ),
            _ => Reply::json(500, MARKUP),
        }
    });
    let t = TestDir::new();
    t.config(&json!({
        "asns": ["1", "2", "3"],
        "fqdns": ["x.example"],
        "ripe": {"url": fake.url("/data.json"), "retries": 0},
        "dns": {"resolver": "doh", "doh_url": fake.url("/dns-query")},
    }));
    let out = t.run(&["run"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let status = std::fs::read_to_string(t.file("status.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&status).unwrap();
    let failures = v["failures"].as_object().expect("failures").clone();
    assert_eq!(failures.len(), 4, "{status}");
    for (source, text) in &failures {
        let text = text.as_str().unwrap();
        for bytes in ["<", ">", "script", "alert", "onerror"] {
            assert!(!text.contains(bytes), "{source}: {text}");
        }
    }
    assert!(
        failures["AS1"].as_str().unwrap().contains("not JSON"),
        "{status}"
    );
    assert!(
        failures["AS1"].as_str().unwrap().ends_with("an HTML page"),
        "{status}"
    );
    assert!(
        failures["AS2"].as_str().unwrap().contains("HTTP 400"),
        "{status}"
    );
    assert_eq!(failures["AS3"], "HTTP status 500");
    assert!(
        failures["x.example"].as_str().unwrap().contains("not JSON"),
        "{status}"
    );
}

/// The curl `fetch.command` of docs/configuration.md, as its JSON list.
fn documented_curl() -> Vec<String> {
    let doc = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md");
    let text = std::fs::read_to_string(doc).unwrap();
    let line = text.lines().find(|l| l.contains("[\"curl\"")).unwrap();
    let list = &line[line.find('[').unwrap()..=line.rfind(']').unwrap()];
    serde_json::from_str(list).unwrap()
}

/// Where a `fetch.command` is redirected, the program cannot see, so its check of
/// redirects does not apply: the documented curl command follows none. A public feed
/// redirecting to the router's own https service (openssl's test server on
/// 127.0.0.1, trusted through `CURL_CA_BUNDLE`) or to its plain http one fails in
/// curl, and nothing of theirs is stored. (With `-L` and `--proto-redir =https`
/// alone, the https one was stored.)
#[test]
fn the_documented_curl_command_follows_no_redirect() {
    let (Some(curl), Some(openssl)) = (find("curl"), find("openssl")) else {
        return cannot_run("curl or openssl not found");
    };
    let public = match public_address() {
        Ok(a) => a,
        Err(why) => return cannot_run(&why),
    };
    let t = TestDir::new();
    let www = t.file("www");
    std::fs::create_dir(&www).unwrap();
    std::fs::write(www.join("secret"), "10.66.0.0/16\n").unwrap();
    let (cert, key) = (t.file("cert.pem"), t.file("key.pem"));
    let made = Command::new(&openssl)
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let port = free_port();
    let mut tls = Command::new(&openssl)
        .args([
            "s_server",
            "-quiet",
            "-WWW",
            "-accept",
            &format!("127.0.0.1:{port}"),
        ])
        .arg("-cert")
        .arg(&cert)
        .arg("-key")
        .arg(&key)
        .current_dir(&www)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let tls_addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    assert!(wait_listening(tls_addr, std::time::Duration::from_secs(10)));
    let plain = FakeServer::start(|_| Reply::json(200, "10.77.0.0/16\n"));
    let plain_port = plain.addr.port();
    let feed = FakeServer::start_on(&format!("{public}:0"), move |s| match s.url.as_str() {
        "/https" => redirect_to(format!("https://127.0.0.1:{port}/secret")),
        _ => redirect_to(format!("http://127.0.0.1:{plain_port}/secret")),
    });
    let feeds = [feed.url("/https"), feed.url("/http")];
    let mut argv = documented_curl();
    argv[0] = curl.display().to_string();
    t.config(&json!({"feeds": feeds, "fetch": {"command": argv}}));
    let out = t
        .cmd()
        .env("CURL_CA_BUNDLE", &cert)
        .arg("run")
        .output()
        .unwrap();
    let _ = tls.kill();
    let _ = tls.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    for f in &feeds {
        assert!(stored(&t, Kind::Feed, f).is_empty(), "{f}: {err}");
        assert!(err.contains(&format!("{f}: ")), "{err}");
    }
    assert!(err.contains("exited with status 47"), "{err}");
}
