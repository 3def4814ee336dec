//! Connections kept open between requests.
//!
//! Opening costs more than most reads: SQLite parses the whole schema of each new
//! connection, and schema version 3 carries the compatibility views and their
//! `INSTEAD OF` triggers (about 6.8 KB of SQL, 0.44 ms of CPU per open against 0.05 ms
//! for version 2). A [`Pool`] keeps a few idle connections and hands them out again
//! while they still belong to the file at the database's path.
//!
//! A kept connection is safe to reuse because:
//! * it holds no transaction between uses (checked when it is given back), so it sees
//!   every commit of other processes at its next statement and blocks no writer, no
//!   checkpoint, no snapshot and no purge;
//! * before each use the path's device, inode, size and modification time are
//!   compared with those of the file it opened: a database replaced (restored from a
//!   snapshot, moved aside as damaged, deleted) or rewritten in place (overwritten;
//!   also every checkpoint, which is once per collection) is opened anew, with
//!   everything [`super::open`] does (restore, legacy import, migration, the check
//!   that it is a database at all). Only a connection to a file unchanged for
//!   [`SETTLED`] is kept: a write within the same tick of the file system's clock
//!   could leave the modification time as it was, one after a later tick cannot;
//! * its `user_version` is read again, so a database migrated in place by another
//!   version is opened anew too (and a newer one refused, as at any open);
//! * a connection whose use failed is closed, not kept;
//! * its page cache is released when it is given back: an idle connection keeps its
//!   parsed schema (the point of keeping it), not up to [`super::CACHE_KIB`] of pages.

// AtomicUsize, not AtomicU64: 32-bit MIPS has no 64-bit atomics.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use crate::config::Paths;

use super::{Db, StoreError};

/// Page cache of each pooled connection, in KiB.
const POOL_CACHE_KIB: i64 = 512;

/// Device, inode, size and modification time of a file.
type FileId = (u64, u64, u64, SystemTime);

/// How long the database file must have been unchanged for a connection to it to be
/// kept (see the module's documentation).
pub const SETTLED: Duration = Duration::from_secs(1);

fn settled(id: &FileId) -> bool {
    id.3.elapsed().is_ok_and(|d| d >= SETTLED)
}

#[cfg(unix)]
fn file_id(path: &std::path::Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    // Follows a link (OpenWrt: RAM data directory, database on flash) to the file
    // SQLite opened.
    let m = std::fs::metadata(path).ok()?;
    Some((m.dev(), m.ino(), m.len(), m.modified().ok()?))
}

#[cfg(not(unix))]
fn file_id(_: &std::path::Path) -> Option<FileId> {
    // No identity to compare: never keep a connection.
    None
}

/// An idle connection and the file it was opened on.
struct Idle {
    db: Db,
    file: FileId,
}

/// Up to `keep` idle connections to the database of `paths`.
pub struct Pool {
    paths: Paths,
    keep: usize,
    idle: Mutex<Vec<Idle>>,
    /// Connections opened so far (tests, benches).
    opened: AtomicUsize,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("db", &self.paths.db)
            .field("keep", &self.keep)
            .finish()
    }
}

impl Pool {
    /// A pool keeping at most `keep` idle connections (0: open for every use, as
    /// [`super::open`] does).
    pub fn new(paths: Paths, keep: usize) -> Pool {
        Pool {
            paths,
            keep,
            idle: Mutex::new(Vec::new()),
            opened: AtomicUsize::new(0),
        }
    }

    /// The paths the pool opens.
    pub fn paths(&self) -> &Paths {
        &self.paths
    }

    /// Runs `f` on a kept connection still valid for the database file, or on a new
    /// one; the connection is kept again afterwards unless `f` failed or the pool is
    /// full.
    pub fn with<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce(&Db) -> Result<T, E>,
    ) -> Result<T, E> {
        let (db, file) = self.take()?;
        let out = f(&db);
        if out.is_ok() {
            if let Some(file) = file {
                self.give_back(db, file);
            }
        }
        out
    }

    /// Connections kept now (tests, benches).
    pub fn idle(&self) -> usize {
        self.lock().len()
    }

    /// Connections opened so far (tests, benches).
    pub fn opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed) as u64
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Idle>> {
        // Nothing panics while holding it, and a poisoned list is still right.
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A connection and the file it belongs to (`None`: not to be kept).
    fn take(&self) -> Result<(Db, Option<FileId>), StoreError> {
        let now = file_id(&self.paths.db);
        loop {
            let Some(idle) = self.lock().pop() else { break };
            if Some(idle.file) == now && idle.db.current() {
                return Ok((idle.db, now));
            }
            // Another file at the path, or another schema: closed here.
        }
        self.opened.fetch_add(1, Ordering::Relaxed);
        let db = super::open(&self.paths)?;
        // A pool's connections read (each listing once, in key order), several at
        // once: 2 MiB of page cache each was a third of the API server's peak.
        db.conn
            .execute_batch(&format!("PRAGMA cache_size=-{POOL_CACHE_KIB};"))
            .map_err(|e| super::fail(&self.paths.db, e))?;
        // Kept only when the path named the same settled file before and after the
        // open: a file replaced meanwhile might not be the one this connection has
        // open, and one just created or written could change unseen.
        let after = file_id(&self.paths.db);
        let keep = now.filter(|a| Some(*a) == after && settled(a));
        Ok((db, keep))
    }

    fn give_back(&self, db: Db, file: FileId) {
        if !db.idle() {
            return;
        }
        let mut idle = self.lock();
        if idle.len() < self.keep {
            idle.push(Idle { db, file });
        }
    }
}
