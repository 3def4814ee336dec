//! Storage and source-list behaviour through the real binary.

use std::fs;
use std::time::Duration;

use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;

use crate::common::*;

fn copy_legacy(t: &TestDir, extra_asns: usize) {
    let mut data: serde_json::Value =
        serde_json::from_str(include_str!("../fixtures/legacy/data.json")).unwrap();
    // A larger file keeps the first import busy long enough for the second process to
    // collide with it.
    for i in 0..extra_asns {
        let prefixes: Vec<String> = (0..200)
            .map(|j| format!("10.{}.{}.0/24", i % 256, j))
            .collect();
        data[format!("{}", 100_000 + i)] =
            serde_json::json!({"prefixes": prefixes, "last_updated": "2026-10-01T12:00:00"});
    }
    fs::write(t.file("data.json"), data.to_string()).unwrap();
    fs::copy(
        "tests/fixtures/legacy/fqdn_data.json",
        t.file("fqdn_data.json"),
    )
    .unwrap();
}

#[test]
fn two_processes_import_once() {
    for _ in 0..3 {
        let t = TestDir::new();
        copy_legacy(&t, 100);
        let spawn = || t.spawn(&["status"]);
        let (mut a, mut b) = (spawn(), spawn());
        let sa = a
            .wait_exit(Duration::from_secs(60))
            .expect("first process finished");
        let sb = b
            .wait_exit(Duration::from_secs(60))
            .expect("second process finished");
        let (ea, eb) = (a.stderr(), b.stderr());
        assert!(sa.success() && sb.success(), "{ea}\n{eb}");
        let imports = ea.matches(" values from ").count() + eb.matches(" values from ").count();
        assert_eq!(imports, 1, "exactly one process imports:\n{ea}\n{eb}");
        let d = db::open(&t.paths()).unwrap();
        assert_eq!(d.count_values(Kind::Asn).unwrap(), 7 + 100 * 200);
        assert_eq!(d.count_values(Kind::Fqdn).unwrap(), 3);
        let migrated = fs::read_dir(t.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".migrated-")
            })
            .count();
        assert_eq!(migrated, 2);
        assert!(!ea.contains("could not rename") && !eb.contains("could not rename"));
    }
}

/// The import names the imported sources config.json does not, and what the runs
/// will do with their values.
#[test]
fn legacy_import_names_the_sources_config_json_does_not() {
    let t = TestDir::new();
    copy_legacy(&t, 0);
    t.config(&serde_json::json!({"asns": ["62041"], "fqdns": ["example.com"], "ttl_days": 5}));
    let out = t.run(&["status"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "imported 2 sources that config.json does not name (asn 13335, fqdn telegram.org): \
             each run deletes those not seen for ttl_days (5), the first run the expired ones"
        ),
        "{err}"
    );
}

#[test]
fn source_commands() {
    let t = TestDir::new();
    let out = t.run(&["asn", "add", "AS62041"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("added AS62041"));
    assert!(t.run(&["asn", "add", "as62041"]).status.success());
    assert!(t.run(&["fqdn", "add", "Example.COM."]).status.success());
    let cfg: serde_json::Value =
        serde_json::from_slice(&fs::read(t.file("config.json")).unwrap()).unwrap();
    assert_eq!(cfg["asns"], serde_json::json!(["62041"]));
    assert_eq!(cfg["fqdns"], serde_json::json!(["example.com"]));
    let list = t.run(&["asn", "list"]);
    // The fourth column: the holder's name, `-` while unknown.
    assert_eq!(String::from_utf8_lossy(&list.stdout), "62041\t0\t-\t-\n");

    // Stored values show in the list, survive a plain remove and go with --purge.
    {
        let mut d = db::open(&t.paths()).unwrap();
        d.merge_source(
            Kind::Asn,
            "62041",
            &["91.108.4.0/22".to_string()],
            1_790_000_000,
            7,
        )
        .unwrap();
    }
    let list = t.run(&["asn", "list"]);
    assert!(String::from_utf8_lossy(&list.stdout).starts_with("62041\t1\t2026-"));
    assert!(t.run(&["asn", "remove", "AS62041"]).status.success());
    assert_eq!(
        db::open(&t.paths())
            .unwrap()
            .count_values(Kind::Asn)
            .unwrap(),
        1
    );
    let again = t.run(&["asn", "remove", "62041"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("AS62041 is not configured"));
    assert!(t
        .run(&["asn", "remove", "62041", "--purge"])
        .status
        .success());
    assert_eq!(
        db::open(&t.paths())
            .unwrap()
            .count_values(Kind::Asn)
            .unwrap(),
        0
    );
    assert!(t
        .run(&["fqdn", "remove", "example.com", "--purge"])
        .status
        .success());
}

#[test]
fn bad_input_exit_codes() {
    let t = TestDir::new();
    fs::write(t.file("config.json"), "{\"asns\": [\"62041\"]}").unwrap();
    // A bad source on the command line is a usage error naming the value.
    for bad in ["ASX", "AS-1", "99999999999", ""] {
        let out = t.run(&["asn", "add", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&format!("{bad:?}")),
            "{out:?}"
        );
    }
    for bad in [
        "1.2.3.4",
        "bad name.com",
        "ü.example",
        &"a".repeat(64),
        "example.com:80",
    ] {
        let out = t.run(&["fqdn", "add", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("invalid host name"));
    }
    assert_eq!(
        fs::read_to_string(t.file("config.json")).unwrap(),
        "{\"asns\": [\"62041\"]}"
    );
    for args in [
        &["frobnicate"][..],
        &[],
        &["asn", "add"],
        &["export", "--format", "yaml"],
        &["status", "--purge"],
    ] {
        let out = t.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("Usage:"));
    }
    // A broken config names the file, line and column, exit 1.
    fs::write(t.file("config.json"), "{\n \"asns\": [62041,]\n}").unwrap();
    let out = t.run(&["asn", "list"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("config.json: invalid JSON at line 2"), "{err}");
    let help = t.run(&["--help"]);
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("export [--type"));
    let v = t.run(&["--version"]);
    assert!(String::from_utf8_lossy(&v.stdout).starts_with("ripe-cidr-collector "));
}

#[test]
fn corrupt_database_exit_1_then_fresh() {
    let t = TestDir::new();
    fs::write(t.file("ripe.db"), vec![0x42u8; 8192]).unwrap();
    let out = t.run(&["export"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("corrupt"));
    assert!(!t.file("ripe.db").exists());
    // The fresh database opens; its empty list is not handed out until a run filled
    // it (see cli::empty_store_after_damage_is_an_error_until_a_run_fills_it).
    assert!(t.run(&["status"]).status.success());
    let out = t.run(&["export"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("moved aside to"));
    assert!(out.stdout.is_empty());
}

#[test]
fn db_location_from_env_and_flag() {
    let t = TestDir::new();
    let elsewhere = t.file("ram/r.db");
    fs::create_dir(t.file("ram")).unwrap();
    let out = t
        .cmd()
        .env("RIPE_DB", &elsewhere)
        .args(["status"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(elsewhere.exists());
    assert!(!t.file("ripe.db").exists());
    let other = t.file("flag.db");
    assert!(t
        .run(&["--db", other.to_str().unwrap(), "status", "--json"])
        .status
        .success());
    assert!(other.exists());
}

#[test]
fn read_only_commands_need_an_existing_data_dir() {
    let t = TestDir::new();
    let missing = t.file("typo");
    for args in [&["export"][..], &["status"], &["asn", "list"]] {
        let out = std::process::Command::new(bin())
            .env_remove("RIPE_DATA_DIR")
            .env_remove("RIPE_DB")
            .arg("--data-dir")
            .arg(&missing)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("does not exist"),
            "{out:?}"
        );
        assert!(!missing.exists(), "{args:?} created the directory");
    }
    // Commands that change something create it.
    let out = std::process::Command::new(bin())
        .env_remove("RIPE_DB")
        .env_remove("RIPE_SNAPSHOT")
        .arg("--data-dir")
        .arg(&missing)
        .args(["asn", "add", "1"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(missing.join("config.json").exists());
}

#[test]
fn status_reports_what_it_can() {
    let t = TestDir::new();
    assert!(t.run(&["asn", "add", "1"]).status.success());
    fs::write(
        t.file("status.json"),
        serde_json::json!({"heartbeat": ripe_cidr_collector::util::now_iso(), "last_success": "2026-11-01T00:00:00Z"}).to_string(),
    )
    .unwrap();
    let out = t.run(&["status"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("daemon:        stopped"), "{text}");
    assert!(
        text.contains("last success:  2026-11-01T00:00:00Z"),
        "{text}"
    );
    assert!(text.contains("sources:       1 ASNs, 0 FQDNs"), "{text}");
    // A broken config: the rest is still shown, exit 1.
    fs::write(t.file("config.json"), "{").unwrap();
    let out = t.run(&["status"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("last success:  2026-11-01T00:00:00Z"),
        "{text}"
    );
    assert!(text.contains("problem:       config:"), "{text}");
    let out = t.run(&["status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["counts"]["asn"], 0);
    assert!(v["errors"][0].as_str().unwrap().contains("config.json"));
}

#[cfg(unix)]
#[test]
fn rewrite_keeps_config_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let t = TestDir::new();
    fs::write(t.file("config.json"), r#"{"api": {"token": "s3cret"}}"#).unwrap();
    fs::set_permissions(t.file("config.json"), fs::Permissions::from_mode(0o600)).unwrap();
    assert!(t.run(&["asn", "add", "2"]).status.success());
    let mode = fs::metadata(t.file("config.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}
