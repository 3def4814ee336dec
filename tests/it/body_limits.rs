//! Request bodies under attack (issue 27): a chunk announced too big is refused at
//! once, a chunk size with a trailing space is refused, and small bodies are
//! admitted while large slow ones hold the body budget.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::common::*;

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
    s
}

fn status(answer: &[u8]) -> u16 {
    let a = String::from_utf8_lossy(answer);
    a.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0)
}

const CHUNKED: &[u8] =
    b"POST /asns HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n";

#[test]
fn a_chunk_over_the_body_limit_gets_413_at_once() {
    let t = TestDir::new();
    let (_p, a) = t.spawn_listening(&["serve"]);
    let mut s = connect(a);
    let started = Instant::now();
    // 128 KiB announced, none of it sent: the size alone is over 64 KiB.
    s.write_all(&[CHUNKED, b"20000\r\n"].concat()).unwrap();
    let r = read_until_end(&mut s);
    assert_eq!(status(&r), 413, "{}", String::from_utf8_lossy(&r));
    // The body deadline is 10 s; the size line is refused as soon as it is there.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_chunk_size_with_a_trailing_space_is_refused() {
    let t = TestDir::new();
    let (_p, a) = t.spawn_listening(&["serve"]);
    for size in [&b"b \r\n"[..], b"b\t\r\n"] {
        let mut s = connect(a);
        let raw = [CHUNKED, size, b"{\"asn\":\"1\"}\r\n0\r\n\r\n"].concat();
        s.write_all(&raw).unwrap();
        let r = read_until_end(&mut s);
        assert_eq!(status(&r), 400, "{size:?}: {}", String::from_utf8_lossy(&r));
    }
    // Without the space the same body is read.
    let mut s = connect(a);
    let raw = [CHUNKED, b"b\r\n{\"asn\":\"1\"}\r\n0\r\n\r\n"].concat();
    s.write_all(&raw).unwrap();
    let mut buf = [0u8; 512];
    let n = read_retrying(&mut s, &mut buf).unwrap();
    assert_eq!(
        status(&buf[..n]),
        201,
        "{}",
        String::from_utf8_lossy(&buf[..n])
    );
}

#[test]
fn a_small_body_is_read_while_large_slow_ones_hold_the_budget() {
    let t = TestDir::new();
    let (_p, a) = t.spawn_listening(&["serve"]);
    // 16 bodies of 64 KiB, 1 KiB of each sent: the whole 1 MiB budget, held.
    let slow: Vec<TcpStream> = (0..16)
        .map(|_| {
            let mut s = connect(a);
            let head = "POST /asns HTTP/1.1\r\nHost: localhost\r\nContent-Length: 65536\r\n\r\n";
            s.write_all(head.as_bytes()).unwrap();
            s.write_all(&[b' '; 1024]).unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut s = connect(a);
    let body = b"{\"asn\":\"62041\"}";
    let head = format!(
        "POST /asns HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let started = Instant::now();
    s.write_all(&[head.as_bytes(), body].concat()).unwrap();
    let r = read_until_end(&mut s);
    assert_eq!(status(&r), 201, "{}", String::from_utf8_lossy(&r));
    // It is read at once (milliseconds); before, it waited for room until the slow
    // bodies' 10 s deadline.
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "{took:?}");
    drop(slow);
}
