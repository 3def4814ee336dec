//! Writing JSON: compact (API answers, `status --json`) or pretty (files people
//! read: `config.json` rewrites, `status.json`), byte for byte as serde_json wrote
//! them. Structs write their fields in their own order through [`Writer`], without
//! building a [`Value`] first (an overview of 50,000 sources streams).

use crate::util::map::SortedMap;

use super::{Map, Number, Value};

/// Appends JSON to a buffer, keeping track of commas and indentation.
pub struct Writer<'a> {
    out: &'a mut Vec<u8>,
    pretty: bool,
    depth: usize,
    /// Whether the open container has a member already (a comma goes first).
    has_items: bool,
    /// Whether a key was just written (its value follows without a separator).
    after_key: bool,
}

impl<'a> Writer<'a> {
    /// A writer appending to `out`, indented by two spaces when `pretty`.
    pub fn new(out: &'a mut Vec<u8>, pretty: bool) -> Writer<'a> {
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
            self.out.push(b',');
        }
        if self.pretty && self.depth > 0 {
            self.newline();
        }
        self.has_items = true;
    }

    fn newline(&mut self) {
        self.out.push(b'\n');
        for _ in 0..self.depth {
            self.out.extend_from_slice(b"  ");
        }
    }

    fn open(&mut self, c: u8) {
        self.item();
        self.out.push(c);
        self.depth += 1;
        self.has_items = false;
    }

    fn close(&mut self, c: u8) {
        self.depth -= 1;
        if self.has_items && self.pretty {
            self.newline();
        }
        self.out.push(c);
        self.has_items = true;
    }

    pub fn begin_object(&mut self) {
        self.open(b'{');
    }

    pub fn end_object(&mut self) {
        self.close(b'}');
    }

    pub fn begin_array(&mut self) {
        self.open(b'[');
    }

    pub fn end_array(&mut self) {
        self.close(b']');
    }

    /// A member's key; its value is written next.
    pub fn key(&mut self, key: &str) {
        self.item();
        push_string(self.out, key);
        self.out.push(b':');
        if self.pretty {
            self.out.push(b' ');
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
        self.out.extend_from_slice(text.as_bytes());
    }

    pub fn null(&mut self) {
        self.raw("null");
    }

    pub fn bool(&mut self, b: bool) {
        self.raw(if b { "true" } else { "false" });
    }

    pub fn u64(&mut self, n: u64) {
        self.item();
        // Writing to a Vec cannot fail.
        let _ = std::io::Write::write_fmt(self.out, format_args!("{n}"));
    }
}

/// `s` as a JSON string: `"` and `\` escaped, control characters as `\n`, `\t` ...
/// or `\u00XX`; everything else (`/`, non-ASCII) as it is.
pub fn push_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let mut start = 0;
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            b'\n' => b'n',
            b'\t' => b't',
            b'\r' => b'r',
            0x08 => b'b',
            0x0c => b'f',
            0..=0x1f => b'u',
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(&[b'\\', short]);
        if short == b'u' {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(&[
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// What can be written as JSON.
pub trait ToJson {
    fn write_json(&self, w: &mut Writer<'_>);
}

/// `value` as compact JSON.
pub fn to_vec<T: ToJson + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    write_to(&mut out, value);
    out
}

/// [`to_vec`] appended to `out` (which the caller may have sized).
pub fn write_to<T: ToJson + ?Sized>(out: &mut Vec<u8>, value: &T) {
    value.write_json(&mut Writer::new(out, false));
}

/// `value` as JSON indented by two spaces (no newline at the end).
pub fn to_vec_pretty<T: ToJson + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    value.write_json(&mut Writer::new(&mut out, true));
    out
}

/// [`to_vec`] as a string.
pub fn to_string<T: ToJson + ?Sized>(value: &T) -> String {
    // Written from strings with ASCII around them: always UTF-8.
    String::from_utf8(to_vec(value)).unwrap_or_default()
}

/// [`to_vec_pretty`] as a string.
pub fn to_string_pretty<T: ToJson + ?Sized>(value: &T) -> String {
    String::from_utf8(to_vec_pretty(value)).unwrap_or_default()
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

impl<K: AsRef<str>, V: ToJson> ToJson for SortedMap<K, V> {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.begin_object();
        for (k, v) in self {
            w.field(k.as_ref(), v);
        }
        w.end_object();
    }
}
