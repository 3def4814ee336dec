//! `serve [--listen ADDR]`: the HTTP API only, until SIGTERM or SIGINT.

use std::net::SocketAddr;

use super::{CliError, Outcome};
use crate::config::Paths;

#[cfg(not(feature = "api"))]
/// Without the `api` feature there is no server.
pub fn run(_: &Paths, _: Option<SocketAddr>) -> Result<Outcome, CliError> {
    Err(super::missing("serve", "api"))
}

/// Serves the API on `listen` (else `api.listen` of the configuration) until SIGTERM
/// or SIGINT, then stops within a second.
#[cfg(feature = "api")]
pub fn run(paths: &Paths, listen: Option<SocketAddr>) -> Result<Outcome, CliError> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    // With an address given, a broken config.json does not keep the API down (a
    // container would restart for ever): the listings need no configuration, and the
    // routes that do answer 503 until it is fixed.
    let listen = match (listen, crate::config::load_logged(&paths.config())) {
        (Some(addr), Err(e)) => {
            log::error!("{e}; serving anyway (the source routes answer 503 until it is fixed)");
            addr
        }
        (Some(addr), Ok(_)) => addr,
        (None, cfg) => cfg?.api.listen,
    };
    // Opening once at start reports storage problems (and does a pending legacy
    // import) now, instead of at the first request.
    drop(crate::db::open(paths)?);
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, stop.clone()).map_err(|source| CliError::Io {
            what: format!("cannot handle signal {signal}"),
            source,
        })?;
    }
    let server = crate::api::spawn(paths, listen).map_err(CliError::Other)?;
    log::info!("serving on {}", server.addr());
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
    }
    log::info!("stopping");
    server.stop();
    Ok(Outcome::Success)
}
