//! A small HTTP/1.1 client for RIPEstat and DoH: GET only, one connection per
//! request (`Connection: close`; a run makes a few requests per source, a pool would
//! reuse next to nothing), redirects followed (never from https to http, nor from a
//! public address to an internal one), TLS 1.3
//! through rustls with ring when built with the `tls` feature.
//!
//! It replaced ureq, whose generic request and body machinery cost about 150 KiB of
//! the router binary. Everything a request does (DNS lookup, connect, TLS handshake,
//! head and body) shares one deadline, so a request never takes longer than the
//! timeout. Memory per request: a 8 KiB buffer (the longest response head) and
//! rustls' buffers; the body streams to the caller's parser through [`Body`].

use std::io::{self, BufRead, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

#[cfg(feature = "tls")]
use rustls::{ClientConnection, StreamOwned};

use super::dns;
use super::fetch::{Cause, SourceError};
use super::url::Url;
// Response heads are bounded like the server's request heads, and bodies framed by the
// same strict parser and chunked decoder.
use crate::http1::{self, Framing, MAX_HEAD, MAX_HEADERS};

#[cfg(feature = "tls")]
pub(crate) use super::tls::TlsSetup;

/// A build without the `tls` feature: https only through `fetch.command`.
#[cfg(not(feature = "tls"))]
#[derive(Debug, Clone)]
pub(crate) struct TlsSetup;

#[cfg(not(feature = "tls"))]
impl TlsSetup {
    pub(crate) fn for_https(_: bool) -> TlsSetup {
        TlsSetup
    }

    pub(crate) fn check(&self) -> Result<(), SourceError> {
        Err(TlsSetup::unavailable())
    }

    fn unavailable() -> SourceError {
        SourceError::tls(
            "this build has no built-in TLS: set fetch.command (e.g. uclient-fetch) \
             to fetch https:// URLs",
        )
    }
}

/// Redirects followed before giving up.
const MAX_REDIRECTS: usize = 5;

/// An HTTP client for one kind of source: the timeout of one request, statuses
/// returned rather than turned into errors, and the TLS settings with the CA roots.
#[derive(Debug)]
pub(crate) struct Http {
    /// Built once; says why https cannot work (no CA bundle, no TLS in the build).
    tls: TlsSetup,
    timeout: Duration,
}

impl Http {
    /// A client whose requests each time out after `timeout` (end to end, from DNS
    /// lookup to the end of the body).
    pub(crate) fn new(timeout: Duration, tls: &TlsSetup) -> Http {
        Http {
            tls: tls.clone(),
            timeout,
        }
    }

    /// The timeout in whole seconds, for [`SourceError::Timeout`].
    fn seconds(&self) -> u64 {
        self.timeout.as_secs().max(1)
    }

    /// Sends a GET request to `url` with `query` appended and the `headers`,
    /// following redirects; any status is `Ok`.
    pub(crate) fn get(
        &self,
        url: &str,
        query: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> Result<Response, SourceError> {
        let deadline = Instant::now() + self.timeout;
        let mut url = Url::parse(url).map_err(bad_url)?;
        url.add_query(query);
        // Set by the first connection: whether the configured URL is internal itself
        // (then its redirects may be too).
        let mut reach = None;
        for _ in 0..=MAX_REDIRECTS {
            let resp = self.request(&url, headers, deadline, &mut reach)?;
            let location = match resp.status {
                301 | 302 | 303 | 307 | 308 => resp.header("location"),
                _ => None,
            };
            match location {
                Some(location) => url = redirect(&url, location)?,
                None => return Ok(resp),
            }
        }
        Err(SourceError::Redirect(format!(
            "more than {MAX_REDIRECTS} redirects"
        )))
    }

    /// One request and its response head; `reach` as for [`Http::connect`].
    fn request(
        &self,
        url: &Url,
        headers: &[(&str, &str)],
        deadline: Instant,
        reach: &mut Option<bool>,
    ) -> Result<Response, SourceError> {
        // Checked before connecting, so that the missing CA bundle is the error
        // rather than the handshake failure it would cause.
        if url.https {
            self.tls.check()?;
        }
        let sock = Timed {
            sock: self.connect(url, deadline, reach)?,
            deadline,
        };
        let stream = match url.https {
            false => Stream::Plain(sock),
            #[cfg(feature = "tls")]
            true => {
                let conn = self.tls.connect(&url.host)?;
                Stream::Tls(Box::new(StreamOwned::new(conn, sock)))
            }
            #[cfg(not(feature = "tls"))]
            true => return Err(TlsSetup::unavailable()),
        };
        let mut conn = Conn {
            stream,
            buf: vec![0; MAX_HEAD].into_boxed_slice(),
            pos: 0,
            len: 0,
        };
        // A caller may name its own User-Agent (bgp.tools wants a contact in it).
        let is_ua = |k: &str| k.eq_ignore_ascii_case("user-agent");
        let ua = headers
            .iter()
            .find(|(k, _)| is_ua(k))
            .map_or(super::fetcher::USER_AGENT, |(_, v)| *v);
        let mut head = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: {ua}\r\n",
            url.target,
            url.host_header(),
        );
        for (k, v) in headers.iter().filter(|(k, _)| !is_ua(k)) {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("Connection: close\r\n\r\n");
        let seconds = self.seconds();
        let fail = |e| io_error(e, seconds);
        conn.stream.write_all(head.as_bytes()).map_err(fail)?;
        conn.stream.flush().map_err(fail)?;
        read_response(conn, seconds)
    }

    /// A TCP connection to the URL's host, tried address by address. `reach`: `None`
    /// for the configured URL, which may name any address (set then to whether the one
    /// connected to is internal); after a redirect `Some(false)` skips internal
    /// addresses (loopback, private, link-local ...), checked on the resolved ones, so
    /// that a public feed cannot point the collector at the router's own services.
    fn connect(
        &self,
        url: &Url,
        deadline: Instant,
        reach: &mut Option<bool>,
    ) -> Result<TcpStream, SourceError> {
        let timeout = SourceError::Timeout {
            seconds: self.seconds(),
        };
        // None (a name that does not exist) ends in no_such_host below.
        let ips = addresses(&url.host, deadline, self.seconds())?;
        let (mut last, mut refused) = (None, None);
        for ip in ips {
            if *reach == Some(false) && internal(ip) {
                refused = Some(ip);
                continue;
            }
            let left = left(deadline).map_err(|_| timeout.clone())?;
            match TcpStream::connect_timeout(&SocketAddr::new(ip, url.port), left) {
                Ok(sock) => {
                    reach.get_or_insert(internal(ip));
                    return Ok(sock);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(match (last, refused) {
            (Some(e), _) => io_error(e, self.seconds()),
            (None, Some(ip)) => refused_internal(ip),
            (None, None) => no_such_host(),
        })
    }
}

/// The `bad URL` error.
fn bad_url(e: String) -> SourceError {
    SourceError::transport(format!("bad URL: {e}"))
}

/// Where a redirect from `from` to `location` leads. A redirect from https to plain
/// http is refused: it would hand the request, and the answer that fills the
/// firewall sets, to anyone on the path.
/// The `Location` is not quoted: failure texts never carry what a server sent.
fn redirect(from: &Url, location: &str) -> Result<Url, SourceError> {
    let refuse = |why: &str| SourceError::Redirect(why.into());
    let to = from
        .join(location)
        .map_err(|_| refuse("its Location is not a URL this client follows"))?;
    if from.https && !to.https {
        return Err(refuse("from https to plain http"));
    }
    Ok(to)
}

/// Whether a redirect from a public URL must not lead to `ip`: loopback, private,
/// shared (100.64/10), link-local, unspecified, multicast, broadcast and reserved
/// addresses, and their IPv6 kin (ULA, link- and site-local).
pub(crate) fn internal(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(a) => {
            let [o0, o1, ..] = a.octets();
            a.is_loopback()
                || a.is_private()
                || a.is_link_local()
                || a.is_multicast()
                || o0 == 0
                || o0 >= 240
                || (o0 == 100 && o1 & 0xc0 == 64)
        }
        IpAddr::V6(a) => {
            let s = a.segments()[0];
            a.is_loopback()
                || a.is_unspecified()
                || a.is_multicast()
                || s & 0xfe00 == 0xfc00
                || s & 0xffc0 == 0xfe80
                || s & 0xffc0 == 0xfec0
        }
    }
}

/// The refusal of a redirect from a public URL to the internal address `ip`; also
/// `fetch.command`'s (`followed`).
pub(crate) fn refused_internal(ip: IpAddr) -> SourceError {
    SourceError::Redirect(format!(
        "to an internal address ({ip}) from a URL that is not one"
    ))
}

/// The addresses of a URL's `host`: itself when it is an address, else what the
/// system resolver says (none for a name that does not exist). Also where
/// `fetch.command`'s redirects are judged (`followed`): uclient-fetch resolves
/// through the same resolver. A lookup cannot be interrupted: it runs on a helper
/// thread (shared with the DNS sources) and is given up at `deadline`.
pub(crate) fn addresses(
    host: &str,
    deadline: Instant,
    seconds: u64,
) -> Result<Vec<IpAddr>, SourceError> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![ip]);
    }
    let timeout = SourceError::Timeout { seconds };
    let left = left(deadline).map_err(|_| timeout.clone())?;
    let found = dns::lookup_on_thread(host, left, dns::system_lookup)
        .and_then(|r| r.or_else(|e| dns::system_error(&e).map(|_| Vec::new())));
    match found {
        Err(SourceError::NxDomain) => Ok(Vec::new()),
        Err(SourceError::Timeout { .. }) => Err(timeout),
        // A failing resolver is a transport problem of this request (retried).
        Err(SourceError::Dns(m)) => Err(SourceError::transport(format!(
            "looking up the server's host name failed: {m}"
        ))),
        found => found,
    }
}

/// The error of a server name without addresses.
fn no_such_host() -> SourceError {
    SourceError::transport("the server's host name does not resolve")
}

/// The time left until `deadline`; an error once it has passed.
fn left(deadline: Instant) -> io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::ErrorKind::TimedOut.into());
    }
    Ok(left)
}

/// Maps an error of the connection to a [`SourceError`].
fn io_error(e: io::Error, seconds: u64) -> SourceError {
    match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => SourceError::Timeout { seconds },
        // rustls reports handshake and certificate failures as InvalidData; this
        // module's own errors use Other.
        io::ErrorKind::InvalidData => {
            let mut message = e.to_string();
            if message.ends_with("ProtocolVersion") {
                message.push_str(" (the server does not speak TLS 1.3)");
            }
            SourceError::Tls {
                message,
                cause: Some(Cause::new(e)),
            }
        }
        io::ErrorKind::UnexpectedEof => {
            SourceError::transport("the server closed the connection too early")
        }
        _ => SourceError::Transport {
            message: e.to_string(),
            cause: Some(Cause::new(e)),
        },
    }
}

/// A protocol error of the server's answer.
fn bad(what: String) -> io::Error {
    io::Error::other(what)
}

/// A socket whose reads and writes fail once the request's deadline has passed.
struct Timed {
    sock: TcpStream,
    deadline: Instant,
}

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.sock.set_read_timeout(Some(left(self.deadline)?))?;
        self.sock.read(buf)
    }
}

impl Write for Timed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.sock.set_write_timeout(Some(left(self.deadline)?))?;
        self.sock.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.sock.flush()
    }
}

/// Reads the response head from `conn` (after the request was sent) and decides the
/// body's framing. Apart from the socket, it is what a server's answer can reach.
fn read_response(mut conn: Conn, seconds: u64) -> Result<Response, SourceError> {
    let fail = |e| io_error(e, seconds);
    let (status, headers) = read_head(&mut conn).map_err(fail)?;
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim())
    };
    let framing = if status == 204 || status == 304 {
        Framing::Length(0)
    } else if let Some(te) = header("transfer-encoding") {
        // Anything not ending in chunked is delimited by the connection's end.
        match te.rsplit(',').next().unwrap_or_default().trim() {
            c if c.eq_ignore_ascii_case("chunked") => Framing::Chunked,
            _ => Framing::Close,
        }
    } else {
        let lengths = headers.iter().filter(|(k, _)| k == "content-length");
        match http1::content_length(lengths.map(|(_, v)| v.as_str())) {
            Ok(Some(n)) => Framing::Length(n),
            Ok(None) => Framing::Close,
            // Not quoted: failure texts never carry what a server sent.
            Err(_) => {
                return Err(SourceError::Protocol(
                    "a Content-Length that is not a number, or several that disagree".into(),
                ))
            }
        }
    };
    Ok(Response {
        status,
        headers,
        framing,
        conn,
        seconds,
    })
}

/// A plain or TLS connection.
enum Stream {
    Plain(Timed),
    /// Bytes given by the fuzz target as a server's answer.
    #[cfg(fuzzing)]
    Bytes(io::Cursor<Vec<u8>>),
    #[cfg(feature = "tls")]
    Tls(Box<StreamOwned<ClientConnection, Timed>>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            #[cfg(fuzzing)]
            Stream::Bytes(s) => s.read(buf),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            #[cfg(fuzzing)]
            Stream::Bytes(_) => Ok(buf.len()),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            #[cfg(fuzzing)]
            Stream::Bytes(_) => Ok(()),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// The connection with its read buffer: `buf[pos..len]` is read but not consumed.
struct Conn {
    stream: Stream,
    buf: Box<[u8]>,
    pos: usize,
    len: usize,
}

impl Conn {
    /// Reads more after what is buffered (for the response head, which must fit the
    /// buffer); 0 at the end of the stream.
    fn more(&mut self) -> io::Result<usize> {
        if self.len == self.buf.len() {
            if self.pos == 0 {
                return Err(bad(format!(
                    "response head longer than {} KiB",
                    MAX_HEAD >> 10
                )));
            }
            self.buf.copy_within(self.pos..self.len, 0);
            self.len -= self.pos;
            self.pos = 0;
        }
        let n = self.stream.read(&mut self.buf[self.len..])?;
        self.len += n;
        Ok(n)
    }
}

impl Read for Conn {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(out.len());
        out[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Conn {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.len {
            (self.pos, self.len) = (0, 0);
            self.more()?;
        }
        Ok(&self.buf[self.pos..self.len])
    }
    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.len);
    }
}

/// Reads the response head: the status and the headers (names in lower case).
/// Interim 1xx answers are skipped.
fn read_head(conn: &mut Conn) -> io::Result<(u16, Vec<(String, String)>)> {
    loop {
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut head = httparse::Response::new(&mut slots);
        match head.parse(&conn.buf[conn.pos..conn.len]) {
            Ok(httparse::Status::Complete(n)) => {
                let status = head.code.unwrap_or_default();
                let headers = head
                    .headers
                    .iter()
                    .map(|h| {
                        let value = String::from_utf8_lossy(h.value).into_owned();
                        (h.name.to_ascii_lowercase(), value)
                    })
                    .collect();
                conn.consume(n);
                if !(100..200).contains(&status) {
                    return Ok((status, headers));
                }
            }
            Ok(httparse::Status::Partial) => {
                if conn.more()? == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
            }
            Err(httparse::Error::TooManyHeaders) => {
                return Err(bad(format!(
                    "the answer has more than {MAX_HEADERS} headers"
                )))
            }
            Err(e) => return Err(bad(format!("bad response head: {e}"))),
        }
    }
}

/// A response whose head has been read; the body is still on the connection.
pub(crate) struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    framing: Framing,
    conn: Conn,
    /// The request's timeout, for errors.
    seconds: u64,
}

impl std::fmt::Debug for Response {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Response")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .finish_non_exhaustive()
    }
}

impl Response {
    /// The status code.
    pub(crate) fn status(&self) -> u16 {
        self.status
    }

    /// The value of the header `name` (lower case), the first if repeated.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Seconds of a `Retry-After` header given as a number (the date form is ignored).
pub(crate) fn retry_after(resp: &Response) -> Option<Duration> {
    let v = resp.header("retry-after")?;
    v.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// The fuzz target's way in: `data` as a server's whole answer, read as a request
/// reads it (head, framing, body up to 1 MiB).
#[cfg(fuzzing)]
pub(crate) fn fuzz_response(data: &[u8]) {
    let conn = Conn {
        stream: Stream::Bytes(io::Cursor::new(data.to_vec())),
        buf: vec![0; MAX_HEAD].into_boxed_slice(),
        pos: 0,
        len: 0,
    };
    if let Ok(mut resp) = read_response(conn, 1) {
        let _ = io::copy(&mut resp.body(1 << 20), &mut io::sink());
    }
}

mod body;

#[cfg(test)]
mod tests;
