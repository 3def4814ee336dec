//! Tests of the formats.
use super::values::parse_ipv4_fast;
use super::*;
use std::net::Ipv4Addr;

mod size;
mod stacks;

/// Both families, unsorted, with duplicates, an FQDN address inside an ASN prefix
/// (91.108.4.5 in 91.108.4.0/22, 2001:67c:4e8::1 in 2001:67c:4e8::/48), adjacent
/// prefixes that merge (91.108.8.0/22 + 91.108.12.0/22, 2001:b28:f23c::/48 +
/// 2001:b28:f23d::/48) and adjacent ones that cannot (9.0.0.0/8 + 10.0.0.0/8).
pub(super) fn sample() -> Vec<String> {
    [
        "91.108.12.0/22",
        "2606:2800::1",
        "10.0.0.0/8",
        "91.108.4.5",
        "2001:b28:f23d::/48",
        "9.0.0.0/8",
        "91.108.4.0/22",
        "2001:67c:4e8::1",
        "10.0.0.0/8",
        "93.184.216.34",
        "2001:b28:f23c::/48",
        "91.108.8.0/22",
        "2606:2800::1",
        "2001:67c:4e8::/48",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|s| s.to_string()).collect()
}

pub(super) fn opts(format: Format) -> RenderOptions {
    RenderOptions {
        format,
        ..RenderOptions::default()
    }
}

pub(super) fn run(values: &[String], o: &RenderOptions) -> String {
    String::from_utf8(render(values, o)).expect("output is UTF-8")
}

const TEXT: &str = "\
9.0.0.0/8
10.0.0.0/8
91.108.4.0/22
91.108.4.5
91.108.8.0/22
91.108.12.0/22
93.184.216.34
2001:67c:4e8::/48
2001:67c:4e8::1
2001:b28:f23c::/48
2001:b28:f23d::/48
2606:2800::1
";

const TEXT_AGGREGATED: &str = "\
9.0.0.0/8
10.0.0.0/8
91.108.4.0/22
91.108.8.0/21
93.184.216.34/32
2001:67c:4e8::/48
2001:b28:f23c::/47
2606:2800::1/128
";

const NFT: &str = "\
add table inet ripe_cidr
add set inet ripe_cidr ripe_v4 { type ipv4_addr; flags interval; }
flush set inet ripe_cidr ripe_v4
add element inet ripe_cidr ripe_v4 { 9.0.0.0/8, 10.0.0.0/8, 91.108.4.0/22, 91.108.8.0/21, 93.184.216.34/32 }
add set inet ripe_cidr ripe_v6 { type ipv6_addr; flags interval; }
flush set inet ripe_cidr ripe_v6
add element inet ripe_cidr ripe_v6 { 2001:67c:4e8::/48, 2001:b28:f23c::/47, 2606:2800::1/128 }
";

const IPSET: &str = "\
create ripe_v4 hash:net family inet maxelem 1048576 -exist
create ripe_v4_new hash:net family inet maxelem 1048576 -exist
flush ripe_v4_new
add ripe_v4_new 9.0.0.0/8
add ripe_v4_new 10.0.0.0/8
add ripe_v4_new 91.108.4.0/22
add ripe_v4_new 91.108.4.5
add ripe_v4_new 91.108.8.0/22
add ripe_v4_new 91.108.12.0/22
add ripe_v4_new 93.184.216.34
swap ripe_v4_new ripe_v4
destroy ripe_v4_new
create ripe_v6 hash:net family inet6 maxelem 1048576 -exist
create ripe_v6_new hash:net family inet6 maxelem 1048576 -exist
flush ripe_v6_new
add ripe_v6_new 2001:67c:4e8::/48
add ripe_v6_new 2001:67c:4e8::1
add ripe_v6_new 2001:b28:f23c::/48
add ripe_v6_new 2001:b28:f23d::/48
add ripe_v6_new 2606:2800::1
swap ripe_v6_new ripe_v6
destroy ripe_v6_new
";

#[test]
fn text_exact() {
    assert_eq!(run(&sample(), &opts(Format::Text)), TEXT);
}

#[test]
fn text_aggregated_exact() {
    let o = RenderOptions {
        aggregate: true,
        ..opts(Format::Text)
    };
    assert_eq!(run(&sample(), &o), TEXT_AGGREGATED);
}

#[test]
fn text_empty_is_zero_bytes() {
    assert!(render(&[], &opts(Format::Text)).is_empty());
    // Only invalid values, or only the filtered-out family: also nothing.
    assert!(render(&strings(&["junk", ""]), &opts(Format::Text)).is_empty());
    let o = RenderOptions {
        family: Some(Family::V6),
        ..opts(Format::Text)
    };
    assert!(render(&strings(&["10.0.0.0/8"]), &o).is_empty());
}

#[test]
fn text_family_filters() {
    let v4 = RenderOptions {
        family: Some(Family::V4),
        ..opts(Format::Text)
    };
    assert_eq!(
        run(&sample(), &v4),
        "9.0.0.0/8\n10.0.0.0/8\n91.108.4.0/22\n91.108.4.5\n91.108.8.0/22\n\
             91.108.12.0/22\n93.184.216.34\n"
    );
    let v6 = RenderOptions {
        family: Some(Family::V6),
        aggregate: true,
        ..opts(Format::Text)
    };
    assert_eq!(
        run(&sample(), &v6),
        "2001:67c:4e8::/48\n2001:b28:f23c::/47\n2606:2800::1/128\n"
    );
}

#[test]
fn json_exact() {
    assert_eq!(
        run(&sample(), &opts(Format::Json)),
        "{\"type\":\"all\",\"count\":12,\"addresses\":[\"9.0.0.0/8\",\"10.0.0.0/8\",\
             \"91.108.4.0/22\",\"91.108.4.5\",\"91.108.8.0/22\",\"91.108.12.0/22\",\
             \"93.184.216.34\",\"2001:67c:4e8::/48\",\"2001:67c:4e8::1\",\
             \"2001:b28:f23c::/48\",\"2001:b28:f23d::/48\",\"2606:2800::1\"]}\n"
    );
    let o = RenderOptions {
        aggregate: true,
        type_filter: TypeFilter::Cidr,
        ..opts(Format::Json)
    };
    assert_eq!(
        run(&sample(), &o),
        "{\"type\":\"cidr\",\"count\":8,\"addresses\":[\"9.0.0.0/8\",\"10.0.0.0/8\",\
             \"91.108.4.0/22\",\"91.108.8.0/21\",\"93.184.216.34/32\",\
             \"2001:67c:4e8::/48\",\"2001:b28:f23c::/47\",\"2606:2800::1/128\"]}\n"
    );
}

#[test]
fn json_empty_and_family() {
    let o = RenderOptions {
        type_filter: TypeFilter::Fqdn,
        ..opts(Format::Json)
    };
    assert_eq!(
        run(&[], &o),
        "{\"type\":\"fqdn\",\"count\":0,\"addresses\":[]}\n"
    );
    let o = RenderOptions {
        family: Some(Family::V6),
        ..opts(Format::Json)
    };
    assert_eq!(
        run(&strings(&["10.0.0.0/8", "2001:b28:f23d::/48"]), &o),
        "{\"type\":\"all\",\"count\":1,\"addresses\":[\"2001:b28:f23d::/48\"]}\n"
    );
}

#[test]
fn json_is_valid_json() {
    let out = render(&sample(), &opts(Format::Json));
    let v: serde_json::Value = serde_json::from_slice(&out).expect("valid JSON");
    assert_eq!(v["count"], 12);
    assert_eq!(v["addresses"].as_array().map(Vec::len), Some(12));
}

#[test]
fn nft_exact_always_aggregated() {
    assert_eq!(run(&sample(), &opts(Format::Nft)), NFT);
    let o = RenderOptions {
        aggregate: true,
        ..opts(Format::Nft)
    };
    assert_eq!(run(&sample(), &o), NFT);
}

#[test]
fn nft_empty_has_no_add_element() {
    assert_eq!(
        run(&[], &opts(Format::Nft)),
        "add table inet ripe_cidr\n\
             add set inet ripe_cidr ripe_v4 { type ipv4_addr; flags interval; }\n\
             flush set inet ripe_cidr ripe_v4\n\
             add set inet ripe_cidr ripe_v6 { type ipv6_addr; flags interval; }\n\
             flush set inet ripe_cidr ripe_v6\n"
    );
    // One family empty: its set is still created and flushed (stale elements go).
    assert_eq!(
        run(&strings(&["2001:db8::/32"]), &opts(Format::Nft)),
        "add table inet ripe_cidr\n\
             add set inet ripe_cidr ripe_v4 { type ipv4_addr; flags interval; }\n\
             flush set inet ripe_cidr ripe_v4\n\
             add set inet ripe_cidr ripe_v6 { type ipv6_addr; flags interval; }\n\
             flush set inet ripe_cidr ripe_v6\n\
             add element inet ripe_cidr ripe_v6 { 2001:db8::/32 }\n"
    );
}

#[test]
fn nft_family_filter_and_names() {
    let o = RenderOptions {
        family: Some(Family::V4),
        table: "fw".into(),
        set: "tg".into(),
        ..opts(Format::Nft)
    };
    assert_eq!(
        run(&sample(), &o),
        "add table inet fw\n\
             add set inet fw tg_v4 { type ipv4_addr; flags interval; }\n\
             flush set inet fw tg_v4\n\
             add element inet fw tg_v4 { 9.0.0.0/8, 10.0.0.0/8, 91.108.4.0/22, \
             91.108.8.0/21, 93.184.216.34/32 }\n"
    );
    // The filtered family is empty: no add element line, and v4 is not touched.
    let o = RenderOptions {
        family: Some(Family::V6),
        ..opts(Format::Nft)
    };
    assert_eq!(
        run(&strings(&["10.0.0.0/8"]), &o),
        "add table inet ripe_cidr\n\
             add set inet ripe_cidr ripe_v6 { type ipv6_addr; flags interval; }\n\
             flush set inet ripe_cidr ripe_v6\n"
    );
}

#[test]
fn nft_splits_long_lists() {
    // 2500 non-adjacent /32s (every other address), so none merge.
    let values: Vec<String> = (0..2500u32)
        .map(|i| Ipv4Addr::from(0x0a00_0000 + 2 * i).to_string())
        .collect();
    let out = run(&values, &opts(Format::Nft));
    let adds: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("add element"))
        .collect();
    assert_eq!(adds.len(), 3);
    let counts: Vec<usize> = adds.iter().map(|l| l.matches(", ").count() + 1).collect();
    assert_eq!(counts, [1000, 1000, 500]);
    assert!(adds[0].starts_with("add element inet ripe_cidr ripe_v4 { 10.0.0.0/32, 10.0.0.2/32,"));
    assert!(adds[2].ends_with(", 10.0.19.134/32 }"));
    assert!(out.ends_with(" }\nadd set inet ripe_cidr ripe_v6 { type ipv6_addr; flags interval; }\nflush set inet ripe_cidr ripe_v6\n"));
}

#[test]
fn ipset_exact() {
    assert_eq!(run(&sample(), &opts(Format::Ipset)), IPSET);
}

#[test]
fn ipset_aggregated_family_and_empty() {
    let o = RenderOptions {
        aggregate: true,
        family: Some(Family::V6),
        set: "x".into(),
        ..opts(Format::Ipset)
    };
    assert_eq!(
        run(&sample(), &o),
        "create x_v6 hash:net family inet6 maxelem 1048576 -exist\n\
             create x_v6_new hash:net family inet6 maxelem 1048576 -exist\n\
             flush x_v6_new\n\
             add x_v6_new 2001:67c:4e8::/48\n\
             add x_v6_new 2001:b28:f23c::/47\n\
             add x_v6_new 2606:2800::1/128\n\
             swap x_v6_new x_v6\n\
             destroy x_v6_new\n"
    );
    // Empty: the sets are still swapped for empty ones, so stale entries go.
    let o = RenderOptions {
        family: Some(Family::V4),
        ..opts(Format::Ipset)
    };
    assert_eq!(
        run(&[], &o),
        "create ripe_v4 hash:net family inet maxelem 1048576 -exist\n\
             create ripe_v4_new hash:net family inet maxelem 1048576 -exist\n\
             flush ripe_v4_new\n\
             swap ripe_v4_new ripe_v4\n\
             destroy ripe_v4_new\n"
    );
}

#[test]
fn ipset_writes_zero_prefix_as_halves() {
    let values = strings(&["10.0.0.0/8", "0.0.0.0/0", "::/0", "2001:db8::/32"]);
    let out = run(&values, &opts(Format::Ipset));
    let adds: Vec<&str> = out.lines().filter(|l| l.starts_with("add ")).collect();
    assert_eq!(
        adds,
        [
            "add ripe_v4_new 0.0.0.0/1",
            "add ripe_v4_new 128.0.0.0/1",
            "add ripe_v6_new ::/1",
            "add ripe_v6_new 8000::/1",
        ]
    );
    // Other formats keep the /0 as it is.
    assert_eq!(
        run(&values, &opts(Format::Text)),
        "0.0.0.0/0\n10.0.0.0/8\n::/0\n2001:db8::/32\n"
    );
    assert!(run(&values, &opts(Format::Nft)).contains("{ 0.0.0.0/0 }\n"));
}

#[test]
fn names_checked() {
    let ok = "ripe_cidr fw4 mytable tg TABLE Inet table1 ip6_nat a-b";
    for name in ok.split(' ') {
        assert_eq!(check_name("table", name, MAX_TABLE_LEN), Ok(()), "{name}");
    }
    let refused = "table inet ip set flush add counter vmap define include elements \
                       gc-interval destroy last";
    for kw in refused.split_whitespace() {
        let e = check_name("table", kw, MAX_TABLE_LEN).unwrap_err().0;
        assert_eq!(
            e,
            format!("invalid table name \"{kw}\": it is an nftables keyword")
        );
    }
    // Every listed keyword is refused, and each is a valid name otherwise (so that
    // the keyword check is what refuses it).
    for kw in NFT_KEYWORDS.iter().chain(NFT_KEYWORDS_NEWER) {
        let e = check_name("table", kw, MAX_TABLE_LEN).unwrap_err().0;
        assert!(e.ends_with("it is an nftables keyword"), "{kw}: {e}");
        // Sets always get a suffix: a keyword is a fine set name.
        assert_eq!(check_name("set", kw, MAX_SET_LEN), Ok(()), "{kw}");
    }
    assert!(NFT_KEYWORDS
        .iter()
        .chain(NFT_KEYWORDS_NEWER)
        .all(|k| !k.ends_with("_v4") && !k.ends_with("_v6")));
    let mut sorted = NFT_KEYWORDS.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted, NFT_KEYWORDS, "sorted, without duplicates");
    // The other checks still come first and name the value.
    let e = check_name("table", "a b", MAX_TABLE_LEN).unwrap_err().0;
    assert!(
        e.starts_with("invalid table name \"a b\": use an ASCII letter"),
        "{e}"
    );
    let e = check_name("set", &"s".repeat(25), MAX_SET_LEN)
        .unwrap_err()
        .0;
    assert!(e.contains("at most 24 characters"), "{e}");
    let o = RenderOptions {
        table: "vmap".into(),
        ..RenderOptions::default()
    };
    assert!(o.check().unwrap_err().0.contains("\"vmap\""));
}

#[test]
fn ipset_names_fit_the_limit() {
    let set = "a".repeat(MAX_SET_LEN);
    let o = RenderOptions {
        set: set.clone(),
        ..opts(Format::Ipset)
    };
    assert!(o.check().is_ok());
    let out = run(&[], &o);
    let longest = out
        .split_whitespace()
        .filter(|w| w.starts_with(&set))
        .map(str::len)
        .max();
    assert_eq!(longest, Some(31));
}

#[test]
fn ipset_maxelem_steps() {
    assert_eq!(ipset_maxelem(0), 1 << 20);
    assert_eq!(ipset_maxelem(70_000), 1 << 20);
    assert_eq!(ipset_maxelem(1 << 20), 1 << 20);
    assert_eq!(ipset_maxelem((1 << 20) + 1), 1 << 21);
    assert_eq!(ipset_maxelem(usize::MAX), u64::from(u32::MAX));
}

#[test]
fn numeric_not_string_order() {
    let values = strings(&[
        "10.0.0.0/16",
        "10.0.0.0/8",
        "100.0.0.0/8",
        "9.0.0.0/8",
        "2001:db8::/48",
        "200::/8",
        "2001:db8::/32",
        "::1",
    ]);
    assert_eq!(
        run(&values, &opts(Format::Text)),
        "9.0.0.0/8\n10.0.0.0/8\n10.0.0.0/16\n100.0.0.0/8\n\
             ::1\n200::/8\n2001:db8::/32\n2001:db8::/48\n"
    );
}

#[test]
fn bare_and_host_prefix_are_one_value() {
    for values in [
        strings(&["10.0.0.1", "10.0.0.1/32", "::1", "::1/128"]),
        strings(&["10.0.0.1/32", "10.0.0.1", "::1/128", "::1"]),
    ] {
        assert_eq!(run(&values, &opts(Format::Text)), "10.0.0.1/32\n::1/128\n");
    }
}

#[test]
fn invalid_values_skipped_and_host_bits_cleared() {
    let values = strings(&[
        "",
        "junk",
        "10.0.0.0/33",
        "10.0.0.0/+8",
        "10.0.0.0/",
        "256.0.0.0/8",
        "01.2.3.4",
        "1.2.3",
        "1.2.3.4.5",
        "2001:db8::/129",
        "fe80::1%eth0",
        "10.1.2.3/8",
        " 192.0.2.1 ",
        "2001:DB8::1:0/112",
    ]);
    assert_eq!(
        run(&values, &opts(Format::Text)),
        "10.0.0.0/8\n192.0.2.1\n2001:db8::1:0/112\n"
    );
}

#[test]
fn fast_ipv4_parser_agrees_with_std() {
    for s in [
        "0.0.0.0",
        "255.255.255.255",
        "1.2.3.4",
        "01.2.3.4",
        "1.02.3.4",
        "1.2.3.004",
        "0.0.0.00",
        "256.1.1.1",
        "1.2.3",
        "1.2.3.4.",
        ".1.2.3.4",
        "1..2.3",
        "1.2.3.4444",
        "1.2.3.-4",
        "",
        "a.b.c.d",
    ] {
        let fast = parse_ipv4_fast(s.as_bytes()).map(|(a, _)| a);
        assert_eq!(fast, s.parse::<Ipv4Addr>().ok(), "{s:?}");
        let with_len = format!("{s}/24");
        let fast = parse_ipv4_fast(with_len.as_bytes());
        assert_eq!(
            fast,
            s.parse::<Ipv4Addr>().ok().map(|a| (a, Some(24))),
            "{with_len:?}"
        );
    }
    assert_eq!(parse_ipv4_fast(b"1.2.3.4/"), None);
    assert_eq!(parse_ipv4_fast(b"1.2.3.4/1234"), None);
    assert_eq!(parse_ipv4_fast(b"1.2.3.4/8x"), None);
}

#[test]
fn parse_value_forms() {
    let e = parse_value("91.108.4.0/22").expect("prefix");
    assert_eq!(
        (e.to_string(), e.bare),
        ("91.108.4.0/22".to_string(), false)
    );
    let e = parse_value("2606:2800::1").expect("address");
    assert_eq!((e.to_string(), e.bare), ("2606:2800::1".to_string(), true));
    assert_eq!(e.net.prefix_len(), 128);
    assert!(parse_value("example.com").is_none());
}

#[test]
fn large_list_renders_every_format() {
    // 100,000 values: 75,000 distinct IPv4 /24s and 25,000 IPv6 /48s, shuffled.
    let mut values = Vec::with_capacity(100_000);
    let mut x: u64 = 1;
    for i in 0..100_000u32 {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        if i % 4 == 0 {
            values.push(format!("2001:{:x}:{:x}::/48", i >> 16, i & 0xffff));
        } else {
            values.push(format!("{}/24", Ipv4Addr::from((x >> 32) as u32 & !0xff)));
        }
    }
    let p = prepare(&values, None, false);
    assert_eq!(p.v6.len(), 25_000);
    assert!(p.v4.windows(2).all(|w| w[0].net < w[1].net));
    for &format in FORMATS {
        let o = RenderOptions {
            via: matches!(format, Format::Bird | Format::Keenetic).then(|| "wg0".into()),
            family: (format == Format::Bird).then_some(Family::V4),
            ..opts(format)
        };
        let out = render(&values, &o);
        assert!(out.ends_with(b"\n"), "{format}");
    }
    let text = run(&values, &opts(Format::Text));
    assert_eq!(text.lines().count(), p.len());
}
