//! Rows found by their value through the `addresses_value` index (behind `lookup`),
//! and every row with its times (behind the detailed listing).
//!
//! Values are text, so the index answers two questions cheaply: "is one of these exact
//! strings stored" (`IN`) and "which stored strings lie in this text range". The
//! `inspect::lookup` module turns an address or prefix into such strings and ranges.
//! Rows of one value come in kind and source order.

use super::history::kind_of;
use super::{Db, Row, StoreError};
use crate::format::TypeFilter;

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok(Row {
        kind: kind_of(r.get_ref(0)?.as_str()?),
        source: r.get(1)?,
        value: r.get(2)?,
        first_seen: r.get(3)?,
        last_seen: r.get(4)?,
    })
}

const COLUMNS: &str = "SELECT kind, source, value, first_seen, last_seen FROM addresses";

/// Steps through the rows of `st` (its parameters bound), until `f` returns false.
fn each(
    st: &mut rusqlite::Statement<'_>,
    f: &mut dyn FnMut(Row) -> bool,
) -> rusqlite::Result<bool> {
    let mut rows = st.raw_query();
    while let Some(r) = rows.next()? {
        if !f(row(r)?) {
            return Ok(false);
        }
    }
    Ok(true)
}

impl Db {
    /// Calls `f` with every row whose value is one of `values` (one index probe each).
    pub fn for_each_row_with_value(
        &self,
        values: &[String],
        mut f: impl FnMut(Row),
    ) -> Result<(), StoreError> {
        let mut run = || -> rusqlite::Result<()> {
            // Chunks keep the statement small: one IPv6 address gives 130 candidates.
            for chunk in values.chunks(130) {
                let marks = vec!["?"; chunk.len()].join(",");
                let mut st = self.conn.prepare(&format!(
                    "{COLUMNS} INDEXED BY addresses_value WHERE value IN ({marks})
                     ORDER BY value, kind, source"
                ))?;
                for (i, v) in chunk.iter().enumerate() {
                    st.raw_bind_parameter(i + 1, v.as_str())?;
                }
                each(&mut st, &mut |r| {
                    f(r);
                    true
                })?;
            }
            Ok(())
        };
        run().map_err(|e| self.err(e))
    }

    /// Calls `f` with every row whose value `v` has `lo <= v < hi` as text for one of
    /// the `ranges` (one index range each), until `f` returns false.
    pub fn for_each_row_in_ranges(
        &self,
        ranges: &[(String, String)],
        mut f: impl FnMut(Row) -> bool,
    ) -> Result<(), StoreError> {
        let mut run = || -> rusqlite::Result<()> {
            let mut st = self.conn.prepare(&format!(
                "{COLUMNS} INDEXED BY addresses_value WHERE value >= ?1 AND value < ?2
                 ORDER BY value, kind, source"
            ))?;
            for (lo, hi) in ranges {
                st.raw_bind_parameter(1, lo.as_str())?;
                st.raw_bind_parameter(2, hi.as_str())?;
                if !each(&mut st, &mut f)? {
                    break;
                }
            }
            Ok(())
        };
        run().map_err(|e| self.err(e))
    }

    /// Calls `f` with every stored row of the selected sources, ordered by kind and
    /// source (the primary key's order).
    pub fn for_each_row(
        &self,
        filter: TypeFilter,
        mut f: impl FnMut(Row),
    ) -> Result<(), StoreError> {
        // No kinds: every row (the empty word matches the first test).
        let kinds = filter
            .kinds()
            .map_or(["", "", ""], super::read::kind_params);
        let mut run = || -> rusqlite::Result<()> {
            let mut st = self.conn.prepare(&format!(
                "{COLUMNS} WHERE ?1 = '' OR kind IN (?1, ?2, ?3) ORDER BY kind, source"
            ))?;
            for (i, k) in kinds.iter().enumerate() {
                st.raw_bind_parameter(i + 1, *k)?;
            }
            each(&mut st, &mut |r| {
                f(r);
                true
            })?;
            Ok(())
        };
        run().map_err(|e| self.err(e))
    }
}
