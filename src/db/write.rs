//! Writes: merge, sweep and purge, inside one write transaction, each recording what
//! it added or removed in `changes` (see `history`).

use std::cell::Cell;
use std::collections::HashMap;
use std::path::Path;

use crate::source::Kind;
use crate::util;

use super::history::{delete_recorded, Change};
use super::{classify, StoreError};

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

/// The `last_seen` below which values expire, or `None` when nothing expires.
fn cutoff(now: i64, ttl_days: u32) -> Option<String> {
    (ttl_days > 0).then(|| util::iso(now - i64::from(ttl_days) * 86_400))
}

/// A write transaction. Dropped without [`WriteTx::commit`], it rolls back: a failure
/// in the middle leaves every stored row as it was.
pub struct WriteTx<'a> {
    pub(super) tx: rusqlite::Transaction<'a>,
    pub(super) path: &'a Path,
    /// Days `changes` rows are kept; 0 records none.
    pub(super) history_days: u32,
    /// The newest time a write of this transaction used: the pruning of `changes` is
    /// relative to it, so that a merge "at" a given time prunes consistently.
    pub(super) time: Cell<Option<i64>>,
}

impl WriteTx<'_> {
    fn err(&self, e: rusqlite::Error) -> StoreError {
        classify(self.path, e)
    }

    /// Prunes `changes` to `history_days` and commits.
    pub fn commit(self) -> Result<(), StoreError> {
        let path = self.path;
        self.prune().map_err(|e| classify(path, e))?;
        self.tx.commit().map_err(|e| classify(path, e))
    }

    fn at(&self, now: i64) {
        self.time
            .set(Some(self.time.get().map_or(now, |t| t.max(now))));
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
        self.at(now);
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
        // New rows get rowids above the largest one now (no AUTOINCREMENT, nothing is
        // deleted before they are in), so that they are recorded afterwards by one
        // `INSERT ... SELECT` instead of one statement per value.
        let top = self.rowid_top(fresh.len())?;
        {
            // Rows go in BATCH at a time through one multi-row statement (a large first
            // merge spends most of its time stepping statements, one per row
            // otherwise), the rest one by one. Kind, source and time are bound once
            // per statement (bindings outlive each step): ?1, ?2 and ?3, the values
            // from ?4 on.
            let sql = |rows: usize| {
                let mut q = String::from(
                    "INSERT INTO addresses (kind, source, value, first_seen, last_seen) VALUES ",
                );
                for i in 0..rows {
                    let sep = if i == 0 { "" } else { "," };
                    q.push_str(&format!("{sep}(?1, ?2, ?{}, ?3, ?3)", i + 4));
                }
                q
            };
            let mut chunks = fresh.chunks_exact(BATCH);
            if fresh.len() >= BATCH {
                let mut many = tx.prepare(&sql(BATCH))?;
                bind_constants(&mut many, k, source, now)?;
                for chunk in chunks.by_ref() {
                    for (i, v) in chunk.iter().enumerate() {
                        many.raw_bind_parameter(i + 4, v)?;
                    }
                    many.raw_execute()?;
                }
            }
            let rest = chunks.remainder();
            if !rest.is_empty() {
                let mut one = tx.prepare(&sql(1))?;
                bind_constants(&mut one, k, source, now)?;
                for v in rest {
                    one.raw_bind_parameter(4, v)?;
                    one.raw_execute()?;
                }
            }
        }
        stats.added = fresh.len();
        self.record_added(kind, source, &fresh, now, top)?;
        // Only values known before this merge can have expired: new ones are `now`.
        if let Some(cut) = cutoff.filter(|_| seen_known < stored.len()) {
            stats.removed = delete_recorded(
                tx,
                "kind = ?1 AND source = ?2 AND last_seen < ?3",
                &[k, source, cut.as_str()],
                Change::Expired,
                now,
                self.records(),
            )?;
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
        self.at(now);
        let Some(cut) = cutoff(now, ttl_days) else {
            return Ok(0);
        };
        let time = util::iso(now);
        let run = || -> rusqlite::Result<usize> {
            let stored: Vec<String> = {
                let mut st = self
                    .tx
                    .prepare("SELECT DISTINCT source FROM addresses WHERE kind = ?1")?;
                let rows = st.query_map([kind.as_str()], |r| r.get(0))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            let mut n = 0;
            for s in stored.iter().filter(|s| !configured.contains(s)) {
                n += delete_recorded(
                    &self.tx,
                    "kind = ?1 AND source = ?2 AND last_seen < ?3",
                    &[kind.as_str(), s.as_str(), cut.as_str()],
                    Change::Swept,
                    &time,
                    self.records(),
                )?;
            }
            Ok(n)
        };
        run().map_err(|e| self.err(e))
    }

    /// Deletes every row of one source now; returns how many.
    pub fn purge_source(&self, kind: Kind, source: &str) -> Result<usize, StoreError> {
        let now = util::unix_now();
        self.at(now);
        delete_recorded(
            &self.tx,
            "kind = ?1 AND source = ?2",
            &[kind.as_str(), source],
            Change::Purged,
            &util::iso(now),
            self.records(),
        )
        .map_err(|e| self.err(e))
    }
}

/// Rows per multi-row `INSERT` of a merge: enough to amortise stepping a statement,
/// few enough to keep the statement small (and within SQLite's 999-parameter limit of
/// older builds).
const BATCH: usize = 64;

/// Binds kind, source and time (?1, ?2, ?3) of a merge's insert.
fn bind_constants(
    st: &mut rusqlite::Statement<'_>,
    kind: &str,
    source: &str,
    now: &str,
) -> rusqlite::Result<()> {
    st.raw_bind_parameter(1, kind)?;
    st.raw_bind_parameter(2, source)?;
    st.raw_bind_parameter(3, now)
}
