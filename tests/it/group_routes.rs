//! A group routed end to end against the real kernel, in a network namespace of the
//! test's thread (`unshare -n`, see `netlink.rs`): `group add vpn --via v0` before
//! v0 exists (a warning), the load made by `render --load-only` (as the daemon's), a
//! veth pair v0/v1 whose far end v1 counts what leaves through v0.

use std::process::Command;

use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;

use crate::common::{cannot_run, ripe_body, FakeServer, Reply, TestDir};
use crate::netlink::{find, namespace};

fn ip_out(args: &[&str]) -> String {
    let o = Command::new(find("ip").expect("ip (iproute2)"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn ok(t: &TestDir, args: &[&str]) -> String {
    let o = t.run(args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{args:?}: {err}");
    err
}

/// The far end of the tunnel: a counter per probe address on v1's ingress (IPv6
/// autoconfiguration's own packets on the link are not counted).
fn far_side(t: &TestDir, nft: &std::path::Path) {
    let script = "table netdev far {\n chain in {\n type filter hook ingress device v1 priority 0;\n \
                  ip daddr 149.154.167.99 udp dport 9 counter\n ip daddr 198.51.100.7 counter\n }\n}\n";
    let path = t.file("far.nft");
    std::fs::write(&path, script).unwrap();
    let o = Command::new(nft).arg("-f").arg(&path).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The packets each far-side counter saw: [in the set, outside it].
fn far_side_packets(nft: &std::path::Path) -> [u64; 2] {
    let o = Command::new(nft)
        .args(["list", "chain", "netdev", "far", "in"])
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&o.stdout);
    let n = |addr: &str| -> u64 {
        let line = s.lines().find(|l| l.contains(addr)).unwrap();
        let w: Vec<&str> = line.split_whitespace().collect();
        let i = w.iter().position(|x| *x == "packets").unwrap();
        w[i + 1].parse().unwrap()
    };
    [n("149.154.167.99"), n("198.51.100.7")]
}

/// `ip ARGS`' output, empty when it fails (a table that does not exist yet).
fn ip_maybe(args: &[&str]) -> String {
    let o = Command::new(find("ip").expect("ip (iproute2)"))
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Lines of `ip [-6] rule` and `ip [-6] route show table 100` that are ours.
fn ours() -> [usize; 4] {
    let count = |s: String, pat: &str| s.lines().filter(|l| l.contains(pat)).count();
    [
        count(
            ip_out(&["rule"]),
            "27100:\tfrom all fwmark 0x100/0xff00 lookup 100",
        ),
        count(
            ip_out(&["-6", "rule"]),
            "27100:\tfrom all fwmark 0x100/0xff00 lookup 100",
        ),
        count(
            ip_maybe(&["route", "show", "table", "100"]),
            "default dev v0 proto 241",
        ),
        count(
            ip_maybe(&["-6", "route", "show", "table", "100"]),
            "default dev v0 proto 241",
        ),
    ]
}

#[test]
fn a_group_routed_via_an_interface_end_to_end() {
    if let Err(why) = namespace() {
        return cannot_run(&why);
    }
    let t = TestDir::new();
    // A fake RIPEstat on this namespace's loopback (the server's thread is in it).
    crate::explain::ip(&["link", "set", "lo", "up"]);
    let tg = ["149.154.160.0/20", "2001:b28:f23d::/48"]
        .map(String::from)
        .to_vec();
    let body = ripe_body(&tg);
    let server = FakeServer::start(move |_| Reply::json(200, body.clone()));
    t.config(&serde_json::json!({"ripe": {"url": server.url("/data.json")}}));
    // The first hour: the group, its route via an interface not there yet, a source.
    let err = ok(&t, &["group", "add", "vpn", "--via", "v0"]);
    assert!(err.contains("interface v0 does not exist (yet)"), "{err}");
    assert!(
        err.contains("with mark 0x100/0xff00, routed via v0 (table 100)"),
        "{err}"
    );
    ok(&t, &["asn", "add", "AS62041", "--group", "vpn"]);
    let cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.file("config.json")).unwrap()).unwrap();
    assert_eq!(
        cfg["groups"]["vpn"]["route"],
        serde_json::json!({"via": "v0", "table": 100})
    );
    assert_eq!(
        cfg["outputs"],
        serde_json::json!([{"load": "nft", "group": "vpn"}])
    );

    crate::explain::ip(&["link", "add", "v0", "type", "veth", "peer", "name", "v1"]);
    crate::explain::ip(&["link", "set", "v1", "up"]);
    crate::explain::ip(&["link", "set", "v0", "up"]);
    crate::explain::ip(&["addr", "add", "192.0.2.1/24", "dev", "v0"]);
    ok(&t, &["run"]);
    assert_eq!(ours(), [1, 1, 1, 1], "{}", ip_out(&["rule"]));
    // A second run adds no duplicates; foreign rules and routes are left alone.
    crate::explain::ip(&[
        "rule",
        "add",
        "fwmark",
        "0x100/0xff00",
        "table",
        "100",
        "priority",
        "500",
    ]);
    crate::explain::ip(&["route", "add", "10.9.0.0/16", "dev", "lo", "table", "100"]);
    ok(&t, &["render", "--load-only"]);
    assert_eq!(ours(), [1, 1, 1, 1]);

    // Traffic: a route in main lets the socket send; the mark reroutes it via v0.
    crate::explain::ip(&["route", "add", "149.154.0.0/16", "dev", "lo"]);
    crate::explain::ip(&["route", "add", "198.51.100.0/24", "dev", "lo"]);
    // v0's neighbour for the probe, so that the UDP packet itself leaves (no ARP).
    crate::explain::ip(&[
        "neigh",
        "add",
        "149.154.167.99",
        "lladdr",
        "02:00:00:00:00:01",
        "dev",
        "v0",
        "nud",
        "permanent",
    ]);
    let nft = find("nft").unwrap();
    far_side(&t, &nft);
    let sock = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    sock.send_to(b"x", "198.51.100.7:9").unwrap();
    sock.send_to(b"x", "149.154.167.99:9").unwrap();
    let left = crate::common::eventually(std::time::Duration::from_secs(5), || {
        far_side_packets(&nft)[0] == 1
    });
    assert!(left, "a packet to an address in the set leaves through v0");
    assert_eq!(far_side_packets(&nft)[1], 0, "one outside the set does not");
    let o = t.run(&["explain", "149.154.167.99"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("routed via v0 (group vpn, mark 0x100, table 100)"),
        "{out}"
    );

    // v0 down: the kernel drops its routes; explain names the group's interface.
    crate::explain::ip(&["link", "set", "v0", "down"]);
    let o = t.run(&["explain", "149.154.167.99"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("but v0 is down or does not exist (no route via it in table 100)"),
        "{out}"
    );
    crate::explain::ip(&["link", "set", "v0", "up"]);
    ok(&t, &["render", "--load-only"]);
    assert_eq!(ours(), [1, 1, 1, 1]);

    // The route taken out of the file: only what the program made goes.
    let mut cfg = cfg;
    cfg["groups"]["vpn"]
        .as_object_mut()
        .unwrap()
        .remove("route");
    std::fs::write(t.file("config.json"), cfg.to_string()).unwrap();
    ok(&t, &["render", "--load-only"]);
    assert_eq!(ours(), [0, 0, 0, 0]);
    assert!(ip_out(&["rule"]).contains("500:\tfrom all fwmark 0x100/0xff00 lookup 100"));
    assert!(ip_out(&["route", "show", "table", "100"]).contains("10.9.0.0/16 dev lo"));

    // A table that holds a foreign route is not picked: the route back in 101.
    ok(&t, &["group", "add", "vpn", "--via", "v0"]);
    let cfg = std::fs::read_to_string(t.file("config.json")).unwrap();
    assert!(cfg.contains("\"table\": 101"), "{cfg}");
    crate::explain::ip(&["route", "del", "10.9.0.0/16", "dev", "lo", "table", "100"]);
    let mut cfg: serde_json::Value = serde_json::from_str(&cfg).unwrap();
    cfg["groups"]["vpn"]
        .as_object_mut()
        .unwrap()
        .remove("route");
    std::fs::write(t.file("config.json"), cfg.to_string()).unwrap();

    // Back, then the group removed: refused while it has a source, then forced.
    ok(&t, &["group", "add", "vpn", "--via", "v0"]);
    ok(&t, &["render", "--load-only"]);
    assert_eq!(ours(), [1, 1, 1, 1]);
    let o = t.run(&["group", "remove", "vpn"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("group vpn still has AS62041"), "{err}");
    let err = ok(&t, &["group", "remove", "vpn", "--force"]);
    assert!(err.contains("removed with group vpn: AS62041"), "{err}");
    assert_eq!(ours(), [0, 0, 0, 0]);
    assert!(ip_out(&["rule"]).contains("500:\tfrom all fwmark 0x100/0xff00 lookup 100"));
    let tables = Command::new(&nft)
        .args(["list", "table", "inet", "ripe_cidr"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&tables.stdout);
    assert!(
        !listed.contains("vpn_"),
        "the group's sets and chains are gone: {listed}"
    );
    let cfg = std::fs::read_to_string(t.file("config.json")).unwrap();
    assert!(!cfg.contains("vpn"), "{cfg}");
}

/// A table that holds a route the program did not make is refused: the group's load
/// output fails naming it (as any failed output: exit 1 here, `status` and `/health`
/// in the daemon), its sets stay loaded, and nothing of the foreign table changes.
#[test]
fn a_table_in_foreign_use_fails_the_output_and_keeps_the_sets() {
    if let Err(why) = namespace() {
        return cannot_run(&why);
    }
    let t = TestDir::new();
    let mut d = db::open(&t.paths()).unwrap();
    let now = ripe_cidr_collector::util::unix_now();
    d.merge_source(
        Kind::Asn,
        "62041",
        &["149.154.160.0/20".to_string()],
        now,
        7,
    )
    .unwrap();
    drop(d);
    t.config(&serde_json::json!({
        "groups": {"vpn": {"asns": ["62041"], "mark": "0x100", "mark_mask": "0xff00",
                           "route": {"via": "lo", "table": 100}}},
        "outputs": [{"load": "nft", "group": "vpn"}]
    }));
    crate::explain::ip(&["link", "set", "lo", "up"]);
    crate::explain::ip(&["route", "add", "10.9.0.0/16", "dev", "lo", "table", "100"]);
    let o = t.run(&["render", "--load-only"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("table 100 holds routes the program did not make"),
        "{err}"
    );
    assert_eq!(ours(), [0, 0, 0, 0]);
    let nft = find("nft").unwrap();
    let set = Command::new(&nft)
        .args(["list", "set", "inet", "ripe_cidr", "vpn_v4"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&set.stdout).contains("149.154.160.0/20"));
    assert_eq!(
        ip_out(&["route", "show", "table", "100"]).trim(),
        "10.9.0.0/16 dev lo scope link"
    );
}
