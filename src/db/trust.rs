//! Trust (schema version 4): the gate that holds an answer which would drop a large
//! share of a source's values, and the provenance of each source's last fetches.
//!
//! `fetches (source, seq, time, upstream, answer, stored, added, removed, state, note,
//! since, base)`, `WITHOUT ROWID` on `(source, seq)`, at most [`KEPT`] rows per source:
//! one row per answer merged (values in it, the stored values it was compared with,
//! what the merge added and removed, whether it was applied or held). The newest row
//! carries the source's state forward: `base`, the time of the last applied answer
//! (values seen since are "stored" for the gate: the ones an earlier answer dropped and
//! that only wait for their TTL do not count), and for a held answer `since`.

use rusqlite::{params, OptionalExtension};

use crate::source::Kind;

pub use super::gate::Gate;
use super::values::Values;
use super::write::{MergeStats, WriteTx};
use super::{Db, StoreError};

/// Version 4: the fetch log.
pub(super) const SCHEMA_V4: &str = "
CREATE TABLE fetches (
    source   INTEGER NOT NULL,
    seq      INTEGER NOT NULL,
    time     INTEGER NOT NULL,
    upstream TEXT,
    answer   INTEGER NOT NULL,
    stored   INTEGER NOT NULL,
    added    INTEGER NOT NULL,
    removed  INTEGER NOT NULL,
    state    INTEGER NOT NULL,
    note     TEXT,
    since    INTEGER,
    base     INTEGER NOT NULL,
    PRIMARY KEY (source, seq)
) WITHOUT ROWID;
";

/// Fetches kept per source.
pub const KEPT: i64 = 30;

/// `state`: the answer was applied (merged as usual).
pub const APPLIED: u8 = 0;
/// `state`: the answer was held: only the stored values it contains were seen again.
pub const HELD: u8 = 1;
/// `state`: a held answer applied once confirmed (`note` says by what).
pub const CONFIRMED: u8 = 2;

/// The word of a `state`.
pub fn state_word(state: u8) -> &'static str {
    match state {
        APPLIED => "applied",
        HELD => "held",
        _ => "confirmed",
    }
}

/// Why a held answer is held: `"grew"` or `"shrank"` (rows from before version 0.4
/// were only held for shrinking).
pub fn held_word(f: &Fetch) -> &str {
    match f.note.as_deref() {
        Some("grew") => "grew",
        _ => "shrank",
    }
}

/// A held answer in words, with both counts: what the log, `status` and the
/// overview say (the page and LuCI say the same from `change`, `values`, `stored`).
pub fn held_text(f: &Fetch) -> String {
    match held_word(f) {
        "grew" => format!(
            "answer grew: it has {} values where {} are stored",
            f.answer, f.stored
        ),
        _ => format!(
            "answer shrank: it has {} of {} stored values",
            f.answer, f.stored
        ),
    }
}

/// One fetch of a source, as kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetch {
    /// When (Unix seconds).
    pub time: i64,
    /// The upstream that answered (`ripestat`, `feed`, ...).
    pub upstream: Option<String>,
    /// Values in the answer.
    pub answer: u64,
    /// Stored values it was compared with.
    pub stored: u64,
    /// Values the merge added.
    pub added: u64,
    /// Values the merge removed (expired).
    pub removed: u64,
    /// [`APPLIED`], [`HELD`] or [`CONFIRMED`].
    pub state: u8,
    /// What confirmed it (`routing-status`, `time`, `hand`).
    pub note: Option<String>,
    /// For a held answer: since when it is held.
    pub since: Option<i64>,
}

/// The newest fetch row of a source: what the next one builds on.
struct Last {
    seq: i64,
    fetch: Fetch,
    base: i64,
}

/// What merging one answer did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// What the merge did (nothing added or removed when held).
    pub stats: MergeStats,
    /// The row written for it.
    pub fetch: Fetch,
}

impl Merged {
    /// Whether the answer was held.
    pub fn held(&self) -> bool {
        self.fetch.state == HELD
    }
}

impl WriteTx<'_> {
    fn last_fetch(&self, id: i64) -> rusqlite::Result<Option<Last>> {
        self.tx
            .prepare(
                "SELECT seq, base, time, upstream, answer, stored, added, removed, state, note, \
                 since FROM fetches WHERE source = ?1 ORDER BY seq DESC LIMIT 1",
            )?
            .query_row([id], |r| {
                Ok(Last {
                    seq: r.get(0)?,
                    base: r.get(1)?,
                    fetch: fetch_row(r, 2)?,
                })
            })
            .optional()
    }

    /// The largest answer applied since `from` and since the last confirmed one (a
    /// confirmed change is the new normal): what a drift is measured against (0:
    /// none).
    fn reference(&self, id: i64, from: i64) -> rusqlite::Result<u64> {
        let n: Option<i64> = self.tx.query_row(
            "SELECT max(answer) FROM fetches WHERE source = ?1 AND state != 1 AND time >= ?2 \
             AND seq >= (SELECT coalesce(max(seq), 0) FROM fetches WHERE source = ?1 AND state = 2)",
            params![id, from],
            |r| r.get(0),
        )?;
        Ok(n.unwrap_or(0) as u64)
    }

    /// The time of the last applied answer: from the fetch log, else (a source stored
    /// before version 4) the newest `last_seen`, when the last merge saw its values.
    fn base(&self, id: i64, last: Option<&Last>) -> rusqlite::Result<i64> {
        if let Some(l) = last {
            return Ok(l.base);
        }
        let newest: Option<i64> = self.tx.query_row(
            "SELECT max(last_seen) FROM entries WHERE source = ?1 AND typeof(last_seen) = 'integer'",
            [id],
            |r| r.get(0),
        )?;
        Ok(newest.unwrap_or(i64::MIN))
    }

    fn record(&self, id: i64, seq: i64, f: &Fetch, base: i64) -> rusqlite::Result<()> {
        self.tx
            .prepare(
                "INSERT INTO fetches (source, seq, time, upstream, answer, stored, added, \
                 removed, state, note, since, base) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, \
                 ?10, ?11, ?12)",
            )?
            .execute(params![
                id,
                seq,
                f.time,
                f.upstream,
                f.answer as i64,
                f.stored as i64,
                f.added as i64,
                f.removed as i64,
                f.state,
                f.note,
                f.since,
                base
            ])?;
        self.tx
            .prepare("DELETE FROM fetches WHERE source = ?1 AND seq <= ?2")?
            .execute(params![id, seq - KEPT])?;
        Ok(())
    }

    /// Merges one answer through the gate and records it. A held answer only moves
    /// `last_seen` of the stored values it contains: nothing is added or removed,
    /// and `values` keeps only those the store lacks (the others are found again by
    /// [`WriteTx::held_answer`], so that a run keeps no copy of what is stored).
    /// `confirm` applies it whatever the gate says, naming what confirmed it.
    #[allow(clippy::too_many_arguments)]
    pub fn merge_answer(
        &self,
        kind: Kind,
        source: &str,
        values: &mut Values,
        (now, ttl_days): (i64, u32),
        upstream: Option<&str>,
        gate: &Gate,
        confirm: Option<&str>,
    ) -> Result<Merged, StoreError> {
        values.finish();
        self.at_time(now);
        let mut run = || -> rusqlite::Result<Merged> {
            let id = self.ensure_source(kind, source)?;
            let last = self.last_fetch(id)?;
            let base = self.base(id, last.as_ref())?;
            let join = self.join(id, values, base)?;
            let counts = (
                join.base_total as u64,
                join.base_seen as u64,
                values.len() as u64,
            );
            let reference = match gate.reference {
                0 => 0,
                r => self.reference(id, now.saturating_sub(r))?,
            };
            let (space, new_shortest) = join.answer_space(values);
            let widened = join
                .space
                .widened_by(&space, new_shortest, gate.max_growth_percent);
            let why = gate.judge(counts, reference, widened);
            let last_fetch = last.as_ref().map(|l| &l.fetch);
            let (state, note, since) =
                gate.decide(last_fetch, why, (counts.2, upstream), now, confirm);
            let stats = if state == HELD {
                self.refresh(id, values, &join, now)?;
                join.keep_new(values);
                MergeStats {
                    refreshed: join.seen,
                    ..MergeStats::default()
                }
            } else {
                self.apply(id, values, &join, now, ttl_days)?
            };
            let fetch = Fetch {
                time: now,
                upstream: upstream.map(str::to_string),
                answer: counts.2,
                stored: counts.0,
                added: stats.added as u64,
                removed: stats.removed as u64,
                state,
                note,
                since,
            };
            let seq = last.as_ref().map_or(1, |l| l.seq + 1);
            self.record(id, seq, &fetch, if state == HELD { base } else { now })?;
            Ok(Merged { stats, fetch })
        };
        run().map_err(|e| self.fail_sql(e))
    }

    /// Applies the held answer of a source by hand: the values it lacked age out by
    /// the TTL from now on, as if it had been applied. `None` when it is not held.
    pub fn confirm_held(
        &self,
        kind: Kind,
        source: &str,
        now: i64,
        ttl_days: u32,
    ) -> Result<Option<Merged>, StoreError> {
        self.at_time(now);
        let run = || -> rusqlite::Result<Option<Merged>> {
            let Some(id) = self.source_id(kind, source)? else {
                return Ok(None);
            };
            let Some(last) = self.last_fetch(id)?.filter(|l| l.fetch.state == HELD) else {
                return Ok(None);
            };
            let removed = self.expire(id, now, ttl_days, usize::MAX)?;
            let fetch = Fetch {
                time: now,
                added: 0,
                removed: removed as u64,
                state: CONFIRMED,
                note: Some("hand".into()),
                since: None,
                ..last.fetch.clone()
            };
            // The held answer's stored values are those its merge saw (at its time).
            self.record(id, last.seq + 1, &fetch, last.fetch.time)?;
            let stats = MergeStats {
                removed,
                ..MergeStats::default()
            };
            Ok(Some(Merged { stats, fetch }))
        };
        run().map_err(|e| self.fail_sql(e))
    }

    /// Forgets the fetch log of source `id` (purged, or swept with nothing left).
    pub(super) fn forget_fetches(&self, id: i64, only_if_empty: bool) -> rusqlite::Result<()> {
        let sql = if only_if_empty {
            "DELETE FROM fetches WHERE source = ?1 AND NOT EXISTS \
             (SELECT 1 FROM entries WHERE source = ?1)"
        } else {
            "DELETE FROM fetches WHERE source = ?1"
        };
        self.tx.prepare(sql)?.execute([id])?;
        Ok(())
    }
}

/// A [`Fetch`] from columns `time, upstream, answer, stored, added, removed, state,
/// note, since` starting at `at`.
fn fetch_row(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Fetch> {
    Ok(Fetch {
        time: r.get(at)?,
        upstream: r.get(at + 1)?,
        answer: r.get::<_, i64>(at + 2)? as u64,
        stored: r.get::<_, i64>(at + 3)? as u64,
        added: r.get::<_, i64>(at + 4)? as u64,
        removed: r.get::<_, i64>(at + 5)? as u64,
        state: r.get(at + 6)?,
        note: r.get(at + 7)?,
        since: r.get(at + 8)?,
    })
}

/// The fetch log of one source, oldest first.
pub type FetchLog = (Kind, String, Vec<Fetch>);

const COLUMNS: &str = "f.time, f.upstream, f.answer, f.stored, f.added, f.removed, f.state, \
                       f.note, f.since";

impl Db {
    /// The fetch logs of every source, by kind and name, oldest fetch first; at most
    /// `max_rows` rows in all (the newest sources' logs beyond it are left out).
    pub fn fetch_logs(&self, max_rows: usize) -> Result<Vec<FetchLog>, StoreError> {
        self.logs("", max_rows)
    }

    /// The sources held now, with their held fetch, by kind and name.
    pub fn held(&self) -> Result<Vec<FetchLog>, StoreError> {
        self.logs(
            "WHERE f.state = 1 AND f.seq = (SELECT max(seq) FROM fetches WHERE source = f.source)",
            usize::MAX,
        )
    }

    /// The fetch rows `filter` selects, grouped by source (one reader for both).
    fn logs(&self, filter: &str, max_rows: usize) -> Result<Vec<FetchLog>, StoreError> {
        self.run(|c| {
            let mut st = c.prepare(&format!(
                "SELECT s.kind, s.name, {COLUMNS} FROM fetches f JOIN sources s ON s.id = f.source \
                 {filter} ORDER BY s.kind, s.name, f.seq"
            ))?;
            let mut rows = st.query([])?;
            let mut out: Vec<FetchLog> = Vec::new();
            let mut n = 0;
            while let Some(r) = rows.next()? {
                let (kind, name): (String, String) = (r.get(0)?, r.get(1)?);
                let Some(kind) = Kind::from_word(&kind) else {
                    continue;
                };
                match out.last_mut() {
                    Some(l) if l.0 == kind && l.1 == name => l.2.push(fetch_row(r, 2)?),
                    _ if n >= max_rows => break,
                    _ => out.push((kind, name, vec![fetch_row(r, 2)?])),
                }
                n += 1;
            }
            Ok(out)
        })
    }

    /// The upstream of the newest fetch of a source, if any.
    pub fn last_upstream(&self, kind: Kind, source: &str) -> Result<Option<String>, StoreError> {
        self.run(|c| {
            c.prepare(
                "SELECT f.upstream FROM fetches f JOIN sources s ON s.id = f.source \
                 WHERE s.kind = ?1 AND s.name = ?2 ORDER BY f.seq DESC LIMIT 1",
            )?
            .query_row([kind.as_str(), source], |r| r.get(0))
            .optional()
            .map(Option::flatten)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize) -> Values {
        let texts: Vec<String> = (0..n).map(|i| format!("198.18.{i}.0/24")).collect();
        texts.iter().collect()
    }

    /// With `max_shrink_percent: 100` every answer is merged as before the gate:
    /// the same rows and the same changes, whatever the answers.
    #[test]
    fn the_gate_off_stores_as_before() {
        let dir = tempfile::tempdir().unwrap();
        let open = |name: &str| {
            crate::db::open(&crate::config::Paths::new(dir.path().join(name), None)).unwrap()
        };
        let (mut old, mut new) = (open("old"), open("new"));
        let day = 86_400;
        for (i, n) in [100, 20, 0, 50, 100].into_iter().enumerate() {
            let now = 1_800_000_000 + i as i64 * 3 * day;
            let tx = old.write().unwrap();
            tx.merge_values(Kind::Asn, "1", values(n), now, 7).unwrap();
            tx.commit().unwrap();
            let tx = new.write().unwrap();
            let m = tx
                .merge_answer(
                    Kind::Asn,
                    "1",
                    &mut values(n),
                    (now, 7),
                    Some("ripestat"),
                    &Gate::OFF,
                    None,
                )
                .unwrap();
            assert!(!m.held());
            tx.commit().unwrap();
        }
        assert_eq!(
            old.rows(Kind::Asn, "1").unwrap(),
            new.rows(Kind::Asn, "1").unwrap()
        );
        assert_eq!(old.all_changes().unwrap(), new.all_changes().unwrap());
        assert!(!old.rows(Kind::Asn, "1").unwrap().is_empty());
    }

    const DAY: i64 = 86_400;
    const T0: i64 = 1_800_000_000;
    const GATE: Gate = Gate {
        max_shrink_percent: 30,
        max_growth_percent: 100,
        confirm_after: 6 * 3600,
        reference: 7 * DAY,
    };

    /// Merges `values` as the answer of AS1 at `now` through [`GATE`].
    fn merge(db: &mut Db, mut values: Values, now: i64, confirm: Option<&str>) -> Merged {
        let tx = db.write().unwrap();
        let up = Some("ripestat");
        let m = tx
            .merge_answer(Kind::Asn, "1", &mut values, (now, 7), up, &GATE, confirm)
            .unwrap();
        tx.commit().unwrap();
        m
    }

    fn open(dir: &tempfile::TempDir) -> Db {
        crate::db::open(&crate::config::Paths::new(dir.path(), None)).unwrap()
    }

    /// T2: 13 answers each 29 % smaller than the one before, 6 hours apart (the clock
    /// is the test's): the second is held, 49 % below the reference, and so is every
    /// later one; nothing is removed, however long it lasts.
    #[test]
    fn a_slow_shrink_is_held_against_the_reference() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = open(&dir);
        let mut n = 10_000usize;
        let mut states = Vec::new();
        for step in 0..13 {
            let now = T0 + step * 6 * 3600;
            states.push(merge(&mut db, values(n), now, None).fetch.state);
            n = n * 71 / 100;
        }
        assert_eq!(&states[..2], [APPLIED, APPLIED]);
        assert!(states[2..].iter().all(|s| *s == HELD), "{states:?}");
        assert_eq!(db.rows(Kind::Asn, "1").unwrap().len(), 10_000);
        // Past reference_days (no applied answer in it) the last applied one, whose
        // values the held answers kept, is what the answer is measured against.
        let m = merge(&mut db, values(n), T0 + 9 * DAY, None);
        assert!(m.held() && m.stats.removed == 0, "{m:?}");
        // A step within the limit of the reference is applied.
        let m = merge(&mut db, values(7_500), T0 + 9 * DAY + 60, None);
        assert_eq!(m.fetch.state, APPLIED);
    }

    /// A confirmed change is the new reference: the next answer like it applies.
    #[test]
    fn a_confirmed_shrink_is_the_new_reference() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = open(&dir);
        merge(&mut db, values(1_000), T0, None);
        assert!(merge(&mut db, values(100), T0 + 3600, None).held());
        let m = merge(&mut db, values(100), T0 + 7200, Some("ipverse"));
        assert_eq!(m.fetch.state, CONFIRMED);
        assert_eq!(
            merge(&mut db, values(90), T0 + DAY, None).fetch.state,
            APPLIED
        );
    }

    /// T3: the same empty answer for weeks never empties the list; a second upstream
    /// does.
    #[test]
    fn time_alone_never_empties_a_list() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = open(&dir);
        merge(&mut db, values(100), T0, None);
        for day in 1..30 {
            let m = merge(&mut db, Values::new(), T0 + day * DAY, None);
            assert!(m.held(), "day {day}: {m:?}");
        }
        assert_eq!(db.rows(Kind::Asn, "1").unwrap().len(), 100);
        let m = merge(&mut db, Values::new(), T0 + 30 * DAY, Some("ipverse"));
        assert_eq!((m.fetch.state, m.stats.removed), (CONFIRMED, 100));
        assert!(db.rows(Kind::Asn, "1").unwrap().is_empty());
    }

    /// T1: 217 /8s instead of 300 /24s are held as grown, nothing added; the same
    /// answer again after `confirm_after` applies it; so does a new /11.
    #[test]
    fn growth_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = open(&dir);
        merge(&mut db, values(300), T0, None);
        let wide: Values = (1..=217).map(|i| format!("{i}.0.0.0/8")).collect();
        let m = merge(&mut db, wide, T0 + 3600, None);
        assert!(m.held() && m.stats.added == 0, "{m:?}");
        assert_eq!(m.fetch.note.as_deref(), Some("grew"));
        assert_eq!(db.rows(Kind::Asn, "1").unwrap().len(), 300);
        // One prefix shorter than /12 and than any stored: held, though small in count.
        let mut texts: Vec<String> = (0..300).map(|i| format!("198.18.{i}.0/24")).collect();
        texts.push("44.0.0.0/11".into());
        let m = merge(&mut db, texts.iter().collect(), T0 + 7200, None);
        assert_eq!(m.fetch.note.as_deref(), Some("grew"), "{m:?}");
        let m = merge(&mut db, texts.iter().collect(), T0 + 9 * 3600, None);
        assert_eq!((m.fetch.state, m.stats.added), (CONFIRMED, 1));
        // Growth within the limits applies at once.
        texts.extend((0..200).map(|i| format!("198.19.{i}.0/24")));
        let m = merge(&mut db, texts.iter().collect(), T0 + 10 * 3600, None);
        assert_eq!(m.fetch.state, APPLIED);
    }

    #[test]
    fn the_fetch_log_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = crate::db::open(&crate::config::Paths::new(dir.path(), None)).unwrap();
        let gate = Gate {
            max_shrink_percent: 30,
            confirm_after: 1 << 40,
            ..Gate::OFF
        };
        for i in 0..1000 {
            let tx = db.write().unwrap();
            let n = if i % 2 == 0 { 10 } else { 1 };
            tx.merge_answer(
                Kind::Feed,
                "u",
                &mut values(n),
                (1_800_000_000 + i, 7),
                None,
                &gate,
                None,
            )
            .unwrap();
            tx.commit().unwrap();
        }
        let logs = db.fetch_logs(10_000).unwrap();
        assert_eq!(logs.len(), 1);
        // The figure, not the constant: a change of KEPT shows here.
        assert_eq!(logs[0].2.len(), 30);
        let count: i64 = db
            .run(|c| c.query_row("SELECT count(*) FROM fetches", [], |r| r.get(0)))
            .unwrap();
        assert_eq!(count, 30);
        // The odd answers (1 of 10) were held, the even ones applied.
        assert_eq!(logs[0].2.last().unwrap().state, HELD);
        assert_eq!(db.held().unwrap().len(), 1);
    }
}
