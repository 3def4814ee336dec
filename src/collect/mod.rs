//! Collection: RIPEstat and DNS clients (over the HTTP client in `fetch`), and the
//! collection run.

pub mod dns;
pub mod fetch;
pub mod ripe;
pub mod run;

pub use fetch::{CaRoots, Fetched, SourceError};
