//! What makes an answer trusted before it changes a list: special ranges left out of
//! ASN and country answers, and a second opinion on an ASN whose answer the gate held
//! (`db::trust`): another upstream, or RIPEstat's cheap `routing-status` (an ASN's
//! announced prefix count in a few hundred bytes), through the same fetch layer.

use std::cell::Cell;

use super::asn::AsnClient;
use super::fetch::{Fetched, SourceError};
use super::ripe::RipeClient;
use super::upstream_json::{Next, ScanError, Scanner};
use crate::config::upstreams::AsnUpstream;
use crate::config::Config;

/// Special ranges logged one by one per answer; the rest are counted.
const LOGGED: usize = 5;

/// Leaves out of `f` the values that would capture the router's own or its LAN's
/// traffic (`source::special_range`), counting them as invalid (`name` in the log).
pub fn drop_special(f: &mut Fetched, name: &str) {
    let before = f.values.len();
    let mut logged = 0;
    f.values.retain(|v| match crate::source::special_range(v) {
        None => true,
        Some(why) => {
            if logged < LOGGED {
                log::warn!("{name}: skipped {v}: a {why} range (allow_special keeps it)");
            }
            logged += 1;
            false
        }
    });
    let dropped = before - f.values.len();
    if dropped > LOGGED {
        log::warn!("{name}: {} more special ranges skipped", dropped - LOGGED);
    }
    f.skipped += dropped;
}

impl RipeClient {
    /// How many prefixes `asn` announces, by RIPEstat's `routing-status` (IPv4 and
    /// IPv6 together), at the host of `ripe.url`.
    pub fn prefix_count(&self, asn: &str) -> Result<u64, SourceError> {
        let url = super::country::url(&self.url).replace("country-resource-list", "routing-status");
        let resource = format!("AS{asn}");
        let query = [
            ("resource", resource.as_str()),
            ("sourceapp", self.sourceapp.as_str()),
        ];
        let count = Cell::new(0u64);
        self.retrying(&format!("AS{asn} routing-status"), || {
            let what = ("data.announced_space", "routing-status");
            let context = format!("AS{asn}: routing-status");
            self.get_data(&url, &query, context, what, &mut |sc, _| {
                announced(sc).map(|n| n.map(|n| count.set(n)).is_some())
            })
        })?;
        Ok(count.get())
    }
}

/// `data` of a `routing-status` answer: `announced_space.v4.prefixes` plus
/// `announced_space.v6.prefixes`, `None` without `announced_space`.
fn announced(sc: &mut Scanner) -> Result<Option<u64>, ScanError> {
    if sc.null()? {
        return Ok(None);
    }
    let mut found = None;
    sc.begin_object()?;
    while let Some(key) = sc.next_key()? {
        let key = match key {
            "query_time" => 1,
            "announced_space" => 2,
            _ => 0,
        };
        match key {
            1 => sc.note_time(false)?,
            2 if sc.peek()? == Next::Object => {
                let mut n = 0u64;
                sc.begin_object()?;
                while sc.next_key()?.is_some() {
                    n = n.saturating_add(prefixes(sc)?);
                }
                found = Some(n);
            }
            _ => sc.skip()?,
        }
    }
    Ok(found)
}

/// `{"prefixes": N, ...}` of one family: N (0 when missing).
fn prefixes(sc: &mut Scanner) -> Result<u64, ScanError> {
    if sc.peek()? != Next::Object {
        sc.skip()?;
        return Ok(0);
    }
    let mut n = 0;
    sc.begin_object()?;
    while let Some(key) = sc.next_key()? {
        if key == "prefixes" && sc.peek()? == Next::Number {
            // Not quoted: a failure text never carries what an answer held.
            let bad = |_| ScanError::Shape("a prefixes value is not a count".into());
            n = sc.number()?.parse().map_err(bad)?;
        } else {
            sc.skip()?;
        }
    }
    Ok(n)
}

/// Who is asked for a second opinion on an ASN that `answered` (an upstream word):
/// `trust.confirm_with`, else the upstreams after it in `asn_upstreams`, then
/// `routing-status`.
pub fn opinions(cfg: &Config, answered: Option<&str>) -> Vec<&'static str> {
    let list = match &cfg.trust.confirm_with {
        Some(l) => l.clone(),
        None => {
            let order = &cfg.upstreams.asn;
            let at = order.iter().position(|u| Some(u.as_str()) == answered);
            let mut l: Vec<&str> = at
                .map_or(&order[..0], |i| &order[i + 1..])
                .iter()
                .map(|u| u.as_str())
                .collect();
            l.push("routing-status");
            l
        }
    };
    list.into_iter().filter(|w| Some(*w) != answered).collect()
}

/// The first second opinion that answers: its word and the number of prefixes it
/// gives for `asn` (special ranges left out, as from the answer, unless `special`).
pub fn second_opinion(
    asn: &AsnClient,
    words: &[&'static str],
    number: &str,
    special: bool,
) -> Option<(&'static str, u64)> {
    for &w in words {
        let r = match AsnUpstream::from_word(w) {
            Some(up) => asn.fetch_from(up, number).map(|mut f| {
                if !special {
                    drop_special(&mut f, &format!("AS{number} ({w})"));
                }
                f.values.len() as u64
            }),
            None => asn.ripe.prefix_count(number),
        };
        match r {
            Ok(n) => return Some((w, n)),
            Err(e) => log::info!("AS{number}: no second opinion from {w}: {e}"),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(body: &str) -> Result<Option<u64>, String> {
        let mut r = body.as_bytes();
        let mut sc = Scanner::new(&mut r);
        announced(&mut sc).map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn routing_status_counts_both_families() {
        let body = r#"{"visibility":{"v4":{"ris_peers_seeing":3}},"announced_space":{"v4":{"prefixes":9,"ips":4096},"v6":{"prefixes":3,"48s":3}},"query_time":"2026-11-27T08:00:00"}"#;
        assert_eq!(count(body), Ok(Some(12)));
        assert_eq!(count(r#"{"resource":"1"}"#), Ok(None));
        assert!(count(r#"{"announced_space":{"v4":{"prefixes":-1}}}"#).is_err());
    }

    #[test]
    fn specials_are_counted_as_invalid() {
        let nets = ["10.0.0.0/8", "192.0.2.0/24", "fe80::/10"].map(|s| s.parse().unwrap());
        let mut f = Fetched::new(nets.to_vec(), 1);
        drop_special(&mut f, "AS1");
        assert_eq!(f.texts(crate::source::Kind::Asn), ["192.0.2.0/24"]);
        assert_eq!(f.skipped, 3);
    }

    #[test]
    fn who_is_asked() {
        let mut cfg = Config::default();
        assert_eq!(opinions(&cfg, Some("ripestat")), ["routing-status"]);
        cfg.upstreams.asn = vec![AsnUpstream::Ripestat, AsnUpstream::Ipverse];
        assert_eq!(
            opinions(&cfg, Some("ripestat")),
            ["ipverse", "routing-status"]
        );
        assert_eq!(opinions(&cfg, Some("ipverse")), ["routing-status"]);
        cfg.trust.confirm_with = Some(vec!["ripestat", "ipverse"]);
        assert_eq!(opinions(&cfg, Some("ripestat")), ["ipverse"]);
    }
}
