//! The HTTP API (`serve`, `daemon --listen`): the stored addresses in every output
//! format, health, and source management. Routes, status codes and limits are
//! described in `docs/api.md`.
//!
//! * `routes.rs`: routing and handlers, independent of sockets;
//! * `server.rs`: the accept loop and connection threads around tiny_http_fork's
//!   request parser, with the connection limits;
//! * `error.rs`: the one error type and the one place mapping errors to statuses;
//! * `http.rs`: percent-decoding, query parameters, ETags, token comparison.

mod error;
mod http;
mod routes;
mod server;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use server::{ApiServer, IDLE_TIMEOUT, MAX_ACTIVE, MAX_CONNECTIONS};

use crate::cli::{CliError, Outcome};
use crate::config::{self, Paths};
use crate::db;

/// Largest request body accepted (64 KiB); larger ones get 413 without being read
/// into memory.
pub const MAX_BODY: u64 = 64 * 1024;

/// Binds `listen` and serves the API on background threads until the returned
/// handle is dropped or stopped. The error names the address, e.g.
/// `127.0.0.1:8080: address in use`.
pub fn spawn(paths: &Paths, listen: SocketAddr) -> Result<ApiServer, String> {
    server::start(paths, listen)
}

/// The `serve` command: serves the API on `listen` (else `api.listen` of the
/// configuration) until SIGTERM or SIGINT, then stops within a second.
pub fn serve_command(paths: &Paths, listen: Option<SocketAddr>) -> Result<Outcome, CliError> {
    let cfg = config::load_logged(&paths.config())?;
    let listen = listen.unwrap_or(cfg.api.listen);
    // Opening once at start reports storage problems (and does a pending legacy
    // import) now, instead of at the first request.
    drop(db::open(paths)?);
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, stop.clone())
            .map_err(|e| CliError::Other(format!("cannot handle signal {signal}: {e}")))?;
    }
    let server = spawn(paths, listen).map_err(CliError::Other)?;
    log::info!("serving on {}", server.addr());
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
    }
    log::info!("stopping");
    server.stop();
    Ok(Outcome::Success)
}
