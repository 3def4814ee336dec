//! The tokenizer as the streaming readers use it: the limits of a streamed text, and
//! the same messages as the document parser.

use super::*;

/// Every string and number of `doc`, skipping nothing, as text.
fn walk(doc: &str) -> std::result::Result<Vec<String>, String> {
    let mut r = doc.as_bytes();
    let mut s = Scanner::new(&mut r);
    let mut out = Vec::new();
    fn value(s: &mut Scanner, out: &mut Vec<String>) -> Result<()> {
        match s.peek()? {
            Next::Object => {
                s.begin_object()?;
                while let Some(k) = s.next_key()? {
                    out.push(format!("key {k}"));
                    value(s, out)?;
                }
            }
            Next::Array => {
                s.begin_array()?;
                while s.next_item()? {
                    value(s, out)?;
                }
            }
            Next::String => {
                let t = s.string()?.map(str::to_string);
                out.push(t.unwrap_or_else(|| "<long>".into()));
            }
            Next::Number => {
                let n = s.number()?.to_string();
                out.push(n);
            }
            _ => s.skip()?,
        }
        Ok(())
    }
    value(&mut s, &mut out)
        .and_then(|_| s.end())
        .map_err(|e| format!("{e:?}"))?;
    Ok(out)
}

#[test]
fn documents() {
    assert_eq!(
        walk(r#" {"a": [1, -2.5e3, "x\/y\u00e9\ud83d\ude00", true, null, {}], "b": {"c": []}} "#)
            .unwrap(),
        ["key a", "1", "-2.5e3", "x/yé😀", "key b", "key c"]
    );
    let long = format!(r#"["{}", "ok"]"#, "a".repeat(MAX_TEXT + 1));
    assert_eq!(walk(&long).unwrap(), ["<long>", "ok"]);
    let exact = format!(r#"["{}"]"#, "a".repeat(MAX_TEXT));
    assert_eq!(walk(&exact).unwrap()[0].len(), MAX_TEXT);
}

#[test]
fn bad_documents() {
    for bad in [
        "",
        "<html>",
        "[1,]",
        "[1 2]",
        r#"{"a" 1}"#,
        r#"{"a":1,}"#,
        "[01]",
        "[1.]",
        "[-]",
        "[tru]",
        r#"["\x"]"#,
        r#"["\ud800"]"#,
        "[\"a\nb\"]",
        "[\"\u{0}\"]",
        "[1] x",
        "{",
        r#"{"a":"#,
        "[\"\\u12\"]",
    ] {
        assert!(walk(bad).is_err(), "{bad:?} accepted");
    }
    let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
    assert!(walk(&deep).unwrap_err().contains("nested too deeply"));
    let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
    assert!(walk(&ok).is_ok());
}

#[test]
fn syntax_errors_are_the_document_parsers() {
    // One tokenizer: a streamed text that is not JSON is told as `config.json`
    // would be, with the offset of the byte instead of a line and column.
    for (bad, at) in [
        ("[1,]", 3),
        ("[1 2]", 3),
        (r#"{"a" 1}"#, 5),
        ("[tru]", 4),
        ("[01]", 2),
        ("[1] x", 4),
        (r#"["\ud800"]"#, 8),
        ("{", 1),
    ] {
        let want = crate::util::json::parse(bad).unwrap_err();
        assert_eq!(
            walk(bad).unwrap_err(),
            format!("Syntax({:?}, {at})", want.message()),
            "{bad}"
        );
    }
}
