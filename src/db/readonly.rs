//! Opening the database for a command that only reads (`export`, `lookup`, `list`,
//! `changes`, `status`...). Such a command must work where nothing can be written: a
//! full RAM disk (the firewall still needs its list), a user without write access to
//! the data directory. So it never sets a pragma that writes, never migrates, never
//! imports, and opens the file read-only.
//!
//! A read-only connection to a WAL database still needs the `-shm` index, which
//! SQLite creates (and sizes) beside the database: impossible on a full or read-only
//! file system, or for a user who may not write the directory. Then a writer's open
//! is tried (it also switches a WAL database to a rollback journal where the file
//! system refuses WAL), and where that fails too and no connection
//! holds the database (no `-wal`, or an empty one left by a checkpoint), the main file
//! holds every commit, and it is opened `immutable` instead: without the index and
//! without locks. A writer that starts meanwhile writes its WAL, not the main file;
//! only a checkpoint during this read could change pages under it, which needs a
//! writer with room to write, which the cases this serves lack. A `-wal` with frames
//! is never skipped: that would read an old list.

use std::fs;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::config::Paths;

use super::{fail, Db, JournalMode, StoreError, CACHE_KIB, SCHEMA_VERSION};

/// Opens the database of `paths` for reading only. A missing database is created
/// (or restored from the snapshot) by [`super::open`], as before: there is nothing to
/// read yet.
pub fn open_read(paths: &Paths) -> Result<Db, StoreError> {
    let path = paths.db.clone();
    if fs::symlink_metadata(&path).is_err() {
        return super::open(paths);
    }
    let conn = match connect(&path, false) {
        Ok((c, version)) => {
            check_version(&path, version)?;
            c
        }
        Err(e) => {
            let Ok((frozen, version)) = connect(&path, true) else {
                return Err(fail(&path, e));
            };
            check_version(&path, version)?;
            // Where a writer may open it, one does: that also brings the journal mode
            // to what the file system allows (WAL refused, as on JFFS2).
            match super::open(paths) {
                Ok(db) => return Ok(db),
                Err(w) if wal_is_empty(&path) => {
                    log::debug!("{}: {w}; read as it is (immutable)", path.display());
                    frozen
                }
                Err(w) => return Err(w),
            }
        }
    };
    let mode = match conn.query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0)) {
        Ok(m) if m.eq_ignore_ascii_case("wal") => JournalMode::Wal,
        Ok(_) => JournalMode::Delete,
        Err(e) => return Err(fail(&path, e)),
    };
    Ok(Db {
        conn,
        path,
        mode,
        history_days: super::DEFAULT_HISTORY_DAYS,
        wrote: false,
    })
}

/// Refuses a schema this binary does not read as it is: a newer one as at any open,
/// an older one naming what migrates it.
fn check_version(path: &Path, version: i64) -> Result<(), StoreError> {
    if version > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found: version,
        });
    }
    if version < SCHEMA_VERSION {
        return Err(StoreError::Other(format!(
            "{}: schema version {version} needs migrating to {SCHEMA_VERSION}, which this \
             command does not do (it only reads): run `ripe-cidr-collector run` once, or \
             start the daemon",
            path.display()
        )));
    }
    Ok(())
}

/// A read-only connection and the schema version of its file (the first read of the
/// file happens here, so a failure to read shows here too).
fn connect(path: &Path, immutable: bool) -> rusqlite::Result<(Connection, i64)> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let c = Connection::open_with_flags(uri(path, immutable), flags)?;
    c.busy_timeout(Duration::from_millis(5000))?;
    c.execute_batch(&format!(
        "PRAGMA temp_store=MEMORY; PRAGMA cache_size=-{CACHE_KIB};"
    ))?;
    let version: i64 = c.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    Ok((c, version))
}

/// True when no WAL frames wait beside `db`: the main file holds every commit.
fn wal_is_empty(db: &Path) -> bool {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    match fs::metadata(&wal) {
        Ok(m) => m.len() == 0,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// `path` as an SQLite URI (`file:` with `%`, `?` and `#` escaped).
fn uri(path: &Path, immutable: bool) -> String {
    let mut s = String::from("file:");
    for b in path.as_os_str().as_encoded_bytes() {
        match b {
            b'%' | b'?' | b'#' | 0x80.. => s.push_str(&format!("%{b:02X}")),
            _ => s.push(*b as char),
        }
    }
    s.push_str(if immutable {
        "?mode=ro&immutable=1"
    } else {
        "?mode=ro"
    });
    s
}
