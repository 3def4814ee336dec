//! Parsing a whole JSON document into a [`Value`], with serde_json's error messages
//! and positions (the line, and the column of the offending byte, 1-based; at the end
//! of the text, the column of its last byte).

use super::{Map, Number, Value};

/// Deepest nesting of arrays and objects accepted by [`parse`]: what serde_json
/// allowed, far more than any of our files, and few enough that what recurses over
/// a document (writing, sorting, dropping it) stays small on an API thread's stack.
pub const MAX_DEPTH: usize = 128;

/// Why a text is not a JSON document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonError {
    /// The text breaks JSON's grammar (or nests too deeply) at `line`, `column`.
    #[error("{message} at line {line} column {column}")]
    Syntax {
        message: &'static str,
        line: usize,
        column: usize,
    },
}

impl JsonError {
    /// What is wrong, without the position.
    pub fn message(&self) -> &'static str {
        let JsonError::Syntax { message, .. } = self;
        message
    }

    pub fn line(&self) -> usize {
        let JsonError::Syntax { line, .. } = self;
        *line
    }

    pub fn column(&self) -> usize {
        let JsonError::Syntax { column, .. } = self;
        *column
    }
}

type Result<T> = std::result::Result<T, JsonError>;

/// Parses one JSON document (whitespace around it allowed, nothing else).
pub fn parse(text: impl AsRef<[u8]>) -> Result<Value> {
    parse_with_depth(text.as_ref(), MAX_DEPTH)
}

/// [`parse`] with a lower nesting limit (request bodies).
pub fn parse_with_depth(text: &[u8], max_depth: usize) -> Result<Value> {
    let mut p = Parser {
        b: text,
        i: 0,
        depth: 0,
        max_depth,
    };
    let v = p.value()?;
    match p.ws() {
        None => Ok(v),
        Some(_) => p.fail(p.i, "trailing characters"),
    }
}

/// A container being read: its items so far, or its members and the key of the
/// member whose value comes next.
enum Open {
    Array(Vec<Value>),
    Object(Vec<(String, Value)>, String),
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
    max_depth: usize,
}

const EOF_VALUE: &str = "EOF while parsing a value";
const EOF_OBJECT: &str = "EOF while parsing an object";
const EOF_LIST: &str = "EOF while parsing a list";
const EOF_STRING: &str = "EOF while parsing a string";

impl Parser<'_> {
    /// An error about the byte at `at` (the end of the text when past it).
    fn fail<T>(&self, at: usize, message: &'static str) -> Result<T> {
        let end = (at + 1).min(self.b.len());
        let before = &self.b[..end];
        let line_start = before
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |p| p + 1);
        Err(JsonError::Syntax {
            message,
            line: 1 + before[..line_start].iter().filter(|&&c| c == b'\n').count(),
            column: end - line_start,
        })
    }

    /// Skips whitespace; the next byte.
    fn ws(&mut self) -> Option<u8> {
        while let Some(&c) = self.b.get(self.i) {
            if !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(c);
            }
            self.i += 1;
        }
        None
    }

    /// A whole value, containers included. Iterative, with the open containers on
    /// the heap: the thread's stack does not limit the depth, `max_depth` does.
    fn value(&mut self) -> Result<Value> {
        let mut open: Vec<Open> = Vec::new();
        loop {
            let Some(mut v) = self.start(&mut open)? else {
                continue;
            };
            // Give the value to the containers it completes.
            loop {
                let Some(parent) = open.last_mut() else {
                    return Ok(v);
                };
                match self.next_member(parent, v)? {
                    None => break,
                    Some(done) => {
                        open.pop();
                        self.depth -= 1;
                        v = done;
                    }
                }
            }
        }
    }

    /// The start of a value: a scalar or an empty container, else `None` after
    /// opening a container (and reading its first key).
    fn start(&mut self, open: &mut Vec<Open>) -> Result<Option<Value>> {
        let v = match self.ws() {
            None => return self.fail(self.i, EOF_VALUE),
            Some(c @ (b'{' | b'[')) => {
                self.i += 1;
                self.depth += 1;
                if self.depth > self.max_depth {
                    return self.fail(self.i - 1, "nested too deeply");
                }
                if c == b'[' {
                    match self.ws() {
                        None => return self.fail(self.i, EOF_LIST),
                        Some(b']') => Value::Array(Vec::new()),
                        Some(_) => {
                            open.push(Open::Array(Vec::new()));
                            return Ok(None);
                        }
                    }
                } else if self.ws() == Some(b'}') {
                    Value::Object(Map::new())
                } else {
                    let key = self.key()?;
                    open.push(Open::Object(Vec::new(), key));
                    return Ok(None);
                }
            }
            Some(b'"') => {
                self.i += 1;
                return Ok(Some(Value::String(self.string()?)));
            }
            Some(b't') => return self.word("true", Value::Bool(true)).map(Some),
            Some(b'f') => return self.word("false", Value::Bool(false)).map(Some),
            Some(b'n') => return self.word("null", Value::Null).map(Some),
            Some(b'-' | b'0'..=b'9') => return self.number().map(Some),
            Some(_) => return self.fail(self.i, "expected value"),
        };
        // The closing bracket of an empty container.
        self.i += 1;
        self.depth -= 1;
        Ok(Some(v))
    }

    /// Adds `v` to the open container `parent`, then reads the separator: the
    /// container when it ends there, `None` when another member follows.
    fn next_member(&mut self, parent: &mut Open, v: Value) -> Result<Option<Value>> {
        let (close, eof, expected) = match parent {
            Open::Array(items) => {
                items.push(v);
                (b']', EOF_LIST, "expected `,` or `]`")
            }
            Open::Object(members, key) => {
                members.push((std::mem::take(key), v));
                (b'}', EOF_OBJECT, "expected `,` or `}`")
            }
        };
        match self.ws() {
            Some(b',') => {
                self.i += 1;
                match self.ws() {
                    Some(c) if c == close => return self.fail(self.i, "trailing comma"),
                    None => return self.fail(self.i, EOF_VALUE),
                    Some(_) => {}
                }
                if let Open::Object(_, key) = parent {
                    *key = self.key()?;
                }
                Ok(None)
            }
            Some(c) if c == close => {
                self.i += 1;
                Ok(Some(
                    match std::mem::replace(parent, Open::Array(Vec::new())) {
                        Open::Array(items) => Value::Array(items),
                        Open::Object(members, _) => Value::Object(Map {
                            members,
                            sorted: false,
                        }),
                    },
                ))
            }
            None => self.fail(self.i, eof),
            Some(_) => self.fail(self.i, expected),
        }
    }

    /// A member's key and its colon.
    fn key(&mut self) -> Result<String> {
        match self.ws() {
            Some(b'"') => self.i += 1,
            None => return self.fail(self.i, EOF_OBJECT),
            Some(_) => return self.fail(self.i, "key must be a string"),
        }
        let key = self.string()?;
        match self.ws() {
            Some(b':') => self.i += 1,
            None => return self.fail(self.i, EOF_OBJECT),
            Some(_) => return self.fail(self.i, "expected `:`"),
        }
        Ok(key)
    }

    fn word(&mut self, word: &str, v: Value) -> Result<Value> {
        for &w in word.as_bytes() {
            match self.b.get(self.i) {
                None => return self.fail(self.i, EOF_VALUE),
                Some(&c) if c != w => return self.fail(self.i, "expected ident"),
                Some(_) => self.i += 1,
            }
        }
        Ok(v)
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        self.i - start
    }

    /// At least one digit, else an error.
    fn some_digits(&mut self) -> Result<()> {
        match self.b.get(self.i) {
            None => self.fail(self.i, EOF_VALUE),
            Some(_) if self.digits() == 0 => self.fail(self.i, "invalid number"),
            Some(_) => Ok(()),
        }
    }

    fn number(&mut self) -> Result<Value> {
        let start = self.i;
        if self.b[self.i] == b'-' {
            self.i += 1;
        }
        if self.b.get(self.i) == Some(&b'0') {
            self.i += 1;
            if self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
                return self.fail(self.i, "invalid number");
            }
        } else {
            self.some_digits()?;
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            self.some_digits()?;
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            self.some_digits()?;
        }
        // Only ASCII digits and signs: always UTF-8.
        let text = std::str::from_utf8(&self.b[start..self.i]).unwrap_or_default();
        Ok(Value::Number(Number(text.into())))
    }

    /// The rest of a string whose opening quote was read.
    fn string(&mut self) -> Result<String> {
        let mut out = Vec::new();
        loop {
            let start = self.i;
            while let Some(&c) = self.b.get(self.i) {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.i += 1;
            }
            out.extend_from_slice(&self.b[start..self.i]);
            match self.b.get(self.i) {
                None => return self.fail(self.i, EOF_STRING),
                Some(b'"') => break,
                Some(b'\\') => self.escape(&mut out)?,
                Some(_) => {
                    return self.fail(
                        self.i,
                        "control character (\\u0000-\\u001F) found while parsing a string",
                    )
                }
            }
        }
        self.i += 1;
        String::from_utf8(out).or_else(|_| self.fail(self.i - 1, "invalid unicode code point"))
    }

    /// One escape; `self.i` is at its backslash.
    fn escape(&mut self, out: &mut Vec<u8>) -> Result<()> {
        self.i += 1;
        let c = match self.b.get(self.i) {
            None => return self.fail(self.i, EOF_STRING),
            Some(&c) => c,
        };
        self.i += 1;
        let byte = match c {
            b'"' | b'\\' | b'/' => c,
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let ch = self.unicode()?;
                out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                return Ok(());
            }
            _ => return self.fail(self.i - 1, "invalid escape"),
        };
        out.push(byte);
        Ok(())
    }

    /// The character of a `\u` escape (and of the `\u` of its low surrogate).
    fn unicode(&mut self) -> Result<char> {
        let hi = self.hex4()?;
        let code = match hi {
            0xd800..=0xdbff => {
                if self.b.get(self.i..self.i + 2) != Some(b"\\u") {
                    return self.fail(self.i, "unexpected end of hex escape");
                }
                self.i += 2;
                let lo = self.hex4()?;
                if !(0xdc00..=0xdfff).contains(&lo) {
                    return self.fail(self.i - 1, "lone leading surrogate in hex escape");
                }
                0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
            }
            0xdc00..=0xdfff => {
                return self.fail(self.i - 1, "lone trailing surrogate in hex escape")
            }
            _ => hi,
        };
        char::from_u32(code).map_or_else(|| self.fail(self.i - 1, "invalid unicode code point"), Ok)
    }

    fn hex4(&mut self) -> Result<u32> {
        let Some(digits) = self.b.get(self.i..self.i + 4) else {
            return self.fail(self.b.len(), EOF_STRING);
        };
        self.i += 4;
        let mut n = 0;
        for &c in digits {
            match (c as char).to_digit(16) {
                Some(d) => n = n * 16 + d,
                // serde_json pointed at the escape's last digit.
                None => return self.fail(self.i - 1, "invalid escape"),
            }
        }
        Ok(n)
    }
}
