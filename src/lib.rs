//! ripe-cidr-collector: keeps lists of IP prefixes announced by autonomous systems and
//! addresses of host names in SQLite, and renders them for routers and firewalls.
//!
//! The offline core (`config`, `db`, `legacy`, `format`, `status`) builds everywhere,
//! including `wasm32-wasip1`; the network parts sit behind the `collect` and `api`
//! features.

#[cfg(feature = "api")]
pub mod api;
pub mod catalog;
#[cfg(feature = "collect")]
pub mod collect;
pub mod config;
pub mod db;
pub mod explain;
pub mod format;
#[cfg(fuzzing)]
pub mod fuzz;
#[cfg(any(feature = "api", feature = "collect"))]
pub mod http1;
pub mod inspect;
pub mod legacy;
pub mod listing;
#[cfg(all(feature = "collect", target_os = "linux"))]
pub mod nftnl;
#[cfg(feature = "collect")]
pub mod outputs;
pub mod overview;
pub mod source;
pub mod sources;
pub mod status;
pub mod util;

pub mod cli;
#[cfg(feature = "collect")]
pub mod daemon;
