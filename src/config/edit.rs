//! Changes to `config.json` by the CLI and the API: under a lock, atomically, keeping
//! keys this version does not know.

use std::fs;
use std::path::Path;

use crate::util::json::{Map, Value};

mod groups;
mod services;

pub use groups::{
    add_exclusions, add_group, clear_route, remove_exclusions, remove_group, set_route_table,
    GroupAdded, GroupRemoved, NewGroup,
};
pub use services::{add_services, remove_service};

use super::read::read_value;
use super::*;
use crate::format::DEFAULT_GROUP;
use crate::source::Kind;

/// Takes the configuration's update lock (a sibling file `.config.json.lock`) for as
/// long as the returned file is open, so that concurrent CLI commands and API requests
/// never lose each other's changes.
///
/// The lock is only ever `flock`ed, which needs no write permission: one that another
/// user made (root, before its files were given to the service) is opened read-only,
/// and one root makes goes to the directory's owner ([`crate::util::own_like_dir`]).
fn lock(path: &Path) -> Result<fs::File, ConfigError> {
    let lock_path = path.with_file_name(".config.json.lock");
    let io_err = |source| ConfigError::Lock {
        path: lock_path.clone(),
        source,
    };
    let created = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path);
    let f = match created {
        Ok(f) => {
            crate::util::own_like_dir(&f, &lock_path);
            f
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            fs::File::open(&lock_path).map_err(|_| io_err(e))?
        }
        Err(e) => return Err(io_err(e)),
    };
    match crate::util::lock_exclusive(&f) {
        Ok(()) => Ok(f),
        Err(e) => Err(io_err(e)),
    }
}

/// Applies `change` to the JSON document of the configuration under the lock and
/// rewrites the file atomically when `change` says it changed something. The file must
/// be valid before and after; unknown keys are kept.
fn update<T>(
    path: &Path,
    change: impl FnOnce(&mut Map, &Config) -> Result<(T, bool), ConfigError>,
) -> Result<T, ConfigError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|source| ConfigError::Io {
            path: dir.into(),
            source,
        })?;
    }
    let _guard = lock(path)?;
    remove_stale_temps(path);
    let mut doc = match read_text(path)? {
        Some(text) if !text.trim().is_empty() => read_value(&text, path)?,
        _ => Value::Object(Map::new()),
    };
    let before = from_value(&doc, path)?.config;
    let root = doc.as_object_mut().expect("validated as an object");
    let (result, changed) = change(root, &before)?;
    if changed {
        let after = from_value(&doc, path)?.config;
        normalize_lists(&mut doc, &after);
        let mut text = crate::util::json::to_string_pretty(&doc);
        text.push('\n');
        // The next load would refuse a larger file: refuse the change instead.
        if text.len() as u64 > MAX_CONFIG_BYTES {
            return Err(ConfigError::TooLarge {
                path: path.into(),
                limit: MAX_CONFIG_BYTES,
            });
        }
        crate::util::write_atomic(path, text.as_bytes()).map_err(|source| ConfigError::Io {
            path: path.into(),
            source,
        })?;
    }
    Ok(result)
}

/// Deletes the temporary files of writes cut off by a power cut or a kill
/// (`.config.json.tmp-<pid>-<n>`, beside the file a link points to): every writer
/// holds the lock while its temporary file exists, so under the lock any such file is
/// stale. Without this each cut in the middle of a write leaves one on the flash for
/// ever (seen in `benches/powercut.sh`).
fn remove_stale_temps(path: &Path) {
    let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let Some(name) = target.file_name() else {
        return;
    };
    let prefix = format!(".{}.tmp-", name.to_string_lossy());
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with(&prefix) && fs::remove_file(e.path()).is_ok()
        {
            log::info!(
                "removed {}, left by an interrupted write",
                e.path().display()
            );
        }
    }
}

/// Normalises a source given to [`add_source`] or [`remove_source`].
fn normalize_arg(path: &Path, kind: Kind, source: &str) -> Result<String, ConfigError> {
    kind.normalize(source)
        .map_err(|message| ConfigError::Invalid {
            path: path.into(),
            key: kind.key().into(),
            message,
        })
}

/// Rewrites every source list, the top level's and each group's, in its normalised
/// form ("62041", lower case), each source once; what only services bring stays out.
fn normalize_lists(doc: &mut Value, after: &Config) {
    for group in &after.groups {
        let obj = if group.name == DEFAULT_GROUP {
            Some(&mut *doc)
        } else {
            doc.get_mut("groups").and_then(|g| g.get_mut(&group.name))
        };
        let Some(obj) = obj.and_then(Value::as_object_mut) else {
            continue;
        };
        for kind in Kind::ALL {
            if obj.get(kind.key()).is_some_and(|v| !v.is_null()) {
                let list = group.sources(kind).iter();
                let list = list
                    .filter(|s| group.names_own(kind, s))
                    .cloned()
                    .map(Value::String);
                obj.insert(kind.key(), Value::Array(list.collect()));
            }
        }
    }
}

/// The JSON object holding `group`'s source lists: the top level for `default`.
fn group_object<'d>(root: &'d mut Map, group: &str) -> &'d mut Map {
    if group == DEFAULT_GROUP {
        return root;
    }
    root.get_mut("groups")
        .and_then(|g| g.get_mut(group))
        .and_then(Value::as_object_mut)
        .expect("a configured group is an object under \"groups\"")
}

/// Adds a source (given as text) to a group of the configuration at `path`, creating
/// the file if needed. Returns the normalised source and whether it was new to the
/// group. An unknown group is an error and changes nothing.
pub fn add_source(
    path: &Path,
    kind: Kind,
    group: &str,
    source: &str,
) -> Result<(String, bool), ConfigError> {
    let mut v = add_sources(path, kind, group, &[source.to_string()])?;
    Ok(v.remove(0))
}

/// Adds several sources to a group in one rewrite: all or nothing (an invalid one is an
/// error naming it, and nothing is written). Returns each normalised source and
/// whether it was new to the group.
pub fn add_sources(
    path: &Path,
    kind: Kind,
    group: &str,
    sources: &[String],
) -> Result<Vec<(String, bool)>, ConfigError> {
    let norms = sources
        .iter()
        .map(|s| normalize_arg(path, kind, s))
        .collect::<Result<Vec<_>, _>>()?;
    update(path, |root, before| {
        let g = before.group(group).ok_or_else(|| unknown(before, group))?;
        let mut out: Vec<(String, bool)> = Vec::with_capacity(norms.len());
        for norm in norms {
            if kind == Kind::Fqdn {
                g.check_fqdn(&norm).map_err(ConfigError::Refused)?;
            }
            // Refused here (a usage error, a 400) rather than by the load after it.
            if let Some(other) = before.groups.iter().find(|o| {
                matches!(kind, Kind::Asn | Kind::Country)
                    && o.allow_special != g.allow_special
                    && o.has(kind, &norm)
            }) {
                let (allowing, other) = if g.allow_special {
                    (g, other)
                } else {
                    (other, g)
                };
                let why = crate::config::group::special_disagreement(kind, &norm, allowing, other);
                return Err(ConfigError::Refused(why));
            }
            // One a service brings is still written: it stays when the service goes.
            let new = !g.names_own(kind, &norm) && !out.iter().any(|(n, _)| *n == norm);
            if new {
                let list = group_object(root, group)
                    .get_or_insert_with(kind.key(), || Value::Array(Vec::new()));
                if list.is_null() {
                    *list = Value::Array(Vec::new());
                }
                list.as_array_mut()
                    .expect("validated as a list")
                    .push(Value::String(norm.clone()));
            }
            out.push((norm, new));
        }
        let changed = out.iter().any(|(_, new)| *new);
        Ok((out, changed))
    })
}

fn unknown(cfg: &Config, group: &str) -> ConfigError {
    match cfg.check_group(group) {
        Err(e) => ConfigError::UnknownGroup(e),
        // `*` is a selection, not a group that holds sources.
        Ok(()) => ConfigError::UnknownGroup(UnknownGroup {
            name: group.to_string(),
            known: cfg
                .groups
                .iter()
                .map(|g| g.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// Removes a source (given as text) from a group of the configuration at `path`.
/// Returns the normalised source and whether the group named it.
pub fn remove_source(
    path: &Path,
    kind: Kind,
    group: &str,
    source: &str,
) -> Result<(String, bool), ConfigError> {
    let mut v = remove_sources(path, kind, group, &[source.to_string()])?;
    Ok(v.remove(0))
}

/// Removes several sources from a group in one rewrite. Returns each normalised source
/// and whether the group named it.
pub fn remove_sources(
    path: &Path,
    kind: Kind,
    group: &str,
    sources: &[String],
) -> Result<Vec<(String, bool)>, ConfigError> {
    let norms = sources
        .iter()
        .map(|s| normalize_arg(path, kind, s))
        .collect::<Result<Vec<_>, _>>()?;
    update(path, |root, before| {
        let g = before.group(group).ok_or_else(|| unknown(before, group))?;
        let out: Vec<(String, bool)> = norms
            .into_iter()
            .map(|n| {
                let had = g.names_own(kind, &n);
                (n, had)
            })
            .collect();
        if let Some(Value::Array(list)) = group_object(root, group).get_mut(kind.key()) {
            // Entries were validated, so every one normalises; drop all spellings.
            list.retain(|v| {
                let n = kind.normalize_json(v);
                !out.iter()
                    .any(|(norm, _)| n.as_deref() == Ok(norm.as_str()))
            });
        }
        let changed = out.iter().any(|(_, had)| *had);
        Ok((out, changed))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_removes_temporary_files_of_interrupted_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        let stale = dir.path().join(".config.json.tmp-4242-0");
        let other = dir.path().join(".status.json.tmp-4242-0");
        fs::write(&stale, "{\"asns\": [").unwrap();
        fs::write(&other, "{}").unwrap();
        add_source(&path, Kind::Asn, DEFAULT_GROUP, "62041").unwrap();
        assert!(
            !stale.exists(),
            "left by a cut write: removed under the lock"
        );
        assert!(other.exists(), "another file's temporary is not ours");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp-"))
            .collect();
        assert_eq!(names, [".status.json.tmp-4242-0"]);
    }
}
