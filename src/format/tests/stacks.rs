//! Tests of the RouterOS script and the other routing stacks' formats.
use super::*;
use super::{opts, run, sample};

fn with(format: Format, f: impl FnOnce(&mut RenderOptions)) -> RenderOptions {
    let mut o = opts(format);
    f(&mut o);
    o
}

#[test]
fn mihomo_and_yaml_list_prefixes() {
    let text = run(&sample(), &opts(Format::Mihomo));
    assert_eq!(
        text.lines().take(4).collect::<Vec<_>>(),
        ["9.0.0.0/8", "10.0.0.0/8", "91.108.4.0/22", "91.108.4.5/32"]
    );
    assert_eq!(text.lines().last(), Some("2606:2800::1/128"));
    let yaml = run(&sample(), &opts(Format::MihomoYaml));
    assert!(
        yaml.starts_with("payload:\n  - '9.0.0.0/8'\n  - '10.0.0.0/8'\n"),
        "{yaml}"
    );
    assert_eq!(yaml.lines().count(), text.lines().count() + 1);
    assert_eq!(run(&[], &opts(Format::MihomoYaml)), "payload:\n");
}

#[test]
fn singbox_rule_set() {
    let out = run(&sample()[..3], &opts(Format::Singbox));
    assert_eq!(
        out,
        "{\"version\":2,\"rules\":[{\"ip_cidr\":[\"10.0.0.0/8\",\"91.108.12.0/22\",\
         \"2606:2800::1/128\"]}]}\n"
    );
    assert_eq!(
        run(&[], &opts(Format::Singbox)),
        "{\"version\":2,\"rules\":[]}\n"
    );
}

#[test]
fn wireguard_is_one_aggregated_line() {
    let out = run(&sample(), &opts(Format::Wireguard));
    assert_eq!(
        out,
        "AllowedIPs = 9.0.0.0/8, 10.0.0.0/8, 91.108.4.0/22, 91.108.8.0/21, 93.184.216.34/32, \
         2001:67c:4e8::/48, 2001:b28:f23c::/47, 2606:2800::1/128\n"
    );
    assert_eq!(run(&[], &opts(Format::Wireguard)), "");
}

#[test]
fn bird_routes_by_interface_gateway_or_blackhole() {
    let v = sample();
    let o = with(Format::Bird, |o| {
        o.via = Some("wg0".into());
        o.family = Some(Family::V4);
    });
    let out = run(&v[..3], &o);
    assert_eq!(
        out,
        "route 10.0.0.0/8 via \"wg0\";\nroute 91.108.12.0/22 via \"wg0\";\n"
    );
    let o = with(Format::Bird, |o| {
        o.via = Some("2001:db8::1".into());
        o.family = Some(Family::V6);
    });
    assert_eq!(
        run(&v[..3], &o),
        "route 2606:2800::1/128 via 2001:db8::1;\n"
    );
    let o = with(Format::Bird, |o| {
        o.via = Some("blackhole".into());
        o.family = Some(Family::V4);
    });
    assert_eq!(run(&v[..1], &o), "route 91.108.12.0/22 blackhole;\n");
}

#[test]
fn bird_routes_carry_the_community() {
    let v = sample();
    let o = with(Format::Bird, |o| {
        o.via = Some("blackhole".into());
        o.family = Some(Family::V4);
        o.community = Some("65000:100".parse().unwrap());
    });
    assert_eq!(
        run(&v[..1], &o),
        "route 91.108.12.0/22 blackhole { bgp_community.add((65000,100)); };\n"
    );
    let o = with(Format::Bird, |o| {
        o.via = Some("wg0".into());
        o.family = Some(Family::V6);
        o.community = Some("65000:1:100".parse().unwrap());
    });
    assert_eq!(
        run(&v[..3], &o),
        "route 2606:2800::1/128 via \"wg0\" { bgp_large_community.add((65000,1,100)); };\n"
    );
    // Only the bird format carries one.
    let stray = with(Format::Text, |o| {
        o.community = Some("65000:100".parse().unwrap())
    });
    assert!(stray
        .check()
        .unwrap_err()
        .0
        .contains("community is for the bird format"));
}

#[test]
fn keenetic_and_openvpn_lines() {
    let v = sample();
    let o = with(Format::Keenetic, |o| o.via = Some("Wireguard0".into()));
    assert_eq!(
        run(&v[..3], &o),
        "ip route 10.0.0.0 255.0.0.0 Wireguard0 auto !ripe\n\
         ip route 91.108.12.0 255.255.252.0 Wireguard0 auto !ripe\n"
    );
    let o = with(Format::Keenetic, |o| {
        o.via = Some("192.0.2.1".into());
        o.comment = Some("tg".into());
    });
    assert!(run(&v[..1], &o).ends_with(" 192.0.2.1 auto !tg\n"));
    assert_eq!(
        run(&v[..4], &opts(Format::Openvpn)),
        "push \"route 10.0.0.0 255.0.0.0\"\npush \"route 91.108.4.5 255.255.255.255\"\n\
         push \"route 91.108.12.0 255.255.252.0\"\npush \"route-ipv6 2606:2800::1/128\"\n"
    );
}

#[test]
fn route_options_are_checked() {
    let err = |o: RenderOptions| o.check().unwrap_err().0;
    assert!(err(opts(Format::Keenetic)).contains("needs via"));
    let bird = with(Format::Bird, |o| o.via = Some("wg0".into()));
    assert!(err(bird).contains("family 4 or 6"));
    let bad = with(Format::Keenetic, |o| o.via = Some("wg0; rm".into()));
    assert!(err(bad).contains("invalid via \"wg0; rm\""));
    let v6 = with(Format::Keenetic, |o| {
        o.via = Some("wg0".into());
        o.family = Some(Family::V6);
    });
    assert!(err(v6).contains("IPv4 only"));
    let stray = with(Format::Text, |o| o.via = Some("wg0".into()));
    assert!(err(stray).contains("via is for the bird and keenetic formats"));
    let c = with(Format::Nft, |o| o.comment = Some("x".into()));
    assert!(err(c).contains("comment is for the keenetic format"));
    let bad = with(Format::Keenetic, |o| {
        o.via = Some("wg0".into());
        o.comment = Some("a b".into());
    });
    assert!(err(bad).contains("invalid comment"));
}

#[test]
fn routeros_updates_in_place() {
    let out = run(&sample()[..3], &opts(Format::Routeros));
    assert_eq!(
        out,
        "/ip firewall address-list\n\
         :foreach i in=[find list=\"ripe\" comment=\"ripe-cidr:ripe\"] do={set $i comment=\"ripe-cidr:ripe:old\"}\n\
         :do {add list=\"ripe\" comment=\"ripe-cidr:ripe\" address=10.0.0.0/8} on-error={set [find list=\"ripe\" comment=\"ripe-cidr:ripe:old\" address=10.0.0.0/8] comment=\"ripe-cidr:ripe\"}\n\
         :do {add list=\"ripe\" comment=\"ripe-cidr:ripe\" address=91.108.12.0/22} on-error={set [find list=\"ripe\" comment=\"ripe-cidr:ripe:old\" address=91.108.12.0/22] comment=\"ripe-cidr:ripe\"}\n\
         remove [find list=\"ripe\" comment=\"ripe-cidr:ripe:old\"]\n\
         /ipv6 firewall address-list\n\
         :foreach i in=[find list=\"ripe\" comment=\"ripe-cidr:ripe\"] do={set $i comment=\"ripe-cidr:ripe:old\"}\n\
         :do {add list=\"ripe\" comment=\"ripe-cidr:ripe\" address=2606:2800::1} on-error={set [find list=\"ripe\" comment=\"ripe-cidr:ripe:old\" address=2606:2800::1] comment=\"ripe-cidr:ripe\"}\n\
         remove [find list=\"ripe\" comment=\"ripe-cidr:ripe:old\"]\n"
    );
    assert!(!out.contains("remove [find list=\"ripe\"]"));
    // An aggregated host route is written bare, as RouterOS shows it.
    let agg = run(
        &["10.0.0.1".into()],
        &with(Format::Routeros, |o| o.aggregate = true),
    );
    assert!(agg.contains("address=10.0.0.1}"), "{agg}");
}

#[test]
fn routeros_pages_cut_at_lines_and_repeat_the_menu() {
    let values: Vec<String> = (0..3000u32)
        .map(|i| format!("10.{}.{}.0/24", i / 256, i % 256))
        .chain((0..500u32).map(|i| format!("2001:db8:{i:x}::/48")))
        .collect();
    let script = render(&values, &opts(Format::Routeros));
    let first = routeros_page(&script, 1).unwrap();
    assert!(first.pages > 3, "{}", first.pages);
    assert!(first
        .body
        .starts_with(format!("# pages: {}\n/ip ", first.pages).as_bytes()));
    let mut joined = Vec::new();
    for n in 1..=first.pages {
        let p = routeros_page(&script, n).unwrap();
        assert!(
            p.body.len() <= ROUTEROS_PAGE_MAX,
            "page {n}: {}",
            p.body.len()
        );
        assert!(p.body.ends_with(b"\n"));
        let text = String::from_utf8(p.body).unwrap();
        let mut lines = text.lines().skip_while(|l| l.starts_with('#'));
        let head = lines.next().unwrap();
        assert!(head.ends_with(" firewall address-list"), "page {n}: {head}");
        // Without the repeated menu lines the pages are the script.
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            joined.extend_from_slice(l.as_bytes());
            joined.push(b'\n');
        }
        let menus = text.lines().filter(|l| l.starts_with('/')).count();
        assert!(menus <= 2, "page {n}");
    }
    let dedup = |s: &[u8]| {
        let mut out = Vec::new();
        let mut last: &[u8] = b"";
        for l in s.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            if !(l.starts_with(b"/") && l == last) {
                out.extend_from_slice(l);
                out.push(b'\n');
            }
            if l.starts_with(b"/") {
                last = l;
            }
        }
        out
    };
    assert_eq!(dedup(&joined), dedup(&script));
    assert!(routeros_page(&script, first.pages + 1).is_none());
    assert!(routeros_page(&script, 0).is_none());
    let empty = routeros_page(b"", 1).unwrap();
    assert_eq!((empty.body, empty.pages), (b"# pages: 1\n".to_vec(), 1));
}
