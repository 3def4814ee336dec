//! Shared test helpers: temporary data directories, the real binary, free ports and a
//! fake HTTP upstream (RIPEstat, DoH) on 127.0.0.1.

#![allow(dead_code)]

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ripe-cidr-collector"))
}

/// A fresh data directory.
pub struct TestDir {
    pub dir: tempfile::TempDir,
}

impl TestDir {
    pub fn new() -> TestDir {
        TestDir {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    pub fn paths(&self) -> ripe_cidr_collector::config::Paths {
        ripe_cidr_collector::config::Paths::new(self.path(), None)
    }
    /// Writes `config.json`.
    pub fn config(&self, json: &serde_json::Value) {
        std::fs::write(
            self.file("config.json"),
            serde_json::to_string_pretty(json).unwrap(),
        )
        .unwrap();
    }
    /// The binary with `--data-dir` set to this directory, environment cleaned.
    pub fn cmd(&self) -> Command {
        let mut c = Command::new(bin());
        c.env_remove("RIPE_DATA_DIR")
            .env_remove("RIPE_DB")
            .env_remove("RIPE_SNAPSHOT")
            .arg("--data-dir")
            .arg(self.path())
            .stdin(Stdio::null());
        c
    }
    /// Starts the binary with `args`, killed when dropped. Its stdout and stderr are
    /// drained on threads (a chatty process never blocks on a full pipe) into
    /// [`Proc::stdout`] / [`Proc::stderr`]; stderr also goes to `<command>.log` in
    /// this directory.
    pub fn spawn(&self, args: &[&str]) -> Proc {
        let name = args
            .iter()
            .find(|a| !a.starts_with('-'))
            .copied()
            .unwrap_or("proc");
        let child = self
            .cmd()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Proc::drained(child, Some(self.file(&format!("{name}.log"))))
    }

    /// Starts the binary with `args` plus `--listen 127.0.0.1:PORT` on a free port and
    /// waits until it logs `serving on` and accepts connections. (A free port may be
    /// taken by a parallel test before the server binds it: then another is tried.)
    pub fn spawn_listening(&self, args: &[&str]) -> (Proc, SocketAddr) {
        let mut last = String::new();
        for _ in 0..5 {
            let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
            let listen = addr.to_string();
            let mut all = args.to_vec();
            all.extend(["--listen", listen.as_str()]);
            let mut proc = self.spawn(&all);
            let serving = format!("serving on {addr}");
            let up = eventually(Duration::from_secs(10), || {
                proc.stderr().contains(&serving) || proc.0.try_wait().unwrap().is_some()
            });
            if up
                && proc.stderr().contains(&serving)
                && wait_listening(addr, Duration::from_secs(5))
            {
                return (proc, addr);
            }
            last = proc.stderr();
        }
        panic!("{args:?} did not start listening: {last}");
    }

    /// Runs the binary with `args` to completion.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }
}

/// What a drained stream has delivered so far.
type Sink = Arc<Mutex<Vec<u8>>>;

/// Copies `from` into `sink` (and `log`) until it ends.
fn drain(
    mut from: impl Read + Send + 'static,
    sink: Sink,
    log: Option<PathBuf>,
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let mut file = log.and_then(|p| std::fs::File::create(p).ok());
        let mut buf = [0u8; 8192];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    sink.lock().unwrap().extend_from_slice(&buf[..n]);
                    if let Some(f) = file.as_mut() {
                        let _ = std::io::Write::write_all(f, &buf[..n]);
                    }
                }
            }
        }
    })
}

/// The streams of a [`Proc`] read so far, and the threads reading them.
pub struct Drained {
    out: Sink,
    err: Sink,
    threads: Vec<thread::JoinHandle<()>>,
}

/// A child process killed when dropped.
pub struct Proc(pub Child, pub Drained);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Proc {
    /// Wraps `child`, draining whichever of its stdout and stderr are piped.
    pub fn drained(mut child: Child, log: Option<PathBuf>) -> Proc {
        let (out, err): (Sink, Sink) = Default::default();
        let mut threads = Vec::new();
        if let Some(o) = child.stdout.take() {
            threads.push(drain(o, out.clone(), None));
        }
        if let Some(e) = child.stderr.take() {
            threads.push(drain(e, err.clone(), log));
        }
        Proc(child, Drained { out, err, threads })
    }
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
    /// Waits up to `limit` for the process to exit.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let status = wait_child(&mut self.0, limit).map(|_| self.0.wait().unwrap());
        if status.is_some() {
            // The streams end with the process (unless a child of it holds them).
            for t in self.1.threads.drain(..) {
                let _ = t.join();
            }
        }
        status
    }
    /// Everything the process wrote to stderr so far.
    pub fn stderr(&mut self) -> String {
        String::from_utf8_lossy(&self.1.err.lock().unwrap()).into_owned()
    }
    /// Everything the process wrote to stdout so far.
    pub fn stdout(&mut self) -> String {
        String::from_utf8_lossy(&self.1.out.lock().unwrap()).into_owned()
    }
}

/// Waits up to `limit` for `child` to exit; its exit code (`Some(None)`-free: a
/// signal gives `None` inside), or `None` when it is still running.
pub fn wait_child(child: &mut Child, limit: Duration) -> Option<i32> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s.code().unwrap_or(-1));
        }
        thread::sleep(Duration::from_millis(20));
    }
    None
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until something accepts connections on `addr`.
pub fn wait_listening(addr: SocketAddr, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Polls `f` until it is true or `limit` passes.
pub fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if f() {
            return true;
        }
        thread::sleep(Duration::from_millis(50));
    }
    f()
}

// The fake HTTP upstream lives in `upstream.rs` (std only, shared with the unit tests).
#[allow(unused_imports)]
pub use crate::upstream::{FakeServer, Reply, Seen};

/// The `resource` query parameter of a RIPEstat request URL (`AS62041` → `62041`).
pub fn resource_of(url: &str) -> Option<String> {
    url.split(['?', '&'])
        .find_map(|kv| kv.strip_prefix("resource="))
        .map(|r| {
            r.trim_start_matches("AS")
                .trim_start_matches("as")
                .to_string()
        })
}

/// Whether `url` is RIPEstat's `as-overview` data call, which a run makes to learn
/// the holder names of its ASNs (next to `announced-prefixes`): fakes that count a
/// source's fetches leave these out, and answer them as RIPEstat does an unknown
/// call (404).
pub fn is_name_lookup(url: &str) -> bool {
    url.starts_with("/data/as-overview/")
}

/// A RIPEstat `announced-prefixes` answer holding `prefixes`.
pub fn ripe_body(prefixes: &[String]) -> String {
    let items: Vec<String> = prefixes
        .iter()
        .map(|p| format!(r#"{{"prefix":"{p}","timelines":[{{"starttime":"2026-11-13T08:00:00","endtime":"2026-11-27T08:00:00"}}]}}"#))
        .collect();
    format!(
        r#"{{"messages":[],"status":"ok","status_code":200,"data":{{"prefixes":[{}],"resource":"x"}}}}"#,
        items.join(",")
    )
}

/// `GET target` with `Connection: close`; the status code and body.
pub fn http_get(addr: std::net::SocketAddr, target: &str) -> (u16, String) {
    http_send(addr, "GET", target, "")
}

/// `METHOD target` with `body` and `Connection: close`; the status code and body.
pub fn http_send(addr: SocketAddr, method: &str, target: &str, body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        c,
        "{method} {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    let _ = c.read_to_string(&mut raw);
    let status = raw.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// One `read` that retries on `Interrupted`: with a read timeout set, a signal (the
/// SIGCHLD of a process another test started) makes a read fail with EINTR, which is
/// no end of the stream. Every other error and `Ok(0)` are passed on.
pub fn read_retrying(r: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Everything `r` gives until its end or an error other than `Interrupted` (a read
/// timeout ends it too).
pub fn read_until_end(r: &mut impl std::io::Read) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = read_retrying(r, &mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    out
}

#[test]
fn reads_go_on_after_an_interruption() {
    /// Fails with EINTR every other call, as a socket read does when signals arrive.
    struct Flaky(&'static [u8], bool);
    impl std::io::Read for Flaky {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.1 = !self.1;
            if self.1 {
                return Err(std::io::ErrorKind::Interrupted.into());
            }
            let n = self.0.len().min(buf.len()).min(3);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    assert_eq!(
        read_until_end(&mut Flaky(b"HTTP/1.1 200 OK", false)),
        b"HTTP/1.1 200 OK"
    );
    let mut b = [0u8; 8];
    assert_eq!(read_retrying(&mut Flaky(b"ab", false), &mut b).unwrap(), 2);
}

/// A test that cannot run its real check (no root, no `nft`, no `dnsmasq`, no
/// chromium...) calls this and returns. Under CI (`CI=true`) a skipped check would be a
/// green light for something never tried, so it fails there; elsewhere it says why.
pub fn cannot_run(why: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
        panic!("CI=true and this test cannot run its real check: {why}");
    }
    eprintln!("skipped: {why}");
}

/// A connection to `to` from the loopback address `from` (127.0.0.2, ...: the whole
/// of 127/8 reaches the loopback), as a second client host would make it.
pub fn connect_from(from: [u8; 4], to: SocketAddr) -> std::io::Result<TcpStream> {
    use std::os::fd::FromRawFd;
    let port = to.port();
    let SocketAddr::V4(v4) = to else {
        return Err(std::io::Error::other("IPv4 only"));
    };
    let sin = |ip: [u8; 4], port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(ip),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a new socket, owned by the TcpStream at once.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is the socket just made; nothing else owns it.
    let stream = unsafe { TcpStream::from_raw_fd(fd) };
    let (src, dst) = (sin(from, 0), sin(v4.ip().octets(), port));
    // SAFETY: both point at sockaddr_in values of the length given.
    let ok = unsafe {
        libc::bind(fd, (&src as *const libc::sockaddr_in).cast(), len) == 0
            && libc::connect(fd, (&dst as *const libc::sockaddr_in).cast(), len) == 0
    };
    match ok {
        true => Ok(stream),
        false => Err(std::io::Error::last_os_error()),
    }
}
