//! `confirm SOURCE` and `POST /confirm`: a held answer applied by hand (see
//! `db::trust`).

use super::SourcesError;
use crate::config::{self, Paths};
use crate::db;
use crate::source::{self, Kind};

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

/// Applies the held answer of a source by hand: the values it lacked age out from
/// now on. `NotFound` when it is not held.
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
