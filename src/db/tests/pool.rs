//! Tests of the connections kept between uses ([`Pool`]).
use super::*;

/// Marks the connection `f` runs on with a temporary table (visible to that
/// connection only), or tells whether it has the mark.
fn mark(pool: &Pool) {
    pool.with(|db| db.run(|c| c.execute_batch("CREATE TEMP TABLE mark (x)")))
        .unwrap();
}

fn marked(pool: &Pool) -> bool {
    pool.with(|db| {
        db.run(|c| {
            c.query_row(
                "SELECT count(*) FROM sqlite_temp_master WHERE name = 'mark'",
                [],
                |r| r.get::<_, i64>(0),
            )
        })
    })
    .unwrap()
        == 1
}

/// Creates the database (when missing) and dates its file 10 s back, as if written
/// long ago: only a connection to a settled file is kept.
fn settle(paths: &Paths) {
    drop(open(paths).unwrap());
    let f = fs::File::options().write(true).open(&paths.db).unwrap();
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(10);
    f.set_modified(past).unwrap();
}

fn wal_len(paths: &Paths) -> u64 {
    let mut wal = paths.db.as_os_str().to_owned();
    wal.push("-wal");
    fs::metadata(std::path::Path::new(&wal)).map_or(0, |m| m.len())
}

#[test]
fn a_kept_connection_is_reused_and_sees_other_writers() {
    let (_d, paths) = setup();
    let pool = Pool::new(paths.clone(), 2);
    settle(&paths);
    mark(&pool);
    assert_eq!(pool.idle(), 1);
    assert!(marked(&pool), "the same connection serves the next use");
    assert_eq!(pool.opened(), 1);
    // A write of another connection (another process: the daemon, `run`) is seen at
    // the next use: the kept connection held no transaction in between.
    let mut writer = open(&paths).unwrap();
    writer
        .merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8"]), T0, 7)
        .unwrap();
    assert_eq!(pool.with(Db::counts).unwrap(), (1, 0));
    assert!(marked(&pool));
    writer.purge_source(Kind::Asn, "1").unwrap();
    assert_eq!(pool.with(Db::counts).unwrap(), (0, 0));
}

#[test]
fn a_kept_connection_blocks_no_writer_and_keeps_no_wal() {
    let (_d, paths) = setup();
    let pool = Pool::new(paths.clone(), 2);
    settle(&paths);
    mark(&pool);
    let many: Vec<String> = (0..20_000)
        .map(|i| format!("10.{}.{}.0/24", i / 256, i % 256))
        .collect();
    let mut writer = open(&paths).unwrap();
    writer.merge_source(Kind::Asn, "1", &many, T0, 7).unwrap();
    assert!(wal_len(&paths) > 100_000, "the merge went through the WAL");
    drop(writer);
    // The writer was not the last connection (the pool's is open), so SQLite would
    // leave the WAL as large as the merge; the writer's close truncates it.
    assert_eq!(wal_len(&paths), 0);
    assert_eq!(pool.idle(), 1, "kept all along");
    assert_eq!(pool.with(Db::counts).unwrap(), (20_000, 0));
}

#[test]
fn a_replaced_database_is_opened_anew() {
    let (_d, paths) = setup();
    let pool = Pool::new(paths.clone(), 2);
    settle(&paths);
    mark(&pool);
    // Another database takes the path (a snapshot restored, damage moved aside).
    let other = paths.db.with_file_name("other.db");
    {
        let dir = paths.data_dir.clone();
        let mut d = open(&Paths::new(dir, Some(other.clone()))).unwrap();
        d.merge_source(Kind::Asn, "2", &vals(&["10.0.0.0/8", "11.0.0.0/8"]), T0, 7)
            .unwrap();
    }
    fs::rename(&other, &paths.db).unwrap();
    assert_eq!(pool.with(Db::counts).unwrap(), (2, 0));
    assert!(!marked(&pool), "a new connection, on the new file");
    // Deleted: the next use creates (or restores) the database, as `open` does.
    settle(&paths);
    mark(&pool);
    assert!(marked(&pool));
    fs::remove_file(&paths.db).unwrap();
    assert_eq!(pool.with(Db::counts).unwrap(), (0, 0));
    assert!(!marked(&pool));
}

#[test]
fn a_database_migrated_in_place_by_a_newer_version_is_refused() {
    let (_d, paths) = setup();
    let pool = Pool::new(paths.clone(), 2);
    settle(&paths);
    mark(&pool);
    let c = Connection::open(&paths.db).unwrap();
    let newer = SCHEMA_VERSION + 1;
    c.execute_batch(&format!("PRAGMA user_version = {newer}"))
        .unwrap();
    let e = pool.with(Db::counts).unwrap_err();
    assert!(
        matches!(e, StoreError::NewerSchema { found, .. } if found == newer),
        "{e}"
    );
    assert_eq!(pool.idle(), 0);
}

#[test]
fn a_failed_use_or_an_open_transaction_is_not_kept() {
    let (_d, paths) = setup();
    let pool = Pool::new(paths.clone(), 2);
    settle(&paths);
    let failed: Result<(), StoreError> = pool.with(|_| Err(StoreError::Other("x".into())));
    assert!(failed.is_err());
    assert_eq!(pool.idle(), 0);
    // A use that leaves a transaction open would hold a read snapshot (and, in
    // rollback-journal mode, a lock) until the next request: closed instead.
    pool.with(|db| db.run(|c| c.execute_batch("BEGIN; SELECT count(*) FROM entries;")))
        .unwrap();
    assert_eq!(pool.idle(), 0);
    pool.with(Db::counts).unwrap();
    assert_eq!(pool.idle(), 1);
    // At most `keep` are kept.
    let none = Pool::new(paths.clone(), 0);
    none.with(Db::counts).unwrap();
    assert_eq!(none.idle(), 0);
}

#[test]
fn a_file_just_written_is_not_kept() {
    let (_d, paths) = setup();
    let pool = Pool::new(paths.clone(), 2);
    // Created by this use: a write within the same clock tick could change it unseen.
    pool.with(Db::counts).unwrap();
    assert_eq!(pool.idle(), 0);
    settle(&paths);
    pool.with(Db::counts).unwrap();
    assert_eq!(pool.idle(), 1);
}

#[test]
fn a_database_overwritten_in_place_is_found_damaged() {
    let (_d, paths) = setup();
    let pool = Pool::new(paths.clone(), 2);
    let mut writer = open(&paths).unwrap();
    writer
        .merge_source(Kind::Asn, "1", &vals(&["10.0.0.0/8"]), T0, 7)
        .unwrap();
    drop(writer);
    settle(&paths);
    assert_eq!(pool.with(Db::counts).unwrap(), (1, 0));
    assert_eq!(pool.idle(), 1);
    // The same file (inode) with other bytes: the kept connection's cache and
    // wal-index would still answer from before.
    fs::write(&paths.db, vec![0x5a; 8192]).unwrap();
    let e = pool.with(Db::counts).unwrap_err();
    assert!(e.is_corrupt(), "{e}");
    assert_eq!(pool.with(Db::counts).unwrap(), (0, 0));
}
