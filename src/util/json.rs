//! A small JSON module: one tokenizer (`scan::Scanner`, a pull parser over any
//! `Read`, bounded in memory, which upstreams' answers and the legacy files are
//! walked with as they stream), a document tree ([`Value`]) with the accessors the
//! readers of `config.json`, `status.json` and API bodies need, a parser that builds
//! it from the tokenizer's events with a nesting limit and errors that give line and
//! column ([`parse`]), and a writer ([`Writer`]) that answers, status files and
//! rewrites stream through.
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
pub(crate) mod scan;
mod write;

#[cfg(fuzzing)]
pub use parse::fuzz_pieces;
pub use parse::{parse, parse_repeats, parse_with_depth, JsonError, Repeated, MAX_DEPTH};
pub use write::{
    push_string, to_string, to_string_pretty, to_vec, to_vec_pretty, write_to, ToJson, Writer,
};

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

/// The members of an object, in the order parsed or inserted, until
/// [`Value::sort_keys`] sorts them: from then on lookups search by halves (a legacy
/// file's `seen` map has an entry per value) and inserts keep the order, as in
/// serde_json's maps, so that a rewritten `config.json` has its keys where they were.
#[derive(Debug, Clone, Default)]
pub struct Map {
    members: Vec<(String, Value)>,
    sorted: bool,
}

/// Where `key` is (`Ok`) or would go (`Err`).
type Slot = Result<usize, usize>;

impl Map {
    pub fn new() -> Map {
        Map::default()
    }

    fn find(&self, key: &str) -> Slot {
        if self.sorted {
            self.members.binary_search_by(|(k, _)| k.as_str().cmp(key))
        } else {
            // The last of a repeated key counts, as in serde_json's maps.
            let at = self.members.iter().rposition(|(k, _)| k == key);
            at.ok_or(self.members.len())
        }
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        let i = self.find(key).ok()?;
        Some(&self.members[i].1)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        let i = self.find(key).ok()?;
        Some(&mut self.members[i].1)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// The value of `key`, inserted from `make` when absent.
    pub fn get_or_insert_with(&mut self, key: &str, make: impl FnOnce() -> Value) -> &mut Value {
        let i = match self.find(key) {
            Ok(i) => i,
            Err(i) => {
                self.members.insert(i, (key.to_string(), make()));
                i
            }
        };
        &mut self.members[i].1
    }

    /// Takes `key` out, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let i = self.find(key).ok()?;
        Some(self.members.remove(i).1)
    }

    /// Sets `key` to `value`.
    pub fn insert(&mut self, key: &str, value: Value) {
        *self.get_or_insert_with(key, || Value::Null) = value;
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.members.iter().map(|(k, _)| k)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.members.iter().map(|(k, v)| (k, v))
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The members, in order, repeated keys included.
    pub fn into_members(self) -> Vec<(String, Value)> {
        self.members
    }

    /// Members sorted by key, the last of each repeated key kept.
    fn sort_members(&mut self) {
        // Stable: of equal keys the one written last stays last.
        crate::util::sort::sort_stable_by(&mut self.members, |a, b| a.0.cmp(&b.0));
        let mut out: Vec<(String, Value)> = Vec::with_capacity(self.members.len());
        for m in self.members.drain(..) {
            match out.last_mut() {
                Some(last) if last.0 == m.0 => *last = m,
                _ => out.push(m),
            }
        }
        self.members = out;
        self.sorted = true;
    }
}

/// Equal members in the same order.
impl PartialEq for Map {
    fn eq(&self, other: &Map) -> bool {
        self.members == other.members
    }
}

impl Eq for Map {}

impl<'a> IntoIterator for &'a Map {
    type Item = (&'a String, &'a Value);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, Value)>,
        fn(&'a (String, Value)) -> (&'a String, &'a Value),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.members.iter().map(|(k, v)| (k, v))
    }
}

impl FromIterator<(String, Value)> for Map {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Map {
        Map {
            members: iter.into_iter().collect(),
            sorted: false,
        }
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
                o.sort_members();
                o.members.iter_mut().for_each(|(_, v)| v.sort_keys());
            }
            Value::Array(a) => a.iter_mut().for_each(Value::sort_keys),
            _ => {}
        }
    }
}

/// Typed reads of the members of our own files (`status.json`, feed validators): a
/// member of the wrong type is an error naming it; `null` is the same as absent.
pub mod member {
    use crate::util::map::SortedMap;

    use super::Value;

    fn wrong(key: &str, expected: &str, v: &Value) -> String {
        format!("{key}: expected {expected}, got {v}")
    }

    pub fn opt_string(key: &str, v: &Value) -> Result<Option<String>, String> {
        match v {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone())),
            _ => Err(wrong(key, "a string", v)),
        }
    }

    pub fn opt_u32(key: &str, v: &Value) -> Result<Option<u32>, String> {
        match v {
            Value::Null => Ok(None),
            _ => match v.as_u64().map(u32::try_from) {
                Some(Ok(n)) => Ok(Some(n)),
                _ => Err(wrong(key, "a whole number up to 4294967295", v)),
            },
        }
    }

    pub fn bool(key: &str, v: &Value) -> Result<bool, String> {
        match v {
            Value::Null => Ok(false),
            Value::Bool(b) => Ok(*b),
            _ => Err(wrong(key, "true or false", v)),
        }
    }

    /// An object of strings.
    pub fn string_map(key: &str, v: &Value) -> Result<SortedMap<String, String>, String> {
        let mut out = SortedMap::new();
        match v {
            Value::Null => {}
            Value::Object(o) => {
                for (k, s) in o {
                    let s = s
                        .as_str()
                        .ok_or_else(|| wrong(&format!("{key}.{k}"), "a string", s))?;
                    out.insert(k.clone(), s.to_string());
                }
            }
            _ => return Err(wrong(key, "an object", v)),
        }
        Ok(out)
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
