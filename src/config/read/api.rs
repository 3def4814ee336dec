//! `api`: where the HTTP API listens, its token, and the names it answers to.

use std::net::{IpAddr, SocketAddr};

use crate::util::json::{Map, Value};

use super::{short, Reader};
use crate::config::{ApiConfig, ConfigError};

/// The keys of `api`.
pub(super) const KEYS: &[&str] = &["listen", "token", "hosts"];

/// Most `api.hosts` entries: each request with another name is compared with all.
const MAX_HOSTS: usize = 64;

impl Reader<'_> {
    pub(super) fn api(&self, o: &Map, c: &mut ApiConfig) -> Result<(), ConfigError> {
        if let Some(l) = self.string(o, "api.", "listen")? {
            c.listen = parse_listen(&l).map_err(|m| self.err("api.listen", m))?;
            c.listen_set = true;
        }
        c.token = self.string(o, "api.", "token")?;
        if c.token.as_deref() == Some("") {
            return Err(self.err(
                "api.token",
                "an empty token would let anyone in; use null to switch it off",
            ));
        }
        c.hosts = self.hosts(o)?;
        Ok(())
    }

    /// `api.hosts`: host names (one label is fine: `router`) and IP addresses.
    fn hosts(&self, o: &Map) -> Result<Vec<String>, ConfigError> {
        let list = match o.get("hosts") {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(a)) if a.len() <= MAX_HOSTS => a,
            Some(v) => {
                return Err(self.err(
                    "api.hosts",
                    format!(
                        "expected a list of at most {MAX_HOSTS} names, got {}",
                        short(v)
                    ),
                ))
            }
        };
        let mut hosts = Vec::with_capacity(list.len());
        for (i, v) in list.iter().enumerate() {
            let key = format!("api.hosts[{i}]");
            let Value::String(s) = v else {
                return Err(self.err(&key, format!("expected a string, got {}", short(v))));
            };
            let bare = s.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
            let host = match bare.unwrap_or(s).parse::<IpAddr>() {
                Ok(ip) => ip.to_canonical().to_string(),
                Err(_) => crate::source::normalize_fqdn(s).map_err(|m| {
                    self.err(
                        &key,
                        format!("{m}; expected a host name or an IP address (no port)"),
                    )
                })?,
            };
            hosts.push(host);
        }
        Ok(hosts)
    }
}

/// Parses a listen address such as `127.0.0.1:8080` or `[::1]:8080`.
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    s.parse::<SocketAddr>().map_err(|_| {
        format!(
            "invalid listen address {s:?}: expected IP:PORT such as 127.0.0.1:8080 or [::1]:8080"
        )
    })
}
