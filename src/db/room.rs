//! How much a restore may write. The data directory is RAM on a router, and a forged
//! snapshot can stand for far more rows than it holds bytes (a 687 KB one wrote 192 MB
//! before it was found out): the database built from a snapshot may grow to
//! [`EXPANSION`] times the snapshot's size, and never into the last [`RESERVE`] of the
//! file system's free space. SQLite enforces it (`max_page_count`), so nothing past
//! the cap is ever written.

use std::path::Path;

use rusqlite::Connection;

use super::StoreError;

/// How many times its snapshot's size a restored database may be. The compact format
/// holds 2.9 bytes per value fresh and 6.3 after a month of history, the database
/// 44.5 and 51.5 (docs/performance.md, "Storage footprint"): 15.4 and 8.2 times. Twice the
/// larger, plus [`SCHEMA_ROOM`].
pub(super) const EXPANSION: u64 = 32;

/// The empty schema's pages and an index's first pages, whatever the snapshot's size.
const SCHEMA_ROOM: u64 = 1 << 20;

/// Free space a restore leaves to the rest (`status.json`, the first writes' WAL).
pub(super) const RESERVE: u64 = 1 << 20;

/// The cap on one restore into a database in `dir`.
pub(super) struct Cap {
    /// What the snapshot's size allows.
    by_size: u64,
    /// The free space of `dir`, less [`RESERVE`] (`None` where it cannot be known).
    room: Option<u64>,
    /// Pages of the database, once [`Cap::apply`]d.
    pages: u64,
}

impl Cap {
    /// The cap for a snapshot of `size` bytes restored into `dir`.
    pub(super) fn new(size: usize, dir: &Path) -> Cap {
        Cap {
            by_size: EXPANSION * size as u64 + SCHEMA_ROOM,
            room: free_bytes(dir).map(|f| f.saturating_sub(RESERVE)),
            pages: 0,
        }
    }

    fn bytes(&self) -> u64 {
        self.room.map_or(self.by_size, |r| r.min(self.by_size))
    }

    /// Sets the cap on `c` (before anything is written).
    pub(super) fn apply(&mut self, c: &Connection) -> rusqlite::Result<()> {
        let page = c.query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))?;
        self.pages = (self.bytes() / page.max(512) as u64).max(2);
        c.query_row(
            &format!("PRAGMA max_page_count = {}", self.pages),
            [],
            |_| Ok(()),
        )
    }

    /// After a restore failed with `failure`: whether the cap stopped it, and then
    /// what it means. SQLite answers a write past `max_page_count` as it answers a
    /// full disk (SQLITE_FULL, "database or disk is full"; the transaction may be rolled
    /// back already, so its size tells nothing). `Ok(why)`: the snapshot stands for
    /// more than its size can (not one this program wrote); `Err`: the file system has
    /// no room for it (the snapshot may be fine, so it is kept and the open fails).
    pub(super) fn judge(&self, failure: &str, dir: &Path) -> Option<Result<String, StoreError>> {
        if !failure.contains(FULL) {
            return None;
        }
        Some(if self.bytes() == self.by_size {
            Ok(format!(
                "it stands for more than {EXPANSION} times its size ({} bytes) in the \
                 database: not a snapshot this program wrote",
                self.by_size
            ))
        } else {
            Err(StoreError::Other(format!(
                "{}: no room to restore the snapshot: {} bytes free besides a reserve of \
                 {RESERVE}, and it may need up to {}",
                dir.display(),
                self.room.unwrap_or(0),
                self.by_size
            )))
        })
    }
}

/// SQLite's text of SQLITE_FULL.
const FULL: &str = "database or disk is full";

/// The bytes an unprivileged process may still write in the file system of `dir`.
#[cfg(unix)]
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `path` is a valid C string, `st` a writable statvfs for the call.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

#[cfg(not(unix))]
fn free_bytes(_: &Path) -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(out: &mut Vec<u8>, mut x: u64) {
        while x >= 0x80 {
            out.push((x as u8) | 0x80);
            x >>= 7;
        }
        out.push(x as u8);
    }

    /// A snapshot of `n` sources whose names grow a byte per row (each row a few
    /// bytes of the file, its name up to `n` bytes of the database): what a forged
    /// snapshot does to write far more than its size.
    fn forged(n: u64) -> Vec<u8> {
        let mut out = b"RIPESNAP".to_vec();
        out.push(2);
        let table = |out: &mut Vec<u8>, rows: u64, cols: &[Vec<u8>]| {
            varint(out, rows);
            for c in cols {
                varint(out, c.len() as u64);
                out.extend_from_slice(c);
            }
        };
        table(&mut out, 0, &[vec![], vec![], vec![]]);
        let ids = vec![4u8; n as usize]; // +1 each row
        let mut kinds = vec![3, 0, 3];
        kinds.extend_from_slice(b"asn");
        varint(&mut kinds, ((n - 1 + 4) << 1) | 1); // the same n - 1 more times
        let mut names = Vec::new();
        for i in 0..n {
            names.push(3);
            varint(&mut names, i);
            names.extend_from_slice(&[1, b'a']);
        }
        table(&mut out, n, &[ids, kinds, names, vec![]]);
        for cols in [6, 7, 13] {
            table(&mut out, 0, &vec![vec![]; cols]);
        }
        let crc = super::super::dump::crc32(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Bytes this thread has written so far (`wchar` of /proc/thread-self/io).
    fn written() -> Option<u64> {
        let io = std::fs::read_to_string("/proc/thread-self/io").ok()?;
        io.lines()
            .find_map(|l| l.strip_prefix("wchar: ")?.trim().parse().ok())
    }

    #[test]
    fn a_forged_snapshot_writes_no_more_than_its_size_allows() {
        let dir = tempfile::tempdir().unwrap();
        let (snap, db) = (dir.path().join("snap"), dir.path().join("ripe.db"));
        let bytes = forged(20_000);
        std::fs::write(&snap, &bytes).unwrap();
        let before = written();
        let e = super::super::snapshot::restore_into(&snap, &db).unwrap_err();
        let after = written();
        assert!(
            e.to_string()
                .contains(&format!("more than {EXPANSION} times its size")),
            "{e}"
        );
        assert!(!db.exists());
        // The cap, and the rollback journal's copies of the schema's first pages.
        let cap = EXPANSION * bytes.len() as u64 + SCHEMA_ROOM;
        if let (Some(b), Some(a)) = (before, after) {
            eprintln!(
                "{} bytes written for a {}-byte snapshot",
                a - b,
                bytes.len()
            );
            assert!(
                a - b < cap + (1 << 20),
                "{} bytes written, cap {cap}",
                a - b
            );
        }
    }

    #[test]
    fn a_restore_without_room_keeps_the_snapshot() {
        let mut cap = Cap::new(1 << 20, Path::new("."));
        cap.room = Some(64 << 10);
        let c = Connection::open_in_memory().unwrap();
        cap.apply(&c).unwrap();
        let e = c
            .execute_batch(
                "CREATE TABLE t (x); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL \
                 SELECT i + 1 FROM n WHERE i < 100000) INSERT INTO t SELECT randomblob(100) FROM n",
            )
            .unwrap_err();
        let judged = cap
            .judge(&e.to_string(), Path::new("/data"))
            .expect("the cap stopped it");
        let e = judged.unwrap_err().to_string();
        assert!(
            e.starts_with("/data: no room to restore the snapshot"),
            "{e}"
        );
    }
}
