//! Queries: listings, counts, per-source summaries, rows.

use crate::format::TypeFilter;
use crate::source::Kind;

use super::{Db, StoreError};

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
    fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
        let kind: String = r.get(0)?;
        Ok(Row {
            kind: if kind == "fqdn" {
                Kind::Fqdn
            } else {
                Kind::Asn
            },
            source: r.get(1)?,
            value: r.get(2)?,
            first_seen: r.get(3)?,
            last_seen: r.get(4)?,
        })
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
    /// Calls `f` with every stored value of the given sources (duplicates included,
    /// sources not stored ignored): one range of the primary key per source, so a
    /// group's list costs its own rows only.
    pub fn for_each_value_of(
        &self,
        sources: &[(Kind, String)],
        mut f: impl FnMut(&str),
    ) -> Result<(), StoreError> {
        let mut run = || -> rusqlite::Result<()> {
            let mut st = self
                .conn
                .prepare("SELECT value FROM addresses WHERE kind = ?1 AND source = ?2")?;
            for (kind, name) in sources {
                let mut rows = st.query([kind.as_str(), name.as_str()])?;
                while let Some(r) = rows.next()? {
                    if let rusqlite::types::ValueRef::Text(t) = r.get_ref(0)? {
                        if let Ok(v) = std::str::from_utf8(t) {
                            f(v);
                        }
                    }
                }
            }
            Ok(())
        };
        run().map_err(|e| self.err(e))
    }

    /// The distinct values of the selected sources, sorted as strings.
    pub fn get_values(&self, filter: TypeFilter) -> Result<Vec<String>, StoreError> {
        let mut values = Vec::new();
        self.for_each_value(filter, |v| values.push(v.to_string()))?;
        values.sort_unstable();
        values.dedup();
        Ok(values)
    }

    /// Calls `f` with every stored value of the selected sources, duplicates included
    /// and in no particular order, without allocating per value: the fast path behind
    /// the listings (which sort and de-duplicate anyway).
    pub fn for_each_value(
        &self,
        filter: TypeFilter,
        mut f: impl FnMut(&str),
    ) -> Result<(), StoreError> {
        let kinds = filter.kinds().map(kind_params);
        let mut run = || -> rusqlite::Result<()> {
            let mut st = match kinds {
                // Both read a covering index, never the table.
                None => self
                    .conn
                    .prepare("SELECT value FROM addresses INDEXED BY addresses_value")?,
                Some(_) => self
                    .conn
                    .prepare("SELECT value FROM addresses WHERE kind IN (?1, ?2, ?3)")?,
            };
            let mut rows = match kinds {
                None => st.query([])?,
                Some(k) => st.query(k)?,
            };
            while let Some(r) = rows.next()? {
                if let rusqlite::types::ValueRef::Text(t) = r.get_ref(0)? {
                    if let Ok(v) = std::str::from_utf8(t) {
                        f(v);
                    }
                }
            }
            Ok(())
        };
        run().map_err(|e| self.err(e))
    }

    /// The number of stored rows (source, value pairs) of a kind.
    pub fn count_values(&self, kind: Kind) -> Result<u64, StoreError> {
        let (asn, fqdn) = self.counts()?;
        Ok(match kind {
            Kind::Asn => asn,
            Kind::Fqdn => fqdn,
        })
    }

    /// The number of stored rows of each kind, `(asn, fqdn)`, in one pass over the
    /// primary-key index.
    pub fn counts(&self) -> Result<(u64, u64), StoreError> {
        let run = || -> rusqlite::Result<(u64, u64)> {
            let mut st = self
                .conn
                .prepare("SELECT kind, COUNT(*) FROM addresses GROUP BY kind")?;
            let mut rows = st.query([])?;
            let mut out = (0, 0);
            while let Some(r) = rows.next()? {
                let n = r.get::<_, i64>(1)? as u64;
                match r.get_ref(0)?.as_str()? {
                    "asn" => out.0 = n,
                    _ => out.1 = n,
                }
            }
            Ok(out)
        };
        run().map_err(|e| self.err(e))
    }

    /// Every stored source of a kind with its count and newest `last_seen`.
    pub fn sources(&self, kind: Kind) -> Result<Vec<SourceSummary>, StoreError> {
        let run = || -> rusqlite::Result<Vec<SourceSummary>> {
            let mut st = self.conn.prepare(
                "SELECT source, COUNT(*), MAX(last_seen) FROM addresses WHERE kind = ?1
                 GROUP BY source ORDER BY source",
            )?;
            let rows = st.query_map([kind.as_str()], |r| {
                Ok(SourceSummary {
                    source: r.get(0)?,
                    count: r.get::<_, i64>(1)? as u64,
                    last_seen: r.get(2)?,
                })
            })?;
            rows.collect()
        };
        run().map_err(|e| self.err(e))
    }

    /// Every row of one source, ordered by value (for inspection and tests).
    pub fn rows(&self, kind: Kind, source: &str) -> Result<Vec<Row>, StoreError> {
        let run = || -> rusqlite::Result<Vec<Row>> {
            let mut st = self.conn.prepare(
                "SELECT kind, source, value, first_seen, last_seen FROM addresses
                 WHERE kind = ?1 AND source = ?2 ORDER BY value",
            )?;
            let rows = st.query_map([kind.as_str(), source], Row::from_row)?;
            rows.collect()
        };
        run().map_err(|e| self.err(e))
    }

    /// Every row, ordered by kind, source and value.
    pub fn all_rows(&self) -> Result<Vec<Row>, StoreError> {
        let run = || -> rusqlite::Result<Vec<Row>> {
            let mut st = self.conn.prepare(
                "SELECT kind, source, value, first_seen, last_seen FROM addresses
                 ORDER BY kind, source, value",
            )?;
            let rows = st.query_map([], Row::from_row)?;
            rows.collect()
        };
        run().map_err(|e| self.err(e))
    }

    /// A value for a single pragma (for tests and diagnostics).
    pub fn pragma(&self, name: &str) -> Result<String, StoreError> {
        self.conn
            .query_row(&format!("PRAGMA {name}"), [], |r| {
                r.get_ref(0).map(|v| match v {
                    rusqlite::types::ValueRef::Integer(i) => i.to_string(),
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                    other => format!("{other:?}"),
                })
            })
            .map_err(|e| self.err(e))
    }
}
