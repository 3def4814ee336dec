//! Whether a client has gone: its connection closed or reset while its request
//! waited for a handler or a render, so that nobody would read the answer.

use std::os::fd::RawFd;

/// The peer shut its side (Linux reports it for a FIN without data to read).
#[cfg(any(target_os = "linux", target_os = "android"))]
const RDHUP: libc::c_short = libc::POLLRDHUP;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const RDHUP: libc::c_short = 0;

/// Whether the client of socket `fd` closed or reset its connection. A client
/// that shuts only its sending side after the request (`nc -N`; browsers, curl and
/// firewalls' fetchers do not) looks the same from here as a connect/GET/close
/// one: it is taken for gone only where that saves a render (or makes room in a full
/// queue), and then gets a 503 saying so.
pub fn gone(fd: RawFd) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: RDHUP,
        revents: 0,
    };
    // SAFETY: one pollfd, valid for the call; a timeout of 0 never blocks.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n == 1 && p.revents & (RDHUP | libc::POLLHUP | libc::POLLERR) != 0
}
