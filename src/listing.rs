//! The one code path behind `GET /addresses`, `export` and the daemon's outputs, so
//! that their bytes are the same: the values of a selection (a group's sources, or
//! everything), streamed from the database, sorted, exclusions cut out.

use std::fs;
use std::path::{Path, PathBuf};

use crate::config::{Config, Paths, Selected, Selection, UnknownGroup};
use crate::db::{Db, Listed, StoreError};
use crate::format::{self, Collector, Exclusions, Prepared, RenderOptions, TypeFilter};
use crate::source::Kind;
use crate::{status, util};

/// Why a listing failed.
#[derive(Debug, thiserror::Error)]
pub enum ListingError {
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The group asked for is not configured.
    #[error(transparent)]
    UnknownGroup(#[from] UnknownGroup),
}

/// Streams the values of one part's sources into `values`.
fn collect(
    db: &Db,
    sources: &Selected,
    filter: TypeFilter,
    values: &mut Collector,
) -> Result<(), StoreError> {
    // IPv4 values come as numbers, straight into the collector's packed keys.
    let push = |v: Listed<'_>| match v {
        Listed::V4(addr, len) => values.push_v4(addr, len),
        Listed::Text(t) => values.push(t),
    };
    let kinds = |k: Kind| filter.keeps(k.as_str());
    match sources {
        Selected::Everything => db.for_each_value(filter, push),
        // A group's sources (`Only`), or every stored source but some (`AllBut`),
        // of the kinds asked for.
        Selected::Only(_) | Selected::AllBut(_) => {
            let m = sources.matcher();
            db.for_each_value_of(|k, name| kinds(k) && m.names(k, name), push)
        }
    }
}

/// The values of `selection` as `opts` shapes them (type, family, aggregation), in
/// the order of every output, with the exclusions cut out.
pub fn prepare(
    db: &Db,
    selection: &Selection,
    opts: &RenderOptions,
) -> Result<Prepared, StoreError> {
    let mut p = prepare_values(db, selection, opts)?;
    if opts.format == format::Format::Singbox && opts.type_filter.keeps(Kind::Fqdn.as_str()) {
        p.names = host_names(db, selection)?;
    }
    Ok(p)
}

/// The stored host-name sources that `selection` lists, sorted: the names sing-box
/// matches by `domain_suffix` besides their addresses.
fn host_names(db: &Db, selection: &Selection) -> Result<Vec<String>, StoreError> {
    let matchers: Vec<_> = selection
        .parts
        .iter()
        .map(|p| p.sources.matcher())
        .collect();
    let mut names: Vec<String> = db
        .sources(Kind::Fqdn)?
        .into_iter()
        .map(|s| s.source)
        .filter(|n| matchers.iter().any(|m| m.names(Kind::Fqdn, n)))
        .collect();
    crate::util::sort::sort(&mut names);
    names.dedup();
    Ok(names)
}

/// The values of [`prepare`].
fn prepare_values(
    db: &Db,
    selection: &Selection,
    opts: &RenderOptions,
) -> Result<Prepared, StoreError> {
    let aggregate = format::needs_aggregate(opts);
    if let [part] = &selection.parts[..] {
        let mut values = Collector::new(opts.family);
        collect(db, &part.sources, opts.type_filter, &mut values)?;
        return Ok(format::subtract(
            values.finish(aggregate),
            &Exclusions::new(&part.exclude),
        ));
    }
    // Several groups: each listed with its own exclusions and merged into the union
    // at once (duplicates dropped), so one group's values are held at a time besides
    // the union, never every group's list together.
    let mut merged = Prepared::default();
    for part in &selection.parts {
        let mut values = Collector::new(opts.family);
        collect(db, &part.sources, opts.type_filter, &mut values)?;
        let listed = format::subtract(values.finish(false), &Exclusions::new(&part.exclude));
        merged = format::union(vec![merged, listed], false);
    }
    Ok(format::union(vec![merged], aggregate))
}

/// Renders the stored values of `opts.group` in `cfg`.
pub fn render(db: &Db, cfg: &Config, opts: &RenderOptions) -> Result<Vec<u8>, ListingError> {
    let selection = cfg.selection(&opts.group)?;
    render_selection(db, &selection, opts).map_err(ListingError::from)
}

/// Renders the stored values of `selection`.
pub fn render_selection(
    db: &Db,
    selection: &Selection,
    opts: &RenderOptions,
) -> Result<Vec<u8>, StoreError> {
    let prepared = prepare(db, selection, opts)?;
    Ok(format::render_prepared(&prepared, opts))
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
