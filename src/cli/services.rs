//! `service list|show|add|remove`: the catalog, and the services a group names.

use super::flags::Parsed;
use super::output::print;
use super::{CliError, Outcome, UsageError};
use crate::config::{self, Paths};
use crate::format::{ALL_GROUPS, DEFAULT_GROUP};
use crate::sources::services::{self, Listed};

/// What `service` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServiceAction {
    /// The catalog, one line per service; with `json` the bytes of `GET /services`.
    List {
        /// `--json`.
        json: bool,
    },
    /// One service with everything it brings.
    Show {
        /// Its name.
        name: String,
        /// `--json`: `GET /services`'s shape with this one entry.
        json: bool,
    },
    /// Name services in a group (all or nothing).
    Add {
        /// The names.
        names: Vec<String>,
        /// `--group` (default `default`).
        group: String,
    },
    /// Take a service out of a group.
    Remove {
        /// Its name.
        name: String,
        /// `--group` (default `default`).
        group: String,
        /// `--purge`.
        purge: bool,
    },
    /// Check the catalog's ASNs and feeds against RIPEstat and the vendors (`verify.rs`).
    Verify {
        /// The services checked (all when none is named).
        names: Vec<String>,
        /// `--json`.
        json: bool,
    },
}

/// Parses `service ...`.
pub(super) fn parse(rest: &[String], a: &Parsed) -> Result<ServiceAction, UsageError> {
    let group = match a.group.as_deref() {
        Some(ALL_GROUPS) => {
            return Err(UsageError(
                "`service`: --group names one group, not '*'".into(),
            ))
        }
        g => g.unwrap_or(DEFAULT_GROUP).to_string(),
    };
    let names = |v: &[String]| -> Result<Vec<String>, UsageError> {
        for n in v {
            crate::catalog::check_name(n).map_err(UsageError)?;
        }
        Ok(v.to_vec())
    };
    let action = match rest {
        [v] if v == "list" => ServiceAction::List { json: a.json },
        [v, n] if v == "show" => ServiceAction::Show {
            name: names(std::slice::from_ref(n))?.remove(0),
            json: a.json,
        },
        [v, n @ ..] if v == "add" && !n.is_empty() => ServiceAction::Add {
            names: names(n)?,
            group,
        },
        [v, n @ ..] if v == "verify" => ServiceAction::Verify {
            names: names(n)?,
            json: a.json,
        },
        [v, n] if v == "remove" => ServiceAction::Remove {
            name: names(std::slice::from_ref(n))?.remove(0),
            group,
            purge: a.purge,
        },
        [v, ..] if ["show", "add", "remove"].contains(&v.as_str()) => {
            let what = if v == "add" { "NAME..." } else { "one NAME" };
            return Err(UsageError(format!("`service {v}` needs {what}")));
        }
        [] => {
            return Err(UsageError(
                "`service` needs list, show NAME, add NAME..., remove NAME or verify [NAME...]"
                    .into(),
            ))
        }
        [v, ..] => {
            return Err(UsageError(format!(
                "unknown `service` action {v:?}: expected list, show, add, remove or verify"
            )))
        }
    };
    let listing = matches!(
        action,
        ServiceAction::List { .. } | ServiceAction::Show { .. } | ServiceAction::Verify { .. }
    );
    if a.json && !listing {
        return Err(UsageError(
            "--json goes with `service list`, `service show` and `service verify`".into(),
        ));
    }
    if a.group.is_some() && listing {
        return Err(UsageError(
            "--group goes with `service add` and `service remove`".into(),
        ));
    }
    if a.purge && !matches!(action, ServiceAction::Remove { .. }) {
        return Err(UsageError("--purge goes with `service remove`".into()));
    }
    Ok(action)
}

/// Runs `service ...`.
pub fn run(paths: &Paths, action: &ServiceAction) -> Result<Outcome, CliError> {
    match action {
        ServiceAction::List { json } => {
            let cfg = config::load_logged(&paths.config())?;
            let listed = Listed {
                config: &cfg,
                only: None,
            };
            if *json {
                return print(&crate::util::json::to_vec(&listed)).map(|()| Outcome::Success);
            }
            let mut out = String::new();
            for s in listed.services() {
                let groups = cfg.groups_of_service(&s.name);
                out.push_str(&format!(
                    "{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
                    s.name,
                    s.title,
                    s.asns.len(),
                    s.feeds.len(),
                    s.domains.len(),
                    s.reviewed,
                    if groups.is_empty() {
                        "-".to_string()
                    } else {
                        groups.join(",")
                    }
                ));
            }
            print(out.as_bytes())?;
        }
        ServiceAction::Show { name, json } => show(paths, name, *json)?,
        ServiceAction::Add { names, group } => {
            services::add(paths, group, names)?;
        }
        ServiceAction::Remove { name, group, purge } => {
            services::remove(paths, group, name, *purge)?;
        }
        ServiceAction::Verify { names, json } => return super::verify::run(paths, names, *json),
    }
    Ok(Outcome::Success)
}

/// `service show NAME`: every field, one per line (lists joined by spaces).
fn show(paths: &Paths, name: &str, json: bool) -> Result<(), CliError> {
    let cfg = config::load_logged(&paths.config())?;
    let Some(s) = cfg.catalog.get(name) else {
        return Err(CliError::Usage(cfg.catalog.unknown(name)));
    };
    if json {
        let listed = Listed {
            config: &cfg,
            only: Some(s),
        };
        return print(&crate::util::json::to_vec(&listed));
    }
    let asns: Vec<String> = s
        .asns
        .iter()
        .map(|a| format!("AS{} ({})", a.asn, a.holder))
        .collect();
    let groups = cfg.groups_of_service(name);
    let lines = [
        ("name", s.name.clone()),
        ("title", s.title.clone()),
        ("about", s.about.clone().unwrap_or_default()),
        ("asns", asns.join(", ")),
        ("feeds", s.feeds.join(" ")),
        ("domains", s.domains.join(" ")),
        ("sources", s.sources.join(" ")),
        ("reviewed", s.reviewed.clone()),
        ("groups", groups.join(", ")),
    ];
    let out: String = lines
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}:\t{v}\n"))
        .collect();
    print(out.as_bytes())
}
