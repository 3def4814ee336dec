//! `group list|add|remove` and `exclude list|add|remove`: the groups and exclusions of
//! `config.json`, edited as the source commands edit their lists.

use ipnet::IpNet;

use super::flags::Parsed;
use super::output::print;
use super::{CliError, Outcome, UsageError};
use crate::config::{self, Mark, Paths};
use crate::format::{ALL_GROUPS, DEFAULT_GROUP};
use crate::source::Kind;
use crate::sources::{self, groups::mark_text, route::Via};

/// What `group` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupAction {
    /// One line per group; with `json` the bytes of `GET /groups`.
    List {
        /// `--json`.
        json: bool,
    },
    /// The routed groups, one line each, for the OpenWrt init script's netifd
    /// sections: `NAME MARK/MASK TABLE VIA [GATEWAY]`.
    Routes,
    /// Add a group, or set the mark of one.
    Add {
        /// Its name.
        name: String,
        /// `--mark`.
        mark: Option<Mark>,
        /// `--via`: the interface it is routed via.
        via: Option<String>,
    },
    /// Take a group's route away (its mark and sets stay).
    Unroute {
        /// Its name.
        name: String,
    },
    /// Remove a group.
    Remove {
        /// Its name.
        name: String,
        /// `--force`: its sources and services go too.
        force: bool,
    },
}

/// What `exclude` does, to the top-level list (`default`) or a group's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExcludeAction {
    /// One prefix per line.
    List(String),
    /// Add these (all or nothing).
    Add(String, Vec<IpNet>),
    /// Remove these (all or nothing).
    Remove(String, Vec<IpNet>),
}

/// A group name from the command line: the form of a group, not `default` or `*`.
fn group_name(cmd: &str, name: &str) -> Result<String, UsageError> {
    if name == DEFAULT_GROUP || name == ALL_GROUPS {
        return Err(UsageError(format!(
            "`{cmd}`: {name:?} is not a group that can be added or removed"
        )));
    }
    crate::format::check_group_name(name).map_err(|e| UsageError(format!("`{cmd}`: {}", e.0)))?;
    Ok(name.to_string())
}

/// Parses `group ...`.
pub(super) fn parse_group(rest: &[String], a: &Parsed) -> Result<GroupAction, UsageError> {
    let action = match rest {
        [v] if v == "list" => GroupAction::List { json: a.json },
        [v] if v == "routes" => GroupAction::Routes,
        [v, n] if v == "add" => GroupAction::Add {
            name: group_name("group add", n)?,
            mark: a.mark,
            via: a.options.via.clone(),
        },
        [v, n] if v == "unroute" => GroupAction::Unroute {
            name: group_name("group unroute", n)?,
        },
        [v, n] if v == "remove" => GroupAction::Remove {
            name: group_name("group remove", n)?,
            force: a.force,
        },
        [v, _, extra, ..] if v == "add" || v == "remove" || v == "unroute" => {
            return Err(UsageError(format!(
                "unexpected argument {extra:?} after `group {v}`: one group at a time"
            )))
        }
        [v] if v == "add" || v == "remove" || v == "unroute" => {
            return Err(UsageError(format!("`group {v}` needs the group's NAME")))
        }
        [] => {
            return Err(UsageError(
                "`group` needs list, add NAME, unroute NAME or remove NAME".into(),
            ))
        }
        [v, ..] => {
            return Err(UsageError(format!(
                "unknown `group` action {v:?}: expected list, routes, add, unroute or remove"
            )))
        }
    };
    if a.mark.is_some() && !matches!(action, GroupAction::Add { .. }) {
        return Err(UsageError("--mark goes with `group add`".into()));
    }
    if a.options.via.is_some() && !matches!(action, GroupAction::Add { .. }) {
        return Err(UsageError("--via goes with `group add`".into()));
    }
    if let Some(via) = &a.options.via {
        config::check_via(via).map_err(|e| UsageError(format!("--via: {e}")))?;
    }
    if a.force && !matches!(action, GroupAction::Remove { .. }) {
        return Err(UsageError("--force goes with `group remove`".into()));
    }
    if a.json && !matches!(action, GroupAction::List { .. }) {
        return Err(UsageError("--json goes with `group list`".into()));
    }
    Ok(action)
}

/// Parses `exclude ...`; every prefix is checked before anything changes.
pub(super) fn parse_exclude(rest: &[String], a: &Parsed) -> Result<ExcludeAction, UsageError> {
    let group = match a.group.as_deref() {
        Some(ALL_GROUPS) => {
            return Err(UsageError(
                "`exclude`: --group names one group (without it: the top-level exclusions, \
                 which apply to every group)"
                    .into(),
            ))
        }
        g => g.unwrap_or(DEFAULT_GROUP).to_string(),
    };
    let nets = |values: &[String]| -> Result<Vec<IpNet>, UsageError> {
        if values.is_empty() {
            return Err(UsageError(
                "`exclude` needs the PREFIX to add or remove".into(),
            ));
        }
        values
            .iter()
            .map(|v| config::parse_exclusion(v).map_err(UsageError))
            .collect()
    };
    match rest {
        [v] if v == "list" => Ok(ExcludeAction::List(group)),
        [v, values @ ..] if v == "add" => Ok(ExcludeAction::Add(group, nets(values)?)),
        [v, values @ ..] if v == "remove" => Ok(ExcludeAction::Remove(group, nets(values)?)),
        [] => Err(UsageError(
            "`exclude` needs list, add PREFIX or remove PREFIX".into(),
        )),
        [v, ..] => Err(UsageError(format!(
            "unknown `exclude` action {v:?}: expected list, add or remove"
        ))),
    }
}

/// Runs `group ...`.
pub fn group(paths: &Paths, action: &GroupAction) -> Result<Outcome, CliError> {
    match action {
        GroupAction::List { json } => {
            let cfg = config::load_logged(&paths.config())?;
            if *json {
                return print(&sources::listed::groups_json(&cfg)).map(|()| Outcome::Success);
            }
            let mut out = String::new();
            for g in &cfg.groups {
                let n: usize = Kind::ALL.iter().map(|k| g.sources(*k).len()).sum();
                let mark = g.mark.map_or_else(|| "-".to_string(), mark_text);
                let excluded = cfg.exclusions(&g.name).len();
                out.push_str(&format!("{}\t{mark}\t{n}\t{excluded}\n", g.name));
            }
            print(out.as_bytes())?;
        }
        GroupAction::Routes => {
            let out = super::group_route::lines(paths)?;
            print(out.as_bytes())?;
        }
        GroupAction::Add { name, mark, via } => {
            let via = via.as_deref().map_or(Via::Keep, Via::Set);
            super::group_route::add(paths, name, *mark, via)?
        }
        GroupAction::Unroute { name } => super::group_route::add(paths, name, None, Via::Clear)?,
        GroupAction::Remove { name, force } => super::group_route::remove(paths, name, *force)?,
    }
    Ok(Outcome::Success)
}

/// Runs `exclude ...`.
pub fn exclude(paths: &Paths, action: &ExcludeAction) -> Result<Outcome, CliError> {
    match action {
        ExcludeAction::List(group) => {
            let cfg = config::load_logged(&paths.config())?;
            let list = if group == DEFAULT_GROUP {
                &cfg.exclude
            } else {
                match cfg.group(group) {
                    Some(g) => &g.exclude,
                    None => {
                        let e = cfg.check_group(group).err().map(|e| e.to_string());
                        return Err(CliError::Usage(format!(
                            "--group: {}",
                            e.unwrap_or_default()
                        )));
                    }
                }
            };
            let out: String = list.iter().map(|n| format!("{n}\n")).collect();
            print(out.as_bytes())?;
        }
        ExcludeAction::Add(group, nets) => sources::groups::add_exclusions(paths, group, nets)?,
        ExcludeAction::Remove(group, nets) => {
            sources::groups::remove_exclusions(paths, group, nets)?
        }
    }
    Ok(Outcome::Success)
}
