//! Adding, removing and purging sources: the one implementation behind the `asn` and
//! `fqdn` commands and the API's `/asns` and `/fqdns`, so both give the same outcome
//! for the same request.

use crate::config::{self, ConfigError, Paths};
use crate::db::{self, StoreError};
use crate::source::{self, Kind};

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
    let (source, added) = config::add_source(&paths.config(), kind, group, source)?;
    let shown = source::display(kind, &source);
    let to = in_group(group);
    if added {
        log::info!("added {shown}{to}; a running daemon collects it within seconds");
    } else {
        log::info!("{shown} is already configured{to}");
    }
    Ok(Added { source, added })
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
    let (source, removed) = config::remove_source(&paths.config(), kind, group, source)?;
    let shown = source::display(kind, &source);
    let cfg = config::load(&paths.config()).map(|l| l.config);
    // Another group that still names the source still lists its values: keep them.
    let still = cfg
        .as_ref()
        .map(|c| c.groups_of(kind, &source).join(", "))
        .unwrap_or_default();
    let purged = if purge && !still.is_empty() {
        log::warn!("{shown} is still in group {still}: its stored values are kept");
        None
    } else if purge {
        let mut db = db::open(paths)?;
        // The purge is recorded in `changes`, pruned to the configured history.
        let history = cfg.map_or(config::DEFAULT_HISTORY_DAYS, |c| c.history_days);
        db.set_history_days(history);
        Some(db.purge_source(kind, &source)?)
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
        (false, Some(n)) => log::info!("{shown} was not configured; deleted its {n} stored values"),
        (true, Some(n)) => log::info!("removed {shown} and deleted its {n} stored values"),
        (true, None) => log::info!("removed {shown}; its values expire after ttl_days"),
    }
    Ok(Removed {
        source,
        removed,
        purged,
    })
}

/// The kind and normalised name of a source written as the CLI and the API take it
/// for `confirm`: `AS62041` or `62041`, a feed URL, a country code, a host name.
pub fn parse_any(text: &str) -> Result<(Kind, String), String> {
    let t = text.trim();
    if t.contains("://") {
        return source::normalize_feed(t).map(|s| (Kind::Feed, s));
    }
    if let Ok(a) = source::normalize_asn(t) {
        return Ok((Kind::Asn, a));
    }
    if t.len() == 2 {
        return source::normalize_country(t).map(|s| (Kind::Country, s));
    }
    source::normalize_fqdn(t)
        .map(|s| (Kind::Fqdn, s))
        .map_err(|_| format!("{text:?} is not an ASN, feed URL, country code or host name"))
}

/// Applies the held answer of a source by hand (`confirm`, `POST /confirm`): the
/// values it lacked age out from now on. `NotFound` when it is not held.
pub fn confirm(paths: &Paths, kind: Kind, source: &str) -> Result<db::trust::Merged, SourcesError> {
    let ttl = config::load(&paths.config())?.config.ttl_days;
    let mut db = db::open(paths)?;
    let tx = db.write()?;
    let shown = source::display(kind, source);
    let Some(m) = tx.confirm_held(kind, source, crate::util::unix_now(), ttl)? else {
        return Err(SourcesError::NotFound(format!("{shown} is not held")));
    };
    tx.commit()?;
    log::info!(
        "{shown}: held answer of {} values applied by hand; {} values expired now",
        m.fetch.answer,
        m.stats.removed
    );
    Ok(m)
}

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
