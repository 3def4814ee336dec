//! Writing JSON: compact (API answers, `status --json`) or pretty (files people
//! read: `config.json` rewrites, `status.json`), byte for byte as serde_json wrote
//! them. Structs write their fields in their own order through [`Writer`], without
//! building a [`Value`] first (an overview of 50,000 sources streams).

use std::collections::BTreeMap;

use super::{Map, Number, Value};

/// Appends JSON to a string, keeping track of commas and indentation.
pub struct Writer<'a> {
    out: &'a mut String,
    pretty: bool,
    depth: usize,
    /// Whether the open container has a member already (a comma goes first).
    has_items: bool,
    /// Whether a key was just written (its value follows without a separator).
    after_key: bool,
}

impl<'a> Writer<'a> {
    /// A writer appending to `out`, indented by two spaces when `pretty`.
    pub fn new(out: &'a mut String, pretty: bool) -> Writer<'a> {
        Writer {
            out,
            pretty,
            depth: 0,
            has_items: false,
            after_key: false,
        }
    }

    /// The separator before a value or key.
    fn item(&mut self) {
        if std::mem::take(&mut self.after_key) {
            return;
        }
        if self.has_items {
            self.out.push(',');
        }
        if self.pretty && self.depth > 0 {
            self.out.push('\n');
            for _ in 0..self.depth {
                self.out.push_str("  ");
            }
        }
        self.has_items = true;
    }

    fn open(&mut self, c: char) {
        self.item();
        self.out.push(c);
        self.depth += 1;
        self.has_items = false;
    }

    fn close(&mut self, c: char) {
        self.depth -= 1;
        if self.has_items && self.pretty {
            self.out.push('\n');
            for _ in 0..self.depth {
                self.out.push_str("  ");
            }
        }
        self.out.push(c);
        self.has_items = true;
    }

    pub fn begin_object(&mut self) {
        self.open('{');
    }

    pub fn end_object(&mut self) {
        self.close('}');
    }

    pub fn begin_array(&mut self) {
        self.open('[');
    }

    pub fn end_array(&mut self) {
        self.close(']');
    }

    /// A member's key; its value is written next.
    pub fn key(&mut self, key: &str) {
        self.item();
        push_string(self.out, key);
        self.out.push(':');
        if self.pretty {
            self.out.push(' ');
        }
        self.after_key = true;
    }

    /// A member: `key` and `value`.
    pub fn field<T: ToJson + ?Sized>(&mut self, key: &str, value: &T) {
        self.key(key);
        value.write_json(self);
    }

    pub fn string(&mut self, s: &str) {
        self.item();
        push_string(self.out, s);
    }

    /// A number, `true`, `false` or `null`: text written as it is.
    fn raw(&mut self, text: &str) {
        self.item();
        self.out.push_str(text);
    }

    pub fn null(&mut self) {
        self.raw("null");
    }

    pub fn bool(&mut self, b: bool) {
        self.raw(if b { "true" } else { "false" });
    }

    pub fn u64(&mut self, n: u64) {
        self.item();
        // `write!` to a String cannot fail.
        let _ = std::fmt::Write::write_fmt(self.out, format_args!("{n}"));
    }
}

/// `s` as a JSON string: `"` and `\` escaped, control characters as `\n`, `\t` ...
/// or `\u00XX`; everything else (`/`, non-ASCII) as it is.
pub fn push_string(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let short = match b {
            b'"' => '"',
            b'\\' => '\\',
            b'\n' => 'n',
            b'\t' => 't',
            b'\r' => 'r',
            0x08 => 'b',
            0x0c => 'f',
            0..=0x1f => 'u',
            _ => continue,
        };
        out.push_str(&s[start..i]);
        out.push('\\');
        out.push(short);
        if short == 'u' {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("00");
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 0xf)] as char);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// What can be written as JSON.
pub trait ToJson {
    fn write_json(&self, w: &mut Writer<'_>);
}

/// `value` as compact JSON.
pub fn to_string<T: ToJson + ?Sized>(value: &T) -> String {
    let mut out = String::new();
    value.write_json(&mut Writer::new(&mut out, false));
    out
}

/// `value` as JSON indented by two spaces (no newline at the end).
pub fn to_string_pretty<T: ToJson + ?Sized>(value: &T) -> String {
    let mut out = String::new();
    value.write_json(&mut Writer::new(&mut out, true));
    out
}

impl ToJson for Value {
    fn write_json(&self, w: &mut Writer<'_>) {
        match self {
            Value::Null => w.null(),
            Value::Bool(b) => w.bool(*b),
            Value::Number(n) => n.write_json(w),
            Value::String(s) => w.string(s),
            Value::Array(a) => a.write_json(w),
            Value::Object(o) => o.write_json(w),
        }
    }
}

impl ToJson for Number {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.raw(self.as_str());
    }
}

impl ToJson for Map {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.begin_object();
        for (k, v) in self {
            w.field(k, v);
        }
        w.end_object();
    }
}

impl ToJson for str {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.string(self);
    }
}

impl ToJson for String {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.string(self);
    }
}

impl ToJson for bool {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.bool(*self);
    }
}

impl ToJson for u64 {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.u64(*self);
    }
}

impl ToJson for u32 {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.u64(u64::from(*self));
    }
}

impl ToJson for usize {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.u64(*self as u64);
    }
}

impl<T: ToJson + ?Sized> ToJson for &T {
    fn write_json(&self, w: &mut Writer<'_>) {
        (**self).write_json(w);
    }
}

impl<T: ToJson> ToJson for Option<T> {
    fn write_json(&self, w: &mut Writer<'_>) {
        match self {
            Some(v) => v.write_json(w),
            None => w.null(),
        }
    }
}

impl<T: ToJson> ToJson for [T] {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.begin_array();
        for v in self {
            v.write_json(w);
        }
        w.end_array();
    }
}

impl<T: ToJson> ToJson for Vec<T> {
    fn write_json(&self, w: &mut Writer<'_>) {
        self.as_slice().write_json(w);
    }
}

impl<K: AsRef<str>, V: ToJson> ToJson for BTreeMap<K, V> {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.begin_object();
        for (k, v) in self {
            w.field(k.as_ref(), v);
        }
        w.end_object();
    }
}
