//! po2lmo: a LuCI translation catalog (`.po`) as the binary `.lmo` LuCI loads from
//! `/usr/lib/lua/luci/i18n/NAME.LANG.lmo`, what luci-base's own po2lmo writes for
//! luci.mk. For the luci-i18n package built without an OpenWrt SDK
//! (openwrt/mkpkg-luci.sh), with nothing but the Rust compiler:
//!
//!   rustc --edition 2021 -O -o po2lmo cross/po2lmo.rs && ./po2lmo in.po out.lmo
//!
//! The format: the translations, each padded with NULs to a multiple of 4 bytes; then
//! one record per translation, four big-endian u32 (key hash, number of plural forms,
//! offset, length), sorted by key hash; then the offset of the records, big-endian.
//! The key hash is SuperFastHash (Paul Hsieh) of the msgid, seeded with its length
//! (`msgctxt \x01 msgid` with a context, `msgid \x02 N` for plural form N); the
//! header's Plural-Forms is the record with key 0. A translation that is empty or
//! hashes like its msgid gets no record. LuCI's JavaScript looks a string up by the
//! same hash of the string with its white space collapsed, so the msgids are taken
//! as they are; escapes other than `\"` and `\\` are refused (luci-base's tool would
//! keep them as two characters, which no JavaScript string matches).
//!
//! The integration tests use this file as a module (tests/it/luci_i18n.rs).

/// SuperFastHash of `data`, seeded with its length, as LuCI's lmo.c and cbi.js.
pub fn sfh(data: &[u8]) -> u32 {
    let len = data.len();
    if len == 0 {
        return 0;
    }
    let get16 = |i: usize| u32::from(data[i]) | (u32::from(data[i + 1]) << 8);
    // The C code adds `(signed char)` bytes: negative for bytes above 0x7f.
    let signed = |i: usize| i32::from(data[i] as i8);
    let mut hash = len as u32;
    let mut i = 0;
    for _ in 0..len / 4 {
        hash = hash.wrapping_add(get16(i));
        let tmp = (get16(i + 2) << 11) ^ hash;
        hash = (hash << 16) ^ tmp;
        hash = hash.wrapping_add(hash >> 11);
        i += 4;
    }
    match len & 3 {
        3 => {
            hash = hash.wrapping_add(get16(i));
            hash ^= hash << 16;
            hash ^= (signed(i + 2) << 18) as u32;
            hash = hash.wrapping_add(hash >> 11);
        }
        2 => {
            hash = hash.wrapping_add(get16(i));
            hash ^= hash << 11;
            hash = hash.wrapping_add(hash >> 17);
        }
        1 => {
            hash = hash.wrapping_add(signed(i) as u32);
            hash ^= hash << 10;
            hash = hash.wrapping_add(hash >> 1);
        }
        _ => {}
    }
    hash ^= hash << 3;
    hash = hash.wrapping_add(hash >> 5);
    hash ^= hash << 4;
    hash = hash.wrapping_add(hash >> 17);
    hash ^= hash << 25;
    hash.wrapping_add(hash >> 6)
}

/// One catalog entry, its strings still escaped as in the file.
#[derive(Default)]
struct Entry {
    ctxt: Option<String>,
    id: Option<String>,
    plural: bool,
    strs: Vec<(usize, String)>,
}

/// The inside of `"..."` on `line`, still escaped.
fn quoted(line: &str, n: usize) -> Result<&str, String> {
    let start = line.find('"').ok_or(format!("line {n}: no string"))?;
    let rest = line[start + 1..].trim_end();
    rest.strip_suffix('"')
        .ok_or(format!("line {n}: the string does not end with a quote"))
}

fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(e @ ('"' | '\\')) => out.push(e),
            other => {
                return Err(format!(
                    "unsupported escape \\{} in {s:?}",
                    other.unwrap_or(' ')
                ))
            }
        }
    }
    Ok(out)
}

/// The catalog's entries, in file order.
fn parse(po: &str) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    let mut cur = Entry::default();
    // Which string a continuation line adds to: 0 ctxt, 1 id, 2 id_plural, 3 the
    // last msgstr.
    let mut field = None;
    for (i, line) in po.lines().enumerate() {
        let n = i + 1;
        let line = line.trim_start();
        let starts_entry = line.starts_with("msgctxt ") || line.starts_with("msgid ");
        if starts_entry && (cur.id.is_some() || !cur.strs.is_empty()) {
            out.push(std::mem::take(&mut cur));
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let text = quoted(line, n)?.to_string();
        if line.starts_with("msgctxt ") {
            cur.ctxt = Some(text);
            field = Some(0);
        } else if line.starts_with("msgid_plural ") {
            cur.plural = true;
            field = Some(2);
        } else if line.starts_with("msgid ") {
            cur.id = Some(text);
            field = Some(1);
        } else if let Some(rest) = line.strip_prefix("msgstr") {
            let index = match rest.strip_prefix('[') {
                Some(r) => r[..r.find(']').ok_or(format!("line {n}: no ]"))?]
                    .parse()
                    .map_err(|_| format!("line {n}: bad plural index"))?,
                None => 0,
            };
            cur.strs.push((index, text));
            field = Some(3);
        } else if line.starts_with('"') {
            match field {
                Some(0) => cur.ctxt.get_or_insert_with(String::new).push_str(&text),
                Some(1) => cur.id.get_or_insert_with(String::new).push_str(&text),
                Some(2) => {}
                Some(_) => cur.strs.last_mut().unwrap().1.push_str(&text),
                None => return Err(format!("line {n}: a string outside an entry")),
            }
        } else {
            return Err(format!("line {n}: not a .po line: {line:?}"));
        }
    }
    if cur.id.is_some() {
        out.push(cur);
    }
    Ok(out)
}

/// The records (key, plural forms, text) of one entry.
fn records(e: &Entry) -> Result<Vec<(u32, u32, String)>, String> {
    let id = e.id.as_deref().unwrap_or_default();
    if id.is_empty() {
        // The header: only its Plural-Forms line is kept.
        let header = e.strs.first().map(|s| s.1.as_str()).unwrap_or_default();
        return Ok(header
            .split("\\n")
            .find_map(|f| f.strip_prefix("Plural-Forms: "))
            .map(|p| vec![(0, 0, p.to_string())])
            .unwrap_or_default());
    }
    let id = unescape(id)?;
    let ctxt = e.ctxt.as_deref().map(unescape).transpose()?;
    let forms = e.strs.iter().map(|s| s.0 + 1).max().unwrap_or(1) as u32;
    let mut out = Vec::new();
    for (index, text) in &e.strs {
        let text = unescape(text)?;
        if text.is_empty() {
            continue;
        }
        let key = match (&ctxt, e.plural) {
            (Some(c), true) => format!("{c}\u{1}{id}\u{2}{index}"),
            (Some(c), false) => format!("{c}\u{1}{id}"),
            (None, true) => format!("{id}\u{2}{index}"),
            (None, false) => id.clone(),
        };
        let key = sfh(key.as_bytes());
        if key != sfh(text.as_bytes()) {
            out.push((key, forms, text));
        }
    }
    Ok(out)
}

/// The `.lmo` of a `.po` catalog.
pub fn po_to_lmo(po: &str) -> Result<Vec<u8>, String> {
    let mut recs = Vec::new();
    for e in parse(po)? {
        recs.extend(records(&e)?);
    }
    if recs.is_empty() {
        return Err("no translations in the catalog".into());
    }
    let mut data = Vec::new();
    let mut index = Vec::new();
    for (key, forms, text) in recs {
        index.push((key, forms, data.len() as u32, text.len() as u32));
        data.extend_from_slice(text.as_bytes());
        data.resize(data.len().div_ceil(4) * 4, 0);
    }
    index.sort_by_key(|r| r.0);
    let at = data.len() as u32;
    for (key, forms, offset, length) in index {
        for v in [key, forms, offset, length] {
            data.extend_from_slice(&v.to_be_bytes());
        }
    }
    data.extend_from_slice(&at.to_be_bytes());
    Ok(data)
}

#[cfg(not(test))]
fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, output] = args.as_slice() else {
        eprintln!("usage: po2lmo INPUT.po OUTPUT.lmo");
        return std::process::ExitCode::from(2);
    };
    let result = std::fs::read_to_string(input)
        .map_err(|e| format!("{input}: {e}"))
        .and_then(|po| po_to_lmo(&po).map_err(|e| format!("{input}: {e}")))
        .and_then(|lmo| std::fs::write(output, lmo).map_err(|e| format!("{output}: {e}")));
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("po2lmo: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
