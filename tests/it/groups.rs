//! Groups end to end: two groups sharing a source (collected once), each export its
//! own union, `*` the union of both, exclusions cut out; an old configuration without
//! groups lists byte for byte what the version before groups listed; unknown groups
//! are refused naming them, changing nothing.

use std::fs;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;
use serde_json::json;

use crate::common::{
    http_get, http_send, is_name_lookup, resource_of, ripe_body, FakeServer, Reply, TestDir,
};

/// A fixed time, so that the detailed listing's times are the same every run.
const NOW: i64 = 1_790_000_000;

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Stored rows of a configured ASN, a configured host name and an ASN no longer
/// configured (its values age out, and are listed until then, as before groups).
fn store_old_data(t: &TestDir) {
    let mut d = db::open(&t.paths()).unwrap();
    let asn = strings(&[
        "91.108.4.0/22",
        "91.108.8.0/22",
        "149.154.160.0/20",
        "10.0.0.0/8",
        "10.1.0.0/16",
        "2001:b28:f23d::/48",
        "2001:b28:f23f::/48",
    ]);
    d.merge_source(Kind::Asn, "62041", &asn, NOW, 7).unwrap();
    let fqdn = strings(&[
        "93.184.216.34",
        "10.1.2.3",
        "2606:2800:220:1:248:1893:25c8:1946",
    ]);
    d.merge_source(Kind::Fqdn, "example.com", &fqdn, NOW, 7)
        .unwrap();
    let orphan = strings(&["198.51.100.0/24", "91.108.4.0/22"]);
    d.merge_source(Kind::Asn, "64500", &orphan, NOW, 7).unwrap();
}

const OLD_CASES: &[(&str, &[&str])] = &[
    ("text", &["export"]),
    ("json", &["export", "--format", "json"]),
    ("nft", &["export", "--format", "nft"]),
    ("ipset", &["export", "--format", "ipset"]),
    (
        "routeros",
        &["export", "--format", "routeros", "--set", "tg"],
    ),
    ("aggregate", &["export", "--aggregate"]),
    ("cidr6", &["export", "--type", "cidr", "--family", "6"]),
    ("fqdn", &["export", "--type", "fqdn"]),
    ("details", &["export", "--format", "json", "--details"]),
];

/// The fixtures were written by the binary of the version before groups:
/// `RECORD_OLD_WITH=/path/to/old/ripe-cidr-collector cargo test --test it old_config`
/// rewrites them. `routeros.out` alone was written again in version 0.3, on purpose:
/// the RouterOS script now updates the list in place instead of removing it first.
#[test]
fn old_config_lists_byte_identical_to_before_groups() {
    let t = TestDir::new();
    store_old_data(&t);
    t.config(&json!({"asns": ["62041"], "fqdns": ["example.com"], "ttl_days": 7}));
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/groups-old");
    let record = std::env::var_os("RECORD_OLD_WITH");
    for (name, args) in OLD_CASES {
        let fixture = dir.join(format!("{name}.out"));
        if let Some(old) = &record {
            let out = std::process::Command::new(old)
                .arg("--data-dir")
                .arg(t.path())
                .args(*args)
                .output()
                .unwrap();
            assert!(out.status.success(), "{name}");
            fs::write(&fixture, &out.stdout).unwrap();
        }
        let out = t.run(args);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let want = fs::read(&fixture).unwrap();
        assert!(
            out.stdout == want,
            "{name}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    // The same through the API, and `group=default` / `group=*` change nothing.
    let s = t.spawn_listening(&["serve"]);
    let want = fs::read(dir.join("nft.out")).unwrap();
    for q in ["", "&group=default", "&group=*", "&group=%2A"] {
        let (status, body) = http_get(s.1, &format!("/addresses?format=nft{q}"));
        assert_eq!(status, 200, "{q}");
        assert!(body.as_bytes() == want, "{q}: {body}");
    }
}

/// AS62041 in both groups, AS2906 in `video` only; RIPEstat answers count requests.
fn two_group_setup() -> (TestDir, FakeServer, Arc<AtomicUsize>) {
    let calls_62041 = Arc::new(AtomicUsize::new(0));
    let calls = calls_62041.clone();
    let ripe = FakeServer::start(move |rq| match resource_of(&rq.url).as_deref() {
        _ if is_name_lookup(&rq.url) => Reply::json(404, "{}"),
        Some("62041") => {
            calls.fetch_add(1, Ordering::SeqCst);
            Reply::json(
                200,
                ripe_body(&strings(&[
                    "91.108.4.0/22",
                    "149.154.160.0/20",
                    "2001:b28:f23d::/48",
                ])),
            )
        }
        Some("2906") => Reply::json(
            200,
            ripe_body(&strings(&["45.57.0.0/17", "2a00:86c0::/32"])),
        ),
        _ => Reply::json(404, "{}"),
    });
    let t = TestDir::new();
    t.config(&json!({
        "asns": ["62041"],
        "groups": {"video": {"asns": ["AS2906", "AS62041"], "exclude": ["45.57.0.0/24"]}},
        "ripe": {"url": ripe.url("/data/announced-prefixes/data.json"), "timeout_seconds": 2,
                 "retries": 0}
    }));
    let out = t.run(&["run"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (t, ripe, calls_62041)
}

fn export(t: &TestDir, args: &[&str]) -> String {
    let out = t.run(&[&["export"], args].concat());
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn two_groups_share_a_source_collected_once() {
    let (t, _ripe, calls) = two_group_setup();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the shared source is fetched once"
    );
    let default = export(&t, &[]);
    assert_eq!(
        default,
        "91.108.4.0/22\n149.154.160.0/20\n2001:b28:f23d::/48\n"
    );
    let video = export(&t, &["--group", "video"]);
    let cut = "45.57.1.0/24\n45.57.2.0/23\n45.57.4.0/22\n45.57.8.0/21\n45.57.16.0/20\n\
               45.57.32.0/19\n45.57.64.0/18\n";
    assert_eq!(
        video,
        format!("{cut}91.108.4.0/22\n149.154.160.0/20\n2001:b28:f23d::/48\n2a00:86c0::/32\n")
    );
    // `*`: the union of both lists (the /24 is excluded in the only group listing it).
    assert_eq!(export(&t, &["--group", "*"]), video);
    assert_eq!(
        export(&t, &["--group", "video", "--type", "asn", "--family", "6"]),
        "2001:b28:f23d::/48\n2a00:86c0::/32\n"
    );
    assert_eq!(export(&t, &["--group", "video", "--type", "fqdn"]), "");
    // The group names its sets.
    let nft = export(&t, &["--group", "video", "--format", "nft"]);
    assert!(nft.contains("add set inet ripe_cidr video_v4"), "{nft}");
    assert!(export(&t, &["--group", "video", "--format", "nft", "--set", "tv"]).contains(" tv_v4"));
    // The API gives the same bytes and knows the groups of each source.
    let s = t.spawn_listening(&["serve"]);
    let (status, body) = http_get(s.1, "/addresses?group=video");
    assert_eq!((status, body.as_str()), (200, video.as_str()));
    // `default` unless named, as `asn list` and `export`; `*` for every group.
    let (status, body) = http_get(s.1, "/asns");
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["asns"], json!(["62041"]));
    let (status, body) = http_get(s.1, "/asns?group=*");
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["asns"], json!(["62041", "2906"]));
    assert_eq!(
        v["groups"],
        json!({"62041": ["default", "video"], "2906": ["video"]})
    );
    let (_, body) = http_get(s.1, "/asns?group=video");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap()["asns"],
        json!(["2906", "62041"])
    );
    // `asn list` lists the group `default`, `--group` another or `*` all, in the
    // four documented columns (the fourth: the holder's name).
    let list = |args: &[&str]| {
        let out = t.run(&[&["asn", "list"][..], args].concat());
        let listed = String::from_utf8_lossy(&out.stdout).to_string();
        let cols: Vec<usize> = listed.lines().map(|l| l.split('\t').count()).collect();
        (
            listed
                .lines()
                .map(|l| l.split('\t').next().unwrap().to_string())
                .collect::<Vec<_>>(),
            cols,
        )
    };
    assert_eq!(list(&[]), (vec!["62041".to_string()], vec![4]));
    assert_eq!(list(&["--group", "video"]).0, ["2906", "62041"]);
    assert_eq!(
        list(&["--group", "*"]),
        (vec!["62041".to_string(), "2906".to_string()], vec![4, 4])
    );
    // `lookup` marks a match that the group's exclusion cuts the address out of.
    let out = t.run(&["lookup", "45.57.0.1", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["matches"][0]["value"], "45.57.0.0/17", "{v}");
    assert_eq!(v["matches"][0]["excluded"], true, "{v}");
    let out = t.run(&["lookup", "45.57.1.1", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["matches"][0].get("excluded").is_none(), "{v}");
    let out = t.run(&["lookup", "45.57.0.1"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).ends_with("\tconfigured\texcluded\n"),
        "{out:?}"
    );
    // Status counts per group.
    let out = t.run(&["status", "--json"]);
    let st: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(st["groups"]["video"]["sources"], 2, "{st}");
    assert_eq!(st["groups"]["video"]["stored"], 5, "{st}");
    assert_eq!(st["groups"]["default"]["stored"], 3, "{st}");
    let out = t.run(&["status"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("group video:"),
        "{out:?}"
    );
}

#[test]
fn unknown_groups_and_bad_names_change_nothing() {
    let (t, _ripe, _) = two_group_setup();
    let config = fs::read_to_string(t.file("config.json")).unwrap();
    for (args, want) in [
        (&["export", "--group", "nope"][..], "unknown group \"nope\""),
        (
            &["asn", "add", "AS1", "--group", "nope"],
            "unknown group \"nope\"",
        ),
        (
            &["asn", "remove", "AS2906", "--group", "nope"],
            "unknown group \"nope\"",
        ),
        (
            &["asn", "list", "--group", "nope"],
            "unknown group \"nope\"",
        ),
        (&["changes", "--group", "nope"], "unknown group \"nope\""),
        (
            &["export", "--group", "Bad!"],
            "invalid group name \"Bad!\"",
        ),
        (
            &["asn", "add", "AS1", "--group", "*"],
            "--group '*' goes with `list` only",
        ),
    ] {
        let out = t.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(
            !err.contains("ripe_cidr_collector::"),
            "no module paths: {err}"
        );
    }
    let s = t.spawn_listening(&["serve"]);
    for target in [
        "/addresses?group=nope",
        "/changes?group=nope",
        "/asns?group=nope",
        "/addresses?group=Bad",
    ] {
        let (status, body) = http_get(s.1, target);
        assert_eq!(status, 400, "{target}: {body}");
        assert!(
            body.contains("nope") || body.contains("Bad"),
            "{target}: {body}"
        );
    }
    assert_eq!(fs::read_to_string(t.file("config.json")).unwrap(), config);
    // A change to a group through the CLI and the API.
    let out = t.run(&["asn", "add", "AS13335", "--group", "video"]);
    assert!(out.status.success());
    let cfg: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(t.file("config.json")).unwrap()).unwrap();
    assert_eq!(
        cfg["groups"]["video"]["asns"],
        json!(["2906", "62041", "13335"])
    );
    assert_eq!(cfg["asns"], json!(["62041"]));
}

/// `com` or `localhost` as a host name: dnsmasq's `nftset=/com/...` would route every
/// `.com` name. Refused by the CLI, the API and config.json unless the group says
/// `"allow_single_label": true`.
#[test]
fn single_label_host_names_only_where_the_group_allows_them() {
    let t = TestDir::new();
    let dnsmasq = t.file("dnsmasq.conf");
    t.config(&json!({
        "fqdns": ["a.example"],
        "groups": {"lan": {"allow_single_label": true, "fqdns": ["b.example"]}},
        "outputs": [{"dnsmasq": dnsmasq.to_str().unwrap(), "group": "*"}]
    }));
    let config = fs::read_to_string(t.file("config.json")).unwrap();
    let out = t.run(&["fqdn", "add", "com"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"com\"") && err.contains("allow_single_label"),
        "{err}"
    );
    let s = t.spawn_listening(&["serve"]);
    let (status, body) = http_send(s.1, "POST", "/fqdns", r#"{"fqdn": "localhost"}"#);
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("localhost") && body.contains("single label"),
        "{body}"
    );
    assert_eq!(fs::read_to_string(t.file("config.json")).unwrap(), config);
    // The group that says so takes one, and its dnsmasq line names it.
    let (status, body) = http_send(s.1, "POST", "/fqdns?group=lan", r#"{"fqdn": "router"}"#);
    assert_eq!(status, 201, "{body}");
    let out = t.run(&["render"]);
    assert!(out.status.success(), "{out:?}");
    let file = fs::read_to_string(&dnsmasq).unwrap();
    assert!(
        file.contains("/router/") && !file.contains("/com/"),
        "{file}"
    );
    // A config.json written by hand is refused, naming the key and the name.
    let mut cfg: serde_json::Value = serde_json::from_str(&config).unwrap();
    cfg["fqdns"] = json!(["a.example", "com"]);
    t.config(&cfg);
    let out = t.run(&["fqdn", "list"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("fqdns") && err.contains("\"com\""),
        "{err}"
    );
}
