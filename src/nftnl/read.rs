//! Reading the kernel's answers to one request: the messages of a datagram and
//! their attributes, checked against their lengths (an answer is never trusted to be
//! well formed), and the exchange that sends a request and hands on the answer, a
//! single message or the parts of a dump. Requests ask for no acknowledgement: the
//! answer (or the dump's NLMSG_DONE, or an error) ends each one, so nothing is left
//! on the socket for a batch's acknowledgements sent after it to trip over.
//!
//! Two users: `explain` (`probe`: a set, an element, rules, routes) and the load,
//! which reads each of its sets back (`set_info`, `elements`) on the socket it then
//! sends its batch on, streaming the dump (a set of 100,000 prefixes is 4 MB of it).

use std::io;

use super::msg::{
    Batch, NFTA_DATA_VALUE, NFTA_LIST_ELEM, NFTA_SET_ELEM_FLAGS, NFTA_SET_ELEM_KEY,
    NFTA_SET_ELEM_LIST_ELEMENTS, NFTA_SET_FLAGS, NFTA_SET_KEY_LEN, NFTA_SET_KEY_TYPE,
    NFT_SET_ELEM_INTERVAL_END,
};
use super::sock::Socket;

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// `NFTA_GEN_ID`, the generation in NEWGEN.
pub const NFTA_GEN_ID: u16 = 1;
/// The most answer bytes `exchange` gathers: a dump of a few rules or routes is a
/// few KiB; a namespace with thousands of them is cut here, not read into memory.
const MAX_ANSWER: usize = 1 << 20;
/// `NLM_F_DUMP_INTR`: the object changed while it was dumped.
const DUMP_INTR: u16 = 0x10;
/// `-EAGAIN` as the errno of an NLMSG_ERROR.
const EAGAIN: [u8; 4] = (-libc::EAGAIN).to_ne_bytes();
/// Sequence numbers of the load's requests: apart from its batch's (which start at
/// 1), so that an answer is never taken for an acknowledgement of the batch.
pub const SEQ: u32 = 0x5eed_0000;

/// The messages of a datagram: type and payload (after the 16-byte header). Stops
/// at the first message whose length does not fit.
#[cfg(test)]
pub fn messages(data: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    numbered(data).map(|(kind, _, body)| (kind, body))
}

/// [`messages`] with their sequence numbers; a message marked `DUMP_INTR` reads as
/// an EAGAIN error, so that no one works on a torn dump.
pub(crate) fn numbered(mut data: &[u8]) -> impl Iterator<Item = (u16, u32, &[u8])> {
    std::iter::from_fn(move || {
        let len = ne_u32(data.get(..4)?)? as usize;
        let mut kind = u16::from_ne_bytes([*data.get(4)?, *data.get(5)?]);
        let flags = u16::from_ne_bytes([*data.get(6)?, *data.get(7)?]);
        let seq = ne_u32(data.get(8..12)?)?;
        let mut body = data.get(16..len)?;
        if flags & DUMP_INTR != 0 {
            (kind, body) = (NLMSG_ERROR, &EAGAIN[..]);
        }
        data = data.get((len + 3) & !3..).unwrap_or(&[]);
        Some((kind, seq, body))
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

pub fn be_u32(v: &[u8]) -> u32 {
    v.try_into().map(u32::from_be_bytes).unwrap_or(0)
}

/// Sends `req` on `s` and hands each message of the answer (its payload) to `each`,
/// until it is complete: one message for a get, every part for a `dump` (up to
/// NLMSG_DONE). An error the kernel answers with is returned as that errno (ENOENT:
/// no such object). Answers to other requests (another sequence number) are skipped.
fn ask(
    s: &Socket,
    req: &[u8],
    dump: bool,
    each: &mut dyn FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()> {
    let seq = req.get(8..12).and_then(ne_u32).unwrap_or(0);
    s.send(req)?;
    // The kernel sizes dump parts to the reader's buffer, at most 32 KiB.
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = s.recv(&mut buf)?;
        if n == 0 {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        for (kind, got, body) in numbered(&buf[..n]) {
            if got != seq {
                continue;
            }
            match kind {
                NLMSG_DONE => return Ok(()),
                NLMSG_ERROR => {
                    return match body
                        .get(..4)
                        .map_or(0, |b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
                    {
                        0 => Ok(()),
                        e => Err(io::Error::from_raw_os_error(e.saturating_neg())),
                    }
                }
                _ => each(body)?,
            }
            if !dump {
                return Ok(());
            }
        }
    }
}

/// Sends `request` on a new socket of protocol `proto` and returns the payloads of
/// the answer (see [`ask`]), at most [`MAX_ANSWER`] bytes of them.
pub fn exchange(proto: libc::c_int, request: &[u8], dump: bool) -> io::Result<Vec<Vec<u8>>> {
    let s = Socket::open_proto(proto)?;
    let (mut out, mut total) = (Vec::new(), 0);
    ask(&s, request, dump, &mut |body| {
        total += body.len();
        if total > MAX_ANSWER {
            return Err(io::Error::other("the kernel's answer exceeds 1 MiB"));
        }
        out.push(body.to_vec());
        Ok(())
    })?;
    Ok(out)
}

/// The ruleset's generation (`NFTA_GEN_ID` of NEWGEN): every commit in the
/// namespace, by anyone, moves it on.
pub fn genid(s: &Socket) -> io::Result<u32> {
    let mut b = Batch::request_from(SEQ + 2);
    b.get_gen();
    let mut id = None;
    ask(s, &b.into_bytes(), false, &mut |body| {
        id = attr(body.get(4..).unwrap_or(&[]), NFTA_GEN_ID).map(be_u32);
        Ok(())
    })?;
    id.ok_or_else(|| io::Error::other("no generation in the kernel's answer"))
}

/// An existing set's flags, nft key type and key length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetInfo {
    pub flags: u32,
    pub key_type: u32,
    pub key_len: u32,
}

/// The set `inet <table> <set>`: `None` when it (or the table) does not exist.
pub fn set_info(s: &Socket, table: &str, set: &str) -> io::Result<Option<SetInfo>> {
    let mut b = Batch::request_from(SEQ);
    b.get_set(table, set);
    let mut info = SetInfo {
        flags: 0,
        key_type: 0,
        key_len: 0,
    };
    let mut each = |body: &[u8]| {
        // The nfgenmsg (4 bytes), then the attributes.
        for (kind, v) in attrs(body.get(4..).unwrap_or(&[])) {
            match kind {
                NFTA_SET_FLAGS => info.flags = be_u32(v),
                NFTA_SET_KEY_TYPE => info.key_type = be_u32(v),
                NFTA_SET_KEY_LEN => info.key_len = be_u32(v),
                _ => {}
            }
        }
        Ok(())
    };
    match ask(s, &b.into_bytes(), false, &mut each) {
        Ok(()) => Ok(Some(info)),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Each element of the set, as its key (the low `key_len` bytes) and whether it is
/// an interval end, in the kernel's order; streamed, never gathered.
pub fn elements(
    s: &Socket,
    table: &str,
    set: &str,
    each: &mut dyn FnMut(u128, bool),
) -> io::Result<()> {
    let mut b = Batch::request_from(SEQ + 1);
    b.dump_elements(table, set);
    ask(s, &b.into_bytes(), true, &mut |body| {
        parse_elements(body.get(4..).unwrap_or(&[]), each);
        Ok(())
    })
}

/// The elements of one NEWSETELEM message's attributes.
pub(crate) fn parse_elements(a: &[u8], each: &mut dyn FnMut(u128, bool)) {
    let lists = attrs(a).filter(|x| x.0 == NFTA_SET_ELEM_LIST_ELEMENTS);
    for (_, list) in lists {
        for (_, e) in attrs(list).filter(|x| x.0 == NFTA_LIST_ELEM) {
            let (mut key, mut end) = (None, false);
            for (kind, v) in attrs(e) {
                match kind {
                    NFTA_SET_ELEM_KEY => {
                        key = attrs(v).find(|x| x.0 == NFTA_DATA_VALUE).map(|x| x.1)
                    }
                    NFTA_SET_ELEM_FLAGS => end = be_u32(v) & NFT_SET_ELEM_INTERVAL_END != 0,
                    _ => {}
                }
            }
            if let Some(k) = key.filter(|k| k.len() <= 16) {
                let mut b = [0u8; 16];
                b[16 - k.len()..].copy_from_slice(k);
                each(u128::from_be_bytes(b), end);
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
