//! Collection: RIPEstat and DNS clients (over the HTTP client in `client`), and the
//! collection run.

mod client;
pub mod dns;
pub mod fetch;
pub mod ripe;
pub mod run;
mod url;

pub use fetch::{CaRoots, Fetched, SourceError};
