//! What the RIPEstat and DNS clients share: the result of one source
//! ([`Fetched`]), why a source failed ([`SourceError`]) and the root certificates for
//! https ([`CaRoots`]). The HTTP client itself is in `client`.
//!
//! Root certificates come from the system CA bundle rather than being compiled in:
//! bundled webpki-roots made the release binary 57 KiB larger (41 KiB after xz), and
//! OpenWrt keeps its `ca-bundle` package up to date independently of this program.

use std::fmt;
use std::fs;
use std::io;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::RootCertStore;

pub(crate) use super::client::{retry_after, Http};

/// The values one source produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fetched {
    /// Normalised prefixes or addresses, sorted, without duplicates.
    pub values: Vec<String>,
    /// How many values in the answer were invalid and left out (each is logged).
    pub skipped: usize,
}

impl Fetched {
    /// Sorts and deduplicates `values`.
    pub(crate) fn new(mut values: Vec<String>, skipped: usize) -> Fetched {
        values.sort_unstable();
        values.dedup();
        Fetched { values, skipped }
    }
}

/// Why one source could not be fetched. The messages do not name the source: the
/// caller prefixes it (`AS62041: timed out after 30 s`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceError {
    /// The connection failed: refused, reset, the server's name did not resolve, ...
    Transport(String),
    /// TLS failed, or https is needed and no CA certificates could be loaded.
    Tls(String),
    /// No answer within the timeout.
    Timeout {
        /// The timeout, in seconds.
        seconds: u64,
    },
    /// The server answered with an HTTP status other than 2xx.
    Http {
        /// The status code.
        status: u16,
    },
    /// The answer is not the expected JSON shape.
    BadBody(String),
    /// The server broke HTTP framing (a bad `Content-Length`, a broken chunked
    /// body): the same request gets the same answer, so not retried early.
    Protocol(String),
    /// The answer is larger than allowed.
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// RIPEstat answered `"status": "error"`.
    Upstream {
        /// The HTTP status of the answer, when it was not 200.
        status: Option<u16>,
        /// What RIPEstat said (its `messages`).
        message: String,
    },
    /// The host name does not exist.
    NxDomain,
    /// Any other DNS failure (SERVFAIL, resolver unreachable, ...).
    Dns(String),
    /// The source itself is not valid (not an ASN, not a host name).
    Invalid(String),
}

impl SourceError {
    /// Whether trying again soon may help: transport errors, timeouts, 429 and 5xx.
    pub fn is_transient(&self) -> bool {
        match self {
            SourceError::Transport(_) | SourceError::Timeout { .. } => true,
            SourceError::Http { status } => *status == 429 || *status >= 500,
            SourceError::Upstream {
                status: Some(status),
                ..
            } => *status == 429 || *status >= 500,
            _ => false,
        }
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceError::Transport(m) => write!(f, "connection failed: {m}"),
            SourceError::Tls(m) => write!(f, "TLS: {m}"),
            SourceError::Timeout { seconds } => write!(f, "timed out after {seconds} s"),
            SourceError::Http { status } => write!(f, "HTTP status {status}"),
            SourceError::BadBody(m) => write!(f, "unexpected answer: {m}"),
            SourceError::Protocol(m) => write!(f, "the server broke HTTP: {m}"),
            SourceError::TooLarge { limit } => {
                write!(f, "answer larger than the limit of {}", human_bytes(*limit))
            }
            SourceError::Upstream {
                status: Some(s),
                message,
            } => write!(f, "RIPEstat error (HTTP {s}): {message}"),
            SourceError::Upstream {
                status: None,
                message,
            } => write!(f, "RIPEstat error: {message}"),
            SourceError::NxDomain => f.write_str("no such host name (NXDOMAIN)"),
            SourceError::Dns(m) => write!(f, "DNS lookup failed: {m}"),
            SourceError::Invalid(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for SourceError {}

/// How many invalid values of one answer are logged one by one; the rest are counted
/// in one line, so that a broken upstream cannot flood the log.
const LOGGED_INVALID: usize = 5;

/// Normalises the values of one answer with `normalize`, skipping the invalid ones
/// (`Err` items are values that were missing or not strings). Each of the first
/// [`LOGGED_INVALID`] is logged as `<context>: <why>`, the rest in a summary line.
/// Returns the valid values and how many were skipped.
pub(crate) fn keep_valid<'a>(
    items: impl IntoIterator<Item = Result<&'a str, &'static str>>,
    normalize: fn(&str) -> Result<String, String>,
    context: &str,
) -> (Vec<String>, usize) {
    let mut values = Vec::new();
    let mut skipped = 0;
    for item in items {
        match item.map_err(String::from).and_then(normalize) {
            Ok(v) => values.push(v),
            Err(e) => {
                skipped += 1;
                if skipped <= LOGGED_INVALID {
                    log::warn!("{context}: {e}");
                }
            }
        }
    }
    if skipped > LOGGED_INVALID {
        log::warn!(
            "{context}: {} more invalid values",
            skipped - LOGGED_INVALID
        );
    }
    (values, skipped)
}

/// `16 MiB`, `1 KiB` or `1000 bytes`, for messages.
fn human_bytes(n: u64) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n % (1 << 10) == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// The CA bundle used when `$SSL_CERT_FILE` is not set; OpenWrt's `ca-bundle`
/// package installs it, as do Debian, Ubuntu and Alpine.
pub const DEFAULT_CA_FILE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// Other common places of a CA bundle, tried when [`DEFAULT_CA_FILE`] is missing.
const OTHER_CA_FILES: &[&str] = &["/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"];

/// Root certificates for https, loaded from a PEM CA bundle, or why they could not be.
///
/// Loading never fails outright: an error is only reported when a request actually
/// needs https, so that plain-http setups (a local DoH resolver) work without a CA
/// bundle. Cloning is cheap (the certificates are shared), so one load can serve
/// both the RIPEstat and the DoH client of a run.
#[derive(Debug, Clone)]
pub struct CaRoots {
    roots: Result<Arc<RootCertStore>, String>,
}

impl CaRoots {
    /// The system CA bundle: `$SSL_CERT_FILE`, else [`DEFAULT_CA_FILE`], else a few
    /// other usual places.
    pub fn system() -> CaRoots {
        if let Some(path) = std::env::var_os("SSL_CERT_FILE").filter(|p| !p.is_empty()) {
            return CaRoots::from_file(Path::new(&path));
        }
        let found = std::iter::once(DEFAULT_CA_FILE)
            .chain(OTHER_CA_FILES.iter().copied())
            .map(Path::new)
            .find(|p| p.exists());
        match found {
            Some(path) => CaRoots::from_file(path),
            None => CaRoots {
                roots: Err(format!(
                    "no CA certificates for https: {DEFAULT_CA_FILE} does not exist \
                     (install the ca-bundle package or set SSL_CERT_FILE)"
                )),
            },
        }
    }

    /// The certificates in the PEM file `path`.
    pub fn from_file(path: &Path) -> CaRoots {
        CaRoots {
            roots: load_pem(path).map_err(|e| {
                format!(
                    "no CA certificates for https: {}: {e} \
                     (install the ca-bundle package or set SSL_CERT_FILE)",
                    path.display()
                )
            }),
        }
    }

    /// No certificates, for clients of plain-http URLs: reading the bundle would
    /// only cost memory. Should such a URL redirect to https, that fails with this
    /// explanation.
    pub fn not_loaded() -> CaRoots {
        CaRoots {
            roots: Err("CA certificates are only loaded for https:// URLs, \
                        and this http:// URL redirected to https"
                .into()),
        }
    }

    /// Why no certificates are available, if so.
    pub fn error(&self) -> Option<&str> {
        self.roots.as_ref().err().map(String::as_str)
    }

    /// The certificates, or why there are none.
    pub(crate) fn store(&self) -> Result<Arc<RootCertStore>, String> {
        self.roots.clone()
    }
}

/// Reads the certificates of a PEM bundle; other PEM sections are ignored.
fn load_pem(path: &Path) -> Result<Arc<RootCertStore>, String> {
    let pem = fs::read(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => "does not exist".to_string(),
        _ => e.to_string(),
    })?;
    let mut certs = Vec::new();
    for item in CertificateDer::pem_slice_iter(&pem) {
        match item {
            Ok(c) => certs.push(c),
            // A damaged bundle: keep what was read before the damage.
            Err(e) => {
                log::warn!(
                    "{}: stopped reading at a bad PEM section: {e}",
                    path.display()
                );
                break;
            }
        }
    }
    if certs.is_empty() {
        return Err("contains no PEM certificates".into());
    }
    // Certificates that do not parse are left out (and logged): the others work.
    let mut store = RootCertStore::empty();
    let (_, bad) = store.add_parsable_certificates(certs);
    if bad > 0 {
        log::warn!("{}: {bad} certificates could not be used", path.display());
    }
    if store.is_empty() {
        return Err("contains no usable certificates".into());
    }
    Ok(Arc::new(store))
}

/// Whether `url` is an https URL (the only kind that needs CA certificates).
pub fn is_https(url: &str) -> bool {
    url.get(..6)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https:"))
}

/// A short piece of a body for error messages: the start, as text.
pub(crate) fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(60)]);
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let one_line = one_line.trim();
    if body.len() > 60 {
        format!("{one_line:?}...")
    } else {
        format!("{one_line:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn messages() {
        assert_eq!(
            SourceError::TooLarge { limit: 16 << 20 }.to_string(),
            "answer larger than the limit of 16 MiB"
        );
        assert_eq!(
            SourceError::Timeout { seconds: 30 }.to_string(),
            "timed out after 30 s"
        );
        assert_eq!(
            SourceError::Upstream {
                status: Some(400),
                message: "bad".into()
            }
            .to_string(),
            "RIPEstat error (HTTP 400): bad"
        );
        assert!(SourceError::Http { status: 503 }.is_transient());
        assert!(SourceError::Http { status: 429 }.is_transient());
        assert!(!SourceError::Http { status: 404 }.is_transient());
        assert!(!SourceError::BadBody(String::new()).is_transient());
        assert!(!SourceError::Protocol(String::new()).is_transient());
    }

    #[test]
    fn ca_bundle_missing_or_empty() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.crt");
        let e = CaRoots::from_file(&missing).error().unwrap().to_string();
        assert!(e.contains("none.crt: does not exist"), "{e}");
        assert!(e.contains("ca-bundle"), "{e}");
        let empty = dir.path().join("empty.crt");
        fs::write(&empty, "not pem\n").unwrap();
        let e = CaRoots::from_file(&empty).error().unwrap().to_string();
        assert!(e.contains("contains no PEM certificates"), "{e}");

        // https is refused with that message, before any connection is made.
        let http = Http::new(Duration::from_secs(1), &CaRoots::from_file(&missing));
        match http.get("https://127.0.0.1:9/x", &[], &[]) {
            Err(SourceError::Tls(m)) => assert!(m.contains("none.crt"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    /// A real root certificate (ISRG Root X2, small), for a non-empty root store.
    const TEST_CA: &str = "\
-----BEGIN CERTIFICATE-----\n\
MIICGzCCAaGgAwIBAgIQQdKd0XLq7qeAwSxs6S+HUjAKBggqhkjOPQQDAzBPMQsw\n\
CQYDVQQGEwJVUzEpMCcGA1UEChMgSW50ZXJuZXQgU2VjdXJpdHkgUmVzZWFyY2gg\n\
R3JvdXAxFTATBgNVBAMTDElTUkcgUm9vdCBYMjAeFw0yMDA5MDQwMDAwMDBaFw00\n\
MDA5MTcxNjAwMDBaME8xCzAJBgNVBAYTAlVTMSkwJwYDVQQKEyBJbnRlcm5ldCBT\n\
ZWN1cml0eSBSZXNlYXJjaCBHcm91cDEVMBMGA1UEAxMMSVNSRyBSb290IFgyMHYw\n\
EAYHKoZIzj0CAQYFK4EEACIDYgAEzZvVn4CDCuwJSvMWSj5cz3es3mcFDR0HttwW\n\
+1qLFNvicWDEukWVEYmO6gbf9yoWHKS5xcUy4APgHoIYOIvXRdgKam7mAHf7AlF9\n\
ItgKbppbd9/w+kHsOdx1ymgHDB/qo0IwQDAOBgNVHQ8BAf8EBAMCAQYwDwYDVR0T\n\
AQH/BAUwAwEB/zAdBgNVHQ4EFgQUfEKWrt5LSDv6kviejM9ti6lyN5UwCgYIKoZI\n\
zj0EAwMDaAAwZQIwe3lORlCEwkSHRhtFcP9Ymd70/aTSVaYgLXTWNLxBo1BfASdW\n\
tL4ndQavEi51mI38AjEAi/V3bNTIZargCyzuFJ0nN6T5U6VR5CmD1/iQMVtCnwr1\n\
/q4AaOeMSQ+2b1tbFfLn\n\
-----END CERTIFICATE-----\n";

    #[test]
    fn https_handshake_failure_is_an_error_not_a_panic() {
        // Guards the crypto provider and root store setup (ureq panics when either is
        // missing): a server that answers the TLS hello with plain HTTP must give a
        // clean TLS error.
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let t = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let _ = s.read(&mut [0; 512]);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        });
        let dir = tempfile::tempdir().unwrap();
        let pem = dir.path().join("one.crt");
        fs::write(&pem, TEST_CA).unwrap();
        let roots = CaRoots::from_file(&pem);
        assert_eq!(roots.error(), None);
        let http = Http::new(Duration::from_secs(2), &roots);
        match http.get(&format!("https://127.0.0.1:{port}/"), &[], &[]) {
            Err(SourceError::Tls(_)) => {}
            other => panic!("{other:?}"),
        }
        t.join().unwrap();
    }

    #[test]
    fn snippets() {
        assert_eq!(snippet(b"<html>\n<body>"), "\"<html> <body>\"");
        assert!(snippet(&[b'x'; 100]).ends_with("..."));
    }
}

/// The std-only fake upstream shared with the integration tests.
#[cfg(test)]
#[path = "../../tests/it/upstream.rs"]
mod upstream;

/// A scripted HTTP server on 127.0.0.1 for the client tests.
#[cfg(test)]
pub(crate) mod fake {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::upstream;

    /// One scripted answer.
    #[derive(Clone)]
    pub(crate) struct Reply {
        pub status: u16,
        pub body: Vec<u8>,
        pub headers: Vec<String>,
        pub delay: Duration,
        /// Send without `Content-Length` (chunked).
        pub chunked: bool,
    }

    impl Reply {
        pub(crate) fn new(status: u16, body: impl Into<Vec<u8>>) -> Reply {
            Reply {
                status,
                body: body.into(),
                headers: Vec::new(),
                delay: Duration::ZERO,
                chunked: false,
            }
        }
        pub(crate) fn header(mut self, h: &str) -> Reply {
            self.headers.push(h.into());
            self
        }
        pub(crate) fn delay(mut self, d: Duration) -> Reply {
            self.delay = d;
            self
        }
        pub(crate) fn chunked(mut self) -> Reply {
            self.chunked = true;
            self
        }
    }

    /// What the server was asked.
    #[derive(Debug, Clone)]
    pub(crate) struct Seen {
        pub url: String,
        pub accept: Option<String>,
    }

    /// The server; stops when dropped.
    pub(crate) struct FakeServer {
        pub base: String,
        seen: Arc<Mutex<Vec<Seen>>>,
        _server: upstream::FakeServer,
    }

    impl FakeServer {
        /// Answers requests with `replies` in order, repeating the last one; `pick`
        /// may choose by URL instead.
        pub(crate) fn start(replies: Vec<Reply>) -> FakeServer {
            FakeServer::start_with(move |i, _url| replies[i.min(replies.len() - 1)].clone())
        }

        /// Answers each request with `pick(index, url)`.
        pub(crate) fn start_with(
            pick: impl Fn(usize, &str) -> Reply + Send + Sync + 'static,
        ) -> FakeServer {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let (log, count) = (seen.clone(), AtomicUsize::new(0));
            let server = upstream::FakeServer::start(move |rq| {
                log.lock().unwrap().push(Seen {
                    url: rq.url.clone(),
                    accept: rq.header("accept").map(str::to_string),
                });
                let r = pick(count.fetch_add(1, Ordering::SeqCst), &rq.url);
                let mut headers: Vec<(String, String)> = r
                    .headers
                    .iter()
                    .filter_map(|h| h.split_once(':'))
                    .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                    .collect();
                if r.chunked {
                    headers.push(("Transfer-Encoding".into(), "chunked".into()));
                }
                upstream::Reply {
                    status: r.status,
                    body: r.body,
                    delay: r.delay,
                    headers,
                }
            });
            FakeServer {
                base: server.url(""),
                seen,
                _server: server,
            }
        }

        /// The requests so far.
        pub(crate) fn seen(&self) -> Vec<Seen> {
            self.seen.lock().unwrap().clone()
        }
    }
}
