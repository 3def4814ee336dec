//! The detailed listing (`GET /addresses?format=json&details=1`, `export --format json
//! --details`): each value once, with the sources that hold it, its earliest
//! `first_seen` and latest `last_seen`, in the order of the plain listing.

use super::{push_field, BadInput};
use crate::config::{Provenance, Selection};
use crate::db::{Db, StoreError};
use crate::format::{Family, Format, RenderOptions};

/// Checks that `opts` can be detailed: JSON only, not aggregated (an aggregate has no
/// sources of its own). `what` names the option as the caller spells it.
pub fn check(opts: &RenderOptions, what: &str) -> Result<(), BadInput> {
    if opts.format != Format::Json {
        return Err(BadInput(format!(
            "{what} goes only with format json, not {}",
            opts.format
        )));
    }
    if opts.aggregate {
        return Err(BadInput(format!(
            "{what} does not go with aggregate: aggregated prefixes have no sources of their own"
        )));
    }
    Ok(())
}

/// One stored row, compactly: sources and times are kept once in a table of strings
/// and referred to by number (rows come grouped by source, and most rows of a source
/// share their times), so that 100,000 rows cost a few megabytes.
struct Compact {
    source: u32,
    first: u32,
    last: u32,
    /// An exclusion of the group hides part of the value.
    partly: bool,
}

/// Strings kept once: a new string is compared with the few added last.
#[derive(Default)]
struct Strings(Vec<String>);

impl Strings {
    fn id(&mut self, s: String) -> u32 {
        let n = self.0.len();
        if let Some(i) = (n.saturating_sub(8)..n).rev().find(|i| self.0[*i] == s) {
            return i as u32;
        }
        self.0.push(s);
        n as u32
    }
    fn get(&self, i: u32) -> &str {
        &self.0[i as usize]
    }
}

/// Values kept end to end in one string: 100,000 of them cost about 2 MB instead of
/// the 5 to 6 MB of as many `String`s.
#[derive(Default)]
struct Values {
    text: String,
    /// Where each value ends in `text`.
    ends: Vec<u32>,
}

impl Values {
    fn push(&mut self, v: &str) {
        self.text.push_str(v);
        self.ends.push(self.text.len() as u32);
    }
    fn get(&self, i: usize) -> &str {
        let start = match i {
            0 => 0,
            _ => self.ends[i - 1] as usize,
        };
        &self.text[start..self.ends[i] as usize]
    }
    fn len(&self) -> usize {
        self.ends.len()
    }
    fn iter(&self) -> impl Iterator<Item = &str> {
        (0..self.len()).map(|i| self.get(i))
    }
}

/// Renders the detailed listing of the values of `selection` that `opts` keeps (type
/// and family; the caller has [`check`]ed the rest):
/// `{"type":"all","count":N,"addresses":[{"value":"..","sources":[{"kind":"asn",
/// "source":"62041"}],"first_seen":"..","last_seen":".."}]}` and a newline (a source a
/// catalog service brought has `"services":["telegram"]` too). Values are
/// stored rows, whole: one wholly excluded is left out, one partly excluded has
/// `"excluded":true` (the plain listing has the pieces that remain). With `limit`, at
/// most that many values, and `"truncated":true` after the list when there were more
/// (the API's bound; `export --details` has none).
pub fn render(
    db: &Db,
    selection: &Selection,
    opts: &RenderOptions,
    limit: Option<usize>,
    prov: &Provenance,
) -> Result<Vec<u8>, StoreError> {
    let judge = super::Judge::new(selection);
    let mut strings = Strings::default();
    let mut rows: Vec<Compact> = Vec::new();
    let mut values = Values::default();
    db.for_each_row(opts.type_filter, |r| {
        let v6 = r.value.contains(':');
        let wanted = match opts.family {
            Some(Family::V4) => !v6,
            Some(Family::V6) => v6,
            None => true,
        };
        let listed = if wanted {
            judge.judge(r.kind, &r.source, &r.value)
        } else {
            None
        };
        if let Some(partly) = listed {
            // Kind and source together: "asn 62041".
            let source = strings.id(format!("{} {}", r.kind.as_str(), r.source));
            rows.push(Compact {
                source,
                first: strings.id(r.first_seen),
                last: strings.id(r.last_seen),
                partly,
            });
            values.push(&r.value);
        }
    })?;
    // Rows came in kind and source order, which the shared sort keeps among equal values.
    let order = super::order(values.iter());
    let mut out = Vec::with_capacity(64 + values.len() * 120);
    let mut count = 0;
    let mut truncated = false;
    let mut i = 0;
    while i < order.len() {
        let first_row = order[i] as usize;
        let value = values.get(first_row);
        let mut end = i + 1;
        while end < order.len() && values.get(order[end] as usize) == value {
            end += 1;
        }
        let group = &order[i..end];
        i = end;
        // Invalid strings are left out, as in every listing.
        if crate::format::parse_value(value).is_none() {
            continue;
        }
        if limit == Some(count) {
            truncated = true;
            break;
        }
        if count > 0 {
            out.push(b',');
        }
        count += 1;
        write_value(&mut out, value, group, &rows, &strings, prov);
    }
    let head = format!(
        "{{\"type\":\"{}\",\"count\":{count},\"addresses\":[",
        opts.type_filter.as_str()
    );
    out.splice(0..0, head.bytes());
    out.push(b']');
    if truncated {
        out.extend_from_slice(b",\"truncated\":true");
    }
    out.extend_from_slice(b"}\n");
    Ok(out)
}

/// One value's object of the detailed listing: the value, its sources (`group`: its
/// rows), the earliest first and the latest last seen, and whether an exclusion
/// hides part of it.
fn write_value(
    out: &mut Vec<u8>,
    value: &str,
    group: &[u32],
    rows: &[Compact],
    strings: &Strings,
    prov: &Provenance,
) {
    out.push(b'{');
    push_field(out, "value", value);
    out.extend_from_slice(b",\"sources\":[");
    let mut first_seen = "";
    let mut last_seen = "";
    let mut partly = false;
    for (j, &r) in group.iter().enumerate() {
        let c = &rows[r as usize];
        partly |= c.partly;
        let (kind, source) = strings.get(c.source).split_once(' ').unwrap_or_default();
        if j > 0 {
            out.push(b',');
        }
        out.push(b'{');
        push_field(out, "kind", kind);
        out.push(b',');
        push_field(out, "source", source);
        if let Some(k) = crate::source::Kind::from_word(kind) {
            prov.push_json(out, k, source);
        }
        out.push(b'}');
        let (f, l) = (strings.get(c.first), strings.get(c.last));
        if j == 0 || f < first_seen {
            first_seen = f;
        }
        if l > last_seen {
            last_seen = l;
        }
    }
    out.extend_from_slice(b"],");
    push_field(out, "first_seen", first_seen);
    out.push(b',');
    push_field(out, "last_seen", last_seen);
    if partly {
        out.extend_from_slice(b",\"excluded\":true");
    }
    out.push(b'}');
}
