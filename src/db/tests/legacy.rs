//! The legacy import (migration step 0 -> 1): the Python version's `data.json` and
//! `fqdn_data.json`, imported once, a broken one blocking and keeping everything.
use super::*;

fn copy_legacy(paths: &Paths) {
    fs::write(
        paths.legacy(Kind::Asn).unwrap(),
        include_str!("../../../tests/fixtures/legacy/data.json"),
    )
    .unwrap();
    fs::write(
        paths.legacy(Kind::Fqdn).unwrap(),
        include_str!("../../../tests/fixtures/legacy/fqdn_data.json"),
    )
    .unwrap();
}

fn migrated(paths: &Paths) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(&paths.data_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".migrated-"))
        .collect();
    names.sort();
    names
}

#[test]
fn legacy_import_once() {
    let (_d, paths) = setup();
    copy_legacy(&paths);
    let before = util::iso(util::unix_now());
    let db = open(&paths).unwrap();
    let rows = db.all_rows().unwrap();
    assert_eq!(rows.len(), 10);
    assert_eq!(rows.iter().filter(|r| r.kind == Kind::Asn).count(), 7);
    let get = |v: &str| rows.iter().find(|r| r.value == v).unwrap();
    assert_eq!(
        (
            get("1.1.1.0/24").first_seen.as_str(),
            get("1.1.1.0/24").last_seen.as_str()
        ),
        ("2026-09-01T00:00:00", "2026-10-02T08:30:00")
    );
    assert_eq!(get("104.16.0.0/13").first_seen, "2026-09-15T00:00:00");
    assert_eq!(get("149.154.167.99").last_seen, "2026-10-03T00:00:00");
    assert_eq!(get("91.108.4.0/22").first_seen, "2026-10-01T12:00:00");
    assert_eq!(
        get("2606:4700::/32").first_seen,
        "2026-10-02T08:30:00.123456"
    );
    assert!(get("91.108.4.0/22").last_seen >= before);
    assert_eq!(get("93.184.216.34").source, "example.com");
    let names = migrated(&paths);
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names[0].starts_with("data.json.migrated-2"));
    assert!(names[1].starts_with("fqdn_data.json.migrated-2"));
    assert!(!paths.legacy(Kind::Asn).unwrap().exists());
    drop(db);
    // A legacy file that shows up again is not imported a second time.
    copy_legacy(&paths);
    let db = open(&paths).unwrap();
    assert_eq!(db.all_rows().unwrap().len(), 10);
    assert!(paths.legacy(Kind::Asn).unwrap().exists());
}

/// A value that a legacy entry lists twice (two spellings of one prefix, each with its
/// own `seen` times) is stored once, with the earlier `first_seen` and the later
/// `last_seen` of the two, whichever comes first in the file.
#[test]
fn legacy_value_listed_twice_keeps_the_widest_times() {
    let (_d, paths) = setup();
    fs::write(
        paths.legacy(Kind::Asn).unwrap(),
        r#"{"64500": {"prefixes": ["10.0.0.0/8", "10.0.0.1/8"],
            "last_updated": "2026-10-01T12:00:00",
            "seen": {
              "10.0.0.0/8": {"first_seen": "2026-09-05T00:00:00", "last_seen": "2026-09-30T00:00:00"},
              "10.0.0.1/8": {"first_seen": "2026-09-01T00:00:00", "last_seen": "2026-09-20T00:00:00"}
            }},
           "64501": {"prefixes": ["10.0.0.1/8", "10.0.0.0/8"],
            "last_updated": "2026-10-01T12:00:00",
            "seen": {
              "10.0.0.0/8": {"first_seen": "2026-09-05T00:00:00", "last_seen": "2026-09-30T00:00:00"},
              "10.0.0.1/8": {"first_seen": "2026-09-01T00:00:00", "last_seen": "2026-09-20T00:00:00"}
            }}}"#,
    )
    .unwrap();
    let db = open(&paths).unwrap();
    let rows = db.all_rows().unwrap();
    let times: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r.source.as_str(),
                r.value.as_str(),
                r.first_seen.as_str(),
                r.last_seen.as_str(),
            )
        })
        .collect();
    let want = ("10.0.0.0/8", "2026-09-01T00:00:00", "2026-09-30T00:00:00");
    assert_eq!(
        times,
        [
            ("64500", want.0, want.1, want.2),
            ("64501", want.0, want.1, want.2)
        ]
    );
}

#[test]
fn broken_legacy_file_blocks_and_keeps_everything() {
    let (_d, paths) = setup();
    fs::write(paths.legacy(Kind::Asn).unwrap(), "{\"1\": {").unwrap();
    let e = open(&paths).unwrap_err();
    assert!(matches!(e, StoreError::Legacy(_)), "{e}");
    assert!(e.to_string().contains("data.json"), "{e}");
    assert_eq!(
        fs::read_to_string(paths.legacy(Kind::Asn).unwrap()).unwrap(),
        "{\"1\": {"
    );
    // Once the file is fixed, the import happens.
    fs::write(
        paths.legacy(Kind::Asn).unwrap(),
        r#"{"1": {"prefixes": ["10.0.0.0/8"], "last_updated": "2026-01-01T00:00:00"}}"#,
    )
    .unwrap();
    assert_eq!(open(&paths).unwrap().all_rows().unwrap().len(), 1);
}
