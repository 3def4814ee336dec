//! Schema migrations: numbered steps from the database's `user_version` up to
//! [`SCHEMA_VERSION`](super::SCHEMA_VERSION). Each step runs in its own
//! `BEGIN IMMEDIATE` transaction and sets `user_version` to its number before it
//! commits, so a crash between steps leaves a database at a known version, and a second
//! process opening at the same moment waits for the step and then finds it done.

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use rusqlite::{OptionalExtension, Transaction, TransactionBehavior};

use super::{Db, StoreError, SCHEMA_VERSION};
use crate::config::Paths;
use crate::util;

/// Version 1: the `addresses` table (only tests make one now: a new database gets
/// the current schema).
#[cfg(test)]
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
        let mut next = version + 1;
        match next {
            1 => (imported, next) = to_v1(&tx, paths)?,
            2 => to_v2(&tx)?,
            3 => {
                super::schema::to_v3(&tx)?;
                compacted = true;
            }
            4 => tx.execute_batch(super::trust::SCHEMA_V4)?,
            5 => tx.execute_batch(super::names::SCHEMA_NAMES)?,
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

/// 0 → 1: a new database gets the current schema at once, with the legacy JSON files
/// of the data directory imported into it: no intermediate tables, so nothing to
/// compact (VACUUM copies the whole database into RAM). A database of version 0 that
/// already has `addresses` only gets its version set. Returns the files imported and
/// the version reached.
fn to_v1(tx: &Transaction<'_>, paths: &Paths) -> Result<(Vec<PathBuf>, i64), StoreError> {
    let has_table = tx
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='addresses'",
            [],
            |_| Ok(()),
        )
        .optional()?
        .is_some();
    if has_table {
        return Ok((Vec::new(), 1));
    }
    super::schema::create_empty(tx)?;
    tx.execute_batch(super::schema::INDEX)?;
    Ok((super::import::legacy(tx, paths)?, SCHEMA_VERSION))
}

/// 1 → 2: adds the `changes` table. Every row of `addresses` stays as it is; a
/// version-1 binary refuses the result (its version is newer than it knows). Going
/// back by hand: `DROP TABLE changes; PRAGMA user_version = 1;` (the index goes with
/// the table).
fn to_v2(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(super::history::SCHEMA_V2)
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
