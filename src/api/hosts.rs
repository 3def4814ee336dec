//! The `Host` of every request must name this server: the defence against DNS
//! rebinding. A page of `evil.example` whose name is re-pointed at this server's
//! address is same-origin to the browser, so the `Origin` check passes and the page
//! may read answers; but its requests still say `Host: evil.example`.
//!
//! Accepted: loopback names (`localhost`, `*.localhost`, which browsers never resolve
//! through DNS) and addresses, the address listened on, the addresses of this host's
//! interfaces, and the names and addresses in `api.hosts`. The port is not compared:
//! the browser reached this port whatever it says.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::error::ApiError;
use super::query::quoted;
use super::routes::Context;

/// What a `Host` value names, its port dropped.
#[derive(Debug, PartialEq, Eq)]
enum Named {
    /// In canonical form (`::ffff:127.0.0.1` is `127.0.0.1`).
    Ip(IpAddr),
    /// Lower case, without a trailing dot.
    Name(String),
}

/// Reads `host[:port]`, `[v6]` or `[v6]:port`; `None` for anything else.
fn parse(value: &str) -> Option<Named> {
    let (host, port) = match value.rfind(':') {
        Some(i) if !value[..i].contains(':') || value[..i].ends_with(']') => {
            (&value[..i], &value[i + 1..])
        }
        _ => (value, ""),
    };
    if !port.bytes().all(|b| b.is_ascii_digit()) || port.len() > 5 {
        return None;
    }
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return v6
            .parse::<Ipv6Addr>()
            .ok()
            .map(|ip| Named::Ip(ip.to_canonical()));
    }
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        return Some(Named::Ip(ip.into()));
    }
    let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let fine = |b: u8| b.is_ascii_alphanumeric() || b"-_.".contains(&b);
    (!name.is_empty() && name.bytes().all(fine)).then_some(Named::Name(name))
}

/// Refuses (421) a request whose `Host` (`host`, `None` only on HTTP/1.0, which
/// browsers do not send) names neither this server nor an `api.hosts` entry.
pub(super) fn check(host: Option<&str>, listen: SocketAddr, ctx: &Context) -> Result<(), ApiError> {
    let Some(value) = host else {
        return Ok(());
    };
    let Some(named) = parse(value) else {
        return Err(misdirected(value));
    };
    let builtin = match &named {
        Named::Ip(ip) => {
            let ip = *ip;
            ip.is_loopback() || (ip == listen.ip() && !ip.is_unspecified()) || own_address(ip)
        }
        Named::Name(n) => n == "localhost" || n.ends_with(".localhost"),
    };
    // config.json is read only for the other names: the usual requests (loopback,
    // the router's own address) cost no file read.
    if builtin || configured(&named, ctx) {
        return Ok(());
    }
    Err(misdirected(value))
}

fn misdirected(value: &str) -> ApiError {
    ApiError::Misdirected(format!(
        "Host {} does not name this server; a name it is reached by goes into api.hosts in config.json",
        quoted(value)
    ))
}

/// Whether `api.hosts` (of the last good configuration, as the other routes use;
/// none read yet names nothing) names it. Its entries are canonical already.
fn configured(named: &Named, ctx: &Context) -> bool {
    let Ok(cfg) = ctx.config() else {
        return false;
    };
    cfg.api
        .hosts
        .iter()
        .any(|h| match (h.parse::<IpAddr>(), named) {
            (Ok(a), Named::Ip(b)) => a == *b,
            (Err(_), Named::Name(n)) => h == n,
            _ => false,
        })
}

/// Whether `ip` is an address of one of this host's interfaces. Asked afresh for each
/// request that needs it (a netlink dump, some tens of microseconds), so that an
/// address a router gets later (DHCP, PPPoE) works at once without a cache to go stale.
fn own_address(ip: IpAddr) -> bool {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a linked list that is ours until
    // freeifaddrs; on failure it is left null and nothing is to be freed.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return false;
    }
    let mut found = false;
    let mut p = list;
    while !p.is_null() && !found {
        // SAFETY: `p` is an element of the list, valid until freeifaddrs; `ifa_addr`
        // (when not null) points to a sockaddr of the size its family says.
        unsafe {
            let sa = (*p).ifa_addr;
            if !sa.is_null() {
                found = match i32::from((*sa).sa_family) {
                    libc::AF_INET => {
                        let sin = &*sa.cast::<libc::sockaddr_in>();
                        ip == IpAddr::from(u32::from_be(sin.sin_addr.s_addr).to_be_bytes())
                    }
                    libc::AF_INET6 => {
                        let sin6 = &*sa.cast::<libc::sockaddr_in6>();
                        ip == IpAddr::from(sin6.sin6_addr.s6_addr)
                    }
                    _ => false,
                };
            }
            p = (*p).ifa_next;
        }
    }
    // SAFETY: `list` came from a successful getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(list) };
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_values() {
        let ip = |s: &str| Some(Named::Ip(s.parse().unwrap()));
        let name = |s: &str| Some(Named::Name(s.into()));
        assert_eq!(parse("127.0.0.1:8080"), ip("127.0.0.1"));
        assert_eq!(parse("[::1]:8080"), ip("::1"));
        assert_eq!(parse("[::1]"), ip("::1"));
        assert_eq!(parse("Router.LAN.:80"), name("router.lan"));
        assert_eq!(parse("router"), name("router"));
        for bad in [
            "", "::1", "[::1", "a:b", "a:123456", "[x]:1", "a b", "a@b", "a/b",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn only_this_server() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = Context::new(crate::config::Paths::new(dir.path(), None), 1);
        let listen: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let ok = |h: &str| check(Some(h), listen, &ctx).is_ok();
        for h in [
            "127.0.0.1:8080",
            "127.5.0.1",
            "localhost:1",
            "a.localhost",
            "[::1]:9",
        ] {
            assert!(ok(h), "{h}");
        }
        assert!(ok("[::ffff:127.0.0.1]:8080"));
        assert!(check(None, listen, &ctx).is_ok());
        for h in [
            "evil.example:8080",
            "0.0.0.0:8080",
            "192.0.2.1",
            "localhost.evil",
            "",
        ] {
            let e = check(Some(h), listen, &ctx).unwrap_err();
            assert!(matches!(e, ApiError::Misdirected(_)), "{h}");
        }
        let other: SocketAddr = "192.0.2.7:80".parse().unwrap();
        assert!(check(Some("192.0.2.7:80"), other, &ctx).is_ok());
        // api.hosts: names (any case, trailing dot) and addresses.
        std::fs::write(
            ctx.paths.config(),
            r#"{"api": {"hosts": ["router.lan", "2001:db8::1"]}}"#,
        )
        .unwrap();
        for h in ["router.lan:8080", "ROUTER.lan.", "[2001:db8::1]:80"] {
            assert!(ok(h), "{h}");
        }
        assert!(!ok("router.lan.evil"));
    }

    #[test]
    fn interface_addresses() {
        // Every host has loopback; the first non-loopback address found (if any) is
        // accepted too, and a documentation address never.
        assert!(own_address("127.0.0.1".parse().unwrap()));
        assert!(!own_address("192.0.2.255".parse().unwrap()));
        let started = std::time::Instant::now();
        for _ in 0..100 {
            own_address("192.0.2.255".parse().unwrap());
        }
        println!("getifaddrs: {:?} per call", started.elapsed() / 100);
    }
}
