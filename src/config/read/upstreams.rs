//! Reading `asn_upstreams`, `bgptools`, `ipverse` and `feed`.

use crate::util::json::{Map, Value};

use super::{short, Reader};
use crate::config::upstreams::{AsnUpstream, Upstreams};
use crate::config::ConfigError;

const BGPTOOLS_KEYS: &[&str] = &["url", "user_agent", "refresh_hours"];
const IPVERSE_KEYS: &[&str] = &["url"];
const FEED_KEYS: &[&str] = &["max_bytes"];

impl Reader<'_> {
    /// The upstream settings; `bgptools` in `asn_upstreams` without
    /// `bgptools.user_agent` is an error naming that key.
    pub(super) fn upstreams(&mut self, root: &Map, u: &mut Upstreams) -> Result<(), ConfigError> {
        if let Some(list) = self.asn_upstreams(root)? {
            u.asn = list;
        }
        if let Some(o) = self.section(root, "bgptools", BGPTOOLS_KEYS)? {
            if let Some(url) = self.url(o, "bgptools.", "url")? {
                u.bgptools.url = url;
            }
            u.bgptools.user_agent = self.string(o, "bgptools.", "user_agent")?;
            if let Some(n) = self.uint(o, "bgptools.", "refresh_hours", 1, 8_760)? {
                u.bgptools.refresh_hours = n as u32;
            }
        }
        if let Some(o) = self.section(root, "ipverse", IPVERSE_KEYS)? {
            if let Some(url) = self.url(o, "ipverse.", "url")? {
                if !url.contains("{asn}") {
                    return Err(self.err("ipverse.url", format!("{url:?} has no {{asn}}")));
                }
                u.ipverse.url = url;
            }
        }
        if let Some(o) = self.section(root, "feed", FEED_KEYS)? {
            if let Some(n) = self.uint(o, "feed.", "max_bytes", 1, 1 << 32)? {
                u.feed.max_bytes = n;
            }
        }
        let ua_ok = u
            .bgptools
            .user_agent
            .as_deref()
            .is_some_and(|s| !s.trim().is_empty() && !s.contains(['\r', '\n']));
        if u.asn.contains(&AsnUpstream::Bgptools) && !ua_ok {
            return Err(self.err(
                "bgptools.user_agent",
                "bgptools is in asn_upstreams, and bgp.tools refuses anonymous clients: \
                 set a User-Agent naming a contact, such as \"ripe-cidr-collector - admin@example.org\"",
            ));
        }
        Ok(())
    }

    /// `asn_upstreams`: a non-empty list of known upstreams, each once.
    fn asn_upstreams(&mut self, root: &Map) -> Result<Option<Vec<AsnUpstream>>, ConfigError> {
        let key = "asn_upstreams";
        let list = match root.get(key) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Array(a)) if !a.is_empty() => a,
            Some(v) => {
                return Err(self.err(
                    key,
                    format!(
                        "expected a non-empty list such as [\"ripestat\"], got {}",
                        short(v)
                    ),
                ))
            }
        };
        let mut out = Vec::new();
        for (i, v) in list.iter().enumerate() {
            let up = v.as_str().and_then(AsnUpstream::from_word).ok_or_else(|| {
                self.err(
                    &format!("{key}[{i}]"),
                    format!(
                        "unknown upstream {}: expected ripestat, bgptools or ipverse",
                        short(v)
                    ),
                )
            })?;
            if out.contains(&up) {
                self.warnings
                    .push(format!("{key}[{i}]: {up} is listed twice; tried once"));
            } else {
                out.push(up);
            }
        }
        Ok(Some(out))
    }
}
