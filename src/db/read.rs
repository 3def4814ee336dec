//! Queries: listings, counts, per-source summaries, rows.

use std::net::Ipv4Addr;

use rusqlite::types::ValueRef;

use crate::format::TypeFilter;
use crate::source::Kind;
use crate::util;

use super::codec::{time_text, value_text, with_v4_text, BARE};
use super::history::kind_of;
use super::{Db, StoreError};

/// Each source of a kind with its count and newest `last_seen` (times kept as text,
/// legacy, compare as text, as in version 2). Grouped by the name, which the sources'
/// index gives in order: grouped by id, every row went through a temporary b-tree,
/// 8 MiB of the daemon's peak at start with 100,000 values.
pub(super) const SOURCES: &str = "SELECT s.name, count(*),
     max(CASE typeof(e.last_seen) WHEN 'integer' THEN e.last_seen END),
     max(CASE typeof(e.last_seen) WHEN 'text' THEN e.last_seen END)
 FROM sources s JOIN entries e ON e.source = s.id WHERE s.kind = ?1
 GROUP BY s.name ORDER BY s.name";

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
    /// A row of `SELECT kind, name, value, first_seen, last_seen`.
    pub(super) fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
        Ok(Row {
            kind: kind_of(r.get_ref(0)?.as_str()?),
            source: r.get(1)?,
            value: value_text(r.get_ref(2)?),
            first_seen: time_text(r.get_ref(3)?),
            last_seen: time_text(r.get_ref(4)?),
        })
    }
}

/// The columns of a [`Row`], from `entries e JOIN sources s`.
pub(super) const ROW: &str = "SELECT s.kind, s.name, e.value, e.first_seen, e.last_seen \
                              FROM sources s JOIN entries e ON e.source = s.id";

/// A stored value as the listings take it: an IPv4 value stored as a number stays
/// one (no text rendered only to be parsed again), anything else is its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listed<'a> {
    /// An IPv4 address or prefix: the address and the length as stored (`None`: a
    /// bare address). A length over 32 can be stored (a script may write
    /// `1.2.3.4/40`); it is the same invalid value its text is.
    V4(Ipv4Addr, Option<u8>),
    /// Any other value, as stored.
    Text(&'a str),
}

impl<'a> Listed<'a> {
    pub(super) fn of(v: ValueRef<'a>) -> Listed<'a> {
        match v {
            ValueRef::Integer(code) => {
                let len = code & 63;
                Listed::V4(
                    Ipv4Addr::from((code >> 6) as u32),
                    (len != BARE).then_some(len as u8),
                )
            }
            ValueRef::Text(t) | ValueRef::Blob(t) => {
                Listed::Text(std::str::from_utf8(t).unwrap_or(""))
            }
            _ => Listed::Text(""),
        }
    }

    /// Calls `f` with the value's text, as the `addresses` view shows it.
    pub fn with_text<T>(self, f: impl FnOnce(&str) -> T) -> T {
        match self {
            Listed::V4(a, len) => {
                let code = (i64::from(u32::from(a)) << 6) | len.map_or(BARE, i64::from);
                with_v4_text(code, f)
            }
            Listed::Text(t) => f(t),
        }
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

/// The kind words of a type filter as the three parameters of `kind IN (?1, ?2, ?3)`
/// (the last repeated when there are fewer).
pub(super) fn kind_params(kinds: &'static [&'static str]) -> [&'static str; 3] {
    let at = |i: usize| kinds.get(i).or(kinds.last()).copied().unwrap_or("");
    [at(0), at(1), at(2)]
}

impl Db {
    /// The distinct values of the selected sources, sorted as strings.
    pub fn get_values(&self, filter: TypeFilter) -> Result<Vec<String>, StoreError> {
        let mut values = Vec::new();
        self.for_each_value(filter, |v| values.push(v.with_text(str::to_string)))?;
        crate::util::sort::sort(&mut values);
        values.dedup();
        Ok(values)
    }

    /// Calls `f` with every stored value of the selected sources, duplicates included
    /// and in no particular order, without allocating or rendering text per value:
    /// the fast path behind the listings (which sort and de-duplicate anyway).
    pub fn for_each_value(
        &self,
        filter: TypeFilter,
        mut f: impl FnMut(Listed<'_>),
    ) -> Result<(), StoreError> {
        let kinds = filter.kinds().map(kind_params);
        self.run(|c| {
            let mut st = match kinds {
                // A covering index, never the table.
                None => c.prepare("SELECT value FROM entries INDEXED BY entries_value")?,
                Some(_) => c.prepare(
                    "SELECT e.value FROM sources s JOIN entries e ON e.source = s.id \
                     WHERE s.kind IN (?1, ?2, ?3)",
                )?,
            };
            let mut rows = match kinds {
                None => st.query([])?,
                Some(k) => st.query(k)?,
            };
            while let Some(r) = rows.next()? {
                f(Listed::of(r.get_ref(0)?));
            }
            Ok(())
        })
    }

    /// The number of stored rows (source, value pairs) of a kind.
    pub fn count_values(&self, kind: Kind) -> Result<u64, StoreError> {
        Ok(self
            .counts_by_kind()?
            .into_iter()
            .find(|(k, _)| *k == kind)
            .map_or(0, |(_, n)| n))
    }

    /// The number of stored rows of each kind stored, in one pass over the key.
    pub fn counts_by_kind(&self) -> Result<Vec<(Kind, u64)>, StoreError> {
        self.run(|c| {
            let mut st = c.prepare(
                "SELECT s.kind, sum(x.n) FROM (SELECT source, count(*) AS n FROM entries \
                 GROUP BY source) x JOIN sources s ON s.id = x.source GROUP BY s.kind",
            )?;
            let mut rows = st.query([])?;
            let mut out = Vec::new();
            while let Some(r) = rows.next()? {
                let n = r.get::<_, i64>(1)? as u64;
                if let Some(k) = Kind::from_word(r.get_ref(0)?.as_str()?) {
                    out.push((k, n));
                }
            }
            Ok(out)
        })
    }

    /// The number of stored rows of prefix sources (ASNs, feeds, countries) and of
    /// host names, `(prefixes, fqdn)`, in one pass over the key (counted per source,
    /// no sort).
    pub fn counts(&self) -> Result<(u64, u64), StoreError> {
        let mut out = (0, 0);
        for (kind, n) in self.counts_by_kind()? {
            match kind {
                Kind::Fqdn => out.1 += n,
                _ => out.0 += n,
            }
        }
        Ok(out)
    }

    /// Every stored source of a kind with its count and newest `last_seen`.
    pub fn sources(&self, kind: Kind) -> Result<Vec<SourceSummary>, StoreError> {
        self.run(|c| {
            let mut st = c.prepare(SOURCES)?;
            let rows = st.query_map([kind.as_str()], |r| {
                let secs: Option<i64> = r.get(2)?;
                let text: Option<String> = r.get(3)?;
                let last_seen = match (secs.map(util::iso), text) {
                    (Some(a), Some(b)) => a.max(b),
                    (a, b) => a.or(b).unwrap_or_default(),
                };
                Ok(SourceSummary {
                    source: r.get(0)?,
                    count: r.get::<_, i64>(1)? as u64,
                    last_seen,
                })
            })?;
            rows.collect()
        })
    }

    /// Every row of one source, ordered by value (for inspection and tests).
    pub fn rows(&self, kind: Kind, source: &str) -> Result<Vec<Row>, StoreError> {
        let mut rows = self.run(|c| {
            let mut st = c.prepare(&format!("{ROW} WHERE s.kind = ?1 AND s.name = ?2"))?;
            let rows = st.query_map([kind.as_str(), source], Row::from_row)?;
            rows.collect::<rusqlite::Result<Vec<Row>>>()
        })?;
        // All of one source: ordered by value. The same comparison as `all_rows`,
        // so the sort code is linked once (docs/size.md).
        crate::util::sort::sort_by(&mut rows, row_before);
        Ok(rows)
    }

    /// Every row, ordered by kind, source and value.
    pub fn all_rows(&self) -> Result<Vec<Row>, StoreError> {
        let mut rows = self.run(|c| {
            let mut st = c.prepare(ROW)?;
            let rows = st.query_map([], Row::from_row)?;
            rows.collect::<rusqlite::Result<Vec<Row>>>()
        })?;
        crate::util::sort::sort_by(&mut rows, row_before);
        Ok(rows)
    }

    /// A value for a single pragma (for tests and diagnostics).
    pub fn pragma(&self, name: &str) -> Result<String, StoreError> {
        self.run(|c| {
            c.query_row(&format!("PRAGMA {name}"), [], |r| {
                r.get_ref(0).map(|v| match v {
                    rusqlite::types::ValueRef::Integer(i) => i.to_string(),
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                    other => format!("{other:?}"),
                })
            })
        })
    }
}

/// Rows by kind, source and value.
fn row_before(a: &Row, b: &Row) -> bool {
    (a.kind, &a.source, &a.value) < (b.kind, &b.source, &b.value)
}
