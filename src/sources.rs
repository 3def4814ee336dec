//! Adding, removing and purging sources: the one implementation behind the `asn` and
//! `fqdn` commands and the API's `/asns` and `/fqdns`, so both give the same outcome
//! for the same request.

use crate::config::{self, ConfigError, Paths};

mod confirm;
pub mod groups;
use crate::db::{self, StoreError};
use crate::source::{self, Kind};

pub mod listed;
pub mod route;
pub mod services;

pub use confirm::{confirm, parse_any};

/// Why a change to the sources failed.
#[derive(Debug, thiserror::Error)]
pub enum SourcesError {
    /// `config.json` could not be read, validated or written.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The database failed (on `purge`).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The source is neither configured nor (for a purge) stored; the text names it.
    #[error("{0}")]
    NotFound(String),
}

/// " in group NAME" for a group other than `default`, for messages.
fn in_group(group: &str) -> String {
    if group == crate::format::DEFAULT_GROUP {
        String::new()
    } else {
        format!(" in group {group}")
    }
}

/// What [`add`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added {
    /// The source, normalised (`62041`, `example.com`).
    pub source: String,
    /// False when it was configured already.
    pub added: bool,
}

/// What [`remove`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    /// The source, normalised.
    pub source: String,
    /// Whether it was configured (and now is not).
    pub removed: bool,
    /// With `purge`: how many stored values were deleted now.
    pub purged: Option<usize>,
}

/// Adds an already normalised (or at least valid) source to the configuration,
/// creating `config.json` when needed. A running daemon notices within seconds.
pub fn add(paths: &Paths, kind: Kind, group: &str, source: &str) -> Result<Added, SourcesError> {
    let mut v = add_many(paths, kind, group, &[source.to_string()])?;
    Ok(v.remove(0))
}

/// Adds several sources to a group in one rewrite of `config.json`: all or nothing.
pub fn add_many(
    paths: &Paths,
    kind: Kind,
    group: &str,
    sources: &[String],
) -> Result<Vec<Added>, SourcesError> {
    let done = config::add_sources(&paths.config(), kind, group, sources)?;
    let to = in_group(group);
    let names = |new: bool| -> Vec<String> {
        done.iter()
            .filter(|(_, n)| *n == new)
            .map(|(s, _)| source::display(kind, s))
            .collect()
    };
    let (added, again) = (names(true), names(false));
    if !added.is_empty() {
        log::info!(
            "added {}{to}; a running daemon collects {} within seconds",
            added.join(", "),
            if added.len() == 1 { "it" } else { "them" }
        );
    }
    if !again.is_empty() {
        let verb = if again.len() == 1 { "is" } else { "are" };
        log::info!("{} {verb} already configured{to}", again.join(", "));
    }
    Ok(done
        .into_iter()
        .map(|(source, added)| Added { source, added })
        .collect())
}

/// Takes a source out of the configuration; its values then age out by the TTL. With
/// `purge` they are deleted now, which also works for a source that is no longer
/// configured but still has stored values (e.g. one imported from the legacy files).
///
/// [`SourcesError::NotFound`] when there was nothing to do: the source is not
/// configured and, for a purge, has no stored values.
pub fn remove(
    paths: &Paths,
    kind: Kind,
    group: &str,
    source: &str,
    purge: bool,
) -> Result<Removed, SourcesError> {
    let mut v = remove_many(paths, kind, group, &[source.to_string()], purge)?;
    Ok(v.remove(0))
}

/// Refuses, before anything changes, a source that [`remove_many`] would find nothing
/// to do for: not in the group and, for a purge, not stored either.
fn check_removable(
    paths: &Paths,
    kind: Kind,
    group: &str,
    sources: &[String],
    purge: bool,
) -> Result<(), SourcesError> {
    let cfg = config::load(&paths.config())?.config;
    // An unknown group: the rewrite names it (and changes nothing).
    let Some(g) = cfg.group(group) else {
        return Ok(());
    };
    let mut stored = None;
    for s in sources {
        let norm = kind.normalize(s).map_err(|message| ConfigError::Invalid {
            path: paths.config(),
            key: kind.key().into(),
            message,
        })?;
        if g.names_own(kind, &norm) {
            continue;
        }
        let shown = format!("{}{}", source::display(kind, &norm), in_group(group));
        if g.has(kind, &norm) {
            return Err(SourcesError::NotFound(format!(
                "{shown} is brought by service {}, not named by hand: `service remove` takes it out",
                cfg.services_of(kind, &norm).join(", ")
            )));
        }
        if !purge {
            return Err(SourcesError::NotFound(format!(
                "{shown} is not configured (stored values of an unconfigured source \
                 expire by ttl_days; --purge or ?purge=true deletes them now)"
            )));
        }
        if stored.is_none() {
            stored = Some(db::open(paths)?.sources(kind)?);
        }
        let list = stored.as_deref().unwrap_or_default();
        if list
            .binary_search_by(|x| x.source.as_str().cmp(&norm))
            .is_err()
        {
            return Err(SourcesError::NotFound(format!(
                "{shown} is neither configured nor stored"
            )));
        }
    }
    Ok(())
}

/// Removes several sources from a group: all or nothing (a source with nothing to
/// remove is refused before anything changes), one rewrite of `config.json`, then
/// the purges.
pub fn remove_many(
    paths: &Paths,
    kind: Kind,
    group: &str,
    sources: &[String],
    purge: bool,
) -> Result<Vec<Removed>, SourcesError> {
    check_removable(paths, kind, group, sources, purge)?;
    let done = config::remove_sources(&paths.config(), kind, group, sources)?;
    let cfg = config::load(&paths.config()).map(|l| l.config);
    let mut db = None;
    let mut out = Vec::with_capacity(done.len());
    for (source, removed) in done {
        let shown = source::display(kind, &source);
        // Another group that still names the source still lists its values: keep them.
        let still = cfg
            .as_ref()
            .map(|c| c.groups_of(kind, &source).join(", "))
            .unwrap_or_default();
        let purged = if purge && !still.is_empty() {
            log::warn!("{shown} is still in group {still}: its stored values are kept");
            None
        } else if purge {
            if db.is_none() {
                let mut d = db::open(paths)?;
                // The purge is recorded in `changes`, pruned to the configured history.
                let history = cfg
                    .as_ref()
                    .map_or(config::DEFAULT_HISTORY_DAYS, |c| c.history_days);
                d.set_history_days(history);
                db = Some(d);
            }
            Some(
                db.as_mut()
                    .expect("opened above")
                    .purge_source(kind, &source)?,
            )
        } else {
            None
        };
        let shown = format!("{shown}{}", in_group(group));
        match (removed, purged) {
            (false, None) => {
                return Err(SourcesError::NotFound(format!(
                    "{shown} is not configured (stored values of an unconfigured source \
                     expire by ttl_days; --purge or ?purge=true deletes them now)"
                )))
            }
            (false, Some(0)) => {
                return Err(SourcesError::NotFound(format!(
                    "{shown} is neither configured nor stored"
                )))
            }
            (false, Some(n)) => {
                log::info!(
                    "{shown} was not configured; deleted its {n} stored {}",
                    values(n)
                )
            }
            (true, Some(n)) => {
                log::info!("removed {shown} and deleted its {n} stored {}", values(n))
            }
            (true, None) => log::info!("removed {shown}; its values expire after ttl_days"),
        }
        out.push(Removed {
            source,
            removed,
            purged,
        });
    }
    Ok(out)
}

use crate::util::values;

#[cfg(test)]
mod tests {
    use super::*;

    fn paths() -> (tempfile::TempDir, Paths) {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path(), None);
        (dir, paths)
    }

    #[test]
    fn add_then_add_again() {
        let (_d, p) = paths();
        assert!(add(&p, Kind::Asn, "default", "AS62041").unwrap().added);
        let again = add(&p, Kind::Asn, "default", "62041").unwrap();
        assert_eq!((again.source.as_str(), again.added), ("62041", false));
    }

    #[test]
    fn remove_unknown_is_not_found_with_or_without_purge() {
        let (_d, p) = paths();
        for purge in [false, true] {
            let e = remove(&p, Kind::Asn, "default", "999", purge).unwrap_err();
            assert!(
                matches!(&e, SourcesError::NotFound(m) if m.contains("AS999")),
                "{e}"
            );
        }
    }

    #[test]
    fn purge_of_unconfigured_stored_source_deletes_it() {
        let (_d, p) = paths();
        let mut db = db::open(&p).unwrap();
        db.merge_source(Kind::Asn, "7", &["10.0.0.0/8".to_string()], 1_000, 7)
            .unwrap();
        let r = remove(&p, Kind::Asn, "default", "7", true).unwrap();
        assert_eq!((r.removed, r.purged), (false, Some(1)));
        assert!(matches!(
            remove(&p, Kind::Asn, "default", "7", true),
            Err(SourcesError::NotFound(_))
        ));
    }

    #[test]
    fn remove_configured_keeps_values_unless_purged() {
        let (_d, p) = paths();
        add(&p, Kind::Fqdn, "default", "example.com").unwrap();
        let r = remove(&p, Kind::Fqdn, "default", "Example.COM.", false).unwrap();
        assert_eq!(
            (r.source.as_str(), r.removed, r.purged),
            ("example.com", true, None)
        );
    }
}
