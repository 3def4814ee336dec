//! Upstream answers built to exhaust memory, and `fetch.command`, through the real
//! binary: each `run`'s peak RSS is its own, read from wait4(2) when it ends.

use std::fs;
use std::process::Stdio;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;
use serde_json::json;

use crate::common::*;

const AS62041: &str = include_str!("../fixtures/ripestat/AS62041.json");

/// Runs `run` on `t` to its end: its exit code, its peak RSS in KiB and its log.
///
/// The peak is the process's VmHWM, read from /proc while it runs (every 2 ms; a
/// high-water mark, so only a peak in its very last moments could be missed). Not
/// wait4's `ru_maxrss`: Linux carries the spawning process's own high-water mark into
/// a child's at exec, and this test process holds the hostile answers. A run that
/// takes more than two minutes is killed (and the test fails).
pub fn run_peak(t: &TestDir) -> (i32, u64, String) {
    let log = t.file("run.log");
    let mut child = t
        .cmd()
        .arg("run")
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let started = Instant::now();
    let mut peak = 0;
    let code = loop {
        if let Some(kib) = fs::read_to_string(&status).ok().and_then(|s| hwm(&s)) {
            peak = peak.max(kib);
        }
        if let Some(s) = child.try_wait().unwrap() {
            break s.code().unwrap_or(-1);
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("run did not end within 2 minutes");
        }
        thread::sleep(Duration::from_millis(2));
    };
    (code, peak, fs::read_to_string(&log).unwrap_or_default())
}

/// The VmHWM of a /proc/PID/status text, in KiB.
fn hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `n` copies of `item`, separated by commas.
fn repeated(item: &str, n: usize) -> String {
    let mut s = String::with_capacity((item.len() + 1) * n);
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        s.push_str(item);
    }
    s
}

/// Answers just under the client's caps (16 MiB for RIPEstat, 1 MiB for DoH) that
/// cost hundreds of MB when parsed into a tree or a list of entries.
fn hostile_bodies() -> Vec<Arc<Vec<u8>>> {
    let cap = (16 << 20) - 4096;
    let entries = format!(
        r#"{{"status":"ok","data":{{"prefixes":[{}]}}}}"#,
        repeated("{}", cap / 3)
    );
    let long = format!(
        r#"{{"status":"ok","data":{{"prefixes":[{{"prefix":"{}"}}]}}}}"#,
        "1".repeat(cap - 100)
    );
    let mut valid = String::from(r#"{"status":"ok","data":{"prefixes":["#);
    for i in 0u32.. {
        let ip = std::net::Ipv4Addr::from(0x0b00_0000 + i);
        let entry = format!(r#"{{"prefix":"{ip}"}},"#);
        if valid.len() + entry.len() > cap - 100 {
            break;
        }
        valid.push_str(&entry);
    }
    valid.push_str(r#"{}]}}"#);
    let messages = format!(
        r#"{{"status":"error","messages":[{}]}}"#,
        repeated(r#"["error","a message"]"#, cap / 22)
    );
    let doh = format!(
        r#"{{"Status":0,"Answer":[{}]}}"#,
        repeated(r#"{"type":1}"#, (1 << 20) / 12)
    );
    [entries, long, valid, messages, doh]
        .into_iter()
        .map(|b| Arc::new(b.into_bytes()))
        .collect()
}

#[test]
fn hostile_upstreams_keep_memory_bounded() {
    let bodies = hostile_bodies();
    for b in &bodies[..4] {
        assert!(b.len() < 16 << 20, "{}", b.len());
    }
    let server = FakeServer::start(move |rq| {
        let i = match resource_of(&rq.url).as_deref() {
            Some("1") => 0,
            Some("2") => 1,
            Some("3") => 2,
            Some("4") => 3,
            _ => 4,
        };
        Reply::json(200, bodies[i].to_vec())
    });
    let t = TestDir::new();
    t.config(&json!({
        "asns": [1, 2, 3, 4],
        "fqdns": ["a.example", "b.example"],
        "ripe": {"url": server.url("/data.json"), "timeout_seconds": 60, "retries": 0},
        "dns": {"resolver": "doh", "doh_url": server.url("/dns-query"), "timeout_seconds": 60}
    }));
    let (code, peak, log) = run_peak(&t);
    eprintln!("peak RSS of a run against 4 hostile upstreams and DoH: {peak} KiB");
    assert_eq!(code, 3, "sources failed, not the run: {log}");
    assert!(
        log.contains("AS3: failed") && log.contains("more than 250000 values"),
        "{log}"
    );
    assert!(peak < 32 * 1024, "{peak} KiB\n{log}");
    // Nothing of it was stored: `{}` entries and the long string are invalid values,
    // and the failed sources were not merged.
    let db = db::open(&t.paths()).unwrap();
    for asn in ["1", "2", "3", "4"] {
        assert!(db.rows(Kind::Asn, asn).unwrap().is_empty(), "AS{asn}");
    }
}

/// A fake RIPEstat answering AS62041 with the fixture (12 prefixes).
fn fixture_server() -> FakeServer {
    FakeServer::start(|_| Reply::json(200, AS62041))
}

fn with_command(t: &TestDir, server: &FakeServer, argv: &[&str]) {
    t.config(&json!({
        "asns": [62041],
        "ripe": {"url": server.url("/data.json"), "timeout_seconds": 2, "retries": 0},
        "fetch": {"command": argv},
    }));
}

fn stored(t: &TestDir) -> Vec<String> {
    let db = db::open(&t.paths()).unwrap();
    let rows = db.rows(Kind::Asn, "62041").unwrap();
    rows.into_iter().map(|r| r.value).collect()
}

#[test]
fn fetch_command_with_curl_then_misbehaving_scripts() {
    if !std::path::Path::new("/usr/bin/curl").exists() {
        return cannot_run("curl is not installed (.ci/run installs it)");
    }
    let server = fixture_server();
    let t = TestDir::new();
    with_command(
        &t,
        &server,
        &["/usr/bin/curl", "-sSf", "-A", "{user_agent}", "{url}"],
    );
    let (code, _, log) = run_peak(&t);
    assert_eq!(code, 0, "{log}");
    let good = stored(&t);
    assert_eq!(good.len(), 12, "{log}");
    let seen = server.requests();
    assert!(
        seen[0]
            .header("User-Agent")
            .unwrap()
            .starts_with("ripe-cidr-collector/"),
        "{seen:?}"
    );

    // Each misbehaviour fails the source; the stored values stay as they were.
    let other = t.file("other.json");
    fs::write(&other, ripe_body(&["192.0.2.0/24".into()])).unwrap();
    let cases = [
        ("yes '{}, {}, {}, {}, {}, {}, {}'", "unexpected answer"),
        ("sleep 60", "timed out after 2 s"),
        (
            &format!("cat {}; exit 3", other.display()),
            "exited with status 3",
        ),
        (
            "echo 'cannot resolve host' >&2; exit 1",
            "cannot resolve host",
        ),
    ];
    for (script, says) in cases {
        with_command(&t, &server, &["sh", "-c", script, "sh", "{url}"]);
        let (code, peak, log) = run_peak(&t);
        eprintln!("{script}: peak RSS {peak} KiB");
        assert_eq!(code, 3, "{script}: {log}");
        assert!(log.contains(says), "{script}: {log}");
        assert!(peak < 32 * 1024, "{script}: {peak} KiB");
        assert_eq!(stored(&t), good, "{script}: stored values changed");
    }
}

#[test]
fn endless_command_output_is_cut_at_the_body_limit() {
    // A well-formed answer that never ends: what is read stops at 16 MiB and memory
    // does not follow it. Its entries are shorter than min_prefix, so skipped: the
    // answer grows to the byte cap rather than stopping at the cap on values.
    let t = TestDir::new();
    let server = fixture_server();
    let script = r#"printf '{"status":"ok","data":{"prefixes":['; yes '{"prefix":"0.0.0.0/0"},'"#;
    t.config(&json!({
        "asns": [62041],
        "ripe": {"url": server.url("/data.json"), "timeout_seconds": 60, "retries": 0},
        "fetch": {"command": ["sh", "-c", script, "sh", "{url}"]},
    }));
    let (code, peak, log) = run_peak(&t);
    eprintln!("endless answer: peak RSS {peak} KiB");
    assert_eq!(code, 3, "{log}");
    assert!(
        log.contains("answer larger than the limit of 16 MiB"),
        "{log}"
    );
    assert!(peak < 32 * 1024, "{peak} KiB");
}

#[test]
fn run_of_100000_prefixes_is_lean() {
    // One ASN of 100,000 prefixes (11.7 MB of RIPEstat JSON with timelines): the
    // answer streams into compact values and the store; the run's peak above that
    // of a run with nothing to do stays a few MB (release binary: docs/size.md).
    let prefixes: Vec<String> = (0..100_000u32)
        .map(|n| format!("{}.{}.{}.0/24", 11 + (n >> 16), (n >> 8) & 255, n & 255))
        .collect();
    let body = Arc::new(ripe_body(&prefixes).into_bytes());
    let server = FakeServer::start(move |_| Reply::json(200, body.to_vec()));
    let idle = TestDir::new();
    idle.config(&json!({}));
    let (code, base, log) = run_peak(&idle);
    assert_eq!(code, 0, "{log}");
    let t = TestDir::new();
    t.config(&json!({
        "asns": [64500],
        "ripe": {"url": server.url("/data.json"), "timeout_seconds": 60, "retries": 0}
    }));
    for round in ["first", "second"] {
        let (code, peak, log) = run_peak(&t);
        eprintln!("{round} run of 100,000 prefixes: peak RSS {peak} KiB, idle run {base} KiB");
        assert_eq!(code, 0, "{log}");
        assert!(log.contains("100000 values"), "{log}");
        // Before the streaming client: 19 MB above the idle run.
        assert!(
            peak - base.min(peak) < 10 * 1024,
            "{round}: {peak} KiB vs {base} KiB"
        );
    }
}

#[test]
fn a_run_of_the_largest_answer_holds_no_copy_of_it() {
    // 250,000 prefixes, the most one source may have, against a run of 1,000 (the
    // same code, so only what grows with the answer counts). Before: a first merge
    // collected the new values into a list (24 B each) before inserting them, and
    // the UPDATE of the values seen again kept a statement journal (a copy of every
    // page it changed, in RAM): 10.5-11.4 MiB above the small run (debug build), 5.5
    // MiB at 100,000 (release on musl, OpenWrt's libc: 12.3 MiB for the second run,
    // over the 12 MiB goal). Now about 6.5 MiB, the answer parsed and its compact
    // values (docs/performance.md).
    let answer = |n: u32| {
        let items: Vec<String> = (0..n)
            .map(|n| {
                format!(
                    r#"{{"prefix":"{}.{}.{}.0/24"}}"#,
                    11 + (n >> 16),
                    (n >> 8) & 255,
                    n & 255
                )
            })
            .collect();
        Arc::new(
            format!(
                r#"{{"status":"ok","data":{{"prefixes":[{}]}}}}"#,
                items.join(",")
            )
            .into_bytes(),
        )
    };
    let (large, small) = (answer(250_000), answer(1_000));
    let server = FakeServer::start(move |rq| {
        let body = if rq.url.contains("AS64500") {
            &large
        } else {
            &small
        };
        Reply::json(200, body.to_vec())
    });
    let dir = |asn: u32| {
        let t = TestDir::new();
        t.config(&json!({
            "asns": [asn],
            "ripe": {"url": server.url("/data.json"), "timeout_seconds": 60, "retries": 0}
        }));
        t
    };
    let (small, large) = (dir(64501), dir(64500));
    let (code, base, log) = run_peak(&small);
    assert_eq!(code, 0, "{log}");
    for round in ["first", "second"] {
        let (code, peak, log) = run_peak(&large);
        eprintln!("{round} run of 250,000 prefixes: peak RSS {peak} KiB, 1,000: {base} KiB");
        assert_eq!(code, 0, "{log}");
        assert!(log.contains("250000 values"), "{log}");
        assert!(
            peak - base.min(peak) < 8704,
            "{round}: {peak} KiB vs {base} KiB"
        );
    }
}

/// Issue 38, item 15: a run's peak does not grow with the values it collects over
/// many sources. Before, every answer of the run was held until the end (18 bytes a
/// value, plus the vectors' slack): 50 ASNs of 10,000 prefixes peaked 9.7 MiB above
/// one of them (3.1 MiB now, debug build) (release: 23.9 MiB for 100 x 10,000 against 7.6 MiB for one
/// source). Now each answer is merged as it arrives: a few answers at a time,
/// whatever the store holds.
#[test]
fn a_run_over_many_sources_holds_a_few_answers_at_a_time() {
    let items: Vec<String> = (0..10_000u32)
        .map(|n| format!(r#"{{"prefix":"11.{}.{}.0/24"}}"#, n >> 8, n & 255))
        .collect();
    let body = format!(
        r#"{{"status":"ok","data":{{"prefixes":[{}]}}}}"#,
        items.join(",")
    );
    let body = Arc::new(body.into_bytes());
    let server = FakeServer::start(move |_| Reply::json(200, body.to_vec()));
    let dir = |asns: u32| {
        let t = TestDir::new();
        t.config(&json!({
            "asns": (0..asns).map(|i| 64500 + i).collect::<Vec<_>>(),
            "ripe": {"url": server.url("/data.json"), "timeout_seconds": 120, "retries": 0}
        }));
        t
    };
    let (one, many) = (dir(1), dir(50));
    let (code, base, log) = run_peak(&one);
    assert_eq!(code, 0, "{log}");
    for round in ["first", "second"] {
        let (code, peak, log) = run_peak(&many);
        eprintln!(
            "{round} run of 50 x 10,000 prefixes: peak RSS {peak} KiB, 1 x 10,000: {base} KiB"
        );
        assert_eq!(code, 0, "{log}");
        let d = db::open(&many.paths()).unwrap();
        assert_eq!(d.rows(Kind::Asn, "64549").unwrap().len(), 10_000);
        assert!(peak < base + 6144, "{round}: {peak} KiB vs {base} KiB");
    }
}

/// Every curl `fetch.command` the documentation and the shipped files show turns off
/// curl's URL globbing (`[1-5]` made 5 requests) and redirects (where they lead is
/// not checked: `redirects::the_documented_curl_command_follows_no_redirect`), and
/// would never leave https; every shell curl example (README.md, docs/) whose URL
/// holds a variable, brackets or braces turns off globbing too (issue 27, item 10).
#[test]
fn documented_curl_commands_neither_glob_nor_leave_https() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    for dir in ["docs", "openwrt/ripe-cidr-collector/files"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            for line in text.lines().filter(|l| l.contains("[\"curl\"")) {
                seen += 1;
                assert!(
                    line.contains("\"--globoff\"")
                        && line.contains("\"--max-redirs\", \"0\"")
                        && line.contains("\"--proto-redir\", \"=https\""),
                    "{}: {line}",
                    e.path().display()
                );
            }
        }
    }
    assert!(seen > 0, "the curl example is gone from docs/");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(!readme
        .lines()
        .any(|l| l.contains("[\"curl\"") && !l.contains("--globoff")));
    // The shell examples too: a URL built from a variable may hold brackets.
    let mut pages = vec![root.join("README.md")];
    pages.extend(
        std::fs::read_dir(root.join("docs"))
            .unwrap()
            .flatten()
            .map(|e| e.path()),
    );
    let mut shell = 0;
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap_or_default();
        for line in text.lines().filter_map(curl_command) {
            shell += 1;
            let urls = curl_urls(&line);
            let globs = urls.iter().any(|u| u.contains(['$', '[', ']', '{', '}']));
            let off = line.iter().any(|w| w == "--globoff" || w == "-g");
            assert!(
                !globs || off,
                "{}: curl {line:?} globs {urls:?}",
                page.display()
            );
        }
    }
    assert!(shell > 5, "the shell curl examples are gone");
    let unsafe_example = curl_command(r#"x=$(curl -s -H "A: $b" "$url")"#).unwrap();
    assert_eq!(curl_urls(&unsafe_example), ["$url"]);
}

/// The words after `curl` of a shell command line (`curl ...`, `x=$(curl ...)`),
/// quotes removed, up to the end of the command.
fn curl_command(line: &str) -> Option<Vec<String>> {
    let line = line.trim_start();
    let rest = line
        .strip_prefix("curl ")
        .or_else(|| line.split_once("$(curl ").map(|(_, r)| r))?;
    let (mut words, mut word, mut quote) = (Vec::new(), String::new(), None);
    for c in rest.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, ' ' | '\t') if !word.is_empty() => words.push(std::mem::take(&mut word)),
            (None, ' ' | '\t') => {}
            (None, '|' | ')' | ';' | '>' | '#') => break,
            (None, c) => word.push(c),
        }
    }
    words.extend((!word.is_empty()).then_some(word));
    Some(words)
}

/// The URLs of a curl command: its words that are neither options nor their values.
fn curl_urls(words: &[String]) -> Vec<String> {
    const VALUED: [&str; 13] = [
        "-H",
        "-d",
        "-o",
        "-D",
        "-w",
        "-A",
        "-X",
        "-m",
        "-u",
        "-e",
        "--max-redirs",
        "--proto-redir",
        "--data",
    ];
    let mut urls = Vec::new();
    let mut words = words.iter();
    while let Some(w) = words.next() {
        if VALUED.contains(&w.as_str()) {
            words.next();
        } else if !w.starts_with('-') {
            urls.push(w.clone());
        }
    }
    urls
}

/// The peak of `run` over a store of 1,000,000 values (`asns` ASNs of `per` prefixes
/// each), less that of a run of one ASN of 1,000 (the same code, so only what grows
/// with the store counts): first into an empty store, then again.
fn peak_above_small_run(asns: u32, per: u32) -> [u64; 2] {
    let server = FakeServer::start(move |rq| {
        let asn: u32 = rq
            .url
            .split(['?', '&'])
            .find_map(|kv| kv.strip_prefix("resource=AS"))
            .and_then(|n| n.parse().ok())
            .unwrap_or(1);
        let mut body = String::from(r#"{"status":"ok","data":{"prefixes":["#);
        let (count, first) = if asn == 64_000 {
            (1_000, 0)
        } else {
            (per, (asn - 1) * per)
        };
        for i in 0..count {
            let n = first + i;
            let sep = if i == 0 { "" } else { "," };
            let (a, b, c) = (11 + (n >> 16), (n >> 8) & 255, n & 255);
            body.push_str(&format!(r#"{sep}{{"prefix":"{a}.{b}.{c}.0/24"}}"#));
        }
        body.push_str("]}}");
        Reply::json(200, body.into_bytes())
    });
    let dir = |asns: Vec<u32>| {
        let t = TestDir::new();
        t.config(&json!({
            "asns": asns.iter().map(u32::to_string).collect::<Vec<_>>(),
            "ripe": {"url": server.url("/data.json"), "timeout_seconds": 60, "retries": 0}
        }));
        t
    };
    let (small, large) = (dir(vec![64_000]), dir((1..=asns).collect()));
    let (code, base, log) = run_peak(&small);
    assert_eq!(code, 0, "{log}");
    ["first", "second"].map(|round| {
        let (code, peak, log) = run_peak(&large);
        eprintln!("{round} run of {asns} x {per} prefixes: VmHWM {peak} KiB, one ASN of 1,000: {base} KiB");
        assert_eq!(code, 0, "{log}");
        assert!(log.contains(&format!("{asns} sources collected")), "{log}");
        peak - base.min(peak)
    })
}

#[test]
fn a_run_of_a_million_values_in_many_sources_holds_a_few_answers() {
    // Before (issue 38, item 15) every answer waited for the end of the fetching, 18
    // bytes a prefix: 25 MiB at 1,000,000 (release build; 20 MiB above the small run).
    // Now each is stored as it arrives: 2 MiB above (debug; docs/performance.md).
    for (round, above) in peak_above_small_run(1_000, 1_000).into_iter().enumerate() {
        assert!(
            above < 6 * 1024,
            "run {round}: {above} KiB above one small ASN"
        );
    }
}

#[test]
fn a_run_of_a_million_values_in_the_largest_sources_reads_one_at_a_time() {
    // Four answers of 250,000 read at the same time held 18 MB (20 MiB above the
    // small run, release build; a first run still did with the budget of values in
    // flight, which counts what is stored). Now one grows while the others wait
    // (`collect::budget`), in one glibc heap: 8.9 MiB above (debug).
    for (round, above) in peak_above_small_run(4, 250_000).into_iter().enumerate() {
        assert!(
            above < 12 * 1024,
            "run {round}: {above} KiB above one small ASN"
        );
    }
}
