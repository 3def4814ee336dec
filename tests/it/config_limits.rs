//! `config.json` and the legacy JSON files have a size limit (1 MiB and 16 MiB): a file
//! over it is refused with an error naming the file and the limit, and reading the
//! largest allowed one stays in bounded memory (VmHWM from /proc or wait4, generous
//! margin).

use std::fs;
use std::time::Duration;

use crate::common::{eventually, free_port, http_get, TestDir};

const CONFIG_LIMIT: usize = 1 << 20;

/// A valid config.json of `asns` ASNs ("1", "2", ...), as compact JSON.
fn asn_config(asns: usize) -> String {
    let list: Vec<String> = (1..=asns).map(|n| format!("\"{n}\"")).collect();
    format!("{{\"asns\":[{}]}}", list.join(","))
}

fn vmhwm_kib(pid: u32) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

#[test]
fn config_over_the_limit_is_refused_naming_file_and_limit() {
    let t = TestDir::new();
    // Valid JSON, one byte over the limit: the limit is about size, not content.
    let mut text = asn_config(10);
    text.push_str(&" ".repeat(CONFIG_LIMIT + 1 - text.len()));
    fs::write(t.file("config.json"), &text).unwrap();
    let out = t.run(&["asn", "list"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("config.json"), "{err}");
    assert!(err.contains("1048576 bytes"), "{err}");
    // Adding a source to it changes nothing.
    let out = t.run(&["asn", "add", "AS62041"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(fs::read_to_string(t.file("config.json")).unwrap(), text);
    // At the limit exactly, it loads.
    text.pop();
    fs::write(t.file("config.json"), &text).unwrap();
    let out = t.run(&["asn", "list"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn legacy_file_over_the_limit_is_refused_and_kept() {
    let t = TestDir::new();
    let mut text = String::from("{}");
    text.push_str(&" ".repeat((16 << 20) + 1 - text.len()));
    fs::write(t.file("data.json"), &text).unwrap();
    let out = t.run(&["export"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("data.json"), "{err}");
    assert!(err.contains("16777216 bytes"), "{err}");
    assert_eq!(
        fs::metadata(t.file("data.json")).unwrap().len(),
        16 << 20 | 1
    );
}

/// The largest allowed config (about 100,000 ASNs) and a 100 MB one: `serve --listen`
/// loads it at start (and serves anyway when it is refused), then VmHWM is read.
#[test]
fn config_reading_memory_is_bounded() {
    let t = TestDir::new();
    let mut n = 100_000;
    while asn_config(n).len() > CONFIG_LIMIT {
        n -= 1000;
    }
    fs::write(t.file("config.json"), asn_config(n)).unwrap();
    let out = t.run(&["asn", "list"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), n);
    let (serve, _) = t.spawn_listening(&["serve"]);
    let big = vmhwm_kib(serve.pid());
    drop(serve);
    eprintln!("serve with {n} ASNs in config.json: VmHWM {big} KiB");
    assert!(big < 64 * 1024, "VmHWM {big} KiB");

    // 100 MB: refused after reading at most the limit.
    let f = fs::File::create(t.file("config.json")).unwrap();
    f.set_len(100 << 20).unwrap();
    let (mut serve, _) = t.spawn_listening(&["serve"]);
    assert!(eventually(Duration::from_secs(5), || serve
        .stderr()
        .contains("larger than the limit")));
    let huge = vmhwm_kib(serve.pid());
    drop(serve);
    eprintln!("serve with a 100 MB config.json: VmHWM {huge} KiB");
    assert!(huge < 32 * 1024, "VmHWM {huge} KiB");
}

/// A `data.json` just under the limit: 1,000-value entries of distinct IPv4 /24s,
/// every 16th value with a `seen` entry, every other entry with its members in
/// reverse order (`seen` first). Returns the text and the values.
fn largest_legacy_file() -> (String, Vec<String>) {
    let limit = (16 << 20) - 2;
    let (mut text, mut values) = (String::from("{"), Vec::new());
    for asn in 64_512.. {
        let (mut list, mut seen) = (Vec::new(), Vec::new());
        for _ in 0..1000 {
            let i = values.len() + list.len();
            let v = format!("{}.{}.{}.0/24", 1 + i / 65_536, i / 256 % 256, i % 256);
            if i % 16 == 0 {
                seen.push(format!(
                    "\"{v}\":{{\"first_seen\":\"2026-09-01T00:00:00\",\"last_seen\":\"2026-10-02T08:30:00\"}}"
                ));
            }
            list.push(format!("\"{v}\""));
        }
        let (list_j, seen_j) = (list.join(","), seen.join(","));
        let updated = "\"last_updated\":\"2026-10-01T12:00:00\"";
        let entry = if asn % 2 == 0 {
            format!("\"{asn}\":{{\"prefixes\":[{list_j}],{updated},\"seen\":{{{seen_j}}}}}")
        } else {
            format!("\"{asn}\":{{\"seen\":{{{seen_j}}},{updated},\"prefixes\":[{list_j}]}}")
        };
        if text.len() + entry.len() + 1 > limit {
            break;
        }
        if text.len() > 1 {
            text.push(',');
        }
        text.push_str(&entry);
        values.extend(list.iter().map(|v| v.trim_matches('"').to_string()));
    }
    text.push('}');
    (text, values)
}

/// The largest allowed `data.json` (about 760,000 values in 766 sources): `serve`
/// imports it at start in bounded memory, answers `/status` (a summary of every
/// source), and every value is stored with its times. Before the import streamed it
/// took 313 MB; before the summary read the sources in their order, 50 MB more.
#[test]
fn the_largest_legacy_file_imports_in_bounded_memory() {
    use ripe_cidr_collector::source::Kind;
    let t = TestDir::new();
    let (text, mut values) = largest_legacy_file();
    fs::write(t.file("data.json"), &text).unwrap();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], free_port()));
    let mut serve = t.spawn(&["serve", "--listen", &addr.to_string()]);
    // A debug build takes a while: no bound on the time, only on memory.
    let up = format!("serving on {addr}");
    assert!(eventually(Duration::from_secs(900), || serve
        .stderr()
        .contains(&up)
        || serve.0.try_wait().unwrap().is_some()));
    let err = serve.stderr();
    assert!(err.contains(&up), "{err}");
    assert!(
        err.contains(&format!("imported {} values", values.len())),
        "{err}"
    );
    assert_eq!(http_get(addr, "/status").0, 200);
    let peak = vmhwm_kib(serve.pid());
    drop(serve);
    eprintln!(
        "serve importing {} values ({} bytes), then /status: VmHWM {peak} KiB",
        values.len(),
        text.len()
    );
    assert!(peak < 32 * 1024, "VmHWM {peak} KiB");
    let out = t.run(&["export"]);
    let mut got: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    got.sort();
    values.sort();
    assert!(
        got == values,
        "{} values exported, {} written",
        got.len(),
        values.len()
    );
    let db = ripe_cidr_collector::db::open(&t.paths()).unwrap();
    let seen = |v: &str| {
        let n: Vec<usize> = v.split(['.', '/']).map(|p| p.parse().unwrap()).collect();
        ((n[0] - 1) * 65_536 + n[1] * 256 + n[2]) % 16 == 0
    };
    for asn in ["64512", "64513"] {
        let rows = db.rows(Kind::Asn, asn).unwrap();
        assert_eq!(rows.len(), 1000);
        for r in rows {
            let (first, last) = match seen(&r.value) {
                true => ("2026-09-01T00:00:00", "2026-10-02T08:30:00"),
                false => ("2026-10-01T12:00:00", "now"),
            };
            assert_eq!(r.first_seen, first, "{r:?}");
            if last != "now" {
                assert_eq!(r.last_seen, last, "{r:?}");
            }
        }
    }
}
