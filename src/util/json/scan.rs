//! A small pull parser for JSON read as it streams: upstreams' answers and the legacy
//! import's files.
//!
//! Memory is bounded whatever the text: an 8 KiB read buffer, strings kept only up
//! to [`MAX_TEXT`] bytes (longer ones are read through and reported as too long),
//! nesting up to [`MAX_DEPTH`], and nothing else. The callers walk the document with
//! [`Scanner::next_key`] / [`Scanner::next_item`] and skip what they do not need with
//! [`Scanner::skip`], so a 16 MiB answer of `{}` entries costs no more than one of
//! real prefixes (serde_json's `Value`, or a `Vec` of entries, cost 150 MB for it).

// The RIPEstat time and the first bytes are for the collect readers only.
#![cfg_attr(not(feature = "collect"), allow(dead_code))]

use std::io::{self, Read};

/// Longest string (key or value) kept; longer ones are skipped. Prefixes, addresses
/// and keys are far shorter; messages are cut for the log anyway.
pub(crate) const MAX_TEXT: usize = 512;

/// Deepest nesting of objects and arrays accepted.
pub(crate) const MAX_DEPTH: usize = 64;

/// Bytes read from the body at a time.
const BUFFER: usize = 8 << 10;

/// Why a document could not be read.
#[derive(Debug)]
pub(crate) enum ScanError {
    /// Reading failed (timeout, too large, connection lost ...), or the caller
    /// refused a value (too many): the caller's error rides inside.
    Failed(io::Error),
    /// Not JSON.
    Syntax(String),
    /// JSON, but not the shape the caller expects.
    Shape(String),
}

/// What kind of value comes next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    Object,
    Array,
    String,
    Number,
    Bool,
    Null,
}

impl Next {
    fn name(self) -> &'static str {
        match self {
            Next::Object => "an object",
            Next::Array => "a list",
            Next::String => "a string",
            Next::Number => "a number",
            Next::Bool => "true or false",
            Next::Null => "null",
        }
    }
}

/// The pull parser over one body.
pub(crate) struct Scanner<'r> {
    src: &'r mut dyn Read,
    buf: Box<[u8]>,
    pos: usize,
    len: usize,
    /// Bytes consumed before `buf[0]`, for error positions.
    offset: u64,
    /// The first bytes of the body, for error messages.
    start: Vec<u8>,
    /// The last string read (keys and values), at most [`MAX_TEXT`] bytes.
    text: Vec<u8>,
    /// Per open container: whether its first member is still to come.
    first: Vec<bool>,
    /// The time a RIPEstat `data` says its data is of (`latest_time`, else
    /// `query_time`), noted by the data readers with [`Scanner::note_time`].
    pub(crate) data_time: Option<String>,
}

type Result<T> = std::result::Result<T, ScanError>;

impl<'r> Scanner<'r> {
    /// A scanner reading `src`.
    pub(crate) fn new(src: &'r mut dyn Read) -> Scanner<'r> {
        Scanner {
            src,
            buf: vec![0; BUFFER].into_boxed_slice(),
            pos: 0,
            len: 0,
            offset: 0,
            start: Vec::new(),
            text: Vec::new(),
            first: Vec::new(),
            data_time: None,
        }
    }

    /// The first bytes of the body, for error messages.
    pub(crate) fn start(&self) -> &[u8] {
        &self.start
    }

    /// The next byte without consuming it; `None` at the end of the body.
    fn peek_byte(&mut self) -> Result<Option<u8>> {
        if self.pos == self.len {
            self.offset += self.len as u64;
            (self.pos, self.len) = (0, 0);
            let n = loop {
                match self.src.read(&mut self.buf) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(ScanError::Failed(e)),
                }
            };
            if self.start.len() < 64 {
                let keep = n.min(64 - self.start.len());
                self.start.extend_from_slice(&self.buf[..keep]);
            }
            self.len = n;
            if n == 0 {
                return Ok(None);
            }
        }
        Ok(Some(self.buf[self.pos]))
    }

    /// The next byte, consumed; the end of the body is a syntax error.
    fn byte(&mut self) -> Result<u8> {
        match self.peek_byte()? {
            Some(b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(self.syntax("the text ends too early")),
        }
    }

    fn syntax(&self, what: &str) -> ScanError {
        ScanError::Syntax(format!("{what} at byte {}", self.offset + self.pos as u64))
    }

    /// Skips white space; the next byte, not consumed.
    fn skip_ws(&mut self) -> Result<Option<u8>> {
        loop {
            match self.peek_byte()? {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.pos += 1,
                other => return Ok(other),
            }
        }
    }

    /// What kind of value comes next.
    pub(crate) fn peek(&mut self) -> Result<Next> {
        Ok(match self.skip_ws()? {
            Some(b'{') => Next::Object,
            Some(b'[') => Next::Array,
            Some(b'"') => Next::String,
            Some(b'-' | b'0'..=b'9') => Next::Number,
            Some(b't' | b'f') => Next::Bool,
            Some(b'n') => Next::Null,
            Some(_) => return Err(self.syntax("expected a value")),
            None => return Err(self.syntax("expected a value, the text ends")),
        })
    }

    /// A shape error: `what` was expected where something else is.
    pub(crate) fn expected(&mut self, what: &str) -> ScanError {
        match self.peek() {
            Ok(found) => ScanError::Shape(format!(
                "expected {what} at byte {}, found {}",
                self.offset + self.pos as u64,
                found.name()
            )),
            Err(e) => e,
        }
    }

    fn open(&mut self, kind: Next, byte: u8) -> Result<()> {
        if self.peek()? != kind {
            return Err(self.expected(kind.name()));
        }
        if self.first.len() >= MAX_DEPTH {
            return Err(self.syntax(&format!("nested deeper than {MAX_DEPTH} levels")));
        }
        let b = self.byte()?;
        debug_assert_eq!(b, byte);
        self.first.push(true);
        Ok(())
    }

    /// Enters an object (a shape error when the next value is not one).
    pub(crate) fn begin_object(&mut self) -> Result<()> {
        self.open(Next::Object, b'{')
    }

    /// Enters a list (a shape error when the next value is not one).
    pub(crate) fn begin_array(&mut self) -> Result<()> {
        self.open(Next::Array, b'[')
    }

    /// Moves to the next member of the current container: `false` (and the
    /// container is left) at its end.
    fn next_member(&mut self, close: u8) -> Result<bool> {
        let first = self.first.last().copied().unwrap_or(false);
        let b = self.skip_ws()?;
        if b == Some(close) {
            self.pos += 1;
            self.first.pop();
            return Ok(false);
        }
        if !first {
            if b != Some(b',') {
                return Err(self.syntax("expected , or the end of the object or list"));
            }
            self.pos += 1;
        }
        if let Some(f) = self.first.last_mut() {
            *f = false;
        }
        Ok(true)
    }

    /// The next key of the current object (`None` at its end, which is left). A key
    /// longer than [`MAX_TEXT`] comes back as `""`, which matches no wanted key.
    pub(crate) fn next_key(&mut self) -> Result<Option<&str>> {
        if !self.next_member(b'}')? {
            return Ok(None);
        }
        if self.skip_ws()? != Some(b'"') {
            return Err(self.syntax("expected a key"));
        }
        let kept = self.read_string()?;
        if self.skip_ws()? != Some(b':') {
            return Err(self.syntax("expected : after a key"));
        }
        self.pos += 1;
        Ok(Some(if kept { self.text_str()? } else { "" }))
    }

    /// Whether the current list has another item (`false` at its end, which is left).
    pub(crate) fn next_item(&mut self) -> Result<bool> {
        self.next_member(b']')
    }

    /// Reads a string value: `Some(text)`, or `None` when longer than [`MAX_TEXT`].
    /// A shape error when the next value is not a string.
    pub(crate) fn string(&mut self) -> Result<Option<&str>> {
        if self.peek()? != Next::String {
            return Err(self.expected("a string"));
        }
        match self.read_string()? {
            true => self.text_str().map(Some),
            false => Ok(None),
        }
    }

    fn text_str(&self) -> Result<&str> {
        std::str::from_utf8(&self.text).map_err(|_| self.syntax("a string is not UTF-8"))
    }

    /// Reads a number: its text (a shape error when the next value is not one).
    pub(crate) fn number(&mut self) -> Result<&str> {
        if self.peek()? != Next::Number {
            return Err(self.expected("a number"));
        }
        self.text.clear();
        while let Some(b @ (b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')) = self.peek_byte()? {
            if self.text.len() >= 64 {
                return Err(self.syntax("number too long"));
            }
            self.text.push(b);
            self.pos += 1;
        }
        let text = self.text_str()?;
        if !valid_number(text) {
            return Err(self.syntax("bad number"));
        }
        Ok(text)
    }

    /// Reads `true`, `false` or `null`.
    fn literal(&mut self) -> Result<()> {
        let word: &[u8] = match self.peek_byte()? {
            Some(b't') => b"true",
            Some(b'f') => b"false",
            _ => b"null",
        };
        for &want in word {
            if self.byte()? != want {
                return Err(self.syntax("expected true, false or null"));
            }
        }
        Ok(())
    }

    /// Skips the next value, whatever it is (nesting bounded by [`MAX_DEPTH`]).
    pub(crate) fn skip(&mut self) -> Result<()> {
        match self.peek()? {
            Next::Object => {
                self.begin_object()?;
                while self.next_key()?.is_some() {
                    self.skip()?;
                }
            }
            Next::Array => {
                self.begin_array()?;
                while self.next_item()? {
                    self.skip()?;
                }
            }
            Next::String => {
                self.read_string()?;
            }
            Next::Number => {
                self.number()?;
            }
            Next::Bool | Next::Null => self.literal()?,
        }
        Ok(())
    }

    /// Reads the value of `data.latest_time` or `data.query_time` (`key`) into
    /// `data_time`, `latest_time` first; anything but a string is skipped.
    pub(crate) fn note_time(&mut self, key_is_latest: bool) -> Result<()> {
        if self.peek()? != Next::String {
            return self.skip();
        }
        let t = self.string()?.map(str::to_string);
        if key_is_latest || self.data_time.is_none() {
            self.data_time = t;
        }
        Ok(())
    }

    /// Whether the next value is `null`; it is consumed if so.
    pub(crate) fn null(&mut self) -> Result<bool> {
        if self.peek()? == Next::Null {
            self.literal()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// After the top-level value: only white space may follow.
    pub(crate) fn end(&mut self) -> Result<()> {
        match self.skip_ws()? {
            None => Ok(()),
            Some(_) => Err(self.syntax("unexpected text after the document")),
        }
    }

    /// Reads a string (at its opening quote) into `text`, decoding escapes; `false`
    /// when it was longer than [`MAX_TEXT`] (read through, not kept).
    fn read_string(&mut self) -> Result<bool> {
        self.pos += 1;
        self.text.clear();
        let mut kept = true;
        loop {
            let mut utf8 = [0; 4];
            let piece: &[u8] = match self.byte()? {
                b'"' => return Ok(kept),
                b'\\' => self.escape()?.encode_utf8(&mut utf8).as_bytes(),
                0..=0x1f => return Err(self.syntax("control character in a string")),
                b => {
                    utf8[0] = b;
                    &utf8[..1]
                }
            };
            if kept && self.text.len() + piece.len() > MAX_TEXT {
                kept = false;
                self.text.clear();
            }
            if kept {
                self.text.extend_from_slice(piece);
            }
        }
    }

    /// Decodes one escape after its backslash.
    fn escape(&mut self) -> Result<char> {
        let c = match self.byte()? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = self.hex4()?;
                let code = if (0xD800..0xDC00).contains(&hi) {
                    if self.byte()? != b'\\' || self.byte()? != b'u' {
                        return Err(self.syntax("lone surrogate in a \\u escape"));
                    }
                    let lo = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&lo) {
                        return Err(self.syntax("lone surrogate in a \\u escape"));
                    }
                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                } else {
                    hi
                };
                char::from_u32(code).ok_or_else(|| self.syntax("bad \\u escape"))?
            }
            _ => return Err(self.syntax("bad escape in a string")),
        };
        Ok(c)
    }

    fn hex4(&mut self) -> Result<u32> {
        let mut n = 0;
        for _ in 0..4 {
            let d = (self.byte()? as char)
                .to_digit(16)
                .ok_or_else(|| self.syntax("bad \\u escape"))?;
            n = n * 16 + d;
        }
        Ok(n)
    }
}

/// Whether `s` is a JSON number: `-? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?`.
fn valid_number(s: &str) -> bool {
    let s = s.strip_prefix('-').unwrap_or(s).as_bytes();
    let digits = |s: &[u8]| s.iter().take_while(|b| b.is_ascii_digit()).count();
    let int = digits(s);
    if int == 0 || (int > 1 && s[0] == b'0') {
        return false;
    }
    let mut rest = &s[int..];
    if let Some(frac) = rest.strip_prefix(b".") {
        let n = digits(frac);
        if n == 0 {
            return false;
        }
        rest = &frac[n..];
    }
    if let Some(exp) = rest.strip_prefix(b"e").or_else(|| rest.strip_prefix(b"E")) {
        let exp = exp
            .strip_prefix(b"+")
            .or_else(|| exp.strip_prefix(b"-"))
            .unwrap_or(exp);
        let n = digits(exp);
        if n == 0 {
            return false;
        }
        rest = &exp[n..];
    }
    rest.is_empty()
}

#[cfg(test)]
mod tests {
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
        assert!(walk(&deep).unwrap_err().contains("nested deeper"));
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(walk(&ok).is_ok());
    }
}
