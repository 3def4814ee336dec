//! The detailed listing (`GET /addresses?format=json&details=1`, `export --format json
//! --details`): each value once, with the sources that hold it, its earliest
//! `first_seen` and latest `last_seen`, in the order of the plain listing.

use std::collections::HashMap;

use ipnet::IpNet;

use super::{push_field, push_json, BadInput};
use crate::db::{Db, StoreError};
use crate::format::{parse_value, Entry, Family, Format, RenderOptions};

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

/// One stored row, compactly: the strings it shares with other rows (sources, times)
/// are kept once in a table and referred to by number, so that 100,000 rows cost a few
/// megabytes.
struct Compact {
    entry: Entry<IpNet>,
    source: u32,
    first: u32,
    last: u32,
}

#[derive(Default)]
struct Strings {
    list: Vec<String>,
    index: HashMap<String, u32>,
}

impl Strings {
    fn id(&mut self, s: String) -> u32 {
        if let Some(i) = self.index.get(&s) {
            return *i;
        }
        let i = self.list.len() as u32;
        self.list.push(s.clone());
        self.index.insert(s, i);
        i
    }
    fn get(&self, i: u32) -> &str {
        &self.list[i as usize]
    }
}

/// Renders the detailed listing of the values selected by `opts` (type and family; the
/// caller has [`check`]ed the rest):
/// `{"type":"all","count":N,"addresses":[{"value":"..","sources":[{"kind":"asn",
/// "source":"62041"}],"first_seen":"..","last_seen":".."}]}` and a newline.
pub fn render(db: &Db, opts: &RenderOptions) -> Result<Vec<u8>, StoreError> {
    let mut strings = Strings::default();
    let mut rows: Vec<Compact> = Vec::new();
    db.for_each_row(opts.type_filter, |r| {
        // Invalid strings are left out, as in every listing.
        let Some(entry) = parse_value(&r.value) else {
            return;
        };
        let wanted = !matches!(
            (opts.family, entry.net),
            (Some(Family::V4), IpNet::V6(_)) | (Some(Family::V6), IpNet::V4(_))
        );
        if wanted {
            // Kind and source together: "asn 62041".
            let source = strings.id(format!("{} {}", r.kind.as_str(), r.source));
            rows.push(Compact {
                entry,
                source,
                first: strings.id(r.first_seen),
                last: strings.id(r.last_seen),
            });
        }
    })?;
    // IPv4 before IPv6, numeric, as the plain listing; sources by kind then name.
    rows.sort_unstable_by(|a, b| {
        (a.entry, strings.get(a.source)).cmp(&(b.entry, strings.get(b.source)))
    });
    let groups: Vec<&[Compact]> = rows.chunk_by(|a, b| a.entry == b.entry).collect();
    let mut out = Vec::with_capacity(64 + groups.len() * 120);
    out.extend_from_slice(
        format!(
            "{{\"type\":\"{}\",\"count\":{},\"addresses\":[",
            opts.type_filter.as_str(),
            groups.len()
        )
        .as_bytes(),
    );
    for (i, group) in groups.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"value\":");
        push_json(&mut out, &group[0].entry.to_string());
        out.extend_from_slice(b",\"sources\":[");
        for (j, c) in group.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            let (kind, source) = strings.get(c.source).split_once(' ').unwrap_or_default();
            out.push(b'{');
            push_field(&mut out, "kind", kind);
            out.push(b',');
            push_field(&mut out, "source", source);
            out.push(b'}');
        }
        let first = group.iter().map(|c| strings.get(c.first)).min();
        let last = group.iter().map(|c| strings.get(c.last)).max();
        out.extend_from_slice(b"],");
        push_field(&mut out, "first_seen", first.unwrap_or_default());
        out.push(b',');
        push_field(&mut out, "last_seen", last.unwrap_or_default());
        out.push(b'}');
    }
    out.extend_from_slice(b"]}\n");
    Ok(out)
}
