//! Rows found by their value through the `entries_value` index (behind `lookup`),
//! and every row with its times (behind the detailed listing).
//!
//! The index answers two questions cheaply: "is one of these exact values stored"
//! (`IN`) and "which stored values lie in this range". IPv4 values are integers
//! (`address << 6 | length`, see `codec`), so the values inside an IPv4 prefix are one
//! integer range. IPv6 values are text, compressed (`::`), so only the leading non-zero
//! groups fixed by the prefix make a safe text prefix (`2001:b28:` for
//! `2001:b28:f23d::/48`); a first group that is zero gives the two ranges `0:` and
//! `::`, and a prefix shorter than 16 bits scans every IPv6 value. The caller checks
//! the rows of a range numerically, so a coarse range costs time, never a wrong answer.
//! Rows of one value come in kind and source order.

use ipnet::IpNet;
use rusqlite::types::Value;

use super::codec::{with_value_text, Stored};
use super::{Db, Row, StoreError};
use crate::format::TypeFilter;

/// The row columns, read through the value index.
const BY_VALUE: &str = "SELECT s.kind, s.name, e.value, e.first_seen, e.last_seen \
                        FROM entries e INDEXED BY entries_value JOIN sources s ON s.id = e.source";

/// Steps through the rows of `st` (its parameters bound), until `f` returns false.
fn each(
    st: &mut rusqlite::Statement<'_>,
    f: &mut dyn FnMut(Row) -> bool,
) -> rusqlite::Result<bool> {
    let mut rows = st.raw_query();
    while let Some(r) = rows.next()? {
        if !f(Row::from_row(r)?) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The ranges `[lo, hi)` of stored values that hold every value inside `net` (and
/// possibly more). None for a single address.
fn ranges(net: &IpNet) -> Vec<(Value, Value)> {
    // The string just after every string starting with `p` (p ends in ':').
    fn range(p: String) -> (Value, Value) {
        let mut hi = p.clone().into_bytes();
        if let Some(last) = hi.last_mut() {
            *last += 1;
        }
        (
            Value::Text(p),
            Value::Text(String::from_utf8(hi).unwrap_or_default()),
        )
    }
    let len = net.prefix_len();
    match net {
        IpNet::V4(n) => {
            if len == 32 {
                return Vec::new();
            }
            let lo = i64::from(u32::from(n.network()));
            let size = 1i64 << (32 - len);
            vec![(Value::Integer(lo << 6), Value::Integer((lo + size) << 6))]
        }
        IpNet::V6(n) => {
            if len == 128 {
                return Vec::new();
            }
            let g = n.network().segments();
            let k = usize::from(len / 16);
            let j = g[..k].iter().take_while(|x| **x != 0).count();
            if j > 0 {
                vec![range(g[..j].iter().map(|x| format!("{x:x}:")).collect())]
            } else if k > 0 {
                vec![range("0:".into()), range("::".into())]
            } else {
                // Every string that starts with a hex digit or ':'.
                vec![(Value::Text("0".into()), Value::Text("g".into()))]
            }
        }
    }
}

impl Db {
    /// Calls `f` with every row whose value is one of `values` (one index probe each).
    pub fn for_each_row_with_value(
        &self,
        values: &[String],
        mut f: impl FnMut(Row),
    ) -> Result<(), StoreError> {
        self.run(|c| {
            // Chunks keep the statement small: one IPv6 address gives 130 candidates.
            for chunk in values.chunks(130) {
                let marks = vec!["?"; chunk.len()].join(",");
                let mut st = c.prepare(&format!(
                    "{BY_VALUE} WHERE e.value IN ({marks}) ORDER BY e.value, s.kind, s.name"
                ))?;
                for (i, v) in chunk.iter().enumerate() {
                    st.raw_bind_parameter(i + 1, Stored::of(v))?;
                }
                each(&mut st, &mut |r| {
                    f(r);
                    true
                })?;
            }
            Ok(())
        })
    }

    /// Calls `f` with every row whose value may lie inside `net` (one index range or
    /// a few) and whose value text `keep` takes, until `f` returns false. Nothing for
    /// a single address. `keep` sees each value before its row is built: an IPv6 text
    /// range can hold many values outside `net` (all 10,000 of `2001:db8:` for a
    /// `/40`), which then cost no row.
    pub fn for_each_row_within(
        &self,
        net: &IpNet,
        mut keep: impl FnMut(&str) -> bool,
        mut f: impl FnMut(Row) -> bool,
    ) -> Result<(), StoreError> {
        self.run(|c| {
            let mut st = c.prepare(&format!(
                "{BY_VALUE} WHERE e.value >= ?1 AND e.value < ?2 ORDER BY e.value, s.kind, s.name"
            ))?;
            for (lo, hi) in ranges(net) {
                st.raw_bind_parameter(1, lo)?;
                st.raw_bind_parameter(2, hi)?;
                let mut rows = st.raw_query();
                while let Some(r) = rows.next()? {
                    if !with_value_text(r.get_ref(2)?, &mut keep) {
                        continue;
                    }
                    if !f(Row::from_row(r)?) {
                        return Ok(());
                    }
                }
            }
            Ok(())
        })
    }

    /// Calls `f` with every stored row of the selected sources, ordered by kind and
    /// source.
    pub fn for_each_row(
        &self,
        filter: TypeFilter,
        mut f: impl FnMut(Row),
    ) -> Result<(), StoreError> {
        // No kinds: every row (the empty word passes the first test).
        let kinds = filter
            .kinds()
            .map_or(["", "", ""], super::read::kind_params);
        self.run(|c| {
            let mut st = c.prepare(&format!(
                "{} WHERE ?1 = '' OR s.kind IN (?1, ?2, ?3) ORDER BY s.kind, s.name",
                super::read::ROW
            ))?;
            for (i, k) in kinds.iter().enumerate() {
                st.raw_bind_parameter(i + 1, *k)?;
            }
            each(&mut st, &mut |r| {
                f(r);
                true
            })?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_of_prefixes() {
        let r = |s: &str| ranges(&s.parse().unwrap());
        let v4 = r("91.108.4.0/22");
        let base = i64::from(u32::from(std::net::Ipv4Addr::new(91, 108, 4, 0)));
        assert_eq!(
            v4,
            [(
                Value::Integer(base << 6),
                Value::Integer((base + 1024) << 6)
            )]
        );
        assert!(r("1.2.3.4/32").is_empty());
        let t = |a: &str, b: &str| (Value::Text(a.into()), Value::Text(b.into()));
        assert_eq!(
            r("2001:b28:f23d::/48"),
            [t("2001:b28:f23d:", "2001:b28:f23d;")]
        );
        assert_eq!(r("::ffff:0:0/96").len(), 2);
        assert_eq!(r("2000::/3"), [t("0", "g")]);
    }
}
