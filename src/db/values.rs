//! [`Values`]: what one source answered, held compactly until it is merged.

use super::codec::{v4_code, Stored};

/// The values of one answer, normalised text pushed one at a time (a collector can
/// stream a body into it) and kept in their stored form: 8 bytes per IPv4 value, text
/// for the rest. Duplicates are dropped when it is merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Values {
    pub(super) v4: Vec<i64>,
    pub(super) text: Vec<String>,
}

impl Values {
    /// No values (a source that answered with nothing).
    pub fn new() -> Values {
        Values::default()
    }

    /// No values, with room for `v4` IPv4 values and `text` others (a collector
    /// that knows how many are coming holds no slack).
    pub fn with_capacity(v4: usize, text: usize) -> Values {
        Values {
            v4: Vec::with_capacity(v4),
            text: Vec::with_capacity(text),
        }
    }

    /// Adds one value (already normalised).
    pub fn push(&mut self, value: &str) {
        match v4_code(value) {
            Some(c) => self.v4.push(c),
            None => self.text.push(value.to_string()),
        }
    }

    /// How many were pushed (duplicates included).
    pub fn len(&self) -> usize {
        self.v4.len() + self.text.len()
    }

    /// Whether none was pushed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sorts in the order of the `entries` key (IPv4 numerically, then text) and drops
    /// duplicates.
    pub(super) fn finish(&mut self) {
        crate::util::sort::sort(&mut self.v4);
        self.v4.dedup();
        crate::util::sort::sort(&mut self.text);
        self.text.dedup();
    }

    /// The values in stored form, in order (after [`Values::finish`]).
    pub(super) fn stored(&self) -> impl Iterator<Item = Stored> + '_ {
        let v4 = self.v4.iter().map(|c| Stored::V4(*c));
        v4.chain(self.text.iter().map(|t| Stored::Text(t.clone())))
    }
}

impl<S: AsRef<str>> FromIterator<S> for Values {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Values {
        let mut v = Values::new();
        for s in iter {
            v.push(s.as_ref());
        }
        v
    }
}
