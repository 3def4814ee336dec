//! Resolving host names to their A and AAAA addresses, through the system (libc)
//! resolver or a DNS-over-HTTPS JSON API.
//!
//! Both resolvers treat a name the same way: it fails when it does not exist or when
//! neither family could be looked up; a name that exists without addresses is a
//! success with nothing in it. When only one family fails (say AAAA gets SERVFAIL),
//! the other family's addresses are used and the failure is logged: stored addresses
//! of the failed family are not lost, they stay until their TTL.

use std::io;
use std::net::{IpAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use ipnet::IpNet;

use super::fetch::{Fetched, Keep, SourceError};
use super::fetcher::{Fetcher, Request, Transport};
use super::upstream_json::{bad_body, Next, ScanError, Scanner};
use crate::config::{DnsConfig, Resolver};

/// Default cap on the size of a DoH answer; real ones are well under 10 KiB.
pub const DEFAULT_BODY_LIMIT: u64 = 1 << 20;

/// System lookups still running after their timeout (each holds a thread). Past
/// this many, new lookups fail at once instead of piling up threads on a router
/// whose resolver hangs.
const MAX_HUNG_LOOKUPS: usize = 4;

/// System lookups in progress, including those whose caller gave up waiting.
static LOOKUPS_RUNNING: AtomicUsize = AtomicUsize::new(0);

/// A resolver for one collection run.
#[derive(Debug)]
pub struct DnsClient {
    resolver: Resolver,
    timeout: Duration,
    doh_url: String,
    /// The requests, for DoH only.
    fetcher: Option<Fetcher>,
    /// Largest DoH answer accepted, in bytes.
    pub body_limit: u64,
}

impl DnsClient {
    /// A resolver with the settings of `cfg`; DoH requests go through `transport`.
    pub fn new(cfg: &DnsConfig, transport: &Transport) -> DnsClient {
        let timeout = Duration::from_secs(cfg.timeout_seconds);
        DnsClient {
            resolver: cfg.resolver,
            timeout,
            doh_url: cfg.doh_url.clone(),
            fetcher: (cfg.resolver == Resolver::Doh).then(|| Fetcher::new(transport, timeout)),
            body_limit: DEFAULT_BODY_LIMIT,
        }
    }

    /// The A and AAAA addresses of `name`, normalised, sorted and without
    /// duplicates. Each lookup (system; or each of the two DoH requests) is limited
    /// to the configured timeout.
    pub fn resolve(&self, name: &str) -> Result<Fetched, SourceError> {
        let name = crate::source::normalize_fqdn(name).map_err(SourceError::Invalid)?;
        match &self.fetcher {
            Some(fetcher) if self.resolver == Resolver::Doh => self.resolve_doh(fetcher, &name),
            _ => resolve_system(&name, self.timeout, system_lookup),
        }
    }

    /// Both families over DoH, one request each.
    fn resolve_doh(&self, fetcher: &Fetcher, name: &str) -> Result<Fetched, SourceError> {
        let a = self.doh_query(fetcher, name, "A");
        let aaaa = self.doh_query(fetcher, name, "AAAA");
        match (a, aaaa) {
            (Ok(a), Ok(aaaa)) => {
                let values = [a.values, aaaa.values].concat();
                Ok(Fetched::new(values, a.skipped + aaaa.skipped))
            }
            (Ok(ok), Err(e)) | (Err(e), Ok(ok)) => {
                log::warn!("{name}: one address family failed, using the other: {e}");
                Ok(ok)
            }
            (Err(SourceError::NxDomain), Err(SourceError::NxDomain)) => Err(SourceError::NxDomain),
            // The A error speaks for both; the AAAA one is usually the same.
            (Err(e), Err(_)) => Err(e),
        }
    }

    /// One DoH JSON request: the addresses of type `rtype` (`A` or `AAAA`) and how
    /// many invalid ones were skipped.
    fn doh_query(
        &self,
        fetcher: &Fetcher,
        name: &str,
        rtype: &str,
    ) -> Result<Fetched, SourceError> {
        let rq = Request {
            url: &self.doh_url,
            query: &[("name", name), ("type", rtype)],
            accept: "application/dns-json",
            limit: self.body_limit,
        };
        fetcher.get(&rq, |answer| {
            if !(200..300).contains(&answer.status) {
                return Err(SourceError::Http {
                    status: answer.status,
                });
            }
            let mut keep = Keep::new(format!("{name}: skipped from DoH {rtype} answer"));
            let mut sc = Scanner::new(answer.body);
            let status = doh_answer(&mut sc, &mut keep)
                .and_then(|status| sc.end().map(|_| status))
                .map_err(|e| bad_body(e, "DoH", sc.start()))?;
            match status {
                0 => Ok(keep.finish()),
                3 => Err(SourceError::NxDomain),
                code => Err(SourceError::Dns(format!(
                    "DoH server answered {} for {rtype}",
                    rcode_name(code)
                ))),
            }
        })
    }
}

/// Reads a DoH JSON answer (RFC 8427 style, as served by Cloudflare, Google,
/// AdGuard, dnsmasq front ends ...): its `Status`, and the address records of its
/// `Answer` into `keep`. Other keys are skipped.
fn doh_answer(sc: &mut Scanner, keep: &mut Keep) -> Result<u32, ScanError> {
    sc.begin_object()?;
    let mut status = None;
    while let Some(key) = sc.next_key()? {
        match key {
            "Status" => {
                // Not quoted: a failure text never carries what an answer held.
                let bad = |_| ScanError::Shape("Status is not a response code".into());
                status = Some(sc.number()?.parse::<u32>().map_err(bad)?);
            }
            "Answer" => {
                if sc.null()? {
                    continue;
                }
                sc.begin_array()?;
                while sc.next_item()? {
                    record(sc, keep)?;
                }
            }
            _ => sc.skip()?,
        }
    }
    status.ok_or_else(|| ScanError::Shape("no Status".into()))
}

/// One answer record: an address (`type` 1 or 28, in `data`) goes to `keep`. Only
/// address records count: a CNAME chain lists the aliases first.
fn record(sc: &mut Scanner, keep: &mut Keep) -> Result<(), ScanError> {
    sc.begin_object()?;
    let (mut rtype, mut data) = (None, Err("address record without data"));
    while let Some(key) = sc.next_key()? {
        let key = ["type", "data"].iter().position(|k| *k == key);
        match key {
            Some(0) if sc.peek()? == Next::Number => rtype = sc.number()?.parse::<u32>().ok(),
            Some(1) if sc.peek()? == Next::String => {
                data = sc
                    .string()?
                    .map(str::to_string)
                    .ok_or("address record data too long");
            }
            _ => sc.skip()?,
        }
    }
    // A record without a type is no DNS record (`{}`): the answer is broken, not empty.
    let Some(rtype) = rtype else {
        return Err(ScanError::Shape(
            "an Answer record without a numeric type".into(),
        ));
    };
    if matches!(rtype, 1 | 28) {
        let address = data.map_err(String::from).and_then(|d| address(&d));
        keep.push(address).map_err(super::upstream_json::failed)?;
    }
    Ok(())
}

/// An address as stored (a host prefix, written without its length).
fn address(s: &str) -> Result<IpNet, String> {
    s.trim()
        .parse::<IpAddr>()
        .map(IpNet::from)
        .map_err(|_| format!("invalid IP address {s:?}"))
}

/// The name of a DNS response code, for messages.
fn rcode_name(code: u32) -> String {
    let name = match code {
        1 => "FORMERR",
        2 => "SERVFAIL",
        4 => "NOTIMP",
        5 => "REFUSED",
        _ => return format!("response code {code}"),
    };
    format!("{name} (response code {code})")
}

/// The addresses of `name` through the libc resolver, both families.
pub(super) fn system_lookup(name: &str) -> io::Result<Vec<IpAddr>> {
    Ok((name, 0).to_socket_addrs()?.map(|a| a.ip()).collect())
}

/// Decrements [`LOOKUPS_RUNNING`] when a lookup thread ends, however it ends.
struct Running;

impl Drop for Running {
    fn drop(&mut self) {
        LOOKUPS_RUNNING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Looks `name` up with `lookup` (the system resolver) within `timeout`.
fn resolve_system(
    name: &str,
    timeout: Duration,
    lookup: fn(&str) -> io::Result<Vec<IpAddr>>,
) -> Result<Fetched, SourceError> {
    let ips = match lookup_on_thread(name, timeout, lookup)? {
        Ok(ips) => ips,
        Err(e) => return system_error(&e),
    };
    Ok(Fetched::new(ips.into_iter().map(IpNet::from).collect(), 0))
}

/// Runs `lookup` on a helper thread and waits at most `timeout`: getaddrinfo has no
/// timeout of its own, and a hung resolver must not stall the whole run. Also used
/// for the host names of the HTTP client's servers.
pub(super) fn lookup_on_thread(
    name: &str,
    timeout: Duration,
    lookup: fn(&str) -> io::Result<Vec<IpAddr>>,
) -> Result<io::Result<Vec<IpAddr>>, SourceError> {
    if LOOKUPS_RUNNING.fetch_add(1, Ordering::SeqCst) >= MAX_HUNG_LOOKUPS {
        LOOKUPS_RUNNING.fetch_sub(1, Ordering::SeqCst);
        return Err(SourceError::Dns(
            "the system resolver is not answering (earlier lookups still hang)".into(),
        ));
    }
    let running = Running;
    // Capacity 1: the helper's single send never blocks, even after a timeout.
    let (tx, rx) = mpsc::sync_channel(1);
    let host = name.to_owned();
    let spawned = thread::Builder::new()
        .name("dns-lookup".into())
        .spawn(move || {
            let _running = running;
            let _ = tx.send(lookup(&host));
        });
    if let Err(e) = spawned {
        // The closure, and with it `running`, was dropped: the count is restored.
        return Err(SourceError::Dns(format!(
            "cannot start a lookup thread: {e}"
        )));
    }
    match rx.recv_timeout(timeout) {
        Ok(result) => Ok(result),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(SourceError::Timeout {
            seconds: timeout.as_secs().max(1),
        }),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Err(SourceError::Dns("the lookup thread failed".into()))
        }
    }
}

/// Classifies a failed getaddrinfo. The standard library only passes on the text of
/// `gai_strerror`, so the glibc and musl wordings are matched.
pub(super) fn system_error(e: &io::Error) -> Result<Fetched, SourceError> {
    let text = e.to_string();
    let detail = text
        .strip_prefix("failed to lookup address information: ")
        .unwrap_or(&text);
    let lower = detail.to_ascii_lowercase();
    // EAI_NONAME: glibc "Name or service not known", musl "Name does not resolve".
    if lower.contains("not known") || lower.contains("does not resolve") {
        return Err(SourceError::NxDomain);
    }
    // EAI_NODATA: the name exists but has no address, like DoH Status 0 without
    // answers. glibc "No address associated with hostname", musl "Name has no
    // usable address".
    if lower.contains("no address associated") || lower.contains("no usable address") {
        return Ok(Fetched::default());
    }
    Err(SourceError::Dns(detail.to_string()))
}

/// The fuzz target's way in: `data` as a DoH JSON answer body.
#[cfg(fuzzing)]
pub(crate) fn fuzz_answer(data: &[u8]) {
    let mut keep = Keep::new("fuzz".into());
    let mut body = data;
    let mut sc = Scanner::new(&mut body);
    let _ = doh_answer(&mut sc, &mut keep).and_then(|_| sc.end());
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::super::fetch::fake::{FakeServer, Reply};
    use super::*;

    fn system() -> DnsConfig {
        DnsConfig {
            resolver: Resolver::System,
            doh_url: "https://unused.example/dns-query".into(),
            timeout_seconds: 5,
        }
    }

    fn doh(server: &FakeServer) -> DnsClient {
        let cfg = DnsConfig {
            resolver: Resolver::Doh,
            doh_url: format!("{}/dns-query", server.base),
            timeout_seconds: 1,
        };
        DnsClient::new(&cfg, &Transport::plain())
    }

    fn resolve(cfg: &DnsConfig, name: &str) -> Result<Fetched, SourceError> {
        DnsClient::new(cfg, &Transport::plain()).resolve(name)
    }

    fn texts(f: &Fetched) -> Vec<String> {
        f.texts(crate::source::Kind::Fqdn)
    }

    /// A DoH JSON answer with `records` as (type, data).
    fn answer(status: u32, records: &[(u32, &str)]) -> String {
        let list: Vec<String> = records
            .iter()
            .map(|(t, d)| format!(r#"{{"name":"x.example.","type":{t},"TTL":300,"data":"{d}"}}"#))
            .collect();
        format!(
            r#"{{"Status":{status},"TC":false,"RD":true,"RA":true,"AD":false,"CD":false,
                "Question":[{{"name":"x.example.","type":1}}],"Answer":[{}]}}"#,
            list.join(",")
        )
    }

    /// A server answering A and AAAA questions with the given bodies.
    fn by_type(a: String, aaaa: String) -> FakeServer {
        FakeServer::start_with(move |_, url| {
            if url.contains("type=AAAA") {
                Reply::new(200, aaaa.clone())
            } else {
                Reply::new(200, a.clone())
            }
        })
    }

    #[test]
    fn system_localhost() {
        let f = resolve(&system(), "localhost").unwrap();
        assert!(!f.values.is_empty());
        assert!(
            texts(&f).iter().all(|v| v == "127.0.0.1" || v == "::1"),
            "{:?}",
            f.values
        );
    }

    #[test]
    fn system_nonexistent_fails() {
        let e = resolve(&system(), "nonexistent.invalid").unwrap_err();
        assert!(
            matches!(e, SourceError::NxDomain | SourceError::Dns(_)),
            "{e:?}"
        );
    }

    #[test]
    fn system_hang_times_out() {
        fn hang(_: &str) -> io::Result<Vec<IpAddr>> {
            thread::sleep(Duration::from_secs(20));
            Ok(vec![IpAddr::from([192, 0, 2, 1])])
        }
        let started = Instant::now();
        let e = resolve_system("example.com", Duration::from_millis(200), hang).unwrap_err();
        assert_eq!(e, SourceError::Timeout { seconds: 1 });
        // 0.2 s normally; waiting for the lookup would take 20 s.
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn system_error_wording() {
        let e = |m: &str| io::Error::other(format!("failed to lookup address information: {m}"));
        assert_eq!(
            system_error(&e("Name or service not known")),
            Err(SourceError::NxDomain)
        );
        assert_eq!(
            system_error(&e("Name does not resolve")),
            Err(SourceError::NxDomain)
        );
        assert_eq!(
            system_error(&e("No address associated with hostname")),
            Ok(Fetched::default())
        );
        assert_eq!(
            system_error(&e("Temporary failure in name resolution")),
            Err(SourceError::Dns(
                "Temporary failure in name resolution".into()
            ))
        );
    }

    #[test]
    fn doh_cname_chain() {
        let s = by_type(
            answer(
                0,
                &[
                    (5, "example.com."),
                    (1, "93.184.216.34"),
                    (1, "93.184.216.34"),
                ],
            ),
            answer(
                0,
                &[
                    (5, "example.com."),
                    (28, "2606:2800:220:1:248:1893:25C8:1946"),
                ],
            ),
        );
        let f = doh(&s).resolve("WWW.Example.com.").unwrap();
        assert_eq!(
            texts(&f),
            ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]
        );
        assert_eq!(f.skipped, 0);
        let seen = s.seen();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].url, "/dns-query?name=www.example.com&type=A");
        assert_eq!(seen[1].url, "/dns-query?name=www.example.com&type=AAAA");
        for r in &seen {
            assert_eq!(r.accept.as_deref(), Some("application/dns-json"));
        }
    }

    #[test]
    fn doh_nxdomain_fails() {
        let s = by_type(answer(3, &[]), answer(3, &[]));
        assert_eq!(
            doh(&s).resolve("nonexistent.example").unwrap_err(),
            SourceError::NxDomain
        );
    }

    #[test]
    fn doh_empty_is_success() {
        let s = by_type(answer(0, &[]), r#"{"Status":0}"#.to_string());
        assert_eq!(
            doh(&s).resolve("empty.example").unwrap(),
            Fetched::default()
        );
    }

    #[test]
    fn doh_one_family_failing() {
        let s = by_type(answer(0, &[(1, "192.0.2.1")]), answer(2, &[]));
        assert_eq!(texts(&doh(&s).resolve("x.example").unwrap()), ["192.0.2.1"]);
        let s = by_type(answer(2, &[]), answer(2, &[]));
        let e = doh(&s).resolve("x.example").unwrap_err();
        assert_eq!(
            e.to_string(),
            "DNS lookup failed: DoH server answered SERVFAIL (response code 2) for A"
        );
    }

    #[test]
    fn doh_invalid_addresses_skipped() {
        let s = by_type(
            answer(0, &[(1, "192.0.2.1"), (1, "not-an-ip"), (1, "300.1.1.1")]),
            r#"{"Status":0,"Answer":[{"type":28}]}"#.to_string(),
        );
        let f = doh(&s).resolve("x.example").unwrap();
        assert_eq!(texts(&f), ["192.0.2.1"]);
        assert_eq!(f.skipped, 3);
    }

    #[test]
    fn doh_records_without_a_type_fail() {
        let body = r#"{"Status":0,"Answer":[{},{}]}"#.to_string();
        let s = by_type(body.clone(), body);
        let e = doh(&s).resolve("x.example").unwrap_err();
        assert!(e.to_string().contains("without a numeric type"), "{e}");
    }

    #[test]
    fn doh_bad_answers() {
        let s = FakeServer::start(vec![Reply::new(200, "<html>")]);
        let e = doh(&s).resolve("x.example").unwrap_err();
        assert!(
            matches!(&e, SourceError::BadBody(m) if m.contains("not JSON")),
            "{e}"
        );

        let s = FakeServer::start(vec![Reply::new(200, r#"{"Answer":[]}"#)]);
        let e = doh(&s).resolve("x.example").unwrap_err();
        assert!(
            matches!(&e, SourceError::BadBody(m) if m.contains("shape")),
            "{e}"
        );

        let s = FakeServer::start(vec![Reply::new(502, "")]);
        assert_eq!(
            doh(&s).resolve("x.example").unwrap_err(),
            SourceError::Http { status: 502 }
        );

        let s = FakeServer::start(vec![Reply::new(200, answer(0, &[(1, "192.0.2.1")]))]);
        let mut c = doh(&s);
        c.body_limit = 100;
        assert_eq!(
            c.resolve("x.example").unwrap_err(),
            SourceError::TooLarge { limit: 100 }
        );

        let s = FakeServer::start(vec![Reply::new(200, "{}").delay(Duration::from_secs(20))]);
        let started = Instant::now();
        assert_eq!(
            doh(&s).resolve("x.example").unwrap_err(),
            SourceError::Timeout { seconds: 1 }
        );
        // 1 s normally (the timeout); the answer comes after 20 s.
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn invalid_name() {
        assert!(matches!(
            resolve(&system(), "1.2.3.4"),
            Err(SourceError::Invalid(_))
        ));
    }
}
