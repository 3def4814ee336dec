//! `config.json` and the legacy JSON files have a size limit (1 MiB and 16 MiB): a file
//! over it is refused with an error naming the file and the limit, and reading the
//! largest allowed one stays in bounded memory (VmHWM from /proc, generous margin).

use std::fs;
use std::time::Duration;

use crate::common::{eventually, TestDir};

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
