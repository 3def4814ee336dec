//! Tests of schema version 2: the migration from version 1 and the `changes` record.
use rusqlite::Connection;

use super::*;

/// (change, kind, source, value) of every recorded change, oldest first.
fn changes(db: &Db) -> Vec<(Change, Kind, String, String)> {
    db.all_changes()
        .unwrap()
        .into_iter()
        .map(|c| (c.change, c.kind, c.source, c.value))
        .collect()
}

fn ch(change: Change, kind: Kind, source: &str, value: &str) -> (Change, Kind, String, String) {
    (change, kind, source.into(), value.into())
}

/// Everything in the database file that a migration could touch.
fn dump(paths: &Paths) -> (i64, Vec<String>, Vec<Vec<String>>) {
    let c = Connection::open(&paths.db).unwrap();
    let version = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    let schema = c
        .prepare("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    drop(c);
    // The program's SQLite has no date functions, which the views use: the rows as
    // the program reads them (the views are tested through `sqlite3`, tests/it).
    let rows = open(paths)
        .unwrap()
        .all_rows()
        .unwrap()
        .into_iter()
        .map(|r| {
            vec![
                r.kind.as_str().to_string(),
                r.source,
                r.value,
                r.first_seen,
                r.last_seen,
            ]
        })
        .collect();
    (version, schema, rows)
}

#[test]
fn version_1_database_with_rows_migrates_once() {
    let (_d, paths) = setup();
    let mut expected = Vec::new();
    {
        let c = Connection::open(&paths.db).unwrap();
        c.execute_batch(migrate::SCHEMA_V1).unwrap();
        c.execute_batch("BEGIN").unwrap();
        for i in 0..5000u32 {
            let (kind, source, value) = if i % 5 == 0 {
                (
                    "fqdn",
                    format!("h{}.example", i % 7),
                    format!("10.{}.{}.1", i / 256, i % 256),
                )
            } else {
                (
                    "asn",
                    format!("{}", i % 13),
                    format!("11.{}.{}.0/24", i / 256, i % 256),
                )
            };
            let first = format!("2026-01-{:02}T00:00:00Z", 1 + i % 28);
            c.execute(
                "INSERT INTO addresses VALUES (?1, ?2, ?3, ?4, '2026-11-30T00:00:00Z')",
                [kind, &source, &value, &first],
            )
            .unwrap();
            expected.push(vec![
                kind.to_string(),
                source,
                value,
                first,
                "2026-11-30T00:00:00Z".to_string(),
            ]);
        }
        c.execute_batch("COMMIT; PRAGMA user_version = 1;").unwrap();
    }
    expected.sort();
    let db = open(&paths).unwrap();
    assert_eq!(
        db.pragma("user_version").unwrap(),
        SCHEMA_VERSION.to_string()
    );
    assert!(
        db.all_changes().unwrap().is_empty(),
        "migration records nothing"
    );
    drop(db);
    let after = dump(&paths);
    assert_eq!(after.0, SCHEMA_VERSION);
    assert_eq!(after.2, expected, "every row is kept as it was");
    assert!(after.1.iter().any(|s| s.contains("CREATE VIEW changes")));
    // A second open changes nothing.
    drop(open(&paths).unwrap());
    assert_eq!(dump(&paths), after);
}

#[test]
fn a_newer_schema_version_is_refused() {
    let (_d, paths) = setup();
    drop(open(&paths).unwrap());
    let newer = SCHEMA_VERSION + 1;
    Connection::open(&paths.db)
        .unwrap()
        .execute_batch(&format!("PRAGMA user_version = {newer};"))
        .unwrap();
    let e = open(&paths).unwrap_err();
    assert!(
        matches!(e, StoreError::NewerSchema { found, .. } if found == newer),
        "{e}"
    );
}

#[test]
fn merge_records_added_and_expired_unchanged_writes_nothing() {
    let (_d, paths) = setup();
    let mut db = open(&paths).unwrap();
    let t0 = util::unix_now() - 10 * DAY;
    db.merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8", "11.0.0.0/8"]), t0, 7)
        .unwrap();
    assert_eq!(
        changes(&db),
        [
            ch(Change::Added, Kind::Asn, "1", "10.0.0.0/8"),
            ch(Change::Added, Kind::Asn, "1", "11.0.0.0/8")
        ]
    );
    // The same answer again, and a value listed twice: nothing new to record.
    db.merge_source(
        Kind::Asn,
        "1",
        &vals(&["11.0.0.0/8", "10.0.0.0/8", "10.0.0.0/8"]),
        t0 + 3600,
        7,
    )
    .unwrap();
    assert_eq!(db.all_changes().unwrap().len(), 2);
    // 11/8 no longer announced: expires eight days later, recorded with its reason.
    db.merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8"]), t0 + DAY, 7)
        .unwrap();
    db.merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8"]), t0 + 9 * DAY, 7)
        .unwrap();
    let all = db.all_changes().unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all[2].change, Change::Expired);
    assert_eq!(all[2].value, "11.0.0.0/8");
    assert_eq!(all[2].time, util::iso(t0 + 9 * DAY));
}

#[test]
fn sweep_and_purge_are_recorded_with_their_reason() {
    let (_d, paths) = setup();
    let mut db = open(&paths).unwrap();
    let now = util::unix_now();
    db.merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8"]), now - 9 * DAY, 7)
        .unwrap();
    db.merge_source(
        Kind::Fqdn,
        "x.example",
        &vals(&["1.1.1.1", "2.2.2.2"]),
        now - DAY,
        7,
    )
    .unwrap();
    assert_eq!(db.sweep_unconfigured(Kind::Asn, &[], now, 7).unwrap(), 1);
    assert_eq!(db.purge_source(Kind::Fqdn, "x.example").unwrap(), 2);
    let all = db.all_changes().unwrap();
    let tail: Vec<_> = changes(&db).split_off(3);
    assert_eq!(
        tail,
        [
            ch(Change::Swept, Kind::Asn, "1", "10.0.0.0/8"),
            ch(Change::Purged, Kind::Fqdn, "x.example", "1.1.1.1"),
            ch(Change::Purged, Kind::Fqdn, "x.example", "2.2.2.2"),
        ]
    );
    assert_eq!(all[3].time, util::iso(now));
    // A purge of nothing, and a sweep with nothing expired, write nothing.
    assert_eq!(db.purge_source(Kind::Fqdn, "x.example").unwrap(), 0);
    assert_eq!(db.sweep_unconfigured(Kind::Asn, &[], now, 7).unwrap(), 0);
    assert_eq!(db.all_changes().unwrap().len(), 6);
}

#[test]
fn failed_write_records_nothing() {
    let (_d, paths) = setup();
    let mut db = open(&paths).unwrap();
    db.conn
        .execute_batch(&format!(
            "CREATE TRIGGER poison BEFORE INSERT ON entries WHEN NEW.value = {}
                 BEGIN SELECT RAISE(ABORT, 'injected'); END;",
            codec::v4_code("66.0.0.0/8").unwrap()
        ))
        .unwrap();
    let now = util::unix_now();
    assert!(db
        .merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8", "66.0.0.0/8"]), now, 7)
        .is_err());
    assert!(db.all_changes().unwrap().is_empty());
}

#[test]
fn history_days_prunes_on_the_next_write() {
    let (_d, paths) = setup();
    let mut db = open(&paths).unwrap();
    db.set_history_days(2);
    let t0 = util::unix_now() - 30 * DAY;
    db.merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8"]), t0, 7)
        .unwrap();
    db.merge_source(
        Kind::Asn,
        "1",
        &vals(&["10.0.0.0/8", "11.0.0.0/8"]),
        t0 + DAY,
        7,
    )
    .unwrap();
    assert_eq!(db.all_changes().unwrap().len(), 2);
    // Three days after the first change, the next write (even one that changes
    // nothing) deletes the changes older than two days.
    db.merge_source(
        Kind::Asn,
        "1",
        &vals(&["10.0.0.0/8", "11.0.0.0/8"]),
        t0 + 3 * DAY,
        7,
    )
    .unwrap();
    assert_eq!(
        changes(&db),
        [ch(Change::Added, Kind::Asn, "1", "11.0.0.0/8")]
    );
    // 0 keeps none, and records none.
    db.set_history_days(0);
    db.merge_source(Kind::Asn, "2", &vals(&["12.0.0.0/8"]), t0 + 3 * DAY, 7)
        .unwrap();
    assert!(db.all_changes().unwrap().is_empty());
    // The default is 30 days.
    let db = open(&paths).unwrap();
    assert_eq!(db.history_days, 30);
}

#[test]
fn changes_since_and_kind() {
    let (_d, paths) = setup();
    let mut db = open(&paths).unwrap();
    let t0 = util::unix_now() - 5 * DAY;
    db.merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8"]), t0, 7)
        .unwrap();
    db.merge_source(Kind::Fqdn, "a.example", &vals(&["1.1.1.1"]), t0 + DAY, 7)
        .unwrap();
    let since = |s: i64, k: Option<Kind>, limit: usize| {
        let mut v = Vec::new();
        let more = db
            .for_each_change(&util::iso(s), k, limit, None, |c| v.push(c.value.clone()))
            .unwrap();
        (v, more)
    };
    assert_eq!(
        since(t0, None, 10),
        (vals(&["10.0.0.0/8", "1.1.1.1"]), false)
    );
    assert_eq!(since(t0 + 1, None, 10), (vals(&["1.1.1.1"]), false));
    assert_eq!(
        since(t0, Some(Kind::Asn), 10),
        (vals(&["10.0.0.0/8"]), false)
    );
    assert_eq!(since(t0, None, 1), (vals(&["10.0.0.0/8"]), true));
}

#[test]
fn changes_limit_counts_the_kept_sources_only() {
    let (_d, paths) = setup();
    let mut db = open(&paths).unwrap();
    let t0 = util::unix_now() - 5 * DAY;
    let many: Vec<String> = (0..20).map(|i| format!("10.0.{i}.0/24")).collect();
    db.merge_source(Kind::Asn, "1", &many, t0, 7).unwrap();
    db.merge_source(Kind::Asn, "2", &vals(&["192.0.2.0/24"]), t0 + DAY, 7)
        .unwrap();
    db.merge_source(Kind::Fqdn, "a.example", &vals(&["1.1.1.1"]), t0 + DAY, 7)
        .unwrap();
    let of = |want: &[&str], limit: usize| {
        let mut v = Vec::new();
        let mut keep = |_: Kind, s: &str| want.contains(&s);
        let more = db
            .for_each_change(&util::iso(t0), None, limit, Some(&mut keep), |c| {
                v.push(c.value.clone())
            })
            .unwrap();
        (v, more)
    };
    // Twenty changes of AS1 come first; a limit of 5 still reaches AS2's one.
    assert_eq!(of(&["2"], 5), (vals(&["192.0.2.0/24"]), false));
    assert_eq!(
        of(&["2", "a.example"], 5),
        (vals(&["192.0.2.0/24", "1.1.1.1"]), false)
    );
    let all_of_1 = of(&["1"], 30);
    assert_eq!(all_of_1.0.len(), 20);
    assert_eq!(of(&["1"], 5), (all_of_1.0[..5].to_vec(), true));
    assert_eq!(of(&[], 5), (Vec::new(), false));
    assert_eq!(of(&["1", "2", "a.example"], 30).0.len(), 22);
}

/// Feeds and countries are read back as their own kinds, not as ASNs: `lookup`,
/// `changes` and the detailed listing showed a country's values as `"kind":"asn"`,
/// source `ASNL`, and `"configured":false` for a configured country.
#[test]
fn feed_and_country_rows_keep_their_kind() {
    let (_d, paths) = setup();
    let mut db = open(&paths).unwrap();
    let now = util::unix_now();
    db.merge_source(Kind::Country, "NL", &vals(&["198.18.0.0/23"]), now, 7)
        .unwrap();
    db.merge_source(
        Kind::Feed,
        "http://f.example/x",
        &vals(&["203.0.113.0/24"]),
        now,
        7,
    )
    .unwrap();
    assert_eq!(
        changes(&db),
        [
            ch(Change::Added, Kind::Country, "NL", "198.18.0.0/23"),
            ch(
                Change::Added,
                Kind::Feed,
                "http://f.example/x",
                "203.0.113.0/24"
            )
        ]
    );
    let mut kinds: Vec<Kind> = db.all_rows().unwrap().iter().map(|r| r.kind).collect();
    kinds.sort();
    assert_eq!(kinds, [Kind::Feed, Kind::Country]);
}

/// Expiry deletes a chunk of the key at a time (`history::DELETE_CHUNK`): across
/// chunks, and across IPv4 values (stored as numbers) and IPv6 ones (as text), every
/// expired row goes and is recorded once, in the order of the key, and no row the
/// answer had goes with them.
#[test]
fn mass_expiry_deletes_and_records_every_expired_row_once() {
    let (_d, paths) = setup();
    let mut db = open(&paths).unwrap();
    db.set_history_days(30);
    let t0 = util::unix_now() - 10 * DAY;
    let all: Vec<String> = (0u32..24_000)
        .map(|i| format!("{}/32", std::net::Ipv4Addr::from(0x0b00_0000 + i * 2)))
        .chain((0u32..6_000).map(|i| format!("2001:db8:{i:04x}::/48")))
        .collect();
    db.merge_source(Kind::Asn, "1", &all, t0, 7).unwrap();
    let added = db.all_changes().unwrap().len();
    // Every third value is still announced; the other two thirds expire.
    let kept: Vec<String> = all.iter().step_by(3).cloned().collect();
    db.merge_source(Kind::Asn, "1", &kept, t0 + 9 * DAY, 7)
        .unwrap();
    let mut left: Vec<String> = db
        .all_rows()
        .unwrap()
        .into_iter()
        .map(|r| r.value)
        .collect();
    left.sort();
    let mut want = kept.clone();
    want.sort();
    assert!(
        left == want,
        "{} left, {} announced",
        left.len(),
        want.len()
    );
    let expired: Vec<String> = db.all_changes().unwrap()[added..]
        .iter()
        .map(|c| {
            assert_eq!(c.change, Change::Expired);
            c.value.clone()
        })
        .collect();
    let gone: Vec<String> = all
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 3 != 0)
        .map(|(_, v)| v.clone())
        .collect();
    assert_eq!(expired.len(), 20_000);
    // IPv4 values as numbers, then the others as text (zero-padded here, so that
    // their text order is the order they were made in).
    let first_wrong = expired.iter().zip(&gone).position(|(a, b)| a != b);
    assert_eq!(first_wrong, None, "once each, in the order of the key");
}
