//! The HTTP API through the real binary (`serve`), spoken to with a minimal HTTP/1.1
//! client over a plain `TcpStream`, so that malformed and hostile requests can be sent
//! byte for byte.

use std::fs;
use std::io::Write;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;
use serde_json::{json, Value};

use crate::common::*;

/// A `serve` process on a free port of 127.0.0.1; its log goes to `serve.log`.
struct Serve {
    proc: Proc,
    addr: SocketAddr,
}

fn serve(t: &TestDir) -> Serve {
    let (proc, addr) = t.spawn_listening(&["-v", "serve"]);
    Serve { proc, addr }
}

fn log_of(t: &TestDir) -> String {
    fs::read_to_string(t.file("serve.log")).unwrap_or_default()
}

/// One parsed HTTP answer.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Reads the first answer from `s`: head, then `Content-Length` bytes of body (none
/// for HEAD and 304), or everything until the server closes when there is no length.
fn read_answer(s: &mut TcpStream, head_request: bool) -> Option<Answer> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    let end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i;
        }
        match read_retrying(s, &mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let status: u16 = status_line.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = buf[end + 4..].to_vec();
    let length = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("Content-Length"))
        .and_then(|(_, v)| v.parse::<usize>().ok());
    let want = if head_request || status == 304 || (100..200).contains(&status) {
        Some(0)
    } else {
        length
    };
    loop {
        if want.is_some_and(|w| body.len() >= w) {
            body.truncate(want.unwrap_or(0));
            break;
        }
        match read_retrying(s, &mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    Some(Answer {
        status,
        headers,
        body,
    })
}

/// Sends raw bytes (write errors ignored: the server may answer before reading all),
/// optionally closes the sending side, and reads the first answer.
fn exchange(addr: SocketAddr, raw: &[u8], close_write: bool) -> Option<Answer> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(15))).unwrap();
    let _ = s.write_all(raw);
    if close_write {
        let _ = s.shutdown(Shutdown::Write);
    }
    let head_request = raw.starts_with(b"HEAD ");
    read_answer(&mut s, head_request)
}

/// A complete request with `Connection: close`.
fn raw_request(
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Vec<u8> {
    let mut out = format!("{method} {target} HTTP/1.1\r\nConnection: close\r\n").into_bytes();
    // `Host: localhost` unless the test gives its own.
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        out.extend_from_slice(b"Host: localhost\r\n");
    }
    for (k, v) in headers {
        out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
    }
    if let Some(b) = body {
        out.extend_from_slice(format!("Content-Length: {}\r\n", b.len()).as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    if let Some(b) = body {
        out.extend_from_slice(b);
    }
    out
}

fn call(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Answer {
    let raw = raw_request(method, target, headers, body.map(str::as_bytes));
    exchange(addr, &raw, false)
        .unwrap_or_else(|| panic!("no answer from {addr} to {method} {target}"))
}

fn get(addr: SocketAddr, target: &str) -> Answer {
    call(addr, "GET", target, &[], None)
}

/// Checks what every answer of ours carries.
fn framed(a: &Answer) {
    assert!(a.header("Content-Type").is_some(), "{a:?}");
    assert!(a.header("Content-Length").is_some(), "{a:?}");
    assert!(a.header("Transfer-Encoding").is_none(), "{a:?}");
}

fn assert_error(a: &Answer, status: u16, mentions: &str) {
    assert_eq!(a.status, status, "{:?}", a.text());
    framed(a);
    assert_eq!(a.header("Content-Type"), Some("application/json"));
    let msg = a.json()["error"].as_str().unwrap_or_default().to_string();
    assert!(
        msg.contains(mentions),
        "{msg:?} should mention {mentions:?}"
    );
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Stores a small mixed data set through the library: IPv4 and IPv6 prefixes that
/// overlap and touch (for aggregation), and FQDN addresses.
fn fill(t: &TestDir) {
    let mut d = db::open(&t.paths()).unwrap();
    let now = ripe_cidr_collector::util::unix_now();
    let asn = strings(&[
        "91.108.4.0/22",
        "91.108.8.0/22",
        "91.108.12.0/22",
        "91.108.16.0/21",
        "149.154.160.0/20",
        "149.154.164.0/22",
        "2001:b28:f23d::/48",
        "2001:b28:f23f::/48",
        "2001:67c:4e8::/48",
    ]);
    d.merge_source(Kind::Asn, "62041", &asn, now, 7).unwrap();
    d.merge_source(
        Kind::Asn,
        "13335",
        &strings(&["1.1.1.0/24", "1.0.0.0/24"]),
        now,
        7,
    )
    .unwrap();
    let fqdn = strings(&[
        "93.184.216.34",
        "2606:2800:220:1:248:1893:25c8:1946",
        "1.1.1.1",
    ]);
    d.merge_source(Kind::Fqdn, "example.com", &fqdn, now, 7)
        .unwrap();
}

#[test]
fn every_route_and_status() {
    let t = TestDir::new();
    fill(&t);
    let s = serve(&t);
    let a = s.addr;

    // GET /health: counts from the database, times from status.json.
    fs::write(
        t.file("status.json"),
        r#"{"heartbeat":"2026-11-30T10:00:00Z","last_success":"2026-11-30T09:00:00Z","last_error":null}"#,
    )
    .unwrap();
    let h = get(a, "/health");
    assert_eq!(h.status, 200);
    framed(&h);
    assert_eq!(
        h.json(),
        json!({"status": "ok", "counts": {"asn": 11, "fqdn": 3}, "last_success": "2026-11-30T09:00:00Z",
               "last_error": null, "heartbeat": "2026-11-30T10:00:00Z"})
    );
    let head = call(a, "HEAD", "/health", &[], None);
    assert_eq!((head.status, head.body.len()), (200, 0));
    assert_eq!(head.header("Content-Length"), h.header("Content-Length"));

    // GET /addresses: defaults, ETag, 304 for a matching tag, `*` and lists.
    let l = get(a, "/addresses");
    assert_eq!(l.status, 200);
    framed(&l);
    assert_eq!(l.header("Content-Type"), Some("text/plain; charset=utf-8"));
    assert!(
        l.text().starts_with("1.0.0.0/24\n1.1.1.0/24\n1.1.1.1\n"),
        "{}",
        l.text()
    );
    let tag = l.header("ETag").expect("ETag").to_string();
    assert!(tag.starts_with('"') && tag.ends_with('"'), "{tag}");
    for inm in [
        tag.clone(),
        "*".to_string(),
        format!("\"nope\", {tag}"),
        format!("W/{tag}"),
    ] {
        let nm = call(a, "GET", "/addresses", &[("If-None-Match", &inm)], None);
        assert_eq!(nm.status, 304, "{inm}");
        assert!(nm.body.is_empty());
        assert_eq!(nm.header("ETag"), Some(tag.as_str()));
        // The length a 200 would have had, as RFC 9110 allows; never a false 0.
        assert_eq!(nm.header("Content-Length"), l.header("Content-Length"));
    }
    let other = call(
        a,
        "GET",
        "/addresses",
        &[("If-None-Match", "\"nope\"")],
        None,
    );
    assert_eq!(other.status, 200);
    let j = get(a, "/addresses?format=json&type=cidr&family=6");
    assert_eq!(j.header("Content-Type"), Some("application/json"));
    assert_eq!(
        j.json()["addresses"],
        json!([
            "2001:67c:4e8::/48",
            "2001:b28:f23d::/48",
            "2001:b28:f23f::/48"
        ])
    );
    assert_ne!(j.header("ETag"), Some(tag.as_str()));
    for agg in ["1", "true", "0", "false"] {
        assert_eq!(
            get(a, &format!("/addresses?aggregate={agg}")).status,
            200,
            "{agg}"
        );
    }
    assert_eq!(
        get(a, "/addresses?aggregate=1&type=cidr&family=4").text(),
        "1.0.0.0/24\n1.1.1.0/24\n91.108.4.0/22\n91.108.8.0/21\n91.108.16.0/21\n149.154.160.0/20\n"
    );

    // 400s name what is wrong.
    assert_error(&get(a, "/addresses?formt=nft"), 400, "formt");
    assert_error(&get(a, "/addresses?format=yaml"), 400, "yaml");
    assert_error(&get(a, "/addresses?family=5"), 400, "5");
    assert_error(&get(a, "/addresses?type=all&type=cidr"), 400, "type");
    assert_error(&get(a, "/addresses?aggregate=yes"), 400, "aggregate");
    assert_error(
        &get(a, "/addresses?set=bad%20name&format=nft"),
        400,
        "bad name",
    );
    for kw in ["table", "inet", "flush", "counter", "vmap", "elements"] {
        assert_error(
            &get(a, &format!("/addresses?format=nft&table={kw}")),
            400,
            &format!("invalid table name \"{kw}\": it is an nftables keyword"),
        );
    }
    // Keywords are fine as set names (always suffixed), and in other case as tables.
    let odd = get(a, "/addresses?format=nft&table=TABLE&set=flush");
    assert_eq!(odd.status, 200);
    assert!(odd
        .text()
        .starts_with("add table inet TABLE\nadd set inet TABLE flush_v4 "));
    assert_error(&get(a, "/addresses?format=%zz"), 400, "percent");
    assert_error(&get(a, "/health?verbose=1"), 400, "verbose");

    // Sources: list, add (201, then 200), remove (200, then 404), purge.
    assert_eq!(get(a, "/asns").json(), json!({"asns": []}));
    let add = call(a, "POST", "/asns", &[], Some(r#"{"asn":"AS62041"}"#));
    assert_eq!(add.status, 201);
    framed(&add);
    assert_eq!(add.json(), json!({"asn": "62041", "added": true}));
    let again = call(a, "POST", "/asns", &[], Some("{\"asn\": 62041}"));
    assert_eq!(
        (again.status, again.json()["added"].clone()),
        (200, json!(false))
    );
    // Plain `curl -d` sends a form content type: the body is JSON all the same.
    let form = [("Content-Type", "application/x-www-form-urlencoded")];
    let f = call(
        a,
        "POST",
        "/fqdns",
        &form,
        Some(r#"{"fqdn":"Example.COM."}"#),
    );
    assert_eq!(
        (f.status, f.json()),
        (201, json!({"fqdn": "example.com", "added": true}))
    );
    assert_eq!(get(a, "/asns").json(), json!({"asns": ["62041"]}));
    assert_eq!(get(a, "/fqdns").json(), json!({"fqdns": ["example.com"]}));
    let cfg: Value = serde_json::from_slice(&fs::read(t.file("config.json")).unwrap()).unwrap();
    assert_eq!(cfg["asns"], json!(["62041"]));
    let del = call(a, "DELETE", "/asns/AS62041", &[], None);
    assert_eq!(
        (del.status, del.json()),
        (200, json!({"asn": "62041", "removed": true}))
    );
    assert_error(
        &call(a, "DELETE", "/asns/62041", &[], None),
        404,
        "AS62041 is not configured",
    );
    assert_eq!(
        get(a, "/health").json()["counts"]["fqdn"],
        3,
        "removal without purge keeps values"
    );
    let purge = call(a, "DELETE", "/fqdns/example.com?purge=true", &[], None);
    assert_eq!(
        (purge.status, purge.json()),
        (
            200,
            json!({"fqdn": "example.com", "removed": true, "purged": 3})
        )
    );
    assert_eq!(get(a, "/health").json()["counts"]["fqdn"], 0);
    // Leftovers of an unconfigured source can be purged; 404 once nothing is left.
    let left = call(a, "DELETE", "/asns/13335?purge=1", &[], None);
    assert_eq!(
        (left.status, left.json()),
        (200, json!({"asn": "13335", "removed": false, "purged": 2}))
    );
    assert_eq!(
        call(a, "DELETE", "/asns/13335?purge=1", &[], None).status,
        404
    );
    assert_error(
        &call(a, "POST", "/asns", &[], Some(r#"{"asn":"ASX"}"#)),
        400,
        "ASX",
    );
    assert_error(
        &call(a, "POST", "/asns", &[], Some("{")),
        400,
        "invalid JSON",
    );
    assert_error(
        &call(a, "DELETE", "/fqdns/1.2.3.4", &[], None),
        400,
        "1.2.3.4",
    );
    assert_error(
        &call(a, "DELETE", "/asns/1?purge=maybe", &[], None),
        400,
        "purge",
    );

    // 404, 405 with Allow, 413.
    assert_error(&get(a, "/nope"), 404, "/nope");
    let m = call(a, "PUT", "/asns", &[], Some("{}"));
    assert_error(&m, 405, "GET, HEAD, POST");
    assert_eq!(m.header("Allow"), Some("GET, HEAD, POST"));
    assert_eq!(
        call(a, "GET", "/asns/1", &[], None).header("Allow"),
        Some("DELETE")
    );
    assert_eq!(
        call(a, "DELETE", "/addresses", &[], None).header("Allow"),
        Some("GET, HEAD")
    );
    let big = format!("{{\"asn\":\"1\"{}}}", " ".repeat(70_000));
    assert_error(&call(a, "POST", "/asns", &[], Some(&big)), 413, "65536");
    // Exactly 64 KiB is still accepted.
    let exact = format!("{{\"asn\":\"7\"{}}}", " ".repeat(65_536 - 11));
    assert_eq!(exact.len(), 65_536);
    assert_eq!(call(a, "POST", "/asns", &[], Some(&exact)).status, 201);

    // Keep-alive: several requests on one connection.
    let mut c = TcpStream::connect(a).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    for _ in 0..3 {
        c.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        assert_eq!(read_answer(&mut c, false).unwrap().status, 200);
    }
}

#[test]
fn token_guards_mutating_requests() {
    let t = TestDir::new();
    t.config(&json!({"api": {"token": "s3cret"}}));
    let s = serve(&t);
    let a = s.addr;
    let body = Some(r#"{"asn":"AS1"}"#);
    let no = call(a, "POST", "/asns", &[], body);
    assert_error(&no, 401, "token");
    assert_eq!(no.header("WWW-Authenticate"), Some("Bearer"));
    assert_error(
        &call(
            a,
            "POST",
            "/asns",
            &[("Authorization", "Bearer wrong")],
            body,
        ),
        401,
        "token",
    );
    assert_error(
        &call(
            a,
            "POST",
            "/asns",
            &[("Authorization", "Basic czNjcmV0")],
            body,
        ),
        401,
        "token",
    );
    assert_error(&call(a, "DELETE", "/asns/1", &[], None), 401, "token");
    assert_eq!(
        call(
            a,
            "POST",
            "/asns",
            &[("Authorization", "Bearer s3cret")],
            body
        )
        .status,
        201
    );
    assert_eq!(
        call(
            a,
            "POST",
            "/asns",
            &[("Authorization", "bearer s3cret")],
            body
        )
        .status,
        200
    );
    // Reading needs no token.
    assert_eq!(get(a, "/asns").status, 200);
    assert_eq!(get(a, "/addresses").status, 200);
    // A changed token applies to the next request.
    let mut cfg: Value = serde_json::from_slice(&fs::read(t.file("config.json")).unwrap()).unwrap();
    cfg["api"]["token"] = json!("n3w");
    t.config(&cfg);
    assert_eq!(
        call(
            a,
            "DELETE",
            "/asns/1",
            &[("Authorization", "Bearer s3cret")],
            None
        )
        .status,
        401
    );
    assert_eq!(
        call(
            a,
            "DELETE",
            "/asns/1",
            &[("Authorization", "Bearer n3w")],
            None
        )
        .status,
        200
    );
    // A broken config.json is the server's problem: 503 naming the file and problem.
    fs::write(t.file("config.json"), "{\"api\": ").unwrap();
    let broken = call(a, "POST", "/asns", &[("Authorization", "Bearer n3w")], body);
    assert_eq!(broken.status, 503);
    let e = broken.json()["error"].as_str().unwrap().to_string();
    assert!(e.starts_with("configuration unavailable: "), "{e}");
    assert!(e.contains("config.json: invalid JSON"), "{e}");
    // The log line is written before the answer, but reaches serve.log through the
    // thread that drains the server's stderr, which may lag on a busy machine.
    assert!(
        eventually(Duration::from_secs(5), || log_of(&t)
            .contains("config.json")),
        "details are logged"
    );
}

#[test]
fn export_equals_api_for_every_format() {
    let t = TestDir::new();
    fill(&t);
    let s = serve(&t);
    let combos: &[(&str, &[&str])] = &[
        ("", &[]),
        ("type=cidr", &["--type", "cidr"]),
        ("type=fqdn&family=4", &["--type", "fqdn", "--family", "4"]),
        ("family=6&aggregate=1", &["--family", "6", "--aggregate"]),
        (
            "aggregate=true&table=fw&set=tg",
            &["--aggregate", "--table", "fw", "--set", "tg"],
        ),
    ];
    for format in ["text", "json", "nft", "ipset", "routeros"] {
        for (query, args) in combos {
            let target = format!("/addresses?format={format}&{query}");
            let api = get(s.addr, &target);
            assert_eq!(api.status, 200, "{target}");
            let out = t
                .cmd()
                .args(["export", "--format", format])
                .args(*args)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            assert!(!out.stdout.is_empty());
            assert_eq!(api.body, out.stdout, "{target}: API and export differ");
        }
    }
}

#[test]
fn storage_error_is_503_then_recovers() {
    let t = TestDir::new();
    fill(&t);
    let s = serve(&t);
    assert_eq!(get(s.addr, "/health").status, 200);
    fs::write(t.file("ripe.db"), vec![0x5a; 8192]).unwrap();
    for suffix in ["-wal", "-shm"] {
        let _ = fs::remove_file(t.file(&format!("ripe.db{suffix}")));
    }
    let h = get(s.addr, "/health");
    assert_eq!(h.status, 503, "{}", h.text());
    framed(&h);
    // The keys in the order of the 200 answer (without counts), the error last.
    assert_eq!(
        h.text(),
        "{\"status\":\"error\",\"last_success\":null,\"last_error\":null,\
         \"heartbeat\":null,\"error\":\"storage unavailable\"}\n"
    );
    assert!(
        !h.text().contains("ripe.db"),
        "no internals in the answer: {}",
        h.text()
    );
    let moved: Vec<String> = fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("ripe.db.corrupt-"))
        .collect();
    assert!(!moved.is_empty(), "the damaged file is moved aside");
    // The next request starts a fresh database.
    let h = get(s.addr, "/health");
    assert_eq!(
        (h.status, h.json()["counts"].clone()),
        (200, json!({"asn": 0, "fqdn": 0}))
    );
    assert_eq!(get(s.addr, "/addresses").status, 200);
    // Same for /addresses: 503 with the generic error.
    fs::write(t.file("ripe.db"), vec![0x5a; 8192]).unwrap();
    for suffix in ["-wal", "-shm"] {
        let _ = fs::remove_file(t.file(&format!("ripe.db{suffix}")));
    }
    assert_error(&get(s.addr, "/addresses"), 503, "storage unavailable");
    assert_eq!(get(s.addr, "/addresses").status, 200);
    // Logged before the answers, but copied into serve.log by a draining thread.
    assert!(
        eventually(Duration::from_secs(5), || log_of(&t).contains("corrupt")),
        "details are logged: {}",
        log_of(&t)
    );
    assert!(
        eventually(Duration::from_secs(5), || log_of(&t)
            .contains("the next request starts a fresh database")),
        "{}",
        log_of(&t)
    );
    assert!(!log_of(&t).contains("next start"), "{}", log_of(&t));
}

#[test]
fn huge_bodies_get_413_and_server_lives() {
    let t = TestDir::new();
    let s = serve(&t);
    let a = s.addr;
    // A huge declared length: answered at once, nothing allocated for it. Upstream
    // tiny_http 0.12.0 allocated the declared remainder when the request was dropped.
    for (method, path) in [("POST", "/asns"), ("GET", "/health"), ("DELETE", "/asns/1")] {
        let raw = format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 99999999999\r\n\r\n{{\"asn\":"
        );
        let r = exchange(a, raw.as_bytes(), true).expect("an answer");
        assert_error(&r, 413, "larger than");
    }
    // The same with `Expect: 100-continue`: 413 instead of an invitation to send.
    let raw = "POST /asns HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: 99999999999\r\n\r\n";
    let r = exchange(a, raw.as_bytes(), true).expect("an answer");
    assert_eq!(r.status, 413);
    // A chunked body without a declared length is cut at 64 KiB. The chunk ends the
    // stream right after a CRLF, so the server reads everything we send.
    let mut raw =
        b"POST /asns HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n11000\r\n"
            .to_vec();
    raw.extend(std::iter::repeat_n(b'a', 0x11000));
    raw.extend_from_slice(b"\r\n");
    let r = exchange(a, &raw, false).expect("an answer");
    assert_error(&r, 413, "larger than");
    // A long chunked stream, written while the server answers.
    let mut c = TcpStream::connect(a).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(b"POST /fqdns HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n")
        .unwrap();
    let mut writer = c.try_clone().unwrap();
    let w = thread::spawn(move || {
        let chunk = format!("10000\r\n{}\r\n", "b".repeat(0x10000));
        for _ in 0..200 {
            if writer.write_all(chunk.as_bytes()).is_err() {
                break;
            }
        }
    });
    let r = read_answer(&mut c, false).expect("an answer");
    assert_eq!(r.status, 413);
    drop(c);
    let _ = w.join();
    assert_eq!(get(a, "/health").status, 200);
    assert!(!t.file("config.json").exists());
    assert!(!log_of(&t).contains("panicked"), "{}", log_of(&t));
}

/// Reads from `s` until the server closes its sending side: true when that happens
/// within `limit`, false on a timeout or a reset.
fn reaches_eof(s: &mut TcpStream, limit: Duration) -> bool {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 1024];
    loop {
        match read_retrying(s, &mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
}

#[test]
fn keep_alive_after_bodies_that_were_read() {
    let t = TestDir::new();
    let s = serve(&t);
    t.config(&json!({"api": {"token": "s3cret"}}));
    // A request whose body was read keeps its connection: two POSTs and a GET on one.
    let mut c = TcpStream::connect(s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    for (i, body) in [r#"{"asn":"1"}"#, r#"{"asn":"1"}"#].iter().enumerate() {
        write!(
            c,
            "POST /asns HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer s3cret\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let r = read_answer(&mut c, false).expect("an answer");
        assert_eq!(r.status, if i == 0 { 201 } else { 200 });
    }
    c.write_all(b"GET /asns HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    assert_eq!(
        read_answer(&mut c, false).unwrap().json(),
        json!({"asns": ["1"]})
    );
    assert!(!log_of(&t).contains("panicked"), "{}", log_of(&t));
}

#[test]
fn conflicting_lengths_and_repeated_keys_are_400() {
    let t = TestDir::new();
    let s = serve(&t);
    let a = s.addr;
    // Two different lengths: the framing is unknown, 400 naming both, and the
    // connection ends (the rest cannot be read as a next request).
    let mut c = TcpStream::connect(a).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(
        b"POST /asns HTTP/1.1\r\nHost: localhost\r\nContent-Length: 11\r\nContent-Length: 12\r\n\r\n\
          {\"asn\":\"1\"} ",
    )
    .unwrap();
    let r = read_answer(&mut c, false).expect("an answer");
    assert_error(
        &r,
        400,
        "conflicting Content-Length headers \"11\" and \"12\"",
    );
    // The rest is not read as a next request: the connection ends.
    assert!(reaches_eof(&mut c, Duration::from_secs(3)));
    // The same length twice is one length.
    let raw =
        b"POST /asns HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: 11\r\n\
                Content-Length: 11\r\n\r\n{\"asn\":\"1\"}";
    assert_eq!(exchange(a, raw, false).expect("an answer").status, 201);
    // A key given twice in the body is refused, whichever value it has.
    for body in [r#"{"asn":"2","asn":"3"}"#, r#"{"asn":"2","asn":"2"}"#] {
        assert_error(
            &call(a, "POST", "/asns", &[], Some(body)),
            400,
            "key \"asn\" given more than once",
        );
    }
    assert_error(
        &call(
            a,
            "POST",
            "/fqdns",
            &[],
            Some(r#"{"fqdn":"a.example","fqdn":"b.example"}"#),
        ),
        400,
        "key \"fqdn\" given more than once",
    );
    assert_eq!(get(a, "/asns").json(), json!({"asns": ["1"]}));
}

#[test]
fn hostile_requests_get_4xx_and_server_lives() {
    let t = TestDir::new();
    fill(&t);
    let s = serve(&t);
    let a = s.addr;
    let json_post = |path: &str, body: &[u8]| raw_request("POST", path, &[], Some(body));
    let deep = |n: usize| format!("{{\"asn\":{}{}}}", "[".repeat(n), "]".repeat(n)).into_bytes();
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("bad percent", raw_request("GET", "/addresses?format=%zz", &[], None)),
        ("lone percent", raw_request("GET", "/addresses?format=%", &[], None)),
        ("percent in name", raw_request("GET", "/addresses?%=1", &[], None)),
        ("non-UTF-8 query", raw_request("GET", "/addresses?%ff=1", &[], None)),
        ("non-UTF-8 path", raw_request("DELETE", "/asns/%c3%28", &[], None)),
        ("repeated parameter", raw_request("GET", "/addresses?type=all&type=all", &[], None)),
        ("unknown parameter", raw_request("GET", "/addresses?x=1", &[], None)),
        ("huge query string", raw_request("GET", &format!("/addresses?pad={}", "x".repeat(200_000)), &[], None)),
        ("huge query value", raw_request("GET", &format!("/addresses?format={}", "a".repeat(200_000)), &[], None)),
        ("huge header", raw_request("GET", "/nope", &[("X-Pad", &"p".repeat(1 << 20))], None)),
        ("many headers", {
            let hs: Vec<(String, String)> = (0..5000).map(|i| (format!("X-H{i}"), "v".repeat(20))).collect();
            let hs: Vec<(&str, &str)> = hs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            raw_request("GET", "/nope", &hs, None)
        }),
        ("huge Authorization", raw_request("POST", "/nope", &[("Authorization", &format!("Bearer {}", "t".repeat(100_000)))], Some(b"{}"))),
        ("negative length", b"POST /asns HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: -1\r\n\r\n".to_vec()),
        ("text length", b"POST /asns HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: ten\r\n\r\n".to_vec()),
        ("huge length", b"POST /asns HTTP/1.1\r\nHost: localhost\r\nContent-Length: 184467440737095516160\r\n\r\n".to_vec()),
        ("length and chunked", b"POST /asns HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_vec()),
        ("gzip only", b"POST /asns HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip\r\n\r\nxxxx".to_vec()),
        ("bad chunk size", b"POST /asns HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n".to_vec()),
        ("traversal", raw_request("GET", "/../../etc/passwd", &[], None)),
        ("encoded traversal", raw_request("GET", "/%2e%2e/%2e%2e/etc/passwd", &[], None)),
        ("traversal as ASN", raw_request("DELETE", "/asns/..%2F..%2Fetc%2Fpasswd", &[], None)),
        ("traversal as FQDN", raw_request("DELETE", "/fqdns/..%2F..%2Fetc%2Fpasswd", &[], None)),
        ("SQL in ASN", raw_request("DELETE", "/asns/1;DROP%20TABLE%20addresses", &[], None)),
        ("SQL in FQDN", raw_request("DELETE", "/fqdns/x'%3BDROP%20TABLE%20addresses%3B--", &[], None)),
        ("SQL in body", json_post("/fqdns", br#"{"fqdn":"a'); DROP TABLE addresses;--"}"#)),
        ("SQL in query", raw_request("GET", "/addresses?type=all'%20OR%201=1--", &[], None)),
        ("PUT", raw_request("PUT", "/asns", &[], Some(b"{}"))),
        ("PATCH", raw_request("PATCH", "/addresses", &[], Some(b"{}"))),
        ("POST to health", json_post("/health", b"{}")),
        ("DELETE collection", raw_request("DELETE", "/asns", &[], None)),
        ("OPTIONS *", raw_request("OPTIONS", "*", &[], None)),
        ("TRACE", raw_request("TRACE", "/", &[], None)),
        ("made-up method", raw_request("BREW", "/coffee", &[], None)),
        ("lower-case method", raw_request("get", "/health", &[], None)),
        ("absolute target", raw_request("GET", "http://evil.example/nope", &[], None)),
        ("form body", raw_request("POST", "/asns", &[("Content-Type", "application/x-www-form-urlencoded")], Some(b"asn=AS1"))),
        ("text body", raw_request("POST", "/asns", &[("Content-Type", "text/plain")], Some(b"AS1"))),
        ("multipart body", raw_request("POST", "/asns", &[("Content-Type", "multipart/form-data; boundary=x")], Some(b"--x\r\nContent-Disposition: form-data; name=\"asn\"\r\n\r\n1\r\n--x--\r\n"))),
        ("invalid JSON", json_post("/asns", b"{\"asn\":")),
        ("JSON array", json_post("/asns", b"[\"AS1\"]")),
        ("JSON string", json_post("/asns", b"\"AS1\"")),
        ("JSON bool", json_post("/asns", br#"{"asn":true}"#)),
        ("JSON object", json_post("/asns", br#"{"asn":{"n":1}}"#)),
        ("JSON float", json_post("/asns", br#"{"asn":1.5}"#)),
        ("JSON huge number", json_post("/asns", br#"{"asn":1e400}"#)),
        ("JSON extra key", json_post("/asns", br#"{"asn":"1","then":"drop"}"#)),
        ("JSON repeated key", json_post("/asns", br#"{"asn":"1","asn":"2"}"#)),
        ("two lengths", b"POST /asns HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nContent-Length: 11\r\n\r\n{\"asn\":\"1\"}".to_vec()),
        ("keyword table", raw_request("GET", "/addresses?format=nft&table=table", &[], None)),
        ("JSON wrong key", json_post("/fqdns", br#"{"asn":"1"}"#)),
        ("JSON number FQDN", json_post("/fqdns", br#"{"fqdn":42}"#)),
        ("empty body", json_post("/asns", b"")),
        ("NUL body", json_post("/asns", &[0u8; 64])),
        ("invalid UTF-8 body", json_post("/asns", b"{\"asn\":\"\xff\xfe\"}")),
        ("unicode FQDN", json_post("/fqdns", "{\"fqdn\":\"bücher.example\"}".as_bytes())),
        ("NUL in FQDN", json_post("/fqdns", br#"{"fqdn":"a\u0000b.example"}"#)),
        ("emoji ASN", json_post("/asns", "{\"asn\":\"AS😀\"}".as_bytes())),
        ("deep JSON", json_post("/asns", &deep(127))),
        ("deeper JSON", json_post("/asns", &deep(30_000))),
        ("encoded NUL in path", raw_request("DELETE", "/asns/%00", &[], None)),
        ("raw NUL in path", b"GET /he\0alth HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".to_vec()),
        ("non-ASCII path", "GET /hé HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".as_bytes().to_vec()),
        ("non-ASCII header", "GET /health HTTP/1.1\r\nHost: localhost\r\nX-Name: héllo\r\nConnection: close\r\n\r\n".as_bytes().to_vec()),
        ("header without colon", b"GET /health HTTP/1.1\r\nHost: localhost\r\nNoColonHere\r\nConnection: close\r\n\r\n".to_vec()),
        ("bare LF", b"GET /health HTTP/1.1\nHost: localhost\n\n".to_vec()),
        ("garbage line", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n".to_vec()),
        ("no version", b"GET /health\r\n\r\n".to_vec()),
        ("HTTP/1.2", b"GET /health HTTP/1.2\r\nHost: localhost\r\n\r\n".to_vec()),
        ("odd Expect", b"POST /asns HTTP/1.1\r\nHost: localhost\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}".to_vec()),
        ("lying short length", b"POST /asns HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10\r\n\r\n{\"a".to_vec()),
        ("lying long length", b"POST /asns HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5000\r\n\r\n{\"asn\":\"1\"}".to_vec()),
        ("set name injection", raw_request("GET", "/addresses?format=nft&set=x%3Bflush%20ruleset", &[], None)),
        ("table name too long", raw_request("GET", &format!("/addresses?format=nft&table=t{}", "a".repeat(100)), &[], None)),
        ("ASN out of range", raw_request("DELETE", "/asns/99999999999", &[], None)),
        ("AS0", raw_request("DELETE", "/asns/AS0", &[], None)),
        ("If-None-Match garbage", raw_request("GET", "/nope", &[("If-None-Match", "\"\\\"")], None)),
    ];
    cases.push(("pipelined garbage", {
        let mut v = raw_request("GET", "/nope", &[], None);
        v.extend_from_slice(b"\x00\x01\x02 garbage\r\n\r\n");
        v
    }));
    assert!(cases.len() >= 40);
    let started = Instant::now();
    for (name, raw) in &cases {
        // Requests that leave their body unfinished get the sending side closed.
        let r = exchange(a, raw, true)
            .unwrap_or_else(|| panic!("{name}: connection dropped without an answer"));
        assert!(
            (400..500).contains(&r.status),
            "{name}: {} {}",
            r.status,
            r.text()
        );
    }
    eprintln!(
        "{} hostile requests in {:?}",
        cases.len(),
        started.elapsed()
    );
    let h = get(a, "/health");
    assert_eq!(h.status, 200);
    assert_eq!(
        h.json()["counts"],
        json!({"asn": 11, "fqdn": 3}),
        "nothing was changed or dropped"
    );
    assert!(
        !t.file("config.json").exists(),
        "no hostile request added a source"
    );
    let mut p = s.proc;
    assert!(
        p.0.try_wait().unwrap().is_none(),
        "the server is still running"
    );
    // Debug builds unwind a panicking thread and go on; release builds abort.
    assert!(!log_of(&t).contains("panicked"), "{}", log_of(&t));
}

fn threads_of(pid: u32) -> usize {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("Threads:")).unwrap();
    line[8..].trim().parse().unwrap()
}

/// Open sockets of a process (the listening socket and its connections).
fn sockets_of(pid: u32) -> usize {
    fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(|e| fs::read_link(e.ok()?.path()).ok())
                .filter(|l| l.to_string_lossy().starts_with("socket:"))
                .count()
        })
        .unwrap_or(0)
}

/// How many of `conns` the server has closed (or answered): a read does not time out.
fn closed_by_server(conns: &[TcpStream]) -> usize {
    conns
        .iter()
        .filter(|c| {
            c.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
            let mut r: &TcpStream = c;
            read_retrying(&mut r, &mut [0u8; 256]).is_ok()
        })
        .count()
}

#[test]
fn idle_connections_do_not_block_health() {
    let t = TestDir::new();
    let s = serve(&t);
    let pid = s.proc.pid();
    // The main thread and the accept loop, once wait_listening's probe is gone.
    let base = 2;
    assert!(eventually(Duration::from_secs(5), || threads_of(pid) == base));
    // 70 idle connections and one that stops in the middle of its request.
    let first: Vec<TcpStream> = (0..70)
        .map(|_| TcpStream::connect(s.addr).unwrap())
        .collect();
    let mut half = TcpStream::connect(s.addr).unwrap();
    half.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\n")
        .unwrap();
    // Accepted without a thread each (one poll thread serves them all).
    assert!(eventually(Duration::from_secs(5), || sockets_of(pid) > 70));
    assert_eq!(threads_of(pid), base);
    // Sockets take their timeouts from the listening socket when their handshake
    // completes; with more than 64 open, the server has switched it to 2 s.
    let later: Vec<TcpStream> = (0..30)
        .map(|_| TcpStream::connect(s.addr).unwrap())
        .collect();
    assert!(eventually(Duration::from_secs(5), || sockets_of(pid) > 100));
    let started = Instant::now();
    assert_eq!(get(s.addr, "/health").status, 200);
    // Blocked behind the idle connections (a thread or a slot each), /health would
    // wait for the first ones, accepted before the others, to time out: 10 s.
    // Answered at once it takes milliseconds, but once took 1.63 s on a loaded
    // machine (a new user's first `cargo test` on 2 cores), failing the earlier bound
    // of 1 s with nothing blocked. 5 s is still half of what blocking would take.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // The later ones are closed after their 2 s, the first ones (10 s) are not.
    assert!(eventually(Duration::from_secs(6), || closed_by_server(
        &later
    ) == 30));
    assert!(
        closed_by_server(&first) <= 6,
        "the first 64 keep their 10 s"
    );
    assert!(threads_of(pid) <= base + 76, "{} threads", threads_of(pid));
    assert_eq!(get(s.addr, "/health").status, 200);
}

#[test]
fn listing_while_merging() {
    let t = TestDir::new();
    fill(&t);
    let s = serve(&t);
    let done = Arc::new(AtomicBool::new(false));
    let paths = t.paths();
    let d2 = done.clone();
    let writer = thread::spawn(move || {
        let mut rounds = 0;
        for round in 0..4u32 {
            let values: Vec<String> = (0..50_000u32)
                .map(|i| format!("{}.{}.{}.0/24", 20 + round, (i >> 8) & 255, i & 255))
                .collect();
            let mut d = db::open(&paths).unwrap();
            d.merge_source(
                Kind::Asn,
                &format!("{}", 64_500 + round),
                &values,
                1_790_000_000,
                0,
            )
            .unwrap();
            rounds += 1;
        }
        d2.store(true, Ordering::SeqCst);
        rounds
    });
    // The FQDN listing stays small while the table grows, so that 200 requests stay
    // quick in a debug build; it still reads the table the writer is writing.
    let mut answered = 0;
    let mut during_writes = 0;
    for i in 0..200 {
        let target = if i % 40 == 0 {
            "/addresses?type=all&format=json"
        } else {
            "/addresses?type=fqdn"
        };
        let r = get(s.addr, target);
        assert_eq!(r.status, 200, "{target}: {}", r.text());
        if target.ends_with("fqdn") {
            assert_eq!(
                r.text(),
                "1.1.1.1\n93.184.216.34\n2606:2800:220:1:248:1893:25c8:1946\n"
            );
        } else {
            r.json();
        }
        answered += 1;
        if !done.load(Ordering::SeqCst) {
            during_writes += 1;
        }
    }
    assert_eq!(writer.join().unwrap(), 4);
    assert_eq!(answered, 200);
    eprintln!("{during_writes} of 200 requests answered while merges ran");
    assert!(during_writes > 0);
    let counts = get(s.addr, "/health").json()["counts"].clone();
    assert_eq!(counts, json!({"asn": 11 + 200_000, "fqdn": 3}));
}

#[test]
fn serve_stops_on_sigterm_and_reports_bind_errors() {
    let t = TestDir::new();
    let mut s = serve(&t);
    assert!(
        log_of(&t).contains(&format!("serving on {}", s.addr)),
        "{}",
        log_of(&t)
    );
    // Taken port: exit 1 with the address named.
    let out = t.run(&["serve", "--listen", &s.addr.to_string()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}: address in use", s.addr)),
        "{err}"
    );
    // An idle keep-alive connection must not delay the stop.
    let _idle = TcpStream::connect(s.addr).unwrap();
    let started = Instant::now();
    let kill = Command::new("kill")
        .args(["-TERM", &s.proc.pid().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    // The drain takes up to 0.5 s; the idle connection's timeout (the bug: waiting for
    // it) is 10 s.
    let status = s
        .proc
        .wait_exit(Duration::from_secs(8))
        .expect("serve stops within 8 s");
    assert!(status.success(), "{status:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(log_of(&t).contains("stopping"));
}

/// `lookup`, `changes` and the detailed listing.
mod lookup;

/// `/feeds` and `/countries`.
mod kinds;

/// The web page (`GET /`), `GET /status` and the same-origin rule.
mod web;

/// `serve --listen` with a broken config.json starts anyway: `/health` answers, the
/// routes that need the configuration (every listing) give 503 until it is fixed.
/// Without an address to listen on it fails (exit 1), naming the file.
#[test]
fn serve_with_a_broken_config_starts_and_refuses_listings() {
    let t = TestDir::new();
    fs::write(t.file("config.json"), "{\"asns\": [").unwrap();
    let s = serve(&t);
    assert_eq!(get(s.addr, "/health").status, 200);
    assert_eq!(get(s.addr, "/addresses").status, 503);
    assert_eq!(get(s.addr, "/asns").status, 503);
    let out = t.run(&["serve"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("config.json"));
}
