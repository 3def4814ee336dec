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

#[cfg(not(feature = "collect"))]
/// Without the `collect` feature there is no daemon to signal.
pub fn collect_now(_: &Paths) -> Result<Outcome, CliError> {
    Err(super::missing("collect-now", "collect"))
}

/// `collect-now`: SIGUSR1 to the daemon of this data directory, found through its
/// lock (held, so it runs) and the pid in `status.json`.
#[cfg(feature = "collect")]
pub fn collect_now(paths: &Paths) -> Result<Outcome, CliError> {
    let pid = crate::daemon::running_pid(paths).map_err(|e| CliError::Other(e.to_string()))?;
    // SAFETY: kill(2) with a pid from status.json of a daemon that holds the lock.
    if unsafe { libc::kill(pid as libc::pid_t, libc::SIGUSR1) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(CliError::Other(format!(
            "signalling the daemon (pid {pid}): {e}"
        )));
    }
    log::info!("asked the daemon (pid {pid}) to collect every source now");
    Ok(Outcome::Success)
}
