//! HTTP/1.1 on the wire, without sockets: the request head parsed with `httparse`
//! under fixed bounds, and the answer's head written out.
//!
//! Bounds (see `docs/api.md`, "Connections and limits"): the head (request line and
//! headers) is at most [`MAX_HEAD`] bytes and [`MAX_HEADERS`] fields, the limits the
//! collect client applies to response heads too (`crate::http1`). The caller never
//! buffers more than [`MAX_HEAD`] bytes of a head, so a client cannot make a
//! connection hold more than that whatever it sends.

use std::sync::Arc;

use super::routes::{Reply, RequestInfo};
use super::MAX_BODY;
use crate::http1::{ChunkError, LengthError};
pub use crate::http1::{Framing, MAX_HEAD, MAX_HEADERS};

/// A parsed request head.
#[derive(Debug)]
pub struct Head {
    /// What the handlers see.
    pub info: RequestInfo,
    /// How the body is delimited (`Length(0)`: no body; never `Close`).
    pub framing: Framing,
    /// `Expect: 100-continue` was sent: the client waits before sending the body.
    pub expect_continue: bool,
    /// The connection may carry another request after this one.
    pub keep_alive: bool,
    /// Bytes of the head, blank line included.
    pub len: usize,
}

/// A request refused by the connection layer before it reaches the routes; the
/// connection ends after the answer. Statuses are given in `error.rs`, the one place
/// that maps errors to them.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The request line alone does not fit [`MAX_HEAD`].
    #[error("request line longer than {MAX_HEAD} bytes")]
    LineTooLong,
    /// The head does not fit [`MAX_HEAD`].
    #[error("request head larger than {MAX_HEAD} bytes")]
    HeadTooLarge,
    /// More than [`MAX_HEADERS`] fields.
    #[error("more than {MAX_HEADERS} header fields")]
    TooManyFields,
    /// An HTTP version other than 1.0 and 1.1, or no version at all.
    #[error("malformed request line or unsupported HTTP version")]
    Version,
    /// What `httparse` refuses (its words: `httparse::Error` has no `Error` impl
    /// without its `std` feature, so only its text is kept).
    #[error("malformed request head ({0})")]
    Malformed(String),
    /// A bare LF: a proxy in front may read the head differently.
    #[error("line ends must be CRLF")]
    BareLf,
    /// A header value with a control byte or obs-text.
    #[error("a header value holds a byte that is not printable ASCII")]
    NotAscii,
    /// A transfer coding other than one `chunked`.
    #[error("unsupported Transfer-Encoding {0:?} (only chunked)")]
    TransferEncoding(String),
    /// Both framings: a sign of smuggling (RFC 9112, 6.1).
    #[error("both Content-Length and Transfer-Encoding")]
    LengthAndChunked,
    /// A `Content-Length` that is no number, or several that disagree.
    #[error(transparent)]
    Length(#[from] LengthError),
    /// A declared body over [`MAX_BODY`], or a chunked one that grows past it.
    #[error("request body larger than {MAX_BODY} bytes")]
    BodyTooLarge,
    /// A chunked body that breaks the coding.
    #[error("malformed chunked body: {0}")]
    Chunked(#[from] ChunkError),
    /// The connection ended inside the body.
    #[error("the request body was cut short")]
    BodyCut,
    /// An `Expect` other than `100-continue`.
    #[error("the only Expect understood is 100-continue")]
    Expect,
    /// Two `Authorization` headers: which one a proxy checked is anyone's guess.
    #[error("more than one Authorization header")]
    TwoAuthorizations,
    /// No `Host` on HTTP/1.1, or more than one (RFC 9112, 3.2).
    #[error("{0}")]
    Host(&'static str),
    /// The head did not arrive within `HEAD_TIMEOUT` of its first byte.
    #[error("the request head did not arrive in time")]
    HeadTimeout,
    /// The body did not arrive within `BODY_TIMEOUT` of the head.
    #[error("the request body did not arrive in time")]
    BodyTimeout,
}

/// Parses the head at the start of `buf`: `Ok(None)` while it is incomplete and
/// still within [`MAX_HEAD`].
pub fn parse_head(buf: &[u8]) -> Result<Option<Head>, RequestError> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut fields);
    let Some(len) = parse_request(&mut req, buf)? else {
        return Ok(None);
    };
    check_line_ends(&buf[..len])?;
    let mut head = Head {
        info: RequestInfo {
            method: req.method.unwrap_or_default().to_string(),
            target: origin_form(req.path.unwrap_or_default()),
            ..RequestInfo::default()
        },
        framing: Framing::Length(0),
        expect_continue: false,
        keep_alive: req.version == Some(1),
        len,
    };
    let mut framing = FramingFields::default();
    for h in req.headers.iter() {
        read_field(h.name, h.value, req.version, &mut head, &mut framing)?;
    }
    // An absolute-form target's authority is the host asked (RFC 9112, 3.2.2).
    if let Some(authority) = authority(req.path.unwrap_or_default()) {
        head.info.host = Some(authority.to_string());
    }
    head.framing = framing.decide()?;
    if head.info.host.is_none() && req.version == Some(1) {
        return Err(RequestError::Host("no Host header (HTTP/1.1 requires one)"));
    }
    Ok(Some(head))
}

/// Runs `httparse` on `buf`: the length of a complete head, `None` while it may
/// still complete within [`MAX_HEAD`].
fn parse_request<'b>(
    req: &mut httparse::Request<'_, 'b>,
    buf: &'b [u8],
) -> Result<Option<usize>, RequestError> {
    match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => Ok(Some(n)),
        Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => Ok(None),
        Ok(httparse::Status::Partial) if buf.windows(2).any(|w| w == b"\r\n") => {
            Err(RequestError::HeadTooLarge)
        }
        Ok(httparse::Status::Partial) => Err(RequestError::LineTooLong),
        Err(httparse::Error::TooManyHeaders) => Err(RequestError::TooManyFields),
        Err(httparse::Error::Version) => Err(RequestError::Version),
        Err(e) => Err(RequestError::Malformed(e.to_string())),
    }
}

/// httparse accepts a bare LF as a line end; a proxy in front may not, and reading
/// the head differently from it is how requests get smuggled.
fn check_line_ends(raw: &[u8]) -> Result<(), RequestError> {
    let bare = raw
        .iter()
        .enumerate()
        .any(|(i, &b)| b == b'\n' && (i == 0 || raw[i - 1] != b'\r'));
    match bare {
        true => Err(RequestError::BareLf),
        false => Ok(()),
    }
}

/// The fields that decide the body's framing, collected over the head.
#[derive(Default)]
struct FramingFields {
    chunked: bool,
    lengths: Vec<String>,
}

impl FramingFields {
    /// The framing the fields give, refusing ambiguous or oversized ones.
    fn decide(self) -> Result<Framing, RequestError> {
        let length = crate::http1::content_length(self.lengths.iter().map(String::as_str))?;
        match (self.chunked, length) {
            (true, Some(_)) => Err(RequestError::LengthAndChunked),
            (true, None) => Ok(Framing::Chunked),
            // Refused before a byte of it is read.
            (false, Some(n)) if n > MAX_BODY => Err(RequestError::BodyTooLarge),
            (false, n) => Ok(Framing::Length(n.unwrap_or(0))),
        }
    }
}

/// Takes one header field into `head` (or `framing`).
fn read_field(
    name: &str,
    raw: &[u8],
    version: Option<u8>,
    head: &mut Head,
    framing: &mut FramingFields,
) -> Result<(), RequestError> {
    // Values are printable ASCII (and tabs): the handlers quote them in messages
    // and compare tokens; obs-text is not worth the ambiguity.
    if !raw.iter().all(|&b| b == b'\t' || (0x20..0x7f).contains(&b)) {
        return Err(RequestError::NotAscii);
    }
    // Checked above: ASCII, so this never loses anything.
    let value = String::from_utf8_lossy(raw).trim().to_string();
    let is = |n: &str| name.eq_ignore_ascii_case(n);
    if is("Content-Length") {
        framing.lengths.push(value);
    } else if is("Transfer-Encoding") {
        if framing.chunked || !value.eq_ignore_ascii_case("chunked") {
            return Err(RequestError::TransferEncoding(value));
        }
        framing.chunked = true;
    } else if is("Authorization") {
        if head.info.authorization.replace(value).is_some() {
            return Err(RequestError::TwoAuthorizations);
        }
    } else if is("If-None-Match") {
        head.info.if_none_match = Some(value);
    } else if is("Host") {
        if head.info.host.replace(value).is_some() {
            return Err(RequestError::Host("more than one Host header"));
        }
    } else if is("Origin") {
        head.info.origin = Some(value);
    } else if is("Accept-Encoding") {
        head.info.accept_encoding = Some(value);
    } else if is("Expect") {
        if !value.eq_ignore_ascii_case("100-continue") {
            return Err(RequestError::Expect);
        }
        head.expect_continue = true;
    } else if is("Connection") {
        for token in value.split(',').map(str::trim) {
            if token.eq_ignore_ascii_case("close") {
                head.keep_alive = false;
            } else if token.eq_ignore_ascii_case("keep-alive") && version == Some(0) {
                head.keep_alive = true;
            }
        }
    }
    Ok(())
}

/// The authority of a target in absolute form (`http://host:port/path` gives
/// `host:port`).
fn authority(target: &str) -> Option<&str> {
    let (scheme, rest) = target.split_once("://")?;
    let known = ["http", "https"]
        .iter()
        .any(|s| scheme.eq_ignore_ascii_case(s));
    known.then(|| &rest[..rest.find(['/', '?']).unwrap_or(rest.len())])
}

/// The path and query of a target in absolute form (`http://host/path?q` gives
/// `/path?q`, as RFC 9112, 3.2.2 asks servers to accept); other targets unchanged.
fn origin_form(target: &str) -> String {
    let starts = |p: &str| {
        target
            .get(..p.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(p))
    };
    let rest = if starts("http://") {
        &target[7..]
    } else if starts("https://") {
        &target[8..]
    } else {
        return target.to_string();
    };
    match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => rest[i..].to_string(),
        Some(i) => format!("/{}", &rest[i..]),
        None => "/".to_string(),
    }
}

/// An answer on its way to the client: head and body kept apart (the body of a
/// large listing is not copied, and may be shared with other clients of the same
/// listing), and how much of both is written.
#[derive(Debug, Default)]
pub struct Out {
    /// Status line and headers.
    pub head: Vec<u8>,
    /// The body (empty for HEAD and 304).
    pub body: Arc<Vec<u8>>,
    /// Bytes of head, then body, already written.
    pub written: usize,
}

impl Out {
    /// Everything has been written.
    pub fn done(&self) -> bool {
        self.written >= self.head.len() + self.body.len()
    }

    /// The parts still to write, head first.
    pub fn pending(&self) -> (&[u8], &[u8]) {
        let h = self.written.min(self.head.len());
        let b = self
            .written
            .saturating_sub(self.head.len())
            .min(self.body.len());
        (&self.head[h..], &self.body[b..])
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        414 => "URI Too Long",
        417 => "Expectation Failed",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// The answer to `reply`: `Content-Type` and `Content-Length` always (never chunked),
/// no body for HEAD and 304 (with the length a 200 or GET would have had), and
/// `Connection: close` when the connection ends after it.
pub fn answer(reply: Reply, head_request: bool, close: bool, now: i64) -> Out {
    use std::fmt::Write;
    let body = match reply.shared {
        Some(shared) => shared,
        None => Arc::new(reply.body),
    };
    let length = reply.length_without_body.unwrap_or(body.len());
    let mut head = String::with_capacity(160);
    let _ = write!(
        head,
        "HTTP/1.1 {} {}\r\nDate: {}\r\nContent-Type: {}\r\nContent-Length: {length}\r\n",
        reply.status,
        reason(reply.status),
        http_date(now),
        reply.content_type
    );
    for (name, value) in &reply.headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    if close {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    let keep_body = !head_request && reply.length_without_body.is_none();
    Out {
        head: head.into_bytes(),
        body: if keep_body { body } else { Arc::default() },
        written: 0,
    }
}

/// `secs` (Unix time) as an IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`.
fn http_date(secs: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    // util::iso gives `YYYY-MM-DDTHH:MM:SSZ`; only the weekday needs computing.
    let iso = crate::util::iso(secs);
    let month = iso
        .get(5..7)
        .and_then(|m| m.parse::<usize>().ok())
        .and_then(|m| MONTHS.get(m.wrapping_sub(1)))
        .unwrap_or(&"Jan");
    format!(
        "{}, {} {month} {} {} GMT",
        DAYS[secs.div_euclid(86_400).rem_euclid(7) as usize],
        iso.get(8..10).unwrap_or("01"),
        iso.get(0..4).unwrap_or("1970"),
        iso.get(11..19).unwrap_or("00:00:00"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(raw: &[u8]) -> Result<Option<Head>, RequestError> {
        parse_head(raw)
    }

    /// The status a refused head gets, through the one mapping in `error.rs`.
    fn status(raw: &[u8]) -> u16 {
        match parse(raw) {
            Err(e) => crate::api::error::ApiError::from(e).reply().status,
            Ok(h) => panic!("accepted: {h:?}"),
        }
    }

    #[test]
    fn heads_and_bounds() {
        let h = parse(b"GET http://x.example/a?b=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc")
            .unwrap()
            .unwrap();
        assert_eq!(h.info.target, "/a?b=1");
        assert_eq!(h.framing, Framing::Length(3));
        assert!(h.keep_alive);
        assert_eq!(h.len, 86);
        assert_eq!(origin_form("http://x.example"), "/");
        assert_eq!(origin_form("HTTPS://x?q"), "/?q");
        assert!(parse(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap().is_none());
        let h = parse(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(h.keep_alive);
        assert_eq!(h.framing, Framing::Length(0));
        let h = parse(b"GET / HTTP/1.0\r\n\r\n").unwrap().unwrap();
        assert!(!h.keep_alive);

        let mut long = b"GET /".to_vec();
        long.resize(MAX_HEAD, b'a');
        assert_eq!(status(&long), 414);
        let mut big = b"GET / HTTP/1.1\r\nX: ".to_vec();
        big.resize(MAX_HEAD, b'a');
        assert_eq!(status(&big), 431);
        let mut many = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..65 {
            many.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
        }
        assert_eq!(status(&many), 431);
        for (raw, code) in [
            (&b"GET / HTTP/1.1\nHost: x\n\n"[..], 400),
            (b"GET / HTTP/1.1\r\nX: h\xc3\xa9\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
            (
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n",
                400,
            ),
            (b"POST / HTTP/1.1\r\nExpect: 200-ok\r\n\r\n", 417),
            (b"GET / HTTP/1.2\r\n\r\n", 400),
        ] {
            assert_eq!(status(raw), code, "{:?}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn lengths_are_digits_only_and_bounded() {
        let cl = |v: &str| format!("POST /asns HTTP/1.1\r\nHost: h\r\nContent-Length: {v}\r\n\r\n");
        for (v, code) in [
            ("+5", 400),
            ("-1", 400),
            ("5 5", 400),
            ("0x10", 400),
            ("abc", 400),
            ("999999999999999999999999999", 400),
            ("65537", 413),
            ("99999999999", 413),
        ] {
            assert_eq!(status(cl(v).as_bytes()), code, "{v}");
        }
        let h = parse(cl("65536").as_bytes()).unwrap().unwrap();
        assert_eq!(h.framing, Framing::Length(65536));
        // Several Content-Length fields: equal ones are one, different ones a 400
        // naming both, before the size check (the framing is unknown).
        let two = |a: &str, b: &str| {
            format!(
                "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: {a}\r\nContent-Length: {b}\r\n\r\n"
            )
        };
        let h = parse(two("11", " 11").as_bytes()).unwrap().unwrap();
        assert_eq!(h.framing, Framing::Length(11));
        let e = parse(two("11", "12").as_bytes()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "conflicting Content-Length headers \"11\" and \"12\""
        );
        assert_eq!(status(two("99999999999", "5").as_bytes()), 400);
    }

    #[test]
    fn one_host_is_required() {
        let host = |raw: &[u8]| parse(raw).unwrap().unwrap().info.host;
        assert_eq!(
            host(b"GET / HTTP/1.1\r\nHost: a:1\r\n\r\n").as_deref(),
            Some("a:1")
        );
        // HTTP/1.0 may leave it out; an absolute-form target's authority is the host.
        assert_eq!(host(b"GET / HTTP/1.0\r\n\r\n"), None);
        let abs = b"GET HTTP://evil.example:8/x HTTP/1.1\r\nHost: localhost\r\n\r\n";
        assert_eq!(host(abs).as_deref(), Some("evil.example:8"));
        for raw in [
            &b"GET / HTTP/1.1\r\n\r\n"[..],
            b"GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n",
            b"GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n",
        ] {
            assert!(matches!(parse(raw), Err(RequestError::Host(_))));
            assert_eq!(status(raw), 400);
        }
    }

    #[test]
    fn two_authorizations_are_refused() {
        let raw =
            b"POST /asns HTTP/1.1\r\nAuthorization: Bearer a\r\nauthorization: Bearer b\r\n\r\n";
        assert!(matches!(parse(raw), Err(RequestError::TwoAuthorizations)));
        assert_eq!(status(raw), 400);
        let one = parse(b"GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer a\r\n\r\n");
        assert_eq!(
            one.unwrap().unwrap().info.authorization.as_deref(),
            Some("Bearer a")
        );
    }

    #[test]
    fn answers() {
        let reply = Reply {
            status: 304,
            content_type: "text/plain",
            headers: vec![("ETag", "\"x\"".into())],
            body: Vec::new(),
            length_without_body: Some(42),
            shared: None,
        };
        let out = answer(reply, false, true, 784_111_777);
        let head = String::from_utf8(out.head.clone()).unwrap();
        assert!(
            head.starts_with(
                "HTTP/1.1 304 Not Modified\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
            ),
            "{head}"
        );
        assert!(head.contains("Content-Length: 42\r\nETag: \"x\"\r\nConnection: close\r\n\r\n"));
        assert!(out.body.is_empty());
        let r = Reply::from(crate::api::error::ApiError::from(
            RequestError::TooManyFields,
        ));
        let out = answer(r, true, false, 0);
        assert!(out.body.is_empty());
        assert!(String::from_utf8_lossy(&out.head).contains("Content-Length: 39\r\n"));
        // Every status the API answers has its own reason phrase (a refused
        // cross-origin request said `403 Error`).
        for status in [400, 401, 403, 404, 405, 408, 413, 414, 417, 431, 503] {
            assert_ne!(reason(status), "Error", "{status}");
        }
    }
}
