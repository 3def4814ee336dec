//! A request whose head has arrived and whose body the poll thread is reading:
//! bounded by [`MAX_BODY`], de-chunked with the shared decoder (`crate::http1`).

use std::time::Instant;

use super::conn::Conn;
use super::http::{Head, RequestError};
use super::server::BODY_BUDGET;
use super::MAX_BODY;
use crate::http1::Chunked;

/// What a client that sent `Expect: 100-continue` waits for before its body.
pub(super) const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// A request whose body is arriving.
pub(super) struct Incoming {
    pub(super) head: Head,
    /// The body so far, de-chunked: at most [`MAX_BODY`] bytes.
    pub(super) body: Vec<u8>,
    /// For a chunked body, its decoder; else the bytes still to come.
    pub(super) chunked: Option<Chunked>,
    pub(super) left: u64,
    /// Bytes of [`CONTINUE`] still to write before the client sends the body.
    pub(super) owe: usize,
    /// The whole body must be there by then (408).
    pub(super) deadline: Instant,
    /// Where its room is reserved (`None` while it waits): only then is the body
    /// read.
    pub(super) admitted: Option<Room>,
}

/// A body declared at most this long is small: a source added or removed.
pub(super) const SMALL_BODY: usize = 4096;

/// Room of small bodies' own (16 of them), so that large slow bodies holding the
/// whole [`BODY_BUDGET`] do not make a `POST /asns` wait for its deadline.
pub(super) const SMALL_RESERVE: usize = 64 * 1024;

/// Where a body's room comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Room {
    /// [`BODY_BUDGET`].
    Shared,
    /// [`SMALL_RESERVE`].
    Small,
}

/// Where the body `me` gets room now, given the bodies of the other connections
/// (being read, or waiting): `None` while it must wait. A small body takes room from
/// its reserve first, then from the shared budget; a body never overtakes one of its
/// size that has waited longer (arrival order: the deadline is arrival plus
/// `BODY_TIMEOUT`).
pub(super) fn room_for(me: &Incoming, others: &[&Incoming]) -> Option<Room> {
    let used = |r: Room| -> usize {
        let of = others.iter().filter(|o| o.admitted == Some(r));
        of.map(|o| o.room()).sum()
    };
    let before_me = others
        .iter()
        .any(|o| o.admitted.is_none() && o.small() == me.small() && o.deadline < me.deadline);
    if before_me {
        return None;
    }
    if me.small() && used(Room::Small) + me.room() <= SMALL_RESERVE {
        return Some(Room::Small);
    }
    (used(Room::Shared) + me.room() <= BODY_BUDGET).then_some(Room::Shared)
}

impl Incoming {
    /// The room the body may take: its declared length, or the most a chunked body
    /// may grow to.
    pub(super) fn room(&self) -> usize {
        match self.chunked {
            Some(_) => MAX_BODY as usize,
            None => self.left as usize + self.body.len(),
        }
    }

    fn small(&self) -> bool {
        self.chunked.is_none() && self.room() <= SMALL_BODY
    }

    /// Takes what `buf` holds of the body: true once it is complete.
    pub(super) fn take(&mut self, conn: &mut Conn) -> Result<bool, RequestError> {
        let Some(d) = &mut self.chunked else {
            let n = (self.left.min(conn.buf.len() as u64)) as usize;
            self.body.extend_from_slice(&conn.buf[..n]);
            conn.consume(n);
            self.left -= n as u64;
            return Ok(self.left == 0);
        };
        while !d.done() {
            let step = d.step(&conn.buf)?;
            // A chunk announced too big is refused at its size line (413 now, not
            // a 408 after waiting for data that would be refused anyway).
            if (self.body.len() + step.data.len()) as u64 + d.announced() > MAX_BODY {
                return Err(RequestError::BodyTooLarge);
            }
            self.body.extend_from_slice(step.data);
            let used = step.used;
            if used == 0 {
                return Ok(false);
            }
            conn.consume(used);
        }
        Ok(true)
    }
}
