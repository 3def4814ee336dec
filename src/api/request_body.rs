//! The request body as the handlers read it: from the connection, delimited by its
//! `Content-Length` or chunked coding, sending `100 Continue` only when first read
//! (that is, after the handler's checks passed), and within a deadline.
//!
//! Memory: the connection's buffer ([`MAX_HEAD`]) and the caller's; a chunk-size line
//! or trailer longer than that is an error, and the handlers read at most
//! `MAX_BODY + 1` bytes.

use std::io::{self, Read};
use std::time::Instant;

use super::conn::Conn;
use super::http::{Framing, MAX_HEAD};

/// Where a chunked body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Before a chunk-size line.
    Size,
    /// Inside a chunk: bytes left.
    Data(u64),
    /// The CRLF after a chunk's data.
    DataEnd,
    /// The trailer section after the last chunk: bytes of it seen so far.
    Trailer(usize),
    /// All read.
    Done,
}

/// A request body being read from its connection.
pub struct Body<'a> {
    conn: &'a mut Conn,
    framing: Framing,
    /// For `Length`: bytes left.
    left: u64,
    chunk: Chunk,
    /// `100 Continue` is still owed to a client that waits for it.
    owe_continue: bool,
    deadline: Instant,
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

impl<'a> Body<'a> {
    /// The body of a request with `framing`, to be read by `deadline`.
    pub fn new(conn: &'a mut Conn, framing: Framing, expect: bool, deadline: Instant) -> Body<'a> {
        let left = match framing {
            Framing::Length(n) => n,
            _ => 0,
        };
        Body {
            conn,
            framing,
            left,
            chunk: Chunk::Size,
            owe_continue: expect && framing != Framing::None,
            deadline,
        }
    }

    /// Nothing of the body is left on the connection: it may carry another request.
    pub fn complete(&self) -> bool {
        match self.framing {
            Framing::None => true,
            Framing::Length(_) => self.left == 0,
            Framing::Chunked => self.chunk == Chunk::Done,
            Framing::Unknown => false,
        }
    }

    /// One CRLF-terminated line from the buffer (without the CRLF), consumed.
    fn line(&mut self) -> io::Result<Vec<u8>> {
        loop {
            if let Some(i) = self.conn.buf.windows(2).position(|w| w == b"\r\n") {
                let line = self.conn.buf[..i].to_vec();
                self.conn.consume(i + 2);
                return Ok(line);
            }
            if self.conn.buf.len() >= MAX_HEAD {
                return Err(bad("chunk line too long"));
            }
            self.conn.fill(self.deadline)?;
        }
    }

    fn read_chunked(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.chunk {
                Chunk::Size => {
                    let line = self.line()?;
                    // Extensions after `;` are allowed and ignored.
                    let size = line.split(|&b| b == b';').next().unwrap_or_default();
                    let size = std::str::from_utf8(size).map_err(|_| bad("bad chunk size"))?;
                    let size = size.trim_matches([' ', '\t']);
                    if size.is_empty() || size.len() > 15 {
                        return Err(bad("bad chunk size"));
                    }
                    let n = u64::from_str_radix(size, 16).map_err(|_| bad("bad chunk size"))?;
                    self.chunk = if n == 0 {
                        Chunk::Trailer(0)
                    } else {
                        Chunk::Data(n)
                    };
                }
                Chunk::Data(left) => {
                    if self.conn.buf.is_empty() {
                        self.conn.fill(self.deadline)?;
                    }
                    let n = (left.min(out.len() as u64) as usize).min(self.conn.buf.len());
                    out[..n].copy_from_slice(&self.conn.buf[..n]);
                    self.conn.consume(n);
                    let left = left - n as u64;
                    self.chunk = if left == 0 {
                        Chunk::DataEnd
                    } else {
                        Chunk::Data(left)
                    };
                    return Ok(n);
                }
                Chunk::DataEnd => {
                    if !self.line()?.is_empty() {
                        return Err(bad("chunk data longer than its size"));
                    }
                    self.chunk = Chunk::Size;
                }
                Chunk::Trailer(seen) => {
                    let line = self.line()?;
                    if line.is_empty() {
                        self.chunk = Chunk::Done;
                    } else if seen + line.len() > MAX_HEAD {
                        return Err(bad("trailer section too large"));
                    } else {
                        self.chunk = Chunk::Trailer(seen + line.len() + 2);
                    }
                }
                Chunk::Done => return Ok(0),
            }
        }
    }
}

impl Read for Body<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() || self.complete() {
            return Ok(0);
        }
        if std::mem::take(&mut self.owe_continue) {
            self.conn
                .write_by(b"HTTP/1.1 100 Continue\r\n\r\n", self.deadline)?;
        }
        match self.framing {
            Framing::None => Ok(0),
            Framing::Unknown => Err(bad("body of unknown length")),
            Framing::Chunked => self.read_chunked(out),
            Framing::Length(_) => {
                if self.conn.buf.is_empty() {
                    self.conn.fill(self.deadline)?;
                }
                let n = (self.left.min(out.len() as u64) as usize).min(self.conn.buf.len());
                out[..n].copy_from_slice(&self.conn.buf[..n]);
                self.conn.consume(n);
                self.left -= n as u64;
                Ok(n)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::time::Duration;

    fn pair() -> (Conn, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        (Conn::new(s, Duration::from_secs(1)).unwrap(), c)
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(2)
    }

    #[test]
    fn chunked_with_extensions_trailers_and_pipelined_rest() {
        let (mut conn, mut client) = pair();
        conn.buf = b"5;x=y\r\nhello\r\n".to_vec();
        client
            .write_all(b"6\r\n world\r\n0\r\nX-T: 1\r\n\r\nGET /next")
            .unwrap();
        let mut body = Body::new(&mut conn, Framing::Chunked, false, soon());
        let mut got = Vec::new();
        let mut buf = [0u8; 4];
        loop {
            // Read until the end, which may need a read after the last data.
            match body.read(&mut buf).unwrap() {
                0 => break,
                n => got.extend_from_slice(&buf[..n]),
            }
        }
        assert_eq!(got, b"hello world");
        assert!(body.complete());
        assert_eq!(conn.buf, b"GET /next");
    }

    #[test]
    fn bad_chunks_and_short_bodies_are_errors() {
        for raw in [
            &b"zz\r\nabc\r\n"[..],
            b"3\r\nabcd\r\n",
            b"fffffffffffffffff\r\n",
        ] {
            let (mut conn, client) = pair();
            conn.buf = raw.to_vec();
            drop(client);
            let mut out = Vec::new();
            let e = Body::new(&mut conn, Framing::Chunked, false, soon()).read_to_end(&mut out);
            assert!(e.is_err(), "{raw:?}");
        }
        let (mut conn, client) = pair();
        conn.buf = b"abc".to_vec();
        drop(client);
        let mut body = Body::new(&mut conn, Framing::Length(10), false, soon());
        let mut out = Vec::new();
        assert!(body.read_to_end(&mut out).is_err());
        assert!(!body.complete());
    }

    #[test]
    fn continue_only_when_read_and_deadline_holds() {
        let (mut conn, mut client) = pair();
        client
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let deadline = Instant::now() + Duration::from_millis(300);
        let mut body = Body::new(&mut conn, Framing::Length(2), true, deadline);
        let mut b = [0u8; 2];
        let t = Instant::now();
        let e = body.read(&mut b).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(t.elapsed() < Duration::from_secs(1));
        let mut got = [0u8; 25];
        client.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"HTTP/1.1 100 Continue\r\n\r\n");
    }
}
