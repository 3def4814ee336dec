//! `changes`: the values added to and removed from sources since a time, oldest first.

use super::{push_field, BadInput};
use crate::db::{ChangeRow, Db, StoreError, MAX_ROWS};
use crate::format::TypeFilter;
use crate::source::{self, Kind};
use crate::util;

/// How far back `changes` looks when no `since` is given.
pub const DEFAULT_SINCE_SECS: i64 = 86_400;

/// Checks a `since` time: exactly `YYYY-MM-DDTHH:MM:SSZ` (UTC) and a real date, the
/// form of every stored time, so that comparing the strings compares the times.
pub fn parse_since(s: &str) -> Result<String, BadInput> {
    let ok =
        s.len() == 20 && s.ends_with('Z') && util::parse_iso(s).is_some_and(|t| util::iso(t) == s);
    if ok {
        Ok(s.to_string())
    } else {
        let shown: String = s.chars().take(64).collect();
        Err(BadInput(format!(
            "{shown:?} is not a time of the form YYYY-MM-DDTHH:MM:SSZ (UTC), e.g. 2026-11-30T06:00:00Z"
        )))
    }
}

/// The default `since`: 24 hours before `now`.
pub fn default_since(now: i64) -> String {
    util::iso(now - DEFAULT_SINCE_SECS)
}

fn kind_of(filter: TypeFilter) -> Option<Kind> {
    match filter {
        TypeFilter::All => None,
        TypeFilter::Cidr => Some(Kind::Asn),
        TypeFilter::Fqdn => Some(Kind::Fqdn),
    }
}

/// Rows are written into the answer as they come from the index: the memory is the
/// answer itself, at most [`MAX_ROWS`] rows.
fn each(
    db: &Db,
    since: &str,
    filter: TypeFilter,
    f: impl FnMut(&ChangeRow),
) -> Result<bool, StoreError> {
    db.for_each_change(since, kind_of(filter), MAX_ROWS, f)
}

/// The JSON answer of `GET /changes` and `changes --json`:
/// `{"since":"..","changes":[{"time":..,"change":"added","kind":"asn","source":"62041",
/// "value":"91.108.4.0/22"}]}` and a newline, oldest first; `"truncated":true` after
/// the list when more than [`MAX_ROWS`] rows matched (the oldest are listed: ask again
/// with a later `since`).
pub fn render_json(db: &Db, since: &str, filter: TypeFilter) -> Result<Vec<u8>, StoreError> {
    let mut out = Vec::with_capacity(4096);
    out.push(b'{');
    push_field(&mut out, "since", since);
    out.extend_from_slice(b",\"changes\":[");
    let mut first = true;
    let truncated = each(db, since, filter, |c| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        out.push(b'{');
        push_field(&mut out, "time", &c.time);
        out.push(b',');
        push_field(&mut out, "change", c.change.as_str());
        out.push(b',');
        push_field(&mut out, "kind", c.kind.as_str());
        out.push(b',');
        push_field(&mut out, "source", &c.source);
        out.push(b',');
        push_field(&mut out, "value", &c.value);
        out.push(b'}');
    })?;
    out.push(b']');
    if truncated {
        out.extend_from_slice(b",\"truncated\":true");
    }
    out.extend_from_slice(b"}\n");
    Ok(out)
}

/// The text answer of `changes`: one line per change.
pub fn render_text(db: &Db, since: &str, filter: TypeFilter) -> Result<Vec<u8>, StoreError> {
    let mut out = String::new();
    let truncated = each(db, since, filter, |c| {
        out.push_str(&format!(
            "{} {:<7} {:<20} {}\n",
            c.time,
            c.change.as_str(),
            source::display(c.kind, &c.source),
            c.value
        ));
    })?;
    if out.is_empty() {
        out.push_str(&format!("no changes since {since}\n"));
    }
    if truncated {
        out.push_str(&format!(
            "(more than {MAX_ROWS} changes; the oldest are shown, ask again with a later --since)\n"
        ));
    }
    Ok(out.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_is_strict() {
        assert_eq!(
            parse_since("2026-11-30T06:00:00Z").unwrap(),
            "2026-11-30T06:00:00Z"
        );
        for bad in [
            "",
            "2026-11-30",
            "2026-11-30T06:00:00",
            "2026-11-30T06:00:00+01:00",
            "2026-11-30 06:00:00Z",
            "2026-02-31T00:00:00Z",
            "2026-11-30T24:00:00Z",
            "yesterday",
        ] {
            let e = parse_since(bad).unwrap_err();
            assert!(e.0.contains(&format!("{bad:?}")), "{e}");
        }
        assert_eq!(default_since(86_400), "1970-01-01T00:00:00Z");
    }
}
