//! Commands that only read (`export`, `lookup`, `asn list`, `changes`, `status`) open
//! the database read-only: they work for a user who may not write the data directory
//! and on a full disk (the firewall still gets its list while the RAM disk is full),
//! and never migrate: a database that needs it is named, with the command that does.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output};

use serde_json::json;

use crate::common::{bin, cannot_run, ripe_body, FakeServer, Reply, TestDir};

/// A data directory holding one collected prefix of AS64500, written by root.
fn collected() -> TestDir {
    let up = FakeServer::start(|_| Reply::json(200, ripe_body(&["20.1.2.0/24".into()])));
    let t = TestDir::new();
    t.config(&json!({"asns": ["64500"], "ripe": {"url": up.url("/x"), "retries": 0}}));
    let o = t.run(&["run"]);
    assert!(o.status.success(), "{o:?}");
    t
}

fn is_root() -> bool {
    // SAFETY: no arguments.
    unsafe { libc::geteuid() == 0 }
}

/// Runs the binary as `nobody` on `t` with `args`.
fn as_nobody(t: &TestDir, args: &[&str]) -> Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(bin())
        .arg("--data-dir")
        .arg(t.path())
        .args(args)
        .env_remove("RIPE_DB")
        .env_remove("RIPE_DATA_DIR")
        .env_remove("RIPE_SNAPSHOT")
        .output()
        .unwrap()
}

fn says(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn reading_commands_work_for_a_user_who_may_not_write() {
    if !is_root() || Command::new("setpriv").arg("--version").output().is_err() {
        return cannot_run("needs root and setpriv (util-linux) to read as nobody");
    }
    let t = collected();
    // Root's directory and files, readable by everyone, writable by root only (no
    // -wal, no -shm: nobody holds the database).
    fs::set_permissions(t.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let o = as_nobody(&t, &["export"]);
    assert!(o.status.success(), "{}", says(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "20.1.2.0/24\n");
    let o = as_nobody(&t, &["lookup", "20.1.2.3"]);
    assert!(o.status.success(), "{}", says(&o));
    assert!(says(&o).contains("20.1.2.0/24"), "{}", says(&o));
    let o = as_nobody(&t, &["asn", "list"]);
    assert!(o.status.success(), "{}", says(&o));
    assert!(says(&o).starts_with("64500\t1\t"), "{}", says(&o));
    let o = as_nobody(&t, &["changes"]);
    assert!(o.status.success(), "{}", says(&o));
}

#[test]
fn export_works_on_a_full_disk() {
    let t = collected();
    // A tiny tmpfs, in a mount namespace of this test's own, filled to the last block.
    let script = "mkdir m; mount -t tmpfs -o size=256k tmpfs m; cp config.json ripe.db m/; \
         dd if=/dev/zero of=m/fill bs=4k 2>/dev/null || true; \
         $B --data-dir m export >export.out 2>export.err || echo $? >export.code; \
         $B --data-dir m lookup 20.1.2.3 >lookup.out 2>&1 || echo $? >lookup.code; \
         df m >df.out";
    let out = Command::new("unshare")
        .args(["-m", "sh", "-ec", script])
        .current_dir(t.path())
        .env("B", bin())
        .env_remove("RIPE_DATA_DIR")
        .env_remove("RIPE_DB")
        .env_remove("RIPE_SNAPSHOT")
        .output()
        .unwrap();
    if !out.status.success() && !is_root() {
        return cannot_run("unshare -m and mount need root");
    }
    assert!(out.status.success(), "{out:?}");
    let read = |n: &str| fs::read_to_string(t.file(n)).unwrap_or_default();
    assert!(read("df.out").contains("100%"), "{}", read("df.out"));
    assert_eq!(read("export.code"), "", "{}", read("export.err"));
    assert_eq!(
        read("export.out"),
        "20.1.2.0/24\n",
        "{}",
        read("export.err")
    );
    assert_eq!(read("lookup.code"), "", "{}", read("lookup.out"));
    assert!(
        read("lookup.out").contains("20.1.2.0/24"),
        "{}",
        read("lookup.out")
    );
}

#[test]
fn a_database_that_needs_migrating_is_named_not_migrated() {
    let t = collected();
    // An older schema version, as the previous release left it: only its number
    // matters here, a reading command must not touch it.
    let c = rusqlite::Connection::open(t.file("ripe.db")).unwrap();
    c.execute_batch("PRAGMA user_version = 3").unwrap();
    drop(c);
    for args in [&["export"][..], &["lookup", "20.1.2.3"], &["changes"]] {
        let o = t.run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", says(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("schema version 3 needs migrating")
                && err.contains("run `ripe-cidr-collector run` once, or start the daemon"),
            "{args:?}: {err}"
        );
    }
    let c = rusqlite::Connection::open(t.file("ripe.db")).unwrap();
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 3);
}
