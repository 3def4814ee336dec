//! Country lists: RIPEstat's `country-resource-list` data call. Its
//! `data.resources.ipv4` holds prefixes and `a-b` address ranges (split here into the
//! exact prefixes that cover them), `ipv6` holds prefixes; each value is kept as it
//! is read (the body streams through the scanner).

use std::net::IpAddr;

use ipnet::{IpNet, Ipv4Subnets, Ipv6Subnets};

use super::fetch::{Fetched, Keep, SourceError};
use super::upstream_json::{Next, ScanError, Scanner};
use crate::config::MinPrefix;

/// Most prefixes one range may split into: an `a-b` range of IPv4 addresses needs
/// at most 62; more means a hostile answer.
const MAX_SPLIT: usize = 256;

/// The `country-resource-list` URL on the host of `ripe_url` (the configured
/// `announced-prefixes` URL): `.../data/country-resource-list/data.json`.
pub(crate) fn url(ripe_url: &str) -> String {
    let base = match ripe_url.find("/data/") {
        Some(i) => &ripe_url[..i],
        None => {
            // Keep only scheme://host[:port].
            let after = ripe_url.find("://").map_or(0, |i| i + 3);
            let end = ripe_url[after..]
                .find('/')
                .map_or(ripe_url.len(), |i| after + i);
            &ripe_url[..end]
        }
    };
    format!("{base}/data/country-resource-list/data.json")
}

/// The exact prefixes covering the addresses `a` to `b` (both included), fewest
/// first-to-last. `a-b` with `b` before `a`, or of two families, is an error naming
/// the range.
///
/// ```
/// use ripe_cidr_collector::collect::country::range_prefixes;
/// let p = range_prefixes("10.0.0.0-10.0.2.255").unwrap();
/// assert_eq!(p.iter().map(|p| p.to_string()).collect::<Vec<_>>(), ["10.0.0.0/23", "10.0.2.0/24"]);
/// ```
pub fn range_prefixes(range: &str) -> Result<Vec<IpNet>, String> {
    let bad = |why: &str| Err(format!("invalid range {range:?}: {why}"));
    let Some((a, b)) = range.split_once('-') else {
        return bad("expected FIRST-LAST");
    };
    let (Ok(a), Ok(b)) = (a.trim().parse::<IpAddr>(), b.trim().parse::<IpAddr>()) else {
        return bad("the ends are not IP addresses");
    };
    let nets: Vec<IpNet> = match (a, b) {
        (IpAddr::V4(a), IpAddr::V4(b)) if a <= b => Ipv4Subnets::new(a, b, 0)
            .take(MAX_SPLIT)
            .map(IpNet::V4)
            .collect(),
        (IpAddr::V6(a), IpAddr::V6(b)) if a <= b => Ipv6Subnets::new(a, b, 0)
            .take(MAX_SPLIT)
            .map(IpNet::V6)
            .collect(),
        (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), IpAddr::V6(_)) => {
            return bad("the last address is before the first")
        }
        _ => return bad("the ends are of different families"),
    };
    if nets.len() >= MAX_SPLIT {
        return bad("splits into too many prefixes");
    }
    Ok(nets)
}

/// `data` of a country answer: whether it has `resources`, whose `ipv4` and `ipv6`
/// values go to `keep` (prefixes shorter than `min` are skipped as invalid).
pub(crate) fn data(sc: &mut Scanner, keep: &mut Keep, min: MinPrefix) -> Result<bool, ScanError> {
    if sc.null()? {
        return Ok(false);
    }
    sc.begin_object()?;
    let mut listed = false;
    while let Some(key) = sc.next_key()? {
        if let t @ ("latest_time" | "query_time") = key {
            let latest = t == "latest_time";
            sc.note_time(latest)?;
            continue;
        }
        if key != "resources" || sc.peek()? != Next::Object {
            sc.skip()?;
            continue;
        }
        listed = true;
        sc.begin_object()?;
        while let Some(key) = sc.next_key()? {
            if !matches!(key, "ipv4" | "ipv6") || sc.peek()? != Next::Array {
                sc.skip()?;
                continue;
            }
            sc.begin_array()?;
            while sc.next_item()? {
                let item = match sc.peek()? {
                    Next::String => sc.string()?.ok_or("value is too long"),
                    _ => {
                        sc.skip()?;
                        Err("value is not a string")
                    }
                };
                one(item, keep, min).map_err(super::upstream_json::failed)?;
            }
        }
    }
    Ok(listed)
}

/// One resource: a prefix, or a range split into prefixes.
fn one(item: Result<&str, &str>, keep: &mut Keep, min: MinPrefix) -> Result<(), SourceError> {
    let text = match item {
        Ok(t) => t,
        Err(e) => return keep.push(Err(e.to_string())),
    };
    if !text.contains('-') {
        return keep.push(super::ripe::prefix(text, min));
    }
    match range_prefixes(text) {
        Ok(nets) => {
            for n in nets {
                keep.push(super::ripe::prefix(&n.to_string(), min))?;
            }
            Ok(())
        }
        Err(e) => keep.push(Err(e)),
    }
}

/// The values of a whole country answer held in memory, as collection keeps them
/// (default `min_prefix`). A fuzz entry point: any input gives an answer or an error,
/// never a panic.
pub fn parse_answer(mut body: &[u8]) -> Result<Fetched, SourceError> {
    let mut keep = Keep::new("country".into());
    let min = MinPrefix::default();
    let head = super::ripe::read_data(&mut body, &mut |sc| data(sc, &mut keep, min));
    super::ripe::judge(
        200,
        head,
        keep,
        ("data.resources", "country-resource-list", 48),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_split_into_2_5_and_17_prefixes() {
        let count = |r: &str| range_prefixes(r).unwrap().len();
        assert_eq!(count("10.0.0.0-10.0.2.255"), 2);
        let five = range_prefixes("192.0.2.1-192.0.2.12").unwrap();
        assert_eq!(
            five.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "192.0.2.1/32",
                "192.0.2.2/31",
                "192.0.2.4/30",
                "192.0.2.8/30",
                "192.0.2.12/32"
            ]
        );
        assert_eq!(count("10.0.0.1-10.1.0.0"), 17);
        assert_eq!(count("2001:db8::-2001:db8::ffff"), 1);
        for bad in ["1.2.3.4", "1.2.3.9-1.2.3.1", "1.2.3.4-::1", "x-y"] {
            assert!(range_prefixes(bad).unwrap_err().contains(bad), "{bad}");
        }
    }

    #[test]
    fn answer_with_ranges_and_ipv6() {
        let body = br#"{"status":"ok","status_code":200,"messages":[],
            "data":{"resources":{"asn":["1","2"],
              "ipv4":["10.0.0.0-10.0.2.255","192.0.2.1-192.0.2.12","10.8.0.1-10.9.0.0",
                      "198.51.100.0/24","bogus","0.0.0.0/0"],
              "ipv6":["2001:db8::/32"]},"query_time":"x"}}"#;
        let f = parse_answer(body).unwrap();
        assert_eq!(f.values.len(), 2 + 5 + 17 + 1 + 1);
        assert_eq!(f.skipped, 2);
        assert!(f.values.contains(&"2001:db8::/32".parse().unwrap()));
        let e = parse_answer(br#"{"status":"ok","data":{}}"#).unwrap_err();
        assert!(e.to_string().contains("data.resources"), "{e}");
    }

    #[test]
    fn url_on_the_ripe_host() {
        assert_eq!(
            url("https://stat.ripe.net/data/announced-prefixes/data.json"),
            "https://stat.ripe.net/data/country-resource-list/data.json"
        );
        assert_eq!(
            url("http://127.0.0.1:9/x"),
            "http://127.0.0.1:9/data/country-resource-list/data.json"
        );
    }
}
