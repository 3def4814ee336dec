//! Tests of loading, validating and editing `config.json`.
use super::*;
use serde_json::Value;
use std::fs;
use std::path::Path;

mod bgp;

fn p() -> &'static Path {
    Path::new("config.json")
}

#[test]
fn defaults_and_empty() {
    let c = parse("{}", p()).unwrap().config;
    assert_eq!(c, Config::default());
    assert_eq!(c.ttl_days, 7);
    assert_eq!(c.schedule.interval_secs(), 360 * 60);
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        load(&dir.path().join("config.json")).unwrap().config,
        Config::default()
    );
}

#[test]
fn full_config() {
    let text = r#"{
            "asns": ["AS62041", 13335, "as62041"],
            "fqdns": ["Example.com."],
            "schedule": {"interval_minutes": 60, "interval_seconds": 5},
            "ttl_days": 0,
            "ripe": {"url": "http://127.0.0.1:1/x", "min_peers_seeing": 10, "retries": 0},
            "dns": {"resolver": "doh", "doh_url": "http://127.0.0.1:2/q"},
            "api": {"listen": "[::1]:9000", "token": "s3cret"},
            "outputs": [{"path": "/tmp/x.nft", "format": "nft", "type": "cidr", "family": 4,
                         "command": "nft -f /tmp/x.nft", "set": "tg"}],
            "extra": {"keep": true}
        }"#;
    let l = parse(text, p()).unwrap();
    let c = l.config;
    assert_eq!(c.asns, ["62041", "13335"]);
    assert_eq!(c.fqdns, ["example.com"]);
    assert_eq!(c.ttl_days, 0);
    assert_eq!(c.schedule.interval_secs(), 5);
    assert_eq!(c.ripe.min_peers_seeing, Some(10));
    assert_eq!(c.ripe.retries, 0);
    assert_eq!(c.ripe.timeout_seconds, 30);
    assert_eq!(c.dns.resolver, Resolver::Doh);
    assert_eq!(c.api.listen.to_string(), "[::1]:9000");
    assert_eq!(c.outputs[0].render.format, Format::Nft);
    assert_eq!(c.outputs[0].render.family, Some(Family::V4));
    assert_eq!(c.outputs[0].render.set, "tg");
    assert_eq!(l.warnings.len(), 2, "{:?}", l.warnings); // duplicate ASN, unknown key
    assert!(l.warnings.iter().any(|w| w.contains("extra")));
}

#[test]
fn errors_name_the_key() {
    let cases = [
        (r#"{"asns": ["AS62041", "ASX"]}"#, "asns[1]"),
        (r#"{"asns": "62041"}"#, "asns"),
        (r#"{"fqdns": ["1.2.3.4"]}"#, "fqdns[0]"),
        (r#"{"ttl_days": -1}"#, "ttl_days"),
        (r#"{"ttl_days": "7"}"#, "ttl_days"),
        (
            r#"{"schedule": {"interval_minutes": 0}}"#,
            "schedule.interval_minutes",
        ),
        (r#"{"ripe": {"url": "ftp://x"}}"#, "ripe.url"),
        (
            r#"{"ripe": {"timeout_seconds": 0}}"#,
            "ripe.timeout_seconds",
        ),
        (r#"{"dns": {"resolver": "udp"}}"#, "dns.resolver"),
        (r#"{"api": {"listen": "localhost"}}"#, "api.listen"),
        (r#"{"outputs": [{"format": "nft"}]}"#, "outputs[0].path"),
        (
            r#"{"outputs": [{"path": "/x", "format": "yaml"}]}"#,
            "outputs[0].format",
        ),
        (
            r#"{"outputs": [{"path": "/x", "set": "bad name"}]}"#,
            "outputs[0].table/set",
        ),
        ("[]", "(top level)"),
        (
            r#"{"storage": {"snapshot_interval_hours": 1.5}}"#,
            "storage.snapshot_interval_hours",
        ),
        (r#"{"storage": 24}"#, "storage"),
    ];
    for (text, key) in cases {
        match parse(text, p()) {
            Err(ConfigError::Invalid { key: k, .. }) => assert_eq!(k, key, "{text}"),
            other => panic!("{text}: {other:?}"),
        }
    }
    let e = parse("{\n  \"asns\": [1,\n}", p()).unwrap_err();
    match &e {
        ConfigError::Syntax { line, column, .. } => assert_eq!((*line, *column), (3, 1)),
        other => panic!("{other:?}"),
    }
    assert!(
        e.to_string()
            .starts_with("config.json: invalid JSON at line 3, column 1"),
        "{e}"
    );
}

#[test]
fn storage_settings() {
    let c = parse(r#"{"storage": {"snapshot_interval_hours": 0}}"#, p()).unwrap();
    assert_eq!(c.config.storage.snapshot_interval_hours, 0);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(Config::default().storage.snapshot_interval_hours, 24);
    let c = parse(r#"{"storage": {"snapshot_hours": 1}}"#, p()).unwrap();
    assert!(
        c.warnings[0].contains("storage.snapshot_hours"),
        "{:?}",
        c.warnings
    );
}

#[test]
fn add_remove_keep_unknown_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    assert_eq!(
        add_source(&path, Kind::Asn, "default", "AS62041").unwrap(),
        ("62041".into(), true)
    );
    assert_eq!(
        add_source(&path, Kind::Asn, "default", "62041").unwrap(),
        ("62041".into(), false)
    );
    fs::write(&path, r#"{"asns": ["AS62041", 13335], "mine": [1, 2]}"#).unwrap();
    assert_eq!(
        add_source(&path, Kind::Fqdn, "default", "Example.com").unwrap(),
        ("example.com".into(), true)
    );
    assert_eq!(
        remove_source(&path, Kind::Asn, "default", "as62041").unwrap(),
        ("62041".into(), true)
    );
    assert_eq!(
        remove_source(&path, Kind::Asn, "default", "1").unwrap(),
        ("1".into(), false)
    );
    let v: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["mine"], serde_json::json!([1, 2]));
    // Rewrites store every source in its normalised form.
    assert_eq!(v["asns"], serde_json::json!(["13335"]));
    assert_eq!(v["fqdns"], serde_json::json!(["example.com"]));
}

/// The bytes of a rewrite: keys sorted (a new list in its place among them), two-space
/// indentation, numbers and strings of unknown keys as written (escapes decoded).
#[test]
fn rewrite_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    let text = r#"{"zeta": {"x": 1.50, "big": 123456789012345678901234567890, "e": 1e3,
        "s": "caf\u00e9 \/ \u0001", "l": [[], {}]}, "groups": {"video": {"zz": 1, "asns": ["1"]}},
        "asns": [13335]}"#;
    fs::write(&path, text).unwrap();
    add_source(&path, Kind::Fqdn, "video", "Example.com").unwrap();
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        r#"{
  "asns": [
    "13335"
  ],
  "groups": {
    "video": {
      "asns": [
        "1"
      ],
      "fqdns": [
        "example.com"
      ],
      "zz": 1
    }
  },
  "zeta": {
    "big": 123456789012345678901234567890,
    "e": 1e3,
    "l": [
      [],
      {}
    ],
    "s": "café / \u0001",
    "x": 1.50
  }
}
"#
    );
}

#[test]
fn bad_values_leave_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    fs::write(&path, "{\"asns\": [\"62041\"]}").unwrap();
    for bad in ["ASX", "", "AS-1", "99999999999"] {
        let e = add_source(&path, Kind::Asn, "default", bad).unwrap_err();
        assert!(e.to_string().contains(&format!("{bad:?}")), "{e}");
    }
    for bad in ["1.2.3.4", "a b", "é.com"] {
        assert!(add_source(&path, Kind::Fqdn, "default", bad).is_err());
    }
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "{\"asns\": [\"62041\"]}"
    );
    // An invalid file is not rewritten either.
    fs::write(&path, "{\"ttl_days\": \"x\"}").unwrap();
    assert!(add_source(&path, Kind::Asn, "default", "1").is_err());
    assert_eq!(fs::read_to_string(&path).unwrap(), "{\"ttl_days\": \"x\"}");
}

#[test]
fn fetch_command_and_min_prefix() {
    let c = parse("{}", p()).unwrap().config;
    assert_eq!(c.fetch.command, None);
    assert_eq!((c.min_prefix.ipv4, c.min_prefix.ipv6), (8, 16));
    let text = r#"{"fetch": {"command": ["uclient-fetch", "-q", "-T", "30", "-O", "-", "{url}"]},
                   "min_prefix": {"ipv4": 12, "ipv6": 0}}"#;
    let c = parse(text, p()).unwrap().config;
    assert_eq!(
        c.fetch.command.unwrap(),
        ["uclient-fetch", "-q", "-T", "30", "-O", "-", "{url}"]
    );
    assert_eq!((c.min_prefix.ipv4, c.min_prefix.ipv6), (12, 0));
    let c = parse(r#"{"fetch": {"command": null}}"#, p())
        .unwrap()
        .config;
    assert_eq!(c.fetch.command, None);
    for (text, key, says) in [
        (
            r#"{"fetch": {"command": "curl {url}"}}"#,
            "fetch.command",
            "expected a list",
        ),
        (r#"{"fetch": {"command": []}}"#, "fetch.command", "empty"),
        (
            r#"{"fetch": {"command": ["curl"]}}"#,
            "fetch.command",
            "{url}",
        ),
        (
            r#"{"fetch": {"command": ["", "{url}"]}}"#,
            "fetch.command[0]",
            "non-empty",
        ),
        (
            r#"{"fetch": {"command": ["curl", 5]}}"#,
            "fetch.command[1]",
            "got 5",
        ),
        (
            r#"{"min_prefix": {"ipv4": 33}}"#,
            "min_prefix.ipv4",
            "0 to 32",
        ),
        (
            r#"{"min_prefix": {"ipv6": 129}}"#,
            "min_prefix.ipv6",
            "0 to 128",
        ),
        (r#"{"min_prefix": 8}"#, "min_prefix", "object"),
    ] {
        let e = parse(text, p()).unwrap_err().to_string();
        assert!(e.contains(key) && e.contains(says), "{text}: {e}");
    }
    let w = parse(r#"{"fetch": {"comand": []}}"#, p()).unwrap().warnings;
    assert!(w.iter().any(|w| w.contains("fetch.comand")), "{w:?}");
}

#[test]
fn many_sources_and_duplicates() {
    // 20,000 ASNs, each listed twice in two spellings: collected once, warned once each.
    let list: Vec<String> = (1..=20_000)
        .flat_map(|n| [format!("\"{n}\""), format!("\"AS{n}\"")])
        .collect();
    let text = format!("{{\"asns\":[{}]}}", list.join(","));
    let l = parse(&text, p()).unwrap();
    assert_eq!(l.config.asns.len(), 20_000);
    assert_eq!(l.config.asns[19_999], "20000");
    assert_eq!(l.warnings.len(), 20_000);
    assert!(
        l.warnings[0].contains("asns[1]: 1 is listed twice"),
        "{:?}",
        l.warnings[0]
    );
}

#[test]
fn too_large_files_are_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    // Compact JSON under the limit, which the pretty rewrite would take over it.
    let list: Vec<String> = (1..=100_000).map(|n| format!("{n}")).collect();
    let mut text = format!("{{\"asns\":[{}]}}", list.join(","));
    text.push_str(&" ".repeat(MAX_CONFIG_BYTES as usize - text.len()));
    fs::write(&path, &text).unwrap();
    assert_eq!(load(&path).unwrap().config.asns.len(), 100_000);
    // A change that would take it over the limit is refused, the file left as it was.
    let e = add_source(&path, crate::source::Kind::Asn, "default", "200000").unwrap_err();
    assert!(matches!(e, ConfigError::TooLarge { .. }), "{e}");
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
    text.push(' ');
    fs::write(&path, &text).unwrap();
    let e = load(&path).unwrap_err();
    assert!(
        e.to_string()
            .contains("config.json: larger than the limit of 1048576 bytes"),
        "{e}"
    );
}

#[test]
fn groups_and_exclusions() {
    let text = r#"{
        "asns": ["62041"], "fqdns": ["telegram.org"],
        "exclude": ["192.168.0.0/16", "2001:db8::1"],
        "groups": {
            "video": {"asns": ["AS2906", "62041"], "fqdns": ["Netflix.com."],
                      "exclude": ["23.246.0.0/24"], "mark": "0x100"},
            "office": {"asns": [13335], "mark": 512, "mark_mask": "0xff00"}
        },
        "outputs": [{"load": "nft", "group": "video"}, {"path": "/x", "group": "*"},
                    {"path": "/y", "group": "office", "set": "work"}]
    }"#;
    let c = parse(text, p()).unwrap().config;
    // Collected once: the union, default first.
    assert_eq!(c.asns, ["62041", "13335", "2906"]);
    assert_eq!(c.fqdns, ["telegram.org", "netflix.com"]);
    let names: Vec<&str> = c.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["default", "office", "video"]);
    assert_eq!(c.default_group().asns, ["62041"]);
    let video = c.group("video").unwrap();
    assert_eq!(video.asns, ["2906", "62041"]);
    assert_eq!(
        video.mark,
        Some(Mark {
            value: 0x100,
            mask: u32::MAX
        })
    );
    assert_eq!(
        c.group("office").unwrap().mark,
        Some(Mark {
            value: 0x200,
            mask: 0xff00
        })
    );
    assert_eq!(c.groups_of(Kind::Asn, "62041"), ["default", "video"]);
    assert_eq!(c.exclusions("video").len(), 3);
    // Outputs: the group's sets, its selection and mark (load only).
    assert_eq!(c.outputs[0].render.set, "video");
    assert_eq!(c.outputs[0].mark, video.mark);
    let only = Selected::Only(vec![
        (Kind::Asn, "2906".into()),
        (Kind::Asn, "62041".into()),
        (Kind::Fqdn, "netflix.com".into()),
    ]);
    assert_eq!(c.outputs[0].selection.parts[0].sources, only);
    // Its matcher, and the default group's (everything but what only others name).
    let m = only.matcher();
    assert!(m.names(Kind::Asn, "62041") && m.names(Kind::Fqdn, "netflix.com"));
    assert!(!m.names(Kind::Fqdn, "2906") && !m.names(Kind::Asn, "13335"));
    let d = c.selection("default").unwrap().parts[0].sources.matcher();
    assert!(d.names(Kind::Asn, "62041") && d.names(Kind::Asn, "99"));
    assert!(!d.names(Kind::Asn, "2906") && !d.names(Kind::Fqdn, "netflix.com"));
    assert!(Selected::Everything.matcher().names(Kind::Feed, "x"));
    assert_eq!(c.outputs[1].render.set, "ripe");
    assert_eq!(
        c.outputs[1].selection.parts.len(),
        3,
        "* with own exclusions: each group"
    );
    assert_eq!(c.outputs[2].render.set, "work");
    assert_eq!(c.outputs[2].mark, None);
    // The default group beside others: everything but what only others name.
    assert_eq!(
        c.selection("default").unwrap().parts[0].sources,
        Selected::AllBut(vec![
            (Kind::Asn, "13335".into()),
            (Kind::Asn, "2906".into()),
            (Kind::Fqdn, "netflix.com".into())
        ])
    );
    let e = c.selection("nope").unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown group \"nope\": configured groups are default, office, video"
    );
    // Without groups: everything, as before groups existed.
    let c = parse(r#"{"asns": ["1"]}"#, p()).unwrap().config;
    assert_eq!(c.selection("default").unwrap(), Selection::default());
    assert_eq!(c.selection("*").unwrap(), Selection::default());
}

#[test]
fn bad_groups_and_exclusions_name_the_value_and_group() {
    for (text, want) in [
        (r#"{"groups": {"Video": {}}}"#, "groups.Video: invalid group name \"Video\""),
        (r#"{"groups": {"default": {}}}"#, "groups.default: the group \"default\""),
        (r#"{"groups": {"a_very_long_group_name_xyz": {}}}"#, "invalid group name"),
        (r#"{"groups": []}"#, "groups: expected an object"),
        (r#"{"groups": {"v": {"asns": ["ASX"]}}}"#, "groups.v.asns[0]: invalid ASN \"ASX\""),
        (r#"{"groups": {"v": {"exclude": ["10.1.2.3/16"]}}}"#, "groups.v.exclude[0]: invalid prefix \"10.1.2.3/16\": host bits set (the prefix is 10.1.0.0/16) (group v)"),
        (r#"{"exclude": ["nope"]}"#, "exclude[0]: invalid prefix \"nope\""),
        (r#"{"exclude": "10.0.0.0/8"}"#, "exclude: expected a list"),
        (r#"{"groups": {"v": {"mark": "0x"}}}"#, "groups.v.mark: expected a non-zero 32-bit mark"),
        (r#"{"groups": {"v": {"mark": 0}}}"#, "groups.v.mark: expected a non-zero"),
        (r#"{"groups": {"v": {"mark_mask": "0xff"}}}"#, "groups.v.mark_mask: given without \"mark\""),
        (r#"{"groups": {"v": {"mark": "0x100", "mark_mask": "0xff"}}}"#, "groups.v.mark: 0x100 has bits outside mark_mask 0xff"),
        (r#"{"outputs": [{"path": "/x", "group": "v"}]}"#, "outputs[0].group: unknown group \"v\""),
        (r#"{"outputs": [{"path": "/x", "group": "Bad"}]}"#, "invalid group name \"Bad\""),
        (r#"{"groups": {"1x": {}}, "outputs": [{"path": "/x", "group": "1x"}]}"#, "invalid set name \"1x\""),
    ] {
        let e = parse(text, p()).unwrap_err().to_string();
        assert!(e.contains(want), "{text}: {e}");
    }
}

#[test]
fn sources_per_group_and_normalised_rewrites() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    fs::write(
        &path,
        r#"{"asns": ["AS1"], "groups": {"video": {"asns": ["as2"]}}}"#,
    )
    .unwrap();
    assert_eq!(
        add_source(&path, Kind::Asn, "video", "AS3").unwrap(),
        ("3".to_string(), true)
    );
    assert!(add_source(&path, Kind::Asn, "video", "1").unwrap().1);
    assert!(!add_source(&path, Kind::Asn, "default", "1").unwrap().1);
    let before = fs::read_to_string(&path).unwrap();
    let e = add_source(&path, Kind::Asn, "nope", "4").unwrap_err();
    assert!(matches!(e, ConfigError::UnknownGroup(_)), "{e}");
    assert!(e.to_string().contains("\"nope\""), "{e}");
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        before,
        "nothing changed"
    );
    assert!(remove_source(&path, Kind::Asn, "video", "AS2").unwrap().1);
    let v: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["asns"], serde_json::json!(["1"]));
    assert_eq!(v["groups"]["video"]["asns"], serde_json::json!(["3", "1"]));
}

/// A file saved with a UTF-8 byte order mark (Windows Notepad) reads, and a source
/// command rewrites it without the mark, keeping the rest.
#[test]
fn byte_order_mark_is_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    fs::write(&path, "\u{feff}{\"asns\": [\"1\"],\r\n \"extra\": 1}\r\n").unwrap();
    assert_eq!(load(&path).unwrap().config.asns, ["1"]);
    add_source(&path, crate::source::Kind::Asn, "default", "2").unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert!(!text.starts_with('\u{feff}'), "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v, serde_json::json!({"asns": ["1", "2"], "extra": 1}));
    // Positions of errors are counted after the mark, as an editor shows them.
    fs::write(&path, "\u{feff}{\"asns\": x}").unwrap();
    let e = load(&path).unwrap_err().to_string();
    assert!(e.contains("line 1, column 10"), "{e}");
}

/// A host name of one label (`com`) would make dnsmasq's `nftset=/com/...` cover every
/// `.com` name: refused unless its group says `"allow_single_label": true`, in the
/// file and through `add_source` (CLI and API).
#[test]
fn single_label_names_need_their_group_to_allow_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    let refused = |text: &str, key: &str| {
        let e = parse(text, &path).unwrap_err().to_string();
        assert!(
            e.contains(key) && e.contains("\"com\"") && e.contains("allow_single_label"),
            "{e}"
        );
    };
    refused(r#"{"fqdns": ["Com."]}"#, "fqdns");
    refused(
        r#"{"groups": {"v": {"fqdns": ["a.example", "com"]}}}"#,
        "groups.v.fqdns",
    );
    // The top level's key is the default group's, a group's only its own.
    refused(
        r#"{"allow_single_label": true, "groups": {"v": {"fqdns": ["com"]}}}"#,
        "groups.v.fqdns",
    );
    let c = parse(r#"{"allow_single_label": true, "fqdns": ["com"]}"#, &path).unwrap();
    assert_eq!(c.config.fqdns, ["com"]);
    let text = r#"{"groups": {"v": {"allow_single_label": true, "fqdns": ["localhost"]}}}"#;
    assert!(parse(text, &path).unwrap().config.groups[1].allow_single_label);
    let e = parse(r#"{"allow_single_label": "yes"}"#, &path).unwrap_err();
    assert!(
        e.to_string()
            .contains("allow_single_label: expected true or false"),
        "{e}"
    );

    fs::write(&path, r#"{"groups": {"v": {"allow_single_label": true}}}"#).unwrap();
    let e = add_source(&path, Kind::Fqdn, "default", "com").unwrap_err();
    assert!(
        matches!(&e, ConfigError::Refused(m) if m.contains("\"com\"")),
        "{e}"
    );
    assert!(add_source(&path, Kind::Fqdn, "default", "a.com").unwrap().1);
    assert!(add_source(&path, Kind::Fqdn, "v", "com").unwrap().1);
}

/// `allow_special` is kept per source, not per group: an ASN or country named by a
/// group that allows special ranges and by one that does not is refused, naming the
/// source and both groups; groups that agree are accepted.
#[test]
fn a_source_is_named_only_by_groups_that_agree_on_allow_special() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    let refused = |text: &str, key: &str, source: &str, allowing: &str, other: &str| {
        let e = parse(text, &path).unwrap_err().to_string();
        let want = format!(
            "{key}: {source} is named by group \"{allowing}\", which allows special ranges, \
             and by group \"{other}\", which does not"
        );
        assert!(e.contains(&want), "{want}\n{e}");
    };
    refused(
        r#"{"groups": {"lab": {"asns": ["64496"], "allow_special": true},
                       "vpn": {"asns": ["64496", "64497"]}}}"#,
        "groups.lab.allow_special",
        "AS64496",
        "lab",
        "vpn",
    );
    refused(
        r#"{"allow_special": true, "countries": ["NL"], "groups": {"vpn": {"countries": ["nl"]}}}"#,
        "config.json: allow_special",
        "country NL",
        "default",
        "vpn",
    );
    refused(
        r#"{"asns": ["64496"], "groups": {"lab": {"asns": ["64496"], "allow_special": true}}}"#,
        "groups.lab.allow_special",
        "AS64496",
        "lab",
        "default",
    );
    for agreed in [
        r#"{"groups": {"lab": {"asns": ["64496"], "allow_special": true},
                       "lab2": {"asns": ["64496"], "allow_special": true},
                       "vpn": {"asns": ["64497"]}}}"#,
        // Feeds and host names are not filtered: allow_special does not matter there.
        r#"{"fqdns": ["a.example"], "groups": {"lab": {"fqdns": ["a.example"], "allow_special": true}}}"#,
    ] {
        assert!(parse(agreed, &path).is_ok(), "{agreed}");
    }
    // An edit that would make them disagree is refused, the file left as it was.
    let text = r#"{"groups": {"lab": {"asns": ["64496"], "allow_special": true}}}"#;
    fs::write(&path, text).unwrap();
    let e = add_source(&path, Kind::Asn, "default", "AS64496").unwrap_err();
    assert!(
        matches!(&e, ConfigError::Refused(m)
            if m.starts_with("AS64496 is named by group \"lab\", which allows special ranges, and by group \"default\"")),
        "{e}"
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
}
