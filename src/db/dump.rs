//! The compact snapshot format: the rows of the store's tables, column by column, each
//! column delta- and run-length-coded, with a checksum. About 3 bytes per stored value
//! instead of the 45 of a copy of the database (`benches/footprint.rs`), with no
//! compression library: sorted IPv4 values differ by small integers, the times of a
//! source are mostly the same, and IPv6 text shares its start with the value before.
//!
//! Layout: `RIPESNAP`, a version byte (2), then for each table of [`TABLES`] the number
//! of rows (varint) and each column as a varint byte length and its items; last the
//! CRC-32 (IEEE) of everything before, 4 bytes little-endian.
//!
//! An item starts with a varint `h`. Even: an integer, zig-zag delta `h >> 1` from the
//! column's previous integer. Odd, `k = h >> 1`: 0 NULL; 1 text: varint length shared
//! with the column's previous text, varint length of the rest, the rest; 2 blob:
//! varint length, bytes; 3 real: 8 bytes; 4 integer: 8 bytes (a delta too large); 5
//! and more: the previous item `k - 4` more times.
//!
//! A stored IPv4 value `address << 6 | length` is written as two columns (`address`,
//! `length`) so that both code small; text values have NULL as their length.

use rusqlite::types::Value;
use rusqlite::Connection;

/// Each table with the columns written, in key order.
pub(super) const TABLES: [(&str, &str, &str); 5] = [
    ("meta", "key, value", "key"),
    ("sources", "id, kind, name", "id"),
    (
        "entries",
        "source, value, first_seen, last_seen, added",
        "source, value",
    ),
    (
        "history",
        "time, seq, source, value, change, first_seen",
        "time, seq",
    ),
    (
        "fetches",
        "source, seq, time, upstream, answer, stored, added, removed, state, note, since, base",
        "source, seq",
    ),
];

const MAGIC: &[u8; 8] = b"RIPESNAP";
/// 2 adds `fetches` (schema version 4); a snapshot of version 1 has the first four
/// tables and still restores.
const VERSION: u8 = 2;

/// Whether `head` starts a snapshot of this format.
pub(super) fn is_dump(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

fn varint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// CRC-32 (IEEE 802.3, as gzip and zlib use), bit by bit: small, and fast enough for
/// a snapshot of a few hundred kilobytes.
pub(super) fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for b in data {
        crc ^= u32::from(*b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

/// One column being written.
#[derive(Default)]
struct ColumnOut {
    out: Vec<u8>,
    prev_int: i64,
    prev_text: Vec<u8>,
    last: Option<Value>,
    run: u64,
}

impl ColumnOut {
    fn push(&mut self, v: Value) {
        if self.last.as_ref() == Some(&v) {
            self.run += 1;
            return;
        }
        self.flush();
        self.emit(&v);
        self.last = Some(v);
    }

    fn flush(&mut self) {
        match self.run {
            0 => {}
            1 => {
                if let Some(v) = self.last.take() {
                    self.emit(&v);
                    self.last = Some(v);
                }
            }
            n => varint(&mut self.out, ((n + 4) << 1) | 1),
        }
        self.run = 0;
    }

    fn emit(&mut self, v: &Value) {
        let out = &mut self.out;
        match v {
            Value::Null => varint(out, 1),
            Value::Integer(i) => {
                let z = zigzag(i.wrapping_sub(self.prev_int));
                if z < 1 << 62 {
                    varint(out, z << 1);
                } else {
                    varint(out, (4 << 1) | 1);
                    out.extend_from_slice(&i.to_le_bytes());
                }
                self.prev_int = *i;
            }
            Value::Text(t) => {
                let t = t.as_bytes();
                let shared = t
                    .iter()
                    .zip(&self.prev_text)
                    .take_while(|(a, b)| a == b)
                    .count();
                varint(out, (1 << 1) | 1);
                varint(out, shared as u64);
                varint(out, (t.len() - shared) as u64);
                out.extend_from_slice(&t[shared..]);
                self.prev_text = t.to_vec();
            }
            Value::Blob(b) => {
                varint(out, (2 << 1) | 1);
                varint(out, b.len() as u64);
                out.extend_from_slice(b);
            }
            Value::Real(r) => {
                varint(out, (3 << 1) | 1);
                out.extend_from_slice(&r.to_le_bytes());
            }
        }
    }

    fn finish(mut self) -> Vec<u8> {
        self.flush();
        self.out
    }
}

/// Whether column `i` of `table` holds stored values (written as two columns).
fn is_value(table: &str, i: usize) -> bool {
    matches!((table, i), ("entries", 1) | ("history", 3))
}

/// Writes every row of the store's tables, read through `c` (inside one read
/// transaction, so consistent).
pub(super) fn write(c: &Connection) -> rusqlite::Result<Vec<u8>> {
    let mut out = MAGIC.to_vec();
    out.push(VERSION);
    for (table, cols, key) in TABLES {
        let n = cols.split(',').count();
        let mut columns: Vec<ColumnOut> = (0..n + 1).map(|_| ColumnOut::default()).collect();
        let mut st = c.prepare(&format!("SELECT {cols} FROM {table} ORDER BY {key}"))?;
        let mut rows = st.query([])?;
        let mut count = 0u64;
        while let Some(r) = rows.next()? {
            count += 1;
            let mut j = 0;
            for i in 0..n {
                let v: Value = r.get(i)?;
                if is_value(table, i) {
                    let (hi, lo) = match v {
                        Value::Integer(x) => (Value::Integer(x >> 6), Value::Integer(x & 63)),
                        other => (other, Value::Null),
                    };
                    columns[j].push(hi);
                    columns[j + 1].push(lo);
                    j += 2;
                } else {
                    columns[j].push(v);
                    j += 1;
                }
            }
        }
        varint(&mut out, count);
        // A table without a value column has one column too many: written empty.
        for col in columns {
            let bytes = col.finish();
            varint(&mut out, bytes.len() as u64);
            out.extend_from_slice(&bytes);
        }
    }
    let crc = crc32(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// `body` framed as a snapshot (magic, version, checksum), for the fuzz target to get
/// past the checksum.
#[cfg(fuzzing)]
pub(super) fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.push(VERSION);
    out.extend_from_slice(body);
    let crc = crc32(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Why a snapshot cannot be read.
pub(super) type Bad = String;

/// A reader over bytes.
struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Bad> {
        if n > self.0.len() {
            return Err("cut short".into());
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }

    fn varint(&mut self) -> Result<u64, Bad> {
        let mut x = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.take(1)?[0];
            x |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(x);
            }
        }
        Err("bad number".into())
    }

    fn len(&mut self) -> Result<usize, Bad> {
        usize::try_from(self.varint()?).map_err(|_| Bad::from("bad length"))
    }

    fn eight(&mut self) -> Result<[u8; 8], Bad> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(b)
    }
}

/// One column being read.
struct ColumnIn<'a> {
    input: Input<'a>,
    prev_int: i64,
    prev_text: Vec<u8>,
    last: Value,
    repeat: u64,
}

impl<'a> ColumnIn<'a> {
    fn new(bytes: &'a [u8]) -> ColumnIn<'a> {
        ColumnIn {
            input: Input(bytes),
            prev_int: 0,
            prev_text: Vec::new(),
            last: Value::Null,
            repeat: 0,
        }
    }

    fn next(&mut self) -> Result<Value, Bad> {
        if self.repeat > 0 {
            self.repeat -= 1;
            return Ok(self.last.clone());
        }
        let h = self.input.varint()?;
        let v = if h & 1 == 0 {
            self.prev_int = self.prev_int.wrapping_add(unzigzag(h >> 1));
            Value::Integer(self.prev_int)
        } else {
            match h >> 1 {
                0 => Value::Null,
                1 => {
                    let shared = self.input.len()?;
                    let rest = self.input.len()?;
                    if shared > self.prev_text.len() {
                        return Err("bad text".into());
                    }
                    self.prev_text.truncate(shared);
                    self.prev_text.extend_from_slice(self.input.take(rest)?);
                    let t = String::from_utf8(self.prev_text.clone())
                        .map_err(|_| Bad::from("bad text"))?;
                    Value::Text(t)
                }
                2 => {
                    let n = self.input.len()?;
                    Value::Blob(self.input.take(n)?.to_vec())
                }
                3 => Value::Real(f64::from_le_bytes(self.input.eight()?)),
                4 => {
                    self.prev_int = i64::from_le_bytes(self.input.eight()?);
                    Value::Integer(self.prev_int)
                }
                k => {
                    self.repeat = k - 5;
                    return Ok(self.last.clone());
                }
            }
        };
        self.last = v.clone();
        Ok(v)
    }
}

/// What a value read costs against the work a snapshot may make: a byte per column
/// and its text's length. Run-length and shared-prefix coding let a few bytes stand
/// for any number of rows or a long text.
fn cost(v: &Value) -> u64 {
    1 + match v {
        Value::Text(t) => t.len() as u64,
        Value::Blob(b) => b.len() as u64,
        _ => 0,
    }
}

/// The work a snapshot of `size` bytes may make. Each row of a real snapshot costs at
/// least a byte (no two rows of a table are the same, and a column that differs from
/// the row before writes an item), and its texts are short: far below this. A
/// hostile one (2^34 rows in 58 bytes, texts growing a byte per item) stops at it.
fn work_allowed(size: usize) -> u64 {
    (1 << 20) + 256 * size as u64
}

/// Reads a snapshot and inserts its rows through `c` (empty tables of version 3, in a
/// transaction of the caller). Returns how many rows of `entries` it held. Every
/// count is bounded by the file's size (see [`work_allowed`]).
pub(super) fn read(bytes: &[u8], c: &Connection) -> Result<u64, Bad> {
    if bytes.len() < MAGIC.len() + 5 || !is_dump(bytes) {
        return Err("not a snapshot".into());
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    if crc32(body).to_le_bytes() != crc {
        return Err("checksum mismatch".into());
    }
    let tables = match body[MAGIC.len()] {
        1 => &TABLES[..4],
        VERSION => &TABLES[..],
        v => return Err(format!("format version {v} unknown")),
    };
    let mut input = Input(&body[MAGIC.len() + 1..]);
    let mut entries = 0;
    let mut work = work_allowed(bytes.len());
    for &(table, cols, _) in tables {
        let n = cols.split(',').count();
        let rows = input.varint()?;
        let mut columns = Vec::new();
        let mut coded = 0;
        for _ in 0..n + 1 {
            let len = input.len()?;
            coded += len as u64;
            columns.push(ColumnIn::new(input.take(len)?));
        }
        if rows > coded + 1 {
            return Err(format!("{table}: {rows} rows in {coded} bytes"));
        }
        let marks = vec!["?"; n].join(", ");
        let verb = if table == "meta" {
            "INSERT OR REPLACE"
        } else {
            "INSERT"
        };
        let sql = format!("{verb} INTO {table} ({cols}) VALUES ({marks})");
        let mut st = c.prepare(&sql).map_err(|e| e.to_string())?;
        for _ in 0..rows {
            let mut j = 0;
            for i in 0..n {
                let v = if is_value(table, i) {
                    let (hi, lo) = (columns[j].next()?, columns[j + 1].next()?);
                    j += 2;
                    match (hi, lo) {
                        (Value::Integer(h), Value::Integer(l)) => Value::Integer((h << 6) | l),
                        (other, _) => other,
                    }
                } else {
                    j += 1;
                    columns[j - 1].next()?
                };
                work = work.checked_sub(cost(&v)).ok_or_else(|| {
                    format!("{table}: more data than {} bytes can hold", bytes.len())
                })?;
                st.raw_bind_parameter(i + 1, v).map_err(|e| e.to_string())?;
            }
            st.raw_execute().map_err(|e| format!("{table}: {e}"))?;
        }
        if table == "entries" {
            entries = rows;
        }
    }
    if !input.0.is_empty() {
        return Err("trailing bytes".into());
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_of_the_check_string() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn columns_round_trip() {
        let values = vec![
            Value::Integer(5),
            Value::Integer(5),
            Value::Integer(5),
            Value::Integer(-3),
            Value::Integer(i64::MAX),
            Value::Integer(i64::MIN),
            Value::Text("2001:db8::/32".into()),
            Value::Text("2001:db8:1::/48".into()),
            Value::Text("2001:db8:1::/48".into()),
            Value::Null,
            Value::Blob(vec![1, 2]),
            Value::Real(1.5),
            Value::Integer(7),
        ];
        let mut col = ColumnOut::default();
        for v in &values {
            col.push(v.clone());
        }
        let bytes = col.finish();
        let mut back = ColumnIn::new(&bytes);
        for v in &values {
            assert_eq!(&back.next().unwrap(), v);
        }
        assert!(back.next().is_err(), "nothing more");
    }

    /// A snapshot with the given tables' row counts and columns, checksummed.
    fn forged(tables: &[(u64, Vec<Vec<u8>>)]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.push(VERSION);
        for (rows, cols) in tables {
            varint(&mut out, *rows);
            for c in cols {
                varint(&mut out, c.len() as u64);
                out.extend_from_slice(c);
            }
        }
        let crc = crc32(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    fn tables() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(
            "CREATE TABLE meta (key, value); CREATE TABLE sources (id, kind, name);
             CREATE TABLE entries (source, value, first_seen, last_seen, added);
             CREATE TABLE history (time, seq, source, value, change, first_seen);",
        )
        .unwrap();
        c
    }

    #[test]
    fn counts_are_bounded_by_the_size() {
        // meta: 2^34 rows of one text key and value, each a run: 2 columns + 1.
        let mut run = vec![3, 0, 1, b'k'];
        varint(&mut run, ((1u64 << 40) << 1) | 1);
        let hostile = forged(&[(1 << 34, vec![run.clone(), run, vec![]])]);
        assert!(hostile.len() < 64, "{}", hostile.len());
        let started = std::time::Instant::now();
        let e = read(&hostile, &tables()).unwrap_err();
        assert!(e.contains("rows in"), "{e}");
        assert!(started.elapsed().as_secs() < 5);
        // As many rows as bytes, but texts that grow a byte per item: the work is
        // bounded, not quadratic.
        let mut grow = Vec::new();
        for i in 0..20_000u64 {
            grow.extend_from_slice(&[3]);
            varint(&mut grow, i);
            grow.extend_from_slice(&[1, b'a']);
        }
        let n = 20_000;
        let hostile = forged(&[(n, vec![grow.clone(), grow, vec![]])]);
        let e = read(&hostile, &tables()).unwrap_err();
        assert!(e.contains("more data than"), "{e}");
    }
}
