//! The `changes` table (schema version 2): one row per value added to or removed from a
//! source, written by merge, sweep and purge inside their own transaction, pruned to
//! `history_days` by every write, and read back oldest first.

use std::fmt;

use rusqlite::Transaction;

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

    fn from_word(s: &str) -> Change {
        match s {
            "added" => Change::Added,
            "expired" => Change::Expired,
            "swept" => Change::Swept,
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

pub(super) fn kind_of(word: &str) -> Kind {
    if word == "fqdn" {
        Kind::Fqdn
    } else {
        Kind::Asn
    }
}

/// Deletes the rows of `addresses` matching `cond` (SQL over `kind`, `source` and
/// `last_seen`, with the parameters `?1`.. bound to `args`), first recording each as a
/// change of `reason` at `time` when `record` is set. Returns how many were deleted.
///
/// The copy is one `INSERT ... SELECT` over the same index range as the `DELETE`: no
/// value passes through Rust, which keeps expiry as fast as before.
pub(super) fn delete_recorded(
    tx: &Transaction<'_>,
    cond: &str,
    args: &[&str],
    reason: Change,
    time: &str,
    record: bool,
) -> rusqlite::Result<usize> {
    let bind = |sql: &str, extra: &[&str]| -> rusqlite::Result<usize> {
        let mut st = tx.prepare(sql)?;
        for (i, a) in args.iter().chain(extra).enumerate() {
            st.raw_bind_parameter(i + 1, *a)?;
        }
        st.raw_execute()
    };
    if record {
        let (t, r) = (args.len() + 1, args.len() + 2);
        bind(
            &format!(
                "INSERT INTO changes (time, kind, source, value, change)
                 SELECT ?{t}, kind, source, value, ?{r} FROM addresses WHERE {cond}"
            ),
            &[time, reason.as_str()],
        )?;
    }
    bind(&format!("DELETE FROM addresses WHERE {cond}"), &[])
}

impl WriteTx<'_> {
    /// The largest rowid of `addresses` before `n` rows are inserted, when those rows
    /// are to be recorded; see [`WriteTx::record_added`].
    pub(super) fn rowid_top(&self, n: usize) -> rusqlite::Result<Option<i64>> {
        if !self.records() || n == 0 {
            return Ok(None);
        }
        self.tx
            .query_row("SELECT coalesce(max(rowid), 0) FROM addresses", [], |r| {
                r.get(0)
            })
            .map(Some)
    }

    /// Records `values`, just inserted for one source, as added at `time`. With `top`
    /// (the largest rowid before they were inserted) the rows above it are copied in
    /// one statement: SQLite gives a new row the largest rowid plus one unless that
    /// would pass the largest integer, so these are exactly the new ones. Near that
    /// limit (never reached in practice), one insert per value.
    pub(super) fn record_added(
        &self,
        kind: Kind,
        source: &str,
        values: &[&str],
        time: &str,
        top: Option<i64>,
    ) -> rusqlite::Result<()> {
        if !self.records() || values.is_empty() {
            return Ok(());
        }
        if let Some(top) = top.filter(|t| *t < i64::MAX / 2) {
            self.tx
                .prepare(
                    "INSERT INTO changes (time, kind, source, value, change)
                     SELECT ?1, kind, source, value, 'added' FROM addresses
                     WHERE rowid > CAST(?2 AS INTEGER)",
                )?
                .execute([time, top.to_string().as_str()])?;
            return Ok(());
        }
        let mut ins = self.tx.prepare(
            "INSERT INTO changes (time, kind, source, value, change) VALUES (?1, ?2, ?3, ?4, 'added')",
        )?;
        for v in values {
            ins.execute([time, kind.as_str(), source, v])?;
        }
        Ok(())
    }

    /// Whether changes are recorded at all (`history_days` > 0).
    pub(super) fn records(&self) -> bool {
        self.history_days > 0
    }

    /// Deletes the changes older than `history_days` before the newest time this
    /// transaction wrote (or now), all of them when `history_days` is 0.
    pub(super) fn prune(&self) -> rusqlite::Result<usize> {
        let now = self.time.get().unwrap_or_else(util::unix_now);
        let cut = util::iso(now - i64::from(self.history_days) * 86_400);
        if self.history_days == 0 {
            return self.tx.execute("DELETE FROM changes", []);
        }
        self.tx
            .prepare("DELETE FROM changes WHERE time < ?1")?
            .execute([cut])
    }
}

/// Most rows one `changes` answer holds (and one `lookup` answer): the answer is built
/// in memory (the API sends it with a length), so it is bounded. More rows are marked
/// with `"truncated":true`.
pub const MAX_ROWS: usize = 10_000;

impl Db {
    /// Calls `f` with the changes at or after `since` (`YYYY-MM-DDTHH:MM:SSZ`) of one
    /// kind or all, oldest first (in the order written within one second), at most
    /// `limit` of them, streaming through the `changes_time` index. Returns whether
    /// more rows were left out.
    pub fn for_each_change(
        &self,
        since: &str,
        kind: Option<Kind>,
        limit: usize,
        mut f: impl FnMut(&ChangeRow),
    ) -> Result<bool, StoreError> {
        let mut run = || -> rusqlite::Result<bool> {
            let mut st = self.conn.prepare(
                "SELECT time, kind, source, value, change FROM changes
                 WHERE time >= ?1 AND (?2 = '' OR kind = ?2) ORDER BY time, rowid",
            )?;
            let mut rows = st.query([since, kind.map_or("", Kind::as_str)])?;
            let mut n = 0;
            while let Some(r) = rows.next()? {
                if n == limit {
                    return Ok(true);
                }
                n += 1;
                let row = ChangeRow {
                    time: r.get(0)?,
                    kind: kind_of(r.get_ref(1)?.as_str()?),
                    source: r.get(2)?,
                    value: r.get(3)?,
                    change: Change::from_word(r.get_ref(4)?.as_str()?),
                };
                f(&row);
            }
            Ok(false)
        };
        run().map_err(|e| self.err(e))
    }

    /// Every change, oldest first (for tests and inspection).
    pub fn all_changes(&self) -> Result<Vec<ChangeRow>, StoreError> {
        let mut out = Vec::new();
        self.for_each_change("", None, usize::MAX - 1, |c| out.push(c.clone()))?;
        Ok(out)
    }
}
