//! `group add` with its mark, `load` output and route, and `group remove` with
//! everything that belongs to the group: so that a routed group needs no
//! hand-editing, and a removed one leaves nothing behind in the file.

use std::path::Path;

use super::{unknown, update};
use crate::config::{check_via, free_table, marks_collide, Config, ConfigError, Mark};
use crate::format::DEFAULT_GROUP;
use crate::source::Kind;
use crate::util::json::{Map, Value};

/// What `group add` asks for.
#[derive(Debug, Clone, Default)]
pub struct NewGroup<'a> {
    /// `--mark` (else the group's, else, with `via`, the next free one).
    pub mark: Option<Mark>,
    /// `--via`: the interface of its route.
    pub via: Option<&'a str>,
    /// The tables the kernel's routes use now: a new route's table is none of them.
    pub kernel_tables: &'a [u32],
}

/// What [`add_group`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupAdded {
    /// The group is new.
    pub created: bool,
    /// The file changed.
    pub changed: bool,
    /// Its mark now.
    pub mark: Option<Mark>,
    /// Its route's table, when it has a route.
    pub table: Option<u32>,
    /// A `load` output was added for it.
    pub load_added: bool,
}

/// What [`remove_group`] took out of the file with the group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupRemoved {
    /// Its sources (`AS62041`, `telegram.org`, ...).
    pub sources: Vec<String>,
    /// The services it named (`"services"`).
    pub services: Vec<String>,
    /// The outputs that listed it (by name).
    pub outputs: Vec<String>,
    /// The nftables table and set name of each of its `load` and `nft` outputs, whose
    /// sets and mark chains then leave the kernel.
    pub sets: Vec<(String, String)>,
}

/// The first mark `0x100/0xff00`, `0x200/0xff00`, ... that no other group's collides
/// with.
fn free_mark(cfg: &Config, name: &str) -> Option<Mark> {
    (1..=0xffu32)
        .map(|i| Mark {
            value: i << 8,
            mask: 0xff00,
        })
        .find(|m| {
            !cfg.groups
                .iter()
                .filter(|g| g.name != name)
                .any(|g| g.mark.is_some_and(|o| marks_collide(*m, o)))
        })
}

/// Sets `mark` and `mark_mask` of a group object (`mark_mask` left out for all bits).
fn set_mark(obj: &mut Map, mark: Mark) {
    obj.insert("mark", Value::String(format!("{:#x}", mark.value)));
    if mark.mask == u32::MAX {
        obj.remove("mark_mask");
    } else {
        obj.insert("mark_mask", Value::String(format!("{:#x}", mark.mask)));
    }
}

/// The object `groups.NAME`, created if missing.
fn group_obj<'d>(root: &'d mut Map, name: &str) -> &'d mut Map {
    let groups = root.get_or_insert_with("groups", || Value::Object(Map::new()));
    if !matches!(groups, Value::Object(_)) {
        *groups = Value::Object(Map::new());
    }
    let g = groups
        .as_object_mut()
        .expect("made an object above")
        .get_or_insert_with(name, || Value::Object(Map::new()));
    g.as_object_mut().expect("a configured group is an object")
}

/// The mark `group add` gives: `--mark` (refused when it collides with another
/// group's), else the group's own, else with `--via` the next free one.
fn chosen_mark(cfg: &Config, name: &str, new: &NewGroup) -> Result<Option<Mark>, ConfigError> {
    let own = cfg.group(name).and_then(|g| g.mark);
    if let Some(m) = new.mark {
        let other = cfg.groups.iter().filter(|g| g.name != name);
        if let Some(o) = other
            .clone()
            .find(|g| g.mark.is_some_and(|o| marks_collide(m, o)))
        {
            return Err(ConfigError::Refused(format!(
                "mark {} collides with group {:?}'s mark {}: their traffic could not be told apart; choose another --mark",
                crate::config::mark_text(m),
                o.name,
                crate::config::mark_text(o.mark.expect("found by its mark"))
            )));
        }
        return Ok(Some(m));
    }
    match (own, new.via) {
        (Some(m), _) => Ok(Some(m)),
        (None, Some(_)) => free_mark(cfg, name).map(Some).ok_or_else(|| {
            ConfigError::Refused(
                "no free mark left under the mask 0xff00: give one with --mark".into(),
            )
        }),
        (None, None) => Ok(None),
    }
}

/// Adds the group `name` (or updates an existing one): its mark, its route via
/// `new.via` in a table picked once (the group's, else the first from 100 up that no
/// group and no kernel route uses), and a `load` output for its sets and mark chain
/// when it has a mark and no such output.
pub fn add_group(path: &Path, name: &str, new: &NewGroup) -> Result<GroupAdded, ConfigError> {
    if name == DEFAULT_GROUP {
        return Err(ConfigError::Refused(
            "the group \"default\" always exists: its sources are the top-level ones".into(),
        ));
    }
    if let Some(via) = new.via {
        check_via(via).map_err(ConfigError::Refused)?;
    }
    update(path, |root, before| {
        let existing = before.group(name);
        let created = existing.is_none();
        let mark = chosen_mark(before, name, new)?;
        let route = existing.and_then(|g| g.route.as_ref());
        let table = match new.via {
            None => route.and_then(|r| r.table),
            Some(_) => Some(route.and_then(|r| r.table).unwrap_or_else(|| {
                let mut used = new.kernel_tables.to_vec();
                used.extend(before.groups.iter().filter_map(|g| g.route.as_ref()?.table));
                free_table(&used)
            })),
        };
        let mut changed = created || mark != existing.and_then(|g| g.mark);
        let obj = group_obj(root, name);
        if let Some(m) = mark {
            set_mark(obj, m);
        }
        if let (Some(via), Some(t)) = (new.via, table) {
            let r = obj.get_or_insert_with("route", || Value::Object(Map::new()));
            if !matches!(r, Value::Object(_)) {
                *r = Value::Object(Map::new());
            }
            let r = r.as_object_mut().expect("made an object above");
            changed |= r.get("via").and_then(Value::as_str) != Some(via);
            r.insert("via", Value::String(via.to_string()));
            r.insert("table", Value::Number(u64::from(t).into()));
        }
        let has_load = before
            .outputs
            .iter()
            .any(|o| o.load.is_some() && o.render.group == name);
        let load_added = mark.is_some() && !has_load;
        if load_added {
            let outs = root.get_or_insert_with("outputs", || Value::Array(Vec::new()));
            if !matches!(outs, Value::Array(_)) {
                *outs = Value::Array(Vec::new());
            }
            let mut o = Map::new();
            o.insert("load", Value::String("nft".into()));
            o.insert("group", Value::String(name.to_string()));
            outs.as_array_mut()
                .expect("made a list above")
                .push(Value::Object(o));
            changed = true;
        }
        let done = GroupAdded {
            created,
            changed,
            mark,
            table,
            load_added,
        };
        Ok((done, changed))
    })
}

/// Writes the table picked for a route given without one (`"table"`), so that it
/// never changes under the user; a route that has one keeps it.
pub fn set_route_table(path: &Path, group: &str, table: u32) -> Result<(), ConfigError> {
    update(path, |root, before| {
        let wants = before
            .group(group)
            .and_then(|g| g.route.as_ref())
            .is_some_and(|r| r.table.is_none());
        if wants {
            if let Some(Value::Object(r)) = group_obj(root, group).get_mut("route") {
                r.insert("table", Value::Number(u64::from(table).into()));
            }
        }
        Ok(((), wants))
    })
}

/// Takes the route out of group `name` (its mark and `load` output stay: the sets
/// still mark its traffic, which then takes the main table). Returns whether it had
/// one; an unknown group is refused, naming it.
pub fn clear_route(path: &Path, name: &str) -> Result<bool, ConfigError> {
    update(path, |root, before| {
        let g = before.group(name).ok_or_else(|| unknown(before, name))?;
        let had = g.route.is_some();
        if had {
            group_obj(root, name).remove("route");
        }
        Ok((had, had))
    })
}

/// The services a group object names (`"services"`, the services catalog's key).
fn services_of(root: &Map, name: &str) -> Vec<String> {
    let list = root
        .get("groups")
        .and_then(|g| g.get(name))
        .and_then(|g| g.get("services"))
        .and_then(Value::as_array);
    list.into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(|s| format!("service {s}")))
        .collect()
}

/// Takes the group `name` out of the configuration at `path`, with the outputs that
/// list it. While sources or services name it, refused listing them, unless `force`:
/// then they go too, and the answer lists them.
pub fn remove_group(path: &Path, name: &str, force: bool) -> Result<GroupRemoved, ConfigError> {
    if name == DEFAULT_GROUP {
        return Err(ConfigError::Refused(
            "the group \"default\" cannot be removed (remove its sources instead)".into(),
        ));
    }
    update(path, |root, before| {
        let g = before.group(name).ok_or_else(|| unknown(before, name))?;
        let mut out = GroupRemoved {
            services: services_of(root, name),
            ..GroupRemoved::default()
        };
        // What its services bring is named by "service NAME", not source by source.
        let brought = |kind: Kind, s: &String| g.brought.iter().any(|(k, b)| *k == kind && b == s);
        for kind in Kind::ALL {
            out.sources.extend(
                g.sources(kind)
                    .iter()
                    .filter(|s| !brought(kind, s))
                    .map(|s| crate::source::display(kind, s)),
            );
        }
        let named: Vec<String> = out.sources.iter().chain(&out.services).cloned().collect();
        if !named.is_empty() && !force {
            return Err(ConfigError::Refused(format!(
                "group {name} still has {}: remove them first, or give --force to remove them with the group",
                named.join(", ")
            )));
        }
        let mut gone = Vec::new();
        for (i, o) in before.outputs.iter().enumerate() {
            let of_group = match &o.dnsmasq {
                Some(d) => d.group == name,
                None => o.render.group == name,
            };
            if of_group {
                gone.push(i);
                out.outputs.push(o.name());
                let sets = o.load.is_some() || o.render.format == crate::format::Format::Nft;
                if o.dnsmasq.is_none() && sets {
                    out.sets
                        .push((o.render.table.clone(), o.render.set.clone()));
                }
            }
        }
        if let Some(Value::Array(list)) = root.get_mut("outputs") {
            for i in gone.into_iter().rev() {
                if i < list.len() {
                    list.remove(i);
                }
            }
        }
        if let Some(Value::Object(groups)) = root.get_mut("groups") {
            groups.remove(name);
        }
        Ok((out, true))
    })
}
