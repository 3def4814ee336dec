//! Sockets and threads: our own accept loop around tiny_http_fork's connection parser.
//!
//! tiny_http_fork's `Server` is not used because, as of 0.12.17, it
//! * sets no socket timeouts, so an idle connection holds its thread for ever;
//! * ignores `ServerConfig::max_threads` in its default (`task_pool_legacy`) pool, so
//!   every connection gets a thread with no upper bound;
//! * ends its accept thread for good on the first `accept()` error other than
//!   `ECONNABORTED` (for example `EMFILE` when descriptors run out): the API would be
//!   dead until a restart;
//! * keeps its listening socket open after being dropped (the accept thread only
//!   looks at the close flag after the next connection arrives).
//!
//! Instead we bind the socket ourselves and call the fork's public
//! `Server::accept_connection`, which accepts one connection and wraps it in the
//! fork's `ClientConnection` (request parsing, keep-alive, pipelining order). Each
//! connection is then served on its own thread, with these bounds:
//! * at most [`MAX_CONNECTIONS`] connections (fewer when the descriptor limit is
//!   low); further clients wait in the kernel's listen backlog;
//! * read and write timeouts on every connection: set on the listening socket, whose
//!   `SO_RCVTIMEO`/`SO_SNDTIMEO` Linux copies to each accepted socket (the fork hides
//!   the accepted socket, so this is the only way to reach it);
//! * at most [`MAX_ACTIVE`] requests whose handlers run at once (see
//!   [`super::routes::Context`]), so that memory and open files stay bounded.

use std::fmt::Display;
use std::io::{self, Cursor, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use tiny_http_fork::{Header, Listener, Request, Response, Server, SslContextWrap};

use super::error::ApiError;
use super::limit::{Limit, Permit};
use super::routes::{self, Context, Reply, RequestInfo};
use crate::config::Paths;

/// Most connections served at once. Each costs a thread (about 11 KiB of memory
/// measured, the stack mostly unused, see `STACK_SIZE`) and two file descriptors
/// (tiny_http duplicates the socket). Fewer when the descriptor limit is low, see
/// `connection_cap`.
pub const MAX_CONNECTIONS: usize = 512;

/// Above this many open connections, new connections get [`PRESSURE_TIMEOUT`]
/// instead of [`IDLE_TIMEOUT`], so that a flood of idle connections frees its slots
/// quickly while ordinary clients keep the longer keep-alive.
pub const PRESSURE_CONNECTIONS: usize = 64;

/// How long a read or write on a connection may make no progress: an idle
/// keep-alive connection, a client that stops sending its request or stops reading
/// its answer is dropped after this.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// [`IDLE_TIMEOUT`] for connections accepted while more than
/// [`PRESSURE_CONNECTIONS`] are open.
pub const PRESSURE_TIMEOUT: Duration = Duration::from_secs(2);

/// Requests whose handlers run at the same time. A router has one to four cores,
/// each `/addresses` request may hold a full listing in memory, and each handler may
/// hold up to five files open (database, WAL, shared memory, config.json, its lock).
pub const MAX_ACTIVE: usize = 4;

/// Stack of each connection thread. The default 2 MiB would reserve 1 GiB of address
/// space for 512 connections, too much for a 32-bit MIPS router; handlers keep their
/// data on the heap and refuse deeply nested JSON before parsing it. (The API tests
/// pass with 64 KiB in a debug build.)
pub const STACK_SIZE: usize = 256 * 1024;

/// How long [`ApiServer::stop`] waits for answers being written.
const DRAIN: Duration = Duration::from_millis(500);

/// State shared by the accept loop and the connection threads.
#[derive(Debug)]
struct Shared {
    stop: AtomicBool,
    connections: Arc<Limit>,
    /// Requests between being read and their answer being written.
    busy: AtomicUsize,
    ctx: Context,
}

/// A running API server. Dropping it (or [`ApiServer::stop`]) stops it.
#[derive(Debug)]
pub struct ApiServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

/// A short form of the errors `bind` gives, after the address.
fn describe_bind_error(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::AddrInUse => "address in use".into(),
        io::ErrorKind::AddrNotAvailable => "address not available on this host".into(),
        io::ErrorKind::PermissionDenied => "permission denied (ports below 1024 need root)".into(),
        _ => e.to_string(),
    }
}

/// The connection cap for the descriptor limit of this process: tiny_http
/// duplicates each accepted socket and panics (aborting the program, as release
/// builds abort on panic) when that fails, so connections must never use up the
/// descriptors. Two per connection, and 64 kept for everything else: the
/// [`MAX_ACTIVE`] handlers' files (20 at most), the daemon's, logging. With the
/// usual limit of 1024 that is 480 connections.
pub fn connection_cap() -> usize {
    let soft = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Max open files"))?;
            line.split_whitespace().nth(3)?.parse::<usize>().ok()
        });
    match soft {
        Some(n) => MAX_CONNECTIONS.min(n.saturating_sub(64) / 2).max(4),
        // "unlimited", or not Linux.
        None => MAX_CONNECTIONS,
    }
}

/// Sets the read and write timeout of `socket` (the listening socket, through a
/// duplicate descriptor: the option belongs to the socket, not the descriptor).
fn set_timeouts(socket: &TcpStream, t: Duration) -> io::Result<()> {
    socket.set_read_timeout(Some(t))?;
    socket.set_write_timeout(Some(t))
}

/// A second handle on the listening socket through which its options can be set
/// (std offers no timeout setters on `TcpListener`).
#[cfg(unix)]
fn options_handle(listener: &TcpListener) -> io::Result<TcpStream> {
    use std::os::fd::AsFd;
    Ok(TcpStream::from(listener.as_fd().try_clone_to_owned()?))
}

#[cfg(not(unix))]
fn options_handle(_: &TcpListener) -> io::Result<TcpStream> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "socket timeouts need a Unix system",
    ))
}

/// Binds `listen` and serves the API on background threads.
pub fn start(paths: &Paths, listen: SocketAddr) -> Result<ApiServer, String> {
    let listener =
        TcpListener::bind(listen).map_err(|e| format!("{listen}: {}", describe_bind_error(&e)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("{listen}: {e}"))?;
    let options = options_handle(&listener).map_err(|e| format!("{listen}: {e}"))?;
    set_timeouts(&options, IDLE_TIMEOUT)
        .map_err(|e| format!("{listen}: setting socket timeouts: {e}"))?;
    let ssl = SslContextWrap::build_ssl_capabilities(None).map_err(|e| format!("{listen}: {e}"))?;
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        connections: Arc::new(Limit::new(connection_cap())),
        busy: AtomicUsize::new(0),
        ctx: Context {
            paths: paths.clone(),
            active: Arc::new(Limit::new(MAX_ACTIVE)),
        },
    });
    let sh = shared.clone();
    let accept = thread::Builder::new()
        .name("api-accept".into())
        .stack_size(STACK_SIZE)
        .spawn(move || accept_loop(Listener::from(listener), options, ssl, sh))
        .map_err(|e| format!("{listen}: cannot start the server thread: {e}"))?;
    Ok(ApiServer {
        addr,
        shared,
        accept: Some(accept),
    })
}

fn accept_loop(listener: Listener, options: TcpStream, ssl: SslContextWrap, shared: Arc<Shared>) {
    let mut timeout = IDLE_TIMEOUT;
    loop {
        // Wait for a free slot first: past the cap, clients wait in the backlog.
        let Some(slot) = shared.connections.acquire_unless(&shared.stop) else {
            break;
        };
        let want = if shared.connections.in_use() > PRESSURE_CONNECTIONS {
            PRESSURE_TIMEOUT
        } else {
            IDLE_TIMEOUT
        };
        if want != timeout && set_timeouts(&options, want).is_ok() {
            timeout = want;
        }
        // accept() itself also times out after `timeout` (SO_RCVTIMEO), harmlessly.
        let accepted = Server::accept_connection(&listener, &ssl);
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        match accepted {
            Ok(Some(conn)) => {
                let sh = shared.clone();
                let spawned = thread::Builder::new()
                    .name("api-conn".into())
                    .stack_size(STACK_SIZE)
                    .spawn(move || serve_connection(conn, slot, sh));
                if let Err(e) = spawned {
                    // The connection and its slot went with the closure: closed, freed.
                    log::warn!("api: cannot start a thread for a connection: {e}");
                    thread::sleep(Duration::from_millis(100));
                }
            }
            Ok(None) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                        | io::ErrorKind::ConnectionAborted
                        | io::ErrorKind::ConnectionReset
                ) => {}
            Err(e) => {
                // EMFILE, ENOBUFS and the like: wait and try again rather than stop.
                log::warn!("api: accept: {e}");
                thread::sleep(Duration::from_millis(100));
            }
        }
    }
    log::debug!("api: stopped accepting on {:?}", options.local_addr().ok());
}

/// Serves the requests of one connection in order until it ends. tiny_http has
/// already answered a malformed request (400, 408, 417) when it yields an error, and
/// yields nothing more after one.
fn serve_connection<I, E>(conn: I, _slot: Permit, shared: Arc<Shared>)
where
    I: Iterator<Item = Result<Request, E>>,
    E: Display,
{
    for item in conn {
        match item {
            Ok(rq) => {
                if !handle(rq, &shared) {
                    // What is left of an unread body must not be taken for the next
                    // request: the connection ends here.
                    break;
                }
            }
            Err(e) => {
                // Mostly a client closing its connection or going idle.
                log::debug!("api: connection ended: {e}");
                break;
            }
        }
    }
}

/// The request body, read only when a handler asks for it: reading makes tiny_http
/// send `100 Continue` to a client that waits for it, which must not happen before
/// the request has passed the checks (token, declared length).
struct LazyBody<'a> {
    rq: &'a mut Request,
    /// A read returned the end of the body: nothing of it is left on the connection.
    finished: bool,
}

impl Read for LazyBody<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.rq.as_reader().read(buf)?;
        if n == 0 && !buf.is_empty() {
            self.finished = true;
        }
        Ok(n)
    }
}

fn header(rq: &Request, name: &str) -> Option<String> {
    rq.headers().get(name).map(|v| v.as_str().to_string())
}

/// Most `Content-Length` headers looked at: more is not a request worth reading.
const MAX_LENGTH_HEADERS: usize = 8;

/// The values of the `Content-Length` headers (up to one more than
/// [`MAX_LENGTH_HEADERS`]). The fork looks at the first only and offers no way to list
/// headers, so a copy of them is searched, each one found renamed before the next
/// search.
fn content_lengths(rq: &Request) -> Vec<String> {
    let Some(first) = header(rq, "Content-Length") else {
        return Vec::new();
    };
    let mut values = vec![first];
    let Ok(seen) = Header::from_bytes("X-Seen-Content-Length", "") else {
        return values;
    };
    let mut headers = rq.headers().clone();
    if let Some(h) = headers.get_header_mut("Content-Length") {
        h.field = seen.field.clone();
    }
    while values.len() <= MAX_LENGTH_HEADERS {
        let Some(h) = headers.get_header_mut("Content-Length") else {
            break;
        };
        values.push(h.value.as_str().to_string());
        h.field = seen.field.clone();
    }
    values
}

/// The start of a request target for the log, escaped (it may hold control bytes).
fn for_log(target: &str) -> String {
    match target.char_indices().nth(200) {
        Some((i, _)) => format!("{:?}...", &target[..i]),
        None => format!("{target:?}"),
    }
}

/// Answers one request; false when its body was not (all) read, after which the
/// connection must end.
fn handle(mut rq: Request, shared: &Shared) -> bool {
    let started = Instant::now();
    shared.busy.fetch_add(1, Ordering::SeqCst);
    let info = RequestInfo {
        method: rq.method().as_str().to_string(),
        target: rq.url().to_string(),
        content_length: content_lengths(&rq),
        authorization: header(&rq, "Authorization"),
        if_none_match: header(&rq, "If-None-Match"),
    };
    // A body is announced by a length other than 0 (an unparsable or a second length
    // included) or a transfer coding.
    let has_body = info.content_length.iter().any(|v| v.trim() != "0")
        || rq.headers().get("Transfer-Encoding").is_some();
    let mut body = LazyBody {
        rq: &mut rq,
        finished: false,
    };
    let reply = if shared.stop.load(Ordering::SeqCst) {
        ApiError::ShuttingDown.into()
    } else {
        routes::answer(&info, &mut body, &shared.ctx)
    };
    let unread_body = has_body && !body.finished;
    let status = reply.status;
    // tiny_http reads and discards what is left of the declared body after answering
    // (bounded by the connection's read timeout); the caller then ends the connection.
    if let Err(e) = rq.respond(response(reply)) {
        log::debug!("api: writing the answer: {e}");
    }
    shared.busy.fetch_sub(1, Ordering::SeqCst);
    log::debug!(
        "api: {} {} -> {status} in {} ms",
        info.method,
        for_log(&info.target),
        started.elapsed().as_millis()
    );
    !unread_body
}

fn add_header(resp: &mut Response<Cursor<Vec<u8>>>, name: &str, value: &str) {
    match Header::from_bytes(name, value) {
        Ok(h) => resp.add_header(h),
        // Our own header values are plain ASCII; this would be a bug, not a panic.
        Err(e) => log::error!("api: header {name}: {value:?}: {e}"),
    }
}

/// The tiny_http response for a reply. Every answer has `Content-Type` and
/// `Content-Length` (never chunked: the threshold is set past any body size).
fn response(reply: Reply) -> Response<Cursor<Vec<u8>>> {
    let mut resp = Response::from_data(reply.body)
        .with_status_code(reply.status)
        .with_chunked_threshold(usize::MAX);
    add_header(&mut resp, "Content-Type", reply.content_type);
    for (name, value) in &reply.headers {
        add_header(&mut resp, name, value);
    }
    if let Some(n) = reply.length_without_body {
        // Sets the announced length; a 304 never sends a body.
        add_header(&mut resp, "Content-Length", &n.to_string());
    }
    resp
}

/// Makes the accept loop return from `accept()` at once by connecting to it.
fn wake_accept(addr: SocketAddr) {
    let target = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::new(Ipv4Addr::LOCALHOST.into(), addr.port())
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::new(Ipv6Addr::LOCALHOST.into(), addr.port())
        }
        _ => addr,
    };
    // Failing is harmless: accept() times out within IDLE_TIMEOUT anyway.
    let _ = TcpStream::connect_timeout(&target, Duration::from_millis(200));
}

impl ApiServer {
    /// The address the server listens on (with the port chosen when `:0` was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the server: closes the listening socket, answers requests still arriving
    /// on open connections with 503, and waits briefly for answers being written.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let Some(accept) = self.accept.take() else {
            return;
        };
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.connections.wake_all();
        wake_accept(self.addr);
        let deadline = Instant::now() + Duration::from_secs(1);
        while !accept.is_finished() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(2));
        }
        if accept.is_finished() {
            let _ = accept.join();
        } else {
            log::warn!("api: the accept thread did not stop within 1 s");
        }
        let deadline = Instant::now() + DRAIN;
        while self.shared.busy.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
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
    fn accepted_sockets_inherit_timeouts() {
        // The connection bounds rely on Linux copying SO_RCVTIMEO to accepted sockets.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        set_timeouts(&options_handle(&l).unwrap(), Duration::from_millis(300)).unwrap();
        let _c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        assert_eq!(s.read_timeout().unwrap(), Some(Duration::from_millis(300)));
        assert_eq!(s.write_timeout().unwrap(), Some(Duration::from_millis(300)));
    }

    #[test]
    fn limit_counts() {
        let l = Arc::new(Limit::new(2));
        let a = l.acquire();
        let _b = l.acquire();
        assert_eq!(l.in_use(), 2);
        let stop = AtomicBool::new(true);
        assert!(l.acquire_unless(&stop).is_none());
        drop(a);
        assert_eq!(l.in_use(), 1);
        stop.store(false, Ordering::SeqCst);
        assert!(l.acquire_unless(&stop).is_some());
        assert!(connection_cap() >= 4);
    }
}
