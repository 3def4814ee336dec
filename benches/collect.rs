//! Collection benchmark: `run` collecting 200 ASNs × 500 prefixes, then one ASN of
//! 100,000 (issue 16's peak RSS goal: 12 MiB), from a fake RIPEstat on 127.0.0.1,
//! measured with `/usr/bin/time -v` (wall time, CPU time, peak RSS of the collector
//! alone; the fake server runs in this process). Two runs each: into an empty
//! database, then with every prefix present. Prints figures; asserts nothing.
//!
//! `cargo bench --bench collect`

use std::process::Command;
use std::time::Instant;

#[path = "../tests/it/upstream.rs"]
mod upstream;

/// (ASNs, prefixes per ASN) of each case.
const CASES: [(u32, u32); 2] = [(200, 500), (1, 100_000)];

fn body(asn: u32, prefixes: u32) -> String {
    let mut s = String::from(r#"{"status":"ok","status_code":200,"data":{"prefixes":["#);
    for i in 0..prefixes {
        if i > 0 {
            s.push(',');
        }
        // Distinct per ASN; a few IPv6 ones too.
        if i % 10 == 9 {
            s.push_str(&format!(
                r#"{{"prefix":"2001:db8:{asn:x}:{:x}:{:x}::/80","timelines":[]}}"#,
                i >> 16,
                i & 0xffff
            ));
        } else {
            let n = (asn % 1000) * prefixes + i;
            s.push_str(&format!(
                r#"{{"prefix":"{}.{}.{}.0/24","timelines":[{{"starttime":"2026-11-13T08:00:00","endtime":"2026-11-27T08:00:00"}}]}}"#,
                10 + (n >> 16),
                (n >> 8) & 255,
                n & 255
            ));
        }
    }
    s.push_str("]}}");
    s
}

/// The prefixes per ASN of the case `asn` is in: the one large ASN is 65001.
fn prefixes_of(asn: u32) -> u32 {
    CASES[usize::from(asn > 65_000)].1
}

fn main() {
    let server = upstream::FakeServer::start(|rq| {
        let asn = rq
            .url
            .split(['?', '&'])
            .find_map(|kv| kv.strip_prefix("resource=AS"))
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(64_001);
        upstream::Reply::json(200, body(asn, prefixes_of(asn)))
    });
    let addr = server.addr;
    for (case, (count, prefixes)) in CASES.into_iter().enumerate() {
        let first = if case == 0 { 64_001 } else { 65_001 };
        collect(addr, (first..first + count).collect(), prefixes);
    }
    drop(server);
}

/// Two runs of the ASNs `asns` (each with `prefixes`), into a new data directory.
fn collect(addr: std::net::SocketAddr, asns: Vec<u32>, prefixes: u32) {
    let dir = tempfile::tempdir().unwrap();
    let total = asns.len() as u32 * prefixes;
    let cfg = serde_json::json!({
        "asns": asns.iter().map(u32::to_string).collect::<Vec<_>>(),
        "ripe": {"url": format!("http://{addr}/data/announced-prefixes/data.json")}
    });
    std::fs::write(dir.path().join("config.json"), cfg.to_string()).unwrap();
    let bin = env!("CARGO_BIN_EXE_ripe-cidr-collector");
    let have_time = std::path::Path::new("/usr/bin/time").exists();
    println!(
        "collect {} ASNs x {prefixes} prefixes = {total} prefixes from a local fake RIPEstat",
        asns.len()
    );
    for label in ["into empty database", "all prefixes present"] {
        let mut cmd = if have_time {
            let mut c = Command::new("/usr/bin/time");
            c.arg("-v").arg(bin);
            c
        } else {
            Command::new(bin)
        };
        cmd.arg("-q").arg("--data-dir").arg(dir.path()).arg("run");
        let t = Instant::now();
        let out = cmd.output().unwrap();
        let wall = t.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        let field = |name: &str| {
            err.lines()
                .find_map(|l| l.trim().strip_prefix(name).map(|v| v.trim().to_string()))
                .unwrap_or_else(|| "?".into())
        };
        if !out.status.success() {
            println!("{label}: run failed: {:?}\n{err}", out.status);
            continue;
        }
        if have_time {
            let user: f64 = field("User time (seconds):").parse().unwrap_or(f64::NAN);
            let sys: f64 = field("System time (seconds):").parse().unwrap_or(f64::NAN);
            let rss_kib: f64 = field("Maximum resident set size (kbytes):")
                .parse()
                .unwrap_or(f64::NAN);
            let cpu = user + sys;
            println!(
                "{label:<22} wall {:>6.2} s   cpu {:>5.2} s (user {user:.2}, sys {sys:.2})   \
                 cpu per 100k prefixes {:.2} s   peak RSS {:.1} MiB",
                wall.as_secs_f64(),
                cpu,
                cpu / f64::from(total) * 100_000.0,
                rss_kib / 1024.0
            );
        } else {
            println!(
                "{label:<22} wall {:>6.2} s (install GNU time for CPU and RSS)",
                wall.as_secs_f64()
            );
        }
    }
}
