//! A decoder of our own batches, for the unit tests and the fuzz target (never in a
//! normal build): it reads back what `msg` encoded, so the two can be checked against
//! each other. It trusts its input as the encoder's and panics on anything else.

/// One message of a batch: type, flags, sequence number and its attributes' bytes.
#[cfg_attr(fuzzing, allow(dead_code))]
pub(crate) struct Msg<'a> {
    pub(crate) kind: u16,
    pub(crate) flags: u16,
    pub(crate) seq: u32,
    pub(crate) attrs: &'a [u8],
}

pub(crate) fn messages(mut b: &[u8]) -> Vec<Msg<'_>> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let len = u32::from_ne_bytes(b[..4].try_into().unwrap()) as usize;
        assert_eq!(len % 4, 0, "messages stay aligned");
        out.push(Msg {
            kind: u16::from_ne_bytes([b[4], b[5]]),
            flags: u16::from_ne_bytes([b[6], b[7]]),
            seq: u32::from_ne_bytes(b[8..12].try_into().unwrap()),
            attrs: &b[20..len],
        });
        b = &b[len..];
    }
    out
}

/// Attributes of `b` as (type without flags, payload).
pub(crate) fn attrs(mut b: &[u8]) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let len = u16::from_ne_bytes([b[0], b[1]]) as usize;
        let kind = u16::from_ne_bytes([b[2], b[3]]) & 0x3fff;
        out.push((kind, &b[4..len]));
        b = &b[((len + 3) & !3).min(b.len())..];
    }
    out
}

/// The elements of the NEWSETELEM messages: key bytes and whether it is an end.
pub(crate) fn elements(bytes: &[u8]) -> Vec<(Vec<u8>, bool)> {
    let mut out = Vec::new();
    for m in messages(bytes).iter().filter(|m| m.kind == 0x0a0c) {
        let list = attrs(m.attrs);
        let (_, elems) = list.iter().find(|a| a.0 == 3).unwrap();
        for (_, e) in attrs(elems) {
            let mut key = Vec::new();
            let mut end = false;
            for (kind, v) in attrs(e) {
                match kind {
                    1 => key = attrs(v)[0].1.to_vec(),
                    3 => end = v == [0, 0, 0, 1],
                    _ => panic!("unexpected element attribute {kind}"),
                }
            }
            out.push((key, end));
        }
    }
    out
}
