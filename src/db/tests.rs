//! Tests of the store.
use super::*;

mod held;
mod history;
mod legacy;
mod pool;
use crate::format::TypeFilter;

const DAY: i64 = 86_400;
const T0: i64 = 1_790_000_000;

fn setup() -> (tempfile::TempDir, Paths) {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::new(dir.path(), None);
    (dir, paths)
}

fn vals(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn values_of(db: &Db, kind: Kind, source: &str) -> Vec<String> {
    db.rows(kind, source)
        .unwrap()
        .into_iter()
        .map(|r| r.value)
        .collect()
}

/// The daemon asks for the sources at start: a sort of every row would be its
/// peak memory (a temporary b-tree of all values). The program's SQLite has no
/// EXPLAIN (omitted for size): `sqlite3` plans the same query.
#[test]
fn listing_the_sources_sorts_no_rows() {
    let (_d, paths) = setup();
    let mut db = open(&paths).unwrap();
    db.merge_source(Kind::Asn, "64500", &vals(&["192.0.2.0/24"]), T0, 7)
        .unwrap();
    drop(db);
    let sql = format!(
        "EXPLAIN QUERY PLAN {}",
        read::SOURCES.replace("?1", "'asn'")
    );
    let plan = match std::process::Command::new("sqlite3")
        .arg(&paths.db)
        .arg(&sql)
        .output()
    {
        Ok(o) => String::from_utf8_lossy(&o.stdout).into_owned(),
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") => {
            panic!("CI=true and no sqlite3 command-line tool: {e}")
        }
        Err(e) => return eprintln!("skipped: no sqlite3 command-line tool: {e}"),
    };
    assert!(plan.contains("SEARCH e USING PRIMARY KEY"), "{plan}");
    assert!(!plan.contains("TEMP B-TREE"), "{plan}");
}

#[test]
fn schema_and_pragmas() {
    let (_d, paths) = setup();
    let db = open(&paths).unwrap();
    assert_eq!(db.pragma("journal_mode").unwrap(), "wal");
    assert_eq!(db.pragma("busy_timeout").unwrap(), "5000");
    assert_eq!(db.pragma("synchronous").unwrap(), "1");
    assert_eq!(db.pragma("temp_store").unwrap(), "2");
    assert_eq!(db.pragma("cache_size").unwrap(), format!("-{CACHE_KIB}"));
    assert_eq!(
        db.pragma("user_version").unwrap(),
        SCHEMA_VERSION.to_string()
    );
    // The columns of the views are checked through `sqlite3` (tests/it/migrate.rs):
    // the program's SQLite has no date functions, which they use.
    let sql = |name: &str| -> String {
        db.conn
            .query_row(
                "SELECT sql FROM sqlite_master WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .unwrap()
    };
    assert!(sql("entries").contains("WITHOUT ROWID"));
    assert!(sql("history").contains("WITHOUT ROWID"));
    assert!(sql("entries_value").contains("(value)"));
    assert!(sql("addresses").starts_with("CREATE VIEW"));
    // Only the indexes that queries use: the value index and the sources' key.
    let indexes: i64 = db
        .conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'index'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(indexes, 2);
}

#[test]
fn merge_and_ttl() {
    let (_d, paths) = setup();
    let mut db = open(&paths).unwrap();
    let s = db
        .merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8", "11.0.0.0/8"]), T0, 7)
        .unwrap();
    assert_eq!(
        s,
        MergeStats {
            added: 2,
            refreshed: 0,
            removed: 0
        }
    );
    db.merge_source(Kind::Asn, "2", &vals(&["12.0.0.0/8"]), T0, 7)
        .unwrap();
    // A day later 11/8 is gone from the answer: still stored (not expired).
    let s = db
        .merge_source(
            Kind::Asn,
            "1",
            &vals(&["10.0.0.0/8", "10.0.0.0/8"]),
            T0 + DAY,
            7,
        )
        .unwrap();
    assert_eq!(
        s,
        MergeStats {
            added: 0,
            refreshed: 1,
            removed: 0
        }
    );
    let rows = db.rows(Kind::Asn, "1").unwrap();
    assert_eq!(rows[0].first_seen, util::iso(T0));
    assert_eq!(rows[0].last_seen, util::iso(T0 + DAY));
    assert_eq!(
        rows[1].last_seen,
        util::iso(T0),
        "unseen value keeps its last_seen"
    );
    // Eight days after it was last seen, the next merge of source 1 expires it...
    let s = db
        .merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8"]), T0 + 8 * DAY, 7)
        .unwrap();
    assert_eq!(s.removed, 1);
    assert_eq!(values_of(&db, Kind::Asn, "1"), ["10.0.0.0/8"]);
    // ...but source 2's equally old row stays until source 2 is merged.
    assert_eq!(values_of(&db, Kind::Asn, "2"), ["12.0.0.0/8"]);
    let s = db
        .merge_source(Kind::Asn, "2", &[], T0 + 8 * DAY, 7)
        .unwrap();
    assert_eq!(s.removed, 1);
    assert!(values_of(&db, Kind::Asn, "2").is_empty());
}

#[test]
fn ttl_zero_keeps_everything() {
    let (_d, paths) = setup();
    let mut db = open(&paths).unwrap();
    db.merge_source(Kind::Fqdn, "a.example", &vals(&["1.2.3.4"]), T0, 0)
        .unwrap();
    let s = db
        .merge_source(Kind::Fqdn, "a.example", &[], T0 + 3650 * DAY, 0)
        .unwrap();
    assert_eq!(s.removed, 0);
    assert_eq!(
        db.sweep_unconfigured(Kind::Fqdn, &[], T0 + 3650 * DAY, 0)
            .unwrap(),
        0
    );
    assert_eq!(values_of(&db, Kind::Fqdn, "a.example"), ["1.2.3.4"]);
}

#[test]
fn many_values_partial_overlap() {
    // Exercises both update strategies (bulk update + restore, and per value).
    let (_d, paths) = setup();
    let mut db = open(&paths).unwrap();
    let all: Vec<String> = (0..200).map(|i| format!("10.{i}.0.0/16")).collect();
    db.merge_source(Kind::Asn, "1", &all, T0, 7).unwrap();
    let s = db
        .merge_source(Kind::Asn, "1", &all[..150], T0 + DAY, 7)
        .unwrap();
    assert_eq!((s.added, s.refreshed), (0, 150));
    let s = db
        .merge_source(Kind::Asn, "1", &all[..10], T0 + 2 * DAY, 7)
        .unwrap();
    assert_eq!((s.added, s.refreshed), (0, 10));
    let rows = db.rows(Kind::Asn, "1").unwrap();
    let last = |v: &str| {
        rows.iter()
            .find(|r| r.value == v)
            .unwrap()
            .last_seen
            .clone()
    };
    assert_eq!(last("10.0.0.0/16"), util::iso(T0 + 2 * DAY));
    assert_eq!(last("10.100.0.0/16"), util::iso(T0 + DAY));
    assert_eq!(last("10.199.0.0/16"), util::iso(T0));
}

/// A refresh updates ranges of the key between the stored rows an answer lacks
/// (`WriteTx::refresh`): rows seen again, interleaved with unseen and new ones,
/// IPv4 codes and text alike, each get the new time, the unseen keep theirs.
#[test]
fn a_refresh_leaves_every_unseen_row_between_seen_ones() {
    let (_d, paths) = setup();
    let mut db = open(&paths).unwrap();
    let stored = ["10.0.0.0/8", "11.0.0.0/8", "12.0.0.0/8", "13.0.0.0/8"];
    let stored6 = ["2001:db8::/32", "2001:db9::/32", "2001:dba::/32"];
    let all: Vec<String> = stored
        .iter()
        .chain(&stored6)
        .map(|s| s.to_string())
        .collect();
    db.merge_source(Kind::Asn, "1", &all, T0, 7).unwrap();
    let answer = vals(&["11.0.0.0/8", "11.1.0.0/16", "12.0.0.0/8", "2001:db8::/32"]);
    let answer = [answer, vals(&["2001:db9:1::/48", "2001:dba::/32"])].concat();
    let s = db
        .merge_source(Kind::Asn, "1", &answer, T0 + DAY, 7)
        .unwrap();
    assert_eq!((s.added, s.refreshed, s.removed), (2, 4, 0));
    let seen: Vec<(String, String)> = db
        .rows(Kind::Asn, "1")
        .unwrap()
        .into_iter()
        .map(|r| (r.value, r.last_seen))
        .collect();
    let at = |v: &str, t: i64| (v.to_string(), util::iso(t));
    let mut want = vec![at("10.0.0.0/8", T0), at("11.0.0.0/8", T0 + DAY)];
    want.extend([at("11.1.0.0/16", T0 + DAY), at("12.0.0.0/8", T0 + DAY)]);
    want.extend([at("13.0.0.0/8", T0), at("2001:db8::/32", T0 + DAY)]);
    want.extend([at("2001:db9::/32", T0), at("2001:db9:1::/48", T0 + DAY)]);
    want.push(at("2001:dba::/32", T0 + DAY));
    // Rows come ordered by their text here, not the key's order.
    want.sort();
    assert_eq!(seen, want);
}

#[test]
fn failed_merge_leaves_rows_untouched() {
    let (_d, paths) = setup();
    let mut db = open(&paths).unwrap();
    db.merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8", "11.0.0.0/8"]), T0, 7)
        .unwrap();
    let before = db.all_rows().unwrap();
    // Inject a failure in the middle of the next merge: inserting this value aborts.
    db.conn
        .execute_batch(&format!(
            "CREATE TRIGGER poison BEFORE INSERT ON entries WHEN NEW.value = {}
                 BEGIN SELECT RAISE(ABORT, 'injected'); END;",
            codec::v4_code("66.0.0.0/8").unwrap()
        ))
        .unwrap();
    let err = db
        .merge_source(
            Kind::Asn,
            "1",
            &vals(&["10.0.0.0/8", "66.0.0.0/8"]),
            T0 + 30 * DAY,
            7,
        )
        .unwrap_err();
    assert!(err.to_string().contains("injected"), "{err}");
    assert_eq!(db.all_rows().unwrap(), before);
}

#[test]
fn purge_and_sweep() {
    let (_d, paths) = setup();
    let mut db = open(&paths).unwrap();
    db.merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8"]), T0, 7)
        .unwrap();
    db.merge_source(Kind::Asn, "2", &vals(&["11.0.0.0/8", "12.0.0.0/8"]), T0, 7)
        .unwrap();
    db.merge_source(Kind::Fqdn, "x.example", &vals(&["1.1.1.1"]), T0, 7)
        .unwrap();
    assert_eq!(db.purge_source(Kind::Asn, "2").unwrap(), 2);
    assert!(values_of(&db, Kind::Asn, "2").is_empty());
    // Source 1 is no longer configured: kept while fresh, swept once expired.
    assert_eq!(
        db.sweep_unconfigured(Kind::Asn, &[], T0 + 6 * DAY, 7)
            .unwrap(),
        0
    );
    assert_eq!(values_of(&db, Kind::Asn, "1"), ["10.0.0.0/8"]);
    assert_eq!(
        db.sweep_unconfigured(Kind::Asn, &vals(&["1"]), T0 + 8 * DAY, 7)
            .unwrap(),
        0
    );
    assert_eq!(
        db.sweep_unconfigured(Kind::Asn, &[], T0 + 8 * DAY, 7)
            .unwrap(),
        1
    );
    assert!(values_of(&db, Kind::Asn, "1").is_empty());
    // Other kinds are not touched by an ASN sweep.
    assert_eq!(values_of(&db, Kind::Fqdn, "x.example"), ["1.1.1.1"]);
    assert_eq!(db.count_values(Kind::Fqdn).unwrap(), 1);
}

#[test]
fn values_and_counts() {
    let (_d, paths) = setup();
    let mut db = open(&paths).unwrap();
    db.merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8"]), T0, 7)
        .unwrap();
    db.merge_source(
        Kind::Asn,
        "2",
        &vals(&["10.0.0.0/8", "2001:db8::/32"]),
        T0,
        7,
    )
    .unwrap();
    db.merge_source(Kind::Fqdn, "x.example", &vals(&["1.1.1.1"]), T0, 7)
        .unwrap();
    let mut all = db.get_values(TypeFilter::All).unwrap();
    all.sort();
    assert_eq!(all, ["1.1.1.1", "10.0.0.0/8", "2001:db8::/32"]);
    assert_eq!(db.get_values(TypeFilter::Fqdn).unwrap(), ["1.1.1.1"]);
    assert_eq!(db.get_values(TypeFilter::Cidr).unwrap().len(), 2);
    assert_eq!(db.count_values(Kind::Asn).unwrap(), 3);
    let s = db.sources(Kind::Asn).unwrap();
    assert_eq!((s[1].source.as_str(), s[1].count), ("2", 2));
}

#[test]
fn listed_values_are_numbers_for_ipv4_codes_and_text_otherwise() {
    let (_d, paths) = setup();
    let mut db = open(&paths).unwrap();
    let stored = vals(&["10.0.0.0/8", "10.0.0.1/24", "2001:db8::/32"]);
    db.merge_source(Kind::Asn, "1", &stored, T0, 7).unwrap();
    db.merge_source(Kind::Fqdn, "x.example", &vals(&["1.1.1.1"]), T0, 7)
        .unwrap();
    // Not canonical (a script's), kept as text; and a length over 32, which the code
    // can hold (`1.2.3.4/40`: 0x01020304 << 6 | 40).
    db.run(|c| {
        c.execute_batch(
            "INSERT INTO entries (source, value, first_seen, last_seen, added) \
             VALUES (1, '010.1.2.3/8', 0, 0, 0), (1, 1082179880, 0, 0, 0)",
        )
    })
    .unwrap();
    let mut listed = Vec::new();
    db.for_each_value(TypeFilter::All, |v| {
        listed.push((format!("{v:?}"), v.with_text(str::to_string)))
    })
    .unwrap();
    listed.sort_by(|a, b| a.1.cmp(&b.1));
    let got: Vec<(&str, &str)> = listed
        .iter()
        .map(|(d, t)| (d.as_str(), t.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("Text(\"010.1.2.3/8\")", "010.1.2.3/8"),
            ("V4(1.1.1.1, None)", "1.1.1.1"),
            ("V4(1.2.3.4, Some(40))", "1.2.3.4/40"),
            ("V4(10.0.0.0, Some(8))", "10.0.0.0/8"),
            ("V4(10.0.0.1, Some(24))", "10.0.0.1/24"),
            ("Text(\"2001:db8::/32\")", "2001:db8::/32"),
        ]
    );
    let mut of = Vec::new();
    let x = |k: Kind, name: &str| (k, name) == (Kind::Fqdn, "x.example");
    db.for_each_value_of(x, |v| of.push(format!("{v:?}")))
        .unwrap();
    assert_eq!(of, ["V4(1.1.1.1, None)"]);
}

#[test]
fn corrupt_database_is_moved_aside() {
    let (_d, paths) = setup();
    fs::write(&paths.db, b"this is not a database at all, just some text..........................................................").unwrap();
    let e = open(&paths).unwrap_err();
    assert!(e.is_corrupt(), "{e}");
    assert!(!paths.db.exists());
    let aside: Vec<_> = fs::read_dir(&paths.data_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("ripe.db.corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert!(e.to_string().contains("ripe.db.corrupt-"), "{e}");
    // The next open starts fresh.
    let db = open(&paths).unwrap();
    assert!(db.all_rows().unwrap().is_empty());
}

#[cfg(unix)]
#[test]
fn corrupt_database_behind_a_link() {
    let (dir, paths) = setup();
    let flash = dir.path().join("flash");
    fs::create_dir(&flash).unwrap();
    fs::write(flash.join("ripe.db"), vec![0x42u8; 8192]).unwrap();
    std::os::unix::fs::symlink(flash.join("ripe.db"), &paths.db).unwrap();
    let e = open(&paths).unwrap_err();
    assert!(e.is_corrupt(), "{e}");
    // The link stays; the file on "flash" was moved aside there.
    assert!(fs::symlink_metadata(&paths.db)
        .unwrap()
        .file_type()
        .is_symlink());
    let aside = fs::read_dir(&flash)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("ripe.db.corrupt-")
        })
        .count();
    assert_eq!(aside, 1);
    // The fresh database is created where the link points.
    let mut db = open(&paths).unwrap();
    db.merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8"]), T0, 7)
        .unwrap();
    assert!(flash.join("ripe.db").is_file());
}

#[test]
fn corruption_found_while_using() {
    let (_d, paths) = setup();
    let mut db = open(&paths).unwrap();
    let many: Vec<String> = (0..5000)
        .map(|i| format!("10.{}.{}.0/24", i / 256, i % 256))
        .collect();
    db.merge_source(Kind::Asn, "1", &many, T0, 7).unwrap();
    drop(db);
    // Checkpoint so the data is in the main file, then damage its pages.
    {
        let c = Connection::open(&paths.db).unwrap();
        c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
    }
    let mut bytes = fs::read(&paths.db).unwrap();
    for b in bytes.iter_mut().skip(4096 * 2) {
        *b = 0x55;
    }
    fs::write(&paths.db, &bytes).unwrap();
    let e = open(&paths)
        .and_then(|db| db.all_rows().map(|_| ()))
        .unwrap_err();
    assert!(e.is_corrupt(), "{e}");
    assert!(!paths.db.exists());
}

#[test]
fn newer_schema_is_refused_untouched() {
    let (_d, paths) = setup();
    {
        let c = Connection::open(&paths.db).unwrap();
        c.execute_batch("CREATE TABLE future (x); PRAGMA user_version = 7;")
            .unwrap();
    }
    let before = fs::read(&paths.db).unwrap();
    let e = open(&paths).unwrap_err();
    assert!(matches!(e, StoreError::NewerSchema { found: 7, .. }), "{e}");
    assert!(e.to_string().contains("newer"), "{e}");
    assert_eq!(fs::read(&paths.db).unwrap(), before);
    assert!(!paths.data_dir.join("ripe.db-wal").exists());
}

#[test]
fn generation_counts_values_added_and_removed() {
    let (_d, paths) = setup();
    let mut db = open(&paths).unwrap();
    let g = |db: &Db| db.generation().unwrap().0;
    assert_eq!(g(&db), 0, "a new database");
    db.merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8"]), T0, 7)
        .unwrap();
    assert_eq!(g(&db), 1);
    // Seen again: only last_seen moves, no snapshot is due for that.
    db.merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8"]), T0 + DAY, 7)
        .unwrap();
    assert_eq!(g(&db), 1);
    db.purge_source(Kind::Asn, "1").unwrap();
    assert_eq!(g(&db), 2);
    db.purge_source(Kind::Asn, "1").unwrap();
    assert_eq!(g(&db), 2, "nothing purged");
    db.saved(2).unwrap();
    assert_eq!(db.generation().unwrap(), (2, 2));
}
