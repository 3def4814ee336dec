//! What a new user met (issue 38, item 13): ctrl-C of `run` says what was not
//! stored, `serve` on every interface without `api.token` warns, and messages carry
//! no runs of spaces (a string continued over lines without `\`).

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::common::*;

#[test]
fn ctrl_c_of_run_says_nothing_was_stored() {
    let up = FakeServer::start(|_| {
        Reply::json(200, ripe_body(&["20.1.2.0/24".into()])).delayed(Duration::from_secs(20))
    });
    let t = TestDir::new();
    t.config(&json!({"asns": ["64500"], "ripe": {"url": up.url("/x"), "retries": 0}}));
    let mut run = t.spawn(&["run"]);
    assert!(
        eventually(Duration::from_secs(10), || !up.requests().is_empty()),
        "{}",
        run.stderr()
    );
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(run.pid() as i32, libc::SIGINT) };
    let status = run
        .wait_exit(Duration::from_secs(10))
        .expect("run did not stop");
    let err = run.stderr();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        err.contains("interrupted while fetching: nothing of this run was stored"),
        "{err}"
    );
    let db = ripe_cidr_collector::db::open(&t.paths()).unwrap();
    assert_eq!(db.counts().unwrap(), (0, 0));
}

/// `serve` on `0.0.0.0` inside a network namespace of its own (only a loopback
/// there, so nothing is reachable from outside the test).
fn serve_everywhere(t: &TestDir) -> Option<String> {
    let port = free_port().to_string();
    let child = Command::new("unshare")
        .args(["-n", "--"])
        .arg(bin())
        .arg("--data-dir")
        .arg(t.path())
        .args(["serve", "--listen", &format!("0.0.0.0:{port}")])
        .env_remove("RIPE_DB")
        .env_remove("RIPE_DATA_DIR")
        .env_remove("RIPE_SNAPSHOT")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let mut serve = Proc::drained(child, None);
    let up = eventually(Duration::from_secs(10), || {
        serve.stderr().contains("serving on") || serve.0.try_wait().unwrap().is_some()
    });
    let err = serve.stderr();
    if !up || !err.contains("serving on") {
        cannot_run(&format!("unshare -n needs root: {err}"));
        return None;
    }
    Some(err)
}

#[test]
fn serving_every_interface_without_a_token_warns() {
    let t = TestDir::new();
    t.config(&json!({"asns": ["64500"]}));
    let Some(err) = serve_everywhere(&t) else {
        return;
    };
    assert!(
        err.contains("(every interface) without api.token: anyone who reaches this port"),
        "{err}"
    );
    t.config(&json!({"asns": ["64500"], "api": {"token": "s3cret-token-of-some-length"}}));
    let err = serve_everywhere(&t).unwrap();
    assert!(!err.contains("without api.token"), "{err}");
    // The default, 127.0.0.1, says nothing.
    let (mut serve, _) = t.spawn_listening(&["serve"]);
    assert!(!serve.stderr().contains("without api.token"));
}

#[test]
fn route_format_messages_have_no_runs_of_spaces() {
    let t = TestDir::new();
    t.config(&json!({}));
    for args in [
        &["export", "--format", "bird"][..],
        &["export", "--format", "bird", "--via", "eth0"],
        &["export", "--format", "keenetic"],
    ] {
        let o = t.run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        let first = err.lines().next().unwrap_or_default();
        assert!(first.contains("format "), "{args:?}: {err}");
        assert!(!first.contains("  "), "{args:?}: {first}");
    }
}
