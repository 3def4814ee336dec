//! `lookup`: every stored row whose value contains an address, or overlaps a prefix.
//!
//! Stored values are canonical (`91.108.4.0/22`, `2001:b28:f23d::/48`, bare
//! `93.184.216.34`), indexed by value (the store's `entries_value`). The search never
//! parses every row:
//!
//! * **Values containing the query** (its supernets and itself) are the at most 33
//!   (IPv4) or 129 (IPv6) prefixes `addr/len` with host bits cleared, `len` from 0 to
//!   the query's length, plus the bare address for a single address: one `IN` of
//!   exact strings, one index probe each.
//! * **Values inside a prefix query** are found by ranges of the index: one integer
//!   range for IPv4, text ranges for IPv6 (`db::Db::for_each_row_within` says how).
//!   The rows of a range are checked numerically, so a coarse range costs time, never
//!   a wrong answer.
//!
//! Cost: O(candidates × log n) probes plus the rows in the ranges. With 100,000 stored
//! values an address lookup is a few dozen index probes (`benches/lookup.rs`).

use ipnet::IpNet;

use super::{push_field, BadInput};
use crate::config::Config;
use crate::db::{Db, Row, StoreError, MAX_ROWS};
use crate::format::parse_value;
use crate::source;

/// A parsed lookup: an address or a prefix (host bits cleared).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Query {
    /// The network; an address is its host route.
    pub net: IpNet,
    /// Given as a bare address.
    pub bare: bool,
}

impl Query {
    /// Parses `149.154.167.99`, `91.108.4.0/22`, `2001:db8::1` or `2001:db8::/32`.
    pub fn parse(s: &str) -> Result<Query, BadInput> {
        // The parser of stored values: the same forms, host bits cleared.
        let e = parse_value(s).ok_or_else(|| {
            let shown: String = s.chars().take(64).collect();
            BadInput(format!(
                "{shown:?} is not an IP address or prefix (expected e.g. 149.154.167.99, \
                 91.108.4.0/22 or 2001:db8::/32)"
            ))
        })?;
        Ok(Query {
            net: e.net,
            bare: e.bare,
        })
    }

    /// The canonical text of the query, as the answer shows it.
    pub fn text(&self) -> String {
        if self.bare {
            self.net.addr().to_string()
        } else {
            self.net.to_string()
        }
    }

    /// The stored strings that contain the query: every covering prefix, and the bare
    /// address when the query is a single address.
    pub fn covering(&self) -> Vec<String> {
        let addr = self.net.addr();
        let mut out: Vec<String> = (0..=self.net.prefix_len())
            .filter_map(|len| IpNet::new(addr, len).ok())
            .map(|n| n.trunc().to_string())
            .collect();
        if self.net.prefix_len() == self.net.max_prefix_len() {
            out.push(addr.to_string());
        }
        out
    }
}

/// What a lookup found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// The matching rows in listing order (IPv4 first, numeric), then kind and source.
    pub rows: Vec<Row>,
    /// More than [`MAX_ROWS`] rows matched; the rest were left out.
    pub truncated: bool,
    /// The upstream that last answered for each matching source (of the first
    /// [`MAX_UPSTREAMS`]), sorted by kind and source.
    pub upstreams: Vec<((crate::source::Kind, String), String)>,
}

/// Most sources whose last upstream a lookup names (one query each).
pub const MAX_UPSTREAMS: usize = 100;

impl Found {
    fn upstream(&self, kind: crate::source::Kind, source: &str) -> Option<&str> {
        let i = self
            .upstreams
            .binary_search_by(|((k, s), _)| (k.as_str(), s.as_str()).cmp(&(kind.as_str(), source)))
            .ok()?;
        Some(&self.upstreams[i].1)
    }
}

/// Finds the stored rows that contain or overlap `q`.
pub fn find(db: &Db, q: &Query) -> Result<Found, StoreError> {
    let mut rows = Vec::new();
    // Same-value rows come in (kind, source) order from each query, and a value comes
    // from one query only, so that the index in `rows` breaks ties of the sort below.
    db.for_each_row_with_value(&q.covering(), |r| rows.push(r))?;
    let mut truncated = rows.len() > MAX_ROWS;
    if !truncated {
        // Strictly inside: what contains the query came from the probe already.
        let inside = |v: &str| {
            parse_value(v)
                .is_some_and(|e| e.net.prefix_len() > q.net.prefix_len() && q.net.contains(&e.net))
        };
        db.for_each_row_within(&q.net, inside, |r| {
            if rows.len() == MAX_ROWS {
                truncated = true;
                return false;
            }
            rows.push(r);
            true
        })?;
    }
    rows.truncate(MAX_ROWS);
    let mut upstreams: Vec<((crate::source::Kind, String), String)> = Vec::new();
    let mut sources: Vec<(&str, &str, crate::source::Kind)> = rows
        .iter()
        .map(|r| (r.kind.as_str(), r.source.as_str(), r.kind))
        .collect();
    crate::util::sort::sort(&mut sources);
    sources.dedup();
    for (_, s, k) in sources.into_iter().take(MAX_UPSTREAMS) {
        if let Some(u) = db.last_upstream(k, s)? {
            upstreams.push(((k, s.to_string()), u));
        }
    }
    let order = super::order(rows.iter().map(|r| r.value.as_str()));
    let mut slots: Vec<Option<Row>> = rows.into_iter().map(Some).collect();
    Ok(Found {
        rows: order
            .into_iter()
            .filter_map(|i| slots[i as usize].take())
            .collect(),
        truncated,
        upstreams,
    })
}

/// Which groups' exclusions cover the queried address or prefix.
struct Hidden(Vec<String>);

impl Hidden {
    fn new(cfg: &Config, q: &Query) -> Hidden {
        let names = cfg
            .groups
            .iter()
            .filter(|g| crate::format::Exclusions::new(&cfg.exclusions(&g.name)).covers(&q.net))
            .map(|g| g.name.clone())
            .collect();
        Hidden(names)
    }

    /// Whether every group that lists the source (`default` for a source no group
    /// names any more) cuts the query out: the match is stored, but not listed.
    fn hides(&self, cfg: &Config, kind: crate::source::Kind, source: &str) -> bool {
        if self.0.is_empty() {
            return false;
        }
        let groups = cfg.groups_of(kind, source);
        let groups = if groups.is_empty() {
            vec![crate::format::DEFAULT_GROUP]
        } else {
            groups
        };
        groups.iter().all(|g| self.0.iter().any(|h| h == g))
    }
}

/// The answer of `GET /lookup` and `lookup --json` (`json`), or the text of `lookup`.
///
/// JSON: `{"query":"..","matches":[{"value":..,"kind":..,"source":..,"first_seen":..,
/// "last_seen":..,"configured":true[,"upstream":"ripestat"]}]}` (the upstream that
/// last answered for the source) and a newline; `"truncated":true` after the
/// matches when [`MAX_ROWS`] were not enough. `configured` says whether the source is
/// in `cfg`; `"services":["telegram"]` (text: a last column `service:telegram`) names
/// the catalog services that brought it; `"excluded":true` (text: a last column `excluded`) marks a match whose
/// groups' exclusions cut the queried address out of their lists. Text: one line per
/// match, `value source first_seen last_seen` and `configured` or `not configured`,
/// tab-separated.
pub fn render(q: &Query, found: &Found, cfg: &Config, json: bool) -> Vec<u8> {
    render_noted(q, found, cfg, json).0
}

/// [`render`], and in text the notes for a person ("not stored", the truncation)
/// apart: the CLI prints them on stderr, so that stdout holds only the tab-separated
/// lines scripts parse.
pub fn render_noted(q: &Query, found: &Found, cfg: &Config, json: bool) -> (Vec<u8>, Vec<String>) {
    let mut notes = Vec::new();
    let mut out = Vec::with_capacity(64 + found.rows.len() * 160);
    if json {
        out.push(b'{');
        push_field(&mut out, "query", &q.text());
        out.extend_from_slice(b",\"matches\":[");
    }
    let hidden = Hidden::new(cfg, q);
    let prov = cfg.provenance();
    for (i, r) in found.rows.iter().enumerate() {
        let configured = cfg.sources(r.kind).contains(&r.source);
        let excluded = hidden.hides(cfg, r.kind, &r.source);
        if !json {
            let shown = source::display(r.kind, &r.source);
            let tail = if configured {
                "configured"
            } else {
                "not configured"
            };
            for (j, f) in [&r.value, &shown, &r.first_seen, &r.last_seen, tail]
                .iter()
                .enumerate()
            {
                out.extend_from_slice(if j > 0 { b"\t" } else { b"" });
                out.extend_from_slice(f.as_bytes());
            }
            if excluded {
                out.extend_from_slice(b"\texcluded");
            }
            if let Some(t) = prov.text(r.kind, &r.source) {
                out.push(b'\t');
                out.extend_from_slice(t.as_bytes());
            }
            out.push(b'\n');
            continue;
        }
        if i > 0 {
            out.push(b',');
        }
        let fields = [
            ("value", r.value.as_str()),
            ("kind", r.kind.as_str()),
            ("source", &r.source),
            ("first_seen", &r.first_seen),
            ("last_seen", &r.last_seen),
        ];
        for (j, (k, v)) in fields.iter().enumerate() {
            out.push(if j == 0 { b'{' } else { b',' });
            push_field(&mut out, k, v);
        }
        out.extend_from_slice(if configured {
            b",\"configured\":true"
        } else {
            b",\"configured\":false"
        });
        if let Some(u) = found.upstream(r.kind, &r.source) {
            out.push(b',');
            push_field(&mut out, "upstream", u);
        }
        prov.push_json(&mut out, r.kind, &r.source);
        out.extend_from_slice(if excluded {
            &b",\"excluded\":true}"[..]
        } else {
            b"}"
        });
    }
    if json {
        out.push(b']');
        if found.truncated {
            out.extend_from_slice(b",\"truncated\":true");
        }
        out.extend_from_slice(b"}\n");
    } else {
        if found.rows.is_empty() {
            notes.push(format!("{}: not stored", q.text()));
        }
        // For a person, on stderr: the tab-separated lines keep their columns.
        for ((k, s), u) in &found.upstreams {
            notes.push(format!("{}: last answered by {u}", source::display(*k, s)));
        }
        if found.truncated {
            notes.push(format!("more than {MAX_ROWS} matches; the rest left out"));
        }
    }
    (out, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Query {
        Query::parse(s).unwrap()
    }

    #[test]
    fn parses_and_shows_canonical_text() {
        assert_eq!(q(" 149.154.167.99 ").text(), "149.154.167.99");
        assert_eq!(q("10.0.0.1/8").text(), "10.0.0.0/8");
        assert_eq!(q("2001:DB8::1").text(), "2001:db8::1");
        for bad in ["", "1.2.3", "1.2.3.4/33", "example.com", "::g", "1.2.3.4/"] {
            let e = Query::parse(bad).unwrap_err();
            assert!(e.0.contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn covering_prefixes() {
        let c = q("149.154.167.99").covering();
        assert_eq!(c.len(), 34);
        assert_eq!(c[0], "0.0.0.0/0");
        assert!(c.contains(&"149.154.160.0/20".to_string()));
        assert_eq!(c[33], "149.154.167.99");
        assert_eq!(q("2001:db8::1").covering().len(), 130);
        assert_eq!(q("10.0.0.0/8").covering().last().unwrap(), "10.0.0.0/8");
    }
}
