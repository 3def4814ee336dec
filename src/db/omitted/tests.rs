//! The program never sends what its SQLite leaves out, and a virtual table in a schema
//! is skipped (`tests/it/migrate.rs` opens a real `ripe.db` holding one).
use rusqlite::Connection;
use std::path::Path;

/// Reaching `unavailable` stops the process, so no statement of ours may need it.
#[test]
fn no_sql_of_ours_names_an_omitted_statement() {
    let mut hits = Vec::new();
    scan(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
        &mut hits,
    );
    assert!(
        hits.is_empty(),
        "statements this SQLite leaves out: {hits:?}"
    );
}

fn scan(dir: &Path, hits: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if !path.ends_with("omitted") {
                scan(&path, hits);
            }
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") || path.ends_with("omitted.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap().to_uppercase();
        for word in [
            "ALTER TABLE",
            "VIRTUAL TABLE",
            "REINDEX",
            "\"ANALYZE",
            " ANALYZE\"",
        ] {
            if text.contains(word) {
                hits.push(format!("{}: {word}", path.display()));
            }
        }
    }
}

/// The parse of a virtual table's declaration declares nothing: the statement succeeds,
/// no table exists, and the connection goes on working.
#[test]
fn a_virtual_table_is_never_declared() {
    let c = Connection::open_in_memory().unwrap();
    c.execute_batch("CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (1);")
        .unwrap();
    let _ = c.execute_batch("CREATE VIRTUAL TABLE v USING fts5(x, y)");
    let e = c.execute_batch("SELECT * FROM v").unwrap_err();
    assert!(e.to_string().contains("no such table"), "{e}");
    let a: i64 = c.query_row("SELECT a FROM t", [], |r| r.get(0)).unwrap();
    assert_eq!(a, 1);
}
