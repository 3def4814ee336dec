//! ASN upstreams in the configured order (`asn_upstreams`): each ASN is asked of
//! one upstream after the other until one answers. Any failure moves on (a 500, a
//! timeout, an ASN unknown there); when all fail, the error kept is a transient one
//! if any was (so the daemon retries early), else the first.

use std::time::Duration;

use super::bgptools::BgptoolsClient;
use super::fetch::{Fetched, SourceError};
use super::ipverse::IpverseClient;
use super::ripe::RipeClient;
use super::Transport;
use crate::config::upstreams::AsnUpstream;
use crate::config::Config;

/// The ASN upstreams of one run.
#[derive(Debug)]
pub struct AsnClient {
    order: Vec<AsnUpstream>,
    /// RIPEstat (also asked for countries).
    pub ripe: RipeClient,
    ipverse: Option<IpverseClient>,
    bgptools: Option<BgptoolsClient>,
}

impl AsnClient {
    /// The upstreams `cfg` lists, over `transport`; `ripe` is the RIPEstat client.
    pub fn new(cfg: &Config, transport: &Transport, ripe: RipeClient) -> AsnClient {
        AsnClient::with_stamp(cfg, transport, ripe, None)
    }

    /// The same, keeping the time of bgp.tools downloads in `stamp`.
    pub fn with_stamp(
        cfg: &Config,
        transport: &Transport,
        ripe: RipeClient,
        stamp: Option<super::bgptools::Stamp>,
    ) -> AsnClient {
        let order = cfg.upstreams.asn.clone();
        let timeout = Duration::from_secs(cfg.ripe.timeout_seconds);
        // An upstream asked only for second opinions (`trust.confirm_with`) too.
        let used = |u: AsnUpstream| {
            order.contains(&u)
                || cfg
                    .trust
                    .confirm_with
                    .as_ref()
                    .is_some_and(|c| c.contains(&u.as_str()))
        };
        let ipverse = used(AsnUpstream::Ipverse).then(|| {
            IpverseClient::new(&cfg.upstreams.ipverse, timeout, cfg.min_prefix, transport)
        });
        let bgptools = used(AsnUpstream::Bgptools).then(|| {
            BgptoolsClient::new(
                &cfg.upstreams.bgptools,
                timeout,
                cfg.min_prefix,
                transport,
                &cfg.asns,
            )
        });
        let bgptools = bgptools.map(|mut b| {
            b.stamp = stamp;
            b
        });
        AsnClient {
            order,
            ripe,
            ipverse,
            bgptools,
        }
    }

    /// The URLs the upstreams of `cfg` reach (whether a CA bundle is needed).
    pub fn urls(cfg: &Config) -> Vec<&str> {
        cfg.upstreams
            .asn
            .iter()
            .map(|u| match u {
                AsnUpstream::Ripestat => cfg.ripe.url.as_str(),
                AsnUpstream::Bgptools => cfg.upstreams.bgptools.url.as_str(),
                AsnUpstream::Ipverse => cfg.upstreams.ipverse.url.as_str(),
            })
            .collect()
    }

    /// The prefixes of `asn` from the first upstream that answers, which
    /// [`Fetched::upstream`] names.
    pub fn fetch(&self, asn: &str) -> Result<Fetched, SourceError> {
        let mut kept: Option<SourceError> = None;
        for (i, up) in self.order.iter().enumerate() {
            match self.fetch_from(*up, asn) {
                Ok(mut f) => {
                    f.upstream = Some(up.as_str());
                    return Ok(f);
                }
                Err(e) => {
                    // The error stays typed (transient or not); the log says whose.
                    if let Some(next) = self.order.get(i + 1) {
                        log::info!("AS{asn}: {up} failed: {e}; trying {next}");
                    }
                    // With several upstreams, the error says whose it is (an error in
                    // an upstream's own words names it already).
                    let e = match e {
                        e @ SourceError::Upstream { .. } => e,
                        e if self.order.len() > 1 => SourceError::Via {
                            upstream: up.as_str(),
                            error: Box::new(e),
                        },
                        e => e,
                    };
                    kept = match kept {
                        Some(k) if k.is_transient() || !e.is_transient() => Some(k),
                        _ => Some(e),
                    };
                }
            }
        }
        Err(kept.unwrap_or_else(|| SourceError::Invalid("no ASN upstream configured".into())))
    }
}

impl AsnClient {
    /// The prefixes of `asn` from upstream `up` alone.
    pub fn fetch_from(&self, up: AsnUpstream, asn: &str) -> Result<Fetched, SourceError> {
        match up {
            AsnUpstream::Ripestat => self.ripe.fetch(asn),
            AsnUpstream::Ipverse => self.ipverse.as_ref().map_or_else(none, |c| c.fetch(asn)),
            AsnUpstream::Bgptools => self.bgptools.as_ref().map_or_else(none, |c| c.fetch(asn)),
        }
    }
}

/// An upstream in the order without its client (cannot happen: both are built from
/// the same list).
fn none() -> Result<Fetched, SourceError> {
    Err(SourceError::Invalid("upstream not set up".into()))
}
