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

use rusqlite::types::{ToSqlOutput, Value, ValueRef};
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
pub(super) const BARE: i64 = 33;

/// The canonical text of an IPv4 code, written into `buf`; returns its length. By
/// hand: every IPv4 value read as text (a lookup's rows, every value merged, to check
/// that it renders back) passes here, and `write!` took most of the cost.
fn render_v4_into(code: i64, buf: &mut [u8; 24]) -> usize {
    fn decimal(buf: &mut [u8; 24], at: usize, n: u8) -> usize {
        let mut at = at;
        if n >= 100 {
            buf[at] = b'0' + n / 100;
            at += 1;
        }
        if n >= 10 {
            buf[at] = b'0' + n / 10 % 10;
            at += 1;
        }
        buf[at] = b'0' + n % 10;
        at + 1
    }
    let a = ((code >> 6) as u32).to_be_bytes();
    let len = (code & 63) as u8;
    let mut at = 0;
    for (i, octet) in a.into_iter().enumerate() {
        if i > 0 {
            buf[at] = b'.';
            at += 1;
        }
        at = decimal(buf, at, octet);
    }
    if i64::from(len) != BARE {
        buf[at] = b'/';
        at = decimal(buf, at + 1, len);
    }
    at
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
        // Only a hand-edited database holds a REAL time: shown like an integer one
        // (whole seconds), which also keeps core's float printer out of the binary.
        ValueRef::Real(r) => util::iso(r as i64),
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

/// SQL: the stored form of the value text `x` (see the module doc). The octets are
/// read by `CAST` (which stops at the dot) at offsets given by the lengths of those
/// before; the integer is kept only when the octets and length written back
/// canonically give `x` again. Kept short: every connection parses the triggers.
pub fn sql_value_code(x: &str) -> String {
    format!(
        "CASE WHEN typeof({x}) = 'text' THEN (SELECT CASE WHEN max(a, b, c, d) <= 255 \
         AND min(a, b, c, d, n) >= 0 AND n < 64 AND a || '.' || b || '.' || c || '.' || d \
         || CASE n WHEN 33 THEN '' ELSE '/' || n END = {x} \
         THEN (((a * 256 + b) * 256 + c) * 256 + d) * 64 + n ELSE {x} END FROM \
         (SELECT a, b, c, CAST(substr({x}, length(a) + length(b) + length(c) + 4) AS INTEGER) AS d, \
         CASE instr({x}, '/') WHEN 0 THEN 33 ELSE CAST(substr({x}, instr({x}, '/') + 1) AS INTEGER) END AS n FROM \
         (SELECT a, b, CAST(substr({x}, length(a) + length(b) + 3) AS INTEGER) AS c FROM \
         (SELECT a, CAST(substr({x}, length(a) + 2) AS INTEGER) AS b FROM \
         (SELECT CAST({x} AS INTEGER) AS a))))) ELSE {x} END"
    )
}

/// SQL: the ISO text of the stored time `x`. The views and triggers run in the
/// `sqlite3` tool (or any standard SQLite), which has the date functions; the
/// program's own SQLite is built without them and never reads through the views.
pub fn sql_time_text(x: &str) -> String {
    format!(
        "CASE typeof({x}) WHEN 'integer' THEN strftime('%Y-%m-%dT%H:%M:%SZ', {x}, 'unixepoch') \
         ELSE {x} END"
    )
}

/// SQL: the stored form of the time text `x` (as [`time_of`]: kept as seconds only
/// when they render back to `x`, so `2026-02-30...` stays text).
pub fn sql_time_code(x: &str) -> String {
    format!(
        "CASE WHEN typeof({x}) = 'text' AND {x} >= '1970' AND strftime('%Y-%m-%dT%H:%M:%SZ', \
         CAST(strftime('%s', {x}) AS INTEGER), 'unixepoch') IS {x} \
         THEN CAST(strftime('%s', {x}) AS INTEGER) ELSE {x} END"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_time_reads_as_its_whole_second() {
        assert_eq!(time_text(ValueRef::Real(86_400.75)), "1970-01-02T00:00:00Z");
        assert_eq!(time_text(ValueRef::Integer(86_400)), "1970-01-02T00:00:00Z");
    }

    #[test]
    fn v4_text_is_the_dotted_quad_of_any_code() {
        let reference = |code: i64| {
            let a = code >> 6;
            let len = code & 63;
            let quad = format!(
                "{}.{}.{}.{}",
                (a >> 24) & 255,
                (a >> 16) & 255,
                (a >> 8) & 255,
                a & 255
            );
            match len {
                BARE => quad,
                _ => format!("{quad}/{len}"),
            }
        };
        let mut code = i64::MIN;
        for _ in 0..20_000 {
            assert_eq!(
                with_v4_text(code, str::to_string),
                reference(code),
                "{code}"
            );
            code = code.wrapping_add(0x0003_7a5b_9c3d_e1f7);
        }
        for code in [
            0,
            33,
            32,
            63,
            (0xffff_ffff << 6) | 33,
            (0xffff_ffff << 6) | 8,
            -1,
        ] {
            assert_eq!(
                with_v4_text(code, str::to_string),
                reference(code),
                "{code}"
            );
        }
    }

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
        for odd in ["2026-09-01T00:00:00", "2026-02-30T00:00:00Z", "junk"] {
            assert_eq!(time_of(odd), Value::Text(odd.into()), "{odd}");
        }
        let t = 1_790_000_000;
        assert_eq!(time_of(&util::iso(t)), Value::Integer(t));
    }
}
