//! Reading back over netlink, on the socket the load then sends its batch on: a
//! set's flags and key (GETSET) and its elements (a GETSETELEM dump), so that a load
//! sends only the difference. Requests ask for no acknowledgement: the answer (or
//! the dump's NLMSG_DONE, or an error) ends each one, so nothing is left on the
//! socket for the batch's acknowledgements to trip over.

use std::io;

use super::msg::{
    Batch, NFTA_DATA_VALUE, NFTA_LIST_ELEM, NFTA_SET_ELEM_FLAGS, NFTA_SET_ELEM_KEY,
    NFTA_SET_ELEM_LIST_ELEMENTS, NFTA_SET_FLAGS, NFTA_SET_KEY_LEN, NFTA_SET_KEY_TYPE,
    NFT_MSG_GETSET, NFT_MSG_GETSETELEM, NFT_SET_ELEM_INTERVAL_END,
};
use super::sock::Socket;

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// Sequence numbers of requests: apart from the batch's (which start at 1), so that
/// an answer to a request is never taken for an acknowledgement of the batch.
pub const SEQ: u32 = 0x5eed_0000;
/// A dump datagram is at most 32 KiB (the kernel's cap); room for more.
const BUF: usize = 64 * 1024;

/// An existing set's flags, nft key type and key length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetInfo {
    pub flags: u32,
    pub key_type: u32,
    pub key_len: u32,
}

/// `NLM_F_DUMP_INTR`: the set changed while it was dumped.
const DUMP_INTR: u16 = 0x10;

/// The netlink messages of a datagram: type, sequence number and what follows the
/// 16-byte header (`NLMSG_ERROR` for a message marked `DUMP_INTR`). A truncated
/// message ends the list.
pub(crate) fn messages(mut data: &[u8]) -> impl Iterator<Item = (u16, u32, &[u8])> {
    std::iter::from_fn(move || {
        let h = data.get(..16)?;
        let len = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]) as usize;
        let mut kind = u16::from_ne_bytes([h[4], h[5]]);
        let seq = u32::from_ne_bytes([h[8], h[9], h[10], h[11]]);
        let mut body = data.get(16..len.max(16))?;
        if u16::from_ne_bytes([h[6], h[7]]) & DUMP_INTR != 0 {
            // Read as an error: the load fails (and is retried) rather than send a
            // difference from a torn read.
            (kind, body) = (NLMSG_ERROR, &EAGAIN[..]);
        }
        data = data.get((len + 3) & !3..).unwrap_or(&[]);
        Some((kind, seq, body))
    })
}

/// `-EAGAIN` as the errno of an NLMSG_ERROR.
const EAGAIN: [u8; 4] = (-libc::EAGAIN).to_ne_bytes();

/// The attributes of `b`: type (without the nested/byte-order flags) and payload.
pub(crate) fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let h = b.get(..4)?;
        let len = u16::from_ne_bytes([h[0], h[1]]) as usize;
        let payload = b.get(4..len.max(4))?;
        let kind = u16::from_ne_bytes([h[2], h[3]]) & 0x3fff;
        b = b.get((len + 3) & !3..).unwrap_or(&[]);
        Some((kind, payload))
    })
}

fn be_u32(v: &[u8]) -> u32 {
    v.try_into().map(u32::from_be_bytes).unwrap_or(0)
}

/// Sends request `req` (numbered `seq`) and hands the attributes of each nf_tables
/// message of the answer to `each`, until it is complete.
fn ask(s: &Socket, req: &[u8], seq: u32, each: &mut dyn FnMut(&[u8])) -> io::Result<()> {
    let dump = u16::from_ne_bytes([req[6], req[7]]) & 0x300 != 0;
    s.send(req)?;
    let mut buf = vec![0u8; BUF];
    loop {
        let n = s.recv(&mut buf)?;
        for (kind, got, body) in messages(&buf[..n]) {
            if got != seq {
                continue;
            }
            match kind {
                NLMSG_DONE => return Ok(()),
                NLMSG_ERROR => {
                    let e = body
                        .get(..4)
                        .map_or(0, |e| i32::from_ne_bytes([e[0], e[1], e[2], e[3]]));
                    return match e {
                        0 => Ok(()),
                        e => Err(io::Error::from_raw_os_error(e.saturating_neg())),
                    };
                }
                // The nfgenmsg (4 bytes), then the attributes.
                _ => each(body.get(4..).unwrap_or(&[])),
            }
            if !dump {
                return Ok(());
            }
        }
    }
}

/// The set `inet <table> <set>`: `None` when it (or the table) does not exist.
pub fn set_info(s: &Socket, table: &str, set: &str) -> io::Result<Option<SetInfo>> {
    let req = Batch::request(NFT_MSG_GETSET, false, table, set, SEQ);
    let mut info = SetInfo {
        flags: 0,
        key_type: 0,
        key_len: 0,
    };
    let mut each = |a: &[u8]| {
        for (kind, v) in attrs(a) {
            match kind {
                NFTA_SET_FLAGS => info.flags = be_u32(v),
                NFTA_SET_KEY_TYPE => info.key_type = be_u32(v),
                NFTA_SET_KEY_LEN => info.key_len = be_u32(v),
                _ => {}
            }
        }
    };
    match ask(s, &req, SEQ, &mut each) {
        Ok(()) => Ok(Some(info)),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Each element of the set, as its key (the low `key_len` bytes) and whether it is
/// an interval end, in the kernel's order.
pub fn elements(
    s: &Socket,
    table: &str,
    set: &str,
    each: &mut dyn FnMut(u128, bool),
) -> io::Result<()> {
    let req = Batch::request(NFT_MSG_GETSETELEM, true, table, set, SEQ + 1);
    ask(s, &req, SEQ + 1, &mut |a| parse_elements(a, each))
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
