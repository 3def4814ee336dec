//! `changes`: the values added to and removed from sources since a time, oldest first.

use super::{push_field, BadInput};
use crate::config::Selection;
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

/// The answer of `GET /changes` and `changes --json` (`json`), or the text of
/// `changes`, written as the rows come from the index: the memory is the answer
/// itself, at most [`MAX_ROWS`] rows.
///
/// JSON: `{"since":"..","changes":[{"time":..,"change":"added","kind":"asn",
/// "source":"62041","value":"91.108.4.0/22"}]}` and a newline, oldest first;
/// `"truncated":true` after the list when more rows matched (the oldest are listed:
/// ask again with a later `since`). Text: one line per change, `time change source
/// value`, tab-separated.
/// `group`: only the changes of that selection's sources (`None`: every source).
pub fn render(
    db: &Db,
    since: &str,
    filter: TypeFilter,
    group: Option<&Selection>,
    json: bool,
) -> Result<Vec<u8>, StoreError> {
    Ok(render_noted(db, since, filter, group, json)?.0)
}

/// [`render`], and in text the notes for a person (no changes, the truncation) apart:
/// the CLI prints them on stderr, so that stdout holds only the tab-separated lines.
pub fn render_noted(
    db: &Db,
    since: &str,
    filter: TypeFilter,
    group: Option<&Selection>,
    json: bool,
) -> Result<(Vec<u8>, Vec<String>), StoreError> {
    let judge = group.map(super::Judge::new);
    let mut out = Vec::with_capacity(4096);
    let mut notes = Vec::new();
    if json {
        out.push(b'{');
        push_field(&mut out, "since", since);
        out.extend_from_slice(b",\"changes\":[");
    }
    let mut n = 0usize;
    // The history is read per kind; a filter whose kinds do not exist yet (feed,
    // country) lists nothing. (Filters of several existing kinds are `all` today.)
    let kind = match filter.kinds() {
        None => Ok(None),
        Some(words) => Kind::ALL
            .into_iter()
            .find(|k| words.contains(&k.as_str()))
            .map(Some)
            .ok_or(()),
    };
    let each = |c: &ChangeRow| {
        n += 1;
        if !json {
            let shown = source::display(c.kind, &c.source);
            for (i, f) in [&c.time, c.change.as_str(), &shown, &c.value]
                .iter()
                .enumerate()
            {
                out.extend_from_slice(if i > 0 { b"\t" } else { b"" });
                out.extend_from_slice(f.as_bytes());
            }
            out.push(b'\n');
            return;
        }
        if n > 1 {
            out.push(b',');
        }
        let fields = [
            ("time", c.time.as_str()),
            ("change", c.change.as_str()),
            ("kind", c.kind.as_str()),
            ("source", &c.source),
            ("value", &c.value),
        ];
        for (i, (k, v)) in fields.iter().enumerate() {
            out.push(if i == 0 { b'{' } else { b',' });
            push_field(&mut out, k, v);
        }
        out.push(b'}');
    };
    let truncated = match kind {
        // The group's sources are chosen in the query, so MAX_ROWS counts theirs only.
        Ok(kind) => match &judge {
            Some(j) => {
                let mut keep = |k: Kind, s: &str| j.names(k, s);
                db.for_each_change(since, kind, MAX_ROWS, Some(&mut keep), each)?
            }
            None => db.for_each_change(since, kind, MAX_ROWS, None, each)?,
        },
        Err(()) => false,
    };
    if json {
        out.push(b']');
        if truncated {
            out.extend_from_slice(b",\"truncated\":true");
        }
        out.extend_from_slice(b"}\n");
    } else {
        if n == 0 {
            notes.push(format!("no changes since {since}"));
        }
        if truncated {
            notes.push(format!(
                "more than {MAX_ROWS} changes; ask again with a later --since"
            ));
        }
    }
    Ok((out, notes))
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
