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

/// After a damaged database was moved aside, the fresh one is empty: `export` and
/// `render` (which the firewall include runs) refuse to hand out that empty list, and
/// leave the last rendered file as it was, until a run has stored values again.
#[test]
fn empty_store_after_damage_is_an_error_until_a_run_fills_it() {
    use crate::common::{ripe_body, FakeServer, Reply};
    let ripe = FakeServer::start(|_| Reply::json(200, ripe_body(&["192.0.2.0/24".into()])));
    let t = TestDir::new();
    let out = t.file("list.txt");
    t.config(&serde_json::json!({"asns": ["62041"],
        "ripe": {"url": ripe.url("/data/announced-prefixes/data.json"), "retries": 0},
        "outputs": [{"path": out, "format": "text"}]}));
    db::open(&t.paths())
        .unwrap()
        .merge_source(Kind::Asn, "62041", &["10.0.0.0/8".into()], 1_000_000, 0)
        .unwrap();
    assert!(t.run(&["render"]).status.success());
    std::fs::write(t.file("ripe.db"), vec![0x42u8; 8192]).unwrap();
    // The first command to open it finds the damage and moves it aside.
    let first = t.run(&["export"]);
    assert_eq!(first.status.code(), Some(1));
    for args in [&["export"][..], &["export", "--format", "nft"], &["render"]] {
        let r = t.run(args);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("moved aside to"), "{args:?}: {err}");
        assert!(err.contains("ripe.db.corrupt-"), "{args:?}: {err}");
        assert!(r.stdout.is_empty(), "{args:?}");
        // Messages name files and values, never Rust module paths.
        assert!(!err.contains("ripe_cidr_collector::"), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "10.0.0.0/8\n");
    // A run fills it again: both work, with the new list.
    let run = t.run(&["run"]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let export = t.run(&["export"]);
    assert!(export.status.success());
    assert_eq!(String::from_utf8_lossy(&export.stdout), "192.0.2.0/24\n");
    assert!(t.run(&["render"]).status.success());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "192.0.2.0/24\n");
}

/// An empty store that was never damaged (a first start, no sources) exports an
/// empty list.
#[test]
fn empty_store_without_damage_exports_nothing() {
    let t = TestDir::new();
    t.config(&serde_json::json!({"asns": []}));
    let r = t.run(&["export"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(r.stdout.is_empty());
}

/// `lookup` and `changes` print only tab-separated lines on stdout; their notes
/// ("not stored", "no changes since") go to stderr.
#[test]
fn notes_go_to_stderr() {
    let t = TestDir::new();
    t.config(&serde_json::json!({"asns": ["62041"]}));
    db::open(&t.paths())
        .unwrap()
        .merge_source(Kind::Asn, "62041", &["10.0.0.0/8".into()], 1_000_000, 0)
        .unwrap();
    // Nothing stored for it: exit 1 (scripts test membership), the note on stderr.
    let r = t.run(&["lookup", "192.0.2.1"]);
    assert_eq!(r.status.code(), Some(1), "{r:?}");
    assert!(
        r.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&r.stdout)
    );
    assert!(String::from_utf8_lossy(&r.stderr).contains("192.0.2.1: not stored"));
    let r = t.run(&["lookup", "192.0.2.1", "--json"]);
    assert_eq!(r.status.code(), Some(1), "{r:?}");
    assert!(
        String::from_utf8_lossy(&r.stdout).contains("\"matches\":[]"),
        "{r:?}"
    );
    let r = t.run(&["lookup", "10.1.2.3"]);
    assert!(r.status.success(), "{r:?}");
    let stdout = String::from_utf8_lossy(&r.stdout);
    assert!(stdout.starts_with("10.0.0.0/8\tAS62041\t"), "{stdout}");
    assert!(
        stdout.lines().all(|l| l.split('\t').count() == 5),
        "{stdout}"
    );
    let r = t.run(&["changes", "--since", "2100-01-01T00:00:00Z"]);
    assert!(r.status.success());
    assert!(
        r.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&r.stdout)
    );
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("no changes since 2100-01-01T00:00:00Z"),
        "{err}"
    );
}

/// Writers of the outputs take turns (`.outputs.lock`): `render` waits while another
/// holds the lock, as the daemon's first load holds it at boot while the firewall
/// include's `render --load-only` would fill the same sets.
#[cfg(feature = "collect")]
#[test]
fn render_waits_for_another_writer_of_the_outputs() {
    use std::os::fd::AsRawFd;
    let t = TestDir::new();
    let out = t.file("out.txt");
    t.config(&serde_json::json!({"asns": ["1"], "outputs": [{"path": out, "format": "text"}]}));
    {
        let mut d = ripe_cidr_collector::db::open(&t.paths()).unwrap();
        let now = ripe_cidr_collector::util::unix_now();
        d.merge_source(Kind::Asn, "1", &["192.0.2.0/24".into()], now, 7)
            .unwrap();
    }
    let lock = std::fs::File::create(t.file(".outputs.lock")).unwrap();
    // SAFETY: flock on a descriptor `lock` keeps open.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
    let mut render = t.spawn(&["render"]);
    std::thread::sleep(Duration::from_millis(700));
    assert!(!out.exists(), "written while another writer held the lock");
    drop(lock);
    let status = render
        .wait_exit(Duration::from_secs(20))
        .expect("render ended");
    assert!(status.success(), "{}", render.stderr());
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("192.0.2.0/24"));
}
