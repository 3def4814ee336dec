//! HTTP/1.1 on the wire, without sockets: the request head parsed with `httparse`
//! under fixed bounds, and the answer's head written out.
//!
//! Bounds (see `docs/api.md`, "Connections and limits"): the head (request line and
//! headers) is at most [`MAX_HEAD`] bytes and [`MAX_HEADERS`] fields. The caller
//! never buffers more than [`MAX_HEAD`] bytes of a head, so a client cannot make a
//! connection hold more than that whatever it sends.

use super::routes::{Reply, RequestInfo};

/// Longest request head (request line and headers, with the blank line): 8 KiB.
pub const MAX_HEAD: usize = 8 * 1024;

/// Most header fields in one request.
pub const MAX_HEADERS: usize = 64;

/// How the request body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body.
    None,
    /// `Content-Length` bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Several `Content-Length` values that disagree, or one that is no number: the
    /// handlers refuse the request before reading, and the connection ends.
    Unknown,
}

/// A parsed request head.
#[derive(Debug)]
pub struct Head {
    /// What the handlers see.
    pub info: RequestInfo,
    /// How the body is delimited.
    pub framing: Framing,
    /// `Expect: 100-continue` was sent: the client waits before sending the body.
    pub expect_continue: bool,
    /// The connection may carry another request after this one.
    pub keep_alive: bool,
    /// Bytes of the head, blank line included.
    pub len: usize,
}

/// A request refused before it reaches the handlers: the status and a message. The
/// connection ends after the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub u16, pub &'static str);

/// Parses the head at the start of `buf`: `Ok(None)` while it is incomplete and
/// still within [`MAX_HEAD`].
pub fn parse_head(buf: &[u8]) -> Result<Option<Head>, Refusal> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut fields);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => return Ok(None),
        Ok(httparse::Status::Partial) => {
            return Err(if buf.windows(2).any(|w| w == b"\r\n") {
                Refusal(431, "request head larger than 8192 bytes")
            } else {
                Refusal(414, "request line longer than 8192 bytes")
            })
        }
        Err(httparse::Error::TooManyHeaders) => {
            return Err(Refusal(431, "more than 64 header fields"))
        }
        Err(httparse::Error::Version) => {
            return Err(Refusal(
                400,
                "malformed request line or unsupported HTTP version",
            ))
        }
        Err(_) => return Err(Refusal(400, "malformed request head")),
    };
    // httparse accepts a bare LF as a line end; a proxy in front may not, and reading
    // the head differently from it is how requests get smuggled.
    let raw = &buf[..len];
    if raw
        .iter()
        .enumerate()
        .any(|(i, &b)| b == b'\n' && (i == 0 || raw[i - 1] != b'\r'))
    {
        return Err(Refusal(400, "line ends must be CRLF"));
    }
    let mut head = Head {
        info: RequestInfo {
            method: req.method.unwrap_or_default().to_string(),
            target: origin_form(req.path.unwrap_or_default()),
            ..RequestInfo::default()
        },
        framing: Framing::None,
        expect_continue: false,
        keep_alive: req.version == Some(1),
        len,
    };
    let mut chunked = false;
    for h in req.headers.iter() {
        // Values are printable ASCII (and tabs): the handlers quote them in messages
        // and compare tokens; obs-text is not worth the ambiguity.
        if !h
            .value
            .iter()
            .all(|&b| b == b'\t' || (0x20..0x7f).contains(&b))
        {
            return Err(Refusal(
                400,
                "a header value holds a byte that is not printable ASCII",
            ));
        }
        // Checked above: ASCII, so this never loses anything.
        let value = String::from_utf8_lossy(h.value).trim().to_string();
        let name = h.name;
        if name.eq_ignore_ascii_case("Content-Length") {
            head.info.content_length.push(value);
        } else if name.eq_ignore_ascii_case("Transfer-Encoding") {
            if chunked || !value.eq_ignore_ascii_case("chunked") {
                return Err(Refusal(400, "unsupported Transfer-Encoding (only chunked)"));
            }
            chunked = true;
        } else if name.eq_ignore_ascii_case("Authorization") {
            head.info.authorization = Some(value);
        } else if name.eq_ignore_ascii_case("If-None-Match") {
            head.info.if_none_match = Some(value);
        } else if name.eq_ignore_ascii_case("Host") {
            head.info.host = Some(value);
        } else if name.eq_ignore_ascii_case("Origin") {
            head.info.origin = Some(value);
        } else if name.eq_ignore_ascii_case("Accept-Encoding") {
            head.info.accept_encoding = Some(value);
        } else if name.eq_ignore_ascii_case("Expect") {
            if !value.eq_ignore_ascii_case("100-continue") {
                return Err(Refusal(417, "the only Expect understood is 100-continue"));
            }
            head.expect_continue = true;
        } else if name.eq_ignore_ascii_case("Connection") {
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    head.keep_alive = false;
                } else if token.eq_ignore_ascii_case("keep-alive") && req.version == Some(0) {
                    head.keep_alive = true;
                }
            }
        }
    }
    head.framing = match (chunked, head.info.content_length.first()) {
        (true, Some(_)) => {
            // RFC 9112, 6.1: both is a sign of smuggling; refuse rather than guess.
            return Err(Refusal(400, "both Content-Length and Transfer-Encoding"));
        }
        (true, None) => Framing::Chunked,
        (false, None) => Framing::None,
        (false, Some(first)) => match first.parse::<u64>() {
            Ok(n) if head.info.content_length.iter().all(|v| v == first) => {
                if n == 0 {
                    Framing::None
                } else {
                    Framing::Length(n)
                }
            }
            _ => Framing::Unknown,
        },
    };
    Ok(Some(head))
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
/// large listing is not copied), and how much of both is written.
#[derive(Debug, Default)]
pub struct Out {
    /// Status line and headers.
    pub head: Vec<u8>,
    /// The body (empty for HEAD and 304).
    pub body: Vec<u8>,
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
    let length = reply.length_without_body.unwrap_or(reply.body.len());
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
        body: if keep_body { reply.body } else { Vec::new() },
        written: 0,
    }
}

/// The JSON error answer of a request refused by the connection layer.
pub fn refusal_reply(r: &Refusal) -> Reply {
    Reply {
        status: r.0,
        content_type: super::body::JSON,
        headers: Vec::new(),
        body: super::body::json_line(&serde_json::json!({ "error": r.1 })),
        length_without_body: None,
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

    fn parse(raw: &[u8]) -> Result<Option<Head>, Refusal> {
        parse_head(raw)
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
        let h = parse(
            b"POST / HTTP/1.1\r\nHost: r:80\r\nOrigin: http://e\r\nAccept-Encoding: gzip\r\n\r\n",
        )
        .unwrap()
        .unwrap();
        let i = &h.info;
        let got = (
            i.host.as_deref(),
            i.origin.as_deref(),
            i.accept_encoding.as_deref(),
        );
        assert_eq!(got, (Some("r:80"), Some("http://e"), Some("gzip")));
        assert_eq!(origin_form("HTTPS://x?q"), "/?q");
        assert!(parse(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap().is_none());
        let h = parse(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(h.keep_alive);
        let h = parse(b"GET / HTTP/1.0\r\n\r\n").unwrap().unwrap();
        assert!(!h.keep_alive);
        let h = parse(b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(h.framing, Framing::Unknown);
        assert_eq!(h.info.content_length, ["1", "2"]);

        let mut long = b"GET /".to_vec();
        long.resize(MAX_HEAD, b'a');
        assert_eq!(parse(&long).unwrap_err().0, 414);
        let mut big = b"GET / HTTP/1.1\r\nX: ".to_vec();
        big.resize(MAX_HEAD, b'a');
        assert_eq!(parse(&big).unwrap_err().0, 431);
        let mut many = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..65 {
            many.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
        }
        assert_eq!(parse(&many).unwrap_err().0, 431);
        for (raw, status) in [
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
            assert_eq!(
                parse(raw).unwrap_err().0,
                status,
                "{:?}",
                String::from_utf8_lossy(raw)
            );
        }
    }

    #[test]
    fn answers() {
        let reply = Reply {
            status: 304,
            content_type: "text/plain",
            headers: vec![("ETag", "\"x\"".into())],
            body: Vec::new(),
            length_without_body: Some(42),
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
        let r = refusal_reply(&Refusal(431, "too big"));
        let out = answer(r, true, false, 0);
        assert!(out.body.is_empty());
        assert!(String::from_utf8_lossy(&out.head).contains("Content-Length: 20\r\n"));
    }
}
