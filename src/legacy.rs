//! Reading the earlier Python version's JSON storage (`data.json`, `fqdn_data.json`)
//! for the one-time import into SQLite (the import itself runs in `db`).
//!
//! Each file maps a source to `{"prefixes"|"ips": [...], "last_updated": "...",
//! "seen": {value: {"first_seen": .., "last_seen": ..}}}`; `seen` is optional and may
//! cover only some values.

use std::io;
use std::path::PathBuf;

use crate::config::Paths;
use crate::source::{normalize_value, Kind};
use crate::util::{
    self,
    json::{JsonError, Value},
};

/// One value to import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyRow {
    /// `asn` from `data.json`, `fqdn` from `fqdn_data.json`.
    pub kind: Kind,
    /// The normalised source.
    pub source: String,
    /// The normalised value.
    pub value: String,
    /// From `seen`, else the entry's `last_updated`, as written.
    pub first_seen: String,
    /// From `seen`, else the time of the import.
    pub last_seen: String,
}

/// Everything found in the legacy files of a data directory.
#[derive(Debug, Default)]
pub struct Batch {
    /// The values to import.
    pub rows: Vec<LegacyRow>,
    /// The files that were read (to be renamed after the import commits).
    pub files: Vec<PathBuf>,
}

/// A legacy file that could not be read; nothing is imported until it is fixed or
/// moved away.
#[derive(Debug, thiserror::Error)]
pub enum LegacyError {
    /// The file exists but could not be read.
    #[error("{}: {}", .path.display(), crate::util::io_reason(.source))]
    Read {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// The file is not JSON.
    #[error("{name}: invalid JSON at line {}, column {} ({}); the file is left as it is: fix or move it away", .source.line(), .source.column(), .source.message())]
    Syntax {
        /// The file.
        name: String,
        /// What the parser said.
        #[source]
        source: JsonError,
    },
    /// The file is larger than [`MAX_LEGACY_BYTES`].
    #[error("{}: larger than the limit of {MAX_LEGACY_BYTES} bytes for a legacy file; the file is left as it is: move it away or split it", .path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// The file is JSON but not an object.
    #[error("{name}: expected an object mapping sources to entries")]
    NotObject {
        /// The file.
        name: String,
    },
}

/// The largest legacy file imported: 16 MiB, about 150,000 values with their times.
/// Its parsed JSON takes many times the text in memory, so a larger file is refused
/// instead of exhausting a router's RAM.
pub const MAX_LEGACY_BYTES: u64 = 16 << 20;

/// Reads both legacy files of `paths.data_dir` (those that exist). `now` is the time
/// of the import, the `last_seen` of values without a `seen` entry.
pub fn read_all(paths: &Paths, now: i64) -> Result<Batch, LegacyError> {
    let mut batch = Batch::default();
    let now = util::iso(now);
    for kind in Kind::ALL {
        let Some(path) = paths.legacy(kind) else {
            continue;
        };
        let text = match util::read_text_capped(&path, MAX_LEGACY_BYTES) {
            Ok(Some(t)) => t,
            Ok(None) => return Err(LegacyError::TooLarge { path }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(source) => return Err(LegacyError::Read { path, source }),
        };
        let name = path.display().to_string();
        parse(kind, &text, &name, &now, &mut batch.rows)?;
        batch.files.push(path);
    }
    Ok(batch)
}

/// Parses one legacy file's text into rows. Bad entries and values are skipped with a
/// warning; a file that is not JSON or not an object is an error naming the place.
pub fn parse(
    kind: Kind,
    text: &str,
    name: &str,
    now: &str,
    out: &mut Vec<LegacyRow>,
) -> Result<(), LegacyError> {
    let mut doc = util::json::parse(text).map_err(|source| LegacyError::Syntax {
        name: name.to_string(),
        source,
    })?;
    // Sources in name order, the last of a repeated one kept (as serde_json's maps
    // had them), and `seen` searched by halves.
    doc.sort_keys();
    let Some(map) = doc.as_object() else {
        return Err(LegacyError::NotObject {
            name: name.to_string(),
        });
    };
    let list_key = match kind {
        Kind::Asn => "prefixes",
        Kind::Fqdn => "ips",
        // No legacy file holds these kinds.
        Kind::Feed | Kind::Country => return Ok(()),
    };
    for (key, entry) in map {
        let source = kind.normalize(key);
        let source = match source {
            Ok(s) => s,
            Err(e) => {
                log::warn!("{name}: entry skipped: {e}");
                continue;
            }
        };
        let Some(values) = entry.get(list_key).and_then(Value::as_array) else {
            log::warn!("{name}: {key}: no \"{list_key}\" list; entry skipped");
            continue;
        };
        let updated = entry
            .get("last_updated")
            .and_then(Value::as_str)
            .filter(|s| util::parse_iso(s).is_some());
        let seen = entry.get("seen").and_then(Value::as_object);
        for v in values {
            let Some(raw) = v.as_str() else {
                log::warn!("{name}: {key}: value {v} is not a string; skipped");
                continue;
            };
            let value = match normalize_value(kind, raw) {
                Ok(v) => v,
                Err(e) => {
                    log::warn!("{name}: {key}: {e}; skipped");
                    continue;
                }
            };
            let times = seen.and_then(|s| s.get(raw)).and_then(|t| {
                let first = t.get("first_seen")?.as_str()?;
                let last = t.get("last_seen")?.as_str()?;
                (util::parse_iso(first).is_some() && util::parse_iso(last).is_some())
                    .then(|| (first.to_string(), last.to_string()))
            });
            let (first_seen, last_seen) = match times {
                Some(t) => t,
                None => (updated.unwrap_or(now).to_string(), now.to_string()),
            };
            out.push(LegacyRow {
                kind,
                source: source.clone(),
                value,
                first_seen,
                last_seen,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_rows() {
        let mut rows = Vec::new();
        let now = "2026-11-30T00:00:00Z";
        parse(
            Kind::Asn,
            include_str!("../tests/fixtures/legacy/data.json"),
            "data.json",
            now,
            &mut rows,
        )
        .unwrap();
        parse(
            Kind::Fqdn,
            include_str!("../tests/fixtures/legacy/fqdn_data.json"),
            "fqdn_data.json",
            now,
            &mut rows,
        )
        .unwrap();
        assert_eq!(rows.len(), 10);
        let get = |v: &str| rows.iter().find(|r| r.value == v).unwrap();
        assert_eq!(get("1.1.1.0/24").first_seen, "2026-09-01T00:00:00");
        assert_eq!(get("1.1.1.0/24").last_seen, "2026-10-02T08:30:00");
        assert_eq!(
            get("2606:4700::/32").first_seen,
            "2026-10-02T08:30:00.123456"
        );
        assert_eq!(get("2606:4700::/32").last_seen, now);
        assert_eq!(get("149.154.167.99").first_seen, "2026-08-01T00:00:00");
        assert_eq!(get("93.184.216.34").source, "example.com");
        assert_eq!(get("93.184.216.34").kind, Kind::Fqdn);
    }

    #[test]
    fn bad_files_and_values() {
        let mut rows = Vec::new();
        let e = parse(Kind::Asn, "{\"1\": [", "data.json", "x", &mut rows).unwrap_err();
        assert!(
            e.to_string().contains("data.json: invalid JSON at line 1"),
            "{e}"
        );
        assert!(
            std::error::Error::source(&e).is_some(),
            "the parser's error is kept"
        );
        assert!(parse(Kind::Asn, "[]", "data.json", "x", &mut rows).is_err());
        let text = r#"{"ASX": {"prefixes": ["1.0.0.0/8"]}, "7": {"prefixes": ["bogus", 5, "10.1.2.3/8"], "last_updated": "junk"}, "8": 5}"#;
        parse(
            Kind::Asn,
            text,
            "data.json",
            "2026-01-01T00:00:00Z",
            &mut rows,
        )
        .unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].value, "10.0.0.0/8");
        assert_eq!(rows[0].first_seen, "2026-01-01T00:00:00Z");
    }
}
