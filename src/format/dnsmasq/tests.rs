//! The dnsmasq renderer without I/O; `tests/it/dnsmasq.rs` feeds its files to a real
//! dnsmasq.

use std::collections::BTreeMap;

use super::*;

fn target(set: &str) -> DnsTarget {
    DnsTarget {
        table: "ripe_cidr".into(),
        set: set.into(),
    }
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn body(text: &str) -> Vec<&str> {
    text.strip_prefix(DNSMASQ_HEADER)
        .expect("header first")
        .lines()
        .collect()
}

/// Every domain of the lines and the spec after it, as dnsmasq reads them.
fn parsed(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in body(text) {
        let rest = line.split_once('=').unwrap().1;
        let (domains, spec) = rest.trim_start_matches('/').rsplit_once('/').unwrap();
        for d in domains.split('/') {
            assert!(
                out.insert(d.to_string(), spec.to_string()).is_none(),
                "{d} twice"
            );
        }
    }
    out
}

#[test]
fn one_group_one_line() {
    let text = render_dnsmasq(
        &[(target("ripe"), names(&["b.example", "a.example"]))],
        DnsmasqOptions::default(),
    )
    .unwrap();
    assert_eq!(
        body(&text),
        ["nftset=/a.example/b.example/4#inet#ripe_cidr#ripe_dns_v4,6#inet#ripe_cidr#ripe_dns_v6"]
    );
    let v6 = DnsmasqOptions {
        family: Some(Family::V6),
        ipset: false,
    };
    let text = render_dnsmasq(&[(target("video"), names(&["a.example"]))], v6).unwrap();
    assert_eq!(
        body(&text),
        ["nftset=/a.example/6#inet#ripe_cidr#video_dns_v6"]
    );
    let ipset = DnsmasqOptions {
        family: None,
        ipset: true,
    };
    let text = render_dnsmasq(&[(target("video"), names(&["a.example"]))], ipset).unwrap();
    assert_eq!(body(&text), ["ipset=/a.example/video_dns_v4,video_dns_v6"]);
}

#[test]
fn nothing_to_route_is_the_header_alone() {
    let text = render_dnsmasq(&[], DnsmasqOptions::default()).unwrap();
    assert_eq!(text, DNSMASQ_HEADER);
    let text = render_dnsmasq(&[(target("ripe"), vec![])], DnsmasqOptions::default()).unwrap();
    assert_eq!(text, DNSMASQ_HEADER);
}

#[test]
fn a_domain_in_two_groups_is_one_line_with_both_sets() {
    let text = render_dnsmasq(
        &[
            (target("video"), names(&["shared.example", "v.example"])),
            (target("music"), names(&["shared.example", "m.example"])),
        ],
        DnsmasqOptions {
            family: Some(Family::V4),
            ipset: false,
        },
    )
    .unwrap();
    let got = parsed(&text);
    assert_eq!(got["v.example"], "4#inet#ripe_cidr#video_dns_v4");
    assert_eq!(got["m.example"], "4#inet#ripe_cidr#music_dns_v4");
    assert_eq!(
        got["shared.example"],
        "4#inet#ripe_cidr#music_dns_v4,4#inet#ripe_cidr#video_dns_v4"
    );
    assert_eq!(body(&text).len(), 3);
}

#[test]
fn parents_cover_subdomains() {
    let text = render_dnsmasq(
        &[
            (
                target("video"),
                // Covered by video.example in the same group: left out.
                names(&["video.example", "cdn.video.example", "a.b.video.example"]),
            ),
            // A subdomain of another group's domain: its line carries both groups'
            // sets, since dnsmasq uses only the longest matching line.
            (
                target("music"),
                names(&["x.video.example", "y.x.video.example"]),
            ),
            // Not a subdomain: only a suffix of the string.
            (target("music"), names(&["myvideo.example"])),
        ],
        DnsmasqOptions {
            family: Some(Family::V4),
            ipset: false,
        },
    )
    .unwrap();
    let got = parsed(&text);
    let both = "4#inet#ripe_cidr#music_dns_v4,4#inet#ripe_cidr#video_dns_v4";
    assert_eq!(
        got.keys().map(String::as_str).collect::<Vec<_>>(),
        ["myvideo.example", "video.example", "x.video.example"]
    );
    assert_eq!(got["video.example"], "4#inet#ripe_cidr#video_dns_v4");
    assert_eq!(got["x.video.example"], both);
    assert_eq!(got["myvideo.example"], "4#inet#ripe_cidr#music_dns_v4");
}

#[test]
fn the_same_group_twice_and_duplicates_are_one() {
    let text = render_dnsmasq(
        &[
            (target("ripe"), names(&["a.example", "a.example"])),
            (target("ripe"), names(&["a.example"])),
        ],
        DnsmasqOptions::default(),
    )
    .unwrap();
    assert_eq!(body(&text).len(), 1);
    assert_eq!(parsed(&text).len(), 1);
}

#[test]
fn long_lists_split_before_1024_characters() {
    let many: Vec<String> = (0..500)
        .map(|i| format!("host-{i:04}.some-long-domain-name.example"))
        .collect();
    let text =
        render_dnsmasq(&[(target("ripe"), many.clone())], DnsmasqOptions::default()).unwrap();
    let lines = body(&text);
    assert!(lines.len() > 10, "{} lines", lines.len());
    for l in &lines {
        assert!(l.len() <= DNSMASQ_MAX_LINE, "{} characters", l.len());
        // Full enough: another name would not have fitted.
        assert!(l.len() + 45 > DNSMASQ_MAX_LINE || Some(l) == lines.last());
    }
    let got = parsed(&text);
    assert_eq!(got.len(), many.len());
    assert!(many.iter().all(|d| got.contains_key(d)));
}

#[test]
fn a_line_that_cannot_fit_is_an_error_naming_the_domain() {
    let long = format!("{}.example", vec!["a".repeat(63); 3].join("."));
    let groups: Vec<(DnsTarget, Vec<String>)> = (0..14)
        .map(|i| (target(&format!("group_{i:02}")), vec![long.clone()]))
        .collect();
    let e = render_dnsmasq(&groups, DnsmasqOptions::default()).unwrap_err();
    assert_eq!(e.domain, long);
    assert_eq!(e.groups, 14);
    assert!(e.to_string().contains(&long), "{e}");
    // With fewer groups it fits.
    assert!(render_dnsmasq(&groups[..2], DnsmasqOptions::default()).is_ok());
}

#[test]
fn output_is_deterministic() {
    let a = [
        (target("b"), names(&["z.example", "y.example"])),
        (target("a"), names(&["x.example"])),
    ];
    let b = [a[1].clone(), a[0].clone()];
    let opts = DnsmasqOptions::default();
    assert_eq!(
        render_dnsmasq(&a, opts).unwrap(),
        render_dnsmasq(&b, opts).unwrap()
    );
}
