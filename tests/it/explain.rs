//! `explain` against the real kernel, each test in a network namespace of its own
//! thread (`unshare -n`, see `netlink.rs`): the group's `load` output loaded by
//! `render --load-only`, a veth pair for the tunnel, `ip rule` and a route in table
//! 100. Each broken link is made by leaving one piece out.

use std::process::{Command, Output};

use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;
use serde_json::{json, Value};

use crate::common::{cannot_run, http_get, TestDir};
use crate::netlink::{find, namespace, Nft};

/// A group `vpn` with AS62041's prefixes (one /24 of them excluded), its mark, its
/// load output and a dnsmasq output (so the load makes the `_dns` sets), loaded.
fn setup(nft: &Nft) -> TestDir {
    let t = TestDir::new();
    let mut d = db::open(&t.paths()).unwrap();
    let now = ripe_cidr_collector::util::unix_now();
    let tg: Vec<String> = ["149.154.160.0/20", "2001:b28:f23d::/48"]
        .map(String::from)
        .to_vec();
    d.merge_source(Kind::Asn, "62041", &tg, now, 7).unwrap();
    t.config(&json!({
        "groups": {"vpn": {"asns": ["62041"], "fqdns": ["example.org"],
                           "exclude": ["149.154.164.0/24"],
                           "mark": "0x100", "mark_mask": "0xff00"}},
        "outputs": [{"load": "nft", "group": "vpn"},
                    {"dnsmasq": t.file("dnsmasq.conf"), "group": "vpn"}]
    }));
    let out = t.run(&["render", "--load-only"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(nft
        .ok(&["list", "set", "inet", "ripe_cidr", "vpn_dns_v4"])
        .contains("timeout"));
    // The tunnel: v0, its peer v1 up, a default route through it in table 100.
    ip(&["link", "set", "lo", "up"]);
    ip(&["link", "add", "v0", "type", "veth", "peer", "name", "v1"]);
    ip(&["link", "set", "v0", "up"]);
    ip(&["link", "set", "v1", "up"]);
    ip(&["addr", "add", "192.0.2.1/24", "dev", "v0"]);
    ip(&[
        "route",
        "add",
        "default",
        "via",
        "192.0.2.254",
        "dev",
        "v0",
        "table",
        "100",
    ]);
    t
}

pub(crate) fn ip(args: &[&str]) {
    let o = Command::new(find("ip").expect("ip (iproute2)"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn add_rule() {
    ip(&[
        "rule",
        "add",
        "fwmark",
        "0x100/0xff00",
        "table",
        "100",
        "priority",
        "100",
    ]);
}

/// `explain ARGS`: exit code, stdout, the verdict (its last line).
fn explain(t: &TestDir, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["explain"];
    all.extend_from_slice(args);
    let o: Output = t.run(&all);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let verdict = out.lines().last().unwrap_or("").to_string();
    (o.status.code().unwrap_or(-1), out, verdict)
}

macro_rules! ns {
    () => {
        match namespace() {
            Ok(nft) => Nft(nft),
            Err(why) => return cannot_run(&why),
        }
    };
}

#[test]
fn no_ip_rule_for_the_mark_names_the_rule_and_the_command() {
    let nft = ns!();
    let t = setup(&nft);
    let (code, out, verdict) = explain(&t, &["149.154.167.99"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        verdict, "149.154.167.99: in set vpn_v4, but no ip rule for mark 0x100",
        "{out}"
    );
    assert!(
        out.contains("fix: add `ip rule add fwmark 0x100/0xff00 table 100`"),
        "{out}"
    );
    // The steps before it held: stored, in the set, the chains marking.
    for s in [
        "ok       stored  149.154.160.0/20 from AS62041",
        "ok       kernel  set inet ripe_cidr vpn_v4 holds it",
        "ok       mark    chains vpn_mark and vpn_mark_out set mark 0x100/0xff00",
    ] {
        assert!(out.contains(s), "{s}\n{out}");
    }
    // IPv6 the same way, with ip -6.
    let (code, out, _) = explain(&t, &["2001:b28:f23d::1"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("`ip -6 rule add fwmark 0x100/0xff00 table 100`"),
        "{out}"
    );
}

#[test]
fn rule_and_route_present_and_device_up_is_routed() {
    let nft = ns!();
    let t = setup(&nft);
    add_rule();
    let (code, out, verdict) = explain(&t, &["149.154.167.99", "--group", "vpn"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        verdict, "149.154.167.99: routed via v0 (group vpn, mark 0x100, table 100)",
        "{out}"
    );
    assert!(
        out.contains("ip rule 100: fwmark 0x100/0xff00 lookup table 100"),
        "{out}"
    );
    assert!(
        out.contains("via 192.0.2.254 dev v0 from table 100; v0 is up"),
        "{out}"
    );
    // A packet the output chain marks is counted (a route in main lets it leave the
    // socket; the mark then reroutes it through table 100).
    ip(&["route", "add", "149.154.0.0/16", "dev", "lo"]);
    let sock = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    sock.send_to(b"x", "149.154.167.99:9").unwrap();
    let (_, out, _) = explain(&t, &["149.154.167.99"]);
    assert!(out.contains("; 1 packets marked so far"), "{out}");
}

#[test]
fn a_device_down_is_named() {
    let nft = ns!();
    let t = setup(&nft);
    add_rule();
    // The peer down: v0 keeps its route but loses its carrier.
    ip(&["link", "set", "v1", "down"]);
    let (code, out, verdict) = explain(&t, &["149.154.167.99"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        verdict, "149.154.167.99: in set vpn_v4, but v0 is down (no carrier)",
        "{out}"
    );
    // v0 itself down: its routes go, table 100 has none.
    ip(&["link", "set", "v0", "down"]);
    let (code, out, verdict) = explain(&t, &["149.154.167.99"]);
    assert_eq!(code, 1, "{out}");
    assert!(verdict.contains("no route for it with mark 0x100"), "{out}");
    assert!(
        out.contains("`ip route add default dev IFACE table 100`"),
        "{out}"
    );
}

#[test]
fn excluded_not_stored_and_dnsmasq_only_addresses() {
    let nft = ns!();
    let t = setup(&nft);
    add_rule();
    let (code, out, verdict) = explain(&t, &["149.154.164.5"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        verdict, "149.154.164.5: excluded from group vpn by 149.154.164.0/24",
        "{out}"
    );
    assert!(
        out.contains("fix: remove 149.154.164.0/24 from the \"exclude\""),
        "{out}"
    );

    let (code, out, verdict) = explain(&t, &["198.51.100.7"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        verdict, "198.51.100.7: not stored in group default",
        "{out}"
    );
    let (code, _, verdict) = explain(&t, &["198.51.100.7", "--group", "vpn"]);
    assert_eq!(
        (code, verdict.as_str()),
        (1, "198.51.100.7: not stored in group vpn")
    );

    // What dnsmasq added (here by hand, as dnsmasq's nftset= does) is routed too.
    nft.ok(&[
        "add",
        "element",
        "inet",
        "ripe_cidr",
        "vpn_dns_v4",
        "{ 198.51.100.7 }",
    ]);
    let (code, out, verdict) = explain(&t, &["198.51.100.7"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("not stored: dnsmasq added it to set vpn_dns_v4"),
        "{out}"
    );
    assert_eq!(
        verdict,
        "198.51.100.7: routed via v0 (group vpn, mark 0x100, table 100)"
    );
}

#[test]
fn json_and_the_api_give_the_same_steps() {
    let nft = ns!();
    let t = setup(&nft);
    let o = t.run(&["explain", "149.154.167.99", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let cli: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(cli["routed"], false);
    assert_eq!(cli["steps"][3]["step"], "rule");
    assert_eq!(cli["steps"][3]["state"], "broken");
    assert_eq!(cli["lookup"]["matches"][0]["value"], "149.154.160.0/20");
    let (mut server, addr) = t.spawn_listening(&["serve"]);
    let (status, body) = http_get(addr, "/explain?ip=149.154.167.99");
    assert_eq!(status, 200, "{body}");
    let api: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(api, cli);
    let (status, body) = http_get(addr, "/explain?ip=149.154.160.0/20");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("prefix"), "{body}");
    let (status, body) = http_get(addr, "/explain?ip=149.154.167.99&group=nope");
    assert_eq!(status, 400, "{body}");
    drop(server.stderr());
}

#[test]
fn without_cap_net_admin_the_kernel_steps_say_so() {
    let nft = ns!();
    let t = setup(&nft);
    add_rule();
    let Some(setpriv) = find("setpriv") else {
        return cannot_run("setpriv (util-linux) not found");
    };
    let o = Command::new(setpriv)
        .args(["--bounding-set=-net_admin", "--inh-caps=-net_admin"])
        .arg(crate::common::bin())
        .arg("--data-dir")
        .arg(t.path())
        .args(["explain", "149.154.167.99"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("ok       stored  149.154.160.0/20"), "{out}");
    assert!(
        out.contains("skipped  kernel  not checked: reading nf_tables needs CAP_NET_ADMIN"),
        "{out}"
    );
    // The rule and the route need no privilege.
    assert!(out.contains("ok       route"), "{out}");
    assert!(
        out.lines()
            .last()
            .unwrap()
            .contains("kernel, mark not checked"),
        "{out}"
    );
}

#[test]
fn openwrt_fixes_name_netifd_config_rule() {
    let nft = ns!();
    let t = setup(&nft);
    std::fs::write(t.file("openwrt_release"), "DISTRIB_ID='OpenWrt'\n").unwrap();
    let o = t
        .cmd()
        .env("RIPE_OPENWRT_RELEASE", t.file("openwrt_release"))
        .args(["explain", "149.154.167.99"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("`config rule` with `option mark '0x100/0xff00'` and `option lookup '100'`"),
        "{out}"
    );
    assert!(!out.contains("ip rule add"), "{out}");

    // What LuCI shows: the ucode rpcd plugin's explain (its tables, luci_plugin.rs)
    // on the service's data directory, as on the router.
    let release = t.file("openwrt_release");
    let (code, v) = crate::luci_plugin::Plugin::load().call_env(
        t.path(),
        "explain",
        &json!({"address": "149.154.167.99", "group": "vpn"}),
        &[("RIPE_OPENWRT_RELEASE", release.as_path())],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["group"], "vpn", "{v}");
    let fix = v["steps"][3]["fix"].as_str().unwrap_or_default();
    assert!(
        fix.starts_with("add a netifd rule to /etc/config/network: `config rule`"),
        "{v}"
    );
}
