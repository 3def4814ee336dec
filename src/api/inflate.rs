//! A small gzip/DEFLATE decoder (RFC 1952, RFC 1951), for the one client in a
//! hundred that asks for the web page without gzip: the binary holds the page only
//! compressed (6 KB instead of 6 + 17), and this costs far less code than the 17 KB
//! it saves. It reads our own build-time `.gz`; malformed input gives `None`, never a
//! panic, and the output is bounded.

/// Largest output produced: far above the page, far below anything that matters.
const MAX_OUT: usize = 1 << 20;

/// Reads bits least significant first, as DEFLATE packs them.
struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
    buf: u32,
    count: u32,
}

impl Bits<'_> {
    fn take(&mut self, n: u32) -> Option<u32> {
        while self.count < n {
            let b = *self.data.get(self.pos)?;
            self.pos += 1;
            self.buf |= u32::from(b) << self.count;
            self.count += 8;
        }
        let v = self.buf & ((1u32 << n) - 1);
        self.buf = self.buf.checked_shr(n).unwrap_or(0);
        self.count -= n;
        Some(v)
    }
}

/// A canonical Huffman code: how many codes of each length, and the symbols in
/// code order.
struct Huffman {
    counts: [u16; 16],
    symbols: Vec<u16>,
}

impl Huffman {
    fn new(lengths: &[u8]) -> Huffman {
        let mut counts = [0u16; 16];
        for &l in lengths {
            counts[usize::from(l & 15)] += 1;
        }
        counts[0] = 0;
        let mut offsets = [0u16; 16];
        for len in 1..15 {
            offsets[len + 1] = offsets[len] + counts[len];
        }
        let mut symbols = vec![0u16; lengths.len()];
        for (sym, &l) in lengths.iter().enumerate() {
            if l != 0 {
                let o = &mut offsets[usize::from(l & 15)];
                if let Some(slot) = symbols.get_mut(usize::from(*o)) {
                    *slot = sym as u16;
                }
                *o += 1;
            }
        }
        Huffman { counts, symbols }
    }

    fn decode(&self, bits: &mut Bits<'_>) -> Option<u16> {
        let (mut code, mut first, mut index) = (0i32, 0i32, 0i32);
        for len in 1..16 {
            code |= bits.take(1)? as i32;
            let count = i32::from(self.counts[len]);
            if code - first < count {
                return self.symbols.get((index + code - first) as usize).copied();
            }
            index += count;
            first = (first + count) << 1;
            code <<= 1;
        }
        None
    }
}

const LEN_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEN_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];

/// Decodes one block's symbols with `lit` and `dist` until its end.
fn codes(bits: &mut Bits<'_>, out: &mut Vec<u8>, lit: &Huffman, dist: &Huffman) -> Option<()> {
    loop {
        let sym = usize::from(lit.decode(bits)?);
        if sym < 256 {
            out.push(sym as u8);
        } else if sym == 256 {
            return Some(());
        } else {
            let i = sym - 257;
            let len = usize::from(*LEN_BASE.get(i)?) + bits.take(u32::from(LEN_EXTRA[i]))? as usize;
            let d = usize::from(dist.decode(bits)?);
            let back =
                usize::from(*DIST_BASE.get(d)?) + bits.take(u32::from(DIST_EXTRA[d]))? as usize;
            let start = out.len().checked_sub(back)?;
            if out.len() + len > MAX_OUT {
                return None;
            }
            for k in 0..len {
                out.push(out[start + k]);
            }
        }
    }
}

/// The code lengths of a dynamic block's two codes.
fn dynamic(bits: &mut Bits<'_>) -> Option<(Huffman, Huffman)> {
    const ORDER: [usize; 19] = [
        16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
    ];
    let nlen = bits.take(5)? as usize + 257;
    let ndist = bits.take(5)? as usize + 1;
    let ncode = bits.take(4)? as usize + 4;
    let mut lengths = [0u8; 320];
    for &o in &ORDER[..ncode] {
        lengths[o] = bits.take(3)? as u8;
    }
    let lencode = Huffman::new(&lengths[..19]);
    let mut n = 0;
    while n < nlen + ndist {
        let sym = lencode.decode(bits)?;
        let (value, repeat) = match sym {
            0..=15 => (sym as u8, 1),
            16 => (*lengths.get(n.checked_sub(1)?)?, 3 + bits.take(2)?),
            17 => (0, 3 + bits.take(3)?),
            _ => (0, 11 + bits.take(7)?),
        };
        for _ in 0..repeat {
            *lengths.get_mut(n)? = value;
            n += 1;
        }
    }
    Some((
        Huffman::new(&lengths[..nlen]),
        Huffman::new(&lengths[nlen..nlen + ndist]),
    ))
}

/// The content of a gzip member (without name, comment or extra fields, as
/// `gzip -n` writes it); `None` when it is malformed.
pub fn gunzip(gz: &[u8]) -> Option<Vec<u8>> {
    if gz.get(..4)? != b"\x1f\x8b\x08\x00" {
        return None;
    }
    let mut bits = Bits {
        data: gz.get(10..)?,
        pos: 0,
        buf: 0,
        count: 0,
    };
    let mut out = Vec::new();
    loop {
        let last = bits.take(1)?;
        match bits.take(2)? {
            0 => {
                // Stored: whole bytes from the next byte boundary.
                (bits.buf, bits.count) = (0, 0);
                let d = bits.data;
                let len = usize::from(u16::from_le_bytes([
                    *d.get(bits.pos)?,
                    *d.get(bits.pos + 1)?,
                ]));
                let start = bits.pos + 4;
                out.extend_from_slice(d.get(start..start + len)?);
                bits.pos = start + len;
            }
            1 => {
                let mut l = [8u8; 288];
                l[144..256].fill(9);
                l[256..280].fill(7);
                codes(
                    &mut bits,
                    &mut out,
                    &Huffman::new(&l),
                    &Huffman::new(&[5; 30]),
                )?;
            }
            2 => {
                let (lit, dist) = dynamic(&mut bits)?;
                codes(&mut bits, &mut out, &lit, &dist)?;
            }
            _ => return None,
        }
        if out.len() > MAX_OUT {
            return None;
        }
        if last == 1 {
            break;
        }
    }
    // The trailer's length (mod 2^32) must match: a cut or mixed-up file fails.
    let size = gz.get(gz.len().checked_sub(4)?..)?;
    (u32::from_le_bytes(size.try_into().ok()?) == out.len() as u32).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::gunzip;

    fn gz(deflate: &[u8], content: &[u8]) -> Vec<u8> {
        let mut v = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03".to_vec();
        v.extend_from_slice(deflate);
        v.extend_from_slice(&[0; 4]);
        v.extend_from_slice(&(content.len() as u32).to_le_bytes());
        v
    }

    #[test]
    fn stored_fixed_and_dynamic_blocks() {
        // Python: zlib.compressobj(0, wbits=-15) and compressobj(9, wbits=-15) of
        // b"hello hello hello".
        let text = b"hello hello hello";
        let stored = [
            0x01, 0x11, 0x00, 0xee, 0xff, b'h', b'e', b'l', b'l', b'o', b' ', b'h', b'e', b'l',
            b'l', b'o', b' ', b'h', b'e', b'l', b'l', b'o',
        ];
        assert_eq!(gunzip(&gz(&stored, text)).unwrap(), text);
        let fixed = [0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x57, 0xc8, 0x40, 0x90, 0x00];
        assert_eq!(gunzip(&gz(&fixed, text)).unwrap(), text);
        // The page itself is dynamic Huffman (see routes/page.rs for the match).
        assert!(gunzip(&gz(&fixed, b"other length")).is_none());
        assert!(gunzip(&gz(&fixed[..5], text)).is_none());
        assert!(gunzip(b"\x1f\x8b").is_none());
        assert!(gunzip(&[]).is_none());
        // A fixed block whose first code is a back reference (length 3, distance 1)
        // to before the start.
        assert!(gunzip(&gz(&[0x03, 0x02, 0x00], b"abc")).is_none());
    }
}
