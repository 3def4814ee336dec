//! The migration 2 → 3 (the compact store) on a full version-2 database: 50,000 rows
//! and 10,000 changes. Every row, time and change is kept, and `lookup`, `changes`,
//! `export` and `export --details` answer byte for byte what the version-2 binary
//! answered on the same database (`tests/fixtures/v2-answers.txt`: length and FNV-1a
//! hash of each answer, recorded with the version-2 binary by `record_v2_answers`).

use std::path::Path;
use std::process::Command;

use rusqlite::Connection;

use crate::common::*;

/// The version-2 schema, as the contract gives it.
const SCHEMA_V2: &str = "
CREATE TABLE addresses (
    kind       TEXT NOT NULL CHECK (kind IN ('asn', 'fqdn')),
    source     TEXT NOT NULL,
    value      TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    last_seen  TEXT NOT NULL,
    PRIMARY KEY (kind, source, value)
);
CREATE INDEX addresses_value ON addresses (value);
CREATE TABLE changes (
    time   TEXT NOT NULL,
    kind   TEXT NOT NULL CHECK (kind IN ('asn', 'fqdn')),
    source TEXT NOT NULL,
    value  TEXT NOT NULL,
    change TEXT NOT NULL CHECK (change IN ('added', 'expired', 'swept', 'purged'))
);
CREATE INDEX changes_time ON changes (time);
PRAGMA user_version = 2;
";

/// A small deterministic generator (xorshift), so the database is the same each run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// 2026-11-01T00:00:00Z.
const BASE: i64 = 1_793_491_200;

fn iso(t: i64) -> String {
    ripe_cidr_collector::util::iso(t)
}

/// One value of each form the store holds: IPv4 and IPv6 prefixes of ASNs, bare
/// addresses of host names, and now and then text kept as written.
fn value(r: &mut Rng, fqdn: bool) -> String {
    let (a, b, c) = (1 + r.below(222), r.below(256), r.below(256));
    match (fqdn, r.below(10)) {
        (false, 0) => format!(
            "2a0{}:{:x}:{:x}::/48",
            r.below(10),
            r.below(65536),
            r.below(65536)
        ),
        (false, 1) => format!("{a}.{b}.0.0/16"),
        (false, 2) => format!("{a}.{b}.{c}.{}/32", r.below(256)),
        (false, _) => format!("{a}.{b}.{c}.0/24"),
        (true, 0) => format!("2606:{:x}::{:x}", r.below(65536), r.below(65536)),
        (true, _) => format!("{a}.{b}.{c}.{}", r.below(256)),
    }
}

/// Writes the version-2 database: 50,000 rows and 10,000 changes.
fn build_v2(db: &Path) {
    let c = Connection::open(db).unwrap();
    c.execute_batch(SCHEMA_V2).unwrap();
    c.execute_batch("BEGIN").unwrap();
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut rows = 0;
    while rows < 50_000 {
        let fqdn = r.below(5) == 0;
        let (kind, source) = if fqdn {
            ("fqdn", format!("h{}.example.com", r.below(500)))
        } else {
            ("asn", format!("{}", 64_500 + r.below(20)))
        };
        let v = value(&mut r, fqdn);
        let first = BASE + r.below(30) as i64 * 86_400 + r.below(4) as i64 * 3600;
        // Legacy imports kept their times as written.
        let first = if r.below(100) == 0 {
            "2026-09-01T00:00:00".to_string()
        } else {
            iso(first)
        };
        let last = iso(BASE + 30 * 86_400 + r.below(2) as i64 * 3600);
        rows += c
            .execute(
                "INSERT OR IGNORE INTO addresses VALUES (?1, ?2, ?3, ?4, ?5)",
                [kind, &source, &v, &first, &last],
            )
            .unwrap();
    }
    // Changes in batches of one second each, as merges, sweeps and purges write them:
    // several sources and reasons interleaved within a second.
    let words = ["added", "expired", "swept", "purged"];
    let mut n = 0;
    while n < 10_000 {
        let t = iso(BASE + r.below(30 * 24) as i64 * 3600);
        for _ in 0..1 + r.below(40) {
            let fqdn = r.below(5) == 0;
            let (kind, source) = if fqdn {
                ("fqdn", format!("h{}.example.com", r.below(500)))
            } else {
                ("asn", format!("{}", 64_500 + r.below(20)))
            };
            let v = value(&mut r, fqdn);
            let w = words[r.below(4) as usize];
            c.execute(
                "INSERT INTO changes VALUES (?1, ?2, ?3, ?4, ?5)",
                [&t, kind, &source, &v, w],
            )
            .unwrap();
            n += 1;
            if n == 10_000 {
                break;
            }
        }
    }
    c.execute_batch("COMMIT").unwrap();
}

/// The commands whose answers must not change.
const QUERIES: &[&[&str]] = &[
    &["changes", "--since", "2020-01-01T00:00:00Z", "--json"],
    &["changes", "--since", "2026-11-15T00:00:00Z"],
    &[
        "changes",
        "--since",
        "2026-11-20T00:00:00Z",
        "--type",
        "fqdn",
        "--json",
    ],
    &["export"],
    &["export", "--format", "json"],
    &["export", "--format", "json", "--details"],
    &["lookup", "10.0.0.0/8", "--json"],
    &["lookup", "100.0.0.0/6"],
    &["lookup", "2a03::/16", "--json"],
    &["lookup", "2a00::/8"],
];

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `<len> <hash> <command>` for each query, run by `bin` on the data directory `dir`.
fn answers(bin: &Path, dir: &Path) -> String {
    let mut out = String::new();
    for q in QUERIES {
        let o = Command::new(bin)
            .env_remove("RIPE_DB")
            .env_remove("RIPE_SNAPSHOT")
            .arg("--data-dir")
            .arg(dir)
            .args(*q)
            .output()
            .unwrap();
        assert!(o.status.success(), "{q:?}: {o:?}");
        out.push_str(&format!(
            "{} {:016x} {}\n",
            o.stdout.len(),
            fnv(&o.stdout),
            q.join(" ")
        ));
    }
    out
}

/// Every row and change of a version-2 database (its tables).
fn dump_v2(db: &Path) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let c = Connection::open(db).unwrap();
    let read = |sql: &str| -> Vec<Vec<String>> {
        c.prepare(sql)
            .unwrap()
            .query_map([], |r| (0..5).map(|i| r.get::<_, String>(i)).collect())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let mut rows = read("SELECT kind, source, value, first_seen, last_seen FROM addresses");
    rows.sort();
    let changes =
        read("SELECT time, kind, source, value, change FROM changes ORDER BY time, rowid");
    (rows, changes)
}

/// The same, as the program reads a version-3 database.
fn dump_v3(t: &TestDir) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let d = ripe_cidr_collector::db::open(&t.paths()).unwrap();
    let mut rows: Vec<Vec<String>> = d
        .all_rows()
        .unwrap()
        .into_iter()
        .map(|r| {
            vec![
                r.kind.to_string(),
                r.source,
                r.value,
                r.first_seen,
                r.last_seen,
            ]
        })
        .collect();
    rows.sort();
    let changes = d
        .all_changes()
        .unwrap()
        .into_iter()
        .map(|c| {
            vec![
                c.time,
                c.kind.to_string(),
                c.source,
                c.value,
                c.change.to_string(),
            ]
        })
        .collect();
    (rows, changes)
}

#[test]
fn version_2_database_migrates_with_every_answer_unchanged() {
    let t = TestDir::new();
    let db = t.file("ripe.db");
    build_v2(&db);
    let (rows, changes) = dump_v2(&db);
    assert_eq!(rows.len(), 50_000);
    assert_eq!(changes.len(), 10_000);
    let v2_size = std::fs::metadata(&db).unwrap().len();
    // A command that only reads never migrates (it may run where nothing can be
    // written): it names the database and what migrates it ...
    let o = t.run(&["export"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("schema version 2 needs migrating"),
        "{o:?}"
    );
    // ... which is the first open of a writing command (`run`, the daemon, `serve`).
    drop(ripe_cidr_collector::db::open(&t.paths()).unwrap());
    let got = answers(&bin(), t.path());
    let c = Connection::open(&db).unwrap();
    let version: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, ripe_cidr_collector::db::SCHEMA_VERSION);
    drop(c);
    // Every row, time and change (in the order version 2 listed them).
    let (rows3, changes3) = dump_v3(&t);
    assert_eq!(rows3, rows);
    assert_eq!(changes3, changes);
    // And through the views, as `sqlite3` shows them.
    if let Some(n) = sqlite3(&db, "SELECT count(*) FROM addresses") {
        assert_eq!(n, "50000\n");
        let first = sqlite3(&db, "SELECT * FROM changes LIMIT 3").unwrap();
        let want: String = changes[..3].iter().map(|c| c.join("|") + "\n").collect();
        assert_eq!(first, want);
    }
    let want = std::fs::read_to_string("tests/fixtures/v2-answers.txt").unwrap();
    assert_eq!(got, want, "the answers of version 2");
    let v3_size = std::fs::metadata(&db).unwrap().len();
    assert!(
        v3_size * 2 < v2_size,
        "{v3_size} of {v2_size} bytes: compact"
    );
    // A second open changes nothing.
    let before = std::fs::read(&db).unwrap();
    assert_eq!(answers(&bin(), t.path()), want);
    assert_eq!(dump_v3(&t), (rows3, changes3));
    assert_eq!(std::fs::read(&db).unwrap().len(), before.len());
    // A newer version is refused, untouched.
    Connection::open(&db)
        .unwrap()
        .execute_batch("PRAGMA user_version = 99")
        .unwrap();
    let o = t.run(&["export"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("schema version 99"),
        "{o:?}"
    );
}

/// Records the fixture with a version-2 binary: `RIPE_V2_BIN=/path/to/old/binary
/// cargo test --test it record_v2_answers -- --ignored`.
#[test]
#[ignore]
fn record_v2_answers() {
    let old = std::env::var("RIPE_V2_BIN").expect("RIPE_V2_BIN");
    let t = TestDir::new();
    build_v2(&t.file("ripe.db"));
    let out = answers(Path::new(&old), t.path());
    std::fs::write("tests/fixtures/v2-answers.txt", out).unwrap();
}

/// Runs `sqlite3 DB SQL`; `None` (after [`cannot_run`]) without the CLI.
fn sqlite3(db: &Path, sql: &str) -> Option<String> {
    let o = match Command::new("sqlite3").arg(db).arg(sql).output() {
        Ok(o) => o,
        Err(e) => {
            cannot_run(&format!("no sqlite3 command-line tool: {e}"));
            return None;
        }
    };
    assert!(o.status.success(), "{sql}: {o:?}");
    Some(String::from_utf8(o.stdout).unwrap())
}

#[test]
fn sqlite3_reads_and_writes_through_the_views() {
    use ripe_cidr_collector::db;
    use ripe_cidr_collector::source::Kind;
    let t = TestDir::new();
    let paths = t.paths();
    let now = BASE + 40 * 86_400;
    {
        let mut d = db::open(&paths).unwrap();
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        d.merge_source(
            Kind::Asn,
            "62041",
            &v(&["91.108.4.0/22", "2001:b28:f23d::/48"]),
            now - 86_400,
            7,
        )
        .unwrap();
        d.merge_source(Kind::Fqdn, "t.example", &v(&["149.154.167.99"]), now, 7)
            .unwrap();
        d.merge_source(
            Kind::Asn,
            "62041",
            &v(&["2001:b28:f23d::/48"]),
            now + 9 * 86_400,
            7,
        )
        .unwrap();
    }
    let db = &paths.db;
    // The example of docs/storage.md, "Looking at the data".
    let Some(out) = sqlite3(
        db,
        "SELECT kind, source, value, last_seen FROM addresses ORDER BY value",
    ) else {
        return;
    };
    assert_eq!(
        out,
        format!(
            "fqdn|t.example|149.154.167.99|{}\nasn|62041|2001:b28:f23d::/48|{}\n",
            iso(now),
            iso(now + 9 * 86_400)
        )
    );
    let changes = sqlite3(db, "SELECT * FROM changes").unwrap();
    let mine: String = db::open(&paths)
        .unwrap()
        .all_changes()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{}|{}|{}|{}|{}\n",
                c.time, c.kind, c.source, c.value, c.change
            )
        })
        .collect();
    assert_eq!(changes, mine);
    assert!(changes.contains("|expired\n"), "{changes}");
    // The writes scripts made: insert or replace, update of the times, a change.
    let ins = "INSERT OR REPLACE INTO addresses (kind, source, value, first_seen, last_seen) \
               VALUES ('asn', '62041', '10.0.0.0/8', '2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z')";
    sqlite3(db, ins).unwrap();
    sqlite3(db, ins).unwrap();
    sqlite3(
        db,
        "UPDATE addresses SET first_seen = '2025-01-01T00:00:00Z', last_seen = '2026-12-01T00:00:00Z' \
         WHERE value = '10.0.0.0/8'",
    )
    .unwrap();
    sqlite3(
        db,
        "INSERT INTO changes (time, kind, source, value, change) \
         VALUES ('2026-12-24T00:00:00Z', 'asn', '62041', '10.0.0.0/8', 'purged')",
    )
    .unwrap();
    // A new kind of source needs no schema change.
    sqlite3(
        db,
        "INSERT INTO addresses (kind, source, value, first_seen, last_seen) \
         VALUES ('feed', 'x', '2001:db8::/32', 'legacy time', '2026-12-01T00:00:00Z')",
    )
    .unwrap();
    let d = db::open(&paths).unwrap();
    let rows = d.rows(Kind::Asn, "62041").unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0].value, "10.0.0.0/8");
    assert_eq!(rows[0].first_seen, "2025-01-01T00:00:00Z");
    assert_eq!(rows[0].last_seen, "2026-12-01T00:00:00Z");
    let last = d.all_changes().unwrap().pop().unwrap();
    assert_eq!(
        (last.time.as_str(), last.value.as_str()),
        ("2026-12-24T00:00:00Z", "10.0.0.0/8")
    );
    let feed = sqlite3(db, "SELECT * FROM addresses WHERE kind = 'feed'").unwrap();
    assert_eq!(
        feed,
        "feed|x|2001:db8::/32|legacy time|2026-12-01T00:00:00Z\n"
    );
    // Times and values a script writes are stored as the program stores them: the
    // canonical forms compactly, anything else as text.
    for (i, (time, value)) in [
        ("2026-12-01T00:00:00Z", "1.2.3.0/24"),
        ("1999-12-31T23:59:59Z", "1.2.3.4"),
        ("2026-02-30T00:00:00Z", "01.2.3.0/24"),
        ("2026-09-01T00:00:00", "1.2.3.256"),
        ("2026-09-01T00:00:00.5Z", "1.2.3.0/33"),
        ("1969-12-31T23:59:59Z", "2001:db8::/32"),
    ]
    .iter()
    .enumerate()
    {
        sqlite3(
            db,
            &format!("INSERT INTO addresses VALUES ('asn', 't{i}', '{value}', '{time}', '{time}')"),
        )
        .unwrap();
        let row = &d.rows(Kind::Asn, &format!("t{i}")).unwrap()[0];
        assert_eq!(
            (row.value.as_str(), row.first_seen.as_str()),
            (*value, *time)
        );
        let types = sqlite3(
            db,
            &format!(
                "SELECT typeof(e.value), typeof(e.first_seen) FROM entries e \
                 JOIN sources s ON s.id = e.source WHERE s.name = 't{i}'"
            ),
        )
        .unwrap();
        let compact = |yes: bool| if yes { "integer" } else { "text" };
        let want = format!("{}|{}\n", compact(i < 2), compact(i < 2));
        assert_eq!(types, want, "{time} {value}");
    }
    // A value a script stored and the same value merged later are one row.
    let mut d = d;
    d.merge_source(
        Kind::Asn,
        "62041",
        &["10.0.0.0/8".to_string()],
        now + 10 * 86_400,
        7,
    )
    .unwrap();
    assert_eq!(d.rows(Kind::Asn, "62041").unwrap().len(), 2);
}

/// Our SQLite leaves virtual tables out (src/db/omitted.rs). A `ripe.db` into which the
/// `sqlite3` program wrote one still opens: the declaration is skipped, our own tables
/// answer as before, and writes go on.
#[test]
fn a_virtual_table_written_by_sqlite3_does_not_break_the_database() {
    use ripe_cidr_collector::db;
    use ripe_cidr_collector::source::Kind;
    let t = TestDir::new();
    let paths = t.paths();
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    db::open(&paths)
        .unwrap()
        .merge_source(Kind::Asn, "62041", &v(&["91.108.4.0/22"]), BASE, 7)
        .unwrap();
    if sqlite3(&paths.db, "CREATE VIRTUAL TABLE notes USING fts5(body)").is_none() {
        return;
    }
    let mut d = db::open(&paths).unwrap();
    d.merge_source(Kind::Asn, "62041", &v(&["91.108.8.0/22"]), BASE + 60, 7)
        .unwrap();
    let rows: Vec<String> = d
        .rows(Kind::Asn, "62041")
        .unwrap()
        .into_iter()
        .map(|r| r.value)
        .collect();
    assert_eq!(rows, ["91.108.4.0/22", "91.108.8.0/22"]);
    let out = t.run(&["export", "--group", "*"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "91.108.4.0/22\n91.108.8.0/22\n"
    );
}
