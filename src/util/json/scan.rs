//! The one JSON tokenizer: a pull parser over any [`Read`], which the document parser
//! ([`super::parse`]) builds trees with, and which upstreams' answers and the legacy
//! import's files are walked with as they stream.
//!
//! Memory is bounded whatever the text: an 8 KiB read buffer, strings and numbers
//! kept up to a limit (longer strings are read through and reported as too long,
//! longer numbers are an error), nesting up to a limit, and nothing else. Callers walk
//! the document with [`Scanner::next_key`] / [`Scanner::next_item`] and skip what they
//! do not need with [`Scanner::skip`], so a 16 MiB answer of `{}` entries costs no
//! more than one of real prefixes (serde_json's `Value`, or a `Vec` of entries, cost
//! 150 MB for it).
//!
//! Syntax errors carry serde_json's messages (the document parser's tests hold it to
//! serde_json) and the offset of the offending byte; [`super::parse`] turns that into
//! a line and column, the streaming readers say "at byte N".

// The RIPEstat time and the first bytes are for the collect readers only.
#![cfg_attr(not(feature = "collect"), allow(dead_code))]

use std::borrow::Cow;
use std::io::{self, Read};

/// Longest string (key or value) kept when streaming; longer ones are skipped.
/// Prefixes, addresses and keys are far shorter; messages are cut for the log anyway.
pub(crate) const MAX_TEXT: usize = 512;

/// Deepest nesting of objects and arrays accepted when streaming.
pub(crate) const MAX_DEPTH: usize = 64;

/// Bytes read from the source at a time.
const BUFFER: usize = 8 << 10;

const EOF_VALUE: &str = "EOF while parsing a value";
const EOF_OBJECT: &str = "EOF while parsing an object";
const EOF_LIST: &str = "EOF while parsing a list";
const EOF_STRING: &str = "EOF while parsing a string";
const BAD_ESCAPE: &str = "invalid escape";
const BAD_NUMBER: &str = "invalid number";

/// Why a document could not be read.
#[derive(Debug)]
pub(crate) enum ScanError {
    /// Reading failed (timeout, too large, connection lost ...), or the caller
    /// refused a value (too many): the caller's error rides inside.
    Failed(io::Error),
    /// Not JSON: what is wrong, and the offset of the byte where it is (the end of
    /// the input when it ends too early).
    Syntax(&'static str, u64),
    /// JSON, but not the shape the caller expects (`expected an object at byte 0,
    /// found a list`).
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

type Result<T> = std::result::Result<T, ScanError>;

/// The pull parser over one input.
pub(crate) struct Scanner<'r> {
    /// The reader, or `None` for a text held whole in `buf`.
    src: Option<&'r mut dyn Read>,
    /// The read buffer, or the whole text: a slice is not read through `dyn Read`,
    /// which would compile a vtable of `&[u8]`'s reading methods (1 KB).
    buf: Cow<'r, [u8]>,
    pos: usize,
    len: usize,
    /// Bytes consumed before `buf[0]`, for error positions.
    offset: u64,
    /// The first bytes of the input, for error messages.
    start: Vec<u8>,
    /// The last string or number read, at most `max_text` bytes.
    text: Vec<u8>,
    /// Per open container: whether its first member is still to come.
    first: Vec<bool>,
    /// Where the last string read starts (its opening quote).
    string_at: u64,
    max_depth: usize,
    max_text: usize,
    /// A RIPEstat `data`'s `latest_time` (what its data is of) and `query_time`
    /// (when it was asked, the freshness reference of an answer without `time`),
    /// noted by the data readers with [`Scanner::note_time`].
    pub(crate) latest_time: Option<String>,
    pub(crate) query_time: Option<String>,
}

impl<'r> Scanner<'r> {
    /// A scanner of a streamed text (an answer, a legacy file): [`MAX_DEPTH`] levels,
    /// strings up to [`MAX_TEXT`] bytes.
    pub(crate) fn new(src: &'r mut dyn Read) -> Scanner<'r> {
        Scanner::with_limits(src, MAX_DEPTH, MAX_TEXT)
    }

    /// A scanner of `src` that accepts `max_depth` levels of nesting and keeps
    /// strings and numbers up to `max_text` bytes.
    pub(crate) fn with_limits(src: &'r mut dyn Read, max_depth: usize, max_text: usize) -> Self {
        let buf = Cow::Owned(vec![0; BUFFER]);
        Scanner::make(Some(src), buf, max_depth, max_text)
    }

    /// A scanner of a text held whole, `max_depth` levels, strings of any length
    /// (the caller bounds the text).
    pub(crate) fn of_text(text: &'r [u8], max_depth: usize) -> Self {
        let mut s = Scanner::make(None, Cow::Borrowed(text), max_depth, usize::MAX);
        s.len = text.len();
        s
    }

    fn make(src: Option<&'r mut dyn Read>, buf: Cow<'r, [u8]>, depth: usize, text: usize) -> Self {
        Scanner {
            src,
            buf,
            pos: 0,
            len: 0,
            offset: 0,
            start: Vec::new(),
            text: Vec::new(),
            first: Vec::new(),
            string_at: 0,
            max_depth: depth,
            max_text: text,
            latest_time: None,
            query_time: None,
        }
    }

    /// The first bytes of the input (up to 64), for error messages.
    pub(crate) fn start(&self) -> &[u8] {
        &self.start
    }

    /// Where the last string read (a key, say) starts: the offset of its opening quote.
    pub(crate) fn string_at(&self) -> u64 {
        self.string_at
    }

    /// The offset of the next byte.
    fn here(&self) -> u64 {
        self.offset + self.pos as u64
    }

    fn fail<T>(&self, at: u64, message: &'static str) -> Result<T> {
        Err(ScanError::Syntax(message, at))
    }

    /// The next byte without consuming it; `None` at the end of the input. Inlined:
    /// it runs for nearly every byte, and the refill is rare.
    #[inline]
    fn peek_byte(&mut self) -> Result<Option<u8>> {
        if self.pos < self.len {
            return Ok(Some(self.buf[self.pos]));
        }
        Ok(self.fill()?.then(|| self.buf[0]))
    }

    /// Reads the next piece of the input into the empty buffer: `false` at its end.
    #[inline(never)]
    fn fill(&mut self) -> Result<bool> {
        self.offset += self.len as u64;
        (self.pos, self.len) = (0, 0);
        let (Some(src), Cow::Owned(buf)) = (&mut self.src, &mut self.buf) else {
            // A text held whole has nothing more.
            return Ok(false);
        };
        let n = loop {
            match src.read(buf) {
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
        Ok(n > 0)
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
            Some(_) => return self.fail(self.here(), "expected value"),
            None => return self.fail(self.here(), EOF_VALUE),
        })
    }

    /// A shape error: `what` was expected where something else is.
    pub(crate) fn expected(&mut self, what: Next) -> ScanError {
        match self.peek() {
            Ok(found) => ScanError::Shape(format!(
                "expected {} at byte {}, found {}",
                what.name(),
                self.here(),
                found.name()
            )),
            Err(e) => e,
        }
    }

    /// Enters a container of `kind` (a shape error when the next value is not one).
    fn open(&mut self, kind: Next) -> Result<()> {
        if self.peek()? != kind {
            return Err(self.expected(kind));
        }
        if self.first.len() >= self.max_depth {
            return self.fail(self.here(), "nested too deeply");
        }
        self.pos += 1;
        self.first.push(true);
        Ok(())
    }

    /// Enters an object (a shape error when the next value is not one).
    pub(crate) fn begin_object(&mut self) -> Result<()> {
        self.open(Next::Object)
    }

    /// Enters a list (a shape error when the next value is not one).
    pub(crate) fn begin_array(&mut self) -> Result<()> {
        self.open(Next::Array)
    }

    /// Moves to the next member of the current container: `false` (and the
    /// container is left) at its end.
    fn next_member(&mut self, close: u8) -> Result<bool> {
        let first = self.first.last().copied().unwrap_or(false);
        let (eof, expected) = match close {
            b']' => (EOF_LIST, "expected `,` or `]`"),
            _ => (EOF_OBJECT, "expected `,` or `}`"),
        };
        match self.skip_ws()? {
            Some(b) if b == close => {
                self.pos += 1;
                self.first.pop();
                return Ok(false);
            }
            None => return self.fail(self.here(), eof),
            Some(b',') if !first => {
                self.pos += 1;
                match self.skip_ws()? {
                    Some(b) if b == close => return self.fail(self.here(), "trailing comma"),
                    None => return self.fail(self.here(), EOF_VALUE),
                    Some(_) => {}
                }
            }
            Some(_) if !first => return self.fail(self.here(), expected),
            Some(_) => {}
        }
        if let Some(f) = self.first.last_mut() {
            *f = false;
        }
        Ok(true)
    }

    /// The next key of the current object (`None` at its end, which is left). A key
    /// longer than `max_text` comes back as `""`, which matches no wanted key.
    pub(crate) fn next_key(&mut self) -> Result<Option<&str>> {
        if !self.next_member(b'}')? {
            return Ok(None);
        }
        if self.skip_ws()? != Some(b'"') {
            return self.fail(self.here(), "key must be a string");
        }
        let kept = self.read_string(true)?;
        match self.skip_ws()? {
            Some(b':') => self.pos += 1,
            None => return self.fail(self.here(), EOF_OBJECT),
            Some(_) => return self.fail(self.here(), "expected `:`"),
        }
        Ok(Some(if kept { self.text_str() } else { "" }))
    }

    /// Whether the current list has another item (`false` at its end, which is left).
    pub(crate) fn next_item(&mut self) -> Result<bool> {
        self.next_member(b']')
    }

    /// Reads a string value: `Some(text)`, or `None` when longer than `max_text`.
    /// A shape error when the next value is not a string.
    pub(crate) fn string(&mut self) -> Result<Option<&str>> {
        if self.peek()? != Next::String {
            return Err(self.expected(Next::String));
        }
        Ok(match self.read_string(true)? {
            true => Some(self.text_str()),
            false => None,
        })
    }

    /// The text read last, checked to be UTF-8 when it was read.
    fn text_str(&self) -> &str {
        std::str::from_utf8(&self.text).unwrap_or_default()
    }

    /// Reads a number: its text (a shape error when the next value is not one).
    pub(crate) fn number(&mut self) -> Result<&str> {
        if self.peek()? != Next::Number {
            return Err(self.expected(Next::Number));
        }
        self.text.clear();
        if self.peek_byte()? == Some(b'-') {
            self.take(b'-')?;
        }
        if self.peek_byte()? == Some(b'0') {
            self.take(b'0')?;
            if self.peek_byte()?.is_some_and(|b| b.is_ascii_digit()) {
                return self.fail(self.here(), BAD_NUMBER);
            }
        } else {
            self.digits()?;
        }
        if self.peek_byte()? == Some(b'.') {
            self.take(b'.')?;
            self.digits()?;
        }
        if let Some(e @ (b'e' | b'E')) = self.peek_byte()? {
            self.take(e)?;
            if let Some(sign @ (b'+' | b'-')) = self.peek_byte()? {
                self.take(sign)?;
            }
            self.digits()?;
        }
        Ok(self.text_str())
    }

    /// Consumes `b`, a byte of a number, into `text`.
    fn take(&mut self, b: u8) -> Result<()> {
        if self.text.len() >= self.max_text {
            return self.fail(self.here(), "number too long");
        }
        self.text.push(b);
        self.pos += 1;
        Ok(())
    }

    /// One or more digits of a number.
    fn digits(&mut self) -> Result<()> {
        let mut n = 0;
        while let Some(b) = self.peek_byte()? {
            if !b.is_ascii_digit() {
                break;
            }
            self.take(b)?;
            n += 1;
        }
        match (n, self.peek_byte()?) {
            (0, None) => self.fail(self.here(), EOF_VALUE),
            (0, Some(_)) => self.fail(self.here(), BAD_NUMBER),
            _ => Ok(()),
        }
    }

    /// Reads `word` (`true`, `false` or `null`), which the next byte starts.
    fn literal(&mut self, word: &[u8]) -> Result<()> {
        for &want in word {
            match self.peek_byte()? {
                None => return self.fail(self.here(), EOF_VALUE),
                Some(b) if b != want => return self.fail(self.here(), "expected ident"),
                Some(_) => self.pos += 1,
            }
        }
        Ok(())
    }

    /// Reads `true` or `false`, which [`Scanner::peek`] said comes next.
    pub(crate) fn boolean(&mut self) -> Result<bool> {
        let t = self.peek_byte()? == Some(b't');
        self.literal(if t { b"true" } else { b"false" })?;
        Ok(t)
    }

    /// Skips the next value, whatever it is (nesting bounded by `max_depth`).
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
                self.read_string(false)?;
            }
            Next::Number => {
                self.number()?;
            }
            Next::Bool => {
                self.boolean()?;
            }
            Next::Null => self.literal(b"null")?,
        }
        Ok(())
    }

    /// Whether the next value is `null`; it is consumed if so.
    pub(crate) fn null(&mut self) -> Result<bool> {
        if self.peek()? == Next::Null {
            self.literal(b"null")?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Reads the value of `data.latest_time` or `data.query_time` (`key_is_latest`
    /// says which) into the field of that name; anything but a string is skipped.
    pub(crate) fn note_time(&mut self, key_is_latest: bool) -> Result<()> {
        if self.peek()? != Next::String {
            return self.skip();
        }
        let t = self.string()?.map(str::to_string);
        if key_is_latest {
            self.latest_time = t;
        } else {
            self.query_time = t;
        }
        Ok(())
    }

    /// After the top-level value: only white space may follow.
    pub(crate) fn end(&mut self) -> Result<()> {
        match self.skip_ws()? {
            None => Ok(()),
            Some(_) => self.fail(self.here(), "trailing characters"),
        }
    }

    /// Reads a string (at its opening quote), with `keep` into `text` (escapes
    /// decoded, checked to be UTF-8): `false` when not kept, because it is longer
    /// than `max_text` or `keep` is false (read through, not checked).
    fn read_string(&mut self, keep: bool) -> Result<bool> {
        self.string_at = self.here();
        self.pos += 1;
        self.text.clear();
        let mut kept = keep;
        loop {
            if self.pos == self.len && !self.fill()? {
                return self.fail(self.here(), EOF_STRING);
            }
            // The plain bytes up to the next quote, escape or control character.
            let rest = &self.buf[self.pos..self.len];
            let n = rest
                .iter()
                .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
                .unwrap_or(rest.len());
            kept = kept && keep_piece(&mut self.text, &rest[..n], self.max_text);
            self.pos += n;
            match self.buf[..self.len].get(self.pos) {
                None => continue,
                Some(b'"') => break,
                Some(b'\\') => {
                    let mut utf8 = [0; 4];
                    let piece = self.escape()?.encode_utf8(&mut utf8).as_bytes();
                    kept = kept && keep_piece(&mut self.text, piece, self.max_text);
                }
                Some(_) => {
                    return self.fail(
                        self.here(),
                        "control character (\\u0000-\\u001F) found while parsing a string",
                    )
                }
            }
        }
        self.pos += 1;
        if kept && std::str::from_utf8(&self.text).is_err() {
            return self.fail(self.here() - 1, "invalid unicode code point");
        }
        Ok(kept)
    }

    /// Decodes one escape, at its backslash.
    fn escape(&mut self) -> Result<char> {
        self.pos += 1;
        let Some(b) = self.peek_byte()? else {
            return self.fail(self.here(), EOF_STRING);
        };
        self.pos += 1;
        Ok(match b {
            b'"' | b'\\' | b'/' => char::from(b),
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => self.unicode()?,
            _ => return self.fail(self.here() - 1, BAD_ESCAPE),
        })
    }

    /// The character of a `\u` escape (and of the `\u` of its low surrogate).
    fn unicode(&mut self) -> Result<char> {
        let hi = self.hex4()?;
        let code = match hi {
            0xd800..=0xdbff => {
                let at = self.here();
                for want in [b'\\', b'u'] {
                    if self.peek_byte()? != Some(want) {
                        return self.fail(at, "unexpected end of hex escape");
                    }
                    self.pos += 1;
                }
                let lo = self.hex4()?;
                if !(0xdc00..=0xdfff).contains(&lo) {
                    return self.fail(self.here() - 1, "lone leading surrogate in hex escape");
                }
                0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
            }
            0xdc00..=0xdfff => {
                return self.fail(self.here() - 1, "lone trailing surrogate in hex escape")
            }
            _ => hi,
        };
        // Every code left is a character: surrogates were paired above.
        Ok(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER))
    }

    /// Four hex digits. Input that ends within them ends the string; a bad digit is
    /// reported at the last of the four, as serde_json did.
    fn hex4(&mut self) -> Result<u32> {
        let mut n = Some(0);
        for _ in 0..4 {
            let Some(b) = self.peek_byte()? else {
                return self.fail(self.here(), EOF_STRING);
            };
            self.pos += 1;
            n = n.zip(char::from(b).to_digit(16)).map(|(n, d)| n * 16 + d);
        }
        match n {
            Some(n) => Ok(n),
            None => self.fail(self.here() - 1, BAD_ESCAPE),
        }
    }
}

/// Adds `piece` to `text` unless that makes it longer than `max`: whether it fits (a
/// string that does not is dropped whole).
fn keep_piece(text: &mut Vec<u8>, piece: &[u8], max: usize) -> bool {
    if text.len() + piece.len() > max {
        text.clear();
        return false;
    }
    text.extend_from_slice(piece);
    true
}

#[cfg(test)]
mod tests;
