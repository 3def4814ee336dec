//! `daemon [--listen ADDR]`: collect on schedule; with `--listen` also serve the API.

use std::net::SocketAddr;

use super::{CliError, Outcome};
use crate::config::Paths;

#[cfg(not(feature = "collect"))]
/// Without the `collect` feature there is nothing to collect with.
pub fn run(_: &Paths, _: Option<SocketAddr>) -> Result<Outcome, CliError> {
    Err(super::missing("daemon", "collect"))
}

/// Runs the daemon until SIGTERM or SIGINT.
#[cfg(feature = "collect")]
pub fn run(paths: &Paths, listen: Option<SocketAddr>) -> Result<Outcome, CliError> {
    crate::daemon::run(paths, listen)
}
