//! Response bodies as they stream: framed by `Content-Length`, chunked (decoded by
//! the decoder shared with the API server) or by the connection's end, and capped.

use std::io::{self, BufRead, Read};

use super::{io_error, Conn, Framing, Response};
use crate::collect::fetch::SourceError;
use crate::http1;

impl Response {
    /// The body as it streams, at most `limit` bytes. Its read errors are
    /// [`SourceError`]s inside `io::Error` (see `fetcher::from_io`).
    pub(crate) fn body(&mut self, limit: u64) -> Body<'_> {
        let state = match self.framing {
            // Refused early when the server announces a body that is too large.
            Framing::Length(n) if n > limit => BodyState::Failed(SourceError::TooLarge { limit }),
            Framing::Length(n) => BodyState::Length(n),
            Framing::Close => BodyState::Close,
            Framing::Chunked => BodyState::Chunked(http1::Chunked::new()),
        };
        Body {
            resp: self,
            limit,
            read: 0,
            state,
        }
    }
}

/// A response body being read; see [`Response::body`].
pub(crate) struct Body<'a> {
    resp: &'a mut Response,
    limit: u64,
    read: u64,
    state: BodyState,
}

enum BodyState {
    /// Bytes left of a `Content-Length` body.
    Length(u64),
    /// Until the server closes the connection.
    Close,
    /// A chunked body, decoded as it comes (the decoder shared with the API server).
    Chunked(http1::Chunked),
    /// Failed before the first read.
    Failed(SourceError),
}

impl Read for Body<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let seconds = self.resp.seconds;
        let fail = |e: io::Error| match e.get_ref().is_some_and(|i| i.is::<SourceError>()) {
            true => e,
            false => io::Error::other(io_error(e, seconds)),
        };
        // One byte more than allowed tells "exactly at the limit" from "over".
        let room = (self.limit + 1 - self.read).min(out.len() as u64) as usize;
        let n = loop {
            let read = match &mut self.state {
                BodyState::Failed(e) => return Err(io::Error::other(e.clone())),
                BodyState::Length(0) => return Ok(0),
                BodyState::Length(left) => {
                    let want = room.min(usize::try_from(*left).unwrap_or(usize::MAX));
                    match self.resp.conn.read(&mut out[..want]) {
                        Ok(0) if want > 0 => Err(io::ErrorKind::UnexpectedEof.into()),
                        Ok(n) => {
                            *left -= n as u64;
                            Ok(n)
                        }
                        Err(e) => Err(e),
                    }
                }
                BodyState::Close => match self.resp.conn.read(&mut out[..room]) {
                    // rustls reports a close without TLS close_notify so; many
                    // servers end that way, and the caller checks the body's shape.
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
                    r => r,
                },
                BodyState::Chunked(decoder) => {
                    read_chunk(&mut self.resp.conn, decoder, &mut out[..room])
                }
            };
            match read {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r.map_err(fail)?,
            }
        };
        self.read += n as u64;
        if self.read > self.limit {
            return Err(io::Error::other(SourceError::TooLarge {
                limit: self.limit,
            }));
        }
        Ok(n)
    }
}

/// Reads the next piece of a chunked body into `out` (not empty); 0 at its end.
/// Framing lines are decoded from the connection's buffer, never copied.
fn read_chunk(conn: &mut Conn, decoder: &mut http1::Chunked, out: &mut [u8]) -> io::Result<usize> {
    // The size line is not quoted: failure texts never carry what a server sent.
    let broken = |e: http1::ChunkError| {
        let what = match e {
            http1::ChunkError::BadSize(_) => "bad chunk size line".into(),
            e => e.to_string(),
        };
        io::Error::other(SourceError::Protocol(what))
    };
    loop {
        if decoder.done() {
            return Ok(0);
        }
        let before = decoder.clone();
        let avail = &conn.buf[conn.pos..conn.len];
        let mut step = decoder.step(avail).map_err(broken)?;
        if step.data.len() > out.len() {
            // More data than fits: decode again from only as much as fits.
            *decoder = before;
            step = decoder.step(&avail[..out.len()]).map_err(broken)?;
        }
        let (used, n) = (step.used, step.data.len());
        out[..n].copy_from_slice(step.data);
        conn.consume(used);
        if n > 0 {
            return Ok(n);
        }
        if used == 0 && !decoder.done() && conn.more()? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
    }
}
