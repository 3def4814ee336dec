//! The daemon through the real binary: permanent failures are not retried early,
//! SIGUSR1 collects at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::common::*;

const AS62041: &str = include_str!("../fixtures/ripestat/AS62041.json");
const ERROR: &str = include_str!("../fixtures/ripestat/error.json");

/// Requests the fake RIPEstat saw for `asn`.
fn calls(ripe: &FakeServer, asn: &str) -> usize {
    ripe.requests()
        .iter()
        .filter(|s| resource_of(&s.url).as_deref() == Some(asn) && !is_name_lookup(&s.url))
        .count()
}

/// A daemon config for `asns` on `ripe`: hourly runs, first retry after 1 s, no
/// retries inside a fetch (so each early retry is one request).
fn config(t: &TestDir, ripe: &FakeServer, asns: &[&str]) {
    t.config(&json!({
        "asns": asns,
        "ripe": {"url": ripe.url("/data/announced-prefixes/data.json"), "timeout_seconds": 2,
                 "retries": 0, "sourceapp": "rcc-test"},
        "schedule": {"interval_seconds": 3600, "retry_seconds": 1}
    }));
}

fn stop(mut d: Proc) -> String {
    let ok = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(d.pid().to_string())
        .status()
        .unwrap();
    assert!(ok.success());
    d.wait_exit(Duration::from_secs(6)).expect("daemon stopped");
    d.stderr()
}

#[test]
fn daemon_retries_transient_failures_early_but_not_permanent_ones() {
    // 64500 is down (503, may pass), 64503 is rejected (400, will not).
    let ripe = FakeServer::start(|rq| match resource_of(&rq.url).as_deref() {
        Some("64500") => Reply::json(503, "down"),
        Some("64503") => Reply::json(400, ERROR),
        _ => Reply::json(404, "{}"),
    });
    let t = TestDir::new();
    config(&t, &ripe, &["64500", "64503"]);
    let d = t.spawn(&["daemon"]);
    // Tried at start, after 1 s and after 2 more.
    assert!(eventually(Duration::from_secs(15), || calls(
        &ripe, "64500"
    ) >= 3));
    assert_eq!(calls(&ripe, "64503"), 1, "a 400 is not retried early");
    let log = stop(d);
    assert!(
        log.contains("AS64503") && log.contains("next full run"),
        "the log says why: {log}"
    );
}

#[test]
fn daemon_collects_every_source_on_sigusr1() {
    let served = Arc::new(AtomicUsize::new(0));
    let s = served.clone();
    let ripe = FakeServer::start(move |rq| {
        if is_name_lookup(&rq.url) {
            return Reply::json(404, "{}");
        }
        s.fetch_add(1, Ordering::SeqCst);
        Reply::json(200, AS62041)
    });
    let t = TestDir::new();
    config(&t, &ripe, &["62041"]);
    let d = t.spawn(&["daemon"]);
    // The run at start (after the handlers are installed) is done...
    assert!(eventually(Duration::from_secs(10), || {
        std::fs::read(t.file("status.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|st| st["last_success"].is_string())
    }));
    assert_eq!(calls(&ripe, "62041"), 1);
    // ...and SIGUSR1 (the WAN came up) collects again at once, hours early.
    let ok = std::process::Command::new("kill")
        .arg("-USR1")
        .arg(d.pid().to_string())
        .status()
        .unwrap();
    assert!(ok.success());
    assert!(eventually(Duration::from_secs(10), || calls(
        &ripe, "62041"
    ) == 2));
    assert!(served.load(Ordering::SeqCst) >= 2);
    let log = stop(d);
    assert!(log.contains("collecting every source now"), "{log}");
}

/// One daemon per data directory: a second one refuses to start (exit 1, naming the
/// first), and starts once the first has stopped.
#[test]
fn second_daemon_on_the_same_data_directory_refuses() {
    let ripe = FakeServer::start(|_| Reply::json(200, AS62041));
    let t = TestDir::new();
    config(&t, &ripe, &["62041"]);
    let mut first = t.spawn(&["daemon"]);
    assert!(
        eventually(Duration::from_secs(10), || first
            .stderr()
            .contains("daemon started")),
        "{}",
        first.stderr()
    );
    let second = t.run(&["daemon"]);
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{err}");
    assert!(err.contains("another daemon"), "{err}");
    stop(first);
    let mut third = t.spawn(&["daemon"]);
    assert!(
        eventually(Duration::from_secs(10), || third
            .stderr()
            .contains("daemon started")),
        "{}",
        third.stderr()
    );
}

/// `collect-now` signals the daemon of the data directory (as OpenWrt's interface
/// trigger does); without a daemon it is an error saying so.
#[test]
fn collect_now_makes_the_daemon_collect() {
    let ripe = FakeServer::start(|_| Reply::json(200, AS62041));
    let t = TestDir::new();
    config(&t, &ripe, &["62041"]);
    let none = t.run(&["collect-now"]);
    assert_eq!(none.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no daemon runs"));
    let d = t.spawn(&["daemon"]);
    assert!(eventually(Duration::from_secs(10), || {
        std::fs::read(t.file("status.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|st| st["last_success"].is_string() && st["pid"].is_number())
    }));
    assert_eq!(calls(&ripe, "62041"), 1);
    let out = t.run(&["collect-now"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(eventually(Duration::from_secs(10), || calls(
        &ripe, "62041"
    ) == 2));
    stop(d);
    assert_eq!(t.run(&["collect-now"]).status.code(), Some(1));
}

/// `collect-now` signals only the process that holds the daemon's lock: a pid in
/// `status.json` that does not hold it (an old or forged file) is refused, never
/// signalled (SIGUSR1 would end it).
#[test]
fn collect_now_signals_only_the_lock_holder() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;
    let t = TestDir::new();
    // The lock held by another process (`flock` and its `sleep`), as a daemon holds it.
    let lock = t.file(".daemon.lock");
    let mut holder = Command::new("flock")
        .arg("-x")
        .arg(&lock)
        .args(["sleep", "60"])
        .spawn()
        .expect("flock (util-linux)");
    let mut bystander = Command::new("sleep").arg("60").spawn().unwrap();
    std::fs::write(
        t.file("status.json"),
        format!(r#"{{"pid": {}}}"#, bystander.id()),
    )
    .unwrap();
    assert!(eventually(Duration::from_secs(10), || {
        let out = t.run(&["collect-now"]);
        String::from_utf8_lossy(&out.stderr).contains("does not hold")
    }));
    let out = t.run(&["collect-now"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("pid {}", bystander.id())), "{err}");
    // Had it been signalled, its SIGUSR1 would be pending before our SIGTERM, and
    // lower signals are delivered first: it ends by SIGTERM only if it was spared.
    bystander.kill().unwrap(); // SIGKILL: delivered first whatever is pending
    let _ = bystander.wait();
    let mut spared = Command::new("sleep").arg("60").spawn().unwrap();
    std::fs::write(
        t.file("status.json"),
        format!(r#"{{"pid": {}}}"#, spared.id()),
    )
    .unwrap();
    assert_eq!(t.run(&["collect-now"]).status.code(), Some(1));
    Command::new("kill")
        .args(["-TERM", &spared.id().to_string()])
        .status()
        .unwrap();
    let status = spared.wait().unwrap();
    assert_eq!(
        status.signal(),
        Some(15),
        "the bystander got another signal first"
    );
    // Forged pids that kill(2) reads as every process (-1) or our group (0).
    for pid in ["4294967295", "0"] {
        std::fs::write(t.file("status.json"), format!(r#"{{"pid": {pid}}}"#)).unwrap();
        let out = t.run(&["collect-now"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("not signalling"), "{err}");
    }
    holder.kill().unwrap();
    let _ = holder.wait();
}

/// `run` beside the daemon of the same data directory would collect twice and fight
/// over `status.json`: it exits 1 naming the daemon's pid.
#[test]
fn run_refuses_while_the_daemon_runs() {
    let ripe = FakeServer::start(|_| Reply::json(200, AS62041));
    let t = TestDir::new();
    config(&t, &ripe, &["62041"]);
    let d = t.spawn(&["daemon"]);
    assert!(eventually(Duration::from_secs(10), || {
        std::fs::read(t.file("status.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|st| st["pid"].is_number())
    }));
    let out = t.run(&["run"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("(pid {})", d.pid())), "{err}");
    stop(d);
    let out = t.run(&["run"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An ASN added while the daemon was stopped (`asn add` writes config.json only) is
/// collected as soon as the daemon starts, hours before the next full run; the ASN
/// collected before is not fetched again.
#[test]
fn a_source_added_while_stopped_is_collected_at_start() {
    let ripe = FakeServer::start(|_| Reply::json(200, AS62041));
    let t = TestDir::new();
    config(&t, &ripe, &["62041"]);
    assert_eq!(t.run(&["run"]).status.code(), Some(0));
    assert_eq!(calls(&ripe, "62041"), 1);
    let added = t.run(&["asn", "add", "64500"]);
    assert_eq!(added.status.code(), Some(0));
    let d = t.spawn(&["daemon"]);
    assert!(
        eventually(Duration::from_secs(10), || calls(&ripe, "64500") == 1),
        "the new ASN was not collected at start"
    );
    let listed = t.run(&["asn", "list"]);
    let listed = String::from_utf8_lossy(&listed.stdout).to_string();
    assert!(
        eventually(Duration::from_secs(5), || String::from_utf8_lossy(
            &t.run(&["asn", "list"]).stdout
        )
        .lines()
        .any(|l| l.starts_with("64500\t") && !l.starts_with("64500\t0\t"))),
        "{listed}"
    );
    assert_eq!(calls(&ripe, "62041"), 1, "the full run is not due");
    let log = stop(d);
    assert!(log.contains("never collected"), "{log}");
}

/// `api.listen` in config.json is `serve`'s: a daemon started without `--listen`
/// serves no API and says so; `--help` does not claim otherwise.
#[test]
fn daemon_without_listen_says_api_listen_is_not_served() {
    let ripe = FakeServer::start(|_| Reply::json(200, AS62041));
    let t = TestDir::new();
    let mut cfg = json!({
        "asns": ["62041"],
        "ripe": {"url": ripe.url("/data.json"), "retries": 0},
        "schedule": {"interval_seconds": 3600}
    });
    t.config(&cfg);
    let line = "is not served: the daemon serves the API only with --listen";
    let d = t.spawn(&["daemon"]);
    assert!(!stop_when_started(d).contains(line), "api.listen unset");
    cfg["api"] = json!({"listen": "127.0.0.1:9"});
    t.config(&cfg);
    let log = stop_when_started(t.spawn(&["daemon"]));
    assert!(
        log.contains(&format!("api.listen 127.0.0.1:9 {line}")),
        "{log}"
    );
    let help = String::from_utf8_lossy(&t.run(&["daemon", "--help"]).stdout).into_owned();
    assert!(help.contains("daemon: no API without it"), "{help}");
}

fn stop_when_started(mut d: Proc) -> String {
    assert!(
        eventually(Duration::from_secs(10), || d
            .stderr()
            .contains("daemon started")),
        "{}",
        d.stderr()
    );
    stop(d)
}

/// A DNS failure other than NXDOMAIN (a SERVFAIL: the WAN down at boot, say) is
/// transient: retried early, while an NXDOMAIN waits for the next full run.
#[test]
fn daemon_retries_a_servfail_early_but_not_an_nxdomain() {
    let doh = FakeServer::start(|rq| {
        let status = if rq.url.contains("gone.example") {
            3
        } else {
            2
        };
        let mut r = Reply::json(200, format!("{{\"Status\":{status}}}"));
        r.headers = vec![("Content-Type".into(), "application/dns-json".into())];
        r
    });
    let t = TestDir::new();
    t.config(&json!({
        "fqdns": ["down.example", "gone.example"],
        "dns": {"resolver": "doh", "doh_url": doh.url("/dns-query"), "timeout_seconds": 2},
        "schedule": {"interval_seconds": 3600, "retry_seconds": 1}
    }));
    let asked = |name: &str| {
        doh.requests()
            .iter()
            .filter(|r| r.url.contains(name))
            .count()
    };
    let d = t.spawn(&["daemon"]);
    assert!(
        eventually(Duration::from_secs(15), || asked("down.example") >= 6),
        "a SERVFAIL is retried early: {}",
        asked("down.example")
    );
    let gone = asked("gone.example");
    assert!(gone <= 2, "an NXDOMAIN is not retried early: {gone}");
    stop(d);
}
