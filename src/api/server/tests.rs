use super::*;
use crate::api::limit::Limit;
use crate::api::poller::State;
use std::io::Read;
use std::io::Write;
use std::net::TcpStream;
use std::os::unix::net::UnixStream;

fn get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

#[test]
fn serves_and_stops_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::new(dir.path(), None);
    let server = start(&paths, "127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = server.addr();
    let answer = get(addr, "/health");
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    assert!(answer.contains("Content-Length: "), "{answer}");
    assert!(
        answer.contains("Content-Type: application/json"),
        "{answer}"
    );
    // The port is taken while it runs, with a short message naming it.
    let e = start(&paths, addr).unwrap_err();
    assert_eq!(e, format!("{addr}: address in use"));
    let t = Instant::now();
    server.stop();
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    // The listening socket is closed: the port can be bound again.
    let again = start(&paths, addr).unwrap();
    drop(again);
}

#[test]
fn limit_counts() {
    let l = Arc::new(Limit::new(2));
    let a = l.acquire();
    let _b = l.acquire();
    assert_eq!(l.in_use(), 2);
    drop(a);
    assert_eq!(l.in_use(), 1);
}

#[test]
fn connection_cap_follows_the_descriptor_limit() {
    let limits = |soft: &str| {
        format!(
            "Limit                     Soft Limit           Hard Limit           Units\n\
             Max cpu time              unlimited            unlimited            seconds\n\
             Max open files            {soft:<20} 1048576              files\n"
        )
    };
    assert_eq!(super::cap_for_limits(Some(&limits("1024"))), 512);
    assert_eq!(
        super::cap_for_limits(Some(&limits("100000"))),
        MAX_CONNECTIONS
    );
    // 64 descriptors kept for the rest of the process; never fewer than 4.
    assert_eq!(super::cap_for_limits(Some(&limits("200"))), 136);
    assert_eq!(super::cap_for_limits(Some(&limits("50"))), 4);
    assert_eq!(
        super::cap_for_limits(Some(&limits("unlimited"))),
        MAX_CONNECTIONS
    );
    assert_eq!(super::cap_for_limits(None), MAX_CONNECTIONS);
    // This process: what its own limits say.
    let own = std::fs::read_to_string("/proc/self/limits").ok();
    assert_eq!(connection_cap(), super::cap_for_limits(own.as_deref()));
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::new(dir.path(), None);
    let server = start(&paths, "127.0.0.1:0".parse().unwrap()).unwrap();
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // Three requests in one write: 404, 200, then HEAD, the last one closing.
    s.write_all(
        b"GET /nope HTTP/1.1\r\nHost: localhost\r\n\r\nGET /asns HTTP/1.1\r\nHost: localhost\r\n\r\n\
          HEAD /fqdns HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let statuses: Vec<&str> = out
        .match_indices("HTTP/1.1 ")
        .map(|(i, _)| &out[i + 9..i + 12])
        .collect();
    assert_eq!(statuses, ["404", "200", "200"], "{out}");
    assert!(out.contains("{\"asns\":[]}\n"), "{out}");
    assert!(!out.contains("{\"fqdns\""), "HEAD has no body: {out}");
    assert!(out.ends_with("Connection: close\r\n\r\n"), "{out}");
}

#[test]
fn evicts_idle_connections_at_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::new(dir.path(), None);
    let server = start(&paths, "127.0.0.1:0".parse().unwrap()).unwrap();
    // More than the cap cannot be opened in a test cheaply; the eviction rule itself:
    let (wake, _other) = UnixStream::pair().unwrap();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut p = Poller::new(l, wake, server.shared.clone());
    let peer = TcpListener::bind("127.0.0.1:0").unwrap();
    let _clients: Vec<TcpStream> = (0..3)
        .map(|_| TcpStream::connect(peer.local_addr().unwrap()).unwrap())
        .collect();
    for _ in 0..3 {
        let (s, _) = peer.accept().unwrap();
        p.insert(Conn::new(s, IDLE_TIMEOUT).unwrap());
        thread::sleep(Duration::from_millis(5));
    }
    // Connections that have not sent a request yet are never closed to make room:
    // they are clients waiting for their first answer.
    assert!(!p.evict());
    assert_eq!(p.open, 3);
    // Once they have been served and sit idle, the longest-idle goes first; one
    // with a request in progress stays.
    for i in 0..3 {
        if let Some(s) = p.slot(i) {
            s.served = true;
        }
    }
    if let Some(s) = p.slot(0) {
        s.state = State::Busy;
    }
    assert!(p.evict());
    assert!(p.slots[0].is_some() && p.slots[1].is_none() && p.slots[2].is_some());
    assert_eq!(p.open, 2);
}
