//! Server-side request forgery through redirects, and answers leaking into failure
//! texts (issue 27, item 9). A feed on a public address must not be able to point
//! the collector at the router's own services (a redirect to 127.0.0.1 stored their
//! list and served it), and no failure text in `status.json` (which the web page and
//! LuCI show) may carry what a server sent.
//!
//! Through `fetch.command`, uclient-fetch (the OpenWrt package's default) follows
//! redirects on its own: the lines it prints for them are judged the same way.
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
/// error page, RIPEstat's `messages`, its envelope (`data_call_name`,
/// `data_call_status`, `version`, `time`) and a DoH answer full of markup leave no
/// byte of theirs in `status.json` (which `GET /status`, the web page and LuCI show).
#[test]
fn failure_texts_never_quote_answers() {
    const MARKUP: &str = "<script>alert(1)</script><img src=x onerror=alert(2)>";
    // A wrong envelope field of an otherwise good answer (AS4 to AS7); the times of
    // AS7 read as ISO times (the first 19 characters) and are stale.
    let envelope = |asn: &str| {
        let fields = match asn {
            "4" => format!(r#""data_call_name":"{MARKUP}""#),
            "5" => format!(r#""data_call_status":"{MARKUP}""#),
            "6" => format!(r#""version":"{MARKUP}""#),
            "7" => format!(r#""time":"2026-11-27T08:00:00{MARKUP}""#),
            _ => return None,
        };
        Some(format!(
            r#"{{"status":"ok",{fields},"data":{{"prefixes":[{{"prefix":"192.0.2.0/24"}}],"query_time":"2026-11-20T08:00:00{MARKUP}"}}}}"#
        ))
    };
    let fake = FakeServer::start(move |s| {
        if s.url.starts_with("/dns-query") {
            return Reply::json(200, MARKUP);
        }
        let asn = resource_of(&s.url);
        if let Some(body) = asn.as_deref().and_then(envelope) {
            return Reply::json(200, body);
        }
        match asn.as_deref() {
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
        "asns": ["1", "2", "3", "4", "5", "6", "7"],
        "fqdns": ["x.example"],
        "ripe": {"url": fake.url("/data.json"), "retries": 0},
        "dns": {"resolver": "doh", "doh_url": fake.url("/dns-query")},
    }));
    let out = t.run(&["run"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let status = std::fs::read_to_string(t.file("status.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&status).unwrap();
    let failures = v["failures"].as_object().expect("failures").clone();
    assert_eq!(failures.len(), 8, "{status}");
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
    for (asn, says) in [
        ("AS4", "another data call"),
        ("AS5", "unknown data_call_status"),
        ("AS6", "unknown major version"),
        ("AS7", "stale data: of 2026-11-20T08:00:00Z"),
    ] {
        let text = failures[asn].as_str().unwrap();
        assert!(text.contains(says), "{asn}: {status}");
    }
    assert!(
        failures["x.example"].as_str().unwrap().contains("not JSON"),
        "{status}"
    );
}

/// A failed `fetch.command`'s error output may carry the server's text (busybox
/// wget prints the HTTP reason phrase, uclient-fetch a redirect's target): it goes to
/// the log, escaped; `status.json` gets the classification and the exit status only.
#[test]
fn fetch_command_failures_never_quote_its_output() {
    const MARKUP: &str = "<img src=x onerror=alert(1)>";
    let t = TestDir::new();
    let said = format!("wget: server returned error: HTTP/1.1 404 {MARKUP}");
    let script = format!("echo '{said}' >&2; exit 1");
    t.config(&json!({
        "asns": ["1"],
        "ripe": {"url": "http://192.0.2.1/data.json", "retries": 0},
        "fetch": {"command": ["sh", "-c", script, "sh", "{url}"]},
    }));
    let out = t.run(&["run"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let status = std::fs::read_to_string(t.file("status.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(
        v["failures"]["AS1"], "fetch command sh: HTTP status 404 (exited with status 1)",
        "{status}"
    );
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains(&format!("{said:?}")), "{log}");
}

/// The curl `fetch.command` of docs/configuration.md, as its JSON list.
fn documented_curl() -> Vec<String> {
    let doc = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md");
    let text = std::fs::read_to_string(doc).unwrap();
    let line = text.lines().find(|l| l.contains("[\"curl\"")).unwrap();
    let list = &line[line.find('[').unwrap()..=line.rfind(']').unwrap()];
    serde_json::from_str(list).unwrap()
}

/// Where curl as `fetch.command` is redirected, the program cannot see (curl prints
/// nothing of it), so its check of redirects does not apply: the documented curl
/// command follows none. A public feed
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

/// A stand-in for uclient-fetch (the OpenWrt package's `fetch.command`) over curl,
/// printing on standard error what the real one prints without `-q`
/// (uclient-fetch.c): `Downloading`, `Connecting to ADDR:PORT` for the first
/// connection only, `Redirected to PATH on HOST` (HOST without port or brackets)
/// after each of up to 10 redirects (301, 302, 307) it follows on its own, `Writing
/// to stdout`, progress, `Download completed (N bytes)`, or `HTTP error N` and exit 8.
const FAKE_UCLIENT_FETCH: &str = r#"#!/bin/sh
for url; do :; done
body="$(dirname "$0")/body.$$"
trap 'rm -f "$body"' EXIT
echo "Downloading '$url'" >&2
hops=0
while :; do
    out=$(CURL -s --globoff --max-redirs 0 -o "$body" \
        -w '%{http_code} %{remote_ip} %{remote_port} %{redirect_url}' "$url") || {
        echo "Connection error: Connection failed" >&2
        exit 4
    }
    set -- $out
    [ "$hops" = 0 ] && echo "Connecting to $2:$3" >&2
    case "$1" in 301|302|307)
        if [ "$hops" -lt 10 ] && [ -n "$4" ]; then
            url=$4 hops=$((hops + 1)) rest=${4#*://}
            case "$rest" in */*) path=/${rest#*/} ;; *) path=/ ;; esac
            host=${rest%%/*}
            case "$host" in
            \[*) host=${host#\[} host=${host%%\]*} ;;
            *) host=${host%:*} ;;
            esac
            echo "Redirected to $path on $host" >&2
            continue
        fi
    esac
    case "$1" in 200|204)
        echo "Writing to stdout" >&2
        cat "$body"
        printf '\r%-20.20s 100%% |*******************************|  1k  0:00:00 ETA\n' - >&2
        echo "Download completed ($(wc -c < "$body") bytes)" >&2
        exit 0
    esac
    echo "HTTP error $1" >&2
    exit 8
done
"#;

/// The OpenWrt package fetches through uclient-fetch, which follows redirects to any
/// address on its own: the lines it prints after following one are judged as the
/// built-in client judges redirects. A public feed redirected to the router's own
/// service (by address, by name, as a mapped IPv6 address, after a first public hop)
/// fails with `redirect refused`, keeps its stored values, and nothing of the
/// internal list is stored; a public hop, and a configured URL on 127.0.0.1
/// redirecting to 127.0.0.1, still work.
#[test]
fn uclient_fetch_is_not_redirected_to_internal_addresses() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let Some(curl) = find("curl") else {
        return cannot_run("curl not found (the stand-in for uclient-fetch uses it)");
    };
    let public = match public_address() {
        Ok(a) => a,
        Err(why) => return cannot_run(&why),
    };
    // A superset of what the feeds stored first, so that the shrink gate would not
    // hold it back: without the check, it is merged.
    let internal = FakeServer::start(|s| match s.url.as_str() {
        "/secret" => Reply::json(200, "10.66.0.0/16\n198.51.100.0/24\n"),
        _ => redirect_to("/secret".into()),
    });
    let port = internal.addr.port();
    // The first run stores the feeds' public lists; then they redirect.
    let redirecting = Arc::new(AtomicBool::new(false));
    let later = redirecting.clone();
    let feed = FakeServer::start_on(&format!("{public}:0"), move |s| {
        let path = s.url.as_str();
        match later.load(Ordering::SeqCst) {
            false => Reply::json(200, "198.51.100.0/24\n"),
            true if path == "/literal" => redirect_to(format!("http://127.0.0.1:{port}/secret")),
            true if path == "/name" => redirect_to(format!("http://localhost:{port}/secret")),
            true if path == "/v6" => {
                redirect_to(format!("http://[::ffff:127.0.0.1]:{port}/secret"))
            }
            true if path == "/chain" => redirect_to("/literal".into()),
            true if path == "/hop" => redirect_to("/list".into()),
            true => Reply::json(200, "198.51.100.0/24\n203.0.113.0/24\n"),
        }
    });
    let t = TestDir::new();
    let fake = t.file("uclient-fetch");
    let text = t.file("uclient-fetch.txt");
    let script = FAKE_UCLIENT_FETCH.replace("CURL", &curl.display().to_string());
    std::fs::write(&text, script).unwrap();
    // Installed by another process: a file this one had open for writing could still
    // be open in a child another test is forking, and exec would fail (ETXTBSY).
    let installed = Command::new("install")
        .arg("-m755")
        .arg(&text)
        .arg(&fake)
        .status();
    assert!(installed.unwrap().success());
    let refused = ["/literal", "/name", "/v6", "/chain"].map(|p| feed.url(p));
    let (hop, own) = (feed.url("/hop"), internal.url("/hop"));
    let mut all = refused.to_vec();
    all.extend([hop.clone(), own.clone()]);
    let fake = fake.display().to_string();
    let argv = [fake.as_str(), "-T", "30", "-O", "-", "{url}"];
    t.config(&json!({"feeds": all, "fetch": {"command": argv}}));
    let out = t.run(&["run"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");

    redirecting.store(true, Ordering::SeqCst);
    let out = t.run(&["run"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    for f in &refused {
        assert_eq!(stored(&t, Kind::Feed, f), ["198.51.100.0/24"], "{f}: {err}");
        let line = err.lines().find(|l| l.contains(&format!("{f}: ")));
        assert!(
            line.unwrap_or_default()
                .contains("redirect refused: to an internal address ("),
            "{f}: {err}"
        );
    }
    assert_eq!(
        stored(&t, Kind::Feed, &hop),
        ["198.51.100.0/24", "203.0.113.0/24"],
        "{err}"
    );
    assert_eq!(
        stored(&t, Kind::Feed, &own),
        ["10.66.0.0/16", "198.51.100.0/24"],
        "{err}"
    );
    let status = std::fs::read_to_string(t.file("status.json")).unwrap();
    assert!(
        status.contains("redirect refused: to an internal address (127.0.0.1)"),
        "{status}"
    );
}

/// A failed fetch names the server it failed at (the configured URL's host and port,
/// never a host an answer named), for the ASN upstream, the DoH resolver and a feed.
#[test]
fn fetch_failures_name_the_server() {
    let closed = free_port();
    let broken = FakeServer::start(|_| {
        let mut r = Reply::json(200, "[]");
        r.headers.push(("Content-Length".into(), "<script>".into()));
        r
    });
    let broken_host = broken
        .url("/")
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let t = TestDir::new();
    t.config(&json!({
        "asns": ["64500"],
        "fqdns": ["x.example"],
        "feeds": [broken.url("/feed.txt")],
        "ripe": {"url": format!("http://127.0.0.1:{closed}/data.json"), "retries": 0},
        "dns": {"resolver": "doh", "doh_url": broken.url("/dns-query")},
    }));
    let out = t.run(&["run"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let status = std::fs::read_to_string(t.file("status.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&status).unwrap();
    let failure = |s: &str| v["failures"][s].as_str().unwrap_or_default().to_string();
    let asn = failure("AS64500");
    assert!(asn.contains(&format!("127.0.0.1:{closed}: ")), "{asn}");
    for source in ["x.example".to_string(), broken.url("/feed.txt")] {
        let text = failure(&source);
        assert!(
            text.contains(&format!("{broken_host}: ")),
            "{source}: {text}"
        );
        assert!(!text.contains("<script"), "{source}: {text}");
    }
}
