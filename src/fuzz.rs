//! Entry points for the fuzz targets in `fuzz/` (built only with `--cfg fuzzing`, as
//! cargo-fuzz does): each feeds outside input to one parser and checks what must hold
//! whatever the input. The parsers stay private to their modules in every other build.

use std::path::Path;

/// The API server's request head parser.
#[cfg(feature = "api")]
pub fn http_head(data: &[u8]) {
    if let Ok(Some(head)) = crate::api::http::parse_head(data) {
        // A complete head never claims more bytes than it was given.
        assert!(head.len <= data.len());
    }
}

/// Request targets: path and query splitting, percent-decoding, parameter checks.
#[cfg(feature = "api")]
pub fn query(target: &str) {
    use crate::api::query::{parse_query, path_segments, split_target};
    let (path, query) = split_target(target);
    let _ = path_segments(path);
    // The parameters of `GET /addresses`, the route with the most.
    let allowed = crate::api::routes::addresses::ADDRESS_PARAMS;
    if let Ok(params) = parse_query(query, allowed) {
        for (k, _) in &params {
            assert!(allowed.contains(&k.as_str()));
        }
    }
}

/// The one chunked decoder and Content-Length parser (server and client). The input
/// is fed in pieces of the size the first byte picks, as a socket delivers it, and
/// again through `read_chunked` over a buffer of that size: both must agree, and
/// framing never piles up beyond its bounds.
#[cfg(any(feature = "api", feature = "collect"))]
pub fn http_body(data: &[u8]) {
    use crate::http1::chunked::{read_chunked, Chunked, MAX_CHUNK_LINE, MAX_TRAILER};
    let Some((&first, body)) = data.split_first() else {
        return;
    };
    let piece = usize::from(first % 17) + 1;
    if let Ok(s) = std::str::from_utf8(body) {
        let _ = crate::http1::parse_length(s);
    }
    let mut d = Chunked::new();
    let mut pending: Vec<u8> = Vec::new();
    let mut stepped = Vec::new();
    let mut failed = false;
    'feed: for chunk in body.chunks(piece) {
        pending.extend_from_slice(chunk);
        loop {
            match d.step(&pending) {
                Ok(step) if step.used == 0 => {
                    assert!(pending.len() <= MAX_CHUNK_LINE + MAX_TRAILER + piece);
                    break;
                }
                Ok(step) => {
                    stepped.extend_from_slice(step.data);
                    let used = step.used;
                    pending.drain(..used);
                    if d.done() {
                        break 'feed;
                    }
                }
                Err(_) => {
                    failed = true;
                    break 'feed;
                }
            }
        }
    }
    let mut r = std::io::BufReader::with_capacity(piece, body);
    let mut out = Vec::new();
    if let Ok(true) = read_chunked(&mut r, &mut out, 1 << 20) {
        if !failed && d.done() {
            assert_eq!(out, stepped);
        }
    }
}

/// `config.json` as an administrator (or a broken editor) may leave it.
pub fn config(text: &str) {
    use crate::util::json;
    let _ = crate::config::parse(text, Path::new("config.json"));
    // Read in small pieces, as an upstream's answer streams, the tokenizer reads the
    // same document.
    json::fuzz_pieces(text.as_bytes(), text.len() % 7 + 1);
    // What the JSON module parses, it writes (compact and pretty, as rewrites and
    // answers do) to text that parses to the same document.
    if let Ok(v) = json::parse(text) {
        for out in [json::to_vec(&v), json::to_vec_pretty(&v)] {
            assert_eq!(json::parse(out).as_ref(), Ok(&v));
        }
    }
}

/// A snapshot file (`--snapshot`) as a restore reads it.
pub fn snapshot(data: &[u8]) {
    crate::db::snapshot::fuzz_read(data);
}

/// The earlier Python version's `data.json` and `fqdn_data.json`, as they stream:
/// every value handed on is normalised already.
pub fn legacy(text: &str) {
    use crate::legacy::{read, Item};
    use crate::source::{normalize_value, Kind};
    for kind in [Kind::Asn, Kind::Fqdn] {
        let mut sink = |item: Item<'_>| {
            if let Item::Value { value, .. } = item {
                assert_eq!(normalize_value(kind, value).as_deref(), Ok(value));
            }
            Ok(())
        };
        let _ = read(kind, &mut text.as_bytes(), "data.json", &mut sink);
    }
}

/// What the LuCI app's rpcd plugin hands the CLI and reads back from it. The call's
/// arguments (`{"kind": .., "source": ..}`, the first document): a source the CLI
/// accepts is normalised for good and holds nothing a page could take for markup.
/// The same document as `status.json` (whose failure texts come from upstreams),
/// with a `config.json` after a NUL byte, rendered as `status --json` and
/// `GET /status` answer: one JSON object whose daemon record reads back as it was.
pub fn luci(data: &[u8]) {
    use crate::source::Kind;
    use crate::util::json::{self, Value};
    let (doc, config) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(doc) = json::parse(doc) else {
        return;
    };
    let arg = |k: &str| doc.get(k).and_then(Value::as_str);
    if let (Some(kind), Some(source)) = (arg("kind").and_then(Kind::from_word), arg("source")) {
        if let Ok(n) = kind.normalize(source) {
            assert_eq!(kind.normalize(&n).as_ref(), Ok(&n), "{source:?}");
            assert!(!n.contains(['<', '>', '"', '\'', '\\', '`', ' ']), "{n:?}");
        }
    }
    let Ok(st) = crate::status::Status::from_json(&doc) else {
        return;
    };
    let cfg = std::str::from_utf8(config)
        .ok()
        .and_then(|t| crate::config::parse(t, Path::new("config.json")).ok())
        .map(|l| l.config);
    let out = crate::overview::fuzz_render(st.clone(), cfg.as_ref());
    let back = json::parse(&out).expect("the overview is JSON");
    let daemon = back.get("daemon").expect("a daemon record");
    assert_eq!(crate::status::Status::from_json(daemon).as_ref(), Ok(&st));
}

/// An upstream's answer as the collect client reads it: status line, headers, framing
/// (`Content-Length`, chunked, close) and the body, bounded.
#[cfg(feature = "collect")]
pub fn client_response(data: &[u8]) {
    crate::collect::client::fuzz_response(data);
}

/// A RIPEstat `announced-prefixes` answer, read as it streams.
#[cfg(feature = "collect")]
pub fn ripestat(data: &[u8]) {
    crate::collect::ripe::fuzz_answer(data);
}

/// The RIPEstat answers `asn search` and holder names read: `as-overview` and
/// `searchcomplete` (the first byte picks which, and the suggestion limit).
#[cfg(feature = "collect")]
pub fn names(data: &[u8]) {
    crate::collect::ripe::names::fuzz_answer(data);
}

/// A services catalog file (`services.json`): what parses has unique, valid names,
/// each found by its name.
pub fn catalog(text: &str) {
    if let Ok(c) = crate::catalog::Catalog::parse(text) {
        for s in &c.services {
            assert!(crate::catalog::check_name(&s.name).is_ok());
            assert!(std::ptr::eq(c.get(&s.name).expect("listed"), s));
        }
    }
}

/// A DoH JSON answer, read as it streams.
#[cfg(feature = "collect")]
pub fn doh(data: &[u8]) {
    crate::collect::dns::fuzz_answer(data);
}

/// The netlink encoder against its own decoder: the ranges the input describes
/// (sorted, not overlapping, as the loader gives them) come back from the encoded
/// batch as nft's interval elements; and kernel acknowledgements of any shape parse
/// without a panic.
#[cfg(all(feature = "collect", target_os = "linux"))]
pub fn nftnl(data: &[u8]) {
    use crate::nftnl::msg::Batch;
    let _ = crate::nftnl::parse_acks(data);
    let (v6, rest) = match data.split_first() {
        Some((b, rest)) => (b & 1 == 1, rest),
        None => return,
    };
    let key_len = if v6 { 16 } else { 4 };
    let top = u128::MAX >> (128 - 8 * key_len);
    let mut ranges = Vec::new();
    let mut next = 0u128;
    for pair in rest.chunks_exact(2) {
        let gap = u128::from(pair[0]) << (8 * key_len - 8);
        let len = u128::from(pair[1]) << (8 * key_len - 16);
        let Some(lo) = next.checked_add(gap) else {
            break;
        };
        let Some(hi) = lo.checked_add(len) else { break };
        if hi > top {
            break;
        }
        ranges.push((lo, hi));
        match hi.checked_add(2) {
            Some(n) if n <= top => next = n,
            _ => break,
        }
    }
    let mut b = Batch::new(16, 1);
    b.elements("t", "s", key_len, 0, &mut ranges.iter().copied());
    let (bytes, _) = b.finish();
    let got = crate::nftnl::decode::elements(&bytes);
    let key = |k: u128| k.to_be_bytes()[16 - key_len..].to_vec();
    let mut want = Vec::new();
    for (i, &(lo, hi)) in ranges.iter().enumerate() {
        if i == 0 && lo != 0 {
            want.push((key(0), true));
        }
        want.push((key(lo), false));
        if hi < top {
            want.push((key(hi + 1), true));
        }
    }
    assert_eq!(got, want);
}

/// A plain-list feed (Spamhaus DROP, `ipv4.txt` files, ipverse's lists): any bytes,
/// line by line as they stream.
#[cfg(feature = "collect")]
pub fn feed(data: &[u8]) {
    let _ = crate::collect::feed::parse_feed(data);
    if let Ok(text) = std::str::from_utf8(data) {
        for line in text.lines().take(64) {
            let _ = crate::collect::feed::parse_line(line);
        }
    }
}

/// A RIPEstat `country-resource-list` answer, and `a-b` ranges split into prefixes:
/// the prefixes of a range cover exactly the range.
#[cfg(feature = "collect")]
pub fn country(data: &[u8]) {
    let _ = crate::collect::country::parse_answer(data);
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(nets) = crate::collect::country::range_prefixes(text.trim()) {
            let mut next: Option<u128> = None;
            for net in &nets {
                let (lo, hi) = match net {
                    ipnet::IpNet::V4(n) => (
                        u128::from(u32::from(n.network())),
                        u128::from(u32::from(n.broadcast())),
                    ),
                    ipnet::IpNet::V6(n) => (u128::from(n.network()), u128::from(n.broadcast())),
                };
                if let Some(want) = next {
                    assert_eq!(lo, want, "the prefixes of {text:?} leave a gap or overlap");
                }
                next = hi.checked_add(1);
            }
        }
    }
}

/// Lines of bgp.tools' `table.jsonl`.
#[cfg(feature = "collect")]
pub fn bgptools(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        for line in text.lines().take(64) {
            let _ = crate::collect::bgptools::parse_line(line);
        }
    }
}
