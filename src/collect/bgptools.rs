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
    crate::util::sort::sort(&mut v);
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
    /// Where the last download is recorded, so that separate `run` processes also
    /// download at most once per `refresh_hours`.
    pub stamp: Option<Stamp>,
}

/// The record of the last download (`bgptools.stamp` in the data directory: its
/// URL, time, and the ASNs it found and looked for; a few bytes, not the table).
#[derive(Debug)]
pub struct Stamp {
    /// The file.
    pub path: PathBuf,
    /// The ASNs that hold stored values, sorted: only those can be seen again
    /// between downloads.
    pub held: Vec<u32>,
}

/// What the stamp of a download within `refresh_hours` says.
struct Stamped {
    minutes: i64,
    found: Vec<u32>,
    wanted: Vec<u32>,
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
                return Err(self.not_before(format!("AS{n} was added after the table was read")))
            }
            None => {
                if let Some(seen) = self.stamped() {
                    return self.seen_again(n, &seen);
                }
                let t = self.download()?;
                self.write_stamp(&t);
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

    /// bgp.tools cannot answer `why` before the next download.
    fn not_before(&self, why: String) -> SourceError {
        SourceError::Upstream {
            upstream: "bgp.tools",
            status: None,
            message: format!(
                "{why}; the table is downloaded at most every {} h",
                self.refresh.as_secs() / 3600
            ),
        }
    }

    /// What another process (or this one before a restart) found in a download of
    /// the last `refresh_hours`, from the stamp; `None` when a download is due.
    fn stamped(&self) -> Option<Stamped> {
        let stamp = self.stamp.as_ref()?;
        let text = std::fs::read_to_string(&stamp.path).unwrap_or_default();
        let mut lines = text.lines();
        let url = lines.next()?;
        let at = lines.next()?.parse::<i64>().ok()?;
        let age = crate::util::unix_now().saturating_sub(at);
        if url != self.url || !(0..self.refresh.as_secs() as i64).contains(&age) {
            return None;
        }
        let mut asns = || -> Vec<u32> {
            let line = lines.next().unwrap_or_default();
            line.split(' ').filter_map(|a| a.parse().ok()).collect()
        };
        let (found, wanted) = (asns(), asns());
        Some(Stamped {
            minutes: age / 60,
            found,
            wanted,
        })
    }

    /// Between downloads: an ASN the last table answered keeps its stored values,
    /// seen again (the table has not changed, as a feed's 304); one the table did
    /// not have is unknown there; one it was not asked for, or whose values are not
    /// stored (a database lost since), waits for the next download.
    fn seen_again(&self, n: u32, seen: &Stamped) -> Result<Fetched, SourceError> {
        let held = self
            .stamp
            .as_ref()
            .is_some_and(|s| s.held.binary_search(&n).is_ok());
        if seen.found.contains(&n) && held {
            let mut f = Fetched::new(Vec::new(), 0);
            f.not_modified = true;
            return Ok(f);
        }
        if seen.wanted.contains(&n) && !seen.found.contains(&n) {
            return Err(SourceError::Http { status: 404 });
        }
        let why = if seen.found.contains(&n) {
            "its prefixes are not stored any more"
        } else {
            "it was added since"
        };
        Err(self.not_before(format!(
            "AS{n}: the table was downloaded {} min ago and {why}",
            seen.minutes
        )))
    }

    /// Records the download, and which ASNs it looked for and found, for the
    /// processes that come before the next one is due.
    fn write_stamp(&self, t: &Table) {
        let Some(stamp) = &self.stamp else { return };
        let list = |f: &dyn Fn(usize) -> bool| {
            let asns = t.wanted.iter().enumerate().filter(|(i, _)| f(*i));
            asns.map(|(_, a)| a.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let found = list(&|i| t.prefixes[i].is_some());
        let text = format!(
            "{}\n{}\n{found}\n{}\n",
            self.url,
            crate::util::unix_now(),
            list(&|_| true)
        );
        if let Err(e) = crate::util::write_atomic(&stamp.path, text.as_bytes()) {
            log::warn!("{}: {e}", stamp.path.display());
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
