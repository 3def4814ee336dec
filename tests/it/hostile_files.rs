//! Files a hostile or killed process left (issue 27): a tiny snapshot that claims
//! billions of rows, and the scratch files of a probe or a restore killed half-way.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for b in data {
        crc ^= u32::from(*b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

fn varint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// A snapshot with a valid checksum whose `meta` table claims 2^34 rows, each a
/// repeat of the one before (run-length coded): under 64 bytes.
fn billions_of_rows() -> Vec<u8> {
    let mut col = vec![3, 0, 1, b'k'];
    varint(&mut col, ((1u64 << 40) << 1) | 1);
    let mut out = b"RIPESNAP\x01".to_vec();
    varint(&mut out, 1 << 34);
    for c in [&col[..], &col[..], &[][..]] {
        varint(&mut out, c.len() as u64);
        out.extend_from_slice(c);
    }
    let crc = crc32(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    assert!(out.len() < 64);
    out
}

/// The id of a process that has ended.
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_snapshot_claiming_billions_of_rows_is_refused_quickly() {
    let t = TestDir::new();
    let db = t.file("r.db");
    let snap = t.file("snap");
    fs::write(&snap, billions_of_rows()).unwrap();
    // What a restore killed earlier left.
    let stale = t.file(&format!(".r.db.restore-{}", dead_pid()));
    for suffix in ["", "-journal"] {
        fs::write(format!("{}{suffix}", stale.display()), b"x").unwrap();
    }
    let started = Instant::now();
    let mut child = t
        .cmd()
        .arg("--db")
        .arg(&db)
        .arg("--snapshot")
        .arg(&snap)
        .args(["status", "--json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let code = wait_child(&mut child, Duration::from_secs(60));
    if code.is_none() {
        let _ = child.kill();
    }
    assert!(code.is_some(), "the restore still ran after 60 s");
    assert!(started.elapsed() < Duration::from_secs(60));
    let left = names(t.path());
    assert!(!left.iter().any(|n| n.contains(".restore-")), "{left:?}");
    assert!(
        left.iter().any(|n| n.starts_with("snap.corrupt-")),
        "{left:?}"
    );
}

#[test]
fn stale_walprobe_files_are_removed_at_open() {
    let t = TestDir::new();
    let dead = format!(".ripe-walprobe-{}", dead_pid());
    // A process that still runs (this test) keeps its probe.
    let alive = format!(".ripe-walprobe-{}", std::process::id());
    for name in [
        dead.clone(),
        format!("{dead}-wal"),
        format!("{dead}-shm"),
        alive.clone(),
    ] {
        fs::write(t.file(&name), b"x").unwrap();
    }
    let out = t.cmd().args(["asn", "list"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left = names(t.path());
    assert!(left.contains(&alive), "{left:?}");
    assert!(!left.iter().any(|n| n.starts_with(&dead)), "{left:?}");
}
