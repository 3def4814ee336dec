//! A small JSON module: a document tree ([`Value`]) with the accessors the readers of
//! `config.json`, `status.json`, the legacy files and API bodies need, a parser with
//! a nesting limit and errors that give line and column ([`parse`]), and a writer
//! ([`Writer`]) that answers, status files and rewrites stream through.
//!
//! It replaced serde_json (about 50 KB of code on mipsel, plus the generic code every
//! `Serialize`/`Deserialize` impl compiled). What it keeps of serde_json's behaviour,
//! because outputs are compared byte for byte: compact output without spaces, pretty
//! output indented by two spaces (`"key": value`, empty containers as `{}` and `[]`),
//! strings escaped the same way, and the same error messages for the same mistakes.
//! What differs: numbers keep the text they were written with (so a rewritten file
//! shows `1e3` as written, not `1000.0`, and no float formatting is compiled in), and
//! objects keep their members in document order, repeated keys included; readers that
//! want serde_json's sorted maps call [`Value::sort_keys`].

use std::fmt;

mod parse;
mod write;

pub use parse::{parse, parse_with_depth, JsonError, MAX_DEPTH};
pub use write::{to_string, to_string_pretty, ToJson, Writer};

/// A JSON document or a part of it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    /// A number as written (valid JSON number syntax).
    Number(Number),
    String(String),
    Array(Vec<Value>),
    Object(Map),
}

/// A JSON number, kept as its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Number(Box<str>);

impl Number {
    /// The number as a `u64` when it is written as a whole number that fits.
    pub fn as_u64(&self) -> Option<u64> {
        // `1.0`, `1e2` and `-0` are not whole numbers here, as in serde_json (the
        // parser lets no `+` or leading zero through).
        self.0.parse().ok()
    }

    /// The number as an `i64` when it is written as a whole number that fits.
    pub fn as_i64(&self) -> Option<i64> {
        self.0.parse().ok()
    }

    /// The text as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<u64> for Number {
    fn from(n: u64) -> Number {
        Number(n.to_string().into())
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The members of an object, in the order parsed or inserted. Lookups scan: the
/// objects read by key (config sections, status files) have a few dozen keys at most.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Map(Vec<(String, Value)>);

impl Map {
    pub fn new() -> Map {
        Map(Vec::new())
    }

    /// The value of the last member named `key` (as serde_json's map kept the last).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.0
            .iter_mut()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Sets `key` to `value`, in place when it exists, else appended.
    pub fn insert(&mut self, key: &str, value: Value) {
        match self.get_mut(key) {
            Some(v) => *v = value,
            None => self.0.push((key.to_string(), value)),
        }
    }

    /// The value of `key`, inserted from `make` when absent.
    pub fn get_or_insert_with(&mut self, key: &str, make: impl FnOnce() -> Value) -> &mut Value {
        let i = match self.0.iter().rposition(|(k, _)| k == key) {
            Some(i) => i,
            None => {
                self.0.push((key.to_string(), make()));
                self.0.len() - 1
            }
        };
        &mut self.0[i].1
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(k, _)| k)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The members, in order, repeated keys included.
    pub fn into_members(self) -> Vec<(String, Value)> {
        self.0
    }

    /// Members sorted by key, the last of each repeated key kept.
    fn sort(&mut self) {
        // Stable: of equal keys the one written last stays last.
        self.0.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(String, Value)> = Vec::with_capacity(self.0.len());
        for m in self.0.drain(..) {
            match out.last_mut() {
                Some(last) if last.0 == m.0 => *last = m,
                _ => out.push(m),
            }
        }
        self.0 = out;
    }
}

impl<'a> IntoIterator for &'a Map {
    type Item = (&'a String, &'a Value);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, Value)>,
        fn(&'a (String, Value)) -> (&'a String, &'a Value),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl FromIterator<(String, Value)> for Map {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Map {
        Map(iter.into_iter().collect())
    }
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Number(n) => n.as_u64(),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_array_mut(&mut self) -> Option<&mut Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_object_mut(&mut self) -> Option<&mut Map> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The member `key` of an object; `None` for a missing key or a non-object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object().and_then(|o| o.get(key))
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.as_object_mut().and_then(|o| o.get_mut(key))
    }

    /// Sorts the members of every object in the document by key, keeping the last of
    /// a repeated key: serde_json's maps did, and readers iterate in that order
    /// (groups by name, the legacy import's sources) and rewrites write it.
    pub fn sort_keys(&mut self) {
        match self {
            Value::Object(o) => {
                o.sort();
                o.0.iter_mut().for_each(|(_, v)| v.sort_keys());
            }
            Value::Array(a) => a.iter_mut().for_each(Value::sort_keys),
            _ => {}
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_string())
    }
}

impl From<u64> for Value {
    fn from(n: u64) -> Value {
        Value::Number(n.into())
    }
}

/// Compact JSON, as serde_json's `Value` printed itself (error messages show values
/// this way).
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&to_string(self))
    }
}

#[cfg(test)]
mod tests;
