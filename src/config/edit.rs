//! Changes to `config.json` by the CLI and the API: under a lock, atomically, keeping
//! keys this version does not know.

use std::fs;
use std::path::Path;

use serde_json::{Map, Value};

use super::read::read_value;
use super::*;
use crate::source::{normalize_asn_value, normalize_fqdn, Kind};

/// Takes the configuration's update lock (a sibling file `.config.json.lock`) for as
/// long as the returned file is open, so that concurrent CLI commands and API requests
/// never lose each other's changes.
fn lock(path: &Path) -> Result<fs::File, ConfigError> {
    let lock_path = path.with_file_name(".config.json.lock");
    let io_err = |source| ConfigError::Io {
        path: lock_path.clone(),
        source,
    };
    let f = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io_err)?;
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
    change: impl FnOnce(&mut Map<String, Value>, &Config) -> Result<(T, bool), ConfigError>,
) -> Result<T, ConfigError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|source| ConfigError::Io {
            path: dir.into(),
            source,
        })?;
    }
    let _guard = lock(path)?;
    let mut doc = match read_text(path)? {
        Some(text) if !text.trim().is_empty() => read_value(&text, path)?,
        _ => Value::Object(Map::new()),
    };
    let before = from_value(&doc, path)?.config;
    let root = doc.as_object_mut().expect("validated as an object");
    let (result, changed) = change(root, &before)?;
    if changed {
        let after = from_value(&doc, path)?.config;
        // Store every source in its normalised form ("62041", lower case), once.
        for kind in Kind::ALL {
            if root_has(&doc, kind.key()) {
                let list = after
                    .sources(kind)
                    .iter()
                    .cloned()
                    .map(Value::String)
                    .collect();
                doc[kind.key()] = Value::Array(list);
            }
        }
        let mut text = serde_json::to_string_pretty(&doc).expect("a JSON value serialises");
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

/// Normalises a source given to [`add_source`] or [`remove_source`].
fn normalize_arg(path: &Path, kind: Kind, source: &str) -> Result<String, ConfigError> {
    kind.normalize(source)
        .map_err(|message| ConfigError::Invalid {
            path: path.into(),
            key: kind.key().into(),
            message,
        })
}

fn root_has(doc: &Value, key: &str) -> bool {
    doc.get(key).is_some_and(|v| !v.is_null())
}

/// Adds a source (given as text) to the configuration at `path`, creating the file if
/// needed. Returns the normalised source and whether it was new.
pub fn add_source(path: &Path, kind: Kind, source: &str) -> Result<(String, bool), ConfigError> {
    let norm = normalize_arg(path, kind, source)?;
    update(path, |root, before| {
        if before.sources(kind).contains(&norm) {
            return Ok(((norm.clone(), false), false));
        }
        let list = root
            .entry(kind.key())
            .or_insert_with(|| Value::Array(Vec::new()));
        if list.is_null() {
            *list = Value::Array(Vec::new());
        }
        list.as_array_mut()
            .expect("validated as a list")
            .push(Value::String(norm.clone()));
        Ok(((norm.clone(), true), true))
    })
}

/// Removes a source (given as text) from the configuration at `path`. Returns the
/// normalised source and whether it was configured.
pub fn remove_source(path: &Path, kind: Kind, source: &str) -> Result<(String, bool), ConfigError> {
    let norm = normalize_arg(path, kind, source)?;
    update(path, |root, before| {
        if !before.sources(kind).contains(&norm) {
            return Ok(((norm.clone(), false), false));
        }
        if let Some(Value::Array(list)) = root.get_mut(kind.key()) {
            // Entries were validated, so every one normalises; drop all spellings of it.
            list.retain(|v| {
                let n = match kind {
                    Kind::Asn => normalize_asn_value(v),
                    Kind::Fqdn => v.as_str().map_or(Err(String::new()), normalize_fqdn),
                };
                n.as_deref() != Ok(norm.as_str())
            });
        }
        Ok(((norm.clone(), true), true))
    })
}
