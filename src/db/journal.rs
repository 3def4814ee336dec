//! Which journal mode the database can use where it lives.
//!
//! WAL needs a shared writable memory map of `<db>-shm`. JFFS2 (the overlay of most
//! small NOR-flash routers), 9p and some FUSE and network filesystems refuse it, and
//! SQLite only notices at the first access after `PRAGMA journal_mode=WAL` has answered
//! "wal": every command then fails with "disk I/O error". So the first open in a
//! process probes WAL with a real write on a scratch database beside the real one
//! (never on the real one: the legacy import and the corruption handling stay as they
//! are), and remembers the answer for that directory: the API opens a connection per
//! request.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::Connection;

/// How the database journals its writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JournalMode {
    /// Write-ahead log with `synchronous=NORMAL`: readers never wait for a writer.
    Wal,
    /// Rollback journal with `synchronous=FULL` (safe across power cuts), for
    /// filesystems without shared memory maps. Readers wait for a commit.
    Delete,
}

impl JournalMode {
    /// `"wal"` or `"delete"`, as in `status.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            JournalMode::Wal => "wal",
            JournalMode::Delete => "delete",
        }
    }
}

/// The last probe's directory and answer. One entry: a process uses one database.
static PROBED: Mutex<Option<(PathBuf, JournalMode)>> = Mutex::new(None);

/// The directory whose filesystem holds `db` (through a link, where the link points).
fn home(db: &Path) -> PathBuf {
    let real = fs::canonicalize(db).unwrap_or_else(|_| db.to_path_buf());
    match real.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The mode to use for the database `db`: probed once per directory and process.
pub(crate) fn mode_for(db: &Path) -> JournalMode {
    let dir = home(db);
    let mut cached = PROBED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((d, m)) = cached.as_ref() {
        if *d == dir {
            return *m;
        }
    }
    match probe(&dir) {
        Some(m) => {
            if m == JournalMode::Delete {
                log::info!(
                    "{}: WAL does not work here (no shared mmap, as on JFFS2): \
                     journal_mode=DELETE, synchronous=FULL",
                    dir.display()
                );
            }
            *cached = Some((dir, m));
            m
        }
        // Inconclusive (a directory that cannot be written, a full disk): WAL, as
        // before, and the real open reports the real error. Probed again next time.
        None => JournalMode::Wal,
    }
}

/// Writes a scratch database in `dir` in rollback mode, then in WAL mode. `None` when
/// even the rollback write fails: that says nothing about WAL.
fn probe(dir: &Path) -> Option<JournalMode> {
    let file = dir.join(format!(".ripe-walprobe-{}", crate::util::process_id()));
    let remove = || {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut f = file.clone().into_os_string();
            f.push(suffix);
            let _ = fs::remove_file(f);
        }
    };
    // A probe killed half-way (and a process id used again) must not decide this one,
    // nor leave its files for ever.
    remove();
    crate::util::remove_stale(dir, ".ripe-walprobe-");
    let result = (|| {
        let c = Connection::open(&file).ok()?;
        c.execute_batch("CREATE TABLE p (x); INSERT INTO p VALUES (1);")
            .ok()?;
        let wal = c
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
            .map(|m| m.eq_ignore_ascii_case("wal"))
            .unwrap_or(false);
        let works = wal && c.execute_batch("INSERT INTO p VALUES (2);").is_ok();
        Some(if works {
            JournalMode::Wal
        } else {
            JournalMode::Delete
        })
    })();
    remove();
    result
}

/// True when the file's header says WAL (bytes 18 and 19 are 2).
fn header_says_wal(db: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 20];
    fs::File::open(db)
        .and_then(|mut f| f.read_exact(&mut head))
        .map(|()| head[18] == 2 || head[19] == 2)
        .unwrap_or(false)
}

/// Turns a database left in WAL mode (by an earlier version, or copied from another
/// filesystem) back to the rollback journal where WAL cannot work. In exclusive
/// locking mode SQLite keeps the WAL index in heap memory instead of `-shm`, so it
/// can read the WAL, checkpoint it and switch.
pub(crate) fn leave_wal(db: &Path) -> rusqlite::Result<()> {
    if !header_says_wal(db) {
        return Ok(());
    }
    let c = Connection::open(db)?;
    c.busy_timeout(Duration::from_secs(120))?;
    c.query_row("PRAGMA locking_mode=EXCLUSIVE", [], |_| Ok(()))?;
    let mode = super::retry_busy(|| {
        c.query_row("PRAGMA journal_mode=DELETE", [], |r| r.get::<_, String>(0))
    })?;
    log::info!("{}: switched from WAL to journal_mode={mode}", db.display());
    Ok(())
}
