//! The SQLite store: schema, migrations, merge/sweep/purge, queries and value
//! normalisation. All SQL of the program lives here.

use std::net::IpAddr;

use ipnet::IpNet;

use crate::config::Kind;

/// Normalises a prefix from an ASN source: host bits cleared (`10.0.0.1/8` →
/// `10.0.0.0/8`), IPv6 in canonical lower-case form. A bare address becomes a host
/// prefix (`/32`, `/128`).
pub fn normalize_prefix(s: &str) -> Result<String, String> {
    let t = s.trim();
    if let Ok(net) = t.parse::<IpNet>() {
        return Ok(net.trunc().to_string());
    }
    if let Ok(ip) = t.parse::<IpAddr>() {
        return Ok(IpNet::from(ip).to_string());
    }
    Err(format!("invalid prefix {s:?}"))
}

/// Normalises an address from an FQDN source: a bare address in canonical form.
pub fn normalize_address(s: &str) -> Result<String, String> {
    s.trim()
        .parse::<IpAddr>()
        .map(|ip| ip.to_string())
        .map_err(|_| format!("invalid IP address {s:?}"))
}

/// Normalises a value for a source of `kind`.
pub fn normalize_value(kind: Kind, s: &str) -> Result<String, String> {
    match kind {
        Kind::Asn => normalize_prefix(s),
        Kind::Fqdn => normalize_address(s),
    }
}

use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, ErrorCode, OptionalExtension, TransactionBehavior};

use crate::config::Paths;
use crate::format::TypeFilter;
use crate::legacy;
use crate::util;

/// Whether the warning about legacy files beside an existing database was given.
static LEGACY_WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The schema version this binary writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 1;

/// Page cache per connection, in KiB: small, because a router has little memory and the
/// API opens a connection per request.
const CACHE_KIB: i64 = 2048;

const SCHEMA: &str = "
CREATE TABLE addresses (
    kind       TEXT NOT NULL CHECK (kind IN ('asn', 'fqdn')),
    source     TEXT NOT NULL,
    value      TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    last_seen  TEXT NOT NULL,
    PRIMARY KEY (kind, source, value)
);
CREATE INDEX addresses_value ON addresses (value);
";

/// A storage failure, classified so that callers can tell a passing lock from damage.
#[derive(Debug)]
pub enum StoreError {
    /// The database stayed locked by another process longer than the busy timeout.
    Busy(String),
    /// The database is damaged; its files were moved aside to `moved_to`.
    Corrupt {
        /// What SQLite said.
        message: String,
        /// The new name of the main file, when moving it aside worked.
        moved_to: Option<PathBuf>,
    },
    /// The database was written by a newer version of this program.
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// Its `user_version`.
        found: i64,
    },
    /// A legacy JSON file could not be read; nothing was imported or changed.
    Legacy(String),
    /// Any other failure (I/O, full disk, permissions).
    Other(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Busy(m) => write!(f, "database busy: {m}"),
            StoreError::Corrupt { message, moved_to } => match moved_to {
                Some(p) => write!(
                    f,
                    "database corrupt ({message}); moved aside to {}; the next run or request starts a fresh database",
                    p.display()
                ),
                None => write!(f, "database corrupt ({message}); could not move it aside"),
            },
            StoreError::NewerSchema { path, found } => write!(
                f,
                "{}: schema version {found} is newer than this program knows ({SCHEMA_VERSION}); \
                 upgrade ripe-cidr-collector or use another --db",
                path.display()
            ),
            StoreError::Legacy(m) => write!(f, "legacy import: {m}"),
            StoreError::Other(m) => write!(f, "database error: {m}"),
        }
    }
}

impl std::error::Error for StoreError {}

impl StoreError {
    /// True for damage that moved the database aside.
    pub fn is_corrupt(&self) -> bool {
        matches!(self, StoreError::Corrupt { .. })
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

/// Classifies a SQLite error; damage moves the database files aside at once, so that
/// the next open starts fresh instead of failing for ever.
fn classify(db: &Path, e: rusqlite::Error) -> StoreError {
    let code = e.sqlite_error_code();
    match code {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            StoreError::Busy(e.to_string())
        }
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
            let moved_to = match quarantine(db) {
                Ok(p) => {
                    log::error!("{}: {e}; moved aside to {}", db.display(), p.display());
                    Some(p)
                }
                Err(err) => {
                    log::error!("{}: {e}; moving it aside failed: {err}", db.display());
                    None
                }
            };
            StoreError::Corrupt {
                message: e.to_string(),
                moved_to,
            }
        }
        _ => StoreError::Other(e.to_string()),
    }
}

/// Switches the connection to WAL. SQLite answers a concurrent switch (another
/// process converting the same fresh database, or importing right after) with BUSY
/// without calling the busy handler, so this waits and retries itself.
fn set_wal(c: &Connection) -> rusqlite::Result<String> {
    let start = std::time::Instant::now();
    loop {
        match c.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)) {
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

/// What one merge did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeStats {
    /// Values stored for the first time.
    pub added: usize,
    /// Values seen again (their `last_seen` moved to now).
    pub refreshed: usize,
    /// Expired values deleted.
    pub removed: usize,
}

/// One stored row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The kind of source.
    pub kind: Kind,
    /// The source (`62041`, `example.com`).
    pub source: String,
    /// The prefix or address.
    pub value: String,
    /// When it was first stored.
    pub first_seen: String,
    /// When it was last seen.
    pub last_seen: String,
}

impl Row {
    fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
        let kind: String = r.get(0)?;
        Ok(Row {
            kind: if kind == "fqdn" {
                Kind::Fqdn
            } else {
                Kind::Asn
            },
            source: r.get(1)?,
            value: r.get(2)?,
            first_seen: r.get(3)?,
            last_seen: r.get(4)?,
        })
    }
}

/// Summary of one stored source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceSummary {
    /// The source.
    pub source: String,
    /// How many values it has.
    pub count: u64,
    /// The newest `last_seen` of its values.
    pub last_seen: String,
}

/// The `last_seen` below which values expire, or `None` when nothing expires.
fn cutoff(now: i64, ttl_days: u32) -> Option<String> {
    (ttl_days > 0).then(|| util::iso(now - i64::from(ttl_days) * 86_400))
}

/// An open database: one connection with the pragmas set and the schema current.
pub struct Db {
    conn: Connection,
    path: PathBuf,
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
        fs::create_dir_all(dir)
            .map_err(|e| StoreError::Other(format!("{}: {e}", dir.display())))?;
    }
    let conn = Connection::open(&path).map_err(|e| classify(&path, e))?;
    let mut db = Db { conn, path };
    db.setup(paths).map_err(|e| match e {
        SetupError::Sql(e) => classify(&db.path, e),
        SetupError::Store(s) => s,
    })?;
    Ok(db)
}

enum SetupError {
    Sql(rusqlite::Error),
    Store(StoreError),
}

impl From<rusqlite::Error> for SetupError {
    fn from(e: rusqlite::Error) -> Self {
        SetupError::Sql(e)
    }
}

impl Db {
    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, e: rusqlite::Error) -> StoreError {
        classify(&self.path, e)
    }

    fn setup(&mut self, paths: &Paths) -> Result<(), SetupError> {
        let c = &self.conn;
        c.busy_timeout(Duration::from_millis(5000))?;
        // Read the version before anything writes: a newer database stays untouched.
        let version: i64 = c.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(SetupError::Store(StoreError::NewerSchema {
                path: self.path.clone(),
                found: version,
            }));
        }
        let mode = set_wal(c)?;
        if !mode.eq_ignore_ascii_case("wal") {
            log::warn!(
                "{}: journal_mode is {mode}, not WAL: readers may wait for a collection \
                 (WAL needs a local filesystem with shared memory)",
                self.path.display()
            );
        }
        c.execute_batch(&format!(
            "PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY; PRAGMA cache_size=-{CACHE_KIB};"
        ))?;
        if version < SCHEMA_VERSION {
            self.migrate(paths)?;
        } else if !LEGACY_WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
            // Once per process: the API opens the database for every request.
            for kind in Kind::ALL {
                let f = paths.legacy(kind);
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

    /// Creates the schema and imports the legacy files, all in one `BEGIN IMMEDIATE`
    /// transaction: a second process opening at the same moment waits for it and then
    /// finds the version set, so the import happens exactly once.
    fn migrate(&mut self, paths: &Paths) -> Result<(), SetupError> {
        // A large legacy import on a slow router may hold the lock a while.
        self.conn.busy_timeout(Duration::from_secs(120))?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(SetupError::Store(StoreError::NewerSchema {
                path: self.path.clone(),
                found: version,
            }));
        }
        let mut imported = Vec::new();
        if version == 0 {
            let has_table: bool = tx
                .query_row(
                    "SELECT 1 FROM sqlite_master WHERE type='table' AND name='addresses'",
                    [],
                    |_| Ok(true),
                )
                .optional()?
                .unwrap_or(false);
            if !has_table {
                tx.execute_batch(SCHEMA)?;
                let now = util::unix_now();
                let batch = legacy::read_all(paths, now)
                    .map_err(|e| SetupError::Store(StoreError::Legacy(e.to_string())))?;
                {
                    let mut ins = tx.prepare(
                        "INSERT INTO addresses (kind, source, value, first_seen, last_seen)
                         VALUES (?1, ?2, ?3, ?4, ?5)
                         ON CONFLICT(kind, source, value) DO UPDATE SET
                           first_seen = min(first_seen, excluded.first_seen),
                           last_seen = max(last_seen, excluded.last_seen)",
                    )?;
                    for r in &batch.rows {
                        ins.execute(params![
                            r.kind.as_str(),
                            r.source,
                            r.value,
                            r.first_seen,
                            r.last_seen
                        ])?;
                    }
                }
                if !batch.files.is_empty() {
                    log::info!(
                        "imported {} values from {}",
                        batch.rows.len(),
                        batch
                            .files
                            .iter()
                            .map(|f| f.display().to_string())
                            .collect::<Vec<_>>()
                            .join(" and ")
                    );
                }
                imported = batch.files;
            }
        }
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        tx.commit()?;
        self.conn.busy_timeout(Duration::from_millis(5000))?;
        // Renamed only after the commit, so a failed import leaves them in place. (A
        // crash between commit and rename leaves them unrenamed but never re-imports:
        // the version is set.)
        let ts = util::compact_ts(util::unix_now());
        for f in imported {
            let mut to = f.clone().into_os_string();
            to.push(format!(".migrated-{ts}"));
            if let Err(e) = fs::rename(&f, &to) {
                log::warn!("imported {} but could not rename it: {e}", f.display());
            }
        }
        Ok(())
    }

    /// Starts a write transaction (`BEGIN IMMEDIATE`, so it waits for other writers
    /// up front instead of failing at its first write).
    pub fn write(&mut self) -> Result<WriteTx<'_>, StoreError> {
        let path = &self.path;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| classify(path, e))?;
        Ok(WriteTx { tx, path })
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

    /// The distinct values of the selected sources, sorted as strings.
    pub fn get_values(&self, filter: TypeFilter) -> Result<Vec<String>, StoreError> {
        let mut values = Vec::new();
        self.for_each_value(filter, |v| values.push(v.to_string()))?;
        values.sort_unstable();
        values.dedup();
        Ok(values)
    }

    /// Calls `f` with every stored value of the selected sources, duplicates included
    /// and in no particular order, without allocating per value: the fast path behind
    /// the listings (which sort and de-duplicate anyway).
    pub fn for_each_value(
        &self,
        filter: TypeFilter,
        mut f: impl FnMut(&str),
    ) -> Result<(), StoreError> {
        let kind = match filter {
            TypeFilter::All => None,
            TypeFilter::Cidr => Some("asn"),
            TypeFilter::Fqdn => Some("fqdn"),
        };
        let mut run = || -> rusqlite::Result<()> {
            let mut st = match kind {
                // Both read a covering index, never the table.
                None => self
                    .conn
                    .prepare("SELECT value FROM addresses INDEXED BY addresses_value")?,
                Some(_) => self
                    .conn
                    .prepare("SELECT value FROM addresses WHERE kind = ?1")?,
            };
            let mut rows = match kind {
                None => st.query([])?,
                Some(k) => st.query([k])?,
            };
            while let Some(r) = rows.next()? {
                if let rusqlite::types::ValueRef::Text(t) = r.get_ref(0)? {
                    if let Ok(v) = std::str::from_utf8(t) {
                        f(v);
                    }
                }
            }
            Ok(())
        };
        run().map_err(|e| self.err(e))
    }

    /// The number of stored rows (source, value pairs) of a kind.
    pub fn count_values(&self, kind: Kind) -> Result<u64, StoreError> {
        let (asn, fqdn) = self.counts()?;
        Ok(match kind {
            Kind::Asn => asn,
            Kind::Fqdn => fqdn,
        })
    }

    /// The number of stored rows of each kind, `(asn, fqdn)`, in one pass over the
    /// primary-key index.
    pub fn counts(&self) -> Result<(u64, u64), StoreError> {
        let run = || -> rusqlite::Result<(u64, u64)> {
            let mut st = self
                .conn
                .prepare("SELECT kind, COUNT(*) FROM addresses GROUP BY kind")?;
            let mut rows = st.query([])?;
            let mut out = (0, 0);
            while let Some(r) = rows.next()? {
                let n = r.get::<_, i64>(1)? as u64;
                match r.get_ref(0)?.as_str()? {
                    "asn" => out.0 = n,
                    _ => out.1 = n,
                }
            }
            Ok(out)
        };
        run().map_err(|e| self.err(e))
    }

    /// Every stored source of a kind with its count and newest `last_seen`.
    pub fn sources(&self, kind: Kind) -> Result<Vec<SourceSummary>, StoreError> {
        let run = || -> rusqlite::Result<Vec<SourceSummary>> {
            let mut st = self.conn.prepare(
                "SELECT source, COUNT(*), MAX(last_seen) FROM addresses WHERE kind = ?1
                 GROUP BY source ORDER BY source",
            )?;
            let rows = st.query_map([kind.as_str()], |r| {
                Ok(SourceSummary {
                    source: r.get(0)?,
                    count: r.get::<_, i64>(1)? as u64,
                    last_seen: r.get(2)?,
                })
            })?;
            rows.collect()
        };
        run().map_err(|e| self.err(e))
    }

    /// Every row of one source, ordered by value (for inspection and tests).
    pub fn rows(&self, kind: Kind, source: &str) -> Result<Vec<Row>, StoreError> {
        let run = || -> rusqlite::Result<Vec<Row>> {
            let mut st = self.conn.prepare(
                "SELECT kind, source, value, first_seen, last_seen FROM addresses
                 WHERE kind = ?1 AND source = ?2 ORDER BY value",
            )?;
            let rows = st.query_map([kind.as_str(), source], Row::from_row)?;
            rows.collect()
        };
        run().map_err(|e| self.err(e))
    }

    /// Every row, ordered by kind, source and value.
    pub fn all_rows(&self) -> Result<Vec<Row>, StoreError> {
        let run = || -> rusqlite::Result<Vec<Row>> {
            let mut st = self.conn.prepare(
                "SELECT kind, source, value, first_seen, last_seen FROM addresses
                 ORDER BY kind, source, value",
            )?;
            let rows = st.query_map([], Row::from_row)?;
            rows.collect()
        };
        run().map_err(|e| self.err(e))
    }

    /// A value for a single pragma (for tests and diagnostics).
    pub fn pragma(&self, name: &str) -> Result<String, StoreError> {
        self.conn
            .query_row(&format!("PRAGMA {name}"), [], |r| {
                r.get_ref(0).map(|v| match v {
                    rusqlite::types::ValueRef::Integer(i) => i.to_string(),
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                    other => format!("{other:?}"),
                })
            })
            .map_err(|e| self.err(e))
    }
}

/// A write transaction. Dropped without [`WriteTx::commit`], it rolls back: a failure
/// in the middle leaves every stored row as it was.
pub struct WriteTx<'a> {
    tx: rusqlite::Transaction<'a>,
    path: &'a Path,
}

impl WriteTx<'_> {
    fn err(&self, e: rusqlite::Error) -> StoreError {
        classify(self.path, e)
    }

    /// Commits.
    pub fn commit(self) -> Result<(), StoreError> {
        let path = self.path;
        self.tx.commit().map_err(|e| classify(path, e))
    }

    /// Merges what one source answered now: every value (already normalised) is
    /// stored with `last_seen = now` (`first_seen = now` when new), then the source's
    /// values not seen for `ttl_days` are deleted (none when `ttl_days` is 0).
    pub fn merge_source(
        &self,
        kind: Kind,
        source: &str,
        values: &[String],
        now: i64,
        ttl_days: u32,
    ) -> Result<MergeStats, StoreError> {
        self.merge_inner(kind, source, values, &util::iso(now), cutoff(now, ttl_days))
            .map_err(|e| self.err(e))
    }

    fn merge_inner(
        &self,
        kind: Kind,
        source: &str,
        values: &[String],
        now: &str,
        cutoff: Option<String>,
    ) -> rusqlite::Result<MergeStats> {
        let k = kind.as_str();
        let tx = &self.tx;
        // What the source has now, with each value's last_seen: it tells new values from
        // known ones without one query per value.
        // `Some(last_seen)` until the value is seen in this answer, then `None`.
        let mut stored: HashMap<String, Option<String>> = HashMap::new();
        {
            let mut st = tx.prepare(
                "SELECT value, last_seen FROM addresses WHERE kind = ?1 AND source = ?2",
            )?;
            let mut rows = st.query([k, source])?;
            while let Some(r) = rows.next()? {
                stored.insert(r.get(0)?, Some(r.get(1)?));
            }
        }
        let mut stats = MergeStats::default();
        let mut fresh: Vec<&str> = Vec::new();
        let mut seen_known = 0usize;
        for v in values {
            match stored.get_mut(v.as_str()) {
                Some(last) => {
                    // A value listed twice counts once.
                    if last.take().is_some() {
                        seen_known += 1;
                    }
                }
                None => fresh.push(v),
            }
        }
        fresh.sort_unstable();
        fresh.dedup();
        if seen_known > 0 {
            let mut one = tx.prepare(
                "UPDATE addresses SET last_seen = ?4 WHERE kind = ?1 AND source = ?2 AND value = ?3",
            )?;
            let unseen = stored.len() - seen_known;
            if unseen < seen_known {
                // Most of the source was seen again (the usual case): one UPDATE of the
                // whole source and a restore of the few unseen values beats one UPDATE
                // per value.
                tx.prepare("UPDATE addresses SET last_seen = ?3 WHERE kind = ?1 AND source = ?2")?
                    .execute([k, source, now])?;
                for (v, last) in &stored {
                    if let Some(last) = last {
                        one.execute([k, source, v.as_str(), last.as_str()])?;
                    }
                }
            } else {
                for (v, last) in &stored {
                    if last.is_none() {
                        one.execute([k, source, v.as_str(), now])?;
                    }
                }
            }
        }
        stats.refreshed = seen_known;
        {
            let mut ins = tx.prepare(
                "INSERT INTO addresses (kind, source, value, first_seen, last_seen)
                 VALUES (?1, ?2, ?3, ?4, ?4)",
            )?;
            for v in &fresh {
                ins.execute([k, source, v, now])?;
            }
        }
        stats.added = fresh.len();
        if let Some(cut) = cutoff {
            stats.removed = tx
                .prepare(
                    "DELETE FROM addresses WHERE kind = ?1 AND source = ?2 AND last_seen < ?3",
                )?
                .execute([k, source, cut.as_str()])?;
        }
        Ok(stats)
    }

    /// Deletes the expired rows of sources of `kind` that are not in `configured`;
    /// returns how many. With `ttl_days = 0` nothing expires, so nothing is swept.
    pub fn sweep_unconfigured(
        &self,
        kind: Kind,
        configured: &[String],
        now: i64,
        ttl_days: u32,
    ) -> Result<usize, StoreError> {
        let Some(cut) = cutoff(now, ttl_days) else {
            return Ok(0);
        };
        let run = || -> rusqlite::Result<usize> {
            let stored: Vec<String> = {
                let mut st = self
                    .tx
                    .prepare("SELECT DISTINCT source FROM addresses WHERE kind = ?1")?;
                let rows = st.query_map([kind.as_str()], |r| r.get(0))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            let mut del = self.tx.prepare(
                "DELETE FROM addresses WHERE kind = ?1 AND source = ?2 AND last_seen < ?3",
            )?;
            let mut n = 0;
            for s in stored.iter().filter(|s| !configured.contains(s)) {
                n += del.execute([kind.as_str(), s.as_str(), cut.as_str()])?;
            }
            Ok(n)
        };
        run().map_err(|e| self.err(e))
    }

    /// Deletes every row of one source; returns how many.
    pub fn purge_source(&self, kind: Kind, source: &str) -> Result<usize, StoreError> {
        self.tx
            .execute(
                "DELETE FROM addresses WHERE kind = ?1 AND source = ?2",
                [kind.as_str(), source],
            )
            .map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400;
    const T0: i64 = 1_790_000_000;

    fn setup() -> (tempfile::TempDir, Paths) {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path(), None);
        (dir, paths)
    }

    fn vals(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn values_of(db: &Db, kind: Kind, source: &str) -> Vec<String> {
        db.rows(kind, source)
            .unwrap()
            .into_iter()
            .map(|r| r.value)
            .collect()
    }

    #[test]
    fn normalises_values() {
        assert_eq!(normalize_prefix("10.0.0.1/8").unwrap(), "10.0.0.0/8");
        assert_eq!(
            normalize_prefix("2001:DB8:0:0::1/32").unwrap(),
            "2001:db8::/32"
        );
        assert_eq!(normalize_prefix("1.2.3.4").unwrap(), "1.2.3.4/32");
        assert!(normalize_prefix("1.2.3.4/33").is_err());
        assert!(normalize_prefix("garbage").is_err());
        assert_eq!(
            normalize_address("2606:2800:0:0:0:0:0:1").unwrap(),
            "2606:2800::1"
        );
        assert!(normalize_address("1.2.3.0/24").is_err());
    }

    #[test]
    fn schema_and_pragmas() {
        let (_d, paths) = setup();
        let db = open(&paths).unwrap();
        assert_eq!(db.pragma("journal_mode").unwrap(), "wal");
        assert_eq!(db.pragma("busy_timeout").unwrap(), "5000");
        assert_eq!(db.pragma("synchronous").unwrap(), "1");
        assert_eq!(db.pragma("temp_store").unwrap(), "2");
        assert_eq!(db.pragma("cache_size").unwrap(), format!("-{CACHE_KIB}"));
        assert_eq!(db.pragma("user_version").unwrap(), "1");
        // The build leaves out the schema pragmas (table_info): read the columns of a
        // `SELECT *` and the stored CREATE statement instead.
        let cols: Vec<String> = db
            .conn
            .prepare("SELECT * FROM addresses")
            .unwrap()
            .column_names()
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(cols, ["kind", "source", "value", "first_seen", "last_seen"]);
        let table: String = db
            .conn
            .query_row(
                "SELECT sql FROM sqlite_master WHERE name='addresses'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(
            table.contains("PRIMARY KEY (kind, source, value)"),
            "{table}"
        );
        let idx: String = db
            .conn
            .query_row(
                "SELECT sql FROM sqlite_master WHERE name='addresses_value'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(idx.contains("(value)"));
        // The CHECK constraint holds.
        assert!(db
            .conn
            .execute("INSERT INTO addresses VALUES ('x','s','v','a','b')", [])
            .is_err());
    }

    #[test]
    fn merge_and_ttl() {
        let (_d, paths) = setup();
        let mut db = open(&paths).unwrap();
        let s = db
            .merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8", "11.0.0.0/8"]), T0, 7)
            .unwrap();
        assert_eq!(
            s,
            MergeStats {
                added: 2,
                refreshed: 0,
                removed: 0
            }
        );
        db.merge_source(Kind::Asn, "2", &vals(&["12.0.0.0/8"]), T0, 7)
            .unwrap();
        // A day later 11/8 is gone from the answer: still stored (not expired).
        let s = db
            .merge_source(
                Kind::Asn,
                "1",
                &vals(&["10.0.0.0/8", "10.0.0.0/8"]),
                T0 + DAY,
                7,
            )
            .unwrap();
        assert_eq!(
            s,
            MergeStats {
                added: 0,
                refreshed: 1,
                removed: 0
            }
        );
        let rows = db.rows(Kind::Asn, "1").unwrap();
        assert_eq!(rows[0].first_seen, util::iso(T0));
        assert_eq!(rows[0].last_seen, util::iso(T0 + DAY));
        assert_eq!(
            rows[1].last_seen,
            util::iso(T0),
            "unseen value keeps its last_seen"
        );
        // Eight days after it was last seen, the next merge of source 1 expires it...
        let s = db
            .merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8"]), T0 + 8 * DAY, 7)
            .unwrap();
        assert_eq!(s.removed, 1);
        assert_eq!(values_of(&db, Kind::Asn, "1"), ["10.0.0.0/8"]);
        // ...but source 2's equally old row stays until source 2 is merged.
        assert_eq!(values_of(&db, Kind::Asn, "2"), ["12.0.0.0/8"]);
        let s = db
            .merge_source(Kind::Asn, "2", &[], T0 + 8 * DAY, 7)
            .unwrap();
        assert_eq!(s.removed, 1);
        assert!(values_of(&db, Kind::Asn, "2").is_empty());
    }

    #[test]
    fn ttl_zero_keeps_everything() {
        let (_d, paths) = setup();
        let mut db = open(&paths).unwrap();
        db.merge_source(Kind::Fqdn, "a.example", &vals(&["1.2.3.4"]), T0, 0)
            .unwrap();
        let s = db
            .merge_source(Kind::Fqdn, "a.example", &[], T0 + 3650 * DAY, 0)
            .unwrap();
        assert_eq!(s.removed, 0);
        assert_eq!(
            db.sweep_unconfigured(Kind::Fqdn, &[], T0 + 3650 * DAY, 0)
                .unwrap(),
            0
        );
        assert_eq!(values_of(&db, Kind::Fqdn, "a.example"), ["1.2.3.4"]);
    }

    #[test]
    fn many_values_partial_overlap() {
        // Exercises both update strategies (bulk update + restore, and per value).
        let (_d, paths) = setup();
        let mut db = open(&paths).unwrap();
        let all: Vec<String> = (0..200).map(|i| format!("10.{i}.0.0/16")).collect();
        db.merge_source(Kind::Asn, "1", &all, T0, 7).unwrap();
        let s = db
            .merge_source(Kind::Asn, "1", &all[..150], T0 + DAY, 7)
            .unwrap();
        assert_eq!((s.added, s.refreshed), (0, 150));
        let s = db
            .merge_source(Kind::Asn, "1", &all[..10], T0 + 2 * DAY, 7)
            .unwrap();
        assert_eq!((s.added, s.refreshed), (0, 10));
        let rows = db.rows(Kind::Asn, "1").unwrap();
        let last = |v: &str| {
            rows.iter()
                .find(|r| r.value == v)
                .unwrap()
                .last_seen
                .clone()
        };
        assert_eq!(last("10.0.0.0/16"), util::iso(T0 + 2 * DAY));
        assert_eq!(last("10.100.0.0/16"), util::iso(T0 + DAY));
        assert_eq!(last("10.199.0.0/16"), util::iso(T0));
    }

    #[test]
    fn failed_merge_leaves_rows_untouched() {
        let (_d, paths) = setup();
        let mut db = open(&paths).unwrap();
        db.merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8", "11.0.0.0/8"]), T0, 7)
            .unwrap();
        let before = db.all_rows().unwrap();
        // Inject a failure in the middle of the next merge: inserting this value aborts.
        db.conn
            .execute_batch(
                "CREATE TRIGGER poison BEFORE INSERT ON addresses WHEN NEW.value = '66.0.0.0/8'
                 BEGIN SELECT RAISE(ABORT, 'injected'); END;",
            )
            .unwrap();
        let err = db
            .merge_source(
                Kind::Asn,
                "1",
                &vals(&["10.0.0.0/8", "66.0.0.0/8"]),
                T0 + 30 * DAY,
                7,
            )
            .unwrap_err();
        assert!(err.to_string().contains("injected"), "{err}");
        assert_eq!(db.all_rows().unwrap(), before);
    }

    #[test]
    fn purge_and_sweep() {
        let (_d, paths) = setup();
        let mut db = open(&paths).unwrap();
        db.merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8"]), T0, 7)
            .unwrap();
        db.merge_source(Kind::Asn, "2", &vals(&["11.0.0.0/8", "12.0.0.0/8"]), T0, 7)
            .unwrap();
        db.merge_source(Kind::Fqdn, "x.example", &vals(&["1.1.1.1"]), T0, 7)
            .unwrap();
        assert_eq!(db.purge_source(Kind::Asn, "2").unwrap(), 2);
        assert!(values_of(&db, Kind::Asn, "2").is_empty());
        // Source 1 is no longer configured: kept while fresh, swept once expired.
        assert_eq!(
            db.sweep_unconfigured(Kind::Asn, &[], T0 + 6 * DAY, 7)
                .unwrap(),
            0
        );
        assert_eq!(values_of(&db, Kind::Asn, "1"), ["10.0.0.0/8"]);
        assert_eq!(
            db.sweep_unconfigured(Kind::Asn, &vals(&["1"]), T0 + 8 * DAY, 7)
                .unwrap(),
            0
        );
        assert_eq!(
            db.sweep_unconfigured(Kind::Asn, &[], T0 + 8 * DAY, 7)
                .unwrap(),
            1
        );
        assert!(values_of(&db, Kind::Asn, "1").is_empty());
        // Other kinds are not touched by an ASN sweep.
        assert_eq!(values_of(&db, Kind::Fqdn, "x.example"), ["1.1.1.1"]);
        assert_eq!(db.count_values(Kind::Fqdn).unwrap(), 1);
    }

    #[test]
    fn values_and_counts() {
        let (_d, paths) = setup();
        let mut db = open(&paths).unwrap();
        db.merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8"]), T0, 7)
            .unwrap();
        db.merge_source(
            Kind::Asn,
            "2",
            &vals(&["10.0.0.0/8", "2001:db8::/32"]),
            T0,
            7,
        )
        .unwrap();
        db.merge_source(Kind::Fqdn, "x.example", &vals(&["1.1.1.1"]), T0, 7)
            .unwrap();
        let mut all = db.get_values(TypeFilter::All).unwrap();
        all.sort();
        assert_eq!(all, ["1.1.1.1", "10.0.0.0/8", "2001:db8::/32"]);
        assert_eq!(db.get_values(TypeFilter::Fqdn).unwrap(), ["1.1.1.1"]);
        assert_eq!(db.get_values(TypeFilter::Cidr).unwrap().len(), 2);
        assert_eq!(db.count_values(Kind::Asn).unwrap(), 3);
        let s = db.sources(Kind::Asn).unwrap();
        assert_eq!((s[1].source.as_str(), s[1].count), ("2", 2));
    }

    fn copy_legacy(paths: &Paths) {
        fs::write(
            paths.legacy(Kind::Asn),
            include_str!("../tests/fixtures/legacy/data.json"),
        )
        .unwrap();
        fs::write(
            paths.legacy(Kind::Fqdn),
            include_str!("../tests/fixtures/legacy/fqdn_data.json"),
        )
        .unwrap();
    }

    fn migrated(paths: &Paths) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&paths.data_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".migrated-"))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn legacy_import_once() {
        let (_d, paths) = setup();
        copy_legacy(&paths);
        let before = util::iso(util::unix_now());
        let db = open(&paths).unwrap();
        let rows = db.all_rows().unwrap();
        assert_eq!(rows.len(), 10);
        assert_eq!(rows.iter().filter(|r| r.kind == Kind::Asn).count(), 7);
        let get = |v: &str| rows.iter().find(|r| r.value == v).unwrap();
        assert_eq!(
            (
                get("1.1.1.0/24").first_seen.as_str(),
                get("1.1.1.0/24").last_seen.as_str()
            ),
            ("2026-09-01T00:00:00", "2026-10-02T08:30:00")
        );
        assert_eq!(get("104.16.0.0/13").first_seen, "2026-09-15T00:00:00");
        assert_eq!(get("149.154.167.99").last_seen, "2026-10-03T00:00:00");
        assert_eq!(get("91.108.4.0/22").first_seen, "2026-10-01T12:00:00");
        assert_eq!(
            get("2606:4700::/32").first_seen,
            "2026-10-02T08:30:00.123456"
        );
        assert!(get("91.108.4.0/22").last_seen >= before);
        assert_eq!(get("93.184.216.34").source, "example.com");
        let names = migrated(&paths);
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names[0].starts_with("data.json.migrated-2"));
        assert!(names[1].starts_with("fqdn_data.json.migrated-2"));
        assert!(!paths.legacy(Kind::Asn).exists());
        drop(db);
        // A legacy file that shows up again is not imported a second time.
        copy_legacy(&paths);
        let db = open(&paths).unwrap();
        assert_eq!(db.all_rows().unwrap().len(), 10);
        assert!(paths.legacy(Kind::Asn).exists());
    }

    #[test]
    fn broken_legacy_file_blocks_and_keeps_everything() {
        let (_d, paths) = setup();
        fs::write(paths.legacy(Kind::Asn), "{\"1\": {").unwrap();
        let e = open(&paths).unwrap_err();
        assert!(matches!(e, StoreError::Legacy(_)), "{e}");
        assert!(e.to_string().contains("data.json"), "{e}");
        assert_eq!(
            fs::read_to_string(paths.legacy(Kind::Asn)).unwrap(),
            "{\"1\": {"
        );
        // Once the file is fixed, the import happens.
        fs::write(
            paths.legacy(Kind::Asn),
            r#"{"1": {"prefixes": ["10.0.0.0/8"], "last_updated": "2026-01-01T00:00:00"}}"#,
        )
        .unwrap();
        assert_eq!(open(&paths).unwrap().all_rows().unwrap().len(), 1);
    }

    #[test]
    fn corrupt_database_is_moved_aside() {
        let (_d, paths) = setup();
        fs::write(&paths.db, b"this is not a database at all, just some text..........................................................").unwrap();
        let e = open(&paths).unwrap_err();
        assert!(e.is_corrupt(), "{e}");
        assert!(!paths.db.exists());
        let aside: Vec<_> = fs::read_dir(&paths.data_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("ripe.db.corrupt-"))
            .collect();
        assert_eq!(aside.len(), 1, "{aside:?}");
        assert!(e.to_string().contains("ripe.db.corrupt-"), "{e}");
        // The next open starts fresh.
        let db = open(&paths).unwrap();
        assert!(db.all_rows().unwrap().is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn corrupt_database_behind_a_link() {
        let (dir, paths) = setup();
        let flash = dir.path().join("flash");
        fs::create_dir(&flash).unwrap();
        fs::write(flash.join("ripe.db"), vec![0x42u8; 8192]).unwrap();
        std::os::unix::fs::symlink(flash.join("ripe.db"), &paths.db).unwrap();
        let e = open(&paths).unwrap_err();
        assert!(e.is_corrupt(), "{e}");
        // The link stays; the file on "flash" was moved aside there.
        assert!(fs::symlink_metadata(&paths.db)
            .unwrap()
            .file_type()
            .is_symlink());
        let aside = fs::read_dir(&flash)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with("ripe.db.corrupt-")
            })
            .count();
        assert_eq!(aside, 1);
        // The fresh database is created where the link points.
        let mut db = open(&paths).unwrap();
        db.merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8"]), T0, 7)
            .unwrap();
        assert!(flash.join("ripe.db").is_file());
    }

    #[test]
    fn corruption_found_while_using() {
        let (_d, paths) = setup();
        let mut db = open(&paths).unwrap();
        let many: Vec<String> = (0..5000)
            .map(|i| format!("10.{}.{}.0/24", i / 256, i % 256))
            .collect();
        db.merge_source(Kind::Asn, "1", &many, T0, 7).unwrap();
        drop(db);
        // Checkpoint so the data is in the main file, then damage its pages.
        {
            let c = Connection::open(&paths.db).unwrap();
            c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
        }
        let mut bytes = fs::read(&paths.db).unwrap();
        for b in bytes.iter_mut().skip(4096 * 2) {
            *b = 0x55;
        }
        fs::write(&paths.db, &bytes).unwrap();
        let e = open(&paths)
            .and_then(|db| db.all_rows().map(|_| ()))
            .unwrap_err();
        assert!(e.is_corrupt(), "{e}");
        assert!(!paths.db.exists());
    }

    #[test]
    fn newer_schema_is_refused_untouched() {
        let (_d, paths) = setup();
        {
            let c = Connection::open(&paths.db).unwrap();
            c.execute_batch("CREATE TABLE future (x); PRAGMA user_version = 7;")
                .unwrap();
        }
        let before = fs::read(&paths.db).unwrap();
        let e = open(&paths).unwrap_err();
        assert!(matches!(e, StoreError::NewerSchema { found: 7, .. }), "{e}");
        assert!(e.to_string().contains("newer"), "{e}");
        assert_eq!(fs::read(&paths.db).unwrap(), before);
        assert!(!paths.data_dir.join("ripe.db-wal").exists());
    }
}
