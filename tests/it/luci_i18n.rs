//! The LuCI app's translations: every string the views give to `_()` (and the menu
//! titles and the ACL description, which LuCI translates too) is in the template
//! `po/templates/ripe-cidr-collector.pot` and in a complete Russian catalog
//! `po/ru/ripe-cidr-collector.po` with the same placeholders; and po2lmo
//! (cross/po2lmo.rs) writes that catalog as LuCI reads it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

#[path = "../../cross/po2lmo.rs"]
pub mod po2lmo;

pub fn app() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("openwrt/luci-app-ripe-cidr-collector")
}

/// The JavaScript files of the app: its views and the Status -> Overview include.
pub fn view_files() -> Vec<PathBuf> {
    let views = app().join("htdocs/luci-static/resources/view");
    let mut out = Vec::new();
    for dir in [
        views.join("ripe-cidr-collector"),
        views.join("status/include"),
    ] {
        for e in std::fs::read_dir(dir).unwrap() {
            out.push(e.unwrap().path());
        }
    }
    out.sort();
    out
}

/// The value of a single-quoted JavaScript string literal's inside.
fn js_unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        out.push(if c == '\\' { chars.next().unwrap() } else { c });
    }
    out
}

/// The inside of each single-quoted literal that starts right after `prefix`.
fn literals_after<'a>(src: &'a str, prefix: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    for piece in src.split(prefix).skip(1) {
        let b = piece.as_bytes();
        let mut i = 0;
        while i < b.len() && b[i] != b'\'' {
            i += if b[i] == b'\\' { 2 } else { 1 };
        }
        out.push(&piece[..i]);
    }
    out
}

/// Every string the views translate, each once.
pub fn view_strings() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for f in view_files() {
        let src = std::fs::read_to_string(&f).unwrap();
        assert!(
            !src.contains("_(\""),
            "{}: _() with a double-quoted string",
            f.display()
        );
        assert!(
            !src.contains("_(`"),
            "{}: _() with a template string",
            f.display()
        );
        for lit in literals_after(&src, "_('") {
            out.insert(js_unescape(lit));
        }
    }
    out
}

/// The menu titles and the ACL description, which LuCI also looks up.
fn menu_and_acl_strings() -> BTreeSet<String> {
    let read = |p: &str| -> Value {
        serde_json::from_slice(&std::fs::read(app().join("root/usr/share").join(p)).unwrap())
            .unwrap()
    };
    let menu = read("luci/menu.d/luci-app-ripe-cidr-collector.json");
    let acl = read("rpcd/acl.d/luci-app-ripe-cidr-collector.json");
    let titles = menu.as_object().unwrap().values().map(|e| &e["title"]);
    let descr = acl.as_object().unwrap().values().map(|e| &e["description"]);
    titles
        .chain(descr)
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

/// msgid to msgstr of a .po or .pot file, the header left out.
pub fn catalog(path: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap();
    let unquote = |s: &str| {
        let inner = s
            .trim()
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .unwrap();
        js_unescape(inner)
    };
    let mut out = BTreeMap::new();
    let (mut id, mut s, mut in_id) = (None::<String>, String::new(), false);
    for line in text.lines().chain(["msgid \"\""]) {
        if let Some(rest) = line.strip_prefix("msgid ") {
            if let Some(prev) = id.take().filter(|i| !i.is_empty()) {
                assert!(
                    out.insert(prev.clone(), std::mem::take(&mut s)).is_none(),
                    "{prev} twice"
                );
            }
            id = Some(unquote(rest));
            s.clear();
            in_id = true;
        } else if let Some(rest) = line.strip_prefix("msgstr ") {
            s = unquote(rest);
            in_id = false;
        } else if line.starts_with('"') {
            if in_id {
                id.as_mut().unwrap().push_str(&unquote(line));
            } else {
                s.push_str(&unquote(line));
            }
        }
    }
    out
}

fn template() -> BTreeMap<String, String> {
    catalog(&app().join("po/templates/ripe-cidr-collector.pot"))
}

pub fn russian() -> BTreeMap<String, String> {
    catalog(&app().join("po/ru/ripe-cidr-collector.po"))
}

/// The `%s`, `%d` ... of a format string, in order.
fn placeholders(s: &str) -> Vec<String> {
    let b = s.as_bytes();
    (0..b.len().saturating_sub(1))
        .filter(|&i| b[i] == b'%' && b[i + 1].is_ascii_alphabetic())
        .map(|i| s[i..i + 2].to_string())
        .collect()
}

/// The records of an `.lmo`: key hash to text (lmo.c's lmo_open and lmo_iterate).
pub fn lmo_entries(lmo: &[u8]) -> BTreeMap<u32, String> {
    let u32_at = |i: usize| u32::from_be_bytes(lmo[i..i + 4].try_into().unwrap());
    let index = u32_at(lmo.len() - 4) as usize;
    assert_eq!((lmo.len() - 4 - index) % 16, 0, "index of whole records");
    let mut out = BTreeMap::new();
    let mut last = None;
    for r in (index..lmo.len() - 4).step_by(16) {
        let (key, offset, length) = (u32_at(r), u32_at(r + 8) as usize, u32_at(r + 12) as usize);
        assert!(last < Some(key), "records sorted by key, each key once");
        assert_eq!(offset % 4, 0, "texts at 4-byte offsets");
        last = Some(key);
        out.insert(
            key,
            String::from_utf8(lmo[offset..offset + length].to_vec()).unwrap(),
        );
    }
    out
}

/// The Russian catalog as LuCI hands it to the browser: `{"8 hex digits": text}`.
pub fn russian_tr() -> Value {
    let po = std::fs::read_to_string(app().join("po/ru/ripe-cidr-collector.po")).unwrap();
    let lmo = po2lmo::po_to_lmo(&po).unwrap();
    let map: Map<String, Value> = lmo_entries(&lmo)
        .into_iter()
        .filter(|(k, _)| *k != 0)
        .map(|(k, v)| (format!("{k:08x}"), Value::String(v)))
        .collect();
    Value::Object(map)
}

#[test]
fn every_view_string_is_in_the_template_and_in_russian() {
    let mut wanted = view_strings();
    wanted.extend(menu_and_acl_strings());
    let pot: BTreeSet<String> = template().keys().cloned().collect();
    let missing: Vec<_> = wanted.difference(&pot).collect();
    let stale: Vec<_> = pot.difference(&wanted).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "not in the .pot: {missing:#?}\nno longer used: {stale:#?}"
    );
    let ru = russian();
    assert_eq!(ru.keys().cloned().collect::<BTreeSet<_>>(), wanted, "po/ru");
    for (id, s) in &ru {
        assert!(!s.is_empty(), "{id:?} untranslated");
        assert_eq!(placeholders(id), placeholders(s), "{id:?} -> {s:?}");
        // LuCI hashes the string with its white space collapsed, po2lmo as it is.
        let collapsed = id.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(
            &collapsed, id,
            "white space that LuCI's lookup would collapse"
        );
        // Russian, not the English copied over (names such as "ASN" excepted).
        let cyrillic = s
            .chars()
            .any(|c| ('а'..='я').contains(&c.to_lowercase().next().unwrap()));
        assert!(cyrillic || id == s && !id.contains(' '), "{id:?} -> {s:?}");
    }
    let held = ru
        .keys()
        .find(|k| k.starts_with("Held since %s"))
        .expect("the held sentence");
    assert!(ru[held].contains("«confirm»"), "{}", ru[held]);
}

/// English text outside `_()`: a literal of words that starts with a capital letter
/// (class names, ids and placeholders such as '149.154.167.99' do not).
#[test]
fn no_english_text_outside_translation_calls() {
    for f in view_files() {
        let src = std::fs::read_to_string(&f).unwrap();
        // Comments left out; an escaped quote is part of its literal.
        let code: String = src
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n")
            .replace("\\'", "");
        for (i, piece) in code.split('\'').enumerate().skip(1).step_by(2) {
            let before = code.split('\'').nth(i - 1).unwrap_or_default();
            let words = piece
                .split(' ')
                .filter(|w| w.chars().all(|c| c.is_ascii_alphabetic()))
                .count();
            let sentence = piece.starts_with(|c: char| c.is_ascii_uppercase()) && words >= 2;
            assert!(
                !sentence || before.ends_with("_("),
                "{}: '{piece}' not through _()",
                f.display()
            );
        }
    }
}

#[test]
fn po2lmo_writes_the_catalog_as_luci_reads_it() {
    // SuperFastHash as luci-base's cbi.js computes it, for ASCII and UTF-8 tails.
    for (s, hash) in [
        ("Status", 0x6633_59c9),
        ("abc", 0xd2be_198a),
        ("aé", 0xe3d9_c55b),
        ("abcЖ", 0x9ab8_6e32),
        ("abcdxé", 0x565e_9ddb),
        ("ЖЖЖЖЖЖЖ", 0xff66_d292),
    ] {
        assert_eq!(po2lmo::sfh(s.as_bytes()), hash, "{s}");
    }
    let po = std::fs::read_to_string(app().join("po/ru/ripe-cidr-collector.po")).unwrap();
    let entries = lmo_entries(&po2lmo::po_to_lmo(&po).unwrap());
    let ru = russian();
    let translated: Vec<_> = ru.iter().filter(|(id, s)| id != s).collect();
    assert_eq!(
        entries.len(),
        translated.len() + 1,
        "one record each and Plural-Forms"
    );
    assert!(entries[&0].starts_with("nplurals=3;"), "{}", entries[&0]);
    for (id, s) in translated {
        assert_eq!(entries.get(&po2lmo::sfh(id.as_bytes())), Some(s), "{id}");
    }
    // What luci-base's po2lmo would keep as two characters is refused.
    let bad = "msgid \"a\\nb\"\nmsgstr \"c\"\n";
    assert!(po2lmo::po_to_lmo(bad)
        .unwrap_err()
        .contains("unsupported escape"));
    let quoted = "msgid \"say \\\"hi\\\"\"\nmsgstr \"скажи «привет»\"\n";
    let e = lmo_entries(&po2lmo::po_to_lmo(quoted).unwrap());
    assert_eq!(e[&po2lmo::sfh(b"say \"hi\"")], "скажи «привет»");
}
