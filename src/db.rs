//! The SQLite store. All SQL of the program lives in this module: `db.rs` opens
//! the database (pragmas, errors, damage), `migrate` brings its schema up to date,
//! `write` holds merge/sweep/purge, `read` the queries, `history` the `changes` table,
//! `lookup` the indexed searches by value.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, TransactionBehavior};

use crate::config::Paths;
use crate::source::Kind;
use crate::util;

mod codec;
mod dump;
mod fault;
mod gate;
mod history;
mod import;
mod journal;
mod lookup;
mod migrate;
mod names;
mod omitted;
mod pool;
mod read;
mod readonly;
mod room;
mod schema;
mod select;
pub mod snapshot;
#[cfg(test)]
mod tests;
pub mod trust;
mod values;
mod write;

pub use history::{Change, ChangeRow, DEFAULT_HISTORY_DAYS, MAX_ROWS};
pub use journal::JournalMode;
pub use names::REFRESH_SECONDS as NAME_REFRESH_SECONDS;
pub use pool::{Pool, SETTLED};
pub use read::{Listed, Row, SourceSummary};
pub use readonly::open_read;
pub use values::Values;
pub use write::{MergeStats, WriteTx};

/// Whether the warning about legacy files beside an existing database was given.
static LEGACY_WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The schema version this binary writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 5;

/// Page cache per connection, in KiB: small, because a router has little memory (a
/// connection kept by a [`Pool`] releases its cache between uses).
const CACHE_KIB: i64 = 2048;

/// A storage failure, classified so that callers can tell a passing lock from damage.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database stayed locked by another process longer than the busy timeout.
    #[error("database busy: {0}")]
    Busy(#[source] Box<rusqlite::Error>),
    /// The database is damaged; its files were moved aside to `moved_to` (see
    /// [`Db::fail`], the one place that decides it).
    #[error("{}", corrupt_text(cause, moved_to.as_deref()))]
    Corrupt {
        /// What SQLite said.
        #[source]
        cause: Box<rusqlite::Error>,
        /// The new name of the main file, when moving it aside worked.
        moved_to: Option<PathBuf>,
    },
    /// The database was written by a newer version of this program.
    #[error(
        "{}: schema version {found} is newer than this program knows ({SCHEMA_VERSION}); \
         upgrade ripe-cidr-collector or use another --db",
        path.display()
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// Its `user_version`.
        found: i64,
    },
    /// A legacy JSON file could not be read; nothing was imported or changed.
    #[error("legacy import: {0}")]
    Legacy(#[from] crate::legacy::LegacyError),
    /// Any other SQLite failure (a constraint, a limit).
    #[error("database error: {0}")]
    Sql(#[source] Box<rusqlite::Error>),
    /// The database could not be written for a reason of its file system (full,
    /// read-only, permissions, an I/O error).
    #[error("{}: {why} ({cause})", path.display())]
    Write {
        /// The database file.
        path: PathBuf,
        /// The cause in a person's words: "disk full", "read-only file system".
        why: String,
        /// What SQLite said.
        #[source]
        cause: Box<rusqlite::Error>,
    },
    /// A file of the store (directory, snapshot) could not be read or written.
    #[error("{}: {}", path.display(), crate::util::io_reason(cause))]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        cause: std::io::Error,
    },
    /// A snapshot that is not one (bad magic, checksum or layout).
    #[error("{}: not a valid snapshot ({why})", path.display())]
    BadSnapshot {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A failure without a cause of its own (a missing setting).
    #[error("{0}")]
    Other(String),
}

fn corrupt_text(cause: &rusqlite::Error, moved_to: Option<&Path>) -> String {
    match moved_to {
        Some(p) => format!(
            "database corrupt ({cause}); moved aside to {}; the next run or request starts a fresh database",
            p.display()
        ),
        None => format!("database corrupt ({cause}); could not move it aside"),
    }
}

impl StoreError {
    /// True for damage that moved the database aside.
    pub fn is_corrupt(&self) -> bool {
        matches!(self, StoreError::Corrupt { .. })
    }

    pub(crate) fn io(path: &Path, cause: std::io::Error) -> StoreError {
        StoreError::Io {
            path: path.to_path_buf(),
            cause,
        }
    }
}

/// Classifies a SQLite error, without side effects: damage is [`StoreError::Corrupt`]
/// with nothing moved yet; [`fail`] acts on it.
impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
                StoreError::Busy(Box::new(e))
            }
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => StoreError::Corrupt {
                cause: Box::new(e),
                moved_to: None,
            },
            _ => StoreError::Sql(Box::new(e)),
        }
    }
}

/// Moves `db` and its `-wal`/`-shm` aside as `<db>.corrupt-<ts>[-wal|-shm]`. Returns
/// the new name of the main file. Nothing is deleted.
pub fn quarantine(db: &Path) -> std::io::Result<PathBuf> {
    // A link (OpenWrt: RAM data directory, database on flash) stays: the file it
    // points to, beside which SQLite keeps -wal and -shm, is what is moved aside, so
    // the next open creates the fresh database where the link points.
    let resolved;
    let db = match fs::symlink_metadata(db) {
        Ok(m) if m.file_type().is_symlink() => {
            resolved = fs::canonicalize(db)?;
            resolved.as_path()
        }
        _ => db,
    };
    let ts = util::compact_ts(util::unix_now());
    let name = db
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "ripe.db".into());
    let target = db.with_file_name(format!("{name}.corrupt-{ts}"));
    fs::rename(db, &target)?;
    for suffix in ["-wal", "-shm"] {
        let from = db.with_file_name(format!("{name}{suffix}"));
        if from.exists() {
            let to = db.with_file_name(format!("{name}.corrupt-{ts}{suffix}"));
            if let Err(e) = fs::rename(&from, &to) {
                log::error!("could not move {} aside: {e}", from.display());
            }
        }
    }
    Ok(target)
}

/// The one step that acts on a failed use of the database at `db`: the error is
/// classified, and damage moves the database files aside at once, so that the next
/// open starts fresh instead of failing for ever. Every SQL failure of the store
/// passes here (through [`Db::run`], [`open`] and the write transaction).
pub(crate) fn fail(db: &Path, e: impl Into<StoreError>) -> StoreError {
    match e.into() {
        StoreError::Corrupt {
            cause,
            moved_to: None,
        } => {
            let moved_to = match quarantine(db) {
                Ok(p) => {
                    log::error!("{}: {cause}; moved aside to {}", db.display(), p.display());
                    Some(p)
                }
                Err(err) => {
                    log::error!("{}: {cause}; moving it aside failed: {err}", db.display());
                    None
                }
            };
            StoreError::Corrupt { cause, moved_to }
        }
        StoreError::Sql(cause) => match fault::write_failure(db, &cause) {
            Some(why) => StoreError::Write {
                path: db.to_path_buf(),
                why,
                cause,
            },
            None => StoreError::Sql(cause),
        },
        other => other,
    }
}

/// Runs a journal mode switch. SQLite answers a concurrent switch (another process
/// converting the same fresh database, or importing right after) with BUSY without
/// calling the busy handler, so this waits and retries itself.
fn retry_busy<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let start = std::time::Instant::now();
    loop {
        match f() {
            Err(e)
                if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                    && start.elapsed() < Duration::from_secs(120) =>
            {
                std::thread::sleep(Duration::from_millis(25));
            }
            other => return other,
        }
    }
}

/// The journal mode a database at `db` uses (probed once per process and directory).
pub fn journal_mode_for(db: &Path) -> JournalMode {
    journal::mode_for(db)
}

/// An open database: one connection with the pragmas set and the schema current.
pub struct Db {
    pub(crate) conn: Connection,
    pub(crate) path: PathBuf,
    mode: JournalMode,
    /// Days the `changes` rows are kept by the writes of this connection.
    history_days: u32,
    /// A write transaction was started: see the `Drop` impl.
    wrote: bool,
}

/// How long a writer's last checkpoint waits for readers (see the `Drop` impl).
const CLOSING_CHECKPOINT_WAIT: Duration = Duration::from_millis(200);

impl Drop for Db {
    /// A writer truncates the WAL as it closes. SQLite checkpoints and deletes the WAL
    /// when the last connection closes; with a connection kept open elsewhere (the
    /// API's [`Pool`]) this one is not the last, and the WAL would keep the size of
    /// the largest write (megabytes after a big merge, in RAM on a router's tmpfs) and
    /// its frames uncheckpointed. Waits briefly for readers; when one stays longer,
    /// the next writer's close does it.
    fn drop(&mut self) {
        if self.wrote && self.mode == JournalMode::Wal {
            let _ = self.conn.busy_timeout(CLOSING_CHECKPOINT_WAIT);
            let _ = self
                .conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        }
    }
}

impl fmt::Debug for Db {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Db").field("path", &self.path).finish()
    }
}

/// Opens the database at `paths.db`, creating it (and importing the legacy JSON files
/// of `paths.data_dir` once) when needed.
pub fn open(paths: &Paths) -> Result<Db, StoreError> {
    let path = paths.db.clone();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
    }
    let new = fs::symlink_metadata(&path).is_err();
    let restored = snapshot::restore_if_missing(paths)?;
    let mode = journal::mode_for(&path);
    if mode == JournalMode::Delete {
        journal::leave_wal(&path).map_err(|e| fail(&path, e))?;
    }
    let conn = Connection::open(&path).map_err(|e| fail(&path, e))?;
    if new {
        // Made (or restored) by root: the service's user must still write it. SQLite
        // itself gives the journals root makes to the database's owner.
        if let Ok(f) = fs::File::open(&path) {
            crate::util::own_like_dir(&f, &path);
        }
    }
    let mut db = Db {
        conn,
        path,
        mode,
        history_days: DEFAULT_HISTORY_DAYS,
        wrote: false,
    };
    db.setup(paths).map_err(|e| fail(&db.path, e))?;
    if restored {
        // What the snapshot holds is saved.
        let (generation, _) = db.generation()?;
        db.saved(generation)?;
    }
    Ok(db)
}

impl Db {
    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The journal mode in use (see docs/storage.md, "Journal mode").
    pub fn journal_mode(&self) -> JournalMode {
        self.mode
    }

    /// Sets `history_days` (config) for the writes of this connection: each write
    /// prunes `changes` to it; 0 records no changes at all.
    pub fn set_history_days(&mut self, days: u32) {
        self.history_days = days;
    }

    /// How many writes changed stored values (`meta.generation`), and that count when
    /// the last snapshot was read.
    pub fn generation(&self) -> Result<(i64, i64), StoreError> {
        self.run(|c| {
            c.query_row(
                "SELECT (SELECT value FROM meta WHERE key = 'generation'),
                        (SELECT value FROM meta WHERE key = 'saved_generation')",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })
    }

    /// Records that a snapshot holds the values as of `generation`.
    pub(crate) fn saved(&self, generation: i64) -> Result<(), StoreError> {
        self.run(|c| {
            c.execute(
                "UPDATE meta SET value = ?1 WHERE key = 'saved_generation' AND value < ?1",
                [generation],
            )
        })?;
        Ok(())
    }

    /// Whether this connection may serve another use: no transaction is left open,
    /// and the schema is still the one it was opened on (another version may have
    /// migrated the file in place).
    pub(crate) fn current(&self) -> bool {
        self.conn.is_autocommit()
            && self
                .conn
                .query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
                .is_ok_and(|v| v == SCHEMA_VERSION)
    }

    /// Readies a connection to be kept idle: no transaction open, page cache released
    /// (the parsed schema stays). False when it should be closed instead.
    pub(crate) fn idle(&self) -> bool {
        self.conn.is_autocommit() && self.conn.execute_batch("PRAGMA shrink_memory").is_ok()
    }

    /// Runs `f` on the connection; a failure passes [`fail`].
    pub(crate) fn run<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        f(&self.conn).map_err(|e| fail(&self.path, e))
    }

    fn setup(&mut self, paths: &Paths) -> Result<(), StoreError> {
        let c = &self.conn;
        c.busy_timeout(Duration::from_millis(5000))?;
        // Read the version before anything writes: a newer database stays untouched.
        let version: i64 = c.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                path: self.path.clone(),
                found: version,
            });
        }
        let mut mode = self.mode;
        let want = mode.as_str();
        let got = retry_busy(|| {
            c.query_row(&format!("PRAGMA journal_mode={want}"), [], |r| {
                r.get::<_, String>(0)
            })
        })?;
        if !got.eq_ignore_ascii_case(want) {
            log::warn!(
                "{}: journal_mode is {got}, not {want}: readers may wait for a collection",
                self.path.display()
            );
            mode = JournalMode::Delete;
        }
        // Without WAL only FULL survives a power cut (SQLite's documentation).
        let sync = match mode {
            JournalMode::Wal => "NORMAL",
            JournalMode::Delete => "FULL",
        };
        c.execute_batch(&format!(
            "PRAGMA synchronous={sync}; PRAGMA temp_store=MEMORY; PRAGMA cache_size=-{CACHE_KIB};"
        ))?;
        self.mode = mode;
        if version < SCHEMA_VERSION {
            self.wrote = true;
            migrate::migrate(self, paths)?;
        } else if !LEGACY_WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
            // Once per process: the API opens the database for every request.
            for f in Kind::ALL.into_iter().filter_map(|k| paths.legacy(k)) {
                if f.exists() {
                    log::warn!(
                        "{} is not imported: the database {} exists already (the import runs \
                         only into a new database; move the database away to import)",
                        f.display(),
                        self.path.display()
                    );
                }
            }
        }
        Ok(())
    }

    /// Starts a write transaction (`BEGIN IMMEDIATE`, so it waits for other writers
    /// up front instead of failing at its first write).
    pub fn write(&mut self) -> Result<WriteTx<'_>, StoreError> {
        self.wrote = true;
        let path = &self.path;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| fail(path, e))?;
        Ok(WriteTx {
            tx,
            path,
            history_days: self.history_days,
            time: std::cell::Cell::new(None),
            changed: std::cell::Cell::new(false),
        })
    }

    /// Merges one source in its own transaction; see [`WriteTx::merge_source`].
    pub fn merge_source(
        &mut self,
        kind: Kind,
        source: &str,
        values: &[String],
        now: i64,
        ttl_days: u32,
    ) -> Result<MergeStats, StoreError> {
        let tx = self.write()?;
        let stats = tx.merge_source(kind, source, values, now, ttl_days)?;
        tx.commit()?;
        Ok(stats)
    }

    /// Deletes every row of one source now; returns how many.
    pub fn purge_source(&mut self, kind: Kind, source: &str) -> Result<usize, StoreError> {
        let tx = self.write()?;
        let n = tx.purge_source(kind, source)?;
        tx.commit()?;
        Ok(n)
    }

    /// Sweeps unconfigured sources of `kind` in its own transaction; see
    /// [`WriteTx::sweep_unconfigured`].
    pub fn sweep_unconfigured(
        &mut self,
        kind: Kind,
        configured: &[String],
        now: i64,
        ttl_days: u32,
    ) -> Result<usize, StoreError> {
        let tx = self.write()?;
        let n = tx.sweep_unconfigured(kind, configured, now, ttl_days)?;
        tx.commit()?;
        Ok(n)
    }
}
