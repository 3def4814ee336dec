//! `service add|remove|list` and `/services`: catalog services named by groups, one
//! implementation for the CLI and the API.

use crate::catalog::Service;
use crate::config::{self, Config, Paths};
use crate::db;
use crate::util::json::{ToJson, Writer};

use super::{in_group, SourcesError};

/// Adds services to a group: all or nothing. Returns each name and whether it was new.
pub fn add(
    paths: &Paths,
    group: &str,
    names: &[String],
) -> Result<Vec<(String, bool)>, SourcesError> {
    let done = config::add_services(&paths.config(), group, names)?;
    let to = in_group(group);
    for (name, new) in &done {
        match new {
            true => {
                log::info!("added service {name}{to}; a running daemon collects it within seconds")
            }
            false => log::info!("service {name} is already configured{to}"),
        }
    }
    Ok(done)
}

/// What [`remove`] did: with `purge`, the sources deleted and their values' count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceRemoved {
    /// The sources whose stored values were deleted (`AS62041`, `t.me`, URLs).
    pub purged: Vec<String>,
    /// How many stored values that was.
    pub values: usize,
}

/// Takes a service out of a group. With `purge`, the stored values of each source it
/// brought that nothing names any more (no group by hand, no other service) are
/// deleted now; the others are kept.
pub fn remove(
    paths: &Paths,
    group: &str,
    name: &str,
    purge: bool,
) -> Result<ServiceRemoved, SourcesError> {
    let shown = format!("service {name}{}", in_group(group));
    if !config::remove_service(&paths.config(), group, name)? {
        return Err(SourcesError::NotFound(format!("{shown} is not configured")));
    }
    let mut out = ServiceRemoved::default();
    if !purge {
        log::info!("removed {shown}; the values of what it brought expire after ttl_days");
        return Ok(out);
    }
    let cfg = config::load(&paths.config())?.config;
    let Some(service) = cfg.catalog.get(name) else {
        return Ok(out);
    };
    let mut d = db::open(paths)?;
    d.set_history_days(cfg.history_days);
    for (kind, source) in service.brings() {
        if cfg.sources(kind).iter().any(|s| s == source) {
            continue;
        }
        out.values += d.purge_source(kind, source)?;
        out.purged.push(crate::source::display(kind, source));
    }
    log::info!(
        "removed {shown} and deleted {} stored {} of {} source(s) nothing else names",
        out.values,
        crate::util::values(out.values),
        out.purged.len()
    );
    Ok(out)
}

/// The catalog with the groups that name each service: `GET /services` and
/// `service list --json` / `service show --json` (one entry) write it.
pub struct Listed<'a> {
    /// The configuration (its catalog and groups).
    pub config: &'a Config,
    /// One service only (`service show`), else all.
    pub only: Option<&'a Service>,
}

impl Listed<'_> {
    /// The services listed.
    pub fn services(&self) -> Vec<&Service> {
        match self.only {
            Some(s) => vec![s],
            None => self.config.catalog.services.iter().collect(),
        }
    }
}

impl ToJson for Listed<'_> {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.begin_object();
        w.key("services");
        w.begin_array();
        for s in self.services() {
            w.begin_object();
            s.write_fields(w);
            w.field("groups", &self.config.groups_of_service(&s.name));
            w.end_object();
        }
        w.end_array();
        w.end_object();
    }
}
