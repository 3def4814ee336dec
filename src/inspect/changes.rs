//! `changes`: the values added to and removed from sources since a time, oldest first.

use super::{push_field, BadInput};
use crate::config::{Provenance, Selection};
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
/// value`, tab-separated. A source a catalog service brought has `"services":
/// ["telegram"]` (text: a last column `service:telegram`).
/// `group`: only the changes of that selection's sources (`None`: every source).
pub fn render(
    db: &Db,
    since: &str,
    filter: TypeFilter,
    group: Option<&Selection>,
    prov: &Provenance,
    json: bool,
) -> Result<Vec<u8>, StoreError> {
    Ok(render_noted(db, since, filter, group, prov, json)?.0)
}

/// [`render`], and in text the notes for a person (no changes, the truncation) apart:
/// the CLI prints them on stderr, so that stdout holds only the tab-separated lines.
pub fn render_noted(
    db: &Db,
    since: &str,
    filter: TypeFilter,
    group: Option<&Selection>,
    prov: &Provenance,
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
    // One kind is filtered in the query; several (`cidr`: asn, feed, country) choose
    // the sources, as a group does (`cidr` listed the ASNs' changes only).
    let single = match filter.kinds() {
        Some([one]) => Kind::from_word(one),
        _ => None,
    };
    let by_source = judge.is_some() || (single.is_none() && filter.kinds().is_some());
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
            if let Some(t) = prov.text(c.kind, &c.source) {
                out.push(b'\t');
                out.extend_from_slice(t.as_bytes());
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
        prov.push_json(&mut out, c.kind, &c.source);
        out.push(b'}');
    };
    // The sources are chosen in the query, so MAX_ROWS counts theirs only.
    let truncated = if by_source {
        let mut keep = |k: Kind, s: &str| {
            filter.keeps(k.as_str()) && judge.as_ref().is_none_or(|j| j.names(k, s))
        };
        db.for_each_change(since, single, MAX_ROWS, Some(&mut keep), each)?
    } else {
        db.for_each_change(since, single, MAX_ROWS, None, each)?
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

    /// `cidr` is every prefix kind: a feed's and a country's changes are listed beside
    /// the ASNs' (only the ASNs' were), and an FQDN's are not.
    #[test]
    fn cidr_lists_every_prefix_kind() {
        let dir = tempfile::tempdir().unwrap();
        let paths = crate::config::Paths::new(dir.path(), None);
        let mut db = crate::db::open(&paths).unwrap();
        let now = crate::util::unix_now();
        for (kind, source, value) in [
            (Kind::Asn, "64500", "192.0.2.0/24"),
            (Kind::Feed, "http://f.example/x", "198.51.100.0/24"),
            (Kind::Country, "NL", "203.0.113.0/24"),
            (Kind::Fqdn, "a.example", "192.0.2.1"),
        ] {
            db.merge_source(kind, source, &[value.to_string()], now, 7)
                .unwrap();
        }
        let since = crate::util::iso(now - 60);
        let text = render(
            &db,
            &since,
            TypeFilter::Cidr,
            None,
            &Default::default(),
            false,
        )
        .unwrap();
        let sources: Vec<String> = String::from_utf8(text)
            .unwrap()
            .lines()
            .map(|l| l.split('\t').nth(2).unwrap().to_string())
            .collect();
        assert_eq!(sources, ["AS64500", "country NL", "http://f.example/x"]);
        let one = render(
            &db,
            &since,
            TypeFilter::Feed,
            None,
            &Default::default(),
            true,
        )
        .unwrap();
        let one = String::from_utf8(one).unwrap();
        assert!(one.contains("\"kind\":\"feed\""), "{one}");
        assert!(!one.contains("NL"), "{one}");
    }
}
