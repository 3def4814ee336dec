//! The one code path behind `GET /addresses`, `export` and the daemon's outputs, so
//! that their bytes are the same.

use std::fs;
use std::path::{Path, PathBuf};

use crate::config::Paths;
use crate::db::{Db, StoreError};
use crate::format::{self, RenderOptions};
use crate::{status, util};

/// Renders the stored values selected by `options`, streaming rows from the database
/// into the formatter.
pub fn render(db: &Db, options: &RenderOptions) -> Result<Vec<u8>, StoreError> {
    let mut values = format::Collector::new(options.family);
    db.for_each_value(options.type_filter, |v| values.push(v))?;
    let prepared = values.finish(format::needs_aggregate(options));
    Ok(format::render_prepared(&prepared, options))
}

/// The database was just found damaged and moved aside, and the fresh one is empty:
/// handing its empty list to a firewall would flush the sets, so the commands that
/// feed one (`export`, `render`, the daemon's outputs) refuse until a run has stored
/// values again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{} was found damaged and moved aside to {}; it holds nothing until a run stores values \
     again, and an empty list must not replace a firewall's (run `run` first, or move {} \
     away to hand out the empty list)",
    .db.display(),
    .moved.display(),
    .moved.display()
)]
pub struct EmptiedByDamage {
    /// The database (or its snapshot) that was damaged.
    pub db: PathBuf,
    /// Where it was moved.
    pub moved: PathBuf,
}

/// `Err` when `db` is empty because a damaged database or snapshot was moved aside
/// (`<file>.corrupt-<ts>`) after the last successful run that `status.json` records;
/// an empty store for any other reason (no sources, a first start) is fine.
pub fn check_not_emptied(
    paths: &Paths,
    db: &Db,
) -> Result<Result<(), EmptiedByDamage>, StoreError> {
    let (asns, fqdns) = db.counts()?;
    if asns + fqdns > 0 {
        return Ok(Ok(()));
    }
    let last_success = status::read(&paths.status())
        .ok()
        .flatten()
        .and_then(|s| s.last_success)
        .and_then(|t| util::parse_iso(&t))
        .map(util::compact_ts);
    let files = std::iter::once(paths.db.as_path()).chain(paths.snapshot.as_deref());
    let newest = files
        .filter_map(|f| moved_aside(f, last_success.as_deref()))
        .max_by(|a, b| a.0.cmp(&b.0));
    Ok(match newest {
        Some((_, moved)) => Err(EmptiedByDamage {
            db: paths.db.clone(),
            moved,
        }),
        None => Ok(()),
    })
}

/// The newest `<file>.corrupt-<ts>` beside `file` (beside the file a link points to:
/// that is where it is moved) with a time after `after` (compact form), and its time.
fn moved_aside(file: &Path, after: Option<&str>) -> Option<(String, PathBuf)> {
    let file = fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let prefix = format!("{}.corrupt-", file.file_name()?.to_string_lossy());
    let dir = file.parent()?;
    let mut newest: Option<(String, PathBuf)> = None;
    for entry in fs::read_dir(dir).ok()?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(ts) = name.strip_prefix(&prefix) else {
            continue;
        };
        // The main file only (not its -wal/-shm); `YYYYMMDDTHHMMSSZ` sorts by time.
        let fresh = after.is_none_or(|a| ts > a);
        if ts.len() == 16 && fresh && newest.as_ref().is_none_or(|n| ts > n.0.as_str()) {
            newest = Some((ts.to_string(), entry.path()));
        }
    }
    newest
}
