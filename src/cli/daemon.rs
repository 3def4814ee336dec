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
    let _claim = crate::daemon::claim(paths)?;
    // The API next: when its address is taken, fail before claiming status.json.
    #[cfg(feature = "api")]
    let _api = match listen {
        Some(addr) => {
            let server = crate::api::spawn(paths, addr).map_err(CliError::Other)?;
            log::info!("API listening on {}", server.addr());
            Some(server)
        }
        None => {
            // api.listen is for `serve` and `healthcheck`: say so to whoever set it
            // expecting the daemon's API.
            if let Ok(l) = crate::config::load(&paths.config()) {
                if l.config.api.listen_set {
                    log::warn!(
                        "api.listen {} is not served: the daemon serves the API only \
                         with --listen",
                        l.config.api.listen
                    );
                }
            }
            None
        }
    };
    #[cfg(not(feature = "api"))]
    if listen.is_some() {
        return Err(super::missing("daemon --listen", "api"));
    }
    crate::daemon::run(paths)?;
    Ok(Outcome::Success)
}

#[cfg(not(feature = "collect"))]
/// Without the `collect` feature there is no daemon to signal.
pub fn collect_now(_: &Paths) -> Result<Outcome, CliError> {
    Err(super::missing("collect-now", "collect"))
}

/// `collect-now`: SIGUSR1 to the daemon of this data directory: the process that holds
/// its lock and that `status.json` names (never a group, whatever the file says).
#[cfg(feature = "collect")]
pub fn collect_now(paths: &Paths) -> Result<Outcome, CliError> {
    let pid = crate::daemon::signal_collect(paths)?;
    log::info!("asked the daemon (pid {pid}) to collect every source now");
    Ok(Outcome::Success)
}
