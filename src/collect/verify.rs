//! `service verify`: the catalog checked against the world. Each catalog ASN's
//! RIPEstat `as-overview` (its holder still starts with the catalog's holder,
//! case-insensitive, and it is announced) and each vendor feed fetched (it answers
//! with at least one valid line). A check that does not hold is a finding (exit 1);
//! a request that failed is an upstream failure (exit 3): nothing could be said.

use super::feed::FeedClient;
use super::fetch::SourceError;
use super::ripe::RipeClient;
use super::Transport;
use crate::catalog::Service;
use crate::config::Config;
use crate::util::json::{ToJson, Writer};

/// One check: the service, what was checked (`AS62041`, a feed URL) and, unless
/// it holds, why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub service: String,
    pub what: String,
    pub outcome: Outcome,
}

/// How a check ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Holds,
    /// The world differs from the catalog (the reason).
    Drift(String),
    /// The upstream failed (its error).
    Failed(String),
}

/// Every check of `services` (the catalog's in its order), ASNs first.
pub fn verify(cfg: &Config, services: &[&Service]) -> Vec<Check> {
    let feeds: Vec<&str> = services
        .iter()
        .flat_map(|s| s.feeds.iter().map(String::as_str))
        .collect();
    let mut urls = feeds.clone();
    urls.push(&cfg.ripe.url);
    let transport = Transport::new(&cfg.fetch, &urls);
    let ripe = RipeClient::new(&cfg.ripe, &transport);
    let asns: Vec<(&Service, &crate::catalog::Asn)> = services
        .iter()
        .flat_map(|s| s.asns.iter().map(move |a| (*s, a)))
        .collect();
    let overviews = ripe.overviews(asns.iter().map(|(_, a)| a.asn.as_str()).collect());
    let mut out = Vec::new();
    for ((s, a), o) in asns.iter().zip(overviews) {
        let outcome = match o {
            Err(e) => Outcome::Failed(format!("RIPEstat as-overview: {e}")),
            Ok(o) => asn_outcome(&a.holder, o.holder.as_deref(), o.announced),
        };
        out.push(Check {
            service: s.name.clone(),
            what: format!("AS{}", a.asn),
            outcome,
        });
    }
    let feed = FeedClient::new(cfg, &transport);
    for s in services {
        for url in &s.feeds {
            out.push(Check {
                service: s.name.clone(),
                what: url.clone(),
                outcome: feed_outcome(feed.fetch(url)),
            });
        }
    }
    out
}

/// Whether an ASN still is what the catalog says: its holder `got` starts with
/// `want` (case-insensitive), and it is announced.
pub fn asn_outcome(want: &str, got: Option<&str>, announced: bool) -> Outcome {
    let Some(got) = got else {
        return Outcome::Drift("RIPEstat names no holder".into());
    };
    let starts = got
        .get(..want.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(want));
    if !starts {
        return Outcome::Drift(format!("holder {got:?} does not start with {want:?}"));
    }
    match announced {
        true => Outcome::Holds,
        false => Outcome::Drift("not announced".into()),
    }
}

/// A feed holds when it answers with at least one valid line; a 404 or 410 is drift
/// (the vendor moved it), any other failure the upstream's.
fn feed_outcome(r: Result<super::Fetched, SourceError>) -> Outcome {
    match r {
        Ok(f) if !f.values.is_empty() => Outcome::Holds,
        Ok(f) => Outcome::Drift(format!("no valid line ({} skipped)", f.skipped)),
        Err(SourceError::Http {
            status: s @ (404 | 410),
        }) => Outcome::Drift(format!("HTTP status {s}: the list is gone")),
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

/// The checks as `service verify --json` prints them: `{"checks": [{"service",
/// "what", "holds", "drift"|"failed"}], "holds": bool, "upstream_failed": bool}`.
pub struct Report<'a>(pub &'a [Check]);

impl ToJson for Report<'_> {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.begin_object();
        w.key("checks");
        w.begin_array();
        for c in self.0 {
            w.begin_object();
            w.field("service", &c.service);
            w.field("what", &c.what);
            w.field("holds", &(c.outcome == Outcome::Holds));
            match &c.outcome {
                Outcome::Holds => {}
                Outcome::Drift(why) => w.field("drift", why),
                Outcome::Failed(why) => w.field("failed", why),
            }
            w.end_object();
        }
        w.end_array();
        let holds = self.0.iter().all(|c| c.outcome == Outcome::Holds);
        w.field("holds", &holds);
        w.field(
            "upstream_failed",
            &self
                .0
                .iter()
                .any(|c| matches!(c.outcome, Outcome::Failed(_))),
        );
        w.end_object();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holders_are_compared_as_case_insensitive_prefixes() {
        assert_eq!(
            asn_outcome("TELEGRAM", Some("TELEGRAM - Telegram Messenger Inc"), true),
            Outcome::Holds
        );
        assert_eq!(
            asn_outcome("telegram", Some("TELEGRAM"), true),
            Outcome::Holds
        );
        for (got, announced, why) in [
            (Some("TELE"), true, "does not start with"),
            (Some("VK-AS - VK LLC"), true, "does not start with"),
            (None, true, "no holder"),
            (Some("TELEGRAM"), false, "not announced"),
        ] {
            match asn_outcome("TELEGRAM", got, announced) {
                Outcome::Drift(m) => assert!(m.contains(why), "{m}"),
                other => panic!("{got:?}: {other:?}"),
            }
        }
        // Not a byte boundary inside a holder: no panic, drift.
        assert!(matches!(
            asn_outcome("ABC", Some("ÄB"), true),
            Outcome::Drift(_)
        ));
    }
}
