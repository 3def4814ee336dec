//! Writes: merge, sweep and purge, inside one write transaction. Each records what it
//! removed in `history` (see `history`); what a merge adds is recorded by the row
//! itself (`entries.added`).

use std::cell::Cell;
use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{OptionalExtension, ToSql};

use crate::source::Kind;
use crate::util;

use super::codec::Stored;
use super::gate::Space;
use super::history::{delete_recorded, Change};
use super::values::Values;
use super::{fail, StoreError};

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

/// The condition of an expired row of source `?1`: `last_seen` before `?2` (Unix
/// seconds), or, for a time kept as text (legacy), before `?3` as text.
pub(super) const EXPIRED: &str =
    "source = ?1 AND (last_seen < ?2 OR (typeof(last_seen) = 'text' AND last_seen < ?3))";

/// The `last_seen` below which values expire, or `None` when nothing expires.
fn cutoff(now: i64, ttl_days: u32) -> Option<i64> {
    (ttl_days > 0).then(|| now - i64::from(ttl_days) * 86_400)
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
    /// Whether a value was added or removed (counted in `meta.generation` at commit).
    pub(super) changed: Cell<bool>,
}

/// A value of the answer not stored yet ([`Join::known`]).
const NEW: u8 = 0;
/// A value stored already, the stored row before it (if any) in the answer too.
const SEEN: u8 = 1;
/// A value stored already, after a stored row the answer lacks.
const SEEN_AFTER_GAP: u8 = 2;

/// How the stored rows of a source compare with an answer (see [`WriteTx::join`]).
pub(super) struct Join {
    /// For each value of the answer, in order: [`NEW`], [`SEEN`] or
    /// [`SEEN_AFTER_GAP`]. The gaps split the stored values seen again into ranges
    /// of the key that hold no other row, so that they are refreshed without a list
    /// of the rows the answer lacks (issue 38, item 15: 48 MB for a source of
    /// 1,000,000 stored values answered with 1,000).
    known: Vec<u8>,
    /// How many are stored already.
    pub(super) seen: usize,
    /// How many stored rows the answer lacks.
    unseen: usize,
    /// Stored rows seen at or after the base time (see `trust`), and how many of
    /// them the answer has.
    pub(super) base_total: usize,
    pub(super) base_seen: usize,
    /// The address space of those stored rows.
    pub(super) space: Space,
}

impl Join {
    /// The address space of `values` (the answer this joins), and the shortest
    /// prefix of each family among the values it adds.
    pub(super) fn answer_space(&self, values: &Values) -> (Space, [u8; 2]) {
        let (mut all, mut new) = (Space::default(), Space::default());
        let n4 = values.v4.len();
        for (i, c) in values.v4.iter().enumerate() {
            all.add_v4(*c);
            if self.known[i] == NEW {
                new.add_v4(*c);
            }
        }
        for (i, t) in values.text.iter().enumerate() {
            all.add_text(t);
            if self.known[n4 + i] == NEW {
                new.add_text(t);
            }
        }
        (all, new.shortest)
    }
}

impl Join {
    /// Leaves in `values` (the answer this joins) only those not stored yet.
    pub(super) fn keep_new(&self, values: &mut Values) {
        // `known` follows the values in their order: IPv4 codes, then text.
        let mut states = self.known.iter();
        values.v4.retain(|_| states.next() == Some(&NEW));
        values.text.retain(|_| states.next() == Some(&NEW));
        // Kept until the run's end: the answer's room is given back now.
        values.v4.shrink_to_fit();
        values.text.shrink_to_fit();
    }
}

impl WriteTx<'_> {
    /// Adds to `values` the stored values of a source that a held answer merged at
    /// `at` contained (those it moved `last_seen` of to `at`): with what
    /// [`WriteTx::merge_answer`] left in `values`, the whole answer again.
    pub fn held_answer(
        &self,
        kind: Kind,
        source: &str,
        at: i64,
        values: &mut Values,
    ) -> Result<(), StoreError> {
        let mut run = || -> rusqlite::Result<()> {
            let Some(id) = self.source_id(kind, source)? else {
                return Ok(());
            };
            let mut st = self
                .tx
                .prepare("SELECT value FROM entries WHERE source = ?1 AND last_seen = ?2")?;
            let mut rows = st.query(rusqlite::params![id, at])?;
            while let Some(r) = rows.next()? {
                match r.get_ref(0)? {
                    ValueRef::Integer(c) => values.v4.push(c),
                    ValueRef::Text(t) => values.text.push(String::from_utf8_lossy(t).into()),
                    _ => {}
                }
            }
            Ok(())
        };
        run().map_err(|e| self.fail_sql(e))
    }

    pub(super) fn fail_sql(&self, e: rusqlite::Error) -> StoreError {
        fail(self.path, e)
    }

    /// Prunes `changes` to `history_days`, counts the change, and commits.
    pub fn commit(self) -> Result<(), StoreError> {
        let path = self.path;
        self.prune().map_err(|e| fail(path, e))?;
        if self.changed.get() {
            self.tx
                .execute_batch(super::schema::BUMP)
                .map_err(|e| fail(path, e))?;
        }
        self.tx.commit().map_err(|e| fail(path, e))
    }

    pub(super) fn at_time(&self, now: i64) {
        self.time
            .set(Some(self.time.get().map_or(now, |t| t.max(now))));
    }

    /// The id of a stored source.
    pub(super) fn source_id(&self, kind: Kind, source: &str) -> rusqlite::Result<Option<i64>> {
        self.tx
            .prepare("SELECT id FROM sources WHERE kind = ?1 AND name = ?2")?
            .query_row([kind.as_str(), source], |r| r.get(0))
            .optional()
    }

    pub(super) fn ensure_source(&self, kind: Kind, source: &str) -> rusqlite::Result<i64> {
        if let Some(id) = self.source_id(kind, source)? {
            return Ok(id);
        }
        self.tx
            .prepare("INSERT INTO sources (kind, name) VALUES (?1, ?2)")?
            .execute([kind.as_str(), source])?;
        Ok(self.tx.last_insert_rowid())
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
        self.merge_values(kind, source, values.iter().collect(), now, ttl_days)
    }

    /// [`WriteTx::merge_source`] of values collected into [`Values`].
    pub fn merge_values(
        &self,
        kind: Kind,
        source: &str,
        mut values: Values,
        now: i64,
        ttl_days: u32,
    ) -> Result<MergeStats, StoreError> {
        self.at_time(now);
        values.finish();
        let run = || -> rusqlite::Result<MergeStats> {
            let id = self.ensure_source(kind, source)?;
            let join = self.join(id, &values, i64::MIN)?;
            self.apply(id, &values, &join, now, ttl_days)
        };
        run().map_err(|e| self.fail_sql(e))
    }

    /// The merge proper of an answer joined with the stored rows: refresh, insert,
    /// expire.
    pub(super) fn apply(
        &self,
        id: i64,
        values: &Values,
        join: &Join,
        now: i64,
        ttl_days: u32,
    ) -> rusqlite::Result<MergeStats> {
        self.refresh(id, values, join, now)?;
        let added = self.insert_fresh(id, values, &join.known, now)?;
        // Only values known before this merge can have expired: new ones are `now`.
        let removed = if join.unseen == 0 {
            0
        } else {
            // Only the rows the answer lacked can expire.
            self.expire(id, now, ttl_days, join.unseen)?
        };
        // A refresh alone (last_seen moved) is not worth a snapshot on flash: the
        // next run after a restore refreshes again.
        if added > 0 {
            self.changed.set(true);
        }
        Ok(MergeStats {
            added,
            refreshed: join.seen,
            removed,
        })
    }

    /// Deletes the values of source `id` not seen for `ttl_days`, of which there are
    /// at most `at_most` (`usize::MAX`: unknown); how many.
    pub(super) fn expire(
        &self,
        id: i64,
        now: i64,
        ttl_days: u32,
        at_most: usize,
    ) -> rusqlite::Result<usize> {
        match cutoff(now, ttl_days) {
            Some(cut) => self.remove(id, Some(cut), (Change::Expired, now), at_most),
            None => Ok(0),
        }
    }

    /// Reads the source's rows in key order beside the sorted answer: which values are
    /// known, and where stored rows the answer lacks lie between them. The stored
    /// rows are never in memory, whatever their number: only the answer's are.
    pub(super) fn join(&self, id: i64, values: &Values, base: i64) -> rusqlite::Result<Join> {
        let (v4, text) = (&values.v4, &values.text);
        let mut join = Join {
            known: vec![NEW; values.len()],
            seen: 0,
            unseen: 0,
            base_total: 0,
            base_seen: 0,
            space: Default::default(),
        };
        let mut st = self
            .tx
            .prepare("SELECT value, last_seen FROM entries WHERE source = ?1")?;
        let mut rows = st.query([id])?;
        let (mut i, mut gap) = (0, false);
        while let Some(r) = rows.next()? {
            let found = match r.get_ref(0)? {
                ValueRef::Integer(x) => {
                    while i < v4.len() && v4[i] < x {
                        i += 1;
                    }
                    i < v4.len() && v4[i] == x
                }
                ValueRef::Text(t) => {
                    i = i.max(v4.len());
                    while i < join.known.len() && text[i - v4.len()].as_bytes() < t {
                        i += 1;
                    }
                    i < join.known.len() && text[i - v4.len()].as_bytes() == t
                }
                _ => false,
            };
            // A time kept as text (legacy) predates every fetch: it counts.
            let in_base = !matches!(r.get_ref(1)?, ValueRef::Integer(t) if t < base);
            join.base_total += usize::from(in_base);
            if in_base {
                match r.get_ref(0)? {
                    ValueRef::Integer(x) => join.space.add_v4(x),
                    ValueRef::Text(t) => join.space.add_text(&String::from_utf8_lossy(t)),
                    _ => {}
                }
            }
            if found {
                join.known[i] = if gap { SEEN_AFTER_GAP } else { SEEN };
                join.seen += 1;
                join.base_seen += usize::from(in_base);
                i += 1;
            } else {
                join.unseen += 1;
            }
            gap = !found;
        }
        Ok(join)
    }

    /// Moves `last_seen` of the values seen again to `now`: one UPDATE per range of
    /// the key that holds only rows the answer has (the whole source when it has
    /// them all, one per value at worst), the rows it lacks untouched.
    pub(super) fn refresh(
        &self,
        id: i64,
        values: &Values,
        join: &Join,
        now: i64,
    ) -> rusqlite::Result<()> {
        if join.seen == 0 {
            return Ok(());
        }
        // OR FAIL (it cannot fail: the time is never NULL) spares the statement
        // journal an ABORT needs, a copy of every page a statement changes (2.7 MB
        // in RAM for 100,000 values, most of `run`'s peak).
        let mut range = self.tx.prepare(
            "UPDATE OR FAIL entries SET last_seen = ?2 \
             WHERE source = ?1 AND value >= ?3 AND value <= ?4",
        )?;
        range.raw_bind_parameter(1, id)?;
        range.raw_bind_parameter(2, now)?;
        let mut update = |lo: &Stored, hi: &Stored| -> rusqlite::Result<()> {
            range.raw_bind_parameter(3, lo)?;
            range.raw_bind_parameter(4, hi)?;
            range.raw_execute().map(drop)
        };
        let mut run: Option<(Stored, Stored)> = None;
        for (v, state) in values.stored().zip(&join.known) {
            match (*state, &mut run) {
                (NEW, _) => {}
                (SEEN, Some((_, hi))) => *hi = v,
                _ => {
                    if let Some((lo, hi)) = run.replace((v.clone(), v)) {
                        update(&lo, &hi)?;
                    }
                }
            }
        }
        match run {
            Some((lo, hi)) => update(&lo, &hi),
            None => Ok(()),
        }
    }

    /// Inserts the values not stored yet; returns how many. Their `added` mark records
    /// them in `changes` (when changes are kept at all).
    fn insert_fresh(
        &self,
        id: i64,
        values: &Values,
        known: &[u8],
        now: i64,
    ) -> rusqlite::Result<usize> {
        // Streamed from the answer, never collected: a list of 100,000 `Stored`
        // took 3 MB, the largest part of a first `run`'s peak.
        let count = known.iter().filter(|k| **k == NEW).count();
        let mut fresh = values
            .stored()
            .zip(known)
            .filter(|(_, k)| **k == NEW)
            .map(|(v, _)| v);
        // Rows go in BATCH at a time through one multi-row statement (a large first
        // merge spends most of its time stepping statements, one per row otherwise),
        // the rest one by one. Source, time and mark are bound once per statement
        // (bindings outlive each step): ?1, ?2 and ?3, the values from ?4 on.
        let sql = |rows: usize| {
            let mut q = String::from(
                "INSERT INTO entries (source, value, first_seen, last_seen, added) VALUES ",
            );
            for i in 0..rows {
                let sep = if i == 0 { "" } else { "," };
                q.push_str(&format!("{sep}(?1, ?{}, ?2, ?2, ?3)", i + 4));
            }
            q
        };
        let mark = i64::from(self.records());
        let constants: [&dyn ToSql; 3] = [&id, &now, &mark];
        if count >= BATCH {
            let mut many = self.tx.prepare(&sql(BATCH))?;
            for (i, c) in constants.iter().enumerate() {
                many.raw_bind_parameter(i + 1, c)?;
            }
            for _ in 0..count / BATCH {
                for (i, v) in fresh.by_ref().take(BATCH).enumerate() {
                    many.raw_bind_parameter(i + 4, v)?;
                }
                many.raw_execute()?;
            }
        }
        let mut one = self.tx.prepare(&sql(1))?;
        for (i, c) in constants.iter().enumerate() {
            one.raw_bind_parameter(i + 1, c)?;
        }
        for v in fresh {
            one.raw_bind_parameter(4, v)?;
            one.raw_execute()?;
        }
        Ok(count)
    }

    /// Deletes the rows of source `id` (only those expired before `cut`, when given),
    /// recording each as `reason` at `now`; at most `at_most` can be (`usize::MAX`:
    /// unknown). Returns how many.
    fn remove(
        &self,
        id: i64,
        cut: Option<i64>,
        (reason, now): (Change, i64),
        at_most: usize,
    ) -> rusqlite::Result<usize> {
        let record = self.records().then_some((reason, now));
        let n = match cut {
            Some(cut) => {
                let text = util::iso(cut);
                let args: [&dyn ToSql; 3] = [&id, &cut, &text];
                delete_recorded(&self.tx, EXPIRED, &args, record, at_most)?
            }
            None => delete_recorded(&self.tx, "source = ?1", &[&id], record, at_most)?,
        };
        if n > 0 {
            self.changed.set(true);
        }
        Ok(n)
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
        self.at_time(now);
        let Some(cut) = cutoff(now, ttl_days) else {
            return Ok(0);
        };
        let run = || -> rusqlite::Result<usize> {
            let stored: Vec<(i64, String)> = {
                let mut st = self
                    .tx
                    .prepare("SELECT id, name FROM sources WHERE kind = ?1 ORDER BY name")?;
                let rows = st.query_map([kind.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            let mut n = 0;
            for (id, _) in stored.iter().filter(|(_, s)| !configured.contains(s)) {
                n += self.remove(*id, Some(cut), (Change::Swept, now), usize::MAX)?;
                self.forget_fetches(*id, true)?;
            }
            Ok(n)
        };
        run().map_err(|e| self.fail_sql(e))
    }

    /// Deletes every row of one source now; returns how many.
    pub fn purge_source(&self, kind: Kind, source: &str) -> Result<usize, StoreError> {
        let now = util::unix_now();
        self.at_time(now);
        let run = || -> rusqlite::Result<usize> {
            match self.source_id(kind, source)? {
                Some(id) => {
                    self.forget_fetches(id, false)?;
                    self.remove(id, None, (Change::Purged, now), usize::MAX)
                }
                None => Ok(0),
            }
        };
        run().map_err(|e| self.fail_sql(e))
    }
}

/// Rows per multi-row `INSERT` of a merge: enough to amortise stepping a statement,
/// few enough to keep the statement small (and within SQLite's 999-parameter limit of
/// older builds).
const BATCH: usize = 64;
