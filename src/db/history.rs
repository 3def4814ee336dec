//! The record of changes: one per value added to or removed from a source, written by
//! merge, sweep and purge inside their own transaction, pruned to `history_days` by
//! every write, and read back oldest first. Version 2 kept them in the `changes` table;
//! version 3 (see `schema`) reads additions from the rows themselves and keeps
//! removals in `history`.

use std::fmt;

use rusqlite::{params, OptionalExtension, ToSql, Transaction};

use super::codec::{sql_value_text, time_text, value_text};
use super::write::WriteTx;
use super::{Db, StoreError};
use crate::source::Kind;
use crate::util;

/// Version 2: the `changes` table and its time index.
pub(super) const SCHEMA_V2: &str = "
CREATE TABLE changes (
    time   TEXT NOT NULL,
    kind   TEXT NOT NULL CHECK (kind IN ('asn', 'fqdn')),
    source TEXT NOT NULL,
    value  TEXT NOT NULL,
    change TEXT NOT NULL CHECK (change IN ('added', 'expired', 'swept', 'purged'))
);
CREATE INDEX changes_time ON changes (time);
";

pub use crate::config::DEFAULT_HISTORY_DAYS;

/// Why a row of `changes` was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A merge stored the value for the first time.
    Added,
    /// A merge deleted it by the TTL rule.
    Expired,
    /// The sweep of unconfigured sources deleted it.
    Swept,
    /// A purge deleted it.
    Purged,
}

impl Change {
    /// The word stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Expired => "expired",
            Change::Swept => "swept",
            Change::Purged => "purged",
        }
    }

    /// The code stored in `history.change`.
    pub(super) fn code(self) -> i64 {
        match self {
            Change::Added => 0,
            Change::Expired => 1,
            Change::Swept => 2,
            Change::Purged => 3,
        }
    }

    fn from_code(c: i64) -> Change {
        match c {
            0 => Change::Added,
            1 => Change::Expired,
            2 => Change::Swept,
            _ => Change::Purged,
        }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row of `changes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeRow {
    /// When (`YYYY-MM-DDTHH:MM:SSZ`).
    pub time: String,
    /// What happened.
    pub change: Change,
    /// The kind of source.
    pub kind: Kind,
    /// The source.
    pub source: String,
    /// The value.
    pub value: String,
}

/// The kind stored as `word`; a word no kind of ours uses (a script's row through the
/// views) is shown as an ASN, as before there were more kinds than two.
pub(super) fn kind_of(word: &str) -> Kind {
    Kind::from_word(word).unwrap_or(Kind::Asn)
}

/// Rows one statement of [`delete_recorded`] deletes. A `DELETE` collects the keys of
/// its rows before it removes them, in memory (SQLITE_TEMP_STORE=3): 1,000,000 rows
/// expiring in one run took `run` to 37 MB (issue 38, item 15).
const DELETE_CHUNK: usize = 8_192;

/// Deletes the rows of `entries` matching `cond` (SQL over `source` and `last_seen`
/// whose first term is `source = ?1`, with the parameters `?1`.. bound to `args`),
/// first recording each as a change (`record`: its reason and time), in the order of
/// the key. `at_most` is how many rows can match, when the caller knows (a merge: the
/// stored rows its answer lacked), else `usize::MAX`. Returns how many were deleted.
///
/// [`DELETE_CHUNK`] rows at a time, in the order of the key: each chunk ends at the
/// value found that many rows on, so that memory does not grow with the rows
/// deleted; when no more than a chunk can match, one statement, without that look
/// ahead (a merge's usual case: a few values dropped). Each chunk's copy is one
/// `INSERT ... SELECT` over the same key range as its `DELETE`: no value passes
/// through Rust, which keeps expiry fast. The order of the key (not that of the
/// values' text, as version 2 listed them) lets SQLite number the rows as it reads
/// them, without sorting them first.
pub(super) fn delete_recorded(
    tx: &Transaction<'_>,
    cond: &str,
    args: &[&dyn ToSql],
    record: Option<(Change, i64)>,
    at_most: usize,
) -> rusqlite::Result<usize> {
    // `?{n+1}` is a chunk's last value; the time and the reason come after it.
    let n = args.len();
    let upto = format!("{cond} AND value <= ?{}", n + 1);
    let next = format!(
        "SELECT value FROM entries WHERE {cond} ORDER BY value LIMIT 1 OFFSET {}",
        DELETE_CHUNK - 1
    );
    let run = |sql: &str, extra: &[&dyn ToSql]| -> rusqlite::Result<usize> {
        let mut st = tx.prepare(sql)?;
        for (i, a) in args.iter().chain(extra).enumerate() {
            st.raw_bind_parameter(i + 1, a)?;
        }
        st.raw_execute()
    };
    let mut deleted = 0;
    loop {
        let bound: Option<rusqlite::types::Value> = match at_most > DELETE_CHUNK {
            true => tx.query_row(&next, args, |row| row.get(0)).optional()?,
            false => None,
        };
        // The last chunk: what is left, fewer rows than a chunk.
        let (range, b): (&str, Vec<&dyn ToSql>) = match &bound {
            Some(v) => (&upto, vec![v]),
            None => (cond, Vec::new()),
        };
        if let Some((reason, time)) = record {
            let (t, r) = (n + b.len() + 1, n + b.len() + 2);
            let copy = format!(
                "INSERT INTO history (time, seq, source, value, change, first_seen)
                 SELECT ?{t}, (SELECT coalesce(max(seq), 0) FROM history WHERE time = ?{t})
                     + row_number() OVER (ORDER BY source, value),
                     source, value, ?{r}, CASE added WHEN 1 THEN first_seen END
                 FROM entries WHERE {range}"
            );
            let code = reason.code();
            let mut with = b.clone();
            with.extend([&time as &dyn ToSql, &code]);
            run(&copy, &with)?;
        }
        deleted += run(&format!("DELETE FROM entries WHERE {range}"), &b)?;
        if bound.is_none() {
            return Ok(deleted);
        }
    }
}

impl WriteTx<'_> {
    /// Whether changes are recorded at all (`history_days` > 0).
    pub(super) fn records(&self) -> bool {
        self.history_days > 0
    }

    /// Prunes the changes older than `history_days` before the newest time this
    /// transaction wrote (or now), all of them when `history_days` is 0: removals are
    /// deleted, and the floor below which `added` times of rows are not shown rises.
    pub(super) fn prune(&self) -> rusqlite::Result<()> {
        let now = self.time.get().unwrap_or_else(util::unix_now);
        let cut = if self.history_days == 0 {
            self.tx.execute("DELETE FROM history", [])?;
            now + 1
        } else {
            let cut = now - i64::from(self.history_days) * 86_400;
            // Two ranges of the key: times stored as seconds, then (scripts) as text.
            self.tx
                .prepare("DELETE FROM history WHERE time < ?1")?
                .execute([cut])?;
            self.tx
                .prepare("DELETE FROM history WHERE time >= '' AND time < ?1")?
                .execute([util::iso(cut)])?;
            cut
        };
        self.tx
            .prepare("UPDATE meta SET value = max(value, ?1) WHERE key = 'history_floor'")?
            .execute([cut])?;
        Ok(())
    }
}

/// Most rows one `changes` answer holds (and one `lookup` answer): the answer is built
/// in memory (the API sends it with a length), so it is bounded. More rows are marked
/// with `"truncated":true`.
pub const MAX_ROWS: usize = 10_000;

/// Whether a source (its kind and name) is among those asked for.
pub type KeepSource<'a> = &'a mut dyn FnMut(Kind, &str) -> bool;

impl Db {
    /// Calls `f` with the changes at or after `since` (`YYYY-MM-DDTHH:MM:SSZ`) of one
    /// kind or all and of the sources `keep` keeps (`None`: every source), oldest
    /// first, at most `limit` of them. Returns whether more rows were left out.
    ///
    /// Within one second, values added come before values removed, added ones by kind,
    /// source and value, removed ones in the order written (version 2 interleaved them
    /// per source when several sources changed in the same second). The sort keeps at
    /// most `limit + 1` rows (SQLite's sorter with a `LIMIT`). The sources are chosen
    /// in the query, not after it, so that `limit` counts their changes only: a group
    /// whose changes come after more than `limit` changes of other sources still
    /// lists them.
    pub fn for_each_change(
        &self,
        since: &str,
        kind: Option<Kind>,
        limit: usize,
        keep: Option<KeepSource<'_>>,
        mut f: impl FnMut(&ChangeRow),
    ) -> Result<bool, StoreError> {
        let from = util::parse_iso(since).unwrap_or(0).max(0);
        let mut more = false;
        self.run(|c| {
            let only = match keep {
                None => String::new(),
                Some(keep) => match kept_sources(c, keep)? {
                    Some(only) => only,
                    None => return Ok(()),
                },
            };
            let text = sql_value_text("c.value");
            let sql = format!(
                "SELECT c.time, s.kind, s.name, c.value, c.change FROM (
                     SELECT first_seen AS time, 0 AS cls, 0 AS seq, source, value, 0 AS change
                     FROM entries WHERE added = 1 AND first_seen >= ?1
                     UNION ALL SELECT first_seen, 0, 0, source, value, 0 FROM history
                     WHERE first_seen >= ?1
                     UNION ALL SELECT time, 1, seq, source, value, change FROM history
                     WHERE time >= ?2 AND (typeof(time) <> 'text' OR time >= ?3)
                 ) c JOIN sources s ON s.id = c.source
                 WHERE (?4 = '' OR s.kind = ?4){only}
                 ORDER BY c.time, c.cls, CASE c.cls WHEN 0 THEN s.kind END,
                     CASE c.cls WHEN 0 THEN s.name END, CASE c.cls WHEN 0 THEN {text} END, c.seq
                 LIMIT ?5"
            );
            let floor: i64 = c.query_row(
                "SELECT coalesce((SELECT value FROM meta WHERE key = 'history_floor'), 0)",
                [],
                |r| r.get(0),
            )?;
            let mut st = c.prepare(&sql)?;
            let lim = i64::try_from(limit).unwrap_or(i64::MAX - 1) + 1;
            let mut rows = st.query(params![
                from.max(floor),
                from,
                since,
                kind.map_or("", Kind::as_str),
                lim
            ])?;
            let mut n = 0;
            while let Some(r) = rows.next()? {
                if n == limit {
                    more = true;
                    break;
                }
                n += 1;
                f(&ChangeRow {
                    time: time_text(r.get_ref(0)?),
                    kind: kind_of(r.get_ref(1)?.as_str()?),
                    source: r.get(2)?,
                    value: value_text(r.get_ref(3)?),
                    change: Change::from_code(r.get(4)?),
                });
            }
            Ok(())
        })?;
        Ok(more)
    }

    /// Every change, oldest first (for tests and inspection).
    pub fn all_changes(&self) -> Result<Vec<ChangeRow>, StoreError> {
        let mut out = Vec::new();
        self.for_each_change("", None, usize::MAX - 1, None, |c| out.push(c.clone()))?;
        Ok(out)
    }
}

/// The SQL condition that keeps the sources `keep` keeps: empty when it keeps every
/// stored source, `None` when it keeps none (split as a group's listing splits them).
/// The ids are the database's own integers, written into the SQL (a group names at
/// most the configured sources).
fn kept_sources(
    c: &rusqlite::Connection,
    keep: KeepSource<'_>,
) -> rusqlite::Result<Option<String>> {
    let split = super::select::split(c, keep)?;
    Ok(match (split.dropped.is_empty(), split.kept.is_empty()) {
        (true, _) => Some(String::new()),
        (false, true) => None,
        (false, false) => {
            let ids: Vec<String> = split.kept.iter().map(i64::to_string).collect();
            Some(format!(" AND c.source IN ({})", ids.join(",")))
        }
    })
}
