//! Collection: RIPEstat and DNS clients over the one fetch layer (`fetcher`: the
//! built-in HTTP client in `client`, or `fetch.command`), and the collection run.

pub mod asn;
pub mod bgptools;
mod budget;
pub(crate) mod client;
mod command;
pub mod country;
pub mod dns;
pub mod feed;
mod feed_state;
pub mod fetch;
mod fetcher;
mod followed;
mod ipverse;
pub mod ripe;
pub mod run;
mod slow;
mod store;
#[cfg(feature = "tls")]
mod tls;
pub mod trust;
mod upstream_json;
mod url;
#[cfg(feature = "verify")]
pub mod verify;

pub use fetch::{Fetched, SourceError};
pub use fetcher::{Transport, Validators, USER_AGENT};
#[cfg(feature = "tls")]
pub use tls::CaRoots;
