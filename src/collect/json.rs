//! The JSON answers of upstreams, read as the body streams with the one tokenizer
//! ([`crate::util::json::Reader`]) under the limits of an upstream's answer.
//!
//! Memory is bounded whatever the answer: strings kept only up to [`MAX_TEXT`] bytes
//! (longer ones are read through and reported as too long), nesting up to
//! [`MAX_DEPTH`], and the reader's 8 KiB buffer. The callers walk the document and
//! skip what they do not need, so a 16 MiB answer of `{}` entries costs no more than
//! one of real prefixes (serde_json's `Value`, or a `Vec` of entries, cost 150 MB).

use std::io::Read;
use std::ops::{Deref, DerefMut};

pub(crate) use crate::util::json::Next;
use crate::util::json::{ReadError, Reader};

use super::fetch::SourceError;

/// Longest string (key or value) kept; longer ones are skipped. Prefixes, addresses
/// and keys are far shorter; messages are cut for the log anyway.
pub(crate) const MAX_TEXT: usize = 512;

/// Deepest nesting of objects and arrays accepted.
pub(crate) const MAX_DEPTH: usize = 64;

/// Why a document could not be read.
#[derive(Debug)]
pub(crate) enum ScanError {
    /// Reading the body failed (timeout, too large, connection lost ...), or the
    /// caller refused a value (too many).
    Failed(SourceError),
    /// Not JSON.
    Syntax(String),
    /// JSON, but not the shape the caller expects.
    Shape(String),
}

impl From<ReadError> for ScanError {
    fn from(e: ReadError) -> ScanError {
        match e {
            ReadError::Io(e) => ScanError::Failed(super::fetcher::from_io(e)),
            ReadError::Syntax(m, at) => ScanError::Syntax(format!("{m} at byte {at}")),
            ReadError::Shape(m) => ScanError::Shape(m),
        }
    }
}

/// The reader of one body, and what the RIPEstat data readers note on the way.
pub(crate) struct Scanner<'r> {
    json: Reader<'r>,
    /// The time a RIPEstat `data` says its data is of (`latest_time`, else
    /// `query_time`), noted by the data readers with [`Scanner::note_time`].
    pub(crate) data_time: Option<String>,
}

impl<'r> Deref for Scanner<'r> {
    type Target = Reader<'r>;
    fn deref(&self) -> &Reader<'r> {
        &self.json
    }
}

impl DerefMut for Scanner<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.json
    }
}

impl<'r> Scanner<'r> {
    /// A scanner reading `src`.
    pub(crate) fn new(src: &'r mut dyn Read) -> Scanner<'r> {
        Scanner {
            json: Reader::new(src, MAX_DEPTH, MAX_TEXT),
            data_time: None,
        }
    }

    /// After the answer: only white space may follow.
    pub(crate) fn end(&mut self) -> Result<(), ScanError> {
        Ok(self.json.end()?)
    }

    /// Reads the value of `data.latest_time` or `data.query_time` (`key`) into
    /// `data_time`, `latest_time` first; anything but a string is skipped.
    pub(crate) fn note_time(&mut self, key_is_latest: bool) -> Result<(), ScanError> {
        if self.peek()? != Next::String {
            return Ok(self.skip()?);
        }
        let t = self.string()?.map(str::to_string);
        if key_is_latest || self.data_time.is_none() {
            self.data_time = t;
        }
        Ok(())
    }
}

/// Turns a scan error into the source's error: `not JSON` (with what the answer looks
/// like: `an HTML page`, never its text) or `not the <what> JSON shape`; read errors
/// as they are.
pub(crate) fn bad_body(e: ScanError, what: &str, start: &[u8]) -> SourceError {
    match e {
        ScanError::Failed(e) => e,
        ScanError::Syntax(m) => SourceError::BadBody(format!(
            "not JSON ({m}): {}",
            super::fetch::looks_like(start)
        )),
        ScanError::Shape(m) => SourceError::BadBody(format!("not the {what} JSON shape ({m})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every string and number of `doc`, skipping nothing, as text.
    fn walk(doc: &str) -> std::result::Result<Vec<String>, String> {
        let mut r = doc.as_bytes();
        let mut s = Scanner::new(&mut r);
        let mut out = Vec::new();
        fn value(s: &mut Scanner, out: &mut Vec<String>) -> Result<(), ScanError> {
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
            walk(
                r#" {"a": [1, -2.5e3, "x\/y\u00e9\ud83d\ude00", true, null, {}], "b": {"c": []}} "#
            )
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
    fn shapes_and_snippets() {
        let mut r: &[u8] = b"[1]";
        let mut s = Scanner::new(&mut r);
        let e = s.begin_object().unwrap_err();
        let e = bad_body(e.into(), "RIPEstat", s.start());
        assert_eq!(
            e.to_string(),
            "unexpected answer: not the RIPEstat JSON shape (expected an object at byte 0, \
             found a list)"
        );
        let mut r: &[u8] = b"<html>maintenance</html>";
        let mut s = Scanner::new(&mut r);
        let e = bad_body(s.begin_object().unwrap_err().into(), "RIPEstat", s.start());
        assert_eq!(
            e.to_string(),
            "unexpected answer: not JSON (expected value at byte 0): an HTML page"
        );
    }

    #[test]
    fn syntax_errors_are_the_document_parsers() {
        // One tokenizer: an answer that is not JSON is told as `config.json` would be,
        // with the offset of the byte instead of a line and column.
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
                format!("Syntax(\"{} at byte {at}\")", want.message()),
                "{bad}"
            );
        }
    }
}
