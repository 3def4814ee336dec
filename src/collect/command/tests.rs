//! Tests of `fetch.command`: curl against a fake upstream on 127.0.0.1, and scripts
//! that misbehave (endless output, a hang, a failure after a good answer).

use std::path::Path;
use std::time::{Duration, Instant};

use super::super::fetch::fake::{FakeServer, Reply};
use super::super::fetcher::{from_io, Fetcher, Request, Transport};
use super::super::ripe::RipeClient;
use super::*;
use crate::config::RipeConfig;

const FULL: &str = include_str!("../../../tests/fixtures/ripestat/AS62041.json");

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
    // Not a program whose exit statuses are known: only said, and tried again.
    assert_eq!(e.to_string(), "fetch command sh: exited with status 4");
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

/// A stand-in for uclient-fetch in `dir`, saying `said` on standard error and
/// exiting with `code`, as the real one does (uclient-fetch.c): each run is counted
/// in `dir/runs`.
fn fake_uclient_fetch(dir: &Path, said: &str, code: i32) -> String {
    let (text, path) = (dir.join("script"), dir.join("uclient-fetch"));
    let body = format!(
        "#!/bin/sh\necho >> {}/runs\nprintf '{said}' >&2\nexit {code}\n",
        dir.display()
    );
    std::fs::write(&text, body).unwrap();
    // Copied by another process: a file this one had open for writing could still be
    // open in a child another test is forking, and exec would fail (ETXTBSY).
    let installed = std::process::Command::new("install")
        .args(["-m", "755"])
        .arg(&text)
        .arg(&path)
        .status()
        .unwrap();
    assert!(installed.success());
    path.display().to_string()
}

#[test]
fn uclient_fetch_failures_are_classified_like_the_builtin_client() {
    // What the real uclient-fetch prints and exits with (uclient-fetch.c): an HTTP
    // status other than 200/204/206 prints "HTTP error N" (header_done_cb, not with
    // -q) and exits 8; a name that does not resolve or a connect refused at once
    // makes uclient_connect fail with UCLIENT_ERROR_CONNECT (1), printed with
    // strerror even with -q, exit 4; handle_uclient_error prints "Connection error:
    // ..." and exits 4 (connect, timeout) or 5 (certificate); a failed handshake
    // logs "SSL error: ..." first.
    let progress = "Downloading \\047http://127.0.0.1:9/x\\047\\nConnecting to 127.0.0.1:9\\n";
    let cases = [
        (
            format!("{progress}HTTP error 404\\n"),
            8,
            "HTTP status 404",
            false,
            1,
        ),
        (
            format!("{progress}HTTP error 503\\n"),
            8,
            "HTTP status 503",
            true,
            3,
        ),
        (String::new(), 8, "HTTP error, status not printed", true, 3),
        (
            "Failed to send request: Operation not permitted\\n".into(),
            4,
            "connection failed",
            true,
            3,
        ),
        (
            format!("{progress}Connection error: Connection timed out\\n"),
            4,
            "timed out",
            true,
            3,
        ),
        (
            format!("{progress}Connection error: Invalid SSL certificate\\n"),
            5,
            "TLS failed",
            true,
            3,
        ),
        (
            "SSL error: handshake failed\\nConnection error: Connection failed\\n".into(),
            4,
            "TLS failed",
            true,
            3,
        ),
    ];
    for (said, code, kind, transient, runs) in cases {
        let dir = tempfile::tempdir().unwrap();
        let program = fake_uclient_fetch(dir.path(), &said, code);
        let mut c = ripe("http://127.0.0.1:9/x", &[&program, "-O", "-", "{url}"], 5);
        (c.retries, c.backoff) = (2, Duration::ZERO);
        let e = c.fetch("62041").unwrap_err();
        let text = e.to_string();
        let want = format!("fetch command {program}: {kind} (exited with status {code}");
        assert!(text.starts_with(&want), "{text}");
        assert_eq!(e.is_transient(), transient, "{text}");
        // A 404 is asked once, as with the built-in client; a 503 is retried.
        let asked = std::fs::read_to_string(dir.path().join("runs")).unwrap();
        assert_eq!(asked.lines().count(), runs, "{text}");
    }
    // The last line of its error output, after any progress, classifies the failure;
    // it is logged, not quoted.
    let dir = tempfile::tempdir().unwrap();
    let program = fake_uclient_fetch(dir.path(), &format!("{progress}HTTP error 404\\n"), 8);
    let e = ripe("http://127.0.0.1:9/x", &[&program, "{url}"], 5)
        .fetch("62041")
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("fetch command {program}: HTTP status 404 (exited with status 8)")
    );
}

#[test]
fn curl_failures_are_classified_like_the_builtin_client() {
    let Some(curl) = curl() else {
        assert!(std::env::var("CI").is_err(), "curl is missing under CI");
        eprintln!("skipped: curl is not installed");
        return;
    };
    let argv = [curl, "-sSf", "-m", "2", "{url}"];
    let check = |base: &str, kind: &str, code: i32, transient: bool| {
        let e = ripe(base, &argv, 20).fetch("62041").unwrap_err();
        let want = format!("fetch command {curl}: {kind} (exited with status {code})");
        assert_eq!(e.to_string(), want);
        assert_eq!(e.is_transient(), transient, "{e}");
    };
    let s = FakeServer::start(vec![Reply::new(404, "nope")]);
    check(&s.base, "HTTP status 404", 22, false);
    let s = FakeServer::start(vec![Reply::new(503, "busy")]);
    check(&s.base, "HTTP status 503", 22, true);
    // Nothing listens on a port just freed: refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    check(
        &format!("http://127.0.0.1:{port}/"),
        "connection failed",
        7,
        true,
    );
    let s = FakeServer::start(vec![Reply::new(200, FULL).delay(Duration::from_secs(10))]);
    check(&s.base, "timed out", 28, true);
    // https to a plain-http server: the handshake fails.
    let s = FakeServer::start(vec![Reply::new(200, FULL)]);
    check(&s.base.replace("http:", "https:"), "TLS failed", 35, true);
}

#[test]
fn a_setsid_grandchild_holding_the_output_is_killed_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    // The grandchild leaves the program's process group and session, keeping its
    // standard output open; the program itself exits at once.
    let body = format!(
        "setsid sh -c 'echo $$ > {}; exec sleep 60' & sleep 0.2",
        pid_file.display()
    );
    let started = Instant::now();
    let e = ripe("http://127.0.0.1:9/", &script(&body), 2)
        .fetch("62041")
        .unwrap_err();
    assert_eq!(e, SourceError::Timeout { seconds: 2 });
    // Generous: the read ends at the 2 s deadline.
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "{:?}",
        started.elapsed()
    );
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let stat = Path::new("/proc").join(pid.trim()).join("stat");
    let alive = || {
        std::fs::read_to_string(&stat)
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false)
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(), "the setsid grandchild {pid} still runs");
}

/// uclient-fetch's line after a redirect it followed (uclient-fetch.c: `Redirected to
/// PATH on HOST`) says where the answer came from: from an internal address for a
/// public URL, it is refused, whether the line comes before a long stretch of
/// progress or is still in the pipe when the program exits; a URL on the router
/// itself may redirect there.
#[test]
fn uclient_fetch_redirects_to_internal_addresses_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (answer, said) = (dir.path().join("answer"), dir.path().join("said"));
    std::fs::write(&answer, FULL).unwrap();
    let progress: String = (0..200).map(|i| format!("\rdata.json {i:>3}%")).collect();
    std::fs::write(
        &said,
        format!(
            "Downloading 'http://192.0.2.1/data.json'\nConnecting to 192.0.2.1:80\n\
             Redirected to /secret.json on 127.0.0.1\nWriting to stdout\n{progress}\n\
             Download completed ({} bytes)\n",
            FULL.len()
        ),
    )
    .unwrap();
    let (a, s) = (answer.display(), said.display());
    for order in [
        format!("cat {s} >&2; cat {a}"),
        format!("cat {a}; cat {s} >&2"),
    ] {
        let argv = script(&order);
        let e = ripe("http://192.0.2.1/data.json", &argv, 10)
            .fetch("62041")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "redirect refused: to an internal address (127.0.0.1) from a URL that is not one",
            "{order}"
        );
        assert!(!e.is_transient());
        let f = ripe("http://127.0.0.1:9/data.json", &argv, 10)
            .fetch("62041")
            .unwrap();
        assert_eq!(f.values.len(), 12, "{order}");
    }
}

/// A failed program's error output may carry the server's text: a redirect's target
/// (uclient-fetch's last line when the redirect fails, wget's `Location:`), busybox
/// wget's HTTP reason phrase, curl's echo of a header. The failure text (served by
/// `GET /status`, shown in LuCI) says what was wrong and never carries it.
#[test]
fn a_failed_redirect_is_not_quoted() {
    let cases = [
        (
            "Failed to redirect to /<img src=x onerror=alert(1)> on evil.example",
            8,
            "",
        ),
        (
            "Redirected to /<img src=x onerror=alert(1)> on evil.example",
            8,
            "",
        ),
        (
            "Location: http://evil.example/<img src=x onerror=alert(1)>",
            8,
            "",
        ),
        (
            "wget: server returned error: HTTP/1.1 404 <img src=x onerror=alert(1)> evil",
            1,
            "HTTP status 404",
        ),
        (
            "curl: (22) <img src=x onerror=alert(1)> from evil.example",
            22,
            "",
        ),
    ];
    for (line, code, kind) in cases {
        let cmd = format!("echo '{line}' >&2; exit {code}");
        let argv = script(&cmd);
        let e = ripe("http://192.0.2.1/data.json", &argv, 10)
            .fetch("62041")
            .unwrap_err()
            .to_string();
        assert!(!e.contains('<') && !e.contains("evil"), "{e}");
        let said = format!("exited with status {code}");
        let want = match kind {
            "" => format!("fetch command sh: {said}"),
            kind => format!("fetch command sh: {kind} ({said})"),
        };
        assert_eq!(e, want);
    }
}
