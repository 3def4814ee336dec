//! Integration tests: one test binary (fast builds) with a module per area. Library
//! tests call the crate on temporary directories; black-box tests start the real
//! binary and talk to it only over 127.0.0.1.

#[cfg(feature = "api")]
mod api;
#[cfg(feature = "collect")]
mod collect;
mod common;
mod formats_real;
#[cfg(all(feature = "collect", target_os = "linux"))]
mod netlink;
mod storage;
