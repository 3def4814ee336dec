//! HTTP API benchmark. Prints figures; asserts nothing. Run with `benches/api.sh` (or
//! `cargo bench --bench api`); the bench profile is the release profile.
//!
//! 1. Writes 100,000 values as a legacy `data.json`, which the binary imports into
//!    a new database at its first start.
//! 2. Starts the real binary's `serve` and times `GET /addresses?format=text` (median
//!    of [`RUNS`], each on a new connection, body read to the end). With
//!    `RIPE_BASELINE_BIN` set to an earlier build (e.g. the schema-2 binary of
//!    31a817c, see `benches/api.sh`), that binary's `serve` gets the same `data.json`
//!    in a directory of its own (so a database in its own schema) and is timed in the
//!    same loop, interleaved, on the same answer (checked byte for byte). Beside both,
//!    the `sqlite3` command-line tool prints the values (`SELECT DISTINCT value FROM
//!    addresses`) into a pipe, from the baseline's database when there is one (a plain
//!    table), else from ours (the compatibility view).
//! 3. Shows where the API's time goes: the same steps called in-process.
//! 4. Measures `GET /health` requests per second: with `wrk` when installed, else
//!    with a simple loop of keep-alive requests.
//! 5. Opens 256 idle connections and reports the server's memory (VmRSS) and thread
//!    count from `/proc/PID/status`, and how long `/health` takes meanwhile.
//! 6. Streams an endless header on 8 connections for 10 s (reconnecting when
//!    refused) and reports VmRSS and the peak (VmHWM) before and after.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use ripe_cidr_collector::config::Paths;
use ripe_cidr_collector::db;
use ripe_cidr_collector::format::{self, RenderOptions, TypeFilter};

const VALUES: usize = 100_000;
const RUNS: usize = 31;
const IDLE: usize = 256;

/// The server, killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// 90,000 IPv4 /24s and 10,000 IPv6 /48s in 100 sources of 1,000, like a list of
/// ASNs of different sizes, as the earlier Python version's `data.json`: every
/// version of the binary imports it into its own schema at its first start.
fn write_legacy(dir: &Path) {
    let mut json = String::from("{");
    for s in 0..100u32 {
        let values: Vec<String> = (0..1000u32)
            .map(|i| {
                let n = s * 1000 + i;
                if n < 90_000 {
                    format!(
                        "\"{}.{}.{}.0/24\"",
                        11 + n / 65_536,
                        (n / 256) % 256,
                        n % 256
                    )
                } else {
                    format!("\"2001:db8:{:x}::/48\"", n - 90_000 + 1)
                }
            })
            .collect();
        if s > 0 {
            json.push(',');
        }
        json.push_str(&format!(
            "\"{}\": {{\"prefixes\": [{}], \"last_updated\": \"2026-10-01T12:00:00Z\"}}",
            64_512 + s,
            values.join(",")
        ));
    }
    json.push('}');
    std::fs::write(dir.join("data.json"), json).unwrap();
}

/// Imports `data.json` in `dir` with `bin` (its first open does), then starts its
/// `serve` on a free port.
fn start_serve(bin: &Path, dir: &Path) -> (Server, SocketAddr) {
    write_legacy(dir);
    let out = Command::new(bin)
        .args(["-q", "--data-dir"])
        .arg(dir)
        .arg("status")
        .output()
        .unwrap();
    assert!(
        !dir.join("data.json").exists(),
        "{} did not import data.json: {}",
        bin.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let server = Server(
        Command::new(bin)
            .args(["-q", "--data-dir"])
            .arg(dir)
            .args(["serve", "--listen", &addr.to_string()])
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let start = Instant::now();
    while TcpStream::connect(addr).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "serve did not start"
        );
        thread::sleep(Duration::from_millis(20));
    }
    (server, addr)
}

/// One request on a new connection; returns the status line and the body length.
fn fetch(addr: SocketAddr, target: &str) -> (String, usize) {
    let (status, body) = fetch_body(addr, target);
    (status, body.len())
}

/// One request on a new connection; returns the status line and the body.
fn fetch_body(addr: SocketAddr, target: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = Vec::with_capacity(2 << 20);
    s.read_to_end(&mut buf).unwrap();
    let head_end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(buf.len());
    let status = String::from_utf8_lossy(&buf[..head_end])
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    let body = buf.get(head_end + 4..).unwrap_or_default().to_vec();
    (status, body)
}

fn proc_field(pid: u32, name: &str) -> String {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(name))
        .map(|l| l[name.len()..].trim().to_string())
        .unwrap_or_else(|| "?".into())
}

fn sockets_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter(|l| l.to_string_lossy().starts_with("socket:"))
                .count()
        })
        .unwrap_or(0)
}

fn proc_status(pid: u32) -> (String, String) {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        s.lines()
            .find(|l| l.starts_with(name))
            .map(|l| l[name.len()..].trim().to_string())
            .unwrap_or_else(|| "?".into())
    };
    (field("VmRSS:"), field("Threads:"))
}

fn have(cmd: &str, arg: &str) -> bool {
    Command::new(cmd)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::new(dir.path(), None);
    let t = Instant::now();
    let (mut server, addr) = start_serve(
        Path::new(env!("CARGO_BIN_EXE_ripe-cidr-collector")),
        dir.path(),
    );
    let pid = server.0.id();
    println!(
        "imported {VALUES} values and started serve in {}",
        ms(t.elapsed())
    );
    let base_dir = tempfile::tempdir().unwrap();
    let baseline = std::env::var_os("RIPE_BASELINE_BIN").map(|bin| {
        let bin = PathBuf::from(bin);
        let (server, addr) = start_serve(&bin, base_dir.path());
        println!("baseline: {} serve on {addr}", bin.display());
        (server, addr)
    });
    if baseline.is_none() {
        println!("RIPE_BASELINE_BIN not set: no earlier binary beside this one (benches/api.sh)");
    }
    println!("serve pid {pid} on {addr}; {RUNS} runs each, interleaved, median:");
    listing_beside(
        addr,
        baseline.as_ref().map(|b| b.1),
        dir.path(),
        base_dir.path(),
    );
    drop(baseline);
    breakdown(&paths);
    health_rate(addr);
    gzip_pulls(addr);
    idle_connections(addr, pid);
    endless_headers(addr, pid);
    // Still alive after all that?
    let (status, _) = fetch(addr, "/health");
    println!("after the idle connections: /health {status}");
    let _ = server.0.kill();
}

/// Bytes a pull of the 100,000 values moves (text; nft, which aggregates them),
/// plain and gzip-compressed (`wrk`, the same run for both; the compressed body is
/// made once).
fn gzip_pulls(addr: SocketAddr) {
    if !have("wrk", "-v") {
        return println!("wrk not installed: no gzip figures");
    }
    for (format, header) in [
        ("text", "Accept-Encoding: identity"),
        ("text", "Accept-Encoding: gzip"),
        ("nft", "Accept-Encoding: identity"),
        ("nft", "Accept-Encoding: gzip"),
    ] {
        let url = format!("http://{addr}/addresses?format={format}");
        let out = Command::new("wrk")
            .args(["-t1", "-c2", "-d5s", "-H", header, &url])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        // "N requests in Ts, X.YYMB read"
        let line = text
            .lines()
            .find(|l| l.contains("requests in"))
            .unwrap_or("");
        let n: f64 = line
            .split_whitespace()
            .next()
            .and_then(|w| w.parse().ok())
            .unwrap_or(0.0);
        let read = line
            .rsplit(", ")
            .next()
            .and_then(|r| r.strip_suffix(" read"));
        let bytes = read.map_or(0.0, |r| {
            let (num, unit) =
                r.split_at(r.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(r.len()));
            let scale = match unit {
                "KB" => 1024.0,
                "MB" => 1048576.0,
                "GB" => 1073741824.0,
                _ => 1.0,
            };
            num.parse::<f64>().unwrap_or(0.0) * scale
        });
        println!(
            "wrk -t1 -c2 -d5s -H '{header}' {url}: {n} pulls, {:.0} bytes a pull",
            bytes / n.max(1.0)
        );
    }
}

/// `GET /addresses?format=text` of this binary, of the baseline binary (when given)
/// and `sqlite3`, interleaved so that all see the same machine state.
fn listing_beside(addr: SocketAddr, baseline: Option<SocketAddr>, dir: &Path, base_dir: &Path) {
    let target = "/addresses?format=text";
    let (status, body) = fetch_body(addr, target);
    assert!(status.contains(" 200 "), "{status}");
    let len = body.len();
    if let Some(b) = baseline {
        let (status, base_body) = fetch_body(b, target);
        assert!(status.contains(" 200 "), "{status}");
        assert!(base_body == body, "the baseline's answer differs");
    }
    let sqlite = have("sqlite3", "-version");
    // A plain table (the baseline's schema 2) when there is one, else our view.
    let db_path = match baseline {
        Some(_) => base_dir.join("ripe.db"),
        None => dir.join("ripe.db"),
    };
    let (mut api, mut base, mut cli) = (Vec::new(), Vec::new(), Vec::new());
    let mut cli_len = 0;
    for _ in 0..RUNS {
        let t = Instant::now();
        let (_, n) = fetch(addr, target);
        api.push(t.elapsed());
        assert_eq!(n, len);
        if let Some(b) = baseline {
            let t = Instant::now();
            let (_, n) = fetch(b, target);
            base.push(t.elapsed());
            assert_eq!(n, len);
        }
        if sqlite {
            let t = Instant::now();
            let out = Command::new("sqlite3")
                .arg(&db_path)
                .arg("SELECT DISTINCT value FROM addresses")
                .stderr(Stdio::inherit())
                .output()
                .unwrap();
            cli.push(t.elapsed());
            cli_len = out.stdout.len();
        }
    }
    let api_med = median(api);
    println!("  GET {target}: {} ({len} bytes)", ms(api_med));
    if baseline.is_some() {
        let base_med = median(base);
        println!(
            "  the same on the baseline binary: {} (same bytes)",
            ms(base_med)
        );
        println!(
            "  this / baseline: {:.2}x",
            api_med.as_secs_f64() / base_med.as_secs_f64()
        );
    }
    if sqlite {
        let cli_med = median(cli);
        println!(
            "  sqlite3 {} \"SELECT DISTINCT value FROM addresses\": {} ({cli_len} bytes)",
            if baseline.is_some() {
                "<baseline's ripe.db>"
            } else {
                "ripe.db"
            },
            ms(cli_med)
        );
        println!(
            "  API / sqlite3: {:.2}x",
            api_med.as_secs_f64() / cli_med.as_secs_f64()
        );
    } else {
        println!("  sqlite3 not installed: no sqlite3 figure");
    }
}

/// The steps of `GET /addresses` in-process, to show where the time goes.
fn breakdown(paths: &Paths) {
    let (mut open, mut query, mut render) = (Vec::new(), Vec::new(), Vec::new());
    let mut streamed = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let d = db::open(paths).unwrap();
        open.push(t.elapsed());
        let t = Instant::now();
        let values = d.get_values(TypeFilter::All).unwrap();
        query.push(t.elapsed());
        let t = Instant::now();
        let body = format::render(&values, &RenderOptions::default());
        render.push(t.elapsed());
        std::hint::black_box(body);
        let t = Instant::now();
        let body = ripe_cidr_collector::listing::render(
            &d,
            &Default::default(),
            &RenderOptions::default(),
        )
        .unwrap();
        streamed.push(t.elapsed());
        std::hint::black_box(body);
    }
    println!(
        "  in-process: db::open {}, get_values {} + render {}; listing (streamed rows, what the API runs) {}",
        ms(median(open)),
        ms(median(query)),
        ms(median(render)),
        ms(median(streamed))
    );
    // What GET /health does when its counts are not cached: count each kind on the
    // handlers' kept connection.
    let pool = db::Pool::new(paths.clone(), 1);
    let mut health = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        std::hint::black_box(pool.with(db::Db::counts).unwrap());
        health.push(t.elapsed());
    }
    println!(
        "  in-process /health work: counts on a kept connection {} ({} opened)",
        ms(median(health)),
        pool.opened()
    );
}

fn health_rate(addr: SocketAddr) {
    let url = format!("http://{addr}/health");
    if have("wrk", "-v") {
        let out = Command::new("wrk")
            .args(["-t2", "-c8", "-d5s", &url])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        println!("wrk -t2 -c8 -d5s {url}:");
        for l in text.lines().filter(|l| {
            l.contains("Requests/sec") || l.contains("Latency") || l.contains("requests in")
        }) {
            println!("  {}", l.trim());
        }
        if text.contains("Non-2xx") || text.contains("Socket errors") {
            println!("  {}", text.trim());
        }
    } else {
        println!("wrk not installed: simple loops");
    }
    // A keep-alive loop on one connection, and new connections one after the other.
    let mut s = TcpStream::connect(addr).unwrap();
    let mut buf = vec![0u8; 4096];
    let (t, mut n) = (Instant::now(), 0u32);
    while t.elapsed() < Duration::from_secs(2) {
        s.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        // The answer is small: one read gets it whole.
        let got = s.read(&mut buf).unwrap();
        assert!(got > 0 && buf.starts_with(b"HTTP/1.1 200"));
        n += 1;
    }
    println!(
        "  one keep-alive connection: {:.0} requests/s",
        f64::from(n) / t.elapsed().as_secs_f64()
    );
    let (t, mut n) = (Instant::now(), 0u32);
    while t.elapsed() < Duration::from_secs(2) {
        fetch(addr, "/health");
        n += 1;
    }
    println!(
        "  a new connection per request: {:.0} requests/s",
        f64::from(n) / t.elapsed().as_secs_f64()
    );
}

fn idle_connections(addr: SocketAddr, pid: u32) {
    let (rss, threads) = proc_status(pid);
    println!("{IDLE} idle connections (server VmRSS, Threads):");
    println!("  before: {rss}, {threads} threads");
    // Counted before: some of the new ones may still wait in the listen backlog.
    let base = sockets_of(pid);
    let idle: Vec<TcpStream> = (0..IDLE)
        .filter_map(|_| TcpStream::connect(addr).ok())
        .collect();
    thread::sleep(Duration::from_secs(1));
    let (rss, threads) = proc_status(pid);
    println!("  with {} open: {rss}, {threads} threads", idle.len());
    let t = Instant::now();
    let (status, _) = fetch(addr, "/health");
    println!(
        "  GET /health meanwhile: {status} after {}",
        ms(t.elapsed())
    );
    let t = Instant::now();
    let mut freed = None;
    while t.elapsed() < Duration::from_secs(25) {
        if sockets_of(pid) <= base {
            freed = Some(t.elapsed());
            break;
        }
        thread::sleep(Duration::from_millis(100));
    }
    match freed {
        Some(d) => println!(
            "  all idle connections dropped by the server after {:.1} s more",
            d.as_secs_f64()
        ),
        None => println!("  idle connections still open after 25 s"),
    }
    drop(idle);
    let (rss, threads) = proc_status(pid);
    println!("  after: {rss}, {threads} threads");
}

fn endless_headers(addr: SocketAddr, pid: u32) {
    const SECS: u64 = 10;
    println!("8 connections streaming an endless header for {SECS} s:");
    println!(
        "  before: VmRSS {}, VmHWM {}",
        proc_field(pid, "VmRSS:"),
        proc_field(pid, "VmHWM:")
    );
    let until = Instant::now() + Duration::from_secs(SECS);
    let sent = (0..8)
        .map(|_| {
            thread::spawn(move || {
                let chunk = vec![b'a'; 64 * 1024];
                let (mut total, mut connections) = (0u64, 0u64);
                while Instant::now() < until {
                    let Ok(mut s) = TcpStream::connect(addr) else {
                        continue;
                    };
                    connections += 1;
                    let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
                    let _ = s.write_all(b"GET /health HTTP/1.1\r\nX-A: ");
                    while Instant::now() < until && s.write_all(&chunk).is_ok() {
                        total += chunk.len() as u64;
                    }
                }
                (total, connections)
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    println!(
        "  after: VmRSS {}, VmHWM {} ({} MB sent on {} connections)",
        proc_field(pid, "VmRSS:"),
        proc_field(pid, "VmHWM:"),
        sent.0 >> 20,
        sent.1
    );
}
