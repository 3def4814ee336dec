//! The one code path behind `GET /addresses`, `export` and the daemon's outputs, so
//! that their bytes are the same: the values of a selection (a group's sources, or
//! everything), streamed from the database, sorted, exclusions cut out.

use crate::config::{self, Config, ConfigError, Paths, Selected, Selection, UnknownGroup};
use crate::db::{Db, StoreError};
use crate::format::{self, Collector, Exclusions, Prepared, RenderOptions, TypeFilter};
use crate::source::Kind;

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

/// The configuration a listing of `group` needs. A broken `config.json` does not stop
/// the listings that need no group of it (`default`, `*`): they list everything stored,
/// as they did before groups, and the error is logged; a named group needs the file.
pub fn config_for(paths: &Paths, group: &str) -> Result<Config, ConfigError> {
    match config::load(&paths.config()) {
        Ok(l) => Ok(l.config),
        Err(e) if group == format::DEFAULT_GROUP || group == format::ALL_GROUPS => {
            log::warn!("{e}; listing every stored value without exclusions");
            Ok(Config::default())
        }
        Err(e) => Err(e),
    }
}

/// The stored values of `kind`s that the filter keeps of `pairs`.
fn kept(pairs: &[(Kind, String)], filter: TypeFilter) -> Vec<(Kind, String)> {
    pairs
        .iter()
        .filter(|(k, _)| filter.keeps(k.as_str()))
        .cloned()
        .collect()
}

/// Streams the values of one part's sources into `values`.
fn collect(
    db: &Db,
    sources: &Selected,
    filter: TypeFilter,
    values: &mut Collector,
) -> Result<(), StoreError> {
    match sources {
        Selected::Everything => db.for_each_value(filter, |v| values.push(v)),
        Selected::Only(pairs) => db.for_each_value_of(&kept(pairs, filter), |v| values.push(v)),
        Selected::AllBut(others) => {
            // The stored sources of the kinds asked for, except those (sorted).
            let mut pairs = Vec::new();
            for kind in Kind::ALL.into_iter().filter(|k| filter.keeps(k.as_str())) {
                for s in db.sources(kind)? {
                    let pair = (kind, s.source);
                    if others.binary_search(&pair).is_err() {
                        pairs.push(pair);
                    }
                }
            }
            db.for_each_value_of(&pairs, |v| values.push(v))
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
    let aggregate = format::needs_aggregate(opts);
    if let [part] = &selection.parts[..] {
        let mut values = Collector::new(opts.family);
        collect(db, &part.sources, opts.type_filter, &mut values)?;
        return Ok(format::subtract(
            values.finish(aggregate),
            &Exclusions::new(&part.exclude),
        ));
    }
    // Several groups: each listed with its own exclusions, then merged. One group's
    // values are held at a time besides the merged lists.
    let mut merged = Vec::with_capacity(selection.parts.len());
    for part in &selection.parts {
        let mut values = Collector::new(opts.family);
        collect(db, &part.sources, opts.type_filter, &mut values)?;
        merged.push(format::subtract(
            values.finish(false),
            &Exclusions::new(&part.exclude),
        ));
    }
    Ok(format::union(merged, aggregate))
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
