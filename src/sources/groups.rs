//! Adding and removing groups and exclusions, with the log lines that say what changed
//! (`group add|remove`, `exclude add|remove`).

use ipnet::IpNet;

use super::SourcesError;
use crate::config::{self, Paths};
use crate::format::DEFAULT_GROUP;

pub use crate::config::mark_text;

/// Adds the group `name` (or sets the mark and route of an existing one), saying
/// what it got.
pub fn add_group(
    paths: &Paths,
    name: &str,
    new: &config::NewGroup,
) -> Result<config::GroupAdded, SourcesError> {
    let done = config::add_group(&paths.config(), name, new)?;
    let mut with = done
        .mark
        .map_or_else(String::new, |m| format!(" with mark {}", mark_text(m)));
    if let (Some(via), Some(t)) = (new.via, done.table) {
        with.push_str(&format!(", routed via {via} (table {t})"));
    }
    if done.load_added {
        with.push_str(", and a load output for its sets and mark chain");
    }
    if done.created {
        log::info!("added group {name}{with}; add its sources with --group {name}");
    } else if done.changed {
        log::info!("group {name} now has{}", with.trim_start_matches(" with"));
    } else {
        log::info!("group {name} is already configured{with}");
    }
    Ok(done)
}

/// Removes the group `name` (with `force`, with its sources and services), saying
/// what went with it.
pub fn remove_group(
    paths: &Paths,
    name: &str,
    force: bool,
) -> Result<config::GroupRemoved, SourcesError> {
    let done = config::remove_group(&paths.config(), name, force)?;
    let named: Vec<&str> = done
        .sources
        .iter()
        .chain(&done.services)
        .map(String::as_str)
        .collect();
    if !named.is_empty() {
        log::info!("removed with group {name}: {}", named.join(", "));
    }
    if !done.outputs.is_empty() {
        log::info!(
            "removed the outputs of group {name}: {}",
            done.outputs.join(", ")
        );
    }
    log::info!(
        "removed group {name}; values of its sources that no other group names expire after ttl_days"
    );
    Ok(done)
}

/// " of group NAME", or " (every group)" for the top-level exclusions.
fn whose(group: &str) -> String {
    if group == DEFAULT_GROUP {
        " (top level: every group)".into()
    } else {
        format!(" of group {group}")
    }
}

fn joined(nets: &[(IpNet, bool)], want: bool) -> Vec<String> {
    nets.iter()
        .filter(|(_, b)| *b == want)
        .map(|(n, _)| n.to_string())
        .collect()
}

/// Adds exclusions to `group` (`default`: the top-level ones, for every group).
pub fn add_exclusions(paths: &Paths, group: &str, nets: &[IpNet]) -> Result<(), SourcesError> {
    let done = config::add_exclusions(&paths.config(), group, nets)?;
    let (new, again) = (joined(&done, true), joined(&done, false));
    if !new.is_empty() {
        log::info!("excluded {}{}", new.join(", "), whose(group));
    }
    if !again.is_empty() {
        log::info!("{} already excluded{}", again.join(", "), whose(group));
    }
    Ok(())
}

/// Removes exclusions from `group`: all or nothing (one that is not there is refused
/// and nothing changes).
pub fn remove_exclusions(paths: &Paths, group: &str, nets: &[IpNet]) -> Result<(), SourcesError> {
    let cfg = config::load(&paths.config())?.config;
    let had = if group == DEFAULT_GROUP {
        Some(&cfg.exclude)
    } else {
        cfg.group(group).map(|g| &g.exclude)
    };
    if let Some(n) = had.and_then(|h| nets.iter().find(|n| !h.contains(n))) {
        return Err(SourcesError::NotFound(format!(
            "{n} is not excluded{}",
            whose(group)
        )));
    }
    config::remove_exclusions(&paths.config(), group, nets)?;
    let list: Vec<String> = nets.iter().map(ToString::to_string).collect();
    log::info!("no longer excluded{}: {}", whose(group), list.join(", "));
    Ok(())
}
