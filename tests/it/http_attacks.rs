//! Attacks on the API server from the hardening review (issue 15): strict framing,
//! slow bodies, the connection cap, `/health` under load and memory for answers in
//! flight. Against the real binary over 127.0.0.1.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;

use crate::common::*;

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

/// Sends `raw` and returns all the server said before closing.
fn exchange(addr: SocketAddr, raw: &[u8]) -> String {
    let mut s = connect(addr);
    let _ = s.write_all(raw);
    String::from_utf8_lossy(&read_until_end(&mut s)).into_owned()
}

fn status(answer: &str) -> u16 {
    answer.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// `GET /health` on a new connection: its status and how long the answer took.
fn timed_health(addr: SocketAddr) -> (u16, Duration) {
    let started = Instant::now();
    let answer = exchange(
        addr,
        b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    (status(&answer), started.elapsed())
}

/// `serve` with its descriptor limit set to `nofile`, so that its connection cap
/// (`nofile` − 64) is small enough to reach in a test.
fn serve_with_nofile(t: &TestDir, nofile: u64) -> (Proc, SocketAddr) {
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let mut cmd = t.cmd();
    cmd.args(["serve", "--listen", &addr.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: nofile,
                rlim_max: nofile,
            };
            match libc::setrlimit(libc::RLIMIT_NOFILE, &lim) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let child = cmd.spawn().unwrap();
    let mut proc = Proc::drained(child, Some(t.file("serve.log")));
    let up = eventually(Duration::from_secs(10), || {
        proc.stderr().contains("serving on")
    });
    assert!(
        up && wait_listening(addr, Duration::from_secs(5)),
        "{}",
        proc.stderr()
    );
    (proc, addr)
}

#[test]
fn signs_spaces_hex_prefixes_overflow_and_endless_extensions_are_400() {
    let t = TestDir::new();
    let (_p, a) = t.spawn_listening(&["serve"]);
    let body = r#"{"asn":"1"}"#;
    let post = |framing: &str, rest: &str| {
        format!("POST /asns HTTP/1.1\r\nHost: localhost\r\n{framing}\r\n\r\n{rest}")
    };
    let chunked = |size: &str| {
        post(
            "Transfer-Encoding: chunked",
            &format!("{size}\r\n{body}\r\n0\r\n\r\n"),
        )
    };
    let mut endless = post("Transfer-Encoding: chunked", "b;");
    endless.push_str(&"a".repeat(100_000));
    let cases = [
        ("Content-Length with a sign", post("Content-Length: +11", body)),
        ("Content-Length with a space", post("Content-Length: 1 1", body)),
        ("Content-Length in hex", post("Content-Length: 0xb", body)),
        (
            "Content-Length overflow",
            post("Content-Length: 99999999999999999999999", body),
        ),
        ("chunk size with a sign", chunked("+b")),
        ("chunk size with a space", chunked("b b")),
        ("chunk size in 0x hex", chunked("0xb")),
        ("chunk size overflow", chunked("1000000000000000b")),
        ("endless chunk extension", endless),
        (
            "two Authorization headers",
            format!(
                "POST /asns HTTP/1.1\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\nContent-Length: 11\r\n\r\n{body}"
            ),
        ),
    ];
    for (what, raw) in &cases {
        let answer = exchange(a, raw.as_bytes());
        assert_eq!(status(&answer), 400, "{what}: {answer}");
        assert!(answer.contains("Connection: close"), "{what}: {answer}");
    }
    // Nothing of it was taken as a source.
    let (code, list) = http_get(a, "/asns");
    assert_eq!((code, list.as_str()), (200, "{\"asns\":[]}\n"));
    // The same bodies framed properly are accepted.
    assert_eq!(status(&exchange(a, chunked("b").as_bytes())), 201);
}

#[test]
fn slow_bodies_hold_no_handler() {
    let t = TestDir::new();
    let (_p, a) = t.spawn_listening(&["serve"]);
    // 24 POSTs whose bodies never finish: three times the handler threads.
    let slow: Vec<TcpStream> = (0..24)
        .map(|_| {
            let mut s = connect(a);
            s.write_all(b"POST /asns HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{")
                .unwrap();
            s
        })
        .collect();
    thread::sleep(Duration::from_millis(300));
    let (code, took) = timed_health(a);
    assert_eq!(code, 200);
    // The contract says within a second; before, it took the 10 s body deadline or
    // more. The bound is several times a loaded machine's figure, below the bug's.
    assert!(took < Duration::from_secs(5), "/health took {took:?}");
    drop(slow);
}

#[test]
fn at_the_cap_waiting_clients_are_served_not_reset() {
    let t = TestDir::new();
    // Cap 16: 80 descriptors, 64 kept for files.
    let (_p, a) = serve_with_nofile(&t, 80);
    // A slowloris fills the cap: heads that never finish (a byte every 300 ms).
    let mut slow: Vec<TcpStream> = (0..16)
        .map(|_| {
            let mut s = connect(a);
            s.write_all(b"GET /health HTTP/1.1\r\nX-Slow: ").unwrap();
            s
        })
        .collect();
    let started = Instant::now();
    // Until the server has accepted them and read their first bytes: they hold the
    // slots as requests in progress, not as idle connections.
    thread::sleep(Duration::from_millis(500));
    // Three clients wait in the backlog with their requests sent.
    let waiting: Vec<TcpStream> = (0..3)
        .map(|_| {
            let mut s = connect(a);
            s.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                .unwrap();
            s
        })
        .collect();
    thread::sleep(Duration::from_millis(300));
    // One slot frees: the server accepts from the backlog. Before, it accepted
    // them all at once, each evicting the one it had just accepted (a reset).
    drop(slow.pop());
    let readers: Vec<_> = waiting
        .into_iter()
        .map(|mut s| {
            thread::spawn(move || String::from_utf8_lossy(&read_until_end(&mut s)).into_owned())
        })
        .collect();
    let keep_slow = thread::spawn(move || {
        // Within the 10 s head deadline, so the slowloris holds its slots throughout.
        while started.elapsed() < Duration::from_secs(8) {
            for s in &mut slow {
                let _ = s.write_all(b"z");
            }
            thread::sleep(Duration::from_millis(300));
        }
        slow
    });
    for r in readers {
        let answer = r.join().unwrap();
        assert_eq!(status(&answer), 200, "a waiting client got: {answer:?}");
    }
    drop(keep_slow.join());
}

/// Stores `n` IPv4 /32 values under one ASN, through the library.
fn store_values(t: &TestDir, n: u32) {
    let values: Vec<String> = (0..n)
        .map(|i| {
            let ip = 0x0a00_0000u32 + i * 2;
            format!("{}/32", std::net::Ipv4Addr::from(ip))
        })
        .collect();
    let mut d = db::open(&t.paths()).unwrap();
    let now = ripe_cidr_collector::util::unix_now();
    d.merge_source(Kind::Asn, "64500", &values, now, 7).unwrap();
}

#[test]
fn health_answers_while_listings_are_held_open() {
    let t = TestDir::new();
    store_values(&t, 200_000);
    let (_p, a) = t.spawn_listening(&["serve"]);
    // 12 clients ask for the 200,000 values and never read: three times the
    // handlers doing database work.
    let held: Vec<TcpStream> = (0..12)
        .map(|_| {
            let mut s = connect(a);
            s.write_all(b"GET /addresses HTTP/1.1\r\nHost: localhost\r\n\r\n")
                .unwrap();
            s
        })
        .collect();
    thread::sleep(Duration::from_millis(50));
    for _ in 0..3 {
        let (code, took) = timed_health(a);
        assert_eq!(code, 200);
        // Milliseconds normally, 48 s with the bug this guards against; 1.2 s was seen
        // on a loaded CI machine, so the bound is several times that.
        assert!(took < Duration::from_secs(5), "/health took {took:?}");
        thread::sleep(Duration::from_millis(200));
    }
    drop(held);
}

/// A `/proc/<pid>/status` field in kB.
fn proc_kb(pid: u32, name: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = s.lines().find(|l| l.starts_with(name)).unwrap();
    line[name.len()..]
        .trim()
        .trim_end_matches(" kB")
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn answers_in_flight_keep_memory_bounded() {
    let t = TestDir::new();
    // The biggest listing: every value with its sources and times.
    store_values(&t, 100_000);
    // Clients share a listing read from database files that have settled (unchanged
    // for a second), as they have once a run is over.
    thread::sleep(Duration::from_millis(1100));
    let (p, a) = t.spawn_listening(&["serve"]);
    let before = proc_kb(p.pid(), "VmHWM:");
    let target = b"GET /addresses?format=json&details=1 HTTP/1.1\r\nHost: localhost\r\n\r\n";
    // 32 clients that ask and never read.
    let held: Vec<TcpStream> = (0..32)
        .map(|_| {
            let mut s = connect(a);
            s.write_all(target).unwrap();
            s
        })
        .collect();
    // Until every answer has been started (or the server gave up on them).
    thread::sleep(Duration::from_secs(8));
    let peak = proc_kb(p.pid(), "VmHWM:");
    eprintln!("VmHWM {before} kB before, {peak} kB with 32 unread listings of 100,000 values");
    assert!(peak < 32 * 1024, "VmHWM {peak} kB");
    // The answers are whole up to the cap of a details listing (issue 27): one
    // client that reads gets its first 50,000 values.
    let (code, body) = http_get(a, "/addresses?format=json&details=1");
    assert_eq!(code, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["count"], 50_000);
    assert_eq!(v["truncated"], true);
    drop(held);
}

#[test]
fn bodies_being_read_keep_memory_bounded() {
    let t = TestDir::new();
    let (p, a) = t.spawn_listening(&["serve"]);
    let before = proc_kb(p.pid(), "VmHWM:");
    // 100 clients each send all but the last bytes of a 64 KiB body and wait: 6.4 MB
    // if every connection held its body.
    let mut part =
        b"POST /asns HTTP/1.1\r\nHost: localhost\r\nContent-Length: 65536\r\n\r\n".to_vec();
    part.resize(part.len() + 60_000, b' ');
    let held: Vec<TcpStream> = (0..100)
        .map(|_| {
            let mut s = connect(a);
            let _ = s.write_all(&part);
            s
        })
        .collect();
    thread::sleep(Duration::from_secs(2));
    let peak = proc_kb(p.pid(), "VmHWM:");
    eprintln!("VmHWM {before} kB before, {peak} kB with 100 bodies of 64 KiB arriving");
    // The body budget (1 MiB) and the connections' buffers (8 KiB each).
    assert!(
        peak - before < 3 * 1024,
        "VmHWM grew by {} kB",
        peak - before
    );
    // Meanwhile requests without a body go on.
    assert_eq!(timed_health(a).0, 200);
    drop(held);
    // And one with a body gets its turn once the others are gone.
    let answer = exchange(
        a,
        b"POST /asns HTTP/1.1\r\nHost: localhost\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{\"asn\":\"1\"}",
    );
    assert_eq!(status(&answer), 201, "{answer}");
}

/// Issue 39, S2: 600 slowloris connections (more than the 512 the server holds), each
/// sending its head a byte every 300 ms: `/health` still answers, within the
/// contract's second (before: 8.5 s and 9.9 s, waiting in the backlog until the
/// slowloris heads reached their 10 s deadline). At the cap, the connection whose
/// head has been arriving longest (over a second) is closed to make room.
#[test]
fn health_answers_under_600_slowloris_connections() {
    let t = TestDir::new();
    let (_p, a) = t.spawn_listening(&["serve"]);
    let started = Instant::now();
    let mut slow: Vec<TcpStream> = (0..600)
        .filter_map(|_| {
            let mut s = TcpStream::connect(a).ok()?;
            s.write_all(b"GET /health HTTP/1.1\r\nX-Slow: ").ok()?;
            Some(s)
        })
        .collect();
    assert!(slow.len() >= 590, "{} connected", slow.len());
    let keep_slow = thread::spawn(move || {
        // Within their 10 s head deadline, and moving (the 2 s idle timeout under
        // pressure never closes them).
        while started.elapsed() < Duration::from_secs(9) {
            for s in &mut slow {
                let _ = s.write_all(b"z");
            }
            thread::sleep(Duration::from_millis(300));
        }
        slow
    });
    thread::sleep(Duration::from_secs(2));
    let mut took = Vec::new();
    for _ in 0..3 {
        let (code, t) = timed_health(a);
        assert_eq!(code, 200);
        took.push(t);
        thread::sleep(Duration::from_millis(500));
    }
    eprintln!("/health under 600 slowloris connections: {took:?}");
    for t in &took {
        // The contract says within a second; milliseconds here normally. The bound
        // is several times a loaded machine's figure, well below the bug's 8.5 s.
        assert!(*t < Duration::from_secs(3), "/health took {took:?}");
    }
    drop(keep_slow.join());
}
