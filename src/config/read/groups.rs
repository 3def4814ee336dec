//! `groups` and `exclude`: named groups with their sources, exclusions and marks, and
//! the top-level exclusions that apply to every group.

use crate::util::json::{Map, Value};
use ipnet::IpNet;

use super::{short, Reader};
use crate::catalog::Catalog;
use crate::config::{Config, ConfigError, Group, Mark};
use crate::format::{check_group_name, DEFAULT_GROUP};
use crate::source::Kind;

/// The keys of a group besides its source lists (one per kind).
const GROUP_KEYS: &[&str] = &[
    "exclude",
    "mark",
    "mark_mask",
    "route",
    "allow_single_label",
    "allow_special",
    "bgp_community",
    "services",
];

impl Reader<'_> {
    /// `exclude` of `obj` (`prefix` names it in errors, `whose` in messages).
    pub(super) fn exclusions(
        &self,
        obj: &Map,
        prefix: &str,
        whose: &str,
    ) -> Result<Vec<IpNet>, ConfigError> {
        let key = format!("{prefix}exclude");
        let list = match obj.get("exclude") {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(a)) => a,
            Some(v) => return Err(self.err(&key, format!("expected a list, got {}", short(v)))),
        };
        list.iter()
            .enumerate()
            .map(|(i, v)| {
                exclusion(v).map_err(|m| self.err(&format!("{key}[{i}]"), format!("{m} ({whose})")))
            })
            .collect()
    }

    /// The groups: `default` (the top-level sources, already read into `c`) first,
    /// then `groups` in name order. Fills `c.groups`, and makes `c.asns`, `c.fqdns`,
    /// `c.feeds` and `c.countries` the sources of every group (what is collected), each once.
    pub(super) fn groups(&mut self, root: &Map, c: &mut Config) -> Result<(), ConfigError> {
        let mut default = Group::new(DEFAULT_GROUP);
        for kind in Kind::ALL {
            *default.sources_mut(kind) = c.sources(kind).to_vec();
        }
        default.exclude = Vec::new();
        default.allow_special = self.flag(root, "", "allow_special")?;
        default.allow_single_label = self.single_label(root, "")?;
        default.bgp_community = self.word(root, "", "bgp_community")?;
        self.services(root, "", &c.catalog, &mut default)?;
        let mut groups = vec![default];
        match root.get("groups") {
            None | Some(Value::Null) => {}
            Some(Value::Object(o)) => {
                // `read_value` sorted the keys: groups are sorted by name.
                for (name, v) in o {
                    let mut g = self.group(name, v)?;
                    let prefix = format!("groups.{name}.");
                    let o = v.as_object().expect("group() checked it is an object");
                    self.services(o, &prefix, &c.catalog, &mut g)?;
                    groups.push(g);
                }
            }
            Some(v) => {
                return Err(self.err("groups", format!("expected an object, got {}", short(v))))
            }
        }
        for g in &groups {
            let prefix = match g.name == DEFAULT_GROUP {
                true => String::new(),
                false => format!("groups.{}.", g.name),
            };
            for name in &g.fqdns {
                g.check_fqdn(name)
                    .map_err(|m| self.err(&format!("{prefix}fqdns"), m))?;
            }
        }
        self.special_agreed(&groups)?;
        self.routes_agree(&groups)?;
        for kind in Kind::ALL {
            let all: Vec<&String> = groups.iter().flat_map(|g| g.sources(kind)).collect();
            let repeated = crate::util::repeats(&all);
            let union: Vec<String> = all
                .into_iter()
                .zip(repeated)
                .filter(|(_, again)| !again)
                .map(|(s, _)| s.clone())
                .collect();
            *c.sources_mut(kind) = union;
        }
        c.groups = groups;
        Ok(())
    }

    /// Refuses an ASN or country named by a group with `allow_special` and by one
    /// without: a source's values are stored once for every group that names it, so
    /// the other group would list its special ranges too (a leaked 10.0.0.0/8 of a
    /// "lab" ASN sending the LAN into a "via the VPN" group's tunnel). The error is
    /// on the allowing group's key, so that `check` can take it out and go on.
    fn special_agreed(&self, groups: &[Group]) -> Result<(), ConfigError> {
        for allowing in groups.iter().filter(|g| g.allow_special) {
            for kind in [Kind::Asn, Kind::Country] {
                for source in allowing.sources(kind) {
                    let Some(other) = groups
                        .iter()
                        .find(|g| !g.allow_special && g.has(kind, source))
                    else {
                        continue;
                    };
                    let key = match allowing.name == DEFAULT_GROUP {
                        true => "allow_special".to_string(),
                        false => format!("groups.{}.allow_special", allowing.name),
                    };
                    let why =
                        crate::config::group::special_disagreement(kind, source, allowing, other);
                    return Err(self.err(&key, why));
                }
            }
        }
        Ok(())
    }

    fn group(&mut self, name: &str, v: &Value) -> Result<Group, ConfigError> {
        let prefix = format!("groups.{name}.");
        if name == DEFAULT_GROUP {
            return Err(self.err(
                &format!("groups.{name}"),
                "the group \"default\" is the top-level sources; give them at the top level",
            ));
        }
        check_group_name(name).map_err(|e| self.err(&format!("groups.{name}"), e.0))?;
        let o = self.object(v, &format!("groups.{name}"))?;
        let known: Vec<&str> = Kind::ALL
            .iter()
            .map(|k| k.key())
            .chain(GROUP_KEYS.iter().copied())
            .collect();
        self.unknown(o, &prefix, &known);
        let mut g = Group::new(name);
        for kind in Kind::ALL {
            *g.sources_mut(kind) = self.sources_in(o, &prefix, kind)?;
        }
        g.exclude = self.exclusions(o, &prefix, &format!("group {name}"))?;
        g.mark = self.mark(o, &prefix)?;
        g.route = self.route(o, &prefix)?;
        g.allow_special = self.flag(o, &prefix, "allow_special")?;
        g.allow_single_label = self.single_label(o, &prefix)?;
        g.bgp_community = self.word(o, &prefix, "bgp_community")?;
        Ok(g)
    }

    /// `catalog.path`: the catalog file that replaces the built-in one (relative to
    /// the configuration's directory), else `services.json` there when present.
    pub(super) fn catalog(&mut self, root: &Map, c: &mut Config) -> Result<(), ConfigError> {
        let named = match self.section(root, "catalog", &["path"])? {
            Some(o) => self.string(o, "catalog.", "path")?,
            None => None,
        };
        let catalog = Catalog::load(self.path, named.as_deref())
            .map_err(|(path, message)| ConfigError::Catalog { path, message })?;
        c.catalog = catalog;
        Ok(())
    }

    /// `services` of `o`: catalog names, each bringing its sources into `g`.
    fn services(
        &mut self,
        o: &Map,
        prefix: &str,
        catalog: &Catalog,
        g: &mut Group,
    ) -> Result<(), ConfigError> {
        let key = format!("{prefix}services");
        let list = match o.get("services") {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Array(a)) => a,
            Some(v) => return Err(self.err(&key, format!("expected a list, got {}", short(v)))),
        };
        for (i, v) in list.iter().enumerate() {
            let item = format!("{key}[{i}]");
            let name = v.as_str().ok_or_else(|| {
                self.err(&item, format!("expected a service name, got {}", short(v)))
            })?;
            let service = catalog
                .get(name)
                .ok_or_else(|| self.err(&item, catalog.unknown(name)))?;
            if g.services.iter().any(|s| s == name) {
                self.warnings.push(format!(
                    "{item}: service {name} is listed twice; brought once"
                ));
                continue;
            }
            g.services.push(name.to_string());
            g.bring(service);
        }
        Ok(())
    }

    /// `allow_single_label` of `o`: true or false (default).
    fn single_label(&self, o: &Map, prefix: &str) -> Result<bool, ConfigError> {
        match o.get("allow_single_label") {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(self.err(
                &format!("{prefix}allow_single_label"),
                format!("expected true or false, got {}", short(v)),
            )),
        }
    }

    /// `mark` and `mark_mask`: numbers, or strings in decimal or `0x` hex.
    fn mark(&self, o: &Map, prefix: &str) -> Result<Option<Mark>, ConfigError> {
        let word = |key: &str| -> Result<Option<u32>, ConfigError> {
            let full = format!("{prefix}{key}");
            match o.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => match mark_number(v) {
                    Some(0) | None => Err(self.err(
                        &full,
                        format!(
                            "expected a non-zero 32-bit mark such as \"0x100\", got {}",
                            short(v)
                        ),
                    )),
                    Some(n) => Ok(Some(n)),
                },
            }
        };
        let value = word("mark")?;
        let mask = word("mark_mask")?;
        match (value, mask) {
            (None, None) => Ok(None),
            (None, Some(_)) => {
                Err(self.err(&format!("{prefix}mark_mask"), "given without \"mark\""))
            }
            (Some(value), mask) => {
                let mask = mask.unwrap_or(u32::MAX);
                if value & !mask != 0 {
                    return Err(self.err(
                        &format!("{prefix}mark"),
                        format!("{value:#x} has bits outside mark_mask {mask:#x}"),
                    ));
                }
                Ok(Some(Mark { value, mask }))
            }
        }
    }
}

/// `--mark M[/MASK]` of `group add`: the value and mask as `mark`/`mark_mask` take
/// them, checked as those keys are.
pub(crate) fn parse_mark(s: &str) -> Result<Mark, String> {
    let (value, mask) = s.split_once('/').unwrap_or((s, ""));
    let word = |w: &str| match mark_number(&Value::String(w.to_string())) {
        Some(0) | None => Err(format!(
            "invalid mark {s:?}: expected a non-zero 32-bit number such as 0x100 or 0x100/0xff00"
        )),
        Some(n) => Ok(n),
    };
    let value = word(value)?;
    let mask = if mask.is_empty() && !s.contains('/') {
        u32::MAX
    } else {
        word(mask)?
    };
    if value & !mask != 0 {
        return Err(format!(
            "invalid mark {s:?}: {value:#x} has bits outside the mask {mask:#x}"
        ));
    }
    Ok(Mark { value, mask })
}

/// An exclusion given on the command line, checked as `exclude` entries are.
pub(crate) fn parse_exclusion(s: &str) -> Result<IpNet, String> {
    exclusion(&Value::String(s.to_string()))
}

fn mark_number(v: &Value) -> Option<u32> {
    match v {
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        Value::String(s) => match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            Some(hex) if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
                u32::from_str_radix(hex, 16).ok()
            }
            Some(_) => None,
            None if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => s.parse().ok(),
            None => None,
        },
        _ => None,
    }
}

/// One exclusion: a prefix without host bits, or an address.
fn exclusion(v: &Value) -> Result<IpNet, String> {
    let Value::String(s) = v else {
        return Err(format!(
            "expected a prefix such as \"10.1.0.0/16\", got {}",
            short(v)
        ));
    };
    if let Ok(addr) = s.parse::<std::net::IpAddr>() {
        return Ok(IpNet::from(addr));
    }
    let net = s.parse::<IpNet>().map_err(|_| {
        format!("invalid prefix {s:?}: expected e.g. \"10.1.0.0/16\" or \"2001:db8::/32\"")
    })?;
    if net.trunc() != net {
        return Err(format!(
            "invalid prefix {s:?}: host bits set (the prefix is {})",
            net.trunc()
        ));
    }
    Ok(net)
}
