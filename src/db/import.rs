//! The legacy import (part of migration step 0 → 1): the files stream through
//! `legacy`, each entry's values and `seen` members wait in two tables of their own
//! until the entry's end gives their times, then go into `entries` encoded. The two
//! tables are emptied after each entry (their pages serve the next) and dropped at
//! the end, so memory is SQLite's page cache whatever the file's size.

use std::io;
use std::path::PathBuf;

use rusqlite::{params, Statement, Transaction};

use super::codec::{time_of, Stored};
use super::StoreError;
use crate::config::Paths;
use crate::legacy::{self, Item};
use crate::source::Kind;
use crate::util;

const STAGE: &str = "CREATE TABLE legacy_values (raw TEXT, value TEXT);
CREATE TABLE legacy_seen (raw TEXT PRIMARY KEY, first TEXT, last TEXT) WITHOUT ROWID;";

/// The prepared statements of one import.
struct Import<'t> {
    tx: &'t Transaction<'t>,
    value: Statement<'t>,
    seen: Statement<'t>,
    /// An entry's values with their times (`?1` the default `first_seen`, `?2` now).
    timed: Statement<'t>,
    store: Statement<'t>,
    /// Widens the times of a value stored before in the same source.
    again: Statement<'t>,
    now: String,
    /// Values stored (a value listed twice counts twice).
    count: usize,
}

/// Imports both legacy files of the data directory (those that exist) into the empty
/// tables of the current schema; returns the files read.
pub(super) fn legacy(tx: &Transaction<'_>, paths: &Paths) -> Result<Vec<PathBuf>, StoreError> {
    tx.execute_batch(STAGE)?;
    let mut im = Import {
        tx,
        value: tx.prepare("INSERT INTO legacy_values VALUES (?1, ?2)")?,
        seen: tx.prepare("INSERT OR REPLACE INTO legacy_seen VALUES (?1, ?2, ?3)")?,
        timed: tx.prepare(
            "SELECT v.value, coalesce(s.first, ?1), coalesce(s.last, ?2)
             FROM legacy_values v LEFT JOIN legacy_seen s ON s.raw = v.raw",
        )?,
        store: tx.prepare(
            "INSERT OR IGNORE INTO entries (source, value, first_seen, last_seen)
             VALUES (?1, ?2, ?3, ?4)",
        )?,
        // A value listed twice keeps its earliest `first_seen` and latest `last_seen`.
        // Two statements, not an upsert: this SQLite is built without `ON CONFLICT
        // DO UPDATE` (SQLITE_OMIT_UPSERT, 3,856 bytes on mipsel; docs/size.md).
        again: tx.prepare(
            "UPDATE entries SET first_seen = min(first_seen, ?3),
               last_seen = max(last_seen, ?4) WHERE source = ?1 AND value = ?2",
        )?,
        now: util::iso(util::unix_now()),
        count: 0,
    };
    let mut files = Vec::new();
    for kind in Kind::ALL {
        let Some(path) = paths.legacy(kind) else {
            continue;
        };
        // The database's error, kept whole (the reader only carries an io::Error).
        let mut failed = None;
        let mut sink = |item: Item<'_>| {
            im.item(kind, item).map_err(|e| {
                failed = Some(e);
                io::Error::other("storage")
            })
        };
        let read = legacy::read_file(kind, &path, &mut sink);
        if let Some(e) = failed {
            return Err(e.into());
        }
        if read.map_err(StoreError::Legacy)? {
            files.push(path);
        }
    }
    let count = im.count;
    drop(im);
    tx.execute_batch("DROP TABLE legacy_values; DROP TABLE legacy_seen;")?;
    if !files.is_empty() {
        let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        log::info!(
            "imported {count} {} from {}",
            util::values(count),
            names.join(" and ")
        );
        note_unconfigured(tx, paths)?;
    }
    Ok(files)
}

impl Import<'_> {
    fn item(&mut self, kind: Kind, item: Item<'_>) -> rusqlite::Result<()> {
        match item {
            Item::Value { raw, value } => self.value.execute([raw, value]).map(drop),
            Item::Seen { raw, first, last } => {
                self.seen.execute(params![raw, first, last]).map(drop)
            }
            Item::End { source, updated } => self.end(kind, source, updated),
        }
    }

    /// Stores the entry's values: `seen` times when they have them, else
    /// `first_seen = last_updated` (or now) and `last_seen = now`.
    fn end(&mut self, kind: Kind, source: &str, updated: Option<&str>) -> rusqlite::Result<()> {
        let mut sid = None;
        let mut rows = self
            .timed
            .query(params![updated.unwrap_or(&self.now), self.now])?;
        while let Some(r) = rows.next()? {
            let id = match sid {
                Some(id) => id,
                None => *sid.insert(source_id(self.tx, kind, source)?),
            };
            let text = |i| r.get_ref(i).and_then(|v| Ok(v.as_str()?));
            let row = params![
                id,
                Stored::of(text(0)?),
                time_of(text(1)?),
                time_of(text(2)?)
            ];
            if self.store.execute(row)? == 0 {
                self.again.execute(row)?;
            }
            self.count += 1;
        }
        self.tx
            .execute_batch("DELETE FROM legacy_values; DELETE FROM legacy_seen;")
    }
}

fn source_id(tx: &Transaction<'_>, kind: Kind, source: &str) -> rusqlite::Result<i64> {
    let k = [kind.as_str(), source];
    tx.execute(
        "INSERT OR IGNORE INTO sources (kind, name) VALUES (?1, ?2)",
        k,
    )?;
    tx.query_row(
        "SELECT id FROM sources WHERE kind = ?1 AND name = ?2",
        k,
        |r| r.get(0),
    )
}

/// Says which imported sources `config.json` does not name, and what the first run
/// will do with their values (its sweep of unconfigured sources), so that nothing
/// goes without a word.
fn note_unconfigured(tx: &Transaction<'_>, paths: &Paths) -> rusqlite::Result<()> {
    let Ok(loaded) = crate::config::load(&paths.config()) else {
        return Ok(());
    };
    let cfg = &loaded.config;
    let mut st = tx.prepare("SELECT kind, name FROM sources ORDER BY kind, name")?;
    let mut rows = st.query([])?;
    let (mut n, mut missing) = (0, Vec::new());
    while let Some(r) = rows.next()? {
        let (word, name) = (r.get_ref(0)?.as_str()?, r.get_ref(1)?.as_str()?);
        let kind = Kind::from_word(word);
        if kind.is_some_and(|k| !cfg.sources(k).iter().any(|s| s == name)) {
            n += 1;
            if missing.len() < 10 {
                missing.push(format!("{word} {name}"));
            }
        }
    }
    if n == 0 {
        return Ok(());
    }
    if n > 10 {
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
        "imported {n} sources that config.json does not name ({}): {fate}; add them \
         (asn add, fqdn add) to keep collecting them",
        missing.join(", ")
    );
    Ok(())
}
