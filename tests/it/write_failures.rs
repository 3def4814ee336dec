//! A failed write (a full disk, a read-only file system) is the run's recorded error,
//! naming the file and the cause, in `status.json`, `status`, `/health`; a command
//! that could not read the database never prints counts as if it had. The file
//! systems are real: a small tmpfs and a read-only bind mount, mounted inside this
//! test's directory in a mount namespace of their own (`unshare -m`), so nothing of
//! them is seen outside.

use std::fs;
use std::process::Command;

use serde_json::json;

use crate::common::{bin, cannot_run, http_get, ripe_body, FakeServer, Reply, TestDir};

/// Runs `script` with `sh` in a mount namespace of its own, `$B` the binary, in the
/// test's directory; false when that cannot be done here (not root, no unshare).
fn in_mount_namespace(t: &TestDir, script: &str) -> bool {
    let probe = Command::new("unshare")
        .args([
            "-m",
            "sh",
            "-c",
            "mount -t tmpfs -o size=64k tmpfs \"$0\"",
            t.path().to_str().unwrap(),
        ])
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        cannot_run("unshare -m and mount need root");
        return false;
    }
    let out = Command::new("unshare")
        .args(["-m", "sh", "-ec", script])
        .current_dir(t.path())
        .env("B", bin())
        .env_remove("RIPE_DATA_DIR")
        .env_remove("RIPE_DB")
        .output()
        .unwrap();
    fs::write(
        t.file("script.log"),
        [&out.stdout[..], &out.stderr].concat(),
    )
    .unwrap();
    true
}

fn status(t: &TestDir) -> serde_json::Value {
    serde_json::from_slice(&fs::read(t.file("status.json")).unwrap()).unwrap()
}

fn text(t: &TestDir, name: &str) -> String {
    fs::read_to_string(t.file(name)).unwrap_or_default()
}

/// An upstream whose one ASN has 20,000 (public) prefixes: more than the small disk
/// holds.
fn big_upstream() -> FakeServer {
    let prefixes: Vec<String> = (0..20_000u32)
        .map(|i| format!("20.{}.{}.0/24", i / 256 % 256, i % 256))
        .collect();
    let body = ripe_body(&prefixes);
    FakeServer::start(move |_| Reply::json(200, body.clone()))
}

fn config(t: &TestDir, up: &FakeServer) {
    t.config(&json!({"asns": ["64500"], "ripe": {"url": up.url("/x"), "retries": 0}}));
}

#[test]
fn a_full_disk_is_the_runs_recorded_error_naming_the_file() {
    let up = big_upstream();
    let t = TestDir::new();
    config(&t, &up);
    let ran = in_mount_namespace(
        &t,
        "mkdir m; mount -t tmpfs -o size=192k tmpfs m; mkdir m/d; cp config.json m/d/; \
         printf '{}' >m/d/status.json; \
         $B --data-dir m/d run >run.out 2>run.err || echo $? >run.code; \
         $B --data-dir m/d status >status.out 2>&1 || true; \
         cp m/d/status.json .; \
         printf '{\"last_error\": \"marker\"}' >m/d/status.json; \
         dd if=/dev/zero of=m/fill bs=4k count=100 2>/dev/null || true; \
         $B --data-dir m/d run 2>run2.err || true; \
         cp m/d/status.json full.json",
    );
    if !ran {
        return;
    }
    let log = text(&t, "script.log");
    assert_eq!(text(&t, "run.code").trim(), "1", "{log}");
    let err = text(&t, "run.err");
    assert!(err.contains("m/d/ripe.db: disk full"), "{err}");
    let last = status(&t)["last_error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        last.contains("collection failed: m/d/ripe.db: disk full"),
        "{last}"
    );
    let shown = text(&t, "status.out");
    assert!(shown.contains("disk full"), "{shown}");
    // With no room left at all, status.json is rewritten in place: still recorded.
    let full: serde_json::Value =
        serde_json::from_slice(&fs::read(t.file("full.json")).unwrap()).unwrap();
    let last = full["last_error"].as_str().unwrap_or_default();
    assert!(
        last.contains("m/d/ripe.db: disk full"),
        "{last}: {}",
        text(&t, "run2.err")
    );
    // /health shows it too (status.json copied out of the small disk).
    let (_s, addr) = t.spawn_listening(&["serve"]);
    let (_, body) = http_get(addr, "/health");
    assert!(body.contains("disk full"), "{body}");
}

#[test]
fn a_read_only_database_directory_is_recorded_and_never_counted_as_empty() {
    let up = big_upstream();
    let t = TestDir::new();
    config(&t, &up);
    fs::create_dir(t.file("ro")).unwrap();
    let first = t.run(&[
        "--db",
        t.file("ro/ripe.db").to_str().unwrap(),
        "asn",
        "list",
    ]);
    // The fourth column: the holder's name, `-` while unknown.
    assert_eq!(String::from_utf8_lossy(&first.stdout), "64500\t0\t-\t-\n");
    let ran = in_mount_namespace(
        &t,
        "mount --bind ro ro; mount -o remount,bind,ro ro; \
         $B --data-dir . --db ro/ripe.db asn list >list0.out 2>list0.err || echo $? >list0.code; \
         umount ro; head -c 4096 /dev/zero >ro/ripe.db-wal; \
         mount --bind ro ro; mount -o remount,bind,ro ro; \
         $B --data-dir . --db ro/ripe.db run >run.out 2>run.err || echo $? >run.code; \
         $B --data-dir . --db ro/ripe.db asn list >list.out 2>list.err || echo $? >list.code",
    );
    if !ran {
        return;
    }
    let log = text(&t, "script.log");
    assert_eq!(text(&t, "run.code").trim(), "1", "{log}");
    let err = text(&t, "run.err");
    assert!(err.contains("ro/ripe.db: read-only file system"), "{err}");
    let last = status(&t)["last_error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(last.contains("ro/ripe.db: read-only file system"), "{last}");
    // A database nobody holds is read from the read-only file system as it is ...
    assert_eq!(text(&t, "list0.code"), "", "{}", text(&t, "list0.err"));
    assert_eq!(text(&t, "list0.out"), "64500\t0\t-\n");
    // ... but not past a write-ahead log it cannot index (no -shm can be made): the
    // configured list, but no "0 stored values" for a database not read.
    assert_eq!(text(&t, "list.code").trim(), "1", "{log}");
    assert_eq!(text(&t, "list.out"), "64500\t?\t-\t-\n");
    assert!(text(&t, "list.err").contains("read-only file system"));
}
