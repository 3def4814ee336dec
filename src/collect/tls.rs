//! The built-in TLS (cargo feature `tls`): TLS 1.3 through rustls with ring, and the
//! root certificates it trusts.
//!
//! Root certificates come from the system CA bundle rather than being compiled in:
//! bundled webpki-roots made the release binary 57 KiB larger (41 KiB after xz), and
//! OpenWrt keeps its `ca-bundle` package up to date independently of this program.
//! The OpenWrt package leaves this feature out altogether and fetches through
//! `uclient-fetch` (`fetch.command`), which uses the system's TLS library.

use std::fs;
use std::io;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection};

use super::fetch::SourceError;

/// A TLS client configuration, or why https cannot work (no CA bundle).
#[derive(Debug, Clone)]
pub(crate) struct TlsSetup(Result<Arc<ClientConfig>, String>);

impl TlsSetup {
    /// For requests to https URLs (`https`): the system CA bundle; otherwise none is
    /// read, which saves its memory, and a redirect to https explains that.
    pub(crate) fn for_https(https: bool) -> TlsSetup {
        match https {
            true => TlsSetup::new(&CaRoots::system()),
            false => TlsSetup::new(&CaRoots::not_loaded()),
        }
    }

    /// The configuration trusting `roots`.
    pub(crate) fn new(roots: &CaRoots) -> TlsSetup {
        TlsSetup(roots.store().and_then(|store| {
            // Only TLS 1.3 (rustls without its `tls12` feature): RIPEstat and the
            // usual DoH servers speak it, and TLS 1.2 support costs flash. rustls
            // 0.23.48 deprecates the ring provider for its lack of post-quantum key
            // exchange; ring stays (aws-lc-rs needs cmake and a larger binary on
            // routers), so the deprecation is allowed here, where it is chosen.
            #[allow(deprecated)]
            let provider = rustls::crypto::ring::default_provider();
            ClientConfig::builder_with_provider(Arc::new(provider))
                .with_safe_default_protocol_versions()
                .map(|b| Arc::new(b.with_root_certificates(store).with_no_client_auth()))
                .map_err(|e| format!("cannot set up TLS: {e}"))
        }))
    }

    /// Checks that https can work, before connecting: the missing CA bundle is then
    /// the error rather than the handshake failure it would cause.
    pub(crate) fn check(&self) -> Result<(), SourceError> {
        self.0.as_ref().map(|_| ()).map_err(SourceError::tls)
    }

    /// A client connection to `host`.
    pub(crate) fn connect(&self, host: &str) -> Result<ClientConnection, SourceError> {
        let config = self.0.clone().map_err(SourceError::tls)?;
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| SourceError::transport(format!("bad URL: {e}")))?;
        ClientConnection::new(config, name).map_err(|e| SourceError::Tls {
            message: e.to_string(),
            cause: Some(super::fetch::Cause::new(e)),
        })
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
    roots: Result<Arc<rustls::RootCertStore>, String>,
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
    pub(crate) fn store(&self) -> Result<Arc<rustls::RootCertStore>, String> {
        self.roots.clone()
    }
}

/// Reads the certificates of a PEM bundle; other PEM sections are ignored.
fn load_pem(path: &Path) -> Result<Arc<rustls::RootCertStore>, String> {
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
    let mut store = rustls::RootCertStore::empty();
    let (_, bad) = store.add_parsable_certificates(certs);
    if bad > 0 {
        log::warn!("{}: {bad} certificates could not be used", path.display());
    }
    if store.is_empty() {
        return Err("contains no usable certificates".into());
    }
    Ok(Arc::new(store))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::client::Http;
    use std::time::Duration;

    fn http(seconds: u64, roots: &CaRoots) -> Http {
        Http::new(Duration::from_secs(seconds), &TlsSetup::new(roots))
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
        let http = http(1, &CaRoots::from_file(&missing));
        match http.get("https://127.0.0.1:9/x", &[], &[]) {
            Err(SourceError::Tls { message, .. }) => {
                assert!(message.contains("none.crt"), "{message}")
            }
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
        let http = http(2, &roots);
        match http.get(&format!("https://127.0.0.1:{port}/"), &[], &[]) {
            Err(SourceError::Tls { .. }) => {}
            other => panic!("{other:?}"),
        }
        t.join().unwrap();
    }
}
