//! `lookup`, `changes` and the detailed listing: the real binary's commands beside
//! the API's routes (same bytes), bad input, and what `run` records.

use super::*;

/// Stores the data set of the lookup tests: an ASN prefix and a name resolving to an
/// address inside it, nested prefixes of two sources, and a value in two sources.
fn fill_lookup(t: &TestDir) -> i64 {
    t.config(&json!({"asns": ["62041", "64496"], "fqdns": []}));
    let mut d = db::open(&t.paths()).unwrap();
    let now = ripe_cidr_collector::util::unix_now();
    d.merge_source(
        Kind::Asn,
        "62041",
        &strings(&["149.154.160.0/20", "91.108.4.0/24", "2001:b28:f23d::/48"]),
        now - 3600,
        7,
    )
    .unwrap();
    d.merge_source(
        Kind::Asn,
        "64496",
        &strings(&["91.108.0.0/16", "91.109.0.0/16", "91.108.4.0/24"]),
        now,
        7,
    )
    .unwrap();
    // A name no longer configured: shown with configured false.
    d.merge_source(
        Kind::Fqdn,
        "t.example",
        &strings(&["149.154.167.99", "2001:b28:f23d::1"]),
        now,
        7,
    )
    .unwrap();
    now
}

fn cli_json(t: &TestDir, args: &[&str]) -> Vec<u8> {
    let out = t.run(args);
    assert!(out.status.success(), "{args:?}: {out:?}");
    out.stdout
}

fn matches(v: &Value) -> Vec<(String, String, String, bool)> {
    v["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["value"].as_str().unwrap().to_string(),
                m["kind"].as_str().unwrap().to_string(),
                m["source"].as_str().unwrap().to_string(),
                m["configured"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn m(value: &str, kind: &str, source: &str, configured: bool) -> (String, String, String, bool) {
    (value.into(), kind.into(), source.into(), configured)
}

#[test]
fn lookup_address_in_asn_prefix_and_resolved_by_name() {
    let t = TestDir::new();
    fill_lookup(&t);
    let s = serve(&t);
    let api = get(s.addr, "/lookup?ip=149.154.167.99");
    assert_eq!(api.status, 200, "{}", api.text());
    assert_eq!(api.header("Content-Type"), Some("application/json"));
    let v = api.json();
    assert_eq!(v["query"], "149.154.167.99");
    assert_eq!(
        matches(&v),
        [
            m("149.154.160.0/20", "asn", "62041", true),
            m("149.154.167.99", "fqdn", "t.example", false)
        ]
    );
    let first = &v["matches"][0];
    assert!(first["first_seen"].as_str().unwrap().ends_with('Z'));
    assert!(first["last_seen"].is_string());
    assert_eq!(
        cli_json(&t, &["lookup", "149.154.167.99", "--json"]),
        api.body,
        "lookup --json and GET /lookup differ"
    );
    // IPv6 the same way; the text form names both sources.
    let v = get(s.addr, "/lookup?ip=2001:b28:f23d::1").json();
    assert_eq!(
        matches(&v),
        [
            m("2001:b28:f23d::/48", "asn", "62041", true),
            m("2001:b28:f23d::1", "fqdn", "t.example", false)
        ]
    );
    let text = String::from_utf8(cli_json(&t, &["lookup", "149.154.167.99"])).unwrap();
    assert!(
        text.contains("AS62041") && text.contains("t.example"),
        "{text}"
    );
    assert!(text.contains("not configured"), "{text}");
    // Nothing stored there.
    let v = get(s.addr, "/lookup?ip=8.8.8.8").json();
    assert_eq!(v, json!({"query": "8.8.8.8", "matches": []}));
}

#[test]
fn lookup_prefix_overlapping_stored_ones() {
    let t = TestDir::new();
    fill_lookup(&t);
    let s = serve(&t);
    // Inside 91.108.0.0/16, containing 91.108.4.0/24 (held by two sources).
    let api = get(s.addr, "/lookup?ip=91.108.4.0/22");
    let v = api.json();
    assert_eq!(v["query"], "91.108.4.0/22");
    assert_eq!(
        matches(&v),
        [
            m("91.108.0.0/16", "asn", "64496", true),
            m("91.108.4.0/24", "asn", "62041", true),
            m("91.108.4.0/24", "asn", "64496", true)
        ]
    );
    assert_eq!(
        cli_json(&t, &["lookup", "91.108.4.0/22", "--json"]),
        api.body
    );
    // A wide prefix finds what is inside it, host bits are cleared, other prefixes stay out.
    let v = get(s.addr, "/lookup?ip=91.108.77.1/9").json();
    assert_eq!(v["query"], "91.0.0.0/9");
    let values: Vec<String> = matches(&v).into_iter().map(|x| x.0).collect();
    assert_eq!(
        values,
        [
            "91.108.0.0/16",
            "91.108.4.0/24",
            "91.108.4.0/24",
            "91.109.0.0/16"
        ]
    );
    let v = get(s.addr, "/lookup?ip=2001:b28::/32").json();
    assert_eq!(matches(&v).len(), 2);
}

#[test]
fn bad_ip_and_bad_since() {
    let t = TestDir::new();
    fill_lookup(&t);
    let s = serve(&t);
    for target in [
        "/lookup?ip=banana",
        "/lookup?ip=1.2.3.4/33",
        "/lookup?ip=",
        "/lookup",
        "/lookup?ip=1.2.3.4&ip=5.6.7.8",
    ] {
        assert_error(&get(s.addr, target), 400, "ip");
    }
    assert_error(&get(s.addr, "/lookup?ipp=1.2.3.4"), 400, "ipp");
    for target in [
        "/changes?since=yesterday",
        "/changes?since=2026-11-30",
        "/changes?since=2026-11-30T00:00:00",
        "/changes?since=2026-02-30T00:00:00Z",
    ] {
        assert_error(&get(s.addr, target), 400, "since");
    }
    assert_error(&get(s.addr, "/changes?type=bogus"), 400, "type");
    assert_error(&get(s.addr, "/addresses?details=1"), 400, "details");
    assert_error(
        &get(s.addr, "/addresses?format=json&details=1&aggregate=1"),
        400,
        "details",
    );
    for (args, mentions) in [
        (&["lookup", "banana"][..], "banana"),
        (&["lookup"], "lookup"),
        (&["changes", "--since", "yesterday"], "--since"),
        (&["export", "--details"], "--details"),
    ] {
        let out = t.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(mentions), "{args:?}: {err}");
    }
}

#[test]
fn changes_equal_api_and_record_reasons() {
    let t = TestDir::new();
    let now = fill_lookup(&t);
    // An expiry, a sweep and a purge, each with its own reason.
    {
        let mut d = db::open(&t.paths()).unwrap();
        d.merge_source(Kind::Asn, "62041", &[], now + 8 * 86_400, 7)
            .unwrap();
        d.sweep_unconfigured(Kind::Fqdn, &[], now + 8 * 86_400, 7)
            .unwrap();
    }
    let out = t.run(&["asn", "remove", "64496", "--purge"]);
    assert!(out.status.success(), "{out:?}");
    let s = serve(&t);
    let since = ripe_cidr_collector::util::iso(now - 86_400);
    let api = get(s.addr, &format!("/changes?since={since}"));
    assert_eq!(api.status, 200, "{}", api.text());
    let v = api.json();
    assert_eq!(v["since"], since.as_str());
    let list = v["changes"].as_array().unwrap();
    let count = |change: &str, source: &str| {
        list.iter()
            .filter(|c| c["change"] == change && c["source"] == source)
            .count()
    };
    assert_eq!(count("added", "62041"), 3);
    assert_eq!(count("expired", "62041"), 3);
    assert_eq!(count("swept", "t.example"), 2);
    assert_eq!(count("purged", "64496"), 3);
    let times: Vec<&str> = list.iter().map(|c| c["time"].as_str().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "oldest first");
    assert_eq!(
        list[0],
        json!({"time": ripe_cidr_collector::util::iso(now - 3600), "change": "added", "kind": "asn",
               "source": "62041", "value": "149.154.160.0/20"})
    );
    assert_eq!(
        cli_json(&t, &["changes", "--since", &since, "--json"]),
        api.body,
        "changes --json and GET /changes differ"
    );
    let fqdn = get(s.addr, &format!("/changes?since={since}&type=fqdn"));
    assert_eq!(
        cli_json(
            &t,
            &["changes", "--since", &since, "--type", "fqdn", "--json"]
        ),
        fqdn.body
    );
    assert!(fqdn.json()["changes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["kind"] == "fqdn"));
    // The default is the last 24 hours: the expiry and sweep (8 days ahead) are in it.
    let recent = get(s.addr, "/changes").json();
    assert!(recent["since"].as_str().unwrap().ends_with('Z'));
    let text = String::from_utf8(cli_json(&t, &["changes", "--since", &since])).unwrap();
    assert!(text.contains("\tpurged\tAS64496\t"), "{text}");
}

#[test]
fn details_list_sources_and_times() {
    let t = TestDir::new();
    let now = fill_lookup(&t);
    let s = serve(&t);
    let api = get(s.addr, "/addresses?format=json&details=1");
    assert_eq!(api.status, 200, "{}", api.text());
    assert!(api.header("ETag").is_some());
    let out = t.run(&["export", "--format", "json", "--details"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        out.stdout, api.body,
        "export --details and details=1 differ"
    );
    let v = api.json();
    assert_eq!(v["type"], "all");
    assert_eq!(v["count"], 7);
    let list = v["addresses"].as_array().unwrap();
    let values: Vec<&str> = list.iter().map(|a| a["value"].as_str().unwrap()).collect();
    // The order of the plain listing.
    let plain = get(s.addr, "/addresses?format=json").json();
    assert_eq!(json!(values), plain["addresses"]);
    let both = list.iter().find(|a| a["value"] == "91.108.4.0/24").unwrap();
    assert_eq!(
        both["sources"],
        json!([{"kind": "asn", "source": "62041"}, {"kind": "asn", "source": "64496"}])
    );
    assert_eq!(
        both["first_seen"],
        ripe_cidr_collector::util::iso(now - 3600).as_str()
    );
    assert_eq!(
        both["last_seen"],
        ripe_cidr_collector::util::iso(now).as_str()
    );
    // Type and family filters apply as in the plain listing.
    let fqdn6 = get(
        s.addr,
        "/addresses?format=json&details=1&type=fqdn&family=6",
    );
    let out = t.run(&[
        "export",
        "--format",
        "json",
        "--details",
        "--type",
        "fqdn",
        "--family",
        "6",
    ]);
    assert_eq!(out.stdout, fqdn6.body);
    assert_eq!(
        fqdn6.json(),
        json!({"type": "fqdn", "count": 1, "addresses": [{"value": "2001:b28:f23d::1",
               "sources": [{"kind": "fqdn", "source": "t.example"}],
               "first_seen": ripe_cidr_collector::util::iso(now),
               "last_seen": ripe_cidr_collector::util::iso(now)}]})
    );
}

#[cfg(feature = "collect")]
#[test]
fn run_records_added_and_removed_in_status() {
    let ripe = FakeServer::start(|_| {
        Reply::json(
            200,
            ripe_body(&["192.0.2.0/24".into(), "203.0.113.0/24".into()]),
        )
    });
    let t = TestDir::new();
    t.config(&json!({"asns": ["64500"], "ttl_days": 7,
        "ripe": {"url": ripe.url("/data.json"), "timeout_seconds": 2, "retries": 0}}));
    {
        // The value of 10 days ago left an earlier answer; yesterday's answer had
        // 192.0.2.0/24, which the new one keeps (the trust gate compares with it).
        let mut d = db::open(&t.paths()).unwrap();
        let now = ripe_cidr_collector::util::unix_now();
        d.merge_source(
            Kind::Asn,
            "64500",
            &strings(&["198.51.100.0/24"]),
            now - 10 * 86_400,
            0,
        )
        .unwrap();
        d.merge_source(
            Kind::Asn,
            "64500",
            &strings(&["192.0.2.0/24"]),
            now - 86_400,
            0,
        )
        .unwrap();
    }
    let out = t.run(&["run"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let st: Value = serde_json::from_slice(&fs::read(t.file("status.json")).unwrap()).unwrap();
    assert_eq!(st["last_run_added"], 1, "{st}");
    assert_eq!(st["last_run_removed"], 1, "{st}");
    let out = t.run(&["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1 added, 1 removed"), "{text}");
    let changes = String::from_utf8(cli_json(&t, &["changes"])).unwrap();
    assert!(
        changes.contains("\tadded\tAS64500\t203.0.113.0/24\n"),
        "{changes}"
    );
    assert!(
        changes.contains("\texpired\tAS64500\t198.51.100.0/24\n"),
        "{changes}"
    );
}
