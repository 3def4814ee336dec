//! Schema version 3, the compact store: the tables, the compatibility views
//! `addresses` and `changes` (the contract's columns, ISO times) with their
//! `INSTEAD OF` triggers, and the migration step 2 → 3.
//!
//! * `sources (id, kind, name)`: each source once; a new kind is a new word, no schema
//!   change.
//! * `entries (source, value, first_seen, last_seen, added)`, `WITHOUT ROWID` on
//!   `(source, value)`, values and times in the compact forms of `codec`; `added` = 1
//!   when the row's `first_seen` is a recorded `added` change (a merge stored it; not a
//!   legacy import or a script).
//! * `entries_value` on `(value)`: `lookup` and the listing of every value.
//! * `history (time, seq, source, value, change, first_seen)`, `WITHOUT ROWID` on
//!   `(time, seq)`: what cannot be read from `entries`: removals (the row is gone; its
//!   recorded `added` time rides along in `first_seen`), and changes written by scripts
//!   or migrated from version 2. `change`: 0 added, 1 expired, 2 swept, 3 purged.
//! * `ripe_write` and `ripe_coded`: empty views whose triggers do the writes of the
//!   views above, each conversion written once (every connection parses the triggers:
//!   short ones keep opening cheap).
//! * `meta (key, value)`: `history_floor` (changes before it are pruned: the `added`
//!   times in `entries` are hidden below it instead of deleted), `generation` (counts
//!   the writes that changed stored values; the snapshot records the one it saved).
//!
//! So history costs what changed: the first run of a big source writes its rows and
//! nothing else.

use rusqlite::Transaction;

use rusqlite::types::Value;

use super::codec::{sql_time_code, sql_time_text, sql_value_code, sql_value_text, time_of, Stored};

/// The tables of version 3.
const TABLES: &str = "
CREATE TABLE sources (
    id   INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    UNIQUE (kind, name)
);
CREATE TABLE entries (
    source     INTEGER NOT NULL,
    value      NOT NULL,
    first_seen NOT NULL,
    last_seen  NOT NULL,
    added      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (source, value)
) WITHOUT ROWID;
CREATE TABLE history (
    time       NOT NULL,
    seq        INTEGER NOT NULL,
    source     INTEGER NOT NULL,
    value      NOT NULL,
    change     INTEGER NOT NULL,
    first_seen,
    PRIMARY KEY (time, seq)
) WITHOUT ROWID;
CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
INSERT INTO meta VALUES ('history_floor', 0), ('generation', 0), ('saved_generation', 0);
";

/// The index behind `lookup` (created after a bulk copy: built sorted, densely packed).
pub(super) const INDEX: &str = "CREATE INDEX entries_value ON entries (value);";

/// SQL: the `added` times below this are pruned.
const FLOOR: &str = "coalesce((SELECT value FROM meta WHERE key = 'history_floor'), 0)";

/// SQL: counts one more change of the stored values (see `meta` in the module doc).
pub(super) const BUMP: &str = "UPDATE meta SET value = value + 1 WHERE key = 'generation';";

/// SQL: the word of a change code `x`.
fn change_word(x: &str) -> String {
    format!(
        "CASE {x} WHEN 0 THEN 'added' WHEN 1 THEN 'expired' WHEN 2 THEN 'swept' ELSE 'purged' END"
    )
}

/// The views and triggers through which scripts written for versions 1 and 2 read and
/// write.
fn views() -> String {
    let vt = sql_value_text;
    let tt = sql_time_text;
    let (vc, tc) = (sql_value_code, sql_time_code);
    format!(
        "CREATE VIEW addresses (kind, source, value, first_seen, last_seen) AS
         SELECT s.kind, s.name, {val}, {first}, {last}
         FROM entries e JOIN sources s ON s.id = e.source;
         CREATE VIEW changes (time, kind, source, value, change) AS
         SELECT {ctime}, s.kind, s.name, {cval}, {word} FROM (
             SELECT first_seen AS time, 0 AS cls, 0 AS seq, source, value, 0 AS change
             FROM entries WHERE added = 1 AND first_seen >= {FLOOR}
             UNION ALL SELECT first_seen, 0, 0, source, value, 0 FROM history
             WHERE first_seen >= {FLOOR}
             UNION ALL SELECT time, 1, seq, source, value, change FROM history
         ) c JOIN sources s ON s.id = c.source
         ORDER BY c.time, c.cls, CASE c.cls WHEN 0 THEN s.kind END,
             CASE c.cls WHEN 0 THEN s.name END, CASE c.cls WHEN 0 THEN {cval} END, c.seq;
         CREATE VIEW ripe_write (op, kind, source, value, a, b) AS
         SELECT NULL, NULL, NULL, NULL, NULL, NULL WHERE 0;
         CREATE VIEW ripe_coded (op, sid, value, a, b) AS
         SELECT NULL, NULL, NULL, NULL, NULL WHERE 0;
         CREATE TRIGGER ripe_write INSTEAD OF INSERT ON ripe_write BEGIN
             INSERT INTO sources (kind, name) SELECT NEW.kind, NEW.source
             WHERE NEW.op IN ('insert', 'change') AND NOT EXISTS
                 (SELECT 1 FROM sources WHERE kind = NEW.kind AND name = NEW.source);
             INSERT INTO ripe_coded VALUES (NEW.op,
                 (SELECT id FROM sources WHERE kind = NEW.kind AND name = NEW.source),
                 {vnew}, {ta}, {tb});
         END;
         CREATE TRIGGER ripe_coded INSTEAD OF INSERT ON ripe_coded BEGIN
             INSERT INTO entries (source, value, first_seen, last_seen, added)
             SELECT NEW.sid, NEW.value, NEW.a, NEW.b, 0 WHERE NEW.op = 'insert';
             UPDATE entries SET first_seen = NEW.a, last_seen = NEW.b
             WHERE NEW.op = 'update' AND source = NEW.sid AND value = NEW.value;
             DELETE FROM entries WHERE NEW.op = 'delete' AND source = NEW.sid
                 AND value = NEW.value;
             INSERT INTO history (time, seq, source, value, change)
             SELECT NEW.a, (SELECT coalesce(max(seq), 0) + 1 FROM history WHERE time = NEW.a),
                 NEW.sid, NEW.value, NEW.b WHERE NEW.op = 'change';
             UPDATE meta SET value = value + 1 WHERE key = 'generation' AND NEW.op <> 'change';
         END;
         CREATE TRIGGER addresses_insert INSTEAD OF INSERT ON addresses BEGIN
             INSERT INTO ripe_write VALUES ('insert', NEW.kind, NEW.source, NEW.value,
                 NEW.first_seen, NEW.last_seen);
         END;
         CREATE TRIGGER addresses_update INSTEAD OF UPDATE ON addresses BEGIN
             SELECT RAISE(ABORT, 'only first_seen and last_seen of addresses can be changed')
             WHERE NEW.kind IS NOT OLD.kind OR NEW.source IS NOT OLD.source
                OR NEW.value IS NOT OLD.value;
             INSERT INTO ripe_write VALUES ('update', OLD.kind, OLD.source, OLD.value,
                 NEW.first_seen, NEW.last_seen);
         END;
         CREATE TRIGGER addresses_delete INSTEAD OF DELETE ON addresses BEGIN
             INSERT INTO ripe_write VALUES ('delete', OLD.kind, OLD.source, OLD.value, NULL, NULL);
         END;
         CREATE TRIGGER changes_insert INSTEAD OF INSERT ON changes BEGIN
             SELECT RAISE(ABORT, 'CHECK constraint failed: change')
             WHERE NEW.change IS NULL OR NEW.change NOT IN ('added', 'expired', 'swept', 'purged');
             INSERT INTO ripe_write VALUES ('change', NEW.kind, NEW.source, NEW.value, NEW.time,
                 CASE NEW.change WHEN 'added' THEN 0 WHEN 'expired' THEN 1
                     WHEN 'swept' THEN 2 ELSE 3 END);
         END;",
        val = vt("e.value"),
        first = tt("e.first_seen"),
        last = tt("e.last_seen"),
        ctime = tt("c.time"),
        cval = vt("c.value"),
        word = change_word("c.change"),
        vnew = vc("NEW.value"),
        ta = tc("NEW.a"),
        tb = tc("NEW.b"),
    )
}

/// The empty tables and views of version 3, without [`INDEX`] (created after a bulk
/// load: the restore of a snapshot).
pub(super) fn create_empty(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(TABLES)?;
    tx.execute_batch(super::trust::SCHEMA_V4)?;
    tx.execute_batch(super::names::SCHEMA_NAMES)?;
    tx.execute_batch(&views())
}

/// A new database of version 3 (the steps before it made the version-2 tables).
/// 2 → 3: the rows of `addresses` and `changes` move into the compact tables, every
/// row, time and change as it was, and the old names become views. Every change of
/// version 2 is kept as written (in `history`, in its order): only changes written from
/// now on are derived from the rows. A version-2 binary refuses the result (newer
/// version); there is no way back but a snapshot or backup taken before.
pub(super) fn to_v3(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(TABLES)?;
    tx.execute_batch(
        "INSERT INTO sources (kind, name)
             SELECT kind, source FROM addresses UNION SELECT kind, source FROM changes
             ORDER BY 1, 2;",
    )?;
    copy_rows(
        tx,
        "SELECT s.id, a.value, a.first_seen, a.last_seen FROM addresses a
         JOIN sources s ON s.kind = a.kind AND s.name = a.source",
        "INSERT INTO entries (source, value, first_seen, last_seen) VALUES (?1, ?2, ?3, ?4)",
        false,
    )?;
    copy_rows(
        tx,
        "SELECT s.id, c.value, c.time, CASE c.change WHEN 'added' THEN 0 WHEN 'expired' THEN 1
             WHEN 'swept' THEN 2 ELSE 3 END
         FROM changes c JOIN sources s ON s.kind = c.kind AND s.name = c.source
         ORDER BY c.time, c.rowid",
        "INSERT INTO history (source, value, time, change, seq) VALUES (?1, ?2, ?3, ?4, ?5)",
        true,
    )?;
    tx.execute_batch("DROP TABLE addresses; DROP TABLE changes;")?;
    tx.execute_batch(INDEX)?;
    tx.execute_batch(&views())
}

/// Copies rows `(source id, value, time, x)` of `select` into `insert`, the value and
/// the time in their compact forms (the fourth column as it is). With `seq`, the
/// rows (in time order) are numbered within each time, as version 2 wrote them.
fn copy_rows(tx: &Transaction<'_>, select: &str, insert: &str, seq: bool) -> rusqlite::Result<()> {
    let mut read = tx.prepare(select)?;
    let mut write = tx.prepare(insert)?;
    let mut rows = read.query([])?;
    let (mut last_time, mut n) = (None::<String>, 0i64);
    while let Some(r) = rows.next()? {
        let value = Stored::of(r.get_ref(1)?.as_str()?);
        let time: String = r.get(2)?;
        let fourth: Value = r.get(3)?;
        write.raw_bind_parameter(1, r.get::<_, i64>(0)?)?;
        write.raw_bind_parameter(2, &value)?;
        write.raw_bind_parameter(3, time_of(&time))?;
        write.raw_bind_parameter(4, fourth)?;
        if seq {
            n = if last_time.as_deref() == Some(time.as_str()) {
                n + 1
            } else {
                1
            };
            write.raw_bind_parameter(5, n)?;
            last_time = Some(time);
        }
        write.raw_execute()?;
    }
    Ok(())
}
