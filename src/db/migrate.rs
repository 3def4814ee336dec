//! Schema migrations: numbered steps from the database's `user_version` up to
//! [`SCHEMA_VERSION`](super::SCHEMA_VERSION). Each step runs in its own
//! `BEGIN IMMEDIATE` transaction and sets `user_version` to its number before it
//! commits, so a crash between steps leaves a database at a known version, and a second
//! process opening at the same moment waits for the step and then finds it done.

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use rusqlite::{params, OptionalExtension, Transaction, TransactionBehavior};

use super::{Db, StoreError, SCHEMA_VERSION};
use crate::config::Paths;
use crate::legacy::{self, LegacyRow};
use crate::util;

/// Version 1: the `addresses` table.
pub(super) const SCHEMA_V1: &str = "
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

/// Brings the database up to [`SCHEMA_VERSION`].
pub(super) fn migrate(db: &mut Db, paths: &Paths) -> Result<(), StoreError> {
    // A large legacy import on a slow router may hold the lock a while.
    db.conn.busy_timeout(Duration::from_secs(120))?;
    let result = steps(db, paths);
    db.conn.busy_timeout(Duration::from_millis(5000))?;
    result
}

fn steps(db: &mut Db, paths: &Paths) -> Result<(), StoreError> {
    let path = db.path.clone();
    let mut imported = Vec::new();
    // A database that had rows before version 3: its old tables' pages are free now,
    // and only VACUUM gives them back (the database lives in RAM on a router).
    let mut compacted = false;
    loop {
        let tx = db
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Read again under the lock: another process may have migrated meanwhile.
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                path,
                found: version,
            });
        }
        if version == SCHEMA_VERSION {
            break;
        }
        let next = version + 1;
        match next {
            1 => imported = to_v1(&tx, paths)?,
            2 => to_v2(&tx)?,
            3 => {
                super::schema::to_v3(&tx)?;
                compacted = true;
            }
            4 => tx.execute_batch(super::trust::SCHEMA_V4)?,
            _ => unreachable_step(next)?,
        }
        tx.pragma_update(None, "user_version", next)?;
        tx.commit()?;
    }
    if !imported.is_empty() {
        // The import changed the stored values: the next snapshot is due.
        db.conn.execute_batch(super::schema::BUMP)?;
    }
    // Renamed only after the commit, so a failed import leaves them in place. (A crash
    // between commit and rename leaves them unrenamed but never re-imports: the
    // version is set.)
    rename_imported(imported);
    if compacted {
        // Only space: a failure (another process reading at this moment) changes no row.
        if let Err(e) = db.conn.execute_batch("VACUUM") {
            log::warn!("{}: VACUUM after the migration: {e}", path.display());
        }
    }
    Ok(())
}

/// A step this binary lacks: only reachable if [`SCHEMA_VERSION`] was raised without
/// adding its step, which the tests catch.
fn unreachable_step(version: i64) -> Result<(), StoreError> {
    Err(StoreError::Other(format!(
        "no migration to schema version {version}"
    )))
}

/// 0 → 1: creates `addresses` and imports the legacy JSON files of the data directory
/// (a database of version 0 that already has the table only gets its version set).
/// Returns the files imported.
fn to_v1(tx: &Transaction<'_>, paths: &Paths) -> Result<Vec<PathBuf>, StoreError> {
    let has_table = tx
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='addresses'",
            [],
            |_| Ok(()),
        )
        .optional()?
        .is_some();
    if has_table {
        return Ok(Vec::new());
    }
    tx.execute_batch(SCHEMA_V1)?;
    let batch = legacy::read_all(paths, util::unix_now()).map_err(StoreError::Legacy)?;
    insert_imported(tx, &batch.rows)?;
    if !batch.files.is_empty() {
        let names: Vec<String> = batch
            .files
            .iter()
            .map(|f| f.display().to_string())
            .collect();
        log::info!(
            "imported {} {} from {}",
            batch.rows.len(),
            crate::util::values(batch.rows.len()),
            names.join(" and ")
        );
        note_unconfigured(paths, &batch.rows);
    }
    Ok(batch.files)
}

/// Says which imported sources `config.json` does not name, and what the first run
/// will do with their values (its sweep of unconfigured sources), so that nothing
/// goes without a word.
fn note_unconfigured(paths: &Paths, rows: &[LegacyRow]) {
    let Ok(loaded) = crate::config::load(&paths.config()) else {
        return;
    };
    let cfg = &loaded.config;
    let mut missing: Vec<String> = rows
        .iter()
        .filter(|r| !cfg.sources(r.kind).contains(&r.source))
        .map(|r| format!("{} {}", r.kind.as_str(), r.source))
        .collect();
    missing.sort();
    missing.dedup();
    let n = missing.len();
    if n == 0 {
        return;
    }
    if n > 10 {
        missing.truncate(10);
        missing.push(format!("and {} more", n - 10));
    }
    let fate = match cfg.ttl_days {
        0 => "they are kept (ttl_days 0)".to_string(),
        d => format!(
            "each run deletes those not seen for ttl_days ({d}), the first run the \
             expired ones"
        ),
    };
    log::warn!(
        "imported {} sources that config.json does not name ({}): {fate}; add them \
         (asn add, fqdn add) to keep collecting them",
        n,
        missing.join(", ")
    );
}

/// 1 → 2: adds the `changes` table. Every row of `addresses` stays as it is; a
/// version-1 binary refuses the result (its version is newer than it knows). Going
/// back by hand: `DROP TABLE changes; PRAGMA user_version = 1;` (the index goes with
/// the table).
fn to_v2(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(super::history::SCHEMA_V2)
}

/// Stores the rows of the legacy import; a value listed twice keeps its earliest
/// `first_seen` and latest `last_seen`.
fn insert_imported(tx: &Transaction<'_>, rows: &[LegacyRow]) -> rusqlite::Result<()> {
    let mut ins = tx.prepare(
        "INSERT INTO addresses (kind, source, value, first_seen, last_seen)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(kind, source, value) DO UPDATE SET
           first_seen = min(first_seen, excluded.first_seen),
           last_seen = max(last_seen, excluded.last_seen)",
    )?;
    for r in rows {
        ins.execute(params![
            r.kind.as_str(),
            r.source,
            r.value,
            r.first_seen,
            r.last_seen
        ])?;
    }
    Ok(())
}

/// Renames imported legacy files to `<name>.migrated-<ts>`, so they are never read again.
fn rename_imported(files: Vec<PathBuf>) {
    let ts = util::compact_ts(util::unix_now());
    for f in files {
        let mut to = f.clone().into_os_string();
        to.push(format!(".migrated-{ts}"));
        if let Err(e) = fs::rename(&f, &to) {
            log::warn!("imported {} but could not rename it: {e}", f.display());
        }
    }
}
