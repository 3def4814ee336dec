//! Found by using the product as an administrator would (review of the merged
//! branch): each test fails without the fix it names.

use std::fs;

use serde_json::json;

use crate::common::*;

fn status(t: &TestDir) -> serde_json::Value {
    serde_json::from_slice(&fs::read(t.file("status.json")).unwrap()).unwrap()
}

/// `run` from cron has no retry of its own: an output that failed (the firewall not
/// ready at boot) must be recorded in `status.json` and rendered again by the next
/// `run`, even when the data did not change meanwhile.
#[cfg(feature = "collect")]
#[test]
fn run_records_and_retries_failed_outputs() {
    let ripe = FakeServer::start(|_| Reply::json(200, ripe_body(&["192.0.2.0/24".into()])));
    let t = TestDir::new();
    let out_dir = t.file("not-yet");
    let out = out_dir.join("list.txt");
    t.config(&json!({
        "asns": ["64500"],
        "ripe": {"url": ripe.url("/x"), "retries": 0},
        "outputs": [{"path": out.to_str().unwrap()}]
    }));
    let r = t.run(&["run"]);
    assert_eq!(
        r.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let st = status(&t);
    let name = out.display().to_string();
    assert!(st["output_failures"][&name].is_string(), "{st}");
    assert!(
        st["last_error"].as_str().unwrap().contains("output failed"),
        "{st}"
    );

    // The directory appears; the next run changes nothing but renders the output.
    fs::create_dir(&out_dir).unwrap();
    let r = t.run(&["run"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(0), "{err}");
    assert!(err.contains("0 new"), "{err}");
    assert_eq!(fs::read_to_string(&out).unwrap(), "192.0.2.0/24\n");
    assert_eq!(status(&t)["output_failures"], json!({}));
}

/// libc's resolver reads `2130706433`, `0x7f` or `1.0x7f` as IPv4 addresses
/// (127.0.0.1, 0.0.0.127, 1.0.0.127): such an "FQDN" is an IP literal and must be
/// refused like `1.2.3.4`, not put its address into the firewall list.
#[test]
fn numeric_host_names_are_ip_literals() {
    let t = TestDir::new();
    for name in ["2130706433", "123", "0x7f", "0X7F", "1.0x7f", "a.0xff."] {
        let r = t.run(&["fqdn", "add", name]);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains("IP address"), "{name}: {err}");
    }
    for name in ["0xdeadbeef.example", "123.example", "x0.example"] {
        let r = t.run(&["fqdn", "add", name]);
        assert_eq!(r.status.code(), Some(0), "{name}: {r:?}");
    }
}

/// A bad `--max-age` is a usage error that names the value, not "invalid digit found
/// in string".
#[test]
fn bad_max_age_is_named() {
    let t = TestDir::new();
    for v in ["soon", "-5", "99999999999999999999999"] {
        let r = t.run(&["healthcheck", "daemon", "--max-age", v]);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{v}: {err}");
        assert!(err.contains(&format!("{v:?}")), "{v}: {err}");
    }
}

/// A key given twice in `config.json` would keep only the last one, and the next
/// `asn add` would rewrite the file without the first: reading fails naming the key,
/// and the file stays as it was.
#[test]
fn config_with_a_repeated_key_is_refused_and_kept() {
    let t = TestDir::new();
    for text in [
        r#"{"asns": ["1"], "fqdns": [], "asns": ["2"]}"#,
        r#"{"asns": ["1"], "ripe": {"retries": 1, "retries": 2}}"#,
        r#"{"asns": ["1"], "outputs": [{"path": "/tmp/x", "path": "/tmp/y"}]}"#,
    ] {
        fs::write(t.file("config.json"), text).unwrap();
        let r = t.run(&["asn", "add", "3"]);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(1), "{text}: {err}");
        assert!(err.contains("given more than once"), "{text}: {err}");
        assert!(err.contains("line 1"), "{text}: {err}");
        assert_eq!(fs::read_to_string(t.file("config.json")).unwrap(), text);
    }
    // Equal keys in different objects are fine.
    fs::write(
        t.file("config.json"),
        r#"{"asns": ["1"], "outputs": [{"path": "/tmp/x"}, {"path": "/tmp/y"}]}"#,
    )
    .unwrap();
    let r = t.run(&["asn", "list"]);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
}
