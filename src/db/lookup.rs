//! Rows found by their value through the `addresses_value` index (behind `lookup`),
//! and every row with its times (behind the detailed listing).
//!
//! Values are text, so the index answers two questions cheaply: "is one of these exact
//! strings stored" (`IN`) and "which stored strings lie in this text range". The
//! `inspect::lookup` module turns an address or prefix into such strings and ranges.

use rusqlite::types::ValueRef;

use super::history::kind_of;
use super::{Db, Row, StoreError};
use crate::format::TypeFilter;

fn text(v: ValueRef<'_>) -> rusqlite::Result<String> {
    Ok(v.as_str()?.to_owned())
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok(Row {
        kind: kind_of(r.get_ref(0)?.as_str()?),
        source: text(r.get_ref(1)?)?,
        value: text(r.get_ref(2)?)?,
        first_seen: text(r.get_ref(3)?)?,
        last_seen: text(r.get_ref(4)?)?,
    })
}

const COLUMNS: &str = "SELECT kind, source, value, first_seen, last_seen FROM addresses";

impl Db {
    /// Calls `f` with every row whose value is one of `values` (one index probe each).
    pub fn for_each_row_with_value(
        &self,
        values: &[String],
        mut f: impl FnMut(Row),
    ) -> Result<(), StoreError> {
        let mut run = || -> rusqlite::Result<()> {
            // Chunks keep the statement text small and cacheable: at most 130
            // candidates come from one IPv6 address.
            for chunk in values.chunks(130) {
                let marks = vec!["?"; chunk.len()].join(",");
                let mut st = self.conn.prepare(&format!(
                    "{COLUMNS} INDEXED BY addresses_value WHERE value IN ({marks})"
                ))?;
                let mut rows = st.query(rusqlite::params_from_iter(chunk))?;
                while let Some(r) = rows.next()? {
                    f(row(r)?);
                }
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
                "{COLUMNS} INDEXED BY addresses_value WHERE value >= ?1 AND value < ?2"
            ))?;
            for (lo, hi) in ranges {
                let mut rows = st.query([lo, hi])?;
                while let Some(r) = rows.next()? {
                    if !f(row(r)?) {
                        return Ok(());
                    }
                }
            }
            Ok(())
        };
        run().map_err(|e| self.err(e))
    }

    /// Calls `f` with every stored row of the selected sources, in no particular order.
    pub fn for_each_row(
        &self,
        filter: TypeFilter,
        mut f: impl FnMut(Row),
    ) -> Result<(), StoreError> {
        let kind = match filter {
            TypeFilter::All => None,
            TypeFilter::Cidr => Some("asn"),
            TypeFilter::Fqdn => Some("fqdn"),
        };
        let mut run = || -> rusqlite::Result<()> {
            let mut st = self
                .conn
                .prepare(&format!("{COLUMNS} WHERE ?1 IS NULL OR kind = ?1"))?;
            let mut rows = st.query([kind])?;
            while let Some(r) = rows.next()? {
                f(row(r)?);
            }
            Ok(())
        };
        run().map_err(|e| self.err(e))
    }
}
