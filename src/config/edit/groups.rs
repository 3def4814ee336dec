//! `group add|remove` and `exclude add|remove`: the same locked, atomic rewrite as the
//! source commands, so that a two-group setup needs no hand-editing.

use std::path::Path;

use ipnet::IpNet;

use super::{group_object, unknown, update};
use crate::config::{parse_exclusion, ConfigError};
use crate::format::DEFAULT_GROUP;
use crate::util::json::{Map, Value};

mod add;
pub use add::{
    add_group, clear_route, remove_group, set_route_table, GroupAdded, GroupRemoved, NewGroup,
};

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
