//! gzip bodies for listings (feature `gzip`): deflate by `miniz_oxide`, the gzip
//! frame (RFC 1952) and its CRC-32 here. A firewall pulling a list of 100,000
//! prefixes every few minutes moves a fifth of the bytes.

/// Level 6: zlib's default; higher levels gained little on lists of prefixes and
/// took longer.
const LEVEL: u8 = 6;

/// Stack of the thread that deflates: miniz_oxide's compressor state (about 300 KB)
/// is built on the stack before it is boxed in a debug build, beyond the handlers'
/// small stacks (`server::STACK_SIZE`).
const DEFLATE_STACK: usize = 2 << 20;

/// `body` as a gzip member: no name, no time (the same body always gives the same
/// bytes, so that its ETag is stable). `None` when no thread could be started.
pub fn gzip(body: &[u8]) -> Option<Vec<u8>> {
    let deflated = std::thread::scope(|s| {
        let t = std::thread::Builder::new()
            .name("api-gzip".into())
            .stack_size(DEFLATE_STACK);
        let h = t.spawn_scoped(s, || miniz_oxide::deflate::compress_to_vec(body, LEVEL));
        h.ok()?.join().ok()
    })?;
    let mut out = Vec::with_capacity(deflated.len() + 18);
    // Magic, deflate, no flags, no time, no extra flags, OS unknown.
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]);
    out.extend_from_slice(&deflated);
    drop(deflated);
    out.extend_from_slice(&crc32(body).to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    Some(out)
}

/// CRC-32 (IEEE), a byte at a time through a table made once per call (1 KiB):
/// bodies are megabytes, and a bit at a time would take longer than the deflate.
fn crc32(data: &[u8]) -> u32 {
    let mut table = [0u32; 256];
    for (n, slot) in table.iter_mut().enumerate() {
        let mut c = n as u32;
        for _ in 0..8 {
            c = (c >> 1) ^ (0xEDB8_8320 & (c & 1).wrapping_neg());
        }
        *slot = c;
    }
    !data.iter().fold(!0u32, |crc, b| {
        table[((crc ^ u32::from(*b)) & 0xff) as usize] ^ (crc >> 8)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_gunzip_reads_it_back() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        let body: Vec<u8> = (0..20_000u32)
            .flat_map(|i| format!("10.{}.{}.0/24\n", i / 256, i % 256).into_bytes())
            .collect();
        let gz = gzip(&body).unwrap();
        assert!(gz.len() < body.len() / 3, "{} of {}", gz.len(), body.len());
        assert_eq!(crate::api::inflate::gunzip(&gz).as_deref(), Some(&body[..]));
        assert_eq!(gzip(&body), Some(gz), "the same bytes every time");
        let empty = gzip(b"").unwrap();
        assert_eq!(
            crate::api::inflate::gunzip(&empty).as_deref(),
            Some(&b""[..])
        );
    }
}
