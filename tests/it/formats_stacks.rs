//! The routing stacks' formats end to end: every format of `GET /addresses` and
//! `export`, for a group with exclusions, read back and compared with a reference
//! computed here; BIRD's and WireGuard's own tools accept theirs; sing-box's and
//! mihomo's are checked against their published shapes (a YAML reader for mihomo's
//! `payload:`); the RouterOS script updates a simulated address list without a gap
//! and comes in pages of at most 60 KiB.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use ipnet::IpNet;
use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;
use serde_json::json;

use crate::common::{cannot_run, read_until_end, TestDir};

const NOW: i64 = 1_790_000_000;

/// The group `vpn`: ASN 64500's prefixes and the addresses of `example.net`, less
/// its exclusions; the default group's values must not show up in it.
const VPN_ASN: &[&str] = &[
    "198.18.0.0/15",
    "203.0.113.0/24",
    "192.0.2.128/25",
    "2001:db8::/32",
    "2001:db8:1::/48",
];
const VPN_FQDN: &[&str] = &["192.0.2.10", "2001:db8:ff::1"];
const VPN_EXCLUDE: &[&str] = &["198.18.5.0/24", "2001:db8:1:8000::/49"];
const DEFAULT_ASN: &[&str] = &["198.51.100.0/24", "2001:db8:beef::/48"];

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn setup() -> TestDir {
    let t = TestDir::new();
    let mut d = db::open(&t.paths()).unwrap();
    d.merge_source(Kind::Asn, "64500", &strings(VPN_ASN), NOW, 7)
        .unwrap();
    d.merge_source(Kind::Fqdn, "example.net", &strings(VPN_FQDN), NOW, 7)
        .unwrap();
    d.merge_source(Kind::Asn, "64501", &strings(DEFAULT_ASN), NOW, 7)
        .unwrap();
    t.config(&json!({
        "asns": ["64501"],
        "groups": {"vpn": {"asns": ["64500"], "fqdns": ["example.net"], "exclude": VPN_EXCLUDE}}
    }));
    t
}

/// `net` less `ex`, as the prefixes that remain.
fn minus(net: IpNet, ex: &IpNet) -> Vec<IpNet> {
    if !net.contains(&ex.network()) && !ex.contains(&net.network()) {
        return vec![net];
    }
    if ex.contains(&net) {
        return Vec::new();
    }
    let halves = net.subnets(net.prefix_len() + 1).unwrap();
    halves.flat_map(|h| minus(h, ex)).collect()
}

/// What the group `vpn` must list, for one family or both, as covering prefixes.
fn reference(v4: bool, v6: bool) -> Vec<IpNet> {
    let mut nets: Vec<IpNet> = VPN_ASN
        .iter()
        .chain(VPN_FQDN)
        .map(|v| {
            v.parse::<IpNet>()
                .or_else(|_| v.parse::<std::net::IpAddr>().map(IpNet::from))
        })
        .map(Result::unwrap)
        .filter(|n| if n.addr().is_ipv4() { v4 } else { v6 })
        .collect();
    for ex in VPN_EXCLUDE {
        let ex: IpNet = ex.parse().unwrap();
        nets = nets.into_iter().flat_map(|n| minus(n, &ex)).collect();
    }
    IpNet::aggregate(&nets)
}

/// Covering prefixes of what an output lists.
fn covered(values: &[String]) -> Vec<IpNet> {
    let nets: Vec<IpNet> = values
        .iter()
        .map(|v| {
            v.parse::<IpNet>()
                .or_else(|_| v.parse::<std::net::IpAddr>().map(IpNet::from))
                .unwrap_or_else(|_| panic!("not a prefix: {v:?}"))
        })
        .collect();
    IpNet::aggregate(&nets)
}

/// Takes `AA.BB.CC.DD MASK` back to a prefix.
fn masked(net: &str, mask: &str) -> String {
    let mask: std::net::Ipv4Addr = mask.parse().unwrap();
    format!("{net}/{}", u32::from(mask).count_ones())
}

/// The values an output in `format` lists, read back from its own syntax.
fn read_back(format: &str, out: &str) -> Vec<String> {
    let lines = out.lines();
    match format {
        "text" | "mihomo" => lines.map(str::to_string).collect(),
        "json" => {
            let v: serde_json::Value = serde_json::from_str(out).unwrap();
            let a = v["addresses"].as_array().unwrap();
            a.iter().map(|s| s.as_str().unwrap().to_string()).collect()
        }
        "singbox" => {
            let v: serde_json::Value = serde_json::from_str(out).unwrap();
            assert_eq!(v["version"], 2, "{out}");
            let rules = v["rules"].as_array().unwrap();
            let cidr = rules[0]["ip_cidr"].as_array().unwrap();
            cidr.iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect()
        }
        "mihomo-yaml" => {
            let docs = yaml_rust2::YamlLoader::load_from_str(out).unwrap();
            let payload = docs[0]["payload"].as_vec().expect("a payload list");
            payload
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect()
        }
        "wireguard" => {
            assert_eq!(out.lines().count(), 1, "{out}");
            let list = out.trim_end().strip_prefix("AllowedIPs = ").unwrap();
            list.split(", ").map(str::to_string).collect()
        }
        "bird" => lines
            .map(|l| {
                l.strip_prefix("route ")
                    .unwrap()
                    .split(' ')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect(),
        "keenetic" => lines
            .map(|l| {
                let w: Vec<&str> = l.split(' ').collect();
                assert_eq!(
                    (w[0], w[1], w[4], w[5], w[6]),
                    ("ip", "route", "wg0", "auto", "!vpn")
                );
                masked(w[2], w[3])
            })
            .collect(),
        "openvpn" => lines
            .map(|l| {
                let inner = l
                    .strip_prefix("push \"")
                    .unwrap()
                    .strip_suffix('"')
                    .unwrap();
                match inner.split(' ').collect::<Vec<_>>()[..] {
                    ["route", net, mask] => masked(net, mask),
                    ["route-ipv6", p] => p.to_string(),
                    _ => panic!("{l}"),
                }
            })
            .collect(),
        "nft" => lines
            .filter_map(|l| l.split_once("{ ").map(|(_, r)| r.to_string()))
            .filter(|r| !r.starts_with("type"))
            .flat_map(|r| {
                let r = r.trim_end_matches(" }").to_string();
                r.split(", ").map(str::to_string).collect::<Vec<_>>()
            })
            .collect(),
        "ipset" => lines
            .filter(|l| l.starts_with("add "))
            .map(|l| l.split(' ').nth(2).unwrap().to_string())
            .collect(),
        "routeros" => routeros_apply(&[], out)
            .into_iter()
            .map(|e| e.address)
            .collect(),
        other => panic!("no reader for {other}"),
    }
}

/// The options each format needs beside the group, and which families it lists.
fn cases() -> Vec<(&'static str, &'static str, bool, bool)> {
    vec![
        ("text", "", true, true),
        ("json", "", true, true),
        ("nft", "", true, true),
        ("ipset", "", true, true),
        ("routeros", "", true, true),
        ("singbox", "", true, true),
        ("mihomo", "", true, true),
        ("mihomo-yaml", "", true, true),
        ("wireguard", "", true, true),
        ("bird", "&via=wg0&family=4", true, false),
        ("bird", "&via=wg0&family=6", false, true),
        ("keenetic", "&via=wg0", true, false),
        ("openvpn", "", true, true),
    ]
}

/// `GET target`: status, headers (lower-cased names) and body.
fn get(addr: SocketAddr, target: &str) -> (u16, String, String) {
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        c,
        "GET {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let raw = String::from_utf8(read_until_end(&mut c)).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_string())
}

#[test]
fn every_format_lists_the_group_less_its_exclusions() {
    let t = setup();
    let (_server, addr) = t.spawn_listening(&["serve"]);
    for (format, extra, v4, v6) in cases() {
        let (status, _, body) = get(
            addr,
            &format!("/addresses?group=vpn&format={format}{extra}"),
        );
        assert_eq!(status, 200, "{format}{extra}: {body}");
        let listed = covered(&read_back(format, &body));
        assert_eq!(listed, reference(v4, v6), "{format}{extra}:\n{body}");
        // export prints the same bytes.
        let mut args = vec!["export", "--group", "vpn", "--format", format];
        for kv in extra.split('&').filter(|s| !s.is_empty()) {
            let (k, v) = kv.split_once('=').unwrap();
            args.extend([if k == "via" { "--via" } else { "--family" }, v]);
        }
        let out = t.run(&args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8(out.stdout).unwrap(), body, "{args:?}");
    }
}

#[test]
fn singbox_names_the_groups_host_names_as_domain_suffix() {
    let t = setup();
    let out = t.run(&["export", "--group", "vpn", "--format", "singbox"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rules"][1], json!({"domain_suffix": ["example.net"]}));
    let out = t.run(&[
        "export", "--group", "vpn", "--format", "singbox", "--type", "cidr",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rules"].as_array().unwrap().len(), 1, "{v}");
    // Every rule of a rule set has one of sing-box's conditions, none empty.
    for rule in v["rules"].as_array().unwrap() {
        let (k, list) = rule.as_object().unwrap().iter().next().unwrap();
        assert!(["ip_cidr", "domain_suffix"].contains(&k.as_str()));
        assert!(!list.as_array().unwrap().is_empty());
    }
}

#[test]
fn missing_or_bad_route_options_are_clear_errors() {
    let t = setup();
    let (_server, addr) = t.spawn_listening(&["serve"]);
    for (query, says) in [
        ("format=keenetic", "needs via"),
        ("format=bird&via=wg0", "family 4 or 6"),
        ("format=bird&via=wg0%22;&family=4", "invalid via"),
        (
            "format=text&via=wg0",
            "via is for the bird and keenetic formats",
        ),
        ("format=keenetic&via=wg0&family=6", "IPv4 only"),
        ("format=text&page=1", "page is for format=routeros"),
        ("format=routeros&page=0", "invalid page"),
        ("format=routeros&page=99", "no page 99"),
    ] {
        let (status, _, body) = get(addr, &format!("/addresses?group=vpn&{query}"));
        assert!((400..500).contains(&status), "{query}: {status} {body}");
        assert!(body.contains(says), "{query}: {body}");
    }
    let out = t.run(&["export", "--format", "bird", "--family", "4"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs via"));
}

#[test]
fn bird_accepts_the_routes_in_a_protocol_static() {
    if Command::new("bird").arg("--version").output().is_err() {
        return cannot_run("bird (Debian bird2) is not installed");
    }
    let t = setup();
    for (family, channel, via) in [("4", "ipv4", "wg0"), ("6", "ipv6", "blackhole")] {
        let out = t.run(&[
            "export", "--group", "vpn", "--format", "bird", "--family", family, "--via", via,
        ]);
        assert!(out.status.success());
        let routes = t.file(&format!("routes{family}.conf"));
        std::fs::write(&routes, &out.stdout).unwrap();
        let conf = t.file(&format!("bird{family}.conf"));
        std::fs::write(
            &conf,
            format!(
                "router id 192.0.2.1;\nprotocol device {{}}\nprotocol static {{\n  {channel};\n  include \"{}\";\n}}\n",
                routes.display()
            ),
        )
        .unwrap();
        let check = Command::new("bird")
            .arg("-p")
            .arg("-c")
            .arg(&conf)
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "bird -p: {}\n{}",
            String::from_utf8_lossy(&check.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn wireguard_accepts_the_allowed_ips() {
    if Command::new("wg").arg("--version").output().is_err() {
        return cannot_run("wg (Debian wireguard-tools) is not installed");
    }
    let t = setup();
    let out = t.run(&["export", "--group", "vpn", "--format", "wireguard"]);
    let key = Command::new("wg").arg("genkey").output().unwrap().stdout;
    let mut pubkey = Command::new("wg")
        .arg("pubkey")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    pubkey.stdin.take().unwrap().write_all(&key).unwrap();
    let mut public = String::new();
    pubkey
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut public)
        .unwrap();
    pubkey.wait().unwrap();
    let conf = t.file("wg.conf");
    let text = format!(
        "[Interface]\nPrivateKey = {}\n[Peer]\nPublicKey = {}\n{}",
        String::from_utf8_lossy(&key).trim(),
        public.trim(),
        String::from_utf8_lossy(&out.stdout)
    );
    std::fs::write(&conf, text).unwrap();
    // On a kernel with WireGuard, a real interface in a network namespace takes the
    // list; without the module `wg setconf` still parses the whole file before it
    // asks the kernel, and says "Unable to modify interface" only after a good parse.
    let script = format!(
        "ip link add wgt0 type wireguard 2>/dev/null; wg setconf wgt0 {0} && wg show wgt0 allowed-ips",
        conf.display()
    );
    let run = Command::new("unshare")
        .args(["-n", "sh", "-c", &script])
        .output();
    let Ok(run) = run else {
        return cannot_run("unshare is not available");
    };
    let stderr = String::from_utf8_lossy(&run.stderr);
    if stderr.contains("Operation not permitted") && !stderr.contains("Unable to modify") {
        return cannot_run("unshare -n needs root");
    }
    assert!(
        !stderr.contains("parsing error") && !stderr.contains("unrecognized"),
        "{stderr}"
    );
    if run.status.success() {
        let shown = String::from_utf8_lossy(&run.stdout);
        let n = reference(true, true).len();
        assert_eq!(shown.split_whitespace().count(), n + 1, "{shown}");
    } else {
        assert!(stderr.contains("Unable to modify interface"), "{stderr}");
    }
}

/// One entry of a simulated RouterOS address list.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RosEntry {
    menu: String,
    list: String,
    address: String,
    comment: String,
}

/// The value of `key=` in `line`: quoted or up to the next space, `]` or `}`.
fn arg<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(&format!(" {key}="))? + key.len() + 2;
    let rest = &line[at..];
    if let Some(q) = rest.strip_prefix('"') {
        return q.split('"').next();
    }
    rest.split([' ', ']', '}']).next()
}

/// Runs a RouterOS script of the commands our writer uses on `before`, as RouterOS
/// does (an `add` of an address the list already has fails, and runs `on-error`),
/// and returns the list after it; panics if an entry present before and after was
/// ever missing in between.
fn routeros_apply(before: &[RosEntry], script: &str) -> Vec<RosEntry> {
    let mut list = before.to_vec();
    let mut menu = String::new();
    let mut removed: Vec<RosEntry> = Vec::new();
    let matches = |e: &RosEntry, menu: &str, line: &str, inner: &str| {
        e.menu == menu
            && arg(inner, "list").is_none_or(|l| e.list == l)
            && arg(inner, "comment").is_none_or(|c| e.comment == c)
            && arg(inner, "address").is_none_or(|a| e.address == a)
            && !line.is_empty()
    };
    for line in script.lines() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        if let Some(m) = line.strip_suffix(" firewall address-list") {
            menu = m.to_string();
        } else if let Some(rest) = line.strip_prefix(":foreach i in=[find") {
            let (find, set) = rest.split_once("] do={set $i").unwrap();
            let new = arg(set, "comment").unwrap().to_string();
            for e in list.iter_mut().filter(|e| matches(e, &menu, line, find)) {
                e.comment = new.clone();
            }
        } else if let Some(rest) = line.strip_prefix(":do {add") {
            let (add, on_error) = rest.split_once("} on-error={set [find").unwrap();
            let entry = RosEntry {
                menu: menu.clone(),
                list: arg(add, "list").unwrap().into(),
                address: arg(add, "address").unwrap().into(),
                comment: arg(add, "comment").unwrap().into(),
            };
            if list
                .iter()
                .any(|e| e.menu == menu && e.list == entry.list && e.address == entry.address)
            {
                let (find, set) = on_error.split_once(']').unwrap();
                let new = arg(set, "comment").unwrap().to_string();
                for e in list.iter_mut().filter(|e| matches(e, &menu, line, find)) {
                    e.comment = new.clone();
                }
            } else {
                list.push(entry);
            }
        } else if let Some(find) = line.strip_prefix("remove [find") {
            let (gone, kept): (Vec<_>, Vec<_>) = list
                .into_iter()
                .partition(|e| matches(e, &menu, line, find));
            removed.extend(gone);
            list = kept;
        } else {
            panic!("a command the simulator does not know: {line}");
        }
    }
    for e in &removed {
        let stayed = |x: &RosEntry| x.menu == e.menu && x.list == e.list && x.address == e.address;
        assert!(
            !list.iter().any(stayed),
            "{e:?} was removed and added back: a gap"
        );
    }
    list
}

#[test]
fn routeros_updates_in_place_leaving_foreign_entries() {
    let t = setup();
    let export = |t: &TestDir| {
        let out = t.run(&["export", "--group", "vpn", "--format", "routeros"]);
        String::from_utf8(out.stdout).unwrap()
    };
    let foreign = RosEntry {
        menu: "/ip".into(),
        list: "vpn".into(),
        address: "203.0.113.0/24".into(),
        comment: "added by hand".into(),
    };
    let other_list = RosEntry {
        list: "other".into(),
        address: "198.51.100.0/24".into(),
        ..foreign.clone()
    };
    let first = routeros_apply(&[foreign.clone(), other_list.clone()], &export(&t));
    assert!(
        first.contains(&foreign) && first.contains(&other_list),
        "{first:?}"
    );
    let ours = |l: &[RosEntry]| l.iter().filter(|e| e.comment == "ripe-cidr:vpn").count();
    assert_eq!(ours(&first) + 1, read_back("routeros", &export(&t)).len());
    // The list changes: one prefix leaves, one comes.
    let mut d = db::open(&t.paths()).unwrap();
    let mut next = strings(VPN_ASN);
    next.retain(|v| v != "192.0.2.128/25");
    next.push("100.64.0.0/24".into());
    d.merge_source(Kind::Asn, "64500", &next, NOW + 1, 7)
        .unwrap();
    d.purge_source(Kind::Asn, "64500").unwrap();
    d.merge_source(Kind::Asn, "64500", &next, NOW + 2, 7)
        .unwrap();
    drop(d);
    let script = export(&t);
    assert!(!script.contains("remove [find list=\"vpn\"]"), "{script}");
    let second = routeros_apply(&first, &script);
    assert!(second.contains(&foreign) && second.contains(&other_list));
    let addrs: Vec<&str> = second.iter().map(|e| e.address.as_str()).collect();
    assert!(
        addrs.contains(&"100.64.0.0/24") && !addrs.contains(&"192.0.2.128/25"),
        "{addrs:?}"
    );
    // Applying the same script again changes nothing.
    assert_eq!(routeros_apply(&second, &script), second);
}

#[test]
fn routeros_pages_are_small_and_concatenate_to_the_whole() {
    let t = TestDir::new();
    let values: Vec<String> = (0..4000u32)
        .map(|i| format!("10.{}.{}.0/24", i / 256, i % 256))
        .chain((0..600u32).map(|i| format!("2001:db8:{i:x}::/48")))
        .collect();
    let mut d = db::open(&t.paths()).unwrap();
    d.merge_source(Kind::Feed, "https://list.example/a.txt", &values, NOW, 7)
        .unwrap();
    drop(d);
    t.config(&json!({"feeds": ["https://list.example/a.txt"]}));
    let (_server, addr) = t.spawn_listening(&["serve"]);
    let (status, head, whole) = get(addr, "/addresses?format=routeros");
    assert_eq!(status, 200);
    let pages: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("x-pages: "))
        .expect("an X-Pages header")
        .trim()
        .parse()
        .unwrap();
    assert!(pages > 5, "{pages}");
    let mut list = Vec::new();
    let mut lines_seen = Vec::new();
    for n in 1..=pages {
        let (status, head, body) = get(addr, &format!("/addresses?format=routeros&page={n}"));
        assert_eq!(status, 200, "page {n}");
        assert!(head.contains(&format!("x-pages: {pages}")), "page {n}");
        assert!(body.len() <= 60 * 1024, "page {n}: {} bytes", body.len());
        if n == 1 {
            assert!(
                body.starts_with(&format!("# pages: {pages}\n")),
                "{}",
                &body[..40]
            );
        }
        // Each page is a script of its own, imported in order.
        list = routeros_apply(&list, &body);
        lines_seen.extend(
            body.lines()
                .filter(|l| !l.starts_with('/') && !l.starts_with('#'))
                .map(str::to_string),
        );
    }
    let whole_lines: Vec<String> = whole
        .lines()
        .filter(|l| !l.starts_with('/'))
        .map(str::to_string)
        .collect();
    assert_eq!(lines_seen, whole_lines);
    assert_eq!(list.len(), values.len());
    assert_eq!(list, routeros_apply(&[], &whole));
}
