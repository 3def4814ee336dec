//! A fake HTTP upstream (RIPEstat, DoH) on 127.0.0.1, std only: a thread per
//! connection, requests on a connection answered in order. Also compiled into the
//! library's unit tests (`src/collect/fetch.rs`) and `benches/collect.rs` through
//! `#[path]`, so it depends on nothing but std.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// What the fake upstream answers. A `Transfer-Encoding: chunked` header makes it
/// send the body chunked, without `Content-Length`.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
    pub delay: Duration,
    pub headers: Vec<(String, String)>,
}

impl Reply {
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status,
            body: body.into(),
            delay: Duration::ZERO,
            headers: vec![("Content-Type".into(), "application/json".into())],
        }
    }
    pub fn delayed(mut self, d: Duration) -> Reply {
        self.delay = d;
        self
    }
}

/// A request the fake upstream received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub url: String,
    /// The headers the tests look at: `Accept`, `Authorization`, `User-Agent`.
    pub headers: Vec<(String, String)>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

type Handler = dyn Fn(&Seen) -> Reply + Send + Sync;

/// A fake HTTP upstream on 127.0.0.1: answers every request with `handler` and
/// records what it saw. Stops accepting when dropped.
pub struct FakeServer {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
}

impl FakeServer {
    pub fn start(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> FakeServer {
        FakeServer::start_on("127.0.0.1:0", handler)
    }

    /// [`FakeServer::start`] on another address (one of a test's network namespace).
    pub fn start_on(
        addr: &str,
        handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
    ) -> FakeServer {
        let listener = TcpListener::bind(addr).unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let (seen2, stop2) = (seen.clone(), stop.clone());
        thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (handler, seen) = (handler.clone(), seen2.clone());
                thread::spawn(move || serve(conn, &*handler, &seen));
            }
        });
        FakeServer { addr, seen, stop }
    }

    /// `http://ADDRESS:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

/// Serves the requests of one connection until it closes or idles for 30 s.
fn serve(conn: TcpStream, handler: &Handler, seen: &Mutex<Vec<Seen>>) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(mut out) = conn.try_clone() else {
        return;
    };
    let mut input = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if input.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let url = line.split(' ').nth(1).unwrap_or("/").to_string();
        let (mut headers, mut length, mut close) = (Vec::new(), 0u64, false);
        loop {
            let mut h = String::new();
            if input.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let Some((k, v)) = h.trim_end().split_once(':') else {
                break;
            };
            let (k, v) = (k.trim(), v.trim());
            if k.eq_ignore_ascii_case("Content-Length") {
                length = v.parse().unwrap_or(0);
            } else if k.eq_ignore_ascii_case("Connection") {
                close = v.eq_ignore_ascii_case("close");
            }
            if [
                "Accept",
                "Authorization",
                "User-Agent",
                "If-None-Match",
                "If-Modified-Since",
            ]
            .iter()
            .any(|n| n.eq_ignore_ascii_case(k))
            {
                headers.push((k.to_string(), v.to_string()));
            }
        }
        // A request body is not looked at.
        let _ = std::io::copy(&mut (&mut input).take(length), &mut std::io::sink());
        let info = Seen { url, headers };
        seen.lock().unwrap().push(info.clone());
        let reply = handler(&info);
        thread::sleep(reply.delay);
        if respond(&mut out, &reply).is_err() || close {
            return;
        }
    }
}

fn respond(out: &mut TcpStream, r: &Reply) -> std::io::Result<()> {
    let chunked = r
        .headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("Transfer-Encoding") && v == "chunked");
    let mut head = format!("HTTP/1.1 {} Fake\r\n", r.status);
    for (k, v) in &r.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !chunked {
        head.push_str(&format!("Content-Length: {}\r\n", r.body.len()));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    if chunked {
        for part in r.body.chunks(1000) {
            bytes.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
            bytes.extend_from_slice(part);
            bytes.extend_from_slice(b"\r\n");
        }
        bytes.extend_from_slice(b"0\r\n\r\n");
    } else {
        bytes.extend_from_slice(&r.body);
    }
    out.write_all(&bytes)
}
