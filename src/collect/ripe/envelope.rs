//! The envelope of a RIPEstat answer (`data_call_name`, `data_call_status`,
//! `version`, `time`) and the age of its data, checked before its values count.
//!
//! A failure text ends up in `status.json`, the API, the web page and LuCI, so it
//! says what was wrong, never what the answer held: a value is named only when it
//! has a strict shape that cannot carry markup (a plain version number, an ISO
//! time) or is one of the words this program knows; anything else is described.

use super::Head;
use crate::collect::fetch::SourceError;
use crate::util::{iso, parse_iso};

/// The data calls read, with the newest major `version` whose shape this program
/// knows: a newer major may have moved what is read, so it fails instead of being
/// misread.
const CALLS: [(&str, u32); 3] = [
    ("announced-prefixes", 1),
    ("country-resource-list", 0),
    ("routing-status", 3),
];

/// The `data_call_status` words other than `supported` that RIPEstat documents,
/// named in failure texts when a status starts with one.
const NOT_SUPPORTED: [&str; 3] = ["deprecated", "development", "maintenance"];

/// Checks the envelope of a successful answer of data call `call`: its status says
/// supported, its major version is known, and its data is at most `max_age_hours`
/// older than the answer. A field the answer lacks is not checked.
pub(super) fn check(head: &Head, call: &str, max_age_hours: u32) -> Result<(), SourceError> {
    let bad = |m: String| Err(SourceError::BadBody(m));
    if let Some(name) = head.call.as_deref().filter(|n| *n != call) {
        return bad(match CALLS.iter().find(|c| c.0 == name) {
            Some((known, _)) => format!("the answer is of data call {known}, not {call}"),
            None => format!("the answer is of another data call than {call}"),
        });
    }
    if let Some(st) = head
        .call_status
        .as_deref()
        .filter(|s| !s.starts_with("supported"))
    {
        let word = st.split(|c: char| !c.is_ascii_alphabetic()).next();
        return bad(match NOT_SUPPORTED.iter().find(|w| Some(**w) == word) {
            Some(w) => format!("RIPEstat says data call {call} is {w}, not supported"),
            None => format!(
                "RIPEstat says data call {call} is not supported (an unknown data_call_status)"
            ),
        });
    }
    let known = CALLS.iter().find(|c| c.0 == call).map_or(0, |c| c.1);
    if let Some(v) = &head.version {
        let major = v.split('.').next().and_then(|m| m.parse::<u32>().ok());
        if major.is_none_or(|m| m > known) {
            let what = match plain_version(v) {
                true => format!("version {v:?}"),
                false => "an unknown major version".into(),
            };
            return bad(format!(
                "data call {call} answered {what}; this program reads version {known}.x"
            ));
        }
    }
    check_age(head, max_age_hours)
}

/// Freshness: the data's time (`latest_time`, else `query_time`) at most
/// `max_age_hours` before the answer's (`time`, else `query_time`: an answer trimmed
/// of its envelope still says when it was asked). Nothing to compare (no data time,
/// or `query_time` alone, which would be compared with itself): not checked.
fn check_age(head: &Head, max_age_hours: u32) -> Result<(), SourceError> {
    let (d, what, t) = match (&head.time, &head.latest_time, &head.query_time) {
        (Some(t), Some(d), _) | (Some(t), None, Some(d)) => (d, "time", t),
        (None, Some(d), Some(q)) => (d, "query_time", q),
        _ => return Ok(()),
    };
    let bad = |m: String| Err(SourceError::BadBody(m));
    let (Some(at), Some(data)) = (parse_iso(t), parse_iso(d)) else {
        return bad(match parse_iso(t) {
            None => format!("the answer's {what} is not an ISO 8601 time"),
            Some(_) => "the data's time (data.latest_time, else data.query_time) is not \
                        an ISO 8601 time"
                .into(),
        });
    };
    let age = (at - data) / 3600;
    if age > i64::from(max_age_hours) {
        let (d, t) = (shown_time(d, data), shown_time(t, at));
        return bad(format!(
            "stale data: of {d}, {age} hours before the answer's {what} {t} (trust.max_age_hours {max_age_hours})"
        ));
    }
    Ok(())
}

/// Whether `v` is a plain version number (`2`, `2.1`, `1.10.3`: up to three parts of
/// one to three digits), which a failure text may quote.
fn plain_version(v: &str) -> bool {
    let mut parts = 0;
    v.split('.').all(|p| {
        parts += 1;
        (1..=3).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit())
    }) && parts <= 3
}

/// A time of the answer as a failure text shows it: as written when it is a plain
/// ISO 8601 time, else as this program writes the instant `at` it was read as
/// (`parse_iso` reads the first 19 characters and ignores what follows them).
fn shown_time(t: &str, at: i64) -> String {
    match plain_time(t) {
        true => t.to_string(),
        false => iso(at),
    }
}

/// Whether `t` is `YYYY-MM-DDTHH:MM:SS`, with at most nine digits of a fraction and
/// `Z` or an offset `+HH:MM` after it, or neither.
fn plain_time(t: &str) -> bool {
    let b = t.as_bytes();
    let shape = b"dddd-dd-ddTdd:dd:dd";
    let fits = |s: &[u8], pattern: &[u8]| {
        s.len() == pattern.len()
            && s.iter().zip(pattern).all(|(c, p)| {
                if *p == b'd' {
                    c.is_ascii_digit()
                } else {
                    c == p
                }
            })
    };
    if b.len() < shape.len() || !fits(&b[..shape.len()], shape) {
        return false;
    }
    let mut rest = &b[shape.len()..];
    if let Some(fraction) = rest.strip_prefix(b".") {
        let n = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
        if !(1..=9).contains(&n) {
            return false;
        }
        rest = &fraction[n..];
    }
    rest.is_empty() || rest == b"Z" || fits(rest, b"+dd:dd") || fits(rest, b"-dd:dd")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_strict_shapes_are_quotable() {
        for v in ["2", "2.1", "1.10.3", "010"] {
            assert!(plain_version(v), "{v}");
        }
        for v in [
            "",
            "2.",
            ".1",
            "1.2.3.4",
            "1234",
            "2.0-beta",
            "<img src=x>",
            "(too long)",
        ] {
            assert!(!plain_version(v), "{v}");
        }
        for t in [
            "2026-11-27T08:00:00",
            "2026-11-27T19:20:20.32",
            "2026-11-27T08:00:00Z",
            "2026-11-27T08:00:00.123456+02:00",
        ] {
            assert!(plain_time(t), "{t}");
        }
        for t in [
            "2026-11-27T08:00:00<img src=x onerror=alert(1)>",
            "2026-11-27 08:00:00",
            "2026-11-27T08:00:00.",
            "2026-11-27T08:00:00.1234567890",
            "2026-11-27T08:00:00+0200",
            "2026-11-27",
        ] {
            assert!(!plain_time(t), "{t}");
        }
        let at = parse_iso("2026-11-27T08:00:00<b>").unwrap();
        assert_eq!(
            shown_time("2026-11-27T08:00:00<b>", at),
            "2026-11-27T08:00:00Z"
        );
    }
}
