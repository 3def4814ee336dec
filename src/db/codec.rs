//! How schema version 3 stores values and times compactly, in Rust and in SQL.
//!
//! * A **value** that is an IPv4 address or prefix written canonically is stored as the
//!   integer `address << 6 | length` (length 33: a bare address): 6 bytes instead of
//!   up to 18 of text, and integers sort numerically before any text. Everything else
//!   (IPv6, whose compressed text is short for the prefixes that are announced, and
//!   anything a script stored that is not canonical) stays text, as written.
//! * A **time** written `YYYY-MM-DDTHH:MM:SSZ` is stored as Unix seconds (4 bytes until
//!   2038); any other text (imported legacy times are kept as they were written) stays
//!   text.
//!
//! Each rule is "encode, and keep the result only when it renders back to exactly the
//! text given", in Rust (what the program writes) and in SQL (what the `INSTEAD OF`
//! triggers of the compatibility views write), so that both give the same stored value
//! for the same text. The SQL uses only core functions: the bundled SQLite is built
//! without the date functions, and the `sqlite3` CLI of older systems lacks `unhex`.

use std::io::Write;

#[cfg(test)]
use rusqlite::types::Value;
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::ToSql;

use crate::util;

/// A value as stored.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stored {
    /// An IPv4 address or prefix: `address << 6 | length` (33: bare).
    V4(i64),
    /// Any other value, as text.
    Text(String),
}

/// Length code of a bare IPv4 address.
const BARE: i64 = 33;

/// The canonical text of an IPv4 code, written into `buf`; returns its length.
fn render_v4_into(code: i64, buf: &mut [u8; 24]) -> usize {
    let a = code >> 6;
    let len = code & 63;
    let mut w = &mut buf[..];
    let _ = write!(
        w,
        "{}.{}.{}.{}",
        (a >> 24) & 255,
        (a >> 16) & 255,
        (a >> 8) & 255,
        a & 255
    );
    if len != BARE {
        let _ = write!(w, "/{len}");
    }
    24 - w.len()
}

/// Calls `f` with the text of a stored IPv4 code, without allocating.
pub fn with_v4_text<T>(code: i64, f: impl FnOnce(&str) -> T) -> T {
    let mut buf = [0u8; 24];
    let n = render_v4_into(code, &mut buf);
    f(std::str::from_utf8(&buf[..n]).unwrap_or(""))
}

/// The IPv4 code of `s` when `s` is exactly the canonical text of one.
pub fn v4_code(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 18 || !b[0].is_ascii_digit() {
        return None;
    }
    let (addr, len) = match s.split_once('/') {
        Some((a, l)) => (a, l.parse::<u8>().ok().filter(|n| *n < 64)?),
        None => (s, BARE as u8),
    };
    let ip: std::net::Ipv4Addr = addr.parse().ok()?;
    let code = (i64::from(u32::from(ip)) << 6) | i64::from(len);
    let mut buf = [0u8; 24];
    let n = render_v4_into(code, &mut buf);
    (&buf[..n] == b).then_some(code)
}

impl Stored {
    /// The stored form of a value's text.
    pub fn of(s: &str) -> Stored {
        match v4_code(s) {
            Some(c) => Stored::V4(c),
            None => Stored::Text(s.to_string()),
        }
    }
}

impl ToSql for Stored {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Stored::V4(c) => ToSqlOutput::from(*c),
            Stored::Text(t) => ToSqlOutput::from(t.as_str()),
        })
    }
}

/// Calls `f` with the text of a stored value without allocating for IPv4.
pub fn with_value_text<T>(v: ValueRef<'_>, f: impl FnOnce(&str) -> T) -> T {
    match v {
        ValueRef::Integer(i) => with_v4_text(i, f),
        ValueRef::Text(t) | ValueRef::Blob(t) => f(std::str::from_utf8(t).unwrap_or("")),
        _ => f(""),
    }
}

/// The text of a stored value.
pub fn value_text(v: ValueRef<'_>) -> String {
    with_value_text(v, str::to_string)
}

#[cfg(test)]
/// The stored form of a time given as text: Unix seconds when it is exactly
/// `YYYY-MM-DDTHH:MM:SSZ`, else the text itself.
pub fn time_of(s: &str) -> Value {
    match util::parse_iso(s).filter(|t| *t >= 0 && util::iso(*t) == s) {
        Some(t) => Value::Integer(t),
        None => Value::Text(s.to_string()),
    }
}

/// The text of a stored time.
pub fn time_text(v: ValueRef<'_>) -> String {
    match v {
        ValueRef::Integer(t) => util::iso(t),
        ValueRef::Text(t) | ValueRef::Blob(t) => String::from_utf8_lossy(t).into_owned(),
        ValueRef::Real(r) => r.to_string(),
        ValueRef::Null => String::new(),
    }
}

/// SQL: the text of the stored value `x`.
pub fn sql_value_text(x: &str) -> String {
    format!(
        "CASE WHEN typeof({x}) = 'integer' THEN (({x} >> 30) & 255) || '.' || (({x} >> 22) & 255) \
         || '.' || (({x} >> 14) & 255) || '.' || (({x} >> 6) & 255) || \
         CASE {x} & 63 WHEN 33 THEN '' ELSE '/' || ({x} & 63) END ELSE {x} END"
    )
}

/// SQL: the stored form of the value text `x` (see the module doc).
pub fn sql_value_code(x: &str) -> String {
    let back = sql_value_text("c");
    format!(
        "CASE WHEN typeof({x}) = 'text' THEN (SELECT CASE WHEN c BETWEEN 0 AND 274877906943 \
         AND ({back}) = {x} THEN c ELSE {x} END FROM \
         (SELECT ((((CAST(a AS INTEGER) * 256 + CAST(b AS INTEGER)) * 256 + CAST(cc AS INTEGER)) \
         * 256 + CAST(dd AS INTEGER)) * 64 + n) AS c FROM \
         (SELECT a, b, cc, CASE ps WHEN 0 THEN r3 ELSE substr(r3, 1, ps - 1) END AS dd, \
         CASE ps WHEN 0 THEN 33 ELSE CAST(substr(r3, ps + 1) AS INTEGER) END AS n FROM \
         (SELECT a, b, cc, r3, instr(r3, '/') AS ps FROM \
         (SELECT a, b, substr(r2, 1, instr(r2, '.') - 1) AS cc, substr(r2, instr(r2, '.') + 1) AS r3 FROM \
         (SELECT a, substr(r1, 1, instr(r1, '.') - 1) AS b, substr(r1, instr(r1, '.') + 1) AS r2 FROM \
         (SELECT substr({x}, 1, instr({x}, '.') - 1) AS a, substr({x}, instr({x}, '.') + 1) AS r1)))))))\
         ELSE {x} END"
    )
}

/// SQL: the ISO text of the stored time `x` (Howard Hinnant's days-to-civil, as
/// `util::iso`, in integer arithmetic).
pub fn sql_time_text(x: &str) -> String {
    format!(
        "CASE WHEN typeof({x}) = 'integer' AND {x} >= 0 THEN \
         (SELECT printf('%04d-%02d-%02dT%02d:%02d:%02dZ', y + (m <= 2), m, d, s / 3600, s % 3600 / 60, s % 60) FROM \
         (SELECT yoe + era * 400 AS y, CASE WHEN mp < 10 THEN mp + 3 ELSE mp - 9 END AS m, \
         doy - (153 * mp + 2) / 5 + 1 AS d, s FROM \
         (SELECT era, yoe, doy, (5 * doy + 2) / 153 AS mp, s FROM \
         (SELECT era, yoe, doe - (365 * yoe + yoe / 4 - yoe / 100) AS doy, s FROM \
         (SELECT era, doe, (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365 AS yoe, s FROM \
         (SELECT z / 146097 AS era, z % 146097 AS doe, s FROM \
         (SELECT {x} / 86400 + 719468 AS z, {x} % 86400 AS s)))))))\
         ELSE {x} END"
    )
}

/// SQL: the stored form of the time text `x`.
pub fn sql_time_code(x: &str) -> String {
    let back = sql_time_text("t");
    format!(
        "CASE WHEN typeof({x}) = 'text' AND length({x}) = 20 THEN (SELECT CASE WHEN t >= 0 AND \
         ({back}) = {x} THEN t ELSE {x} END FROM \
         (SELECT ((era * 146097 + doe - 719468) * 86400 + hh * 3600 + mi * 60 + ss) AS t FROM \
         (SELECT y / 400 AS era, (y % 400) * 365 + (y % 400) / 4 - (y % 400) / 100 \
         + (153 * (CASE WHEN m > 2 THEN m - 3 ELSE m + 9 END) + 2) / 5 + d - 1 AS doe, hh, mi, ss FROM \
         (SELECT CAST(substr({x}, 1, 4) AS INTEGER) - (CAST(substr({x}, 6, 2) AS INTEGER) <= 2) AS y, \
         CAST(substr({x}, 6, 2) AS INTEGER) AS m, CAST(substr({x}, 9, 2) AS INTEGER) AS d, \
         CAST(substr({x}, 12, 2) AS INTEGER) AS hh, CAST(substr({x}, 15, 2) AS INTEGER) AS mi, \
         CAST(substr({x}, 18, 2) AS INTEGER) AS ss))))\
         ELSE {x} END"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v4_codes_round_trip_only_canonical_text() {
        for s in [
            "1.2.3.0/24",
            "0.0.0.0/0",
            "255.255.255.255",
            "10.0.0.1/8",
            "9.9.9.9/32",
        ] {
            let c = v4_code(s).unwrap_or_else(|| panic!("{s}"));
            assert_eq!(with_v4_text(c, str::to_string), s);
        }
        for s in [
            "01.2.3.4",
            "1.2.3.4/33",
            "1.2.3.4/024",
            "1.2.3.256",
            "1.2.3",
            "::1",
            "x",
            "",
        ] {
            assert_eq!(v4_code(s), None, "{s}");
        }
        assert!(
            Stored::of("9.0.0.0/8") < Stored::of("10.0.0.0/8"),
            "numeric order"
        );
        assert!(Stored::of("255.0.0.0/8") < Stored::of("::/0"), "IPv4 first");
    }

    #[test]
    fn sql_and_rust_agree() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let values = [
            "1.2.3.0/24",
            "10.0.0.1/8",
            "255.255.255.255",
            "0.0.0.0/0",
            "1.2.3.4/33",
            "01.2.3.4",
            "1.2.3.256",
            "-1.2.3.4",
            "1.2.3.4/64",
            "2001:db8::/32",
            "x",
            "1.2.3",
        ];
        let vsql = format!("SELECT {}", sql_value_code("?1"));
        let tsql = format!("SELECT {}", sql_value_text("?1"));
        for v in values {
            let got: Value = c.query_row(&vsql, [v], |r| r.get(0)).unwrap();
            let want = match Stored::of(v) {
                Stored::V4(i) => Value::Integer(i),
                Stored::Text(t) => Value::Text(t),
            };
            assert_eq!(got, want, "{v}");
            let back: String = c.query_row(&tsql, [&got], |r| r.get(0)).unwrap();
            assert_eq!(back, v);
        }
        let code = format!("SELECT {}", sql_time_code("?1"));
        let text = format!("SELECT {}", sql_time_text("?1"));
        let mut t = 0i64;
        while t < 5_000_000_000 {
            let iso = util::iso(t);
            let got: Value = c.query_row(&code, [&iso], |r| r.get(0)).unwrap();
            assert_eq!(got, time_of(&iso), "{iso}");
            assert_eq!(got, Value::Integer(t));
            let back: String = c.query_row(&text, [t], |r| r.get(0)).unwrap();
            assert_eq!(back, iso);
            t += 7_777_777;
        }
        for odd in [
            "2026-09-01T00:00:00",
            "2026-02-30T00:00:00Z",
            "junk",
            "2026-09-01T00:00:00.5Z",
        ] {
            let got: Value = c.query_row(&code, [odd], |r| r.get(0)).unwrap();
            assert_eq!(got, Value::Text(odd.into()), "{odd}");
            assert_eq!(time_of(odd), got);
        }
    }
}
