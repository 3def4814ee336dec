//! Looking into the store: which rows hold an address (`lookup`), what was added and
//! removed since a time (`changes`) and each value with its sources and times (the
//! detailed listing). One implementation each behind the CLI command and the API
//! route, so that `--json` prints the bytes the API sends.

use crate::config::{Selection, SourceMatch};
use crate::format::Exclusions;
use crate::source::Kind;

pub mod changes;
pub mod details;
pub mod lookup;

/// Which stored rows a selection (a group, or `*`) lists, and whether its exclusions
/// hide part of their value. Rows are judged one by one as the database streams them.
pub(crate) struct Judge {
    parts: Vec<JudgedPart>,
}

/// One part of a selection: its sources and its exclusions.
type JudgedPart = (SourceMatch, Exclusions);

impl Judge {
    /// The judge of `selection`.
    pub(crate) fn new(selection: &Selection) -> Judge {
        let parts = selection
            .parts
            .iter()
            .map(|p| (p.sources.matcher(), Exclusions::new(&p.exclude)))
            .collect();
        Judge { parts }
    }

    /// Whether the selection lists values of this source at all.
    pub(crate) fn names(&self, kind: Kind, source: &str) -> bool {
        self.parts.iter().any(|(m, _)| m.names(kind, source))
    }

    /// `None` when the row is not listed (another group's source, or its value wholly
    /// excluded), else whether an exclusion hides part of it.
    pub(crate) fn judge(&self, kind: Kind, source: &str, value: &str) -> Option<bool> {
        let net = crate::format::parse_value(value)?.net;
        let mut listed = None;
        for (m, excl) in &self.parts {
            if m.names(kind, source) && !excl.covers(&net) {
                let partly = excl.hides(&net);
                listed = Some(listed.unwrap_or(true) && partly);
            }
        }
        listed
    }
}

/// Whether this build has the `inspect` feature. The entry points check it first, so
/// that without it the optimiser drops everything behind them (no `cfg` on each item).
pub const ENABLED: bool = cfg!(feature = "inspect");

/// What the entry points say when [`ENABLED`] is false.
pub fn missing(what: &str) -> String {
    format!("{what} is not available: this binary was built without the `inspect` feature")
}

/// Input a caller got wrong; the message names the value (the API answers 400, the
/// CLI exits 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// The order of the plain listing (IPv4 first, numeric, bare after prefix) for
/// `values`: their indexes, sorted; equal values keep their given order (the callers
/// hand them in kind and source order). Unparsable values go first. One sort
/// instantiation shared by `lookup` and the detailed listing (flash is tight).
fn order<'a>(values: impl Iterator<Item = &'a str>) -> Vec<u32> {
    let mut keyed: Vec<(Option<crate::format::Entry<ipnet::IpNet>>, u32)> = values
        .enumerate()
        .map(|(i, v)| (crate::format::parse_value(v), i as u32))
        .collect();
    crate::util::sort::sort(&mut keyed);
    // A new vector: collecting `keyed.into_iter()` would reuse (and keep) its
    // allocation, seven times the size of the indexes.
    let mut order = Vec::with_capacity(keyed.len());
    order.extend(keyed.iter().map(|&(_, i)| i));
    order
}

/// Appends `s` as a JSON string.
pub(crate) fn push_json(out: &mut Vec<u8>, s: &str) {
    crate::util::json::push_string(out, s);
}

/// Appends `"key":` and `s` as a JSON string.
pub(crate) fn push_field(out: &mut Vec<u8>, key: &str, s: &str) {
    out.push(b'"');
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
    push_json(out, s);
}
