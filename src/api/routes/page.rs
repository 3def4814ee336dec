//! `GET /`: the built-in web page, and the same-origin rule for mutating requests.
//!
//! The page is one file, `src/api/web/index.html` (HTML, CSS and JS, no external
//! resources). The binary holds it only gzip-compressed, as `src/api/web/compress.sh`
//! writes it (the `.gz` is committed; a test checks that it decompresses to this very
//! source): browsers get those bytes as they are, and the rare client without gzip
//! gets them decompressed by `api::inflate`, which costs less flash than keeping the
//! page twice.

use super::{Reply, RequestInfo};
use crate::api::error::ApiError;
use crate::api::inflate::gunzip;
use crate::api::query::quoted;

/// The page compressed with `gzip -9n` (see `src/api/web/compress.sh`).
const PAGE_GZ: &[u8] = include_bytes!("../web/index.html.gz");

/// What the page may load and where it may send requests: nothing outside this
/// server (so a value shown on it can never pull in a script from elsewhere), and no
/// framing by other sites.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; \
style-src 'unsafe-inline'; img-src data:; connect-src 'self'; base-uri 'none'; \
form-action 'none'; frame-ancestors 'none'";

pub(super) fn page(req: &RequestInfo) -> Reply {
    let gzip = req.accept_encoding.as_deref().is_some_and(accepts_gzip);
    let mut headers = vec![
        ("Vary", "Accept-Encoding".to_string()),
        ("Cache-Control", "no-cache".to_string()),
        ("Content-Security-Policy", CSP.to_string()),
        ("X-Content-Type-Options", "nosniff".to_string()),
        ("Referrer-Policy", "no-referrer".to_string()),
    ];
    // Cannot fail for the page the tests decompressed; if it did, the compressed
    // page is still better than none.
    let plain = if gzip { None } else { gunzip(PAGE_GZ) };
    if plain.is_none() {
        headers.push(("Content-Encoding", "gzip".to_string()));
    }
    Reply {
        status: 200,
        content_type: "text/html; charset=utf-8",
        headers,
        body: plain.unwrap_or_else(|| PAGE_GZ.to_vec()),
        length_without_body: None,
        shared: None,
    }
}

/// Whether an `Accept-Encoding` value takes gzip: `gzip`, `x-gzip` or `*`, with a
/// quality other than 0 (RFC 9110, 12.5.3).
pub(super) fn accepts_gzip(value: &str) -> bool {
    value.split(',').any(|item| {
        let mut parts = item.split(';').map(str::trim);
        let coding = parts.next().unwrap_or_default();
        let named = ["gzip", "x-gzip", "*"]
            .iter()
            .any(|c| coding.eq_ignore_ascii_case(c));
        let refused = parts.any(|p| {
            p.split_once('=')
                .is_some_and(|(k, v)| k.trim().eq_ignore_ascii_case("q") && zero(v.trim()))
        });
        named && !refused
    })
}

/// Whether a quality value is 0 (`0`, `0.`, `0.0` ... `0.000`). Compared as text: a
/// float parser would cost more code than the rest of the page's route.
fn zero(q: &str) -> bool {
    match q.strip_prefix('0') {
        Some(rest) => {
            rest.is_empty()
                || rest
                    .strip_prefix('.')
                    .is_some_and(|d| d.len() <= 3 && d.bytes().all(|b| b == b'0'))
        }
        None => false,
    }
}

/// `host[:port]` in lower case, without the default port of `scheme`.
fn authority(host: &str, scheme: &str) -> String {
    let host = host.to_ascii_lowercase();
    let default = if scheme == "https" { ":443" } else { ":80" };
    match host.strip_suffix(default) {
        Some(h) => h.to_string(),
        None => host,
    }
}

/// Refuses (403) a request whose `Origin` names another host than its `Host`: a page
/// of another site made a visitor's browser send it. Without `Origin` (curl, scripts,
/// and browsers on same-origin GETs) nothing is checked; an opaque `Origin: null`
/// (sandboxed frames, some redirects) is not this server either.
pub(super) fn same_origin(req: &RequestInfo) -> Result<(), ApiError> {
    let Some(origin) = req.origin.as_deref() else {
        return Ok(());
    };
    let refuse = || {
        ApiError::Forbidden(format!(
            "cross-origin request refused: Origin {} is not the host asked ({})",
            quoted(origin),
            req.host.as_deref().map_or("no Host".to_string(), quoted)
        ))
    };
    let (scheme, rest) = origin.split_once("://").ok_or_else(refuse)?;
    let scheme = scheme.to_ascii_lowercase();
    let host = req.host.as_deref().ok_or_else(refuse)?;
    if rest.is_empty() || rest.contains('/') || authority(rest, &scheme) != authority(host, &scheme)
    {
        return Err(refuse());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(origin: Option<&str>, host: Option<&str>) -> RequestInfo {
        RequestInfo {
            method: "POST".into(),
            target: "/asns".into(),
            origin: origin.map(String::from),
            host: host.map(String::from),
            ..RequestInfo::default()
        }
    }

    #[test]
    fn origins() {
        let ok = |o, h| same_origin(&req(o, h)).is_ok();
        assert!(ok(None, None));
        assert!(ok(None, Some("router:8080")));
        assert!(ok(Some("http://router:8080"), Some("router:8080")));
        assert!(ok(Some("http://Router:8080"), Some("router:8080")));
        assert!(ok(Some("http://router"), Some("router:80")));
        assert!(ok(Some("https://router"), Some("router")));
        assert!(ok(Some("http://[::1]:8080"), Some("[::1]:8080")));
        assert!(!ok(Some("http://evil.example"), Some("router:8080")));
        assert!(!ok(Some("http://router:8081"), Some("router:8080")));
        assert!(!ok(Some("http://router.evil:8080"), Some("router:8080")));
        assert!(!ok(Some("null"), Some("router:8080")));
        assert!(!ok(Some("http://router:8080"), None));
        assert!(!ok(Some("http://router:8080/x"), Some("router:8080")));
        assert!(!ok(Some("http://"), Some("")));
        let e = same_origin(&req(Some("http://evil.example"), Some("router:8080")));
        let m = e.unwrap_err().to_string();
        assert!(
            m.contains("\"http://evil.example\"") && m.contains("\"router:8080\""),
            "{m}"
        );
    }

    #[test]
    fn gzip_when_accepted() {
        for yes in [
            "gzip",
            "gzip, deflate, br",
            "br;q=1, GZIP;q=0.5",
            "*",
            "x-gzip",
        ] {
            assert!(accepts_gzip(yes), "{yes}");
        }
        for no in [
            "",
            "identity",
            "br",
            "gzip;q=0",
            "gzip; q=0.000",
            "gzip;q=0.",
            "gzipx",
        ] {
            assert!(!accepts_gzip(no), "{no}");
        }
    }

    /// The page as written (only the tests hold it).
    const PAGE: &[u8] = include_bytes!("../web/index.html");

    /// The page as `src/api/web/compress.sh` sends it: each line without its
    /// indentation, and without the lines that are only a `//` comment.
    fn as_sent(page: &str) -> String {
        page.lines()
            .map(str::trim_start)
            .filter(|l| !l.starts_with("//"))
            .flat_map(|l| [l, "\n"])
            .collect()
    }

    /// The committed `.gz` is the compression of the committed page as sent (run
    /// `src/api/web/compress.sh` after editing the page).
    #[test]
    fn compressed_page_matches_the_source() {
        let plain = gunzip(PAGE_GZ).expect("index.html.gz does not decompress");
        let page = std::str::from_utf8(PAGE).unwrap();
        assert!(
            plain == as_sent(page).as_bytes(),
            "index.html.gz is stale: run src/api/web/compress.sh"
        );
        assert!(PAGE_GZ.len() * 3 < PAGE.len(), "{}", PAGE_GZ.len());
    }

    /// What `as_sent` drops never changes what the page means: it has no string
    /// that goes on over a line (a line ending in `\`, a template literal), no
    /// element that shows its text's spaces, and no `//` comment at the start of a
    /// line that is not JavaScript (the only `//` lines are inside `<script>`).
    #[test]
    fn the_page_as_sent_means_the_same() {
        let page = std::str::from_utf8(PAGE).unwrap();
        for (i, line) in page.lines().enumerate() {
            assert!(!line.ends_with('\\'), "line {}: {line}", i + 1);
        }
        for bad in [
            "`",
            "<pre",
            "<textarea",
            "white-space:pre",
            "white-space: pre",
        ] {
            assert!(!page.contains(bad), "{bad}");
        }
        assert_eq!(page.matches("<script>").count(), 1);
        let line_of = |tag| page[..page.find(tag).unwrap()].lines().count();
        let script = line_of("<script>")..line_of("</script>");
        for (i, line) in page.lines().enumerate() {
            let comment = line.trim_start().starts_with("//");
            assert!(!comment || script.contains(&i), "line {}: {line}", i + 1);
        }
    }

    #[test]
    fn page_is_self_contained() {
        let text = std::str::from_utf8(PAGE).unwrap();
        for external in [
            "http://",
            "https://",
            "src=\"//",
            "href=\"//",
            "url(",
            "@import",
        ] {
            assert!(!text.contains(external), "the page refers to {external:?}");
        }
    }
}
