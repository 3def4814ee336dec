//! Reading the kernel's answers to one request (`msg::get`): the messages of a
//! datagram and their attributes, checked against their lengths (an answer is never
//! trusted to be well formed), and the exchange that sends a request and gathers the
//! answer, a single message or the parts of a dump.

use std::io;

use super::sock::Socket;

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// The most answer bytes one request gathers: a dump of a few rules or routes is a
/// few KiB; a namespace with thousands of them is cut here, not read into memory.
const MAX_ANSWER: usize = 1 << 20;

/// The messages of a datagram: type and payload (after the 16-byte header). Stops
/// at the first message whose length does not fit.
pub fn messages(mut data: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let len = ne_u32(data.get(..4)?)? as usize;
        let kind = u16::from_ne_bytes([*data.get(4)?, *data.get(5)?]);
        let body = data.get(16..len)?;
        data = data.get((len + 3) & !3..).unwrap_or(&[]);
        Some((kind, body))
    })
}

/// The attributes of `b`: type (without the nested and byte-order flags) and
/// payload. Stops at the first one whose length does not fit.
pub fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let len = u16::from_ne_bytes([*b.first()?, *b.get(1)?]) as usize;
        let kind = u16::from_ne_bytes([*b.get(2)?, *b.get(3)?]) & 0x3fff;
        let body = b.get(4..len)?;
        b = b.get((len + 3) & !3..).unwrap_or(&[]);
        Some((kind, body))
    })
}

/// The payload of the first attribute of type `kind` in `b` (one function, not a
/// `find` per caller: each closure would be a copy of the loop in the binary).
pub fn attr(b: &[u8], kind: u16) -> Option<&[u8]> {
    attrs(b).find(|a| a.0 == kind).map(|a| a.1)
}

/// The `u32` (host order) attribute `kind` of `b`.
pub fn attr_u32(b: &[u8], kind: u16) -> Option<u32> {
    attr(b, kind).and_then(ne_u32)
}

/// A host-order `u32` (netlink headers, rtnetlink attributes, nf_tables registers).
pub fn ne_u32(b: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(..4)?.try_into().ok()?))
}

/// A big-endian `u64` (nf_tables counters).
pub fn be_u64(b: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(..8)?.try_into().ok()?))
}

/// Sends `request` on a new socket of protocol `proto` and returns the payloads of
/// the answer: one message for a get, every part for a `dump` (up to NLMSG_DONE).
/// An error the kernel answers with is returned as that errno (ENOENT: no such
/// object).
pub fn exchange(proto: libc::c_int, request: &[u8], dump: bool) -> io::Result<Vec<Vec<u8>>> {
    let s = Socket::open_proto(proto)?;
    s.send(request)?;
    let mut out = Vec::new();
    let mut total = 0;
    // Dump parts are at most a page or two; 32 KiB holds the largest the kernel
    // sends (it sizes them to the reader's buffer, at most 32 KiB).
    let mut buf = vec![0u8; 32 << 10];
    loop {
        let n = s.recv(&mut buf)?;
        if n == 0 {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        for (kind, body) in messages(&buf[..n]) {
            match kind {
                NLMSG_ERROR => {
                    let errno = body
                        .get(..4)
                        .map_or(0, |b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                    if errno != 0 {
                        return Err(io::Error::from_raw_os_error(errno.saturating_neg()));
                    }
                    return Ok(out);
                }
                NLMSG_DONE => return Ok(out),
                _ => {
                    total += body.len();
                    if total > MAX_ANSWER {
                        return Err(io::Error::other("the kernel's answer exceeds 1 MiB"));
                    }
                    out.push(body.to_vec());
                    if !dump {
                        return Ok(out);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_input_ends_the_lists() {
        // One attribute of 8 bytes, then one claiming 12 bytes with 6 left.
        let mut b = vec![8, 0, 1, 0, 1, 2, 3, 4, 12, 0, 2, 0, 9, 9];
        b[0] = 8;
        let got: Vec<_> = attrs(&b).collect();
        assert_eq!(got, vec![(1, &[1u8, 2, 3, 4][..])]);
        assert_eq!(attrs(&[3, 0, 1]).count(), 0);
        // A message whose length is below its header, or beyond the datagram.
        let mut m = vec![0u8; 20];
        m[..4].copy_from_slice(&20u32.to_ne_bytes());
        m[4] = 24;
        assert_eq!(
            messages(&m).map(|x| (x.0, x.1.len())).collect::<Vec<_>>(),
            vec![(24, 4)]
        );
        m[..4].copy_from_slice(&21u32.to_ne_bytes());
        assert_eq!(messages(&m).count(), 0);
        m[..4].copy_from_slice(&8u32.to_ne_bytes());
        assert_eq!(messages(&m).count(), 0);
        assert_eq!(ne_u32(&[1, 2]), None);
        assert_eq!(be_u64(&[0, 0, 0, 0, 0, 0, 1, 0]), Some(256));
    }
}
