//! The URLs the HTTP client understands: `http://` and `https://`, a host name, an
//! IPv4 address or a bracketed IPv6 address, an optional port, a path with an
//! optional query. No user info; a fragment is dropped. That covers RIPEstat, DoH
//! servers, their redirects and the tests' servers on 127.0.0.1.

use std::fmt::Write;
use std::net::Ipv6Addr;

/// A parsed URL, ready to be requested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Url {
    /// `https://` rather than `http://`.
    pub https: bool,
    /// The host name or address, without the brackets of an IPv6 address.
    pub host: String,
    /// The port, the scheme's default when not given.
    pub port: u16,
    /// The request target: the path and the query (`/data.json?resource=AS1`).
    pub target: String,
}

impl Url {
    /// Parses `s`; the error says what is wrong (the caller prefixes `bad URL`).
    pub(crate) fn parse(s: &str) -> Result<Url, String> {
        let (https, rest) = if let Some(rest) = strip_prefix_ci(s, "https://") {
            (true, rest)
        } else if let Some(rest) = strip_prefix_ci(s, "http://") {
            (false, rest)
        } else {
            return Err(format!("{s:?} does not start with http:// or https://"));
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, rest) = rest.split_at(end);
        let rest = rest.split('#').next().unwrap_or_default();
        if authority.contains('@') {
            return Err(format!("{s:?}: user names in URLs are not supported"));
        }
        let (host, port) = match authority.strip_prefix('[') {
            Some(v6) => {
                let (addr, after) = v6
                    .split_once(']')
                    .ok_or_else(|| format!("{s:?}: missing ] after the IPv6 address"))?;
                addr.parse::<Ipv6Addr>()
                    .map_err(|_| format!("{s:?}: {addr:?} is not an IPv6 address"))?;
                match after {
                    "" => (addr, None),
                    _ => match after.strip_prefix(':') {
                        Some(port) => (addr, Some(port)),
                        None => return Err(format!("{s:?}: unexpected {after:?} after ]")),
                    },
                }
            }
            None => match authority.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            },
        };
        let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ':');
        if host.is_empty() || !host.chars().all(valid) {
            return Err(format!("{s:?}: bad host name {host:?}"));
        }
        let port = match port {
            None => {
                if https {
                    443
                } else {
                    80
                }
            }
            Some(p) => p
                .bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| p.parse::<u16>().ok())
                .flatten()
                .filter(|&p| p != 0)
                .ok_or_else(|| format!("{s:?}: bad port {p:?}"))?,
        };
        let target = if rest.starts_with('/') {
            rest.to_string()
        } else {
            format!("/{rest}")
        };
        Ok(Url {
            https,
            host: host.to_string(),
            port,
            target,
        })
    }

    /// Appends `name=value` pairs to the query, percent-encoded.
    pub(crate) fn add_query(&mut self, query: &[(&str, &str)]) {
        for (k, v) in query {
            self.target
                .push(if self.target.contains('?') { '&' } else { '?' });
            encode(&mut self.target, k);
            self.target.push('=');
            encode(&mut self.target, v);
        }
    }

    /// The value of the `Host` header: the port only when it is not the default.
    pub(crate) fn host_header(&self) -> String {
        let mut h = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port != if self.https { 443 } else { 80 } {
            let _ = write!(h, ":{}", self.port);
        }
        h
    }

    /// Where a redirect's `Location` leads from this URL: an absolute URL, one
    /// without scheme (`//host/path`), an absolute path or a path relative to this
    /// URL's directory.
    pub(crate) fn join(&self, location: &str) -> Result<Url, String> {
        let location = location.trim();
        if strip_prefix_ci(location, "http://").is_some()
            || strip_prefix_ci(location, "https://").is_some()
        {
            return Url::parse(location);
        }
        if location.starts_with("//") {
            let scheme = if self.https { "https:" } else { "http:" };
            return Url::parse(&format!("{scheme}{location}"));
        }
        if location.is_empty() || location.contains("://") {
            return Err(format!("bad redirect location {location:?}"));
        }
        let mut next = self.clone();
        next.target = if location.starts_with('/') {
            location.to_string()
        } else {
            // Relative: replaces the last segment of the path (the query is dropped).
            let path = self.target.split('?').next().unwrap_or("/");
            let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
            format!("{dir}{location}")
        };
        if let Some(i) = next.target.find('#') {
            next.target.truncate(i);
        }
        Ok(next)
    }
}

impl std::fmt::Display for Url {
    /// The URL again, as a command such as `uclient-fetch` is given it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        write!(f, "{scheme}://{}{}", self.host_header(), self.target)
    }
}

/// `s` without `prefix`, compared ASCII case-insensitively.
fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// Appends `s` percent-encoded: all but the unreserved characters of RFC 3986.
fn encode(out: &mut String, s: &str) {
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn parses() {
        let u = url("https://stat.ripe.net/data/announced-prefixes/data.json");
        assert!(u.https);
        assert_eq!(
            (u.host.as_str(), u.port, u.target.as_str()),
            ("stat.ripe.net", 443, "/data/announced-prefixes/data.json")
        );
        assert_eq!(u.host_header(), "stat.ripe.net");
        let u = url("HTTP://127.0.0.1:8053?x=1#frag");
        assert!(!u.https);
        assert_eq!((u.port, u.target.as_str()), (8053, "/?x=1"));
        assert_eq!(u.host_header(), "127.0.0.1:8053");
        let u = url("http://[::1]:9/dns-query");
        assert_eq!((u.host.as_str(), u.port), ("::1", 9));
        assert_eq!(u.host_header(), "[::1]:9");
        let u = url("https://[2001:db8::1]");
        assert_eq!((u.port, u.target.as_str()), (443, "/"));
        assert_eq!(u.host_header(), "[2001:db8::1]");
        assert_eq!(url("http://h:80/").host_header(), "h");
    }

    #[test]
    fn refuses() {
        for bad in [
            "ftp://x/",
            "stat.ripe.net/data",
            "http://",
            "http:///path",
            "http://h:/",
            "http://h:0/",
            "http://h:+80/",
            "http://h:99999/",
            "http://user@h/",
            "http://[::1/",
            "http://[nope]/",
            "http://[::1]x/",
            "http://h o/",
        ] {
            let e = Url::parse(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{bad}: {e}");
        }
    }

    #[test]
    fn query_is_encoded() {
        let mut u = url("http://h/d.json?preferred_version=1.2");
        u.add_query(&[("resource", "AS1"), ("sourceapp", "a b&c=d/é~")]);
        assert_eq!(
            u.target,
            "/d.json?preferred_version=1.2&resource=AS1&sourceapp=a%20b%26c%3Dd%2F%C3%A9~"
        );
        let mut u = url("http://h");
        u.add_query(&[("name", "example.com"), ("type", "AAAA")]);
        assert_eq!(u.target, "/?name=example.com&type=AAAA");
    }

    #[test]
    fn redirects() {
        let base = url("http://h:8080/a/b/c?q=1");
        assert_eq!(
            base.join("https://other/x").unwrap(),
            url("https://other/x")
        );
        assert_eq!(base.join("//other/x").unwrap(), url("http://other/x"));
        assert_eq!(base.join("/x?y=2").unwrap(), url("http://h:8080/x?y=2"));
        assert_eq!(base.join("d").unwrap(), url("http://h:8080/a/b/d"));
        assert_eq!(base.join("d#f").unwrap(), url("http://h:8080/a/b/d"));
        assert_eq!(url("http://h").join("d").unwrap(), url("http://h/d"));
        assert!(base.join("").is_err());
        assert!(base.join("ftp://x/").is_err());
    }
}
