//! ripe-cidr-collector: keeps lists of IP prefixes announced by autonomous systems and
//! addresses of host names in SQLite, and renders them for routers and firewalls.
//!
//! The offline core (`config`, `db`, `legacy`, `format`, `status`) builds everywhere,
//! including `wasm32-wasip1`; the network parts sit behind the `collect` and `api`
//! features.

#[cfg(feature = "api")]
pub mod api;
#[cfg(feature = "collect")]
pub mod collect;
pub mod config;
pub mod db;
pub mod format;
pub mod legacy;
#[cfg(all(feature = "collect", target_os = "linux"))]
pub mod nftnl;
#[cfg(feature = "collect")]
pub mod outputs;
pub mod status;
pub mod util;

pub mod cli;
#[cfg(feature = "collect")]
pub mod daemon;

/// Renders the stored values selected by `options`: the one code path behind both
/// `GET /addresses` and `export`, so their bytes are the same.
pub fn listing(db: &db::Db, options: &format::RenderOptions) -> Result<Vec<u8>, db::StoreError> {
    let mut values = format::Collector::new(options.family);
    db.for_each_value(options.type_filter, |v| values.push(v))?;
    let prepared = values.finish(format::needs_aggregate(options));
    Ok(format::render_prepared(&prepared, options))
}
