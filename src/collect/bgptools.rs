//! bgp.tools: one download of the whole routing table (`table.jsonl`, about 1.2M
//! lines of `{"CIDR":"1.0.0.0/24","ASN":13335,"Hits":..}`) answers for every ASN. It
//! is read as it streams, keeping only the prefixes of the configured ASNs, so memory
//! is bounded by what is kept whatever the table's size; nothing of it is written.
//! The prefixes kept are reused for `refresh_hours`: the table is downloaded at most
//! once in that time for all ASNs together (retries of failed sources included).

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ipnet::IpNet;

use super::feed::read_whole_lines;
use super::fetch::{Fetched, Keep, SourceError};
use super::fetcher::{Fetcher, Request, Transport};
use crate::config::upstreams::BgptoolsConfig;
use crate::config::MinPrefix;

/// Cap on the table's size: it streams, so this only stops an endless body.
const TABLE_LIMIT: u64 = 1 << 30;

/// Shortest time the table's download is given: some 30 MB over a slow link.
const MIN_TIMEOUT: Duration = Duration::from_secs(300);

/// The prefixes of the configured ASNs from one download.
#[derive(Debug)]
struct Table {
    /// When it was downloaded.
    at: Instant,
    /// The ASNs that were looked for, sorted.
    wanted: Vec<u32>,
    /// Their prefixes, by ASN in `wanted`'s order (`None`: absent from the table, so
    /// it announces nothing there). Sorted vectors, not hash maps: a few dozen ASNs are
    /// found by binary search as fast, and without a hash table's code on flash.
    prefixes: Vec<Option<Vec<IpNet>>>,
}

/// The last table of each URL in this process (the daemon keeps it between runs).
static TABLES: Mutex<Vec<(String, Table)>> = Mutex::new(Vec::new());

/// One line of `table.jsonl`: its ASN and CIDR text, if it has both. A fuzz entry
/// point: any input gives an answer, never a panic.
///
/// ```
/// use ripe_cidr_collector::collect::bgptools::parse_line;
/// assert_eq!(parse_line(r#"{"CIDR":"1.0.0.0/24","ASN":13335,"Hits":98}"#), Some((13335, "1.0.0.0/24")));
/// assert_eq!(parse_line("garbage"), None);
/// ```
pub fn parse_line(line: &str) -> Option<(u32, &str)> {
    let cidr = after_key(line, "\"CIDR\"")?;
    let cidr = cidr.strip_prefix('"')?;
    let cidr = &cidr[..cidr.find('"')?];
    let asn = after_key(line, "\"ASN\"")?;
    let digits = asn.find(|c: char| !c.is_ascii_digit()).unwrap_or(asn.len());
    Some((asn[..digits].parse().ok()?, cidr))
}

/// What follows `key` and its `:` in `line`, spaces skipped.
fn after_key<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let rest = &line[line.find(key)? + key.len()..];
    rest.trim_start().strip_prefix(':').map(str::trim_start)
}

/// The configured ASNs as numbers, sorted, each once.
fn sorted_asns(asns: &[String]) -> Vec<u32> {
    let mut v: Vec<u32> = asns.iter().filter_map(|a| a.parse().ok()).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The bgp.tools upstream of one run.
#[derive(Debug)]
pub struct BgptoolsClient {
    fetcher: Fetcher,
    url: String,
    refresh: Duration,
    min_prefix: MinPrefix,
    /// Every ASN configured, sorted and once each: one download looks for all of them.
    wanted: Vec<u32>,
    /// Where the time of the last download is kept (`bgptools.stamp` in the data
    /// directory), so that separate `run` processes also download at most once per
    /// `refresh_hours`; a few bytes, not the table.
    pub stamp: Option<PathBuf>,
}

impl BgptoolsClient {
    /// A client for `cfg` (whose `user_agent` the configuration requires), looking
    /// for `asns` in the table.
    pub fn new(
        cfg: &BgptoolsConfig,
        timeout: Duration,
        min_prefix: MinPrefix,
        transport: &Transport,
        asns: &[String],
    ) -> BgptoolsClient {
        let ua = cfg.user_agent.as_deref().unwrap_or(super::USER_AGENT);
        BgptoolsClient {
            fetcher: Fetcher::new(transport, timeout.max(MIN_TIMEOUT)).with_user_agent(ua),
            url: cfg.url.clone(),
            refresh: Duration::from_secs(u64::from(cfg.refresh_hours) * 3600),
            min_prefix,
            wanted: sorted_asns(asns),
            stamp: None,
        }
    }

    /// The prefixes of `asn` in the table, downloaded now unless a download of the
    /// last `refresh_hours` looked for it. An ASN the table does not have is a 404
    /// (unknown here: the next upstream is tried).
    pub fn fetch(&self, asn: &str) -> Result<Fetched, SourceError> {
        let n: u32 = asn
            .parse()
            .map_err(|_| SourceError::Invalid(format!("invalid ASN {asn:?}")))?;
        // One download at a time: the other fetch threads wait and reuse it.
        let mut tables = TABLES.lock().unwrap_or_else(|p| p.into_inner());
        let pos = tables
            .iter()
            .position(|(u, t)| *u == self.url && t.at.elapsed() < self.refresh);
        let i = match pos {
            Some(i) if tables[i].1.wanted.binary_search(&n).is_ok() => i,
            Some(_) => {
                return Err(SourceError::Upstream {
                    status: None,
                    message: format!(
                        "bgp.tools: AS{n} was added after the table was read; it is read \
                         again at most every {} h",
                        self.refresh.as_secs() / 3600
                    ),
                })
            }
            None => {
                self.check_stamp()?;
                let t = self.download()?;
                self.write_stamp();
                tables.retain(|(u, _)| *u != self.url);
                tables.push((self.url.clone(), t));
                tables.len() - 1
            }
        };
        let t = &tables[i].1;
        match t
            .wanted
            .binary_search(&n)
            .ok()
            .and_then(|w| t.prefixes[w].as_ref())
        {
            Some(p) => Ok(Fetched::new(p.clone(), 0)),
            None => Err(SourceError::Http { status: 404 }),
        }
    }

    /// Refuses a download when another process downloaded the table within
    /// `refresh_hours` (its prefixes are stored; the next upstream is asked).
    fn check_stamp(&self) -> Result<(), SourceError> {
        let Some(path) = &self.stamp else {
            return Ok(());
        };
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let mut lines = text.lines();
        let (url, at) = (
            lines.next(),
            lines.next().and_then(|s| s.parse::<i64>().ok()),
        );
        let age = at.map(|at| crate::util::unix_now().saturating_sub(at));
        match age {
            Some(age) if url == Some(self.url.as_str()) && (0..self.refresh.as_secs() as i64).contains(&age) => {
                Err(SourceError::Upstream {
                    status: None,
                    message: format!(
                        "bgp.tools: the table was downloaded {} min ago; it is downloaded at most every {} h",
                        age / 60,
                        self.refresh.as_secs() / 3600
                    ),
                })
            }
            _ => Ok(()),
        }
    }

    fn write_stamp(&self) {
        if let Some(path) = &self.stamp {
            let text = format!("{}\n{}\n", self.url, crate::util::unix_now());
            if let Err(e) = crate::util::write_atomic(path, text.as_bytes()) {
                log::warn!("{}: {e}", path.display());
            }
        }
    }

    /// Downloads the table, keeping the prefixes of the wanted ASNs.
    fn download(&self) -> Result<Table, SourceError> {
        let rq = Request {
            url: &self.url,
            query: &[],
            accept: "application/x-ndjson, */*;q=0.5",
            limit: TABLE_LIMIT,
        };
        let mut prefixes: Vec<Option<Keep>> = self.wanted.iter().map(|_| None).collect();
        let min = self.min_prefix;
        self.fetcher.get(&rq, |answer| {
            if !(200..300).contains(&answer.status) {
                return Err(SourceError::Http {
                    status: answer.status,
                });
            }
            read_whole_lines(answer.body, &mut |line| {
                let Some((asn, cidr)) = line.ok().and_then(parse_line) else {
                    return Ok(());
                };
                let Ok(w) = self.wanted.binary_search(&asn) else {
                    return Ok(());
                };
                let keep = prefixes[w]
                    .get_or_insert_with(|| Keep::new(format!("AS{asn}: skipped from bgp.tools")));
                keep.push(super::ripe::prefix(cidr, min))
            })
        })?;
        log::info!(
            "bgp.tools: table read, prefixes of {} of {} ASNs kept",
            prefixes.iter().flatten().count(),
            self.wanted.len()
        );
        Ok(Table {
            at: Instant::now(),
            wanted: self.wanted.clone(),
            prefixes: prefixes
                .into_iter()
                .map(|k| k.map(|k| k.finish().values))
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_lines() {
        assert_eq!(
            parse_line(r#"{"CIDR": "2a00:1450::/32", "ASN": 15169, "Hits": 1}"#),
            Some((15169, "2a00:1450::/32"))
        );
        assert_eq!(
            parse_line(r#"{"ASN":13335,"CIDR":"1.1.1.0/24"}"#),
            Some((13335, "1.1.1.0/24"))
        );
        for bad in [
            "",
            "{}",
            r#"{"CIDR":"1.0.0.0/24"}"#,
            r#"{"CIDR":1,"ASN":1}"#,
            r#"{"CIDR":"x","ASN":"1"}"#,
            r#"{"CIDR":"x","ASN":99999999999}"#,
        ] {
            assert_eq!(parse_line(bad), None, "{bad}");
        }
    }
}
