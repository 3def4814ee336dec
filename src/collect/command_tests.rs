//! Tests of `fetch.command`: curl against a fake upstream on 127.0.0.1, and scripts
//! that misbehave (endless output, a hang, a failure after a good answer).

use std::path::Path;
use std::time::{Duration, Instant};

use super::super::fetch::fake::{FakeServer, Reply};
use super::super::fetcher::{from_io, Fetcher, Request, Transport};
use super::super::ripe::RipeClient;
use super::*;
use crate::config::RipeConfig;

const FULL: &str = include_str!("../../tests/fixtures/ripestat/AS62041.json");

fn ripe(url: &str, argv: &[&str], seconds: u64) -> RipeClient {
    let cfg = RipeConfig {
        url: url.into(),
        min_peers_seeing: None,
        sourceapp: "test-app".into(),
        timeout_seconds: seconds,
        retries: 0,
    };
    RipeClient::new(
        &cfg,
        &Transport::command(argv.iter().map(|a| a.to_string()).collect()),
    )
}

/// `sh -c SCRIPT sh {url}`: the script gets the URL as `$1`.
fn script(s: &str) -> Vec<&str> {
    vec!["sh", "-c", s, "sh", "{url}"]
}

fn curl() -> Option<&'static str> {
    Path::new("/usr/bin/curl")
        .exists()
        .then_some("/usr/bin/curl")
}

#[test]
fn curl_fetches_through_the_command() {
    let Some(curl) = curl() else {
        // curl is in .ci/run's install list: CI always has it.
        assert!(std::env::var("CI").is_err(), "curl is missing under CI");
        eprintln!("skipped: curl is not installed");
        return;
    };
    let s = FakeServer::start(vec![Reply::new(200, FULL)]);
    let argv = [curl, "-sSf", "-A", "{user_agent}", "{url}"];
    let f = ripe(&format!("{}/data.json", s.base), &argv, 5)
        .fetch("62041")
        .unwrap();
    assert_eq!(f.values.len(), 12);
    let seen = s.seen();
    assert_eq!(
        seen[0].url,
        "/data.json?resource=AS62041&sourceapp=test-app"
    );
    assert_eq!(
        seen[0].user_agent.as_deref(),
        Some(crate::collect::USER_AGENT)
    );
    // curl -f exits 22 on a 404: a failed source, named by the command.
    let s = FakeServer::start(vec![Reply::new(404, "nope")]);
    let e = ripe(&s.base, &argv, 5).fetch("62041").unwrap_err();
    assert!(
        matches!(&e, SourceError::Command { message, .. } if message.contains("status 22")),
        "{e:?}"
    );
}

#[test]
fn endless_output_is_cut_at_the_limit() {
    let started = Instant::now();
    let mut c = ripe("http://127.0.0.1:9/", &script("yes '{}, {}, {}, {}'"), 20);
    c.body_limit = 1 << 20;
    let e = c.fetch("62041").unwrap_err();
    // The answer starts `{}` then `,`: not the RIPEstat shape, or too large.
    assert!(
        matches!(e, SourceError::TooLarge { .. } | SourceError::BadBody(_)),
        "{e:?}"
    );
    let fetcher = Fetcher::new(
        &Transport::command(script("yes").iter().map(|a| a.to_string()).collect()),
        Duration::from_secs(20),
    );
    let rq = Request {
        url: "http://127.0.0.1:9/",
        query: &[],
        accept: "*/*",
        limit: 1 << 20,
    };
    let mut total = 0;
    let e = fetcher
        .get(&rq, |answer| {
            let mut buf = [0; 8192];
            loop {
                match answer.body.read(&mut buf) {
                    Ok(0) => return Ok(total),
                    Ok(n) => total += n,
                    Err(e) => return Err(from_io(e)),
                }
            }
        })
        .unwrap_err();
    assert_eq!(e, SourceError::TooLarge { limit: 1 << 20 });
    assert!(total <= 1 << 20, "{total}");
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
fn a_hang_times_out_and_its_group_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    // The script starts a child that would outlive it, then hangs.
    let body = format!("sleep 60 & echo $! > {}; wait", pid_file.display());
    let started = Instant::now();
    let e = ripe("http://127.0.0.1:9/", &script(&body), 1)
        .fetch("62041")
        .unwrap_err();
    assert_eq!(e, SourceError::Timeout { seconds: 1 });
    assert!(started.elapsed() < Duration::from_secs(5));
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let stat = Path::new("/proc").join(pid.trim()).join("stat");
    // Killed: gone, or a zombie until its parent (the killed shell's reaper) is done.
    // SIGKILL is delivered asynchronously: on a loaded machine the child may take a
    // moment to die, so wait for it (a child that was never signalled lives 60 s).
    let alive = || {
        std::fs::read_to_string(&stat)
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false)
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(), "the hanging command's child {pid} still runs");
}

#[test]
fn a_failure_after_a_good_answer_fails_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.json");
    std::fs::write(&body, FULL).unwrap();
    let ok = format!("cat {}", body.display());
    let f = ripe("http://127.0.0.1:9/", &script(&ok), 5)
        .fetch("62041")
        .unwrap();
    assert_eq!(f.values.len(), 12);
    let failing = format!(
        "cat {}; echo 'TLS handshake failed' >&2; exit 4",
        body.display()
    );
    let e = ripe("http://127.0.0.1:9/", &script(&failing), 5)
        .fetch("62041")
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "fetch command sh: exited with status 4: \"TLS handshake failed\""
    );
    assert!(e.is_transient());
    let e = ripe("http://127.0.0.1:9/", &script("kill -9 $$"), 5)
        .fetch("62041")
        .unwrap_err();
    assert!(e.to_string().contains("killed by signal 9"), "{e}");
}

#[test]
fn a_missing_program_is_named() {
    let e = ripe("http://127.0.0.1:9/", &["/nonexistent/fetch", "{url}"], 5)
        .fetch("62041")
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("fetch command /nonexistent/fetch: cannot be started"),
        "{e}"
    );
    assert!(std::error::Error::source(&e).is_some(), "the cause is kept");
}

#[test]
fn placeholders_are_replaced_inside_arguments() {
    let argv: Vec<String> = [
        "sh",
        "-c",
        "printf '%s|%s' \"$1\" \"$2\"",
        "sh",
        "--url={url}",
        "ua={user_agent}",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    let fetcher = Fetcher::new(&Transport::command(argv), Duration::from_secs(5));
    let rq = Request {
        url: "https://stat.ripe.net/data/x.json?a=1",
        query: &[("resource", "AS1")],
        accept: "*/*",
        limit: 1000,
    };
    let got = fetcher
        .get(&rq, |answer| {
            let mut s = String::new();
            answer.body.read_to_string(&mut s).map_err(from_io)?;
            Ok(s)
        })
        .unwrap();
    assert_eq!(
        got,
        format!(
            "--url=https://stat.ripe.net/data/x.json?a=1&resource=AS1|ua={}",
            crate::collect::USER_AGENT
        )
    );
}
