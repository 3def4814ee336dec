//! The validators of each feed's last answer (`ETag`, `Last-Modified`), kept in
//! `feed_validators.json` beside the database so that the next request is
//! conditional. A file, not a table: they are a cache (losing them costs one full
//! download), they change with every run, and a schema change for them would need a
//! migration. They are used only for feeds whose values are stored, so a purged or
//! new database never takes a 304 for data it does not hold; and they are written
//! only after the values they describe were committed.

use crate::util::map::SortedMap;
use std::path::PathBuf;

use super::Validators;
use crate::config::Paths;
use crate::db::{self, StoreError, Values};
use crate::source::Kind;
use crate::util::json::{self, member, ToJson, Value, Writer};

/// Largest file read: a few hundred bytes per feed.
const MAX_FILE: u64 = 1 << 20;

fn path(paths: &Paths) -> PathBuf {
    paths.data_dir.join("feed_validators.json")
}

/// `{"<url>": {"etag": "...", "last_modified": "..."}}`, each key only when given.
impl ToJson for Validators {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.begin_object();
        if let Some(e) = &self.etag {
            w.field("etag", e);
        }
        if let Some(l) = &self.last_modified {
            w.field("last_modified", l);
        }
        w.end_object();
    }
}

fn from_json(v: &Value) -> Result<SortedMap<String, Validators>, String> {
    let o = v
        .as_object()
        .ok_or_else(|| format!("expected an object, got {v}"))?;
    let mut out = SortedMap::new();
    for (url, entry) in o {
        let e = entry
            .as_object()
            .ok_or_else(|| format!("{url}: expected an object, got {entry}"))?;
        let field = |k: &str| e.get(k).map_or(Ok(None), |v| member::opt_string(k, v));
        let validators = Validators {
            etag: field("etag")?,
            last_modified: field("last_modified")?,
        };
        out.insert(url.clone(), validators);
    }
    Ok(out)
}

fn read(paths: &Paths) -> SortedMap<String, Validators> {
    let parsed = match crate::util::read_text_capped(&path(paths), MAX_FILE) {
        Ok(Some(text)) => json::parse(text).map_err(|e| e.to_string()),
        _ => return SortedMap::new(),
    };
    parsed.and_then(|v| from_json(&v)).unwrap_or_else(|e| {
        log::warn!("{}: {e}; feeds are fetched in full", path(paths).display());
        SortedMap::new()
    })
}

/// The validators to send: those of feeds among `wanted` whose values are stored.
pub(crate) fn load(
    paths: &Paths,
    wanted: &[&str],
) -> Result<SortedMap<String, Validators>, StoreError> {
    if wanted.is_empty() {
        return Ok(SortedMap::new());
    }
    // Sorted for binary search (the same map type as the file's: no hash table code).
    let mut stored: Vec<String> = db::open(paths)?
        .sources(Kind::Feed)?
        .into_iter()
        .map(|s| s.source)
        .collect();
    crate::util::sort::sort(&mut stored);
    Ok(read(paths)
        .into_iter()
        .filter(|(url, _)| stored.binary_search(url).is_ok() && wanted.contains(&url.as_str()))
        .collect())
}

/// The stored values of a source whose upstream has not changed (a feed that
/// answered 304), merged again as seen now.
pub(crate) fn stored_values(db: &db::Db, kind: Kind, source: &str) -> Result<Values, StoreError> {
    let mut values = Values::new();
    for r in db.rows(kind, source)? {
        values.push(&r.value);
    }
    Ok(values)
}

/// Records the validators of the feeds stored by a run (`None`: the answer had
/// none) and forgets those of feeds no longer configured.
pub(crate) fn save(
    paths: &Paths,
    updates: Vec<(String, Option<Validators>)>,
    configured: &[String],
) {
    if updates.is_empty() {
        return;
    }
    let mut all = read(paths);
    for (url, v) in updates {
        match v {
            Some(v) => all.insert(url, v),
            None => all.remove(&url),
        };
    }
    all.retain(|url, _| configured.contains(url));
    let text = json::to_vec_pretty(&all);
    if let Err(e) = crate::util::write_atomic(&path(paths), &text) {
        log::warn!("{}: {e}", path(paths).display());
    }
}
