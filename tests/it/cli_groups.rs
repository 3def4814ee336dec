//! `group` and `exclude` edit `config.json` (keeping unknown keys), several values per
//! `add`/`remove` are all or nothing, and `list --json` prints the API's bytes.

#[cfg(feature = "api")]
use crate::common::http_get;
use crate::common::TestDir;

fn config(t: &TestDir) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(t.file("config.json")).unwrap()).unwrap()
}

fn ok(t: &TestDir, args: &[&str]) -> String {
    let r = t.run(args);
    assert!(r.status.success(), "{args:?}: {r:?}");
    String::from_utf8(r.stdout).unwrap()
}

#[test]
fn a_two_group_setup_without_hand_editing() {
    let t = TestDir::new();
    let raw = r#"{"asns": ["62041"], "x_local": {"keep": 1.50}}"#;
    std::fs::write(t.file("config.json"), raw).unwrap();
    ok(&t, &["group", "add", "video", "--mark", "0x100/0xff00"]);
    ok(&t, &["exclude", "add", "10.0.0.0/8", "--group", "video"]);
    ok(&t, &["exclude", "add", "192.168.0.0/16", "fd00::/8"]);
    ok(&t, &["asn", "add", "AS2906", "as40027", "--group", "video"]);
    ok(&t, &["fqdn", "add", "netflix.com", "--group", "video"]);
    let c = config(&t);
    let v = &c["groups"]["video"];
    assert_eq!(v["mark"], "0x100", "{c}");
    assert_eq!(v["mark_mask"], "0xff00", "{c}");
    assert_eq!(v["exclude"], serde_json::json!(["10.0.0.0/8"]), "{c}");
    assert_eq!(v["asns"], serde_json::json!(["2906", "40027"]), "{c}");
    assert_eq!(
        c["exclude"],
        serde_json::json!(["192.168.0.0/16", "fd00::/8"])
    );
    assert_eq!(c["asns"], serde_json::json!(["62041"]));
    // Unknown keys are kept, numbers as written.
    let text = std::fs::read_to_string(t.file("config.json")).unwrap();
    assert!(text.contains("\"keep\": 1.50"), "{text}");
    assert_eq!(
        ok(&t, &["group", "list"]),
        "default\t-\t1\t2\nvideo\t0x100/0xff00\t3\t3\n"
    );
    assert_eq!(
        ok(&t, &["exclude", "list", "--group", "video"]),
        "10.0.0.0/8\n"
    );
    assert_eq!(ok(&t, &["exclude", "list"]), "192.168.0.0/16\nfd00::/8\n");
    assert_eq!(
        ok(&t, &["asn", "list", "--group", "video"]),
        // The fourth column: the holder's name, `-` while unknown.
        "2906\t0\t-\t-\n40027\t0\t-\t-\n"
    );

    ok(&t, &["exclude", "remove", "10.0.0.0/8", "--group", "video"]);
    assert_eq!(
        config(&t)["groups"]["video"]["exclude"],
        serde_json::json!([])
    );
    // Sources name it: `--force` removes them with it (issue 41), and its load output.
    ok(&t, &["group", "remove", "video", "--force"]);
    assert_eq!(config(&t)["groups"], serde_json::json!({}));
    assert_eq!(config(&t)["outputs"], serde_json::json!([]));
    assert!(text.contains("x_local"));
}

#[test]
fn a_bad_value_among_several_changes_nothing() {
    let t = TestDir::new();
    t.config(&serde_json::json!({"asns": ["1"], "exclude": ["10.0.0.0/8"]}));
    let before = std::fs::read(t.file("config.json")).unwrap();
    for (args, bad) in [
        (&["asn", "add", "AS2", "ASX", "AS3"][..], "ASX"),
        (&["asn", "remove", "AS1", "AS9"], "AS9"),
        (
            &["exclude", "add", "10.1.0.0/16", "10.2.3.4/16"],
            "10.2.3.4/16",
        ),
        (
            &["exclude", "remove", "10.0.0.0/8", "172.16.0.0/12"],
            "172.16.0.0/12",
        ),
        (&["fqdn", "add", "a.example", "1.2.3.4"], "1.2.3.4"),
        (&["group", "add", "Video"], "Video"),
        (
            &["group", "add", "video", "--mark", "0x100/0xf"],
            "0x100/0xf",
        ),
    ] {
        let r = t.run(args);
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(!r.status.success(), "{args:?}: {r:?}");
        assert!(err.contains(bad), "{args:?} must name {bad}: {err}");
        assert_eq!(
            std::fs::read(t.file("config.json")).unwrap(),
            before,
            "{args:?}"
        );
    }
    // Usage errors (the value's form) are exit 2.
    let r = t.run(&["asn", "add", "AS2", "ASX"]);
    assert_eq!(r.status.code(), Some(2), "{r:?}");
    // Several valid values go in together.
    ok(&t, &["asn", "add", "AS2", "AS3"]);
    assert_eq!(config(&t)["asns"], serde_json::json!(["1", "2", "3"]));
    ok(&t, &["asn", "remove", "AS1", "AS3"]);
    assert_eq!(config(&t)["asns"], serde_json::json!(["2"]));
}

/// Issue 41: the refusal names what names the group (its sources and services), not
/// an "unknown group" of the output; `--force` lists what it removed, outputs too.
#[test]
fn a_group_with_sources_is_removed_only_with_force() {
    let t = TestDir::new();
    t.config(
        &serde_json::json!({"groups": {"tg": {"asns": ["62041"], "services": ["telegram"]}},
        "outputs": [{"load": "nft", "group": "tg"}, {"path": t.file("x.txt"), "group": "tg"}]}),
    );
    let before = std::fs::read(t.file("config.json")).unwrap();
    let r = t.run(&["group", "remove", "tg"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{r:?}");
    assert!(
        err.contains("group tg still has AS62041, service telegram"),
        "{err}"
    );
    assert!(
        err.contains("--force") && !err.contains("unknown group"),
        "{err}"
    );
    assert_eq!(std::fs::read(t.file("config.json")).unwrap(), before);
    let r = t.run(&["group", "remove", "tg", "--force"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    assert!(
        err.contains("removed with group tg: AS62041, service telegram"),
        "{err}"
    );
    assert!(
        err.contains("removed the outputs of group tg: nft load inet ripe_cidr tg"),
        "{err}"
    );
    assert_eq!(config(&t)["outputs"].as_array().map(Vec::len), Some(0));
    let r = t.run(&["group", "remove", "nosuch"]);
    assert_eq!(r.status.code(), Some(2), "{r:?}");
}

#[cfg(feature = "api")]
#[test]
fn list_json_is_the_apis_answer() {
    let t = TestDir::new();
    t.config(&serde_json::json!({
        "asns": ["62041"], "fqdns": ["telegram.org"], "exclude": ["192.168.0.0/16"],
        "groups": {"video": {"asns": ["2906", "62041"], "feeds": ["https://example.org/l.txt"],
                             "countries": ["NL"], "mark": "0x200", "mark_mask": "0xff00"}}}));
    let (_serve, addr) = t.spawn_listening(&["serve"]);
    for (args, target) in [
        (&["asn", "list", "--json"][..], "/asns"),
        (
            &["asn", "list", "--json", "--group", "video"],
            "/asns?group=video",
        ),
        (&["fqdn", "list", "--json"], "/fqdns"),
        (
            &["feed", "list", "--json", "--group", "video"],
            "/feeds?group=video",
        ),
        (
            &["country", "list", "--json", "--group", "*"],
            "/countries?group=*",
        ),
        (&["group", "list", "--json"], "/groups"),
    ] {
        let (status, body) = http_get(addr, target);
        assert_eq!(status, 200, "{target}: {body}");
        assert_eq!(ok(&t, args), body, "{args:?} against GET {target}");
    }
    let groups: serde_json::Value =
        serde_json::from_str(&ok(&t, &["group", "list", "--json"])).unwrap();
    assert_eq!(groups["groups"][1]["name"], "video");
    assert_eq!(groups["groups"][1]["mark"], "0x200");
    assert_eq!(groups["groups"][1]["route"], serde_json::Value::Null);
    assert_eq!(
        groups["groups"][1]["exclude"],
        serde_json::json!(["192.168.0.0/16"])
    );
}

/// Issue 41's bad input: each refused naming the value, the file unchanged.
#[test]
fn routes_and_marks_that_cannot_work_are_refused() {
    let t = TestDir::new();
    t.config(&serde_json::json!({"groups": {"tg": {"mark": "0x100", "mark_mask": "0xff00"}}}));
    let before = std::fs::read(t.file("config.json")).unwrap();
    for (args, bad) in [
        (
            &["group", "add", "vpn", "--via", "10.0.0.1"][..],
            "10.0.0.1",
        ),
        (
            &["group", "add", "vpn", "--mark", "0x100/0xff00"],
            "0x100/0xff00",
        ),
        (&["group", "add", "vpn", "--via", "a/b"], "a/b"),
    ] {
        let r = t.run(args);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(bad), "{args:?} must name {bad}: {err}");
        assert_eq!(std::fs::read(t.file("config.json")).unwrap(), before);
    }
    // `--via` alone: the next free mark, a table, a load output; `group list --json`
    // (GET /groups) shows the route.
    ok(&t, &["group", "add", "vpn", "--via", "wg9"]);
    let c = config(&t);
    assert_eq!(c["groups"]["vpn"]["mark"], "0x200", "{c}");
    assert_eq!(c["groups"]["vpn"]["route"]["via"], "wg9", "{c}");
    let table = c["groups"]["vpn"]["route"]["table"].clone();
    let checked = ok(&t, &["check"]);
    assert!(
        checked.contains(&format!("    route: via wg9, table {table}\n")),
        "{checked}"
    );
    let listed: serde_json::Value =
        serde_json::from_str(&ok(&t, &["group", "list", "--json"])).unwrap();
    assert_eq!(
        listed["groups"][2]["route"],
        serde_json::json!({"via": "wg9", "gateway": null, "table": table})
    );
    for (cfg, bad) in [
        (
            serde_json::json!({"groups": {"a": {"route": {"via": "wg0", "table": 100}}}}),
            "groups.a.route",
        ),
        (
            serde_json::json!({"groups": {"a": {"mark": "0x100", "route": {"via": "wg0", "table": 254}}}}),
            "table 254",
        ),
        (
            serde_json::json!({"groups": {"a": {"mark": "0x100"}, "b": {"mark": "0x100"}}}),
            "collides",
        ),
        (
            serde_json::json!({"groups": {"a": {"mark": "0x100", "route": {"via": "wg0", "table": 7}},
                                       "b": {"mark": "0x200", "route": {"via": "wg1", "table": 7}}}}),
            "table 7",
        ),
        (
            serde_json::json!({"groups": {"a": {"mark": "0x100", "route": {"via": "wg0", "gateway": "x"}}}}),
            "\"x\"",
        ),
    ] {
        t.config(&cfg);
        let r = t.run(&["check"]);
        let err =
            String::from_utf8_lossy(&r.stderr).into_owned() + &String::from_utf8_lossy(&r.stdout);
        assert!(!r.status.success(), "{cfg}: {err}");
        assert!(err.contains(bad), "{cfg} must name {bad}: {err}");
    }
}

/// The source commands default to the group `default` in text, in JSON and in the
/// API alike (`--group '*'` / `group=*` for all), for every kind.
#[cfg(feature = "api")]
#[test]
fn every_list_defaults_to_the_group_default() {
    let t = TestDir::new();
    t.config(&serde_json::json!({
        "asns": ["1"], "fqdns": ["a.example"], "feeds": ["https://example.org/a.txt"],
        "countries": ["NL"],
        "groups": {"video": {"asns": ["2"], "fqdns": ["b.example"],
                             "feeds": ["https://example.org/b.txt"], "countries": ["DE"]}}}));
    let (_serve, addr) = t.spawn_listening(&["serve"]);
    for (kind, key, default, other) in [
        ("asn", "asns", "1", "2"),
        ("fqdn", "fqdns", "a.example", "b.example"),
        (
            "feed",
            "feeds",
            "https://example.org/a.txt",
            "https://example.org/b.txt",
        ),
        ("country", "countries", "NL", "DE"),
    ] {
        let text = ok(&t, &[kind, "list"]);
        assert_eq!(text.lines().count(), 1, "{kind} list: {text}");
        assert!(
            text.starts_with(&format!("{default}\t")),
            "{kind} list: {text}"
        );
        let json = ok(&t, &[kind, "list", "--json"]);
        let (status, body) = http_get(addr, &format!("/{key}"));
        assert_eq!(status, 200, "{body}");
        assert_eq!(json, body, "{kind} list --json against GET /{key}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v[key], serde_json::json!([default]), "GET /{key}: {body}");
        let all = ok(&t, &[kind, "list", "--json", "--group", "*"]);
        let v: serde_json::Value = serde_json::from_str(&all).unwrap();
        assert_eq!(v[key], serde_json::json!([default, other]), "{all}");
        assert_eq!(ok(&t, &[kind, "list", "--group", "*"]).lines().count(), 2);
    }
}
