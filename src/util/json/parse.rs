//! Parsing a whole JSON document into a [`Value`], built from the events of the one
//! tokenizer ([`super::scan::Scanner`]), with serde_json's error messages and positions (the
//! line, and the column of the offending byte, 1-based; at the end of the text, the
//! column of its last byte).

use super::scan::{Next, ScanError, Scanner};
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

/// Parses one JSON document (whitespace around it allowed, nothing else).
pub fn parse(text: impl AsRef<[u8]>) -> Result<Value, JsonError> {
    parse_with_depth(text.as_ref(), MAX_DEPTH)
}

/// [`parse`] with a lower nesting limit (request bodies).
pub fn parse_with_depth(text: &[u8], max_depth: usize) -> Result<Value, JsonError> {
    read(text, max_depth, None)
}

/// A key given more than once within one object, the line and column where its
/// repetition starts.
pub type Repeated = (String, usize, usize);

/// [`parse`], and the first key repeated within one object at any depth ("first" in
/// document order: the repetition that starts earliest). The value keeps the last of
/// them, so a rewrite of `config.json` would drop the others silently; keys are
/// compared as read, escapes decoded (`"a\u0062"` repeats `"ab"`). Each object's keys
/// are sorted when it closes (no hash table code on flash): O(n log n).
pub fn parse_repeats(text: &[u8]) -> Result<(Value, Option<Repeated>), JsonError> {
    let mut first = None;
    let v = read(text, MAX_DEPTH, Some(&mut first))?;
    let repeated = first.map(|(key, at)| {
        let (line, column) = line_column(text, at);
        (key, line, column)
    });
    Ok((v, repeated))
}

fn read(text: &[u8], max_depth: usize, repeats: Option<&mut Repeat>) -> Result<Value, JsonError> {
    let mut r = Scanner::of_text(text, max_depth);
    let v = tree(&mut r, repeats).and_then(|v| r.end().map(|_| v));
    v.map_err(|e| {
        // Reading a slice fails for nothing else, and `tree` asks for no shape.
        let (message, at) = match e {
            ScanError::Syntax(m, at) => (m, at),
            _ => ("expected value", 0),
        };
        let (line, column) = line_column(text, at);
        JsonError::Syntax {
            message,
            line,
            column,
        }
    })
}

/// The line and column of the byte at `at` (the last byte when past the end).
fn line_column(text: &[u8], at: u64) -> (usize, usize) {
    let at = usize::try_from(at).unwrap_or(usize::MAX);
    let end = at.saturating_add(1).min(text.len());
    let before = &text[..end];
    let line_start = before
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |p| p + 1);
    let line = 1 + before[..line_start].iter().filter(|&&c| c == b'\n').count();
    (line, end - line_start)
}

/// The earliest repetition of a key found so far, and where it starts.
type Repeat = Option<(String, u64)>;

/// A container being read: its items so far, or its members, the key of the member
/// whose value comes next, and (when repeats are looked for) where each key starts.
enum Open {
    Array(Vec<Value>),
    Object(Vec<(String, Value)>, String, Vec<u64>),
}

/// A whole value, containers included. Iterative, with the open containers on the
/// heap: the thread's stack does not limit the depth, the reader's `max_depth` does.
pub(super) fn tree(r: &mut Scanner, mut repeats: Option<&mut Repeat>) -> Result<Value, ScanError> {
    let mut open: Vec<Open> = Vec::new();
    loop {
        let mut item = match r.peek()? {
            Next::Object => {
                r.begin_object()?;
                open.push(Open::Object(Vec::new(), String::new(), Vec::new()));
                None
            }
            Next::Array => {
                r.begin_array()?;
                open.push(Open::Array(Vec::new()));
                None
            }
            Next::String => Some(Value::String(r.string()?.unwrap_or_default().into())),
            Next::Number => Some(Value::Number(Number(r.number()?.into()))),
            Next::Bool => Some(Value::Bool(r.boolean()?)),
            Next::Null => {
                r.null()?;
                Some(Value::Null)
            }
        };
        // Give the value to its container, and close the containers that end here.
        loop {
            let Some(top) = open.last_mut() else {
                return Ok(item.unwrap_or_default());
            };
            let more = match top {
                Open::Array(items) => {
                    items.extend(item.take());
                    r.next_item()?
                }
                Open::Object(members, key, starts) => {
                    if let Some(v) = item.take() {
                        members.push((std::mem::take(key), v));
                    }
                    let next = r.next_key()?.map(str::to_string);
                    if let (Some(_), Some(_)) = (&next, &repeats) {
                        starts.push(r.string_at());
                    }
                    next.map(|k| *key = k).is_some()
                }
            };
            if more {
                break;
            }
            item = Some(match open.pop() {
                Some(Open::Object(members, _, starts)) => {
                    if let Some(first) = repeats.as_deref_mut() {
                        note_repeat(first, &members, &starts);
                    }
                    Value::Object(Map {
                        members,
                        sorted: false,
                    })
                }
                Some(Open::Array(items)) => Value::Array(items),
                None => Value::Null,
            });
        }
    }
}

/// Keeps in `first` the earliest repetition among one object's keys (a key's second
/// or later occurrence), which start at `starts`.
fn note_repeat(first: &mut Repeat, members: &[(String, Value)], starts: &[u64]) {
    let mut keys: Vec<(&str, usize)> = members.iter().map(|m| m.0.as_str()).zip(0..).collect();
    // Of equal keys, the earlier comes first, so each pair's second is a repetition.
    crate::util::sort::sort(&mut keys);
    let again = keys.windows(2).filter(|w| w[0].0 == w[1].0);
    let Some(i) = again.map(|w| w[1].1).min() else {
        return;
    };
    if first.as_ref().is_none_or(|(_, at)| starts[i] < *at) {
        *first = Some((members[i].0.clone(), starts[i]));
    }
}

/// The fuzz target's check of the tokenizer's buffering: `text` read in pieces of
/// `piece` bytes (as a socket gives it) is what [`parse`] reads, errors and their
/// positions included.
#[cfg(fuzzing)]
pub fn fuzz_pieces(text: &[u8], piece: usize) {
    struct Pieces<'a>(&'a [u8], usize);
    impl std::io::Read for Pieces<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(buf.len()).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let mut src = Pieces(text, piece.max(1));
    let mut r = Scanner::with_limits(&mut src, MAX_DEPTH, usize::MAX);
    let pieces = tree(&mut r, None).and_then(|v| r.end().map(|_| v));
    match (pieces, parse(text)) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(ScanError::Syntax(m, at)), Err(e)) => {
            assert_eq!(
                (m, line_column(text, at)),
                (e.message(), (e.line(), e.column()))
            );
        }
        (a, b) => panic!("in pieces {a:?}, whole {b:?}"),
    }
}
