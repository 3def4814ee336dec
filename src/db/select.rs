//! The values of some sources (a group's list), read the cheapest way:
//!
//! * the group holds every source that has rows (the usual case for `default`, and for
//!   a group naming all that is collected): the plain listing's pass over the value
//!   index, unfiltered, so the group costs what the plain export costs;
//! * it holds at least half of the stored sources, and its sources, or the others,
//!   are one run of ids (sources added together): the same pass, SQLite keeping the
//!   rows of the run, or those outside it, with one `BETWEEN` (the index
//!   `(value, source)` carries the source id), at the plain pass's price. The values
//!   come in value order, so the listing's sort finds them sorted;
//! * otherwise: one range of the key `(source, value)` per source, so it costs its own
//!   rows only (then sorted by the listing).
//!
//! Measured against the last case for a group of 100 of 110 sources with mixed ids
//! (docs/performance.md, "Group export"): the pass over the index with each row's
//! source id checked in a bitset here costs about 20 ns a row beside the plain pass's
//! 75 and lost (1.3-1.45x the plain export against 1.22-1.35x); an `OR` of several
//! `BETWEEN`s or a `NOT IN (...)` costs more still, and a k-way merge of the ranges
//! (no sort afterwards) more than the sort. Rows per source are not known without
//! counting them, so the number of sources stands for it.

use rusqlite::Connection;

use super::history::KeepSource;
use super::read::Listed;
use super::{Db, StoreError};
use crate::source::Kind;

/// How the rows of the kept sources are read.
#[derive(Debug, PartialEq, Eq)]
enum Plan {
    /// Nothing is kept.
    Nothing,
    /// Every row: the kept sources are all that have rows.
    Everything,
    /// The value index, rows whose source id is in `lo..=hi` (`true`) or outside it
    /// (`false`): the kept sources, or the others, are one run of ids.
    Within(i64, i64, bool),
    /// One key range per kept id.
    Ranges(Vec<i64>),
}

/// The ids of the stored sources (in order), split by whether `keep` keeps them.
#[derive(Default)]
pub(super) struct Split {
    pub(super) kept: Vec<i64>,
    pub(super) dropped: Vec<i64>,
    /// How many runs of consecutive stored sources each is.
    kept_runs: usize,
    dropped_runs: usize,
    /// Whether the source before was kept.
    last: Option<bool>,
}

impl Split {
    fn push(&mut self, id: i64, kept: bool) {
        let (ids, runs) = match kept {
            true => (&mut self.kept, &mut self.kept_runs),
            false => (&mut self.dropped, &mut self.dropped_runs),
        };
        if self.last != Some(kept) {
            *runs += 1;
        }
        self.last = Some(kept);
        ids.push(id);
    }
}

/// The stored sources split by whether `keep` keeps them (also what `changes` of a
/// group reads). Sources of a kind this binary does not know are never kept.
pub(super) fn split(c: &Connection, keep: KeepSource<'_>) -> rusqlite::Result<Split> {
    let mut st = c.prepare("SELECT id, kind, name FROM sources ORDER BY id")?;
    let mut rows = st.query([])?;
    let mut split = Split::default();
    while let Some(r) = rows.next()? {
        let kind = Kind::from_word(r.get_ref(1)?.as_str()?);
        let name = r.get_ref(2)?.as_str()?;
        let kept = kind.is_some_and(|k| keep(k, name));
        split.push(r.get(0)?, kept);
    }
    Ok(split)
}

/// The plan for the stored sources that `keep` keeps.
fn plan(c: &Connection, keep: KeepSource<'_>) -> rusqlite::Result<Plan> {
    let split = split(c, keep)?;
    if split.kept.is_empty() {
        return Ok(Plan::Nothing);
    }
    // A source stays in `sources` after its last row is gone (its history names it):
    // those dropped without rows do not count. One seek each, stopping at the first
    // dropped source that has rows.
    let mut has_rows = c.prepare("SELECT 1 FROM entries WHERE source = ?1 LIMIT 1")?;
    let mut others_have_rows = false;
    for id in &split.dropped {
        if has_rows.exists([id])? {
            others_have_rows = true;
            break;
        }
    }
    let Split {
        kept,
        dropped,
        kept_runs,
        dropped_runs,
        ..
    } = split;
    let run = |ids: &[i64]| (ids[0], ids[ids.len() - 1]);
    Ok(if !others_have_rows {
        Plan::Everything
    } else if kept.len() < dropped.len() {
        Plan::Ranges(kept)
    } else if kept_runs == 1 {
        let (lo, hi) = run(&kept);
        Plan::Within(lo, hi, true)
    } else if dropped_runs == 1 {
        let (lo, hi) = run(&dropped);
        Plan::Within(lo, hi, false)
    } else {
        Plan::Ranges(kept)
    })
}

impl Db {
    /// Calls `f` with every stored value of the stored sources that `keep` keeps
    /// (called once per stored source with its kind and name; duplicates included, in
    /// no particular order), without allocating per value: the values of a group,
    /// selected in SQL by source, never copied per group.
    pub fn for_each_value_of(
        &self,
        mut keep: impl FnMut(Kind, &str) -> bool,
        mut f: impl FnMut(Listed<'_>),
    ) -> Result<(), StoreError> {
        self.run(|c| match plan(c, &mut keep)? {
            Plan::Nothing => Ok(()),
            Plan::Everything => {
                // The plain listing's query (`for_each_value`).
                let mut st = c.prepare("SELECT value FROM entries INDEXED BY entries_value")?;
                let mut rows = st.query([])?;
                while let Some(r) = rows.next()? {
                    f(Listed::of(r.get_ref(0)?));
                }
                Ok(())
            }
            Plan::Within(lo, hi, inside) => {
                let not = if inside { "" } else { "NOT" };
                let mut st = c.prepare(&format!(
                    "SELECT value FROM entries INDEXED BY entries_value \
                     WHERE source {not} BETWEEN ?1 AND ?2"
                ))?;
                let mut rows = st.query([lo, hi])?;
                while let Some(r) = rows.next()? {
                    f(Listed::of(r.get_ref(0)?));
                }
                Ok(())
            }
            Plan::Ranges(ids) => {
                let mut st = c.prepare("SELECT value FROM entries WHERE source = ?1")?;
                for id in ids {
                    let mut rows = st.query([id])?;
                    while let Some(r) = rows.next()? {
                        f(Listed::of(r.get_ref(0)?));
                    }
                }
                Ok(())
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Paths;

    const T0: i64 = 1_790_000_000;

    /// Four sources with rows, sharing values, both families and kinds; `D` only in
    /// the history (its rows purged).
    fn store() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let mut db = super::super::open(&Paths::new(dir.path(), None)).unwrap();
        let put = |db: &mut Db, kind, name: &str, v: &[&str]| {
            let v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
            db.merge_source(kind, name, &v, T0, 7).unwrap();
        };
        put(
            &mut db,
            Kind::Asn,
            "D",
            &["192.0.2.0/24", "2001:db8:d::/48"],
        );
        put(
            &mut db,
            Kind::Asn,
            "A",
            &["10.0.0.0/8", "10.1.0.0/16", "2001:db8::/32"],
        );
        put(
            &mut db,
            Kind::Asn,
            "B",
            &["10.1.0.0/16", "11.0.0.0/8", "2001:db8::/32"],
        );
        put(&mut db, Kind::Asn, "C", &["12.0.0.0/8", "2001:db8:c::/48"]);
        put(
            &mut db,
            Kind::Fqdn,
            "x.example",
            &["10.1.2.3", "2001:db8::1"],
        );
        db.purge_source(Kind::Asn, "D").unwrap();
        (dir, db)
    }

    /// The values `for_each_value_of` gives for the sources named, sorted (duplicates
    /// kept), the reference read source by source, and the plan taken.
    fn check(db: &Db, names: &[&str]) -> Plan {
        let keep = |_: Kind, n: &str| names.contains(&n);
        let mut got = Vec::new();
        db.for_each_value_of(keep, |v| v.with_text(|t| got.push(t.to_string())))
            .unwrap();
        got.sort();
        let mut want = Vec::new();
        for (kind, name) in [(Kind::Asn, "A"), (Kind::Asn, "B"), (Kind::Asn, "C")]
            .into_iter()
            .chain([(Kind::Asn, "D"), (Kind::Fqdn, "x.example")])
            .filter(|(_, n)| names.contains(n))
        {
            want.extend(db.rows(kind, name).unwrap().into_iter().map(|r| r.value));
        }
        want.sort();
        assert_eq!(got, want, "{names:?}");
        plan(&db.conn, &mut |k, n| keep(k, n)).unwrap()
    }

    #[test]
    fn every_plan_selects_exactly_the_sources_named() {
        let (_d, db) = store();
        // Every source with rows (with or without the one without rows): everything.
        let all = ["A", "B", "C", "x.example"];
        assert_eq!(check(&db, &all), Plan::Everything);
        assert_eq!(
            check(&db, &["A", "B", "C", "D", "x.example"]),
            Plan::Everything
        );
        // Most of them (ids: D 1, A 2, B 3, C 4, x.example 5) in one run of ids, or
        // the others in one: the index, filtered by the run (shared values come once
        // per source); in no run: a range each.
        assert_eq!(check(&db, &["A", "B", "C"]), Plan::Within(2, 4, true));
        assert_eq!(
            check(&db, &["B", "C", "x.example"]),
            Plan::Within(3, 5, true)
        );
        assert_eq!(
            check(&db, &["D", "A", "C", "x.example"]),
            Plan::Within(3, 3, false)
        );
        assert_eq!(
            check(&db, &["A", "C", "x.example"]),
            Plan::Ranges(vec![2, 4, 5])
        );
        // Few: a range each.
        assert_eq!(check(&db, &["A"]), Plan::Ranges(vec![2]));
        assert_eq!(check(&db, &["B", "D"]), Plan::Ranges(vec![1, 3]));
        assert_eq!(check(&db, &["D"]), Plan::Ranges(vec![1]));
        assert_eq!(check(&db, &[]), Plan::Nothing);
        assert_eq!(check(&db, &["nowhere"]), Plan::Nothing);
    }

    #[test]
    fn a_kind_not_kept_is_left_out() {
        let (_d, db) = store();
        let mut got = Vec::new();
        db.for_each_value_of(
            |k, _| k == Kind::Fqdn,
            |v| v.with_text(|t| got.push(t.to_string())),
        )
        .unwrap();
        got.sort();
        assert_eq!(got, ["10.1.2.3", "2001:db8::1"]);
    }
}
