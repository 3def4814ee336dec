//! The encoder's bytes, checked without a socket. The real kernel's view is in
//! `tests/it/netlink.rs`.

use super::msg::{Batch, Step};
use super::parse_acks;

use super::decode::{attrs, elements, messages};

fn one_family(ranges: &[(u128, u128)], key_len: usize) -> (Vec<u8>, Vec<(u32, Step)>) {
    let mut b = Batch::new(16, 1);
    b.elements("t", "s_v4", key_len, 0, &mut ranges.iter().copied());
    b.finish()
}

#[test]
fn newsetelem_bytes_of_one_prefix() {
    // 10.0.0.0/24: the 0 end nft also sends, the start, the end at 10.0.1.0.
    let (bytes, acks) = one_family(&[(0x0a00_0000, 0x0a00_00ff)], 4);
    let ne = |v: u32| v.to_ne_bytes();
    let h = |len: u16, kind: u16| {
        let mut v = len.to_ne_bytes().to_vec();
        v.extend_from_slice(&kind.to_ne_bytes());
        v
    };
    let mut want = Vec::new();
    // BATCH_BEGIN: len 20, type 0x10, REQUEST, seq 1, res_id 10 (big-endian).
    want.extend_from_slice(&ne(20));
    want.extend_from_slice(&h(0x10, 1)[..4]);
    want.extend_from_slice(&ne(1));
    want.extend_from_slice(&ne(0));
    want.extend_from_slice(&[0, 0, 0, 10]);
    let body: Vec<u8> = [
        h(6, 1),
        b"t\0\0\0".to_vec(),
        h(9, 2),
        b"s_v4\0\0\0\0".to_vec(),
        h(4 + 24 + 16 + 24, 3 | 0x8000),
        // 0.0.0.0, end
        h(24, 1 | 0x8000),
        h(8, 3),
        vec![0, 0, 0, 1],
        h(12, 1 | 0x8000),
        h(8, 1),
        vec![0, 0, 0, 0],
        // 10.0.0.0, start
        h(16, 1 | 0x8000),
        h(12, 1 | 0x8000),
        h(8, 1),
        vec![10, 0, 0, 0],
        // 10.0.1.0, end
        h(24, 1 | 0x8000),
        h(8, 3),
        vec![0, 0, 0, 1],
        h(12, 1 | 0x8000),
        h(8, 1),
        vec![10, 0, 1, 0],
    ]
    .concat();
    want.extend_from_slice(&ne(20 + body.len() as u32));
    want.extend_from_slice(&h(0x0a0c, 0x405)[..4]); // NEWSETELEM, REQUEST|ACK|CREATE
    want.extend_from_slice(&ne(2));
    want.extend_from_slice(&ne(0));
    want.extend_from_slice(&[1, 0, 0, 0]); // NFPROTO_INET
    want.extend_from_slice(&body);
    assert_eq!(&bytes[..want.len()], &want[..]);
    let end = &bytes[want.len()..];
    assert_eq!(messages(end)[0].kind, 0x11);
    assert_eq!(end.len(), 20);
    assert_eq!(acks, vec![(2, Step::Elements(0))]);
}

#[test]
fn strings_are_nul_terminated_and_padded() {
    for name in ["a", "ab", "abc", "abcd", "abcde"] {
        let mut b = Batch::new(0, 7);
        b.table(name);
        let (bytes, acks) = b.finish();
        let m = &messages(&bytes)[1];
        assert_eq!(m.kind, 0x0a00);
        assert_eq!(m.flags, 0x405);
        assert_eq!(m.seq, 8);
        assert_eq!(acks, vec![(8, Step::Table)]);
        let a = attrs(m.attrs);
        assert_eq!(a.len(), 1, "no flags: an existing table keeps its own");
        let mut z = name.as_bytes().to_vec();
        z.push(0);
        assert_eq!(a[0], (1, &z[..]));
        assert_eq!(m.attrs.len(), (4 + z.len() + 3) & !3);
    }
}

#[test]
fn set_and_flush_messages() {
    let mut b = Batch::new(0, 1);
    b.set("t", "s_v6", (super::msg::TYPE_IP6ADDR, 16), 1, false);
    b.flush("t", "s_v6", 1);
    let (bytes, acks) = b.finish();
    let m = messages(&bytes);
    assert_eq!(m[1].kind, 0x0a09);
    assert_eq!(
        m[1].flags & 0x200,
        0,
        "no NLM_F_EXCL: an existing set is kept"
    );
    let a = attrs(m[1].attrs);
    assert_eq!(a[2], (3, &[0, 0, 0, 4][..])); // NFT_SET_INTERVAL
    assert_eq!(a[3], (4, &[0, 0, 0, 8][..])); // ipv6_addr
    assert_eq!(a[4], (5, &[0, 0, 0, 16][..]));
    assert_eq!(m[2].kind, 0x0a0e);
    assert_eq!(m[2].flags, 0x5, "flush: DELSETELEM without elements");
    assert_eq!(attrs(m[2].attrs).len(), 2);
    assert_eq!(acks, vec![(2, Step::Set(1)), (3, Step::Flush(1))]);
}

#[test]
fn edges_of_the_address_space() {
    // 0.0.0.0/0: one start, no end (it reaches the top), no leading 0 end.
    let (bytes, _) = one_family(&[(0, 0xffff_ffff)], 4);
    assert_eq!(elements(&bytes), vec![(vec![0, 0, 0, 0], false)]);
    // 255.255.255.255/32: the leading 0 end and the start only.
    let (bytes, _) = one_family(&[(0xffff_ffff, 0xffff_ffff)], 4);
    assert_eq!(
        elements(&bytes),
        vec![(vec![0; 4], true), (vec![255; 4], false)]
    );
    // Adjacent prefixes: an end and a start on the same key, as nft sends them.
    let (bytes, _) = one_family(&[(0, 0), (1, 1)], 4);
    assert_eq!(
        elements(&bytes),
        vec![
            (vec![0, 0, 0, 0], false),
            (vec![0, 0, 0, 1], true),
            (vec![0, 0, 0, 1], false),
            (vec![0, 0, 0, 2], true),
        ]
    );
    // ::/0 in 16-byte keys.
    let (bytes, _) = one_family(&[(0, u128::MAX)], 16);
    assert_eq!(elements(&bytes), vec![(vec![0; 16], false)]);
    // Nothing: no NEWSETELEM at all.
    let (bytes, acks) = one_family(&[], 4);
    assert_eq!(messages(&bytes).len(), 2);
    assert!(acks.is_empty());
}

#[test]
fn elements_split_over_messages() {
    let ranges: Vec<(u128, u128)> = (0..5000u128).map(|i| (i * 4 + 4, i * 4 + 5)).collect();
    for limit in [super::msg::MAX_NEST, 1000] {
        let mut b = Batch::new(ranges.len() * 2 + 1, 1);
        b.nest_limit = limit;
        let n = b.elements("t", "s", 4, 0, &mut ranges.iter().copied());
        assert_eq!(n, 10_001);
        let (bytes, acks) = b.finish();
        let m = messages(&bytes);
        let sets: Vec<_> = m.iter().filter(|m| m.kind == 0x0a0c).collect();
        assert!(sets.len() > 1);
        assert_eq!(acks.len(), sets.len());
        for s in &sets {
            let (_, elems) = attrs(s.attrs).into_iter().find(|a| a.0 == 3).unwrap();
            assert!(elems.len() + 4 <= limit, "{} > {limit}", elems.len() + 4);
        }
        let got = elements(&bytes);
        assert_eq!(got.len(), n);
        assert_eq!(got[1], (vec![0, 0, 0, 4], false));
        assert_eq!(got[n - 1], (vec![0, 0, 0x4e, 0x22], true));
        // Sequence numbers run on through the batch end.
        let seqs: Vec<u32> = m.iter().map(|m| m.seq).collect();
        assert_eq!(seqs, (1..=m.len() as u32).collect::<Vec<_>>());
    }
}

#[test]
fn acknowledgements() {
    let ack = |seq: u32, err: i32, pad: usize| {
        let mut v = Vec::new();
        v.extend_from_slice(&(36u32 + pad as u32).to_ne_bytes());
        v.extend_from_slice(&2u16.to_ne_bytes());
        v.extend_from_slice(&0x100u16.to_ne_bytes());
        v.extend_from_slice(&seq.to_ne_bytes());
        v.extend_from_slice(&0u32.to_ne_bytes());
        v.extend_from_slice(&err.to_ne_bytes());
        v.extend_from_slice(&[0; 16]);
        v.extend_from_slice(&vec![0; pad]);
        v
    };
    let mut d = ack(3, 0, 0);
    d.extend(ack(4, -17, 8));
    assert_eq!(parse_acks(&d), vec![(3, 0), (4, 17)]);
    // A datagram truncated by a short buffer still gives its error.
    let d = ack(5, -1, 100);
    assert_eq!(parse_acks(&d[..40]), vec![(5, 1)]);
    assert!(parse_acks(&[1, 2, 3]).is_empty());
}

#[test]
fn timeouts_deletes_and_reading_back() {
    use super::msg::Elems;
    let mut b = Batch::new(8, 1);
    b.set("t", "s_v4", (super::msg::TYPE_IPADDR, 4), 0, true);
    let op = Elems {
        delete: false,
        timeout_ms: Some(604_800_000),
    };
    let ranges = [(0x0a00_0000u128, 0x0a00_00ff), (0x0b00_0000, 0x0b00_00ff)];
    assert_eq!(
        b.elements_as("t", "s_v4", (4, 0), op, &mut ranges.iter().copied()),
        5
    );
    let del = Elems {
        delete: true,
        timeout_ms: Some(1),
    };
    let gone = [(0x0c00_0000u128, false), (0x0c00_0100, true)];
    assert_eq!(
        b.raw_elements("t", "s_v4", (4, 0), del, &mut gone.into_iter()),
        2
    );
    let (bytes, acks) = b.finish();
    let m = messages(&bytes);
    // The set: interval and timeout flags.
    assert_eq!(attrs(m[1].attrs)[2], (3, &[0, 0, 0, 0x14][..]));
    assert_eq!((m[2].kind, m[3].kind), (0x0a0c, 0x0a0e));
    assert_eq!(acks[1..], [(3, Step::Elements(0)), (4, Step::Delete(0))]);
    // Timeout and expiration (ms, big-endian) on starts only; none on a delete.
    let elems = |m: &super::decode::Msg| {
        let (_, list) = attrs(m.attrs).into_iter().find(|a| a.0 == 3).unwrap();
        attrs(list)
            .into_iter()
            .map(|(_, e)| attrs(e).into_iter().map(|a| a.0).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        elems(&m[2]),
        vec![
            vec![3, 1],
            vec![4, 5, 1],
            vec![3, 1],
            vec![4, 5, 1],
            vec![3, 1]
        ]
    );
    assert_eq!(elems(&m[3]), vec![vec![1], vec![3, 1]]);
    // A dump's answers are NEWSETELEM messages: what we encode reads back.
    let mut got = Vec::new();
    for (kind, body) in super::read::messages(&bytes) {
        if kind == 0x0a0c {
            super::read::parse_elements(&body[4..], &mut |k, end| got.push((k, end)));
        }
    }
    assert_eq!(
        got,
        vec![
            (0, true),
            (0x0a00_0000, false),
            (0x0a00_0100, true),
            (0x0b00_0000, false),
            (0x0b00_0100, true)
        ]
    );
    // The dump request: GETSETELEM, REQUEST | DUMP, no acknowledgement asked.
    let mut b = Batch::request_from(9);
    b.dump_elements("t", "s_v4");
    let req = b.into_bytes();
    let m = messages(&req);
    assert_eq!(
        (m.len(), m[0].kind, m[0].flags, m[0].seq),
        (1, 0x0a0d, 0x301, 9)
    );
    assert_eq!(
        attrs(m[0].attrs),
        vec![(1, &b"t\0"[..]), (2, &b"s_v4\0"[..])]
    );
    // Truncated input ends the reading instead of panicking.
    for cut in 0..req.len() {
        let _ = super::read::messages(&req[..cut]).count();
        super::read::parse_elements(&req[..cut], &mut |_, _| {});
    }
}

#[test]
fn a_mark_rule_reads_back_as_the_mark_it_sets() {
    use super::msg::{read_mark_rule, MarkRule, MarkSet};
    for (value, mask) in [(0x100, 0xff00), (0x42, u32::MAX)] {
        let mut b = Batch::new(0, 1);
        let rule = MarkRule {
            set: "vpn_v4",
            set_id: 1,
            v6: false,
        };
        b.mark_rule("t", "vpn_mark", &rule, value, mask, 0);
        let (bytes, _) = b.finish();
        let m = &messages(&bytes)[1];
        assert_eq!(m.kind, 0x0a06);
        // The kernel dumps a counter with its packets; ours is sent without them.
        let want = MarkSet {
            value,
            mask,
            packets: None,
        };
        assert_eq!(read_mark_rule(m.attrs), Some(want));
    }
    // A rule without expressions sets no mark; garbage reads as nothing.
    assert_eq!(read_mark_rule(&[]), None);
    assert_eq!(read_mark_rule(&[8, 0, 4, 0x80, 1, 2]), None);
}

#[test]
fn a_get_of_an_element_holds_the_key() {
    let mut b = Batch::request();
    b.get_element("t", "s_v4", &[10, 0, 0, 1]);
    let bytes = b.into_bytes();
    let m = &messages(&bytes)[0];
    assert_eq!((m.kind, m.flags), (0x0a0d, 1));
    let list = attrs(m.attrs);
    assert_eq!(list[0], (1, &b"t\0"[..]));
    let elems = attrs(list[2].1);
    let key = attrs(attrs(elems[0].1)[0].1)[0].1;
    assert_eq!(key, [10, 0, 0, 1]);
}
