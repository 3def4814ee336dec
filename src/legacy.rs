//! Reading the earlier Python version's JSON storage (`data.json`, `fqdn_data.json`)
//! for the one-time import into SQLite (the import itself runs in `db`).
//!
//! Each file maps a source to `{"prefixes"|"ips": [...], "last_updated": "...",
//! "seen": {value: {"first_seen": .., "last_seen": ..}}}`; `seen` is optional and may
//! cover only some values. The file is read as it streams and handed on item by
//! item, so memory does not grow with the file (the whole document as a tree took
//! 313 MB for a 16 MiB file).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::source::{normalize_value, Kind};
use crate::util::{
    self,
    json::scan::{Next, ScanError, Scanner},
};

/// What a legacy file holds, in file order. The members of an entry may come in any
/// order, so the times of its values are known only at its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Item<'a> {
    /// A value of the current entry's list, as written and normalised.
    Value { raw: &'a str, value: &'a str },
    /// A `seen` member of the current entry whose two times are valid.
    Seen {
        raw: &'a str,
        first: &'a str,
        last: &'a str,
    },
    /// The end of an entry (an object): its normalised source and valid
    /// `last_updated`. The values and `seen` members since the previous end are its.
    End {
        source: &'a str,
        updated: Option<&'a str>,
    },
}

/// Where the items go; an error stops the reading (and rides back in
/// [`LegacyError::Read`]).
pub(crate) type Sink<'s> = dyn FnMut(Item<'_>) -> io::Result<()> + 's;

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
    /// The file is not JSON, or not an object.
    #[error("{name}: {message}; the file is left as it is: fix or move it away")]
    Syntax {
        /// The file.
        name: String,
        /// What is wrong, and where.
        message: String,
    },
    /// The file is larger than [`MAX_LEGACY_BYTES`].
    #[error("{}: larger than the limit of {MAX_LEGACY_BYTES} bytes for a legacy file; the file is left as it is: move it away or split it", .path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
}

/// The largest legacy file imported: 16 MiB, about a million values. The import is
/// one transaction that holds the database's write lock, so its time is bounded.
pub const MAX_LEGACY_BYTES: u64 = 16 << 20;

/// Reads the legacy file `path` of `kind` into `sink`: `false` when there is none.
pub(crate) fn read_file(kind: Kind, path: &Path, sink: &mut Sink<'_>) -> Result<bool, LegacyError> {
    let failed = |source| LegacyError::Read {
        path: path.to_path_buf(),
        source,
    };
    let f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(failed(e)),
    };
    if f.metadata().map_err(failed)?.len() > MAX_LEGACY_BYTES {
        return Err(LegacyError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    let name = path.display().to_string();
    read(kind, &mut f.take(MAX_LEGACY_BYTES), &name, sink).map_err(|e| match e {
        ScanError::Failed(e) => failed(e),
        ScanError::Syntax(m, at) => syntax(&name, format!("invalid JSON ({m} at byte {at})")),
        ScanError::Shape(m) => syntax(&name, m),
    })?;
    Ok(true)
}

fn syntax(name: &str, message: String) -> LegacyError {
    LegacyError::Syntax {
        name: name.to_string(),
        message,
    }
}

/// Reads one legacy file's text into `sink`. Bad entries and values are skipped with
/// a warning naming `name`.
pub(crate) fn read(kind: Kind, src: &mut dyn Read, name: &str, sink: &mut Sink<'_>) -> Scan<()> {
    let list = match kind {
        Kind::Asn => "prefixes",
        Kind::Fqdn => "ips",
        // No legacy file holds these kinds.
        Kind::Feed | Kind::Country => return Ok(()),
    };
    let mut sc = Scanner::new(src);
    if sc.peek()? != Next::Object {
        return Err(ScanError::Shape(
            "expected an object mapping sources to entries".into(),
        ));
    }
    sc.begin_object()?;
    let mut key = String::new();
    while let Some(k) = sc.next_key()? {
        key.clear();
        key.push_str(k);
        let at = Entry {
            kind,
            list,
            name,
            key: &key,
        };
        at.read(&mut sc, sink)?;
    }
    sc.end()
}

/// The entry being read, for its warnings.
struct Entry<'a> {
    kind: Kind,
    list: &'a str,
    name: &'a str,
    key: &'a str,
}

type Scan<T> = Result<T, ScanError>;

impl Entry<'_> {
    fn read(&self, sc: &mut Scanner, sink: &mut Sink<'_>) -> Scan<()> {
        let (name, key, list) = (self.name, self.key, self.list);
        let source = match self.kind.normalize(key) {
            Ok(s) => s,
            Err(e) => {
                log::warn!("{name}: entry skipped: {e}");
                return sc.skip();
            }
        };
        let (mut listed, mut updated) = (false, None);
        if sc.peek()? == Next::Object {
            sc.begin_object()?;
            while let Some(k) = sc.next_key()? {
                // The key borrows the scanner: only which one it is is kept.
                let which = [list, "last_updated", "seen"].iter().position(|w| *w == k);
                match (which, sc.peek()?) {
                    (Some(0), Next::Array) => {
                        listed = true;
                        self.values(sc, sink)?;
                    }
                    (Some(1), _) => updated = time(sc)?,
                    (Some(2), Next::Object) => seen(sc, sink)?,
                    _ => sc.skip()?,
                }
            }
        } else {
            sc.skip()?;
        }
        if !listed {
            log::warn!("{name}: {key}: no \"{list}\" list; entry skipped");
        }
        let updated = updated.as_deref();
        sink(Item::End {
            source: &source,
            updated,
        })
        .map_err(ScanError::Failed)
    }

    fn values(&self, sc: &mut Scanner, sink: &mut Sink<'_>) -> Scan<()> {
        let (name, key) = (self.name, self.key);
        sc.begin_array()?;
        while sc.next_item()? {
            let Some(raw) = string(sc)? else {
                log::warn!("{name}: {key}: a value that is not a short string; skipped");
                continue;
            };
            match normalize_value(self.kind, raw) {
                Ok(value) => sink(Item::Value { raw, value: &value }).map_err(ScanError::Failed)?,
                Err(e) => log::warn!("{name}: {key}: {e}; skipped"),
            }
        }
        Ok(())
    }
}

/// A `seen` object: each member whose two times are valid goes to `sink`.
fn seen(sc: &mut Scanner, sink: &mut Sink<'_>) -> Scan<()> {
    sc.begin_object()?;
    let mut raw = String::new();
    while let Some(k) = sc.next_key()? {
        raw.clear();
        raw.push_str(k);
        let (mut first, mut last) = (None, None);
        if sc.peek()? == Next::Object {
            sc.begin_object()?;
            while let Some(t) = sc.next_key()? {
                match t {
                    "first_seen" => first = time(sc)?,
                    "last_seen" => last = time(sc)?,
                    _ => sc.skip()?,
                }
            }
        } else {
            sc.skip()?;
        }
        if let (Some(first), Some(last)) = (&first, &last) {
            sink(Item::Seen {
                raw: &raw,
                first,
                last,
            })
            .map_err(ScanError::Failed)?;
        }
    }
    Ok(())
}

/// The next value when it is a string (of at most `MAX_TEXT` bytes), else `None`
/// with the value skipped.
fn string<'s>(sc: &'s mut Scanner) -> Scan<Option<&'s str>> {
    if sc.peek()? == Next::String {
        return sc.string();
    }
    sc.skip().map(|_| None)
}

/// A time as written, when it is a string that reads as one.
fn time(sc: &mut Scanner) -> Scan<Option<String>> {
    Ok(string(sc)?
        .filter(|s| util::parse_iso(s).is_some())
        .map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows an import stores from `text`, as `db` joins the items: `[source,
    /// value, first_seen, last_seen]`.
    fn rows(kind: Kind, text: &str, now: &str) -> Scan<Vec<[String; 4]>> {
        let (mut out, mut values, mut seen) = (Vec::new(), Vec::new(), Vec::new());
        let mut sink = |item: Item<'_>| {
            let own = str::to_string;
            match item {
                Item::Value { raw, value } => values.push((own(raw), own(value))),
                Item::Seen { raw, first, last } => seen.push([raw, first, last].map(own)),
                Item::End { source, updated } => {
                    for (raw, value) in values.drain(..) {
                        let (f, l) = seen
                            .iter()
                            .rev()
                            .find(|s| s[0] == raw)
                            .map_or((updated.unwrap_or(now), now), |s| (&s[1], &s[2]));
                        out.push([source, &value, f, l].map(own));
                    }
                    seen.clear();
                }
            }
            Ok(())
        };
        read(kind, &mut text.as_bytes(), "data.json", &mut sink)?;
        Ok(out)
    }

    #[test]
    fn fixture_rows() {
        let now = "2026-11-30T00:00:00Z";
        let mut rows_of = rows(
            Kind::Asn,
            include_str!("../tests/fixtures/legacy/data.json"),
            now,
        )
        .unwrap();
        rows_of.extend(
            rows(
                Kind::Fqdn,
                include_str!("../tests/fixtures/legacy/fqdn_data.json"),
                now,
            )
            .unwrap(),
        );
        assert_eq!(rows_of.len(), 10);
        let get = |v: &str| rows_of.iter().find(|r| r[1] == v).unwrap();
        assert_eq!(
            get("1.1.1.0/24")[2..],
            ["2026-09-01T00:00:00", "2026-10-02T08:30:00"]
        );
        assert_eq!(
            get("2606:4700::/32")[2..],
            ["2026-10-02T08:30:00.123456", now]
        );
        assert_eq!(get("149.154.167.99")[2], "2026-08-01T00:00:00");
        assert_eq!(get("93.184.216.34")[0], "example.com");
    }

    #[test]
    fn members_in_any_order() {
        let now = "2026-11-30T00:00:00Z";
        let want = rows(
            Kind::Asn,
            r#"{"7": {"prefixes": ["10.1.0.0/16", "10.2.0.0/16"], "last_updated": "2026-01-01T00:00:00",
                "seen": {"10.1.0.0/16": {"first_seen": "2025-01-01T00:00:00", "last_seen": "2026-02-01T00:00:00"}}}}"#,
            now,
        )
        .unwrap();
        let got = rows(
            Kind::Asn,
            r#"{"7": {"seen": {"10.1.0.0/16": {"last_seen": "2026-02-01T00:00:00", "x": [{}], "first_seen": "2025-01-01T00:00:00"}},
                "last_updated": "2026-01-01T00:00:00", "prefixes": ["10.1.0.0/16", "10.2.0.0/16"]}}"#,
            now,
        )
        .unwrap();
        assert_eq!(got, want);
        assert_eq!(want[0][2..], ["2025-01-01T00:00:00", "2026-02-01T00:00:00"]);
        assert_eq!(want[1][2..], ["2026-01-01T00:00:00", now]);
    }

    #[test]
    fn bad_files_and_values() {
        let e = rows(Kind::Asn, "{\"1\": [", "x").unwrap_err();
        assert!(matches!(e, ScanError::Syntax(..)), "{e:?}");
        assert!(matches!(
            rows(Kind::Asn, "[]", "x").unwrap_err(),
            ScanError::Shape(_)
        ));
        let text = r#"{"ASX": {"prefixes": ["1.0.0.0/8"]}, "7": {"prefixes": ["bogus", 5, "10.1.2.3/8"], "last_updated": "junk"}, "8": 5}"#;
        let got = rows(Kind::Asn, text, "2026-01-01T00:00:00Z").unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0][1..3], ["10.0.0.0/8", "2026-01-01T00:00:00Z"]);
    }

    #[test]
    fn file_errors_name_the_file() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("data.json");
        let mut sink = |_: Item<'_>| Ok(());
        assert!(!read_file(Kind::Asn, &path, &mut sink).unwrap());
        std::fs::write(&path, "{\"1\": [").unwrap();
        let e = read_file(Kind::Asn, &path, &mut sink).unwrap_err();
        assert!(
            e.to_string().contains("data.json: invalid JSON (")
                && e.to_string().contains("at byte 7"),
            "{e}"
        );
        std::fs::write(&path, r#"{"1": {"prefixes": ["10.0.0.0/8"]}}"#).unwrap();
        let mut refuse = |_: Item<'_>| Err(io::Error::other("full"));
        let e = read_file(Kind::Asn, &path, &mut refuse).unwrap_err();
        assert!(matches!(e, LegacyError::Read { .. }), "{e}");
    }
}
