//! The HTTP API (`serve`, `daemon --listen`): the stored addresses in every output
//! format, health, and source management. Routes, status codes and limits are
//! described in `docs/api.md`.
//!
//! * `routes/`: routing and handlers, independent of sockets;
//! * `server.rs`: one thread polling every connection and a small pool of handler
//!   threads, with the connection limits; `conn.rs` one connection, `http.rs` the
//!   request head (parsed with `httparse`, bounded; framing and chunked bodies
//!   through `crate::http1`, shared with the collect client) and the answer's head,
//!   `poller.rs` the poll loop, which reads heads and bodies;
//! * `limit.rs`: the semaphore bounding handlers doing database work;
//! * `answers.rs`: the one byte budget of answer bodies, and eviction of unread ones;
//! * `error.rs`: the one error type and the one place mapping errors to statuses;
//! * `body.rs`: the JSON bodies of answers;
//! * `query.rs`: paths, query parameters, percent-decoding;
//! * `headers.rs`: ETags and bearer tokens; `hosts.rs`: the `Host` check (DNS rebinding);
//! * `inflate.rs`: gunzip of the web page for clients that do not take gzip.

mod answers;
mod body;
mod conn;
mod error;
mod evict;
mod gone;
#[cfg(feature = "gzip")]
mod gzip;
mod headers;
mod hosts;
pub(crate) mod http;
mod incoming;
mod inflate;
mod limit;
mod poller;
pub(crate) mod query;
pub(crate) mod routes;
mod server;

use std::net::SocketAddr;

pub use http::{MAX_HEAD, MAX_HEADERS};
pub use server::{
    ApiServer, BODY_TIMEOUT, HANDLERS, HEAD_TIMEOUT, HEALTH_HANDLERS, IDLE_TIMEOUT, MAX_ACTIVE,
    MAX_CONNECTIONS,
};

use crate::config::Paths;

/// Largest request body accepted (64 KiB); a larger declared one gets 413 without
/// being read, a chunked one is refused as soon as it grows past this.
pub const MAX_BODY: u64 = 64 * 1024;

/// Binds `listen` and serves the API on background threads until the returned
/// handle is dropped or stopped. The error names the address, e.g.
/// `127.0.0.1:8080: address in use`.
pub fn spawn(paths: &Paths, listen: SocketAddr) -> Result<ApiServer, String> {
    one_heap();
    warn_if_open(paths, listen);
    server::start(paths, listen)
}

/// Every interface (`0.0.0.0`, `::`) without `api.token` lets anyone who reaches the
/// port add and remove sources: said once at start (the default listens on
/// 127.0.0.1 only, so this is a choice someone made, maybe without knowing).
fn warn_if_open(paths: &Paths, listen: SocketAddr) {
    let token = crate::config::load(&paths.config()).map(|l| l.config.api.token.is_some());
    if listen.ip().is_unspecified() && matches!(token, Ok(false)) {
        log::warn!(
            "listening on {listen} (every interface) without api.token: anyone who reaches \
             this port can add and remove sources; set api.token, or listen on 127.0.0.1"
        );
    }
}

/// glibc gives each thread a heap of its own and keeps freed large blocks in it
/// (its mmap threshold grows with every large block freed), so answers rendered
/// on eight handler threads held eight peaks: one heap, and blocks over 256 KiB
/// mapped and given back when freed. musl (OpenWrt) does both already.
fn one_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; called before the server's
    // threads exist.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
    }
}
