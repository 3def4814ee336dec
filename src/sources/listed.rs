//! The configured sources and groups as JSON: the bodies of `GET /asns` (and the other
//! kinds) and `GET /groups`, which `list --json` prints byte for byte.

use crate::util::map::SortedMap;

use crate::config::Config;
use crate::format::{ALL_GROUPS, DEFAULT_GROUP};
use crate::source::Kind;
use crate::util::json::{self, ToJson, Writer};

/// A list of configured sources: `{"asns": [...]}` (the kind's config key), with
/// `"groups"` (source -> its groups) when there are groups besides `default`.
struct Listed<'a> {
    kind: Kind,
    sources: &'a [String],
    groups: Option<SortedMap<&'a str, Vec<&'a str>>>,
    names: SortedMap<&'a str, &'a str>,
}

impl ToJson for Listed<'_> {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.begin_object();
        w.field(self.kind.key(), self.sources);
        if let Some(g) = &self.groups {
            w.field("groups", g);
        }
        if !self.names.is_empty() {
            w.field("names", &self.names);
        }
        w.end_object();
    }
}

/// `value` as JSON with a trailing newline (so that `curl` output ends its line).
fn line<T: ToJson + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = json::to_vec(value);
    out.push(b'\n');
    out
}

/// The sources of one kind of `group` (`default` for `None`, as `list` and `export`;
/// every group's for `*`), with `"names"` (ASN -> holder) for those of `names`
/// listed, when there are any; an unknown group is an error message naming it and
/// the configured ones.
pub fn sources_json(
    cfg: &Config,
    kind: Kind,
    group: Option<&str>,
    names: &SortedMap<String, String>,
) -> Result<Vec<u8>, String> {
    let sources = match group.unwrap_or(DEFAULT_GROUP) {
        ALL_GROUPS => cfg.sources(kind),
        g => cfg.group(g).map(|g| g.sources(kind)).ok_or_else(|| {
            cfg.check_group(g).err().map_or_else(
                || format!("group {g:?}: give one group, not *"),
                |e| format!("group: {e}"),
            )
        })?,
    };
    let groups = (cfg.groups.len() > 1).then(|| {
        sources
            .iter()
            .map(|s| (s.as_str(), cfg.groups_of(kind, s)))
            .collect()
    });
    let names = sources
        .iter()
        .filter_map(|s| names.get(s).map(|n| (s.as_str(), n.as_str())))
        .collect();
    Ok(line(&Listed {
        kind,
        sources,
        groups,
        names,
    }))
}

/// A mark as written in `config.json` (`"0x200"`), or null.
fn hex(n: Option<u32>) -> Option<String> {
    n.map(|n| format!("{n:#x}"))
}

struct Groups<'a>(&'a Config);

impl ToJson for Groups<'_> {
    fn write_json(&self, w: &mut Writer<'_>) {
        let cfg = self.0;
        w.begin_object();
        w.key("groups");
        w.begin_array();
        for g in &cfg.groups {
            w.begin_object();
            w.field("name", g.name.as_str());
            for kind in Kind::ALL {
                w.field(kind.key(), g.sources(kind));
            }
            let exclude: Vec<String> = cfg
                .exclusions(&g.name)
                .iter()
                .map(ToString::to_string)
                .collect();
            w.field("exclude", &exclude);
            w.field("mark", &hex(g.mark.map(|m| m.value)));
            w.field("mark_mask", &hex(g.mark.map(|m| m.mask)));
            // Where its marked traffic goes (`"route"`), or null.
            w.key("route");
            match &g.route {
                None => w.null(),
                Some(r) => {
                    w.begin_object();
                    w.field("via", r.via.as_str());
                    w.field("gateway", &r.gateway.map(|a| a.to_string()));
                    w.field("table", &r.table);
                    w.end_object();
                }
            }
            w.end_object();
        }
        w.end_array();
        w.end_object();
    }
}

/// Every group (`default` first) with its sources, the exclusions that apply to it
/// (the top-level ones and its own), its mark and its route: the body of `GET /groups`.
pub fn groups_json(cfg: &Config) -> Vec<u8> {
    line(&Groups(cfg))
}
