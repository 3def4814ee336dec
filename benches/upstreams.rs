//! Upstreams benchmark (issue 20): `run` against a local fake on 127.0.0.1, measured
//! with `/usr/bin/time -v` (CPU time and peak RSS of the collector alone; the fake
//! runs in this process):
//! * bgp.tools: a 1,200,000-line `table.jsonl` (about 60 MB) with 50 configured ASNs,
//!   beside the plain RIPEstat path for the same 50 ASNs and the same prefixes;
//! * a feed of 1,000,000 lines (200,000 prefixes, the rest comments and blank lines:
//!   a source keeps at most 250,000 values).
//!
//! Prints figures; asserts nothing. `cargo bench --bench upstreams`

use std::process::Command;

#[path = "../tests/it/upstream.rs"]
mod upstream;

const LINES: u32 = 1_200_000;
const ASNS: u32 = 60_000;
const CONFIGURED: u32 = 50;

fn prefix(i: u32) -> String {
    format!("{}.{}.{}.0/24", 11 + (i >> 16), (i >> 8) & 255, i & 255)
}

fn table() -> Vec<u8> {
    let mut s = String::with_capacity(LINES as usize * 50);
    for i in 0..LINES {
        let asn = 1 + i % ASNS;
        s.push_str(&format!(
            "{{\"CIDR\":\"{}\",\"ASN\":{asn},\"Hits\":{}}}\n",
            prefix(i),
            i % 977
        ));
    }
    s.into_bytes()
}

fn ripestat(asn: u32) -> String {
    let mut s = String::from(r#"{"status":"ok","status_code":200,"data":{"prefixes":["#);
    let mut first = true;
    let mut i = asn - 1;
    while i < LINES {
        if !first {
            s.push(',');
        }
        first = false;
        s.push_str(&format!(r#"{{"prefix":"{}","timelines":[]}}"#, prefix(i)));
        i += ASNS;
    }
    s.push_str("]}}");
    s
}

fn feed() -> Vec<u8> {
    let mut s = String::with_capacity(20_000_000);
    for i in 0..1_000_000u32 {
        match i % 5 {
            0 => s.push_str(&format!("{} ; SBL{i}\n", prefix(i / 5))),
            1 => s.push_str("# a comment line of the list\n"),
            2 => s.push('\n'),
            3 => s.push_str("; another comment\n"),
            _ => s.push_str("   \n"),
        }
    }
    s.into_bytes()
}

/// Runs `run` in a fresh data directory with `cfg`; prints CPU and peak RSS.
fn measure(label: &str, cfg: serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.json"), cfg.to_string()).unwrap();
    let bin = env!("CARGO_BIN_EXE_ripe-cidr-collector");
    let out = Command::new("/usr/bin/time")
        .arg("-v")
        .arg(bin)
        .arg("-q")
        .arg("--data-dir")
        .arg(dir.path())
        .arg("run")
        .output()
        .expect("/usr/bin/time (apt-get install time)");
    let err = String::from_utf8_lossy(&out.stderr);
    let field = |name: &str| -> f64 {
        err.lines()
            .find_map(|l| l.trim().strip_prefix(name).map(|v| v.trim().to_string()))
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN)
    };
    let cpu = field("User time (seconds):") + field("System time (seconds):");
    let rss = field("Maximum resident set size (kbytes):") / 1024.0;
    let export = Command::new(bin)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["export", "--type", "cidr"])
        .output()
        .unwrap();
    let values = export.stdout.iter().filter(|&&b| b == b'\n').count();
    println!(
        "{label:<44} exit {:<3} cpu {cpu:>5.2} s   peak RSS {rss:>5.1} MiB   values stored {values}",
        out.status.code().unwrap_or(-1)
    );
}

fn main() {
    let table = table();
    let feed = feed();
    println!(
        "table.jsonl: {LINES} lines, {} bytes; feed: 1,000,000 lines, {} bytes",
        table.len(),
        feed.len()
    );
    let server = upstream::FakeServer::start(move |rq| {
        if rq.url.starts_with("/table.jsonl") {
            return upstream::Reply::json(200, table.clone());
        }
        if rq.url.starts_with("/feed.txt") {
            return upstream::Reply::json(200, feed.clone());
        }
        let asn = rq
            .url
            .split(['?', '&'])
            .find_map(|kv| kv.strip_prefix("resource=AS"))
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(1);
        upstream::Reply::json(200, ripestat(asn))
    });
    let addr = server.addr;
    let asns: Vec<String> = (1..=CONFIGURED).map(|a| (a * 1000).to_string()).collect();
    measure(
        "bgptools: 1.2M-line table, 50 ASNs",
        serde_json::json!({
            "asns": asns,
            "asn_upstreams": ["bgptools"],
            "bgptools": {"url": format!("http://{addr}/table.jsonl"),
                         "user_agent": "ripe-cidr-collector bench - bench@example.org"},
        }),
    );
    measure(
        "ripestat: the same 50 ASNs",
        serde_json::json!({
            "asns": asns,
            "ripe": {"url": format!("http://{addr}/data/announced-prefixes/data.json")},
        }),
    );
    measure(
        "feed: 1M lines, 200,000 prefixes",
        serde_json::json!({"feeds": [format!("http://{addr}/feed.txt")]}),
    );
    drop(server);
}
