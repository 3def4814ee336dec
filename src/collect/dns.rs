//! Resolving host names to their A and AAAA addresses, through the system (libc)
//! resolver or a DNS-over-HTTPS JSON API.
//!
//! Both resolvers treat a name the same way: it fails when it does not exist or when
//! neither family could be looked up; a name that exists without addresses is a
//! success with nothing in it. When only one family fails (say AAAA gets SERVFAIL),
//! the other family's addresses are used and the failure is logged: stored addresses
//! of the failed family are not lost, they stay until their TTL.

use std::borrow::Cow;
use std::io;
use std::net::{IpAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use serde::Deserialize;

use super::fetch::{is_https, keep_valid, snippet, CaRoots, Fetched, Http, SourceError};
use crate::config::{DnsConfig, Resolver};

/// Default cap on the size of a DoH answer; real ones are well under 10 KiB.
pub const DEFAULT_BODY_LIMIT: u64 = 1 << 20;

/// System lookups still running after their timeout (each holds a thread). Past
/// this many, new lookups fail at once instead of piling up threads on a router
/// whose resolver hangs.
const MAX_HUNG_LOOKUPS: usize = 4;

/// System lookups in progress, including those whose caller gave up waiting.
static LOOKUPS_RUNNING: AtomicUsize = AtomicUsize::new(0);

/// Resolves `name` with the settings of `cfg`; see [`DnsClient::resolve`].
pub fn resolve(cfg: &DnsConfig, name: &str) -> Result<Fetched, SourceError> {
    DnsClient::new(cfg).resolve(name)
}

/// A resolver for one collection run.
#[derive(Debug)]
pub struct DnsClient {
    resolver: Resolver,
    timeout: Duration,
    doh_url: String,
    /// The HTTP client, for DoH only.
    http: Option<Http>,
    /// Largest DoH answer accepted, in bytes.
    pub body_limit: u64,
}

impl DnsClient {
    /// A resolver with the settings of `cfg`. For DoH over https the system CA
    /// bundle is read; nothing is read for the system resolver.
    pub fn new(cfg: &DnsConfig) -> DnsClient {
        let roots = if cfg.resolver == Resolver::Doh && is_https(&cfg.doh_url) {
            CaRoots::system()
        } else {
            CaRoots::not_loaded()
        };
        DnsClient::with_roots(cfg, &roots)
    }

    /// Like [`DnsClient::new`], with root certificates loaded by the caller (shared
    /// with the RIPEstat client of the same run).
    pub fn with_roots(cfg: &DnsConfig, roots: &CaRoots) -> DnsClient {
        let timeout = Duration::from_secs(cfg.timeout_seconds);
        DnsClient {
            resolver: cfg.resolver,
            timeout,
            doh_url: cfg.doh_url.clone(),
            http: (cfg.resolver == Resolver::Doh).then(|| Http::new(timeout, roots)),
            body_limit: DEFAULT_BODY_LIMIT,
        }
    }

    /// The A and AAAA addresses of `name`, normalised, sorted and without
    /// duplicates. Each lookup (system; or each of the two DoH requests) is limited
    /// to the configured timeout.
    pub fn resolve(&self, name: &str) -> Result<Fetched, SourceError> {
        let name = crate::source::normalize_fqdn(name).map_err(SourceError::Invalid)?;
        match &self.http {
            Some(http) if self.resolver == Resolver::Doh => self.resolve_doh(http, &name),
            _ => resolve_system(&name, self.timeout, system_lookup),
        }
    }

    /// Both families over DoH, one request each.
    fn resolve_doh(&self, http: &Http, name: &str) -> Result<Fetched, SourceError> {
        let a = self.doh_query(http, name, "A");
        let aaaa = self.doh_query(http, name, "AAAA");
        let (mut values, skipped) = match (a, aaaa) {
            (Ok(a), Ok(aaaa)) => {
                let mut values = a.0;
                values.extend(aaaa.0);
                (values, a.1 + aaaa.1)
            }
            (Ok(ok), Err(e)) | (Err(e), Ok(ok)) => {
                log::warn!("{name}: one address family failed, using the other: {e}");
                ok
            }
            (Err(SourceError::NxDomain), Err(SourceError::NxDomain)) => {
                return Err(SourceError::NxDomain)
            }
            // The A error speaks for both; the AAAA one is usually the same.
            (Err(e), Err(_)) => return Err(e),
        };
        values.shrink_to_fit();
        Ok(Fetched::new(values, skipped))
    }

    /// One DoH JSON request: the addresses of type `rtype` (`A` or `AAAA`) and how
    /// many invalid ones were skipped.
    fn doh_query(
        &self,
        http: &Http,
        name: &str,
        rtype: &str,
    ) -> Result<(Vec<String>, usize), SourceError> {
        let mut resp = http.get(
            &self.doh_url,
            &[("name", name), ("type", rtype)],
            &[("accept", "application/dns-json")],
        )?;
        let status = resp.status();
        if !(200..300).contains(&status) {
            return Err(SourceError::Http { status });
        }
        let body = http.read_body(&mut resp, self.body_limit)?;
        drop(resp);
        let answer: DohAnswer = serde_json::from_slice(&body).map_err(|e| {
            let what = if e.is_data() {
                "not the DoH JSON shape"
            } else {
                "not JSON"
            };
            SourceError::BadBody(format!("{what} ({e}), starting {}", snippet(&body)))
        })?;
        match answer.status {
            0 => {}
            3 => return Err(SourceError::NxDomain),
            code => {
                return Err(SourceError::Dns(format!(
                    "DoH server answered {} for {rtype}",
                    rcode_name(code)
                )))
            }
        }
        // Only address records count: a CNAME chain lists the aliases first.
        let records = answer.answer.unwrap_or_default();
        let items = records
            .iter()
            .filter(|r| matches!(r.rtype, Some(1 | 28)))
            .map(|r| r.data.as_deref().ok_or("address record without data"));
        let context = format!("{name}: skipped from DoH {rtype} answer");
        let (values, skipped) = keep_valid(items, crate::source::normalize_address, &context);
        Ok((values, skipped))
    }
}

/// The part of a DoH JSON answer that is read (RFC 8427 style, as served by
/// Cloudflare, Google, AdGuard, dnsmasq front ends ...). Other keys are ignored.
#[derive(Deserialize)]
struct DohAnswer<'a> {
    #[serde(rename = "Status")]
    status: u32,
    #[serde(rename = "Answer", borrow)]
    answer: Option<Vec<Record<'a>>>,
}

/// One answer record; `name` and `TTL` are not needed.
#[derive(Deserialize)]
struct Record<'a> {
    #[serde(rename = "type")]
    rtype: Option<u32>,
    #[serde(borrow)]
    data: Option<Cow<'a, str>>,
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
    let values = ips
        .into_iter()
        .filter_map(|ip| crate::source::normalize_address(&ip.to_string()).ok())
        .collect();
    Ok(Fetched::new(values, 0))
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
        DnsClient::new(&DnsConfig {
            resolver: Resolver::Doh,
            doh_url: format!("{}/dns-query", server.base),
            timeout_seconds: 1,
        })
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
            f.values.iter().all(|v| v == "127.0.0.1" || v == "::1"),
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
            thread::sleep(Duration::from_millis(1500));
            Ok(vec![IpAddr::from([192, 0, 2, 1])])
        }
        let started = Instant::now();
        let e = resolve_system("example.com", Duration::from_millis(200), hang).unwrap_err();
        assert_eq!(e, SourceError::Timeout { seconds: 1 });
        assert!(started.elapsed() < Duration::from_secs(1));
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
            f.values,
            ["2606:2800:220:1:248:1893:25c8:1946", "93.184.216.34"]
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
        assert_eq!(doh(&s).resolve("x.example").unwrap().values, ["192.0.2.1"]);
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
        assert_eq!(f.values, ["192.0.2.1"]);
        assert_eq!(f.skipped, 3);
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

        let s = FakeServer::start(vec![Reply::new(200, "{}").delay(Duration::from_secs(3))]);
        let started = Instant::now();
        assert_eq!(
            doh(&s).resolve("x.example").unwrap_err(),
            SourceError::Timeout { seconds: 1 }
        );
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn invalid_name() {
        assert!(matches!(
            resolve(&system(), "1.2.3.4"),
            Err(SourceError::Invalid(_))
        ));
    }
}
