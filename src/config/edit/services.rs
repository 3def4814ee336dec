//! `service add|remove`: a group's `services` list, under the same lock and atomic
//! rewrite as the source commands.

use std::path::Path;

use super::{group_object, unknown, update};
use crate::config::ConfigError;
use crate::util::json::Value;

/// Adds catalog services to a group: all or nothing (an unknown name is refused,
/// naming it, before anything is written). Returns each name and whether it was new
/// to the group.
pub fn add_services(
    path: &Path,
    group: &str,
    names: &[String],
) -> Result<Vec<(String, bool)>, ConfigError> {
    update(path, |root, before| {
        let g = before.group(group).ok_or_else(|| unknown(before, group))?;
        let mut out: Vec<(String, bool)> = Vec::with_capacity(names.len());
        for name in names {
            if before.catalog.get(name).is_none() {
                return Err(ConfigError::Refused(before.catalog.unknown(name)));
            }
            let new = !g.services.contains(name) && !out.iter().any(|(n, _)| n == name);
            if new {
                let list = group_object(root, group)
                    .get_or_insert_with("services", || Value::Array(Vec::new()));
                if list.is_null() {
                    *list = Value::Array(Vec::new());
                }
                list.as_array_mut()
                    .expect("validated as a list")
                    .push(Value::String(name.clone()));
            }
            out.push((name.clone(), new));
        }
        let changed = out.iter().any(|(_, new)| *new);
        Ok((out, changed))
    })
}

/// Takes a service out of a group. Returns whether the group named it.
pub fn remove_service(path: &Path, group: &str, name: &str) -> Result<bool, ConfigError> {
    update(path, |root, before| {
        let g = before.group(group).ok_or_else(|| unknown(before, group))?;
        let had = g.services.iter().any(|s| s == name);
        if let Some(Value::Array(list)) = group_object(root, group).get_mut("services") {
            list.retain(|v| v.as_str() != Some(name));
        }
        Ok((had, had))
    })
}
