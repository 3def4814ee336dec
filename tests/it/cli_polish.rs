//! What a new user met (issue 33 item 8): a command's usage error prints that command's
//! usage, usage lines end without spaces, `-v -q` is refused, messages carry no
//! "(os error N)", counts say "1 value", the daemon says "every 6 h" and says nothing
//! about loading outputs it does not have.

use std::time::Duration;

use crate::common::*;

#[test]
fn a_usage_error_prints_that_commands_usage() {
    let t = TestDir::new();
    for (args, usage) in [
        (
            &["asn", "add", "ASX"][..],
            "Usage: ripe-cidr-collector asn list [--json] | add ASN...",
        ),
        (
            &["--data-dir", "/x", "export", "--fromat", "nft"],
            "Usage: ripe-cidr-collector export [--type",
        ),
        (
            &["-q", "lookup"],
            "Usage: ripe-cidr-collector lookup ADDR|PREFIX",
        ),
        (&["group", "add"], "Usage: ripe-cidr-collector group list"),
    ] {
        let r = t.run(args);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(usage), "{args:?}: {err}");
        assert!(
            !err.contains("COMMAND\n"),
            "{args:?} printed the global usage: {err}"
        );
    }
    // Without a command, the program's usage.
    let r = t.run(&["--bogus"]);
    assert!(
        String::from_utf8_lossy(&r.stderr).contains("[-v | -q] COMMAND"),
        "{r:?}"
    );
}

#[test]
fn help_lines_have_no_trailing_spaces_and_v_q_contradict() {
    let t = TestDir::new();
    let names = [
        "run",
        "check",
        "snapshot",
        "manpage",
        "export",
        "asn",
        "group",
        "collect-now",
    ];
    for cmd in names
        .iter()
        .map(|c| vec![*c, "--help"])
        .chain([vec!["--help"]])
    {
        let r = t.run(&cmd);
        for line in String::from_utf8_lossy(&r.stdout).lines() {
            assert_eq!(line, line.trim_end(), "{cmd:?}: trailing space in {line:?}");
        }
    }
    let r = t.run(&["-v", "-q", "status"]);
    assert_eq!(r.status.code(), Some(2), "{r:?}");
    assert!(String::from_utf8_lossy(&r.stderr).contains("-v (--verbose) and -q (--quiet)"));
}

#[test]
fn messages_carry_no_os_error_numbers() {
    let t = TestDir::new();
    std::fs::write(t.file("plain"), "").unwrap();
    let dir = t.file("plain");
    let r = t.run(&["--data-dir", dir.to_str().unwrap(), "asn", "add", "AS1"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(err.contains("plain") && !err.contains("os error"), "{err}");
}

#[cfg(feature = "collect")]
#[test]
fn logs_say_one_value_and_hours() {
    use crate::upstream::{FakeServer, Reply};
    let ripe = FakeServer::start(|_| Reply::json(200, ripe_body(&["193.0.0.0/21".into()])));
    let t = TestDir::new();
    t.config(&serde_json::json!({
        "asns": ["64500"],
        "ripe": {"url": ripe.url("/data/announced-prefixes/data.json"), "retries": 0}}));
    let r = t.run(&["run"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("AS64500: 1 value (1 new, 0 expired)"), "{err}");
    assert!(err.contains("run finished: 1 source collected"), "{err}");
    // A daemon with the default interval and no outputs.
    let mut d = t.spawn(&["daemon"]);
    assert!(
        eventually(Duration::from_secs(10), || d
            .stderr()
            .contains("collecting every")),
        "{}",
        d.stderr()
    );
    let log = d.stderr();
    assert!(log.contains("collecting every 6 h"), "{log}");
    assert!(
        !log.contains("loading the outputs"),
        "no outputs to load: {log}"
    );
}

/// A fetch that takes long is mentioned once while it runs (not one line per value).
#[cfg(feature = "collect")]
#[test]
fn a_slow_fetch_is_mentioned_while_it_runs() {
    use crate::upstream::{FakeServer, Reply};
    let ripe = FakeServer::start(|rq| {
        if resource_of(&rq.url).as_deref() == Some("64500") {
            std::thread::sleep(Duration::from_secs(7));
        }
        Reply::json(200, ripe_body(&["193.0.0.0/21".into()]))
    });
    let t = TestDir::new();
    t.config(&serde_json::json!({
        "asns": ["64500", "64501"],
        "ripe": {"url": ripe.url("/data/announced-prefixes/data.json"), "retries": 0}}));
    let r = t.run(&["run"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    assert_eq!(err.matches("still fetching").count(), 1, "{err}");
    let slow = err
        .find("AS64500: still fetching after 5 s")
        .expect("mentioned");
    assert!(
        slow < err.find("AS64500: 1 value").unwrap(),
        "while it runs: {err}"
    );
}
