//! Tests of the HTTP client without the network: fake servers on 127.0.0.1.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::thread;

use super::*;
use crate::collect::fetch::fake::{FakeServer, Reply};

fn http(seconds: u64) -> Http {
    Http::new(Duration::from_secs(seconds), &TlsSetup::for_https(false))
}

/// The whole body of `resp`, at most `limit` bytes.
fn read_body(resp: &mut Response, limit: u64) -> Result<Vec<u8>, SourceError> {
    let mut out = Vec::new();
    resp.body(limit)
        .read_to_end(&mut out)
        .map_err(crate::collect::fetcher::from_io)?;
    Ok(out)
}

/// A server that answers each connection with `answer` after reading its request.
fn raw_server(answer: &'static [u8]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let _ = s.read(&mut [0; 4096]);
            let _ = s.write_all(answer);
        }
    });
    format!("http://127.0.0.1:{port}/")
}

#[test]
fn bodies_by_framing() {
    let h = http(5);
    let url = raw_server(b"HTTP/1.1 200 OK\r\n\r\nuntil the end");
    let mut resp = h.get(&url, &[], &[]).unwrap();
    assert_eq!(read_body(&mut resp, 100).unwrap(), b"until the end");
    let mut resp = h.get(&url, &[], &[]).unwrap();
    assert_eq!(
        read_body(&mut resp, 5).unwrap_err(),
        SourceError::TooLarge { limit: 5 }
    );

    let url =
        raw_server(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    let mut resp = h.get(&url, &[], &[]).unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(read_body(&mut resp, 100).unwrap(), b"ok");

    let url = raw_server(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort");
    let mut resp = h.get(&url, &[], &[]).unwrap();
    assert!(matches!(
        read_body(&mut resp, 100),
        Err(SourceError::Transport { .. })
    ));

    // The failure says what is wrong, never what the server sent.
    let url = raw_server(b"HTTP/1.1 200 OK\r\nContent-Length: <x>\r\n\r\n");
    let e = h.get(&url, &[], &[]).unwrap_err();
    assert!(
        matches!(&e, SourceError::Protocol(m) if m.contains("Content-Length")),
        "{e}"
    );
    assert!(!e.to_string().contains("<x>"), "{e}");

    let url = raw_server(b"garbage\r\n\r\n");
    assert!(matches!(
        h.get(&url, &[], &[]),
        Err(SourceError::Transport { .. })
    ));
}

/// The body of a one-shot answer from a raw server, read with a limit of 1 MiB.
fn body_of(answer: &'static [u8]) -> Result<Vec<u8>, SourceError> {
    let h = http(5);
    let mut resp = h.get(&raw_server(answer), &[], &[])?;
    read_body(&mut resp, 1 << 20)
}

#[test]
fn chunked_bodies_through_the_shared_decoder() {
    let ok = body_of(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nWiki\r\n5\r\npedia\r\n0\r\nX-T: 1\r\n\r\n",
    );
    assert_eq!(ok.unwrap(), b"Wikipedia");
    let big =
        body_of(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
    assert_eq!(big.unwrap(), b"abc");
    // A body cut short is the network's doing (or the server's crash): transient.
    let cut = body_of(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab");
    assert!(
        matches!(&cut, Err(e @ SourceError::Transport { .. }) if e.is_transient()),
        "{cut:?}"
    );
}

#[test]
fn broken_framing_fails_the_source_for_good() {
    let mut endless = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;".to_vec();
    endless.resize(200_000, b'a');
    let endless: &'static [u8] = endless.leak();
    let cases: [(&'static [u8], &str); 8] = [
        (b"+5\r\nhello\r\n0\r\n\r\n", "bad chunk size"),
        (b"5 5\r\nhello\r\n0\r\n\r\n", "bad chunk size"),
        (b"0x5\r\nhello\r\n0\r\n\r\n", "bad chunk size"),
        (b"11111111111111111\r\n", "bad chunk size"),
        (b"5\nhello\n0\n\n", "bad chunk size"),
        (b"3\r\nabcd\r\n0\r\n\r\n", "longer than its size"),
        (b"", "longer than 1024 bytes"),
        (b"", "Content-Length"),
    ];
    for (i, (body, named)) in cases.into_iter().enumerate() {
        let answer: &'static [u8] = match i {
            6 => endless,
            7 => b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello",
            _ => [
                &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
                body,
            ]
            .concat()
            .leak(),
        };
        let e = body_of(answer).unwrap_err();
        assert!(
            matches!(&e, SourceError::Protocol(m) if m.contains(named)) && !e.is_transient(),
            "{:?}: {e:?}",
            String::from_utf8_lossy(&answer[..answer.len().min(80)])
        );
    }
    let two = body_of(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello");
    assert!(matches!(two, Err(SourceError::Protocol(_))), "{two:?}");
}

#[test]
fn head_is_bounded() {
    let h = http(5);
    let many: &'static [u8] = format!("HTTP/1.1 200 OK\r\n{}\r\n", "A: b\r\n".repeat(65))
        .into_bytes()
        .leak();
    let e = h.get(&raw_server(many), &[], &[]).unwrap_err();
    assert!(e.to_string().contains("more than 64 headers"), "{e}");
    let long: &'static [u8] = format!("HTTP/1.1 200 OK\r\nA: {}\r\n\r\n", "b".repeat(20 << 10))
        .into_bytes()
        .leak();
    let e = h.get(&raw_server(long), &[], &[]).unwrap_err();
    assert!(e.to_string().contains("longer than 8 KiB"), "{e}");
}

#[test]
fn headers_sent() {
    let s = FakeServer::start(vec![Reply::new(200, "x")]);
    let h = http(5);
    let mut resp = h
        .get(
            &s.base,
            &[("name", "a b")],
            &[("accept", "application/json")],
        )
        .unwrap();
    assert_eq!(read_body(&mut resp, 10).unwrap(), b"x");
    let seen = s.seen();
    assert_eq!(seen[0].url, "/?name=a%20b");
    assert_eq!(seen[0].accept.as_deref(), Some("application/json"));
}

#[test]
fn redirects_followed_up_to_five() {
    let s = FakeServer::start_with(|_, url| {
        let n: usize = url.trim_start_matches("/r").parse().unwrap_or(0);
        match n {
            0 => Reply::new(200, "done"),
            // Relative, absolute path, and 303/307/308 on the way.
            n if n % 2 == 0 => Reply::new(301, "").header(&format!("Location: r{}", n - 1)),
            n => Reply::new([302, 303, 307, 308][n % 4], "")
                .header(&format!("Location: /r{}", n - 1)),
        }
    });
    let h = http(5);
    let mut resp = h.get(&format!("{}/r5", s.base), &[], &[]).unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(read_body(&mut resp, 10).unwrap(), b"done");
    let e = h.get(&format!("{}/r6", s.base), &[], &[]).unwrap_err();
    assert_eq!(e, SourceError::Redirect("more than 5 redirects".into()));

    // To https without CA certificates: the reason is the missing bundle.
    let s = FakeServer::start(vec![
        Reply::new(302, "").header("Location: https://127.0.0.1:9/")
    ]);
    match h.get(&s.base, &[], &[]) {
        #[cfg(feature = "tls")]
        Err(SourceError::Tls { message, .. }) => {
            assert!(message.contains("redirected to https"), "{message}")
        }
        #[cfg(not(feature = "tls"))]
        Err(SourceError::Tls { message, .. }) => {
            assert!(message.contains("fetch.command"), "{message}")
        }
        other => panic!("{:?}", other.map(|r| r.status())),
    }
}

#[test]
fn statuses_and_retry_after() {
    let s = FakeServer::start(vec![Reply::new(429, "slow down").header("Retry-After: 7")]);
    let h = http(5);
    let resp = h.get(&s.base, &[], &[]).unwrap();
    assert_eq!(resp.status(), 429);
    assert_eq!(retry_after(&resp), Some(Duration::from_secs(7)));
}

#[test]
fn one_deadline_for_head_and_body() {
    // The head comes at once, the body never: the read of the body times out.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let t = thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let _ = s.read(&mut [0; 4096]);
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab");
        // The connection stays open (the rest never comes) until the test is done.
        let _ = wait.recv_timeout(Duration::from_secs(30));
    });
    let h = http(1);
    let start = Instant::now();
    let mut resp = h
        .get(&format!("http://127.0.0.1:{port}/"), &[], &[])
        .unwrap();
    assert_eq!(
        read_body(&mut resp, 100).unwrap_err(),
        SourceError::Timeout { seconds: 1 }
    );
    // 1 s normally (the deadline); without one, the read waits the 30 s out.
    assert!(start.elapsed() < Duration::from_secs(5));
    done.send(()).unwrap();
    t.join().unwrap();
}

#[test]
fn bad_urls_and_ipv6() {
    let h = http(5);
    let e = h.get("ftp://x/", &[], &[]).unwrap_err();
    assert!(
        matches!(&e, SourceError::Transport { message, .. } if message.starts_with("bad URL: ")),
        "{e:?}"
    );
    // IPv6 literal: refused (or unreachable without IPv6), never a panic.
    let e = h.get("http://[::1]:9/", &[], &[]).unwrap_err();
    assert!(matches!(e, SourceError::Transport { .. }), "{e:?}");
}

#[test]
fn host_names_resolved_on_the_lookup_thread() {
    // localhost: the system resolver (no network), maybe ::1 first, where nothing
    // listens: the next address is tried.
    let s = FakeServer::start(vec![Reply::new(200, "hi")]);
    let url = s.base.replace("127.0.0.1", "localhost");
    let h = http(5);
    let mut resp = h.get(&url, &[], &[]).unwrap();
    assert_eq!(read_body(&mut resp, 10).unwrap(), b"hi");
}

#[test]
fn redirect_from_https_to_http_is_refused() {
    let from = Url::parse("https://stat.ripe.net/data/x.json").unwrap();
    for location in ["http://stat.ripe.net/data/x.json", "HTTP://evil.example/"] {
        let e = redirect(&from, location).unwrap_err();
        assert!(matches!(e, SourceError::Redirect(_)), "{e:?}");
        assert!(e.to_string().contains("from https to plain http"), "{e}");
        assert!(!e.is_transient());
    }
    // Staying on https, relative ones, and http to https are followed.
    for location in ["https://other.example/x", "/y", "z", "//cdn.example/w"] {
        assert!(redirect(&from, location).unwrap().https, "{location}");
    }
    let plain = Url::parse("http://127.0.0.1/").unwrap();
    assert!(redirect(&plain, "https://127.0.0.1/").unwrap().https);
    assert!(!redirect(&plain, "/x").unwrap().https);
}

#[test]
fn streamed_body_is_bounded() {
    // A body without Content-Length that never ends: the reader stops one byte past
    // the limit, it does not collect what the server sends.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let _ = s.read(&mut [0; 4096]);
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\n\r\n");
        let chunk = [b'x'; 4096];
        while s.write_all(&chunk).is_ok() {}
    });
    let h = http(5);
    let mut resp = h
        .get(&format!("http://127.0.0.1:{port}/"), &[], &[])
        .unwrap();
    let mut body = resp.body(100_000);
    let mut buf = [0; 1000];
    let mut total = 0;
    let e = loop {
        match body.read(&mut buf) {
            Ok(n) => total += n,
            Err(e) => break crate::collect::fetcher::from_io(e),
        }
    };
    assert_eq!(e, SourceError::TooLarge { limit: 100_000 });
    assert!((90_000..=100_000).contains(&total), "{total}");
}

#[test]
fn internal_addresses() {
    for ip in [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "0.0.0.0",
        "100.64.0.1",
        "224.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fd00::1",
        "fe80::1",
        "ff02::1",
        "::ffff:192.168.1.1",
    ] {
        assert!(internal(ip.parse().unwrap()), "{ip}");
    }
    for ip in [
        "192.0.2.10",
        "8.8.8.8",
        "172.32.0.1",
        "100.128.0.1",
        "2001:db8::1",
        "::ffff:8.8.8.8",
    ] {
        assert!(!internal(ip.parse().unwrap()), "{ip}");
    }
}
