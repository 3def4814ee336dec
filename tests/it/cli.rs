//! The command line as a user meets it: exit codes and messages of the source
//! commands, and pipes closed by their reader.

use std::io::Read;
use std::process::Stdio;
use std::time::Duration;

use crate::common::TestDir;
use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;

/// `asn remove 999 --purge` for a source neither configured nor stored is "not
/// found", as `DELETE /asns/999?purge=true` (404), not a success that deleted 0.
#[test]
fn purging_an_unknown_source_is_an_error_naming_it() {
    let t = TestDir::new();
    t.config(&serde_json::json!({"asns": ["62041"]}));
    for args in [
        &["asn", "remove", "999", "--purge"][..],
        &["fqdn", "remove", "nowhere.example", "--purge"],
    ] {
        let out = t.run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("AS999") || err.contains("nowhere.example"),
            "{args:?}: {err}"
        );
    }
    // A source that is not configured but still stored is purged (and then gone).
    db::open(&t.paths())
        .unwrap()
        .merge_source(Kind::Asn, "7", &["10.0.0.0/8".into()], 1_000_000, 0)
        .unwrap();
    assert!(t.run(&["asn", "remove", "7", "--purge"]).status.success());
    assert_eq!(
        t.run(&["asn", "remove", "7", "--purge"]).status.code(),
        Some(1)
    );
}

/// Runs the binary with its standard output read by nothing (the reader closed it
/// at once), as in `export | head -0`.
fn with_closed_stdout(t: &TestDir, args: &[&str]) -> (Option<i32>, String) {
    let mut child = t
        .cmd()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = crate::common::wait_child(&mut child, Duration::from_secs(20));
    (status, err)
}

/// A closed standard output ends a command quietly with exit 0 (`asn list | head -0`,
/// `export | head -1`): no "Broken pipe" error, no panic.
#[test]
fn closed_stdout_ends_quietly() {
    let t = TestDir::new();
    t.config(&serde_json::json!({"asns": ["62041"], "fqdns": ["example.com"]}));
    let values: Vec<String> = (0..20_000u32)
        .map(|i| format!("10.{}.{}.0/24", i >> 8, i & 255))
        .collect();
    db::open(&t.paths())
        .unwrap()
        .merge_source(Kind::Asn, "62041", &values, 1_000_000, 0)
        .unwrap();
    for args in [
        &["asn", "list"][..],
        &["export"],
        &["export", "--format", "nft"],
        &["status"],
        &["--help"],
        &["--version"],
    ] {
        let (code, err) = with_closed_stdout(&t, args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(!err.to_lowercase().contains("pipe"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// `render` writes every configured output from the stored data, without collecting
/// (the firewall include runs it after `fw4 flush`); a failed output is exit 1.
#[cfg(feature = "collect")]
#[test]
fn render_writes_the_outputs_now() {
    let t = TestDir::new();
    let out = t.file("list.txt");
    let bad = t.file("missing-dir/list.nft");
    t.config(&serde_json::json!({"asns": ["62041"],
        "outputs": [{"path": out, "format": "text"}]}));
    db::open(&t.paths())
        .unwrap()
        .merge_source(Kind::Asn, "62041", &["10.0.0.0/8".into()], 1_000_000, 0)
        .unwrap();
    let r = t.run(&["render"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "10.0.0.0/8\n");
    t.config(&serde_json::json!({"asns": ["62041"],
        "outputs": [{"path": out, "format": "text"},
                    {"path": bad, "format": "nft", "command": "true"}]}));
    let r = t.run(&["render"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(err.contains("missing-dir"), "{err}");
}
