//! Groups against the real kernel, inside a network namespace of the test's own
//! thread (`unshare -n`): two groups' sets side by side in one table (netlink load,
//! `nft -f` of the nft format, `ipset restore`), and the routing-mark chain: a packet
//! to a group's address leaves with the group's mark, one to an excluded address does
//! not; a reload keeps one rule per family and leaves other chains alone.

use std::net::UdpSocket;
use std::process::Command;

use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;
use serde_json::json;

use crate::common::{cannot_run, TestDir};
use crate::netlink::{find, namespace, Nft};

fn setup() -> TestDir {
    let t = TestDir::new();
    let mut d = db::open(&t.paths()).unwrap();
    let now = ripe_cidr_collector::util::unix_now();
    let tg: Vec<String> = ["91.108.4.0/22", "2001:b28:f23d::/48"]
        .map(String::from)
        .to_vec();
    d.merge_source(Kind::Asn, "62041", &tg, now, 7).unwrap();
    let nf: Vec<String> = ["45.57.0.0/17", "2a00:86c0::/32"]
        .map(String::from)
        .to_vec();
    d.merge_source(Kind::Asn, "2906", &nf, now, 7).unwrap();
    t.config(&json!({
        "asns": ["62041"],
        "groups": {"video": {"asns": ["2906"], "exclude": ["45.57.0.0/24"],
                             "mark": "0x100", "mark_mask": "0xff00"}},
        "outputs": [{"load": "nft"}, {"load": "nft", "group": "video"}]
    }));
    t
}

fn ip(args: &[&str]) {
    let ip = find("ip").expect("ip (iproute2)");
    let o = Command::new(ip).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The packets counted by the rule of chain `check` whose text contains `needle`.
fn counted(nft: &Nft, needle: &str) -> u64 {
    let listing = nft.ok(&["list", "chain", "inet", "ripe_cidr", "check"]);
    let line = listing
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle} in {listing}"));
    let after = line.split("counter packets ").nth(1).unwrap();
    after.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn group_sets_side_by_side_and_marks_set_by_the_load() {
    let nft = match namespace() {
        Ok(nft) => Nft(nft),
        Err(why) => return cannot_run(&why),
    };
    let t = setup();
    let out = t.run(&["render"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v4 = nft.ok(&["list", "set", "inet", "ripe_cidr", "video_v4"]);
    assert!(
        v4.contains("45.57.1.0/24") && !v4.contains("45.57.0.0/17"),
        "{v4}"
    );
    let ripe = nft.ok(&["list", "set", "inet", "ripe_cidr", "ripe_v4"]);
    assert!(
        ripe.contains("91.108.4.0/22") && !ripe.contains("45.57"),
        "{ripe}"
    );
    let pre = nft.ok(&["list", "chain", "inet", "ripe_cidr", "video_mark"]);
    assert!(pre.contains("hook prerouting priority mangle"), "{pre}");
    assert!(pre.contains("ip daddr @video_v4"), "{pre}");
    assert!(pre.contains("ip6 daddr @video_v6"), "{pre}");
    let out_chain = nft.ok(&["list", "chain", "inet", "ripe_cidr", "video_mark_out"]);
    assert!(
        out_chain.contains("type route hook output priority mangle"),
        "{out_chain}"
    );
    assert!(out_chain.contains("meta mark set"), "{out_chain}");
    // No chain for the default group: it has no mark.
    assert!(nft
        .run(&["list", "chain", "inet", "ripe_cidr", "ripe_mark"])
        .is_err());

    // A chain of the user's after ours counts the marks of locally sent packets.
    nft.ok(&[
        "add",
        "chain",
        "inet",
        "ripe_cidr",
        "check",
        "{ type filter hook output priority 0; }",
    ]);
    for (addr, what) in [
        ("45.57.1.1", "marked"),
        ("45.57.0.1", "excluded"),
        ("91.108.4.1", "other"),
    ] {
        let rule =
            format!("ip daddr {addr} meta mark and 0xff00 == 0x100 counter comment \"{what}\"");
        nft.ok(&["add", "rule", "inet", "ripe_cidr", "check", &rule]);
    }
    // Routes through the loopback device: the packets only need to leave the socket
    // and pass the output hook.
    ip(&["link", "set", "lo", "up"]);
    ip(&["route", "add", "45.57.0.0/16", "dev", "lo"]);
    ip(&["route", "add", "91.108.0.0/16", "dev", "lo"]);
    let sock = UdpSocket::bind("0.0.0.0:0").unwrap();
    for addr in ["45.57.1.1:9", "45.57.0.1:9", "91.108.4.1:9"] {
        sock.send_to(b"x", addr).unwrap();
    }
    assert_eq!(
        counted(&nft, "marked"),
        1,
        "a packet to the group's address is marked"
    );
    assert_eq!(counted(&nft, "excluded"), 0, "an excluded address is not");
    assert_eq!(counted(&nft, "other"), 0, "another group's address is not");

    // Reload: one rule per family still, the user's chain kept.
    let out = t.run(&["render"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pre = nft.ok(&["list", "chain", "inet", "ripe_cidr", "video_mark"]);
    assert_eq!(pre.matches("meta mark set").count(), 2, "{pre}");
    sock.send_to(b"x", "45.57.1.1:9").unwrap();
    assert_eq!(counted(&nft, "marked"), 2);
}

#[test]
fn nft_and_ipset_exports_of_two_groups_load_side_by_side() {
    let nft = match namespace() {
        Ok(nft) => Nft(nft),
        Err(why) => return cannot_run(&why),
    };
    let t = setup();
    for group in ["default", "video"] {
        let out = t.run(&["export", "--format", "nft", "--group", group]);
        assert!(out.status.success());
        nft.script(&out.stdout).unwrap();
    }
    let sets = nft.ok(&["list", "table", "inet", "ripe_cidr"]);
    for s in ["ripe_v4", "ripe_v6", "video_v4", "video_v6"] {
        assert!(sets.contains(&format!("set {s} {{")), "{sets}");
    }
    let v4 = nft.ok(&["list", "set", "inet", "ripe_cidr", "video_v4"]);
    assert!(
        v4.contains("45.57.2.0/23") && !v4.contains("45.57.0.0/24"),
        "{v4}"
    );
    let Some(ipset) = find("ipset") else {
        return cannot_run("`ipset` not found (apt-get install ipset)");
    };
    for group in ["default", "video"] {
        let out = t.run(&["export", "--format", "ipset", "--group", group]);
        let mut c = Command::new(&ipset)
            .arg("restore")
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        c.stdin.take().unwrap().write_all(&out.stdout).unwrap();
        let o = c.wait_with_output().unwrap();
        assert!(
            o.status.success(),
            "{group}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let o = Command::new(&ipset)
        .args(["list", "video_v4"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(
        listed.contains("45.57.64.0/18") && !listed.contains("45.57.0.0/24"),
        "{listed}"
    );
    let o = Command::new(&ipset).args(["list", "-n"]).output().unwrap();
    let names = String::from_utf8_lossy(&o.stdout);
    assert!(
        names.contains("ripe_v4") && names.contains("video_v6"),
        "{names}"
    );
}
