//! What the `load` outputs last put in the kernel, for the next process: at boot the
//! firewall include's `render --load-only` can start while the daemon loads the sets
//! (our table not there yet), wait for the outputs' lock, and then read every element
//! back for nothing. The last writer whose every load succeeded records the
//! database generation and the configuration it loaded
//! (`.loaded-generation` in the data directory, removed when a load starts); a
//! `render --load-only` that finds them current and every set still there (`fw4
//! flush` deletes the table) has nothing to do.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;

use crate::config::{OutputConfig, Paths};

fn path(paths: &Paths) -> PathBuf {
    paths.data_dir.join(".loaded-generation")
}

/// The loads of `outputs` (the netlink loads without the file and command around
/// them): what `render --load-only` renders.
pub fn loads_only(outputs: &[OutputConfig]) -> Vec<OutputConfig> {
    outputs
        .iter()
        .filter(|o| o.load.is_some())
        .map(|o| OutputConfig {
            path: None,
            command: None,
            ..o.clone()
        })
        .collect()
}

/// The record for `generation` and the loads of `outputs` (`None`: no load): with
/// the hash of `config.json` as it is now (not of the outputs' `Debug`, which the
/// router build shortens to the type's name), so that a changed configuration is
/// never taken for the one loaded.
pub fn record(paths: &Paths, generation: i64, outputs: &[OutputConfig]) -> Option<String> {
    if !outputs.iter().any(|o| o.load.is_some()) {
        return None;
    }
    let config = std::fs::read(paths.config()).ok()?;
    // The same binary writes and reads it: its hasher is the same in both.
    let mut h = DefaultHasher::new();
    config.hash(&mut h);
    Some(format!("{generation} {:016x}\n", h.finish()))
}

/// A load of `outputs` starts: until it has succeeded, nothing is current.
pub fn forget(paths: &Paths) {
    let _ = std::fs::remove_file(path(paths));
}

/// Every load succeeded: `record` is what the sets hold now.
pub fn remember(paths: &Paths, record: &str) {
    if let Err(e) = crate::util::write_atomic(&path(paths), record.as_bytes()) {
        log::debug!("{}: {e}", path(paths).display());
    }
}

/// Whether the sets of `outputs` hold what `record` says and are all in the kernel.
pub fn current(paths: &Paths, record: &str, outputs: &[OutputConfig]) -> bool {
    if std::fs::read_to_string(path(paths)).ok().as_deref() != Some(record) {
        return false;
    }
    outputs.iter().filter(|o| o.load.is_some()).all(|o| {
        let r = &o.render;
        let families: &[&str] = match r.family {
            Some(crate::format::Family::V4) => &["_v4"],
            Some(crate::format::Family::V6) => &["_v6"],
            None => &["_v4", "_v6"],
        };
        families
            .iter()
            .all(|f| set_exists(&r.table, &format!("{}{f}", r.set)))
    })
}

#[cfg(target_os = "linux")]
fn set_exists(table: &str, set: &str) -> bool {
    crate::nftnl::probe::set_exists(table, set).unwrap_or(false)
}

#[cfg(not(target_os = "linux"))]
fn set_exists(_: &str, _: &str) -> bool {
    false
}
