//! One client connection: a non-blocking socket and the bytes read from it but not
//! yet used, never more than [`MAX_HEAD`].

use std::io::{self, Read};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::Duration;

use super::http::MAX_HEAD;

/// A client connection.
#[derive(Debug)]
pub struct Conn {
    /// The socket, non-blocking.
    pub stream: TcpStream,
    /// Read and not yet used: the start of a request head, or a body's first bytes
    /// and pipelined requests after a head. Empty, with no allocation, while idle.
    pub buf: Vec<u8>,
    /// How long the connection may make no progress.
    pub idle: Duration,
}

impl Conn {
    /// A connection on `stream`, made non-blocking.
    pub fn new(stream: TcpStream, idle: Duration) -> io::Result<Conn> {
        stream.set_nonblocking(true)?;
        // Every answer goes out in one write; Nagle would only delay the last bit.
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            buf: Vec::new(),
            idle,
        })
    }

    /// Reads what is there into `buf`, up to [`MAX_HEAD`] held: the bytes read
    /// (0 at the end of the stream; `WouldBlock` when nothing is there).
    pub fn read_some(&mut self) -> io::Result<usize> {
        let room = MAX_HEAD.saturating_sub(self.buf.len());
        if room == 0 {
            return Ok(0);
        }
        if self.buf.capacity() < MAX_HEAD {
            self.buf.reserve_exact(MAX_HEAD - self.buf.len());
        }
        let start = self.buf.len();
        self.buf.resize(start + room, 0);
        let got = loop {
            match self.stream.read(&mut self.buf[start..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        self.buf.truncate(start + *got.as_ref().unwrap_or(&0));
        got
    }

    /// Drops what has been used from the front of `buf`, and its allocation once
    /// nothing is left (an idle connection holds no buffer).
    pub fn consume(&mut self, n: usize) {
        if n >= self.buf.len() {
            self.buf = Vec::new();
        } else {
            self.buf.drain(..n);
        }
    }

    /// Writes as much of `a` then `b` as the socket takes now, in one `sendmsg`
    /// (`MSG_NOSIGNAL`: a client gone is an error, never a `SIGPIPE`).
    pub fn write_parts(&mut self, a: &[u8], b: &[u8]) -> io::Result<usize> {
        let iov = [
            libc::iovec {
                iov_base: a.as_ptr() as *mut libc::c_void,
                iov_len: a.len(),
            },
            libc::iovec {
                iov_base: b.as_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            },
        ];
        // SAFETY: zeroed is a valid empty msghdr; the fields set point at `iov`.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov.as_ptr() as *mut libc::iovec;
        msg.msg_iovlen = 2;
        loop {
            // SAFETY: both iovecs point into live slices of the given lengths, and
            // sendmsg only reads them.
            let n = unsafe { libc::sendmsg(self.stream.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}
