//! Storage modes through the real binary: the WAL probe and its rollback-journal
//! fallback (on a "filesystem" without shared memory maps, made by an LD_PRELOAD
//! shim), and the snapshot of a database kept in RAM.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ripe_cidr_collector::config::Paths;
use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;

use crate::common::*;

/// Builds `tests/fixtures/noshm.c` (mmap(MAP_SHARED) of `*-shm` fails with EINVAL, as
/// on JFFS2) into `dir`; `None`, with the reason printed, where there is no C compiler.
fn noshm_shim(dir: &Path) -> Option<PathBuf> {
    let so = dir.join("noshm.so");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg("tests/fixtures/noshm.c")
        .arg("-ldl")
        .status();
    match built {
        Ok(s) if s.success() => Some(so),
        other => {
            cannot_run(&format!(
                "cannot build the LD_PRELOAD shim with `cc` ({other:?})"
            ));
            None
        }
    }
}

fn copy_legacy(t: &TestDir) {
    for f in ["data.json", "fqdn_data.json"] {
        fs::copy(format!("tests/fixtures/legacy/{f}"), t.file(f)).unwrap();
    }
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn status_json(cmd: &mut Command) -> serde_json::Value {
    let out = cmd.args(["status", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn wal_refused_falls_back_to_rollback_journal() {
    let tools = tempfile::tempdir().unwrap();
    let Some(shim) = noshm_shim(tools.path()) else {
        return;
    };
    let t = TestDir::new();
    copy_legacy(&t);
    // Without the fallback this is "database error: disk I/O error" and nothing is
    // imported (what JFFS2 did to the first version).
    let out = t
        .cmd()
        .env("LD_PRELOAD", &shim)
        .arg("export")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 10, "{text}");
    assert!(
        stderr(&out).contains("journal_mode=DELETE"),
        "{}",
        stderr(&out)
    );
    assert!(!t.file("data.json").exists(), "legacy file renamed");
    assert!(!t.file("ripe.db-wal").exists());
    let st = status_json(t.cmd().env("LD_PRELOAD", &shim));
    assert_eq!(st["journal_mode"], "delete", "{st}");
    assert_eq!(st["counts"]["asn"], 7, "{st}");
    // The file is a rollback-journal database (header bytes 18 and 19 are 1).
    let head = fs::read(t.file("ripe.db")).unwrap();
    assert_eq!(&head[18..20], &[1, 1]);
    // Where WAL works the same database goes (back) to WAL.
    let st = status_json(&mut t.cmd());
    assert_eq!(st["journal_mode"], "wal", "{st}");
    assert_eq!(fs::read(t.file("ripe.db")).unwrap()[18], 2);
    // And a database left in WAL mode is switched back where WAL fails.
    let out = t
        .cmd()
        .env("LD_PRELOAD", &shim)
        .arg("export")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 10);
    assert!(
        stderr(&out).contains("switched from WAL"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn without_wal_two_processes_still_import_once() {
    let tools = tempfile::tempdir().unwrap();
    let Some(shim) = noshm_shim(tools.path()) else {
        return;
    };
    for _ in 0..3 {
        let t = TestDir::new();
        copy_legacy(&t);
        let spawn = || {
            Proc::drained(
                t.cmd()
                    .env("LD_PRELOAD", &shim)
                    .arg("status")
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap(),
                None,
            )
        };
        let (mut a, mut b) = (spawn(), spawn());
        let sa = a.wait_exit(Duration::from_secs(60)).expect("first ends");
        let sb = b.wait_exit(Duration::from_secs(60)).expect("second ends");
        let (ea, eb) = (a.stderr(), b.stderr());
        assert!(sa.success() && sb.success(), "{ea}\n{eb}");
        // (The import's line, not the one naming unconfigured imported sources.)
        let imports = ea.matches(" values from ").count() + eb.matches(" values from ").count();
        assert_eq!(imports, 1, "{ea}\n{eb}");
    }
}

#[cfg(feature = "collect")]
#[test]
fn run_without_wal_stores_and_reports_the_mode() {
    let tools = tempfile::tempdir().unwrap();
    let Some(shim) = noshm_shim(tools.path()) else {
        return;
    };
    let ripe = FakeServer::start(|_| Reply::json(200, ripe_body(&["192.0.2.0/24".into()])));
    let t = TestDir::new();
    t.config(&ripe_config(&ripe, &["64496"]));
    let out = t
        .cmd()
        .env("LD_PRELOAD", &shim)
        .arg("run")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let st: serde_json::Value =
        serde_json::from_slice(&fs::read(t.file("status.json")).unwrap()).unwrap();
    assert_eq!(st["journal_mode"], "delete", "{st}");
    let out = t
        .cmd()
        .env("LD_PRELOAD", &shim)
        .arg("status")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("journal mode:  delete"), "{text}");
    assert!(text.contains("stored:        1 prefix values"), "{text}");
}

fn ripe_config(ripe: &FakeServer, asns: &[&str]) -> serde_json::Value {
    serde_json::json!({
        "asns": asns,
        "ripe": {"url": ripe.url("/data/announced-prefixes/data.json"),
                 "timeout_seconds": 2, "retries": 0}
    })
}

/// A data directory with the database in a "RAM" directory and the snapshot on
/// "flash".
struct RamSetup {
    t: TestDir,
    ram: tempfile::TempDir,
    flash: tempfile::TempDir,
}

impl RamSetup {
    fn new() -> RamSetup {
        RamSetup {
            t: TestDir::new(),
            ram: tempfile::tempdir().unwrap(),
            flash: tempfile::tempdir().unwrap(),
        }
    }
    fn db(&self) -> PathBuf {
        self.ram.path().join("run/ripe.db")
    }
    fn snap(&self) -> PathBuf {
        self.flash.path().join("ripe.snapshot")
    }
    fn cmd(&self) -> Command {
        let mut c = self.t.cmd();
        c.arg("--db")
            .arg(self.db())
            .arg("--snapshot")
            .arg(self.snap());
        c
    }
    fn paths(&self) -> Paths {
        Paths::new(self.t.path(), Some(self.db())).with_snapshot(Some(self.snap()))
    }
    /// The reboot: the RAM directory is gone.
    fn reboot(&self) {
        fs::remove_dir_all(self.ram.path().join("run")).unwrap();
    }
}

/// The values of one ASN in a snapshot, read back as a restore does (into a new
/// database beside it, removed again).
fn snapshot_values(f: &Path, source: &str) -> Result<Vec<String>, db::StoreError> {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("restored.db");
    db::snapshot::restore_into(f, &copy)?;
    let d = db::open(&Paths::new(dir.path(), Some(copy)))?;
    Ok(d.rows(Kind::Asn, source)?
        .into_iter()
        .map(|r| r.value)
        .collect())
}

#[cfg(feature = "collect")]
#[test]
fn reboot_serves_the_snapshot_when_the_upstream_fails() {
    let up = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let up2 = up.clone();
    let ripe = FakeServer::start(move |_| {
        if up2.load(std::sync::atomic::Ordering::SeqCst) {
            Reply::json(
                200,
                ripe_body(&["192.0.2.0/24".into(), "2001:db8::/32".into()]),
            )
        } else {
            Reply::json(503, "down")
        }
    });
    let s = RamSetup::new();
    s.t.config(&ripe_config(&ripe, &["64496"]));
    let out = s.cmd().arg("run").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // The first run that changed anything writes the snapshot (there was none).
    assert!(
        stderr(&out).contains("snapshot written"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        snapshot_values(&s.snap(), "64496").unwrap(),
        ["192.0.2.0/24", "2001:db8::/32"]
    );
    assert_eq!(
        &fs::read(s.snap()).unwrap()[..8],
        b"RIPESNAP",
        "the compact format"
    );
    let st = status_json(&mut s.cmd());
    assert!(st["last_snapshot"].is_string(), "{st}");
    assert_eq!(st["status"]["last_snapshot"], st["last_snapshot"], "{st}");

    s.reboot();
    up.store(false, std::sync::atomic::Ordering::SeqCst);
    // The first fetch after boot fails; the lists are still there.
    let out = s.cmd().arg("run").output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("restored the database"),
        "{}",
        stderr(&out)
    );
    let out = s.cmd().args(["export"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "192.0.2.0/24\n2001:db8::/32\n"
    );
    // And so does the API, started on a database that is gone again.
    s.reboot();
    #[cfg(feature = "api")]
    {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], free_port()));
        let _serve = Proc::drained(
            s.cmd()
                .args(["serve", "--listen", &addr.to_string()])
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
            None,
        );
        assert!(wait_listening(addr, Duration::from_secs(10)));
        assert_eq!(http_get(addr, "/addresses?family=4").1, "192.0.2.0/24\n");
    }
}

#[cfg(feature = "collect")]
#[test]
fn run_snapshots_at_most_every_interval() {
    let n = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let n2 = n.clone();
    // Every answer has one prefix more, so every run changes something (and none
    // drops what the last one had, which the trust gate would hold).
    let ripe = FakeServer::start(move |rq| {
        if is_name_lookup(&rq.url) {
            return Reply::json(404, "{}");
        }
        let i = n2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let list: Vec<String> = (0..=i).map(|j| format!("11.0.{j}.0/24")).collect();
        Reply::json(200, ripe_body(&list))
    });
    let s = RamSetup::new();
    s.t.config(&ripe_config(&ripe, &["64496"]));
    for _ in 0..2 {
        let out = s.cmd().arg("run").output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    // The second run's change waits (default: once a day) and says so.
    assert_eq!(
        snapshot_values(&s.snap(), "64496").unwrap(),
        ["11.0.0.0/24"]
    );
    let st: serde_json::Value =
        serde_json::from_slice(&fs::read(s.t.file("status.json")).unwrap()).unwrap();
    assert_eq!(st["snapshot_pending"], true, "{st}");
    // With 0 every change is written at once, the pending one included.
    let mut cfg = ripe_config(&ripe, &["64496"]);
    cfg["storage"] = serde_json::json!({"snapshot_interval_hours": 0});
    s.t.config(&cfg);
    let out = s.cmd().arg("run").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        snapshot_values(&s.snap(), "64496").unwrap(),
        ["11.0.0.0/24", "11.0.1.0/24", "11.0.2.0/24"]
    );
    let st: serde_json::Value =
        serde_json::from_slice(&fs::read(s.t.file("status.json")).unwrap()).unwrap();
    assert_eq!(st["snapshot_pending"], false, "{st}");
    // A bad value is named.
    cfg["storage"] = serde_json::json!({"snapshot_interval_hours": -1});
    s.t.config(&cfg);
    let out = s.cmd().arg("run").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("storage.snapshot_interval_hours"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn snapshot_command_needs_a_file() {
    let t = TestDir::new();
    let out = t.run(&["snapshot"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--snapshot"), "{}", stderr(&out));
}

#[test]
fn invalid_snapshot_is_moved_aside_and_start_goes_on_empty() {
    let s = RamSetup::new();
    fs::write(s.snap(), b"this is not a database, it is a text file\n").unwrap();
    let out = s.cmd().arg("export").output().unwrap();
    // The start goes on with an empty database, whose empty list is not handed out
    // until a run has filled it.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert!(
        stderr(&out).contains("not a valid database"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("moved aside to"), "{}", stderr(&out));
    assert!(!s.snap().exists());
    let aside: Vec<String> = fs::read_dir(s.flash.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert!(aside[0].starts_with("ripe.snapshot.corrupt-"), "{aside:?}");
    assert_eq!(
        fs::read(s.flash.path().join(&aside[0])).unwrap(),
        b"this is not a database, it is a text file\n"
    );
    // The next snapshot is a good one again.
    let out = s.cmd().arg("snapshot").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        snapshot_values(&s.snap(), "x").unwrap(),
        Vec::<String>::new()
    );
}

/// Some entropy without a crate: the clock's nanoseconds.
fn jitter(max_ms: u64) -> Duration {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    Duration::from_micros(n % (max_ms.max(1) * 1000))
}

#[test]
fn kill_9_during_a_snapshot_leaves_the_old_or_the_new_one() {
    let s = RamSetup::new();
    let paths = s.paths();
    // Big enough that writing the copy takes a while.
    let bulk: Vec<String> = (0..60_000u32)
        .map(|i| format!("2001:db8:{:x}:{:x}::/64", i >> 8, i & 0xff))
        .collect();
    {
        let mut d = db::open(&paths).unwrap();
        d.merge_source(Kind::Asn, "1", &bulk, 1_800_000_000, 0)
            .unwrap();
        d.merge_source(Kind::Asn, "2", &["0".into()], 1_800_000_000, 0)
            .unwrap();
    }
    let started = Instant::now();
    let out = s.cmd().arg("snapshot").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let full = started.elapsed().as_millis() as u64;
    let mut saved = 0u32; // the marker value in the snapshot
    let (mut killed, mut finished, mut renamed, mut midway) = (0, 0, 0, 0);
    for round in 1..=16u32 {
        // A new marker, so the new snapshot can be told from the old one.
        let mut d = db::open(&paths).unwrap();
        d.purge_source(Kind::Asn, "2").unwrap();
        d.merge_source(Kind::Asn, "2", &[round.to_string()], 1_800_000_000, 0)
            .unwrap();
        drop(d);
        let mut p = Proc::drained(
            s.cmd()
                .arg("snapshot")
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
            None,
        );
        std::thread::sleep(jitter(full * 3 / 2));
        let _ = p.0.kill(); // SIGKILL
        let st = p.0.wait().unwrap();
        if st.success() {
            finished += 1;
        } else {
            killed += 1;
        }
        let marker = snapshot_values(&s.snap(), "2").expect("the snapshot always opens");
        let m: u32 = marker[0].parse().unwrap();
        assert!(
            m == saved || m == round,
            "round {round}: snapshot holds marker {m}, expected {saved} or {round}"
        );
        if st.success() {
            assert_eq!(m, round, "a finished snapshot holds the new data");
        } else if m == round {
            renamed += 1;
        } else if fs::metadata(s.flash.path().join(".ripe.snapshot.tmp")).is_ok_and(|m| m.len() > 0)
        {
            midway += 1;
        }
        saved = m;
        assert_eq!(snapshot_values(&s.snap(), "1").unwrap().len(), bulk.len());
    }
    eprintln!(
        "snapshot of {} values: {full} ms; {killed} killed ({midway} while writing the copy, {renamed} after the rename), {finished} finished",
        bulk.len()
    );
    // What a killed writer leaves (at most its temporary file) does not stop the next.
    let out = s.cmd().arg("snapshot").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(snapshot_values(&s.snap(), "2").unwrap(), ["16"]);
}

/// The daemon writes the snapshot after its first run that changed anything (none
/// existed), and again at SIGTERM when later changes are not in it yet.
#[cfg(feature = "collect")]
#[test]
fn daemon_snapshots_after_changes_and_at_stop() {
    let ripe = FakeServer::start(|seen| {
        let n = resource_of(&seen.url).unwrap_or_default();
        Reply::json(200, ripe_body(&[format!("192.0.{}.0/24", n.len())]))
    });
    let s = RamSetup::new();
    let mut cfg = ripe_config(&ripe, &["64496"]);
    cfg["storage"] = serde_json::json!({"snapshot_interval_hours": 24});
    s.t.config(&cfg);
    let child = s
        .cmd()
        .arg("daemon")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut d = Proc::drained(child, None);
    assert!(
        eventually(Duration::from_secs(15), || snapshot_values(
            &s.snap(),
            "64496"
        )
        .is_ok_and(|v| v == ["192.0.5.0/24"])),
        "{}",
        d.stderr()
    );
    // A source added later changes the data; the daily snapshot is not due again,
    // so only the stop writes it.
    cfg["asns"] = serde_json::json!(["64496", "7"]);
    s.t.config(&cfg);
    assert!(
        eventually(Duration::from_secs(15), || {
            db::open(&s.paths())
                .and_then(|d| d.rows(Kind::Asn, "7"))
                .is_ok_and(|r| r.len() == 1)
        }),
        "{}",
        d.stderr()
    );
    assert!(snapshot_values(&s.snap(), "7").unwrap().is_empty());
    unsafe { libc::kill(d.pid() as i32, libc::SIGTERM) };
    assert!(d.wait_exit(Duration::from_secs(10)).is_some(), "stopped");
    assert_eq!(snapshot_values(&s.snap(), "7").unwrap(), ["192.0.1.0/24"]);
    let st: serde_json::Value =
        serde_json::from_slice(&fs::read(s.t.file("status.json")).unwrap()).unwrap();
    assert!(st["last_snapshot"].is_string(), "{st}");
    assert_ne!(st["snapshot_pending"], true, "{st}");
}

/// Issue 17: a purge by another process (the CLI) while the daemon runs is rendered
/// at once, and the stop writes it into the snapshot: after a reboot the purged
/// values do not come back.
#[cfg(feature = "collect")]
#[test]
fn purge_by_the_cli_reaches_the_outputs_and_the_snapshot() {
    let ripe = FakeServer::start(|seen| {
        let n = resource_of(&seen.url).unwrap_or_default();
        Reply::json(200, ripe_body(&[format!("192.0.{}.0/24", n.len())]))
    });
    let s = RamSetup::new();
    let out = s.t.file("list.txt");
    let mut cfg = ripe_config(&ripe, &["64496", "7"]);
    cfg["storage"] = serde_json::json!({"snapshot_interval_hours": 24});
    cfg["outputs"] = serde_json::json!([{"path": out, "format": "text", "type": "all"}]);
    s.t.config(&cfg);
    let spawn = || {
        let child = s
            .cmd()
            .arg("daemon")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Proc::drained(child, None)
    };
    let mut d = spawn();
    let listed = |want: &str| fs::read_to_string(&out).is_ok_and(|t| t == want);
    assert!(
        eventually(Duration::from_secs(15), || listed(
            "192.0.1.0/24\n192.0.5.0/24\n"
        )),
        "{}",
        d.stderr()
    );
    // The first run's snapshot holds both sources.
    assert!(eventually(Duration::from_secs(10), || snapshot_values(
        &s.snap(),
        "7"
    )
    .is_ok_and(|v| v.len() == 1)));
    let o = s
        .cmd()
        .args(["asn", "remove", "7", "--purge"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert!(
        eventually(Duration::from_secs(10), || listed("192.0.5.0/24\n")),
        "the output is rendered again at once: {}",
        d.stderr()
    );
    unsafe { libc::kill(d.pid() as i32, libc::SIGTERM) };
    assert!(d.wait_exit(Duration::from_secs(10)).is_some(), "stopped");
    assert!(snapshot_values(&s.snap(), "7").unwrap().is_empty());
    // The reboot: the database comes back from the snapshot, without the purged values
    // (the upstream is gone, so nothing is collected again).
    s.reboot();
    drop(ripe);
    let d = db::open(&s.paths()).unwrap();
    assert!(d.rows(Kind::Asn, "7").unwrap().is_empty());
    assert_eq!(d.rows(Kind::Asn, "64496").unwrap().len(), 1);
}
