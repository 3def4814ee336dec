//! The connection layer's bounds (`docs/api.md`, "Connections and limits"), one test
//! per bound, against the real binary over 127.0.0.1.

use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use crate::common::*;

/// A `serve` process on a free port (retried when another test took the port).
fn serve(t: &TestDir) -> (Proc, SocketAddr) {
    t.spawn_listening(&["serve"])
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

/// Everything the server sends until it closes (or a read fails).
fn read_all(s: &mut TcpStream) -> String {
    String::from_utf8_lossy(&read_until_end(s)).into_owned()
}

/// Sends `raw` and returns all the server said before closing.
fn exchange(addr: SocketAddr, raw: &[u8]) -> String {
    let mut s = connect(addr);
    let _ = s.write_all(raw);
    read_all(&mut s)
}

fn status(answer: &str) -> u16 {
    answer.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn proc_field(pid: u32, name: &str) -> u64 {
    let s = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = s.lines().find(|l| l.starts_with(name)).unwrap();
    let v = line[name.len()..].trim().trim_end_matches(" kB").trim();
    v.parse().unwrap()
}

/// A complete `GET /health` head of exactly `len` bytes (padded in one header).
fn head_of(len: usize, close: bool) -> Vec<u8> {
    let start = format!(
        "GET /health HTTP/1.1\r\nHost: localhost\r\n{}X-Pad: ",
        if close { "Connection: close\r\n" } else { "" }
    );
    let pad = len - start.len() - 4;
    let mut v = start.into_bytes();
    v.extend(std::iter::repeat_n(b'p', pad));
    v.extend_from_slice(b"\r\n\r\n");
    assert_eq!(v.len(), len);
    v
}

#[test]
fn head_over_8_kib_gets_431_and_close() {
    let t = TestDir::new();
    let (_p, a) = serve(&t);
    let ok = exchange(a, &head_of(8192, true));
    assert_eq!(status(&ok), 200, "{ok}");
    // One byte more: 431, `Connection: close`, and the server closes (read_all ends).
    let over = exchange(a, &head_of(8193, false));
    assert_eq!(status(&over), 431, "{over}");
    assert!(over.contains("Connection: close\r\n"), "{over}");
    assert!(
        over.contains("{\"error\":\"request head larger than 8192 bytes\"}"),
        "{over}"
    );
    // A request line alone over the limit: 414.
    let long = format!(
        "GET /health?{} HTTP/1.1\r\nHost: localhost\r\n\r\n",
        "q".repeat(9000)
    );
    assert_eq!(status(&exchange(a, long.as_bytes())), 414);
}

#[test]
fn more_than_64_header_fields_get_431() {
    let t = TestDir::new();
    let (_p, a) = serve(&t);
    let with = |n: usize| {
        let mut raw =
            String::from("GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
        for i in 0..n - 2 {
            raw.push_str(&format!("X-{i}: v\r\n"));
        }
        raw.push_str("\r\n");
        exchange(a, raw.as_bytes())
    };
    assert_eq!(status(&with(64)), 200);
    let r = with(65);
    assert_eq!(status(&r), 431, "{r}");
    assert!(r.contains("more than 64 header fields"), "{r}");
}

#[test]
fn trickled_head_gets_408_at_the_deadline() {
    let t = TestDir::new();
    let (_p, a) = serve(&t);
    let mut s = connect(a);
    let started = Instant::now();
    s.write_all(b"GET /health HTTP/1.1\r\nX-Slow: ").unwrap();
    // A byte every 300 ms keeps the connection from idling (10 s) and never finishes
    // the head. It stops at 9.5 s, before the deadline, so that nothing unread is left
    // when the server closes (unread data would make the close a reset, which can
    // discard the 408 before a slow test thread reads it).
    let mut w = s.try_clone().unwrap();
    let writer = thread::spawn(move || {
        while started.elapsed() < Duration::from_millis(9500) {
            if w.write_all(b"z").is_err() {
                break;
            }
            thread::sleep(Duration::from_millis(300));
        }
    });
    let answer = read_all(&mut s);
    let took = started.elapsed();
    assert_eq!(status(&answer), 408, "{answer}");
    assert!(answer.contains("did not arrive in time"), "{answer}");
    // The deadline is 10 s after the first byte; the bound below is generous.
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(16),
        "{took:?}"
    );
    let _ = writer.join();
}

#[test]
fn endless_headers_keep_memory_bounded() {
    let t = TestDir::new();
    let (p, a) = serve(&t);
    let pid = p.pid();
    let before = proc_field(pid, "VmHWM:");
    let until = Instant::now() + Duration::from_secs(5);
    let sent: Vec<_> = (0..8)
        .map(|_| {
            thread::spawn(move || {
                let chunk = vec![b'a'; 64 * 1024];
                let mut total = 0u64;
                // Reconnects when refused, as an attacker would.
                while Instant::now() < until {
                    let mut s = connect(a);
                    let _ = s.write_all(b"GET /health HTTP/1.1\r\nX-A: ");
                    while Instant::now() < until && s.write_all(&chunk).is_ok() {
                        total += chunk.len() as u64;
                    }
                }
                total
            })
        })
        .map(|h| h.join().unwrap())
        .collect();
    let peak = proc_field(pid, "VmHWM:");
    eprintln!(
        "VmHWM {before} kB -> {peak} kB after {} MB of endless headers",
        sent.iter().sum::<u64>() >> 20
    );
    assert!(peak < 32 * 1024, "{peak} kB");
    let h = exchange(
        a,
        b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status(&h), 200, "{h}");
}

#[test]
fn idle_connections_are_cheap_and_health_answers() {
    let t = TestDir::new();
    let (p, a) = serve(&t);
    let pid = p.pid();
    let idle: Vec<TcpStream> = (0..256).map(|_| TcpStream::connect(a).unwrap()).collect();
    // Until the server has accepted them all (a descriptor each).
    let fds = || std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    assert!(eventually(Duration::from_secs(10), || fds() > 256));
    let h = exchange(
        a,
        b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status(&h), 200, "{h}");
    let threads = proc_field(pid, "Threads:") as usize;
    assert!(
        threads <= 2 + ripe_cidr_collector::api::HANDLERS,
        "{threads} threads for 256 connections"
    );
    drop(idle);
}

#[test]
fn chunked_bodies_are_bounded_and_decoded() {
    let t = TestDir::new();
    let (_p, a) = serve(&t);
    // Over 64 KiB in small chunks: 413, connection closed.
    let mut raw =
        b"POST /asns HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..70 {
        raw.extend_from_slice(b"3e8\r\n");
        raw.extend(std::iter::repeat_n(b' ', 1000));
        raw.extend_from_slice(b"\r\n");
    }
    raw.extend_from_slice(b"0\r\n\r\n");
    let r = exchange(a, &raw);
    assert_eq!(status(&r), 413, "{r}");
    // A small chunked body with extensions and a trailer is read, the connection kept.
    let mut s = connect(a);
    s.write_all(
        b"POST /asns HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n\
          4;ext=1\r\n{\"as\r\n7\r\nn\":\"1\"}\r\n0\r\nX-Trailer: y\r\n\r\n\
          GET /asns HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let both = read_all(&mut s);
    assert_eq!(status(&both), 201, "{both}");
    assert!(both.contains("{\"asns\":[\"1\"]}"), "{both}");
}

#[test]
fn continue_is_sent_only_after_the_checks() {
    let t = TestDir::new();
    t.config(&serde_json::json!({"api": {"token": "s3cret"}}));
    let (_p, a) = serve(&t);
    // Without the token: 401 at once, no invitation to send the body.
    let r = exchange(
        a,
        b"POST /asns HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: 11\r\n\r\n",
    );
    assert_eq!(status(&r), 401, "{r}");
    assert!(!r.contains("100 Continue"), "{r}");
    // With it: 100 Continue, then the body is read and the source added.
    let mut s = connect(a);
    s.write_all(
        b"POST /asns HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer s3cret\r\n\
          Expect: 100-continue\r\nContent-Length: 11\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut first = [0u8; 25];
    s.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 100 Continue\r\n\r\n");
    s.write_all(br#"{"asn":"1"}"#).unwrap();
    let rest = read_all(&mut s);
    assert_eq!(status(&rest), 201, "{rest}");
}
