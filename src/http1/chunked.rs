//! The chunked transfer coding (RFC 9112, 7.1), decoded from whatever bytes the
//! caller has: it never reads, never allocates, and bounds every line, so a peer
//! cannot make either side buffer more than [`MAX_CHUNK_LINE`] bytes of framing.

/// Longest chunk-size line (size, extensions and CRLF) and longest trailer line.
/// Extensions are legal but nobody sends long ones; an endless one is an attack.
pub const MAX_CHUNK_LINE: usize = 1024;

/// Largest trailer section after the last chunk, in bytes.
pub const MAX_TRAILER: usize = 4096;

use std::io::{self, BufRead};

/// A chunked body that breaks the coding: a protocol error of the peer, never a
/// transient failure (sending the same again gives the same).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChunkError {
    /// The size is not hex digits (a sign, spaces inside, `0x`, nothing), or more
    /// than 16 of them.
    #[error("bad chunk size line {0:?}")]
    BadSize(String),
    /// No line end within [`MAX_CHUNK_LINE`] bytes (endless extensions, or no CRLF).
    #[error("chunk line longer than {MAX_CHUNK_LINE} bytes")]
    LineTooLong,
    /// The chunk's data is not followed by CRLF.
    #[error("chunk data longer than its size")]
    DataTooLong,
    /// A trailer section over [`MAX_TRAILER`] bytes, or a trailer line without CRLF.
    #[error("trailer section larger than {MAX_TRAILER} bytes or malformed")]
    BadTrailer,
}

/// Where the decoder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before a chunk-size line.
    Size,
    /// Inside a chunk: bytes of data left.
    Data(u64),
    /// The CRLF after a chunk's data.
    DataEnd,
    /// The trailer section: bytes of it seen so far.
    Trailer(usize),
    /// The body has ended.
    Done,
}

/// What one call of [`Chunked::step`] did with the input.
#[derive(Debug, PartialEq, Eq)]
pub struct Step<'a> {
    /// Bytes of the input used (the caller drops them); 0 when more input is needed
    /// (or the body has ended).
    pub used: usize,
    /// Body data among the bytes used (a part of the input).
    pub data: &'a [u8],
}

/// A chunked-body decoder.
#[derive(Debug, Clone)]
pub struct Chunked {
    state: State,
}

impl Default for Chunked {
    fn default() -> Self {
        Chunked::new()
    }
}

impl Chunked {
    /// A decoder at the start of a body.
    pub fn new() -> Chunked {
        Chunked { state: State::Size }
    }

    /// The last chunk and the trailer have been read: what follows belongs to the
    /// next message.
    pub fn done(&self) -> bool {
        self.state == State::Done
    }

    /// Bytes of data the chunk being read still announces: a caller with a body
    /// limit refuses a chunk too big at its size line, not after waiting for it.
    pub fn announced(&self) -> u64 {
        match self.state {
            State::Data(n) => n,
            _ => 0,
        }
    }

    /// Decodes from the start of `input` (what the caller has buffered and not yet
    /// used) one piece: a line, or data. `used == 0` means more input is needed;
    /// a caller that then cannot buffer more (it holds at least [`MAX_CHUNK_LINE`]
    /// bytes) never gets there, as a line longer than that is an error.
    pub fn step<'a>(&mut self, input: &'a [u8]) -> Result<Step<'a>, ChunkError> {
        let nothing = Step { used: 0, data: &[] };
        match self.state {
            State::Size => Ok(match size_line(input)? {
                Some((used, size)) => {
                    self.state = match size {
                        0 => State::Trailer(0),
                        n => State::Data(n),
                    };
                    Step { used, data: &[] }
                }
                None => nothing,
            }),
            State::Data(left) => {
                let n = usize::try_from(left).unwrap_or(usize::MAX).min(input.len());
                let left = left - n as u64;
                self.state = if left == 0 {
                    State::DataEnd
                } else {
                    State::Data(left)
                };
                Ok(Step {
                    used: n,
                    data: &input[..n],
                })
            }
            State::DataEnd => match input.get(..2) {
                None if input.first().is_none_or(|&b| b == b'\r') => Ok(nothing),
                Some(b"\r\n") => {
                    self.state = State::Size;
                    Ok(Step { used: 2, data: &[] })
                }
                _ => Err(ChunkError::DataTooLong),
            },
            State::Trailer(seen) => {
                let Some(end) = line_end(input) else {
                    if input.len() >= MAX_CHUNK_LINE {
                        return Err(ChunkError::BadTrailer);
                    }
                    return Ok(nothing);
                };
                let seen = seen + end + 2;
                self.state = match end {
                    0 => State::Done,
                    _ if seen > MAX_TRAILER => return Err(ChunkError::BadTrailer),
                    _ => State::Trailer(seen),
                };
                Ok(Step {
                    used: end + 2,
                    data: &[],
                })
            }
            State::Done => Ok(nothing),
        }
    }
}

/// Why a chunked body could not be read from a stream.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Reading failed, or the stream ended before the last chunk.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The peer broke the chunked coding.
    #[error(transparent)]
    Chunk(#[from] ChunkError),
}

/// Decodes a chunked body from `r` into `out`: `Ok(false)` (and stops) as soon as it
/// would exceed `limit` bytes. Chunk extensions and trailers are skipped. Besides
/// `out`, it holds at most about [`MAX_CHUNK_LINE`] bytes of a line that `r`'s
/// buffer gave in pieces.
pub fn read_chunked(r: &mut dyn BufRead, out: &mut Vec<u8>, limit: u64) -> Result<bool, ReadError> {
    let mut d = Chunked::new();
    // The start of a line that `r` gave only part of, completed from later reads.
    let mut carry: Vec<u8> = Vec::new();
    let eof = || ReadError::Io(io::ErrorKind::UnexpectedEof.into());
    while !d.done() {
        let from_carry = !carry.is_empty();
        let input = if from_carry {
            &carry[..]
        } else {
            r.fill_buf()?
        };
        let step = d.step(input)?;
        if out.len() as u64 + step.data.len() as u64 + d.announced() > limit {
            return Ok(false);
        }
        out.extend_from_slice(step.data);
        let used = step.used;
        match (used, from_carry) {
            (0, false) if input.is_empty() => return Err(eof()),
            (0, false) => {
                carry = input.to_vec();
                let n = carry.len();
                r.consume(n);
            }
            (0, true) => {
                let more = r.fill_buf()?;
                if more.is_empty() {
                    return Err(eof());
                }
                // Up to the next LF only, which may end the line: what follows it
                // belongs to the rest of the body (or the next message) and stays
                // in `r`. The decoder fails before the line grows past its bound.
                let n = more
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(more.len(), |i| i + 1)
                    .min(MAX_CHUNK_LINE);
                carry.extend_from_slice(&more[..n]);
                r.consume(n);
            }
            (n, false) => r.consume(n),
            (n, true) => {
                carry.drain(..n);
            }
        }
    }
    Ok(true)
}

/// The position of the first CRLF within [`MAX_CHUNK_LINE`]; `None` while it may
/// still come.
fn line_end(input: &[u8]) -> Option<usize> {
    input
        .windows(2)
        .take(MAX_CHUNK_LINE - 1)
        .position(|w| w == b"\r\n")
}

/// A complete chunk-size line at the start of `input`: its length and the size;
/// `None` while incomplete.
fn size_line(input: &[u8]) -> Result<Option<(usize, u64)>, ChunkError> {
    let bad = || {
        let shown = &input[..input.len().min(24)];
        let end = shown
            .iter()
            .position(|&b| b == b'\r')
            .unwrap_or(shown.len());
        ChunkError::BadSize(String::from_utf8_lossy(&shown[..end]).into_owned())
    };
    // httparse takes a line without digits (" \r\n", ";x\r\n") as size 0.
    match input.first() {
        None => return Ok(None),
        Some(b) if !b.is_ascii_hexdigit() => return Err(bad()),
        Some(_) => {}
    }
    match httparse::parse_chunk_size(input) {
        Ok(httparse::Status::Complete((used, _))) if used > MAX_CHUNK_LINE => {
            Err(ChunkError::LineTooLong)
        }
        // httparse allows spaces before the line end, which RFC 9112 does not (only
        // before a `;`).
        Ok(httparse::Status::Complete((used, _))) if space_then_end(&input[..used]) => Err(bad()),
        Ok(httparse::Status::Complete(found)) => Ok(Some(found)),
        Ok(httparse::Status::Partial) if input.len() >= MAX_CHUNK_LINE => {
            Err(ChunkError::LineTooLong)
        }
        Ok(httparse::Status::Partial) => Ok(None),
        Err(httparse::InvalidChunkSize) => Err(bad()),
    }
}

/// A size line whose digits are followed by spaces or tabs and then its end.
fn space_then_end(line: &[u8]) -> bool {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let rest = &line[digits..];
    let blanks = rest
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t'))
        .count();
    blanks > 0 && rest.get(blanks) == Some(&b'\r')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `input` given in pieces of `piece` bytes, as a slow peer sends it:
    /// the body and what is left after it.
    fn decode(input: &[u8], piece: usize) -> Result<(Vec<u8>, Vec<u8>), ChunkError> {
        let mut d = Chunked::new();
        let (mut buf, mut body, mut fed) = (Vec::new(), Vec::new(), 0);
        loop {
            let step = d.step(&buf)?;
            body.extend_from_slice(step.data);
            let used = step.used;
            buf.drain(..used);
            if d.done() {
                return Ok((body, [&buf[..], &input[fed..]].concat()));
            }
            if used == 0 {
                if fed == input.len() {
                    return Ok((body, b"<cut>".to_vec()));
                }
                let n = piece.min(input.len() - fed);
                buf.extend_from_slice(&input[fed..fed + n]);
                fed += n;
            }
        }
    }

    #[test]
    fn reads_from_a_buffered_stream() {
        let raw =
            b"4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-T: 1\r\n\r\nrest";
        for cap in [1, 2, 5, 64] {
            let mut r = io::BufReader::with_capacity(cap, &raw[..]);
            let mut out = Vec::new();
            assert!(read_chunked(&mut r, &mut out, 100).unwrap(), "{cap}");
            assert_eq!(out, b"Wikipedia in\r\n\r\nchunks.");
            let mut rest = Vec::new();
            io::Read::read_to_end(&mut r, &mut rest).unwrap();
            assert_eq!(rest, b"rest", "{cap}");
        }
        let mut out = Vec::new();
        let mut r: &[u8] = b"3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n";
        assert!(!read_chunked(&mut r, &mut out, 5).unwrap());
        // A chunk announced over the limit stops at its size line, before its data.
        let mut r: &[u8] = b"64\r\n";
        assert!(!read_chunked(&mut r, &mut Vec::new(), 99).unwrap());
        for cut in [&b"3\r\nab"[..], b"3\r\nabc\r\n", b"3", b""] {
            let mut r = io::BufReader::with_capacity(2, cut);
            let e = read_chunked(&mut r, &mut Vec::new(), 100).unwrap_err();
            assert!(
                matches!(&e, ReadError::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof),
                "{cut:?}: {e:?}"
            );
        }
        let mut endless = b"5;".to_vec();
        endless.resize(100_000, b'a');
        let mut r = io::BufReader::with_capacity(7, &endless[..]);
        let e = read_chunked(&mut r, &mut Vec::new(), 100).unwrap_err();
        assert!(
            matches!(e, ReadError::Chunk(ChunkError::LineTooLong)),
            "{e:?}"
        );
    }

    #[test]
    fn decodes_in_any_pieces() {
        let raw =
            b"5;x=y\r\nhello\r\n6\r\n world\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\nGET /next";
        for piece in [1, 2, 3, 7, 1000] {
            let (body, rest) = decode(raw, piece).unwrap();
            assert_eq!(body, b"hello world0123456789", "{piece}");
            assert_eq!(rest, b"GET /next", "{piece}");
        }
        let (_, rest) = decode(b"3\r\nabc\r\n", 2).unwrap();
        assert_eq!(rest, b"<cut>");
    }

    #[test]
    fn sizes_are_hex_digits_only() {
        for bad in [
            &b"+5\r\nhello\r\n0\r\n\r\n"[..],
            b"-5\r\n",
            b"0x5\r\nhello\r\n0\r\n\r\n",
            b"5 5\r\n",
            b"5 \r\nhello\r\n0\r\n\r\n",
            b"5\t\r\nhello\r\n0\r\n\r\n",
            b" 5\r\n",
            b"\r\n",
            b";ext\r\n",
            b"zz\r\n",
            b"5\n",
            b"11111111111111111\r\n",
        ] {
            let e = decode(bad, 1000).unwrap_err();
            assert!(matches!(e, ChunkError::BadSize(_)), "{bad:?}: {e:?}");
        }
        // 16 hex digits fit a u64.
        assert!(decode(b"ffffffffffffffff\r\nab", 1000).is_ok());
        assert!(decode(b"5 ;a=b\r\nhello\r\n0\r\n\r\n", 1000).is_ok());
    }

    #[test]
    fn lines_are_bounded() {
        let mut endless = b"5;".to_vec();
        endless.resize(100_000, b'a');
        for piece in [1, 4096] {
            assert_eq!(decode(&endless, piece), Err(ChunkError::LineTooLong));
        }
        let mut long = b"5;".to_vec();
        long.resize(MAX_CHUNK_LINE + 10, b'a');
        long.extend_from_slice(b"\r\nhello\r\n0\r\n\r\n");
        assert_eq!(decode(&long, 100_000), Err(ChunkError::LineTooLong));
        assert_eq!(
            decode(b"3\r\nabcd\r\n0\r\n\r\n", 1),
            Err(ChunkError::DataTooLong)
        );
        let mut trailer = b"0\r\n".to_vec();
        for _ in 0..1000 {
            trailer.extend_from_slice(b"X-Trailer: 1\r\n");
        }
        assert_eq!(decode(&trailer, 100), Err(ChunkError::BadTrailer));
        let mut one = b"0\r\nX: ".to_vec();
        one.resize(10_000, b'a');
        assert_eq!(decode(&one, 10_000), Err(ChunkError::BadTrailer));
    }
}
