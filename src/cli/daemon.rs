//! `daemon [--listen ADDR]`: collect on schedule; with `--listen` also serve the API,
//! which runs beside the daemon and stops with it.

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
    let _claim = crate::daemon::claim(paths).map_err(|e| CliError::Other(e.to_string()))?;
    // The API next: when its address is taken, fail before claiming status.json.
    #[cfg(feature = "api")]
    let _api = match listen {
        Some(addr) => {
            let server = crate::api::spawn(paths, addr).map_err(CliError::Other)?;
            log::info!("API listening on {}", server.addr());
            Some(server)
        }
        None => None,
    };
    #[cfg(not(feature = "api"))]
    if listen.is_some() {
        return Err(super::missing("daemon --listen", "api"));
    }
    crate::daemon::run(paths).map_err(|e| CliError::Other(e.to_string()))?;
    Ok(Outcome::Success)
}
