//! `group add|remove` and `exclude add|remove`: the same locked, atomic rewrite as the
//! source commands, so that a two-group setup needs no hand-editing.

use std::path::Path;

use ipnet::IpNet;

use super::{group_object, unknown, update};
use crate::config::{parse_exclusion, ConfigError, Mark};
use crate::format::DEFAULT_GROUP;
use crate::util::json::{Map, Value};

/// What [`add_group`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupAdded {
    /// The group is new.
    pub created: bool,
    /// The file changed (a new group, or a new mark on an existing one).
    pub changed: bool,
}

fn invalid(path: &Path, key: &str, message: String) -> ConfigError {
    ConfigError::Invalid {
        path: path.into(),
        key: key.into(),
        message,
    }
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

/// Adds the group `name` (with `mark`, if given) to the configuration at `path`; for
/// a group that exists, sets its mark when one is given. The name is checked by the
/// rewrite's validation (`default` and bad names are refused, nothing written).
pub fn add_group(path: &Path, name: &str, mark: Option<Mark>) -> Result<GroupAdded, ConfigError> {
    if name == DEFAULT_GROUP {
        return Err(invalid(
            path,
            "groups",
            "the group \"default\" always exists: its sources are the top-level ones".into(),
        ));
    }
    update(path, |root, before| {
        let existing = before.group(name);
        let created = existing.is_none();
        let changed = created || mark.is_some_and(|m| existing.and_then(|g| g.mark) != Some(m));
        if changed {
            let groups = root.get_or_insert_with("groups", || Value::Object(Map::new()));
            if !matches!(groups, Value::Object(_)) {
                *groups = Value::Object(Map::new());
            }
            let obj = groups
                .as_object_mut()
                .expect("made an object above")
                .get_or_insert_with(name, || Value::Object(Map::new()))
                .as_object_mut()
                .expect("a configured group is an object");
            if let Some(m) = mark {
                set_mark(obj, m);
            }
        }
        Ok((GroupAdded { created, changed }, changed))
    })
}

/// Takes the group `name` out of the configuration at `path`; its sources' values
/// then age out unless another group names them. An output that names the group makes
/// the rewrite invalid: refused, naming the output, and nothing is written.
pub fn remove_group(path: &Path, name: &str) -> Result<(), ConfigError> {
    if name == DEFAULT_GROUP {
        return Err(invalid(
            path,
            "groups",
            "the group \"default\" cannot be removed (remove its sources instead)".into(),
        ));
    }
    update(path, |root, before| {
        before.group(name).ok_or_else(|| unknown(before, name))?;
        if let Some(Value::Object(groups)) = root.get_mut("groups") {
            groups.remove(name);
        }
        Ok(((), true))
    })
}

/// The `exclude` list of `group` (the top level's for `default`, which applies to
/// every group), created if missing.
fn exclude_list<'d>(root: &'d mut Map, group: &str) -> &'d mut Vec<Value> {
    let list = group_object(root, group).get_or_insert_with("exclude", || Value::Array(vec![]));
    if !matches!(list, Value::Array(_)) {
        *list = Value::Array(Vec::new());
    }
    list.as_array_mut().expect("made a list above")
}

/// Adds exclusions to `group` (`default`: the top-level ones) in one rewrite. Returns
/// each with whether it was new.
pub fn add_exclusions(
    path: &Path,
    group: &str,
    nets: &[IpNet],
) -> Result<Vec<(IpNet, bool)>, ConfigError> {
    update(path, |root, before| {
        let had: Vec<IpNet> = if group == DEFAULT_GROUP {
            before.exclude.clone()
        } else {
            let g = before.group(group).ok_or_else(|| unknown(before, group))?;
            g.exclude.clone()
        };
        let mut out: Vec<(IpNet, bool)> = Vec::with_capacity(nets.len());
        for &net in nets {
            let new = !had.contains(&net) && !out.iter().any(|(n, _)| *n == net);
            if new {
                exclude_list(root, group).push(Value::String(net.to_string()));
            }
            out.push((net, new));
        }
        let changed = out.iter().any(|(_, new)| *new);
        Ok((out, changed))
    })
}

/// Removes exclusions from `group` (`default`: the top-level ones) in one rewrite.
/// Returns each with whether it was there.
pub fn remove_exclusions(
    path: &Path,
    group: &str,
    nets: &[IpNet],
) -> Result<Vec<(IpNet, bool)>, ConfigError> {
    update(path, |root, before| {
        let had: Vec<IpNet> = if group == DEFAULT_GROUP {
            before.exclude.clone()
        } else {
            let g = before.group(group).ok_or_else(|| unknown(before, group))?;
            g.exclude.clone()
        };
        let out: Vec<(IpNet, bool)> = nets.iter().map(|n| (*n, had.contains(n))).collect();
        let changed = out.iter().any(|(_, h)| *h);
        if changed {
            exclude_list(root, group).retain(|v| {
                let n = v.as_str().and_then(|s| parse_exclusion(s).ok());
                !n.is_some_and(|n| nets.contains(&n))
            });
        }
        Ok((out, changed))
    })
}
