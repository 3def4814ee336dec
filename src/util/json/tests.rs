//! The parser and writer against serde_json (a dev-dependency, kept as the reference
//! for what the files and answers looked like when it wrote them).

use super::*;

/// The stack of an API connection thread (`api::server::STACK_SIZE`), which parses
/// `config.json` for every request; a constant here because `api` is a feature.
const STACK: usize = 256 * 1024;

fn err(text: &str) -> (String, usize, usize) {
    let e = parse(text).unwrap_err();
    (e.message().to_string(), e.line(), e.column())
}

fn serde_err(text: &str) -> (String, usize, usize) {
    let e = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
    let m = e.to_string();
    let m = m.split(" at line ").next().unwrap().to_string();
    (m, e.line(), e.column())
}

#[test]
fn values_and_accessors() {
    let v = parse(r#" {"a": [1, -2, 3.5, 1e3, true, false, null], "b": {"c": "d"}} "#).unwrap();
    let a = v.get("a").and_then(Value::as_array).unwrap();
    assert_eq!(a[0].as_u64(), Some(1));
    assert_eq!(a[1].as_u64(), None);
    assert_eq!(a[1].as_i64(), Some(-2));
    assert_eq!((a[2].as_u64(), a[2].to_string()), (None, "3.5".into()));
    assert_eq!((a[3].as_u64(), a[3].to_string()), (None, "1e3".into()));
    assert_eq!(a[4].as_bool(), Some(true));
    assert!(a[6].is_null());
    assert_eq!(
        v.get("b").and_then(|b| b.get("c")).and_then(Value::as_str),
        Some("d")
    );
    assert_eq!(v.get("x"), None);
    assert_eq!(a[0].get("x"), None);
}

#[test]
fn big_numbers_keep_their_text() {
    let v = parse("[18446744073709551615, 18446744073709551616, -9223372036854775808]").unwrap();
    let a = v.as_array().unwrap();
    assert_eq!(a[0].as_u64(), Some(u64::MAX));
    assert_eq!(a[1].as_u64(), None, "too large for u64");
    assert_eq!(a[1].to_string(), "18446744073709551616");
    assert_eq!(a[2].as_i64(), Some(i64::MIN));
    assert_eq!(parse("-0").unwrap().as_u64(), None);
    assert_eq!(
        parse("1.0").unwrap().as_u64(),
        None,
        "not written as a whole number"
    );
    assert_eq!(parse("0.5e-7").unwrap().to_string(), "0.5e-7");
    for bad in [
        "01", "-", "1.", "1.e3", "1e", "1e+", ".5", "+1", "- 1", "0x10",
    ] {
        assert!(parse(bad).is_err(), "{bad}");
        assert!(
            serde_json::from_str::<serde_json::Value>(bad).is_err(),
            "{bad}"
        );
    }
}

#[test]
fn escapes_and_surrogate_pairs() {
    let v = parse(r#""a\"b\\c\/d\b\f\n\r\t\u0041\u00e9\u20ac\ud83d\ude00""#).unwrap();
    assert_eq!(v.as_str(), Some("a\"b\\c/d\u{8}\u{c}\n\r\tAé€😀"));
    assert_eq!(parse("\"é😀\"").unwrap().as_str(), Some("é😀"));
    for (bad, message) in [
        (r#""\ud83d""#, "unexpected end of hex escape"),
        (r#""\ud83d\u0041""#, "lone leading surrogate in hex escape"),
        (r#""\ude00""#, "lone trailing surrogate in hex escape"),
        (r#""\x""#, "invalid escape"),
        (r#""\u12g4""#, "invalid escape"),
        (
            "\"a\nb\"",
            "control character (\\u0000-\\u001F) found while parsing a string",
        ),
        ("\"ab", "EOF while parsing a string"),
        ("\"\\u12", "EOF while parsing a string"),
    ] {
        assert_eq!(parse(bad).unwrap_err().message(), message, "{bad}");
        assert!(
            serde_json::from_str::<serde_json::Value>(bad).is_err(),
            "{bad}"
        );
    }
    // Bytes that are not UTF-8 inside a string (request bodies are bytes).
    assert_eq!(
        parse(b"\"a\xff\"").unwrap_err().message(),
        "invalid unicode code point"
    );
}

#[test]
fn errors_name_line_and_column_as_serde_json_did() {
    for text in [
        "",
        "   ",
        "{",
        "{\n",
        "[1,\n}",
        "{\n  \"asns\": [1,\n}",
        "{\"a\" 1}",
        "{\"a\": 1 \"b\": 2}",
        "{\"a\": 1,}",
        "{1: 2}",
        "[1 2]",
        "[1,]",
        "{\"a\": tru}",
        "{\"a\": nul",
        "{} x",
        "[] []",
        "\u{feff}{}",
        "{\"a\": x}",
        "\"abc",
        "[\"a\",\n  \"b\n\"]",
        "{\"a\":[",
        "01",
        "[-]",
        "1.x",
        "[1,",
        "{\"a\":1,",
        "{\"a\"",
        "{\"a\":",
        "[\"\\u00e9\\ud800\"]",
        "\"\\q\"",
        "\"\\u00zz\"",
    ] {
        assert_eq!(err(text), serde_err(text), "{text:?}");
    }
    let e = parse("{\n  \"asns\": [1,\n}").unwrap_err();
    assert_eq!(e.to_string(), "expected value at line 3 column 1");
}

#[test]
fn nesting_is_limited() {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(parse(deep(MAX_DEPTH)).is_ok());
    let e = parse(deep(MAX_DEPTH + 1)).unwrap_err();
    assert_eq!(
        (e.message(), e.column()),
        ("nested too deeply", MAX_DEPTH + 1)
    );
    // Far deeper than any stack could recurse: still an error, not a crash.
    assert!(parse("{\"a\":".repeat(1_000_000)).is_err());
    // The deepest document is read, sorted, written and dropped well within an API
    // thread's stack (debug build; the parser keeps its open containers on the heap).
    let objects = format!(
        "{}1{}",
        "{\"a\":[".repeat(MAX_DEPTH / 2),
        "]}".repeat(MAX_DEPTH / 2)
    );
    let small_stack = std::thread::Builder::new().stack_size(STACK / 2);
    let parsed = small_stack.spawn(move || {
        parse(objects).map(|mut v| {
            v.sort_keys();
            v.to_string().len()
        })
    });
    assert!(parsed.unwrap().join().unwrap().is_ok());
    assert!(parse_with_depth(b"[[1]]", 2).is_ok());
    assert!(parse_with_depth(b"[[[1]]]", 2).is_err());
}

#[test]
fn objects_keep_order_and_repeats_until_sorted() {
    let mut v = parse(r#"{"b": 1, "a": {"z": 1, "y": 2}, "b": 2}"#).unwrap();
    let o = v.as_object().unwrap();
    assert_eq!(o.keys().collect::<Vec<_>>(), ["b", "a", "b"]);
    assert_eq!(o.get("b").unwrap().as_u64(), Some(2), "the last one counts");
    v.sort_keys();
    assert_eq!(v.to_string(), r#"{"a":{"y":2,"z":1},"b":2}"#);
    // A sorted object keeps its order through inserts, as serde_json's maps did.
    let o = v.as_object_mut().unwrap();
    o.insert("ab", Value::Null);
    o.get_or_insert_with("0", || Value::Bool(true));
    o.insert("b", 3.into());
    assert_eq!(
        v.to_string(),
        r#"{"0":true,"a":{"y":2,"z":1},"ab":null,"b":3}"#
    );
    assert_eq!(v.get("ab"), Some(&Value::Null));
    assert_eq!(v.get("b").and_then(Value::as_u64), Some(3));
    assert_eq!(v.get("c"), None);
    // An unsorted one appends.
    let mut u = parse(r#"{"b": 1}"#).unwrap();
    u.as_object_mut().unwrap().insert("a", Value::Null);
    assert_eq!(u.to_string(), r#"{"b":1,"a":null}"#);
}

#[test]
fn output_matches_serde_json() {
    let text = r#"{"s": "q\"b\\s/\u0001\u001f\u007f\b\f\n\r\t é 😀", "e": [], "o": {},
        "l": [1, [2, {"k": null}], {"t": true, "f": false}], "n": -12}"#;
    let mut ours = parse(text).unwrap();
    ours.sort_keys();
    let theirs: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(to_string(&ours), serde_json::to_string(&theirs).unwrap());
    assert_eq!(
        to_string_pretty(&ours),
        serde_json::to_string_pretty(&theirs).unwrap()
    );
    let empty = parse("{}").unwrap();
    assert_eq!(to_string_pretty(&empty), "{}");
    // Every control character escaped as serde_json escapes it.
    let all: String = (0u8..0x80).map(char::from).collect();
    assert_eq!(
        to_string(all.as_str()),
        serde_json::to_string(&all).unwrap()
    );
}

#[test]
fn writer_writes_fields_in_order() {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out, true);
    w.begin_object();
    w.field("z", &Some(3u64));
    w.field("a", &None::<String>);
    w.key("list");
    w.begin_array();
    w.string("x");
    w.u64(7);
    w.end_array();
    w.field("m", &crate::util::map::SortedMap::<String, u32>::new());
    w.end_object();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "{\n  \"z\": 3,\n  \"a\": null,\n  \"list\": [\n    \"x\",\n    7\n  ],\n  \"m\": {}\n}"
    );
}

fn rk(text: &str) -> Option<(String, usize, usize)> {
    parse_repeats(text.as_bytes()).unwrap().1
}

fn some(key: &str, line: usize, col: usize) -> Option<(String, usize, usize)> {
    Some((key.to_string(), line, col))
}

#[test]
fn finds_repeated_keys_at_any_depth() {
    assert_eq!(rk(r#"{"a":1,"b":2}"#), None);
    assert_eq!(rk(r#"{"a":1,"a":2}"#), some("a", 1, 8));
    assert_eq!(rk("{\"a\":{\"x\":\"a\",\n \"x\":[1]}}"), some("x", 2, 2));
    // Values equal to keys, equal keys in sibling objects, escaped quotes.
    assert_eq!(rk(r#"{"a":"a","l":[{"a":1},{"a":2}],"q\"":"a"}"#), None);
    assert_eq!(rk(r#"[{"k":1},{"k":2,"k":3}]"#), some("k", 1, 17));
    // The repetition that starts first wins, whichever object closes first.
    assert_eq!(rk(r#"{"a":{"x":1,"x":2},"a":3}"#), some("x", 1, 13));
    assert_eq!(
        rk(r#"{"a":1,"b":{"x":1},"a":2,"c":{"y":1,"y":2}}"#),
        some("a", 1, 20)
    );
    assert_eq!(
        rk(r#"{"a":1,"b":{"x":1,"x":2,"x":3},"a":2}"#),
        some("x", 1, 19)
    );
    // Keys are compared as the parser reads them: an escape spells the same key.
    assert_eq!(rk(r#"{"ab":1,"a\u0062":2}"#), some("ab", 1, 9));
    assert_eq!(rk(r#"{"x":{"a\"":1,"a\u0022":2}}"#), some("a\"", 1, 15));
    assert_eq!(rk(r#"{"a\\":1,"a\u005c":2}"#), some("a\\", 1, 10));
    assert_eq!(rk(r#"{"a\n":1,"a\u000a":2}"#), some("a\n", 1, 10));
    assert_eq!(rk(r#"{"a\u0062":1,"a\u0063":2}"#), None);
    // What is not JSON is a syntax error first, as `parse` says it.
    assert_eq!(
        parse_repeats(b"{\"a\":1,\"a\":}"),
        Err(parse("{\"a\":1,\"a\":}").unwrap_err())
    );
    let (v, _) = parse_repeats(br#"{"a":1,"a":2}"#).unwrap();
    assert_eq!(v, parse(r#"{"a":1,"a":2}"#).unwrap());
}

/// A source that gives one byte per read, as a slow socket does.
struct Trickle<'a>(&'a [u8]);

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let Some((&b, rest)) = self.0.split_first() else {
            return Ok(0);
        };
        buf[0] = b;
        self.0 = rest;
        Ok(1)
    }
}

/// The document `text` read by the tokenizer one byte at a time: the value, or the
/// error's message and offset.
fn trickled(text: &[u8]) -> Result<Value, (&'static str, u64)> {
    let mut src = Trickle(text);
    let mut r = scan::Scanner::with_limits(&mut src, MAX_DEPTH, usize::MAX);
    let v = parse::tree(&mut r, None).and_then(|v| r.end().map(|_| v));
    v.map_err(|e| match e {
        scan::ScanError::Syntax(m, at) => (m, at),
        other => panic!("{other:?}"),
    })
}

#[test]
fn the_tokenizer_reads_any_pieces_alike() {
    // Strings, escapes and numbers across the reader's 8 KiB buffer, at every shift.
    for shift in 0..12 {
        let pad = "a".repeat((8 << 10) - 8 + shift);
        let text = format!(r#"["{pad}\u00e9\ud83d\ude00\n", -12.5, {{"k\"": "{pad}"}}]"#);
        let ours = parse(&text).unwrap();
        assert!(
            trickled(text.as_bytes()) == Ok(ours.clone()),
            "shift {shift}"
        );
        let theirs: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(
            to_string(&ours) == serde_json::to_string(&theirs).unwrap(),
            "shift {shift}"
        );
    }
    // Errors in a later buffer name the same line and column as serde_json, and the
    // same message and offset however the text comes in.
    let long = format!("[{}\n  \"x\\q\"]", "1,".repeat(6000));
    assert_eq!(err(&long), serde_err(&long));
    for text in [
        long.as_str(),
        "[1,]",
        "{\"a\" 1}",
        "\"\\ud83d\\u0041\"",
        "[1 2]",
        "01",
    ] {
        let e = parse(text).unwrap_err();
        let (message, at) = trickled(text.as_bytes()).unwrap_err();
        assert_eq!(message, e.message(), "{text:?}");
        let line_start = text[..at as usize].rfind('\n').map_or(0, |p| p + 1);
        assert_eq!(at as usize - line_start + 1, e.column(), "{text:?}");
    }
}

#[test]
fn the_tokenizer_bounds_strings_and_numbers() {
    let read = |text: &str| {
        let mut src = text.as_bytes();
        let mut r = scan::Scanner::with_limits(&mut src, 4, 8);
        r.begin_array()?;
        let mut out = Vec::new();
        while r.next_item()? {
            out.push(match r.peek()? {
                scan::Next::String => r.string()?.unwrap_or("<long>").to_string(),
                scan::Next::Number => r.number()?.to_string(),
                _ => {
                    r.skip()?;
                    "<skipped>".into()
                }
            });
        }
        r.end().map(|_| out)
    };
    let out =
        read(r#"["12345678", "123456789", 12345678, [[["\u00e9"]]], "\u00e9\u00e9\u00e9\u00e9"]"#);
    assert_eq!(
        out.unwrap(),
        ["12345678", "<long>", "12345678", "<skipped>", "éééé"]
    );
    assert!(matches!(
        read("[123456789]"),
        Err(scan::ScanError::Syntax("number too long", 9))
    ));
    assert!(matches!(
        read("[[[[[]]]]]"),
        Err(scan::ScanError::Syntax("nested too deeply", 4))
    ));
    assert!(
        matches!(read("{}"), Err(scan::ScanError::Shape(m)) if m == "expected a list at byte 0, found an object")
    );
}
