//! `check` prints the configuration in effect and writes nothing; exit 1 names every
//! problem; slips of keys, options and commands get a "did you mean".

use crate::common::TestDir;

fn files(t: &TestDir) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_valid_configuration_is_printed_as_in_effect() {
    let t = TestDir::new();
    t.config(&serde_json::json!({
        "asns": ["62041"], "exclude": ["192.168.0.0/16"],
        "groups": {"video": {"asns": ["2906"], "exclude": ["23.246.0.0/24"],
                             "mark": "0x200", "mark_mask": "0xff00"}},
        "asn_upstreams": ["ripestat", "ipverse"],
        "outputs": [{"load": "nft", "group": "video"}]}));
    let before = files(&t);
    let r = t.run(&["check"]);
    let out = String::from_utf8_lossy(&r.stdout);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    for needle in [
        "  video:\n    asns: AS2906\n    exclude: 192.168.0.0/16, 23.246.0.0/24\n    mark: 0x200/0xff00\n    sets: video_v4, video_v6",
        "  default:\n    asns: AS62041\n    exclude: 192.168.0.0/16\n    mark: none\n    sets: ripe_v4, ripe_v6",
        "load nft, group video, type all, table inet ripe_cidr, sets video_v4, video_v6, mark 0x200/0xff00",
        "asn: ripestat, ipverse",
        "valid",
    ] {
        assert!(out.contains(needle), "{needle}\n{out}");
    }
    assert_eq!(files(&t), before, "check writes nothing");
}

#[test]
fn every_problem_is_named_and_nothing_written() {
    let t = TestDir::new();
    std::fs::write(
        t.file("config.json"),
        r#"{"asn": ["62041"], "fqdns": ["1.2.3.4"], "ttl_days": "week",
            "shedule": {"interval_minutes": 60},
            "groups": {"video": {"exclude": ["10.1.2.3/8"], "mark": 0}},
            "outputs": [{"load": "nft", "group": "nosuch"}]}"#,
    )
    .unwrap();
    let before = files(&t);
    let r = t.run(&["check"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{r:?}");
    for needle in [
        "fqdns[0]",
        "ttl_days",
        "groups.video.exclude[0]",
        "groups.video.mark",
        "nosuch",
        "unknown key asn is ignored (kept when the file is rewritten); did you mean asns?",
        "unknown key shedule is ignored (kept when the file is rewritten); did you mean schedule?",
    ] {
        assert!(err.contains(needle), "{needle}\n{err}");
    }
    assert_eq!(files(&t), before, "check writes nothing");
    // A syntax error is one problem with its line and column.
    std::fs::write(t.file("config.json"), "{\"asns\": [1,]}").unwrap();
    let r = t.run(&["check"]);
    assert_eq!(r.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&r.stderr).contains("line 1"),
        "{r:?}"
    );
}

/// A source named by a group with `allow_special` and by one without would give the
/// other group its special ranges too: `check` refuses it, naming the source and
/// both groups, and goes on to the other problems.
#[test]
fn groups_that_disagree_on_allow_special_are_refused() {
    let t = TestDir::new();
    t.config(&serde_json::json!({
        "groups": {"lab": {"asns": ["64496"], "allow_special": true},
                   "vpn": {"asns": ["64496"], "mark": 0}}}));
    let r = t.run(&["check"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{r:?}");
    for needle in [
        "groups.lab.allow_special: AS64496 is named by group \"lab\", which allows special ranges, and by group \"vpn\", which does not",
        "groups.vpn.mark",
    ] {
        assert!(err.contains(needle), "{needle}\n{err}");
    }
    // Loading refuses it too: `run` fails before collecting anything.
    t.config(&serde_json::json!({
        "groups": {"lab": {"asns": ["64496"], "allow_special": true},
                   "vpn": {"asns": ["64496"]}}}));
    let r = t.run(&["run"]);
    assert_eq!(r.status.code(), Some(1), "{r:?}");
    assert!(
        String::from_utf8_lossy(&r.stderr).contains("AS64496 is named by group \"lab\""),
        "{r:?}"
    );
    t.config(&serde_json::json!({
        "groups": {"lab": {"asns": ["64496"], "allow_special": true},
                   "lab2": {"asns": ["64496"], "allow_special": true}}}));
    let r = t.run(&["check"]);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    // Adding it to a group that does not allow them: a usage error, nothing written.
    let before = std::fs::read(t.file("config.json")).unwrap();
    let r = t.run(&["asn", "add", "AS64496"]);
    assert_eq!(r.status.code(), Some(2), "{r:?}");
    assert!(
        String::from_utf8_lossy(&r.stderr)
            .contains("AS64496 is named by group \"lab\", which allows special ranges, and by group \"default\""),
        "{r:?}"
    );
    assert_eq!(std::fs::read(t.file("config.json")).unwrap(), before);
}

#[test]
fn slips_on_the_command_line_name_what_was_meant() {
    let t = TestDir::new();
    for (args, hint) in [
        (&["export", "--fromat", "nft"][..], "did you mean --format?"),
        (&["expotr"], "did you mean export?"),
        (&["chek"], "did you mean check?"),
        (&["asn", "ad", "AS1"], "did you mean add?"),
    ] {
        let r = t.run(args);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {r:?}");
        assert!(
            String::from_utf8_lossy(&r.stderr).contains(hint),
            "{args:?}: {r:?}"
        );
    }
}

/// A broken catalog (`services.json` in the data directory) is a problem of its own
/// file: `check` names that file on the problem's line and does not say config.json
/// has problems when config.json has none.
#[test]
fn a_broken_catalog_is_named_as_its_own_file() {
    let t = TestDir::new();
    t.config(&serde_json::json!({"asns": ["62041"]}));
    std::fs::write(t.file("services.json"), r#"{"services": [{"name": "x"}]}"#).unwrap();
    let r = t.run(&["check"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{r:?}");
    let catalog = t.file("services.json").display().to_string();
    let config = t.file("config.json").display().to_string();
    assert!(err.contains(&format!("\n  {catalog}: ")), "{err}");
    assert!(!err.contains(&config), "{err}");
}
