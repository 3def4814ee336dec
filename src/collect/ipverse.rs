//! ipverse: an ASN's two per-family plain lists (`ipv4-aggregated.txt`,
//! `ipv6-aggregated.txt`) at a URL template with `{asn}` and `{family}`, so that a
//! mirror can replace GitHub raw. They are read like feeds. A 404 for both means
//! the ASN is unknown there; a 404 for one family is an ASN without prefixes of it.

use std::time::Duration;

use super::feed::read_lines;
use super::fetch::{Fetched, Keep, SourceError};
use super::fetcher::{Fetcher, Request, Transport};
use crate::config::upstreams::IpverseConfig;
use crate::config::MinPrefix;

/// Largest list accepted, in bytes (the largest networks' lists are a few hundred
/// KiB).
const LIST_LIMIT: u64 = 16 << 20;

/// The ipverse upstream of one run.
#[derive(Debug)]
pub struct IpverseClient {
    fetcher: Fetcher,
    url: String,
    min_prefix: MinPrefix,
}

impl IpverseClient {
    /// A client for `cfg`.
    pub fn new(
        cfg: &IpverseConfig,
        timeout: Duration,
        min_prefix: MinPrefix,
        transport: &Transport,
    ) -> IpverseClient {
        IpverseClient {
            fetcher: Fetcher::new(transport, timeout),
            url: cfg.url.clone(),
            min_prefix,
        }
    }

    /// The prefixes of `asn` (`"62041"`) from both lists.
    pub fn fetch(&self, asn: &str) -> Result<Fetched, SourceError> {
        let mut keep = Keep::new(format!("AS{asn}: skipped from ipverse"));
        let mut found = false;
        for family in ["4", "6"] {
            let url = self.url.replace("{asn}", asn).replace("{family}", family);
            found |= self.list(&url, &mut keep)?;
        }
        if !found {
            return Err(SourceError::Http { status: 404 });
        }
        super::feed::some_valid(keep.finish())
    }

    /// One list into `keep`; `false` when it is not there (404).
    fn list(&self, url: &str, keep: &mut Keep) -> Result<bool, SourceError> {
        let rq = Request {
            url,
            query: &[],
            accept: "text/plain, */*;q=0.5",
            limit: LIST_LIMIT,
        };
        let min = self.min_prefix;
        self.fetcher.get(&rq, |answer| match answer.status {
            404 => Ok(false),
            200..=299 => {
                read_lines(answer.body, &mut |v| {
                    keep.push(v.and_then(|s| super::ripe::prefix(s, min)))
                })?;
                Ok(true)
            }
            status => Err(SourceError::Http { status }),
        })
    }
}
