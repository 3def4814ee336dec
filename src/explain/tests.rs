//! The walk over a kernel that answers from a table, without netlink: each broken
//! link, the steps skipped, and the group chosen.

use std::net::IpAddr;

use super::*;
use crate::config::parse;
use crate::db::Row;
use crate::source::Kind;

/// A kernel whose answers the test sets.
#[derive(Default)]
struct Fake {
    /// Sets that exist and whether they hold the address.
    sets: Vec<(&'static str, bool)>,
    chains: bool,
    rule: Option<u32>,
    route: Option<(u32, bool, bool)>,
    skip: bool,
}

impl Kernel for Fake {
    fn set_holds(&self, _: &str, set: &str, _: IpAddr) -> Result<Option<bool>, Skip> {
        if self.skip {
            return Err(Skip("no CAP_NET_ADMIN".into()));
        }
        Ok(self.sets.iter().find(|s| s.0 == set).map(|s| s.1))
    }
    fn chain(&self, _: &str, _: &str) -> Result<Option<Vec<Marking>>, Skip> {
        if self.skip {
            return Err(Skip("no CAP_NET_ADMIN".into()));
        }
        let m = Marking {
            value: 0x100,
            mask: 0xff00,
            packets: 2,
        };
        Ok(self.chains.then(|| vec![m]))
    }
    fn rule(&self, _: bool, _: u32) -> Result<Option<Rule>, Skip> {
        Ok(self.rule.map(|table| Rule {
            priority: 10,
            table,
            fwmark: (0x100, 0xff00),
        }))
    }
    fn route(&self, _: IpAddr, _: u32) -> Result<Result<Route, String>, Skip> {
        Ok(match self.route {
            None => Err("Network is unreachable".into()),
            Some((table, up, carrier)) => Ok(Route {
                table,
                gateway: None,
                link: Some(("wg0".into(), up, carrier)),
            }),
        })
    }
}

fn cfg() -> Config {
    let text = r#"{"groups": {"vpn": {"asns": ["62041"], "exclude": ["149.154.164.0/24"],
        "mark": "0x100", "mark_mask": "0xff00"}}, "outputs": [{"load": "nft", "group": "vpn"}]}"#;
    parse(text, std::path::Path::new("config.json"))
        .unwrap()
        .config
}

fn row(value: &str) -> Row {
    Row {
        kind: Kind::Asn,
        source: "62041".into(),
        value: value.into(),
        first_seen: "2026-12-01T00:00:00Z".into(),
        last_seen: "2026-12-02T00:00:00Z".into(),
    }
}

fn run(addr: &str, rows: Vec<Row>, k: &Fake, openwrt: bool) -> Explained {
    let cfg = cfg();
    let status = crate::status::Status {
        last_run_finished: Some("2026-12-02T12:03:00Z".into()),
        ..Default::default()
    };
    let input = Input {
        cfg: &cfg,
        status: Some(&status),
        group: None,
        openwrt,
    };
    let found = lookup::Found {
        rows,
        truncated: false,
        ..Default::default()
    };
    explain(&parse_address(addr).unwrap(), &found, &input, k).unwrap()
}

fn working() -> Fake {
    Fake {
        sets: vec![("vpn_v4", true)],
        chains: true,
        rule: Some(100),
        route: Some((100, true, true)),
        skip: false,
    }
}

const A: &str = "149.154.167.99";

#[test]
fn every_link_holding_is_routed() {
    let e = run(A, vec![row("149.154.160.0/20")], &working(), false);
    assert!(e.routed());
    assert_eq!(e.group, "vpn");
    assert_eq!(
        e.verdict,
        "149.154.167.99: routed via wg0 (group vpn, mark 0x100, table 100)"
    );
    let names: Vec<&str> = e.steps.iter().map(|s| s.name).collect();
    assert_eq!(names, ["stored", "kernel", "mark", "rule", "route"]);
    assert!(
        e.steps[2].found[0].ends_with("; 4 packets marked so far"),
        "{:?}",
        e.steps[2]
    );
    let j = String::from_utf8(json(&e)).unwrap();
    assert!(
        j.starts_with("{\"query\":\"149.154.167.99\",\"group\":\"vpn\",\"routed\":true,"),
        "{j}"
    );
    assert!(j.ends_with("\"lookup\":{\"query\":\"149.154.167.99\",\"matches\":[{\"value\":\"149.154.160.0/20\",\"kind\":\"asn\",\"source\":\"62041\",\"first_seen\":\"2026-12-01T00:00:00Z\",\"last_seen\":\"2026-12-02T00:00:00Z\",\"configured\":true}]}}\n"), "{j}");
}

#[test]
fn each_broken_link_stops_the_walk_with_its_fix() {
    let stored = || vec![row("149.154.160.0/20")];
    let cases: [(Fake, usize, &str, &str); 6] = [
        (Fake { sets: vec![("vpn_v4", false)], ..working() }, 2, "stored in group vpn, but not in set vpn_v4", "has not run since 2026-12-02T12:03:00Z: see `status`"),
        (Fake { chains: false, ..working() }, 3, "in set vpn_v4, but the mark chain inet ripe_cidr vpn_mark is missing", "has not run since"),
        (Fake { rule: None, ..working() }, 4, "in set vpn_v4, but no ip rule for mark 0x100", "add `ip rule add fwmark 0x100/0xff00 table 100`"),
        (Fake { route: None, ..working() }, 5, "in set vpn_v4, but no route for it with mark 0x100 (Network is unreachable)", "`ip route add default dev IFACE table 100`"),
        (Fake { route: Some((254, true, true)), ..working() }, 5, "in set vpn_v4, but table 100 has no route for it (the kernel takes table main's, via wg0)", "table 100"),
        (Fake { route: Some((100, false, false)), ..working() }, 5, "in set vpn_v4, but wg0 is down", "`ip link set wg0 up`"),
    ];
    for (k, steps, verdict, fix) in cases {
        let e = run(A, stored(), &k, false);
        assert!(!e.routed());
        assert_eq!(e.steps.len(), steps, "{e:?}");
        assert_eq!(e.verdict, format!("{A}: {verdict}"));
        let last = e.steps.last().unwrap();
        assert_eq!(last.state, State::Broken);
        assert!(last.fix.as_deref().unwrap().contains(fix), "{last:?}");
    }
}

#[test]
fn openwrt_fixes_are_netifd_sections() {
    let e = run(
        A,
        vec![row("149.154.160.0/20")],
        &Fake {
            rule: None,
            ..working()
        },
        true,
    );
    let fix = e.steps[3].fix.as_deref().unwrap();
    assert!(
        fix.contains("`config rule` with `option mark '0x100/0xff00'` and `option lookup '100'`"),
        "{fix}"
    );
    let e = run(
        A,
        vec![row("149.154.160.0/20")],
        &Fake {
            route: None,
            ..working()
        },
        true,
    );
    assert!(e.steps[4]
        .fix
        .as_deref()
        .unwrap()
        .contains("`config route`"));
    let e = run(
        "2001:b28:f23d::1",
        vec![row("2001:b28:f23d::/48")],
        &Fake {
            sets: vec![("vpn_v6", true)],
            rule: None,
            ..working()
        },
        true,
    );
    assert!(e.steps[3]
        .fix
        .as_deref()
        .unwrap()
        .contains("`config rule6`"));
}

#[test]
fn stored_step_excluded_not_stored_and_dnsmasq() {
    let e = run(
        "149.154.164.5",
        vec![row("149.154.160.0/20")],
        &working(),
        false,
    );
    assert_eq!(
        e.verdict,
        "149.154.164.5: excluded from group vpn by 149.154.164.0/24"
    );
    assert_eq!(e.steps.len(), 1);
    let e = run("198.51.100.7", vec![], &working(), false);
    assert_eq!(e.verdict, "198.51.100.7: not stored in group default");
    // Only in a dns set: the load output of `vpn` has none in this configuration,
    // so nothing holds it.
    let k = Fake {
        sets: vec![("vpn_dns_v4", true)],
        ..working()
    };
    assert!(!run("198.51.100.7", vec![], &k, false).routed());
}

#[test]
fn without_kernel_reads_the_stored_step_still_answers() {
    let e = run(
        A,
        vec![row("149.154.160.0/20")],
        &Fake {
            skip: true,
            ..working()
        },
        false,
    );
    assert!(!e.routed());
    let states: Vec<State> = e.steps.iter().map(|s| s.state).collect();
    assert_eq!(
        states,
        [
            State::Ok,
            State::Skipped,
            State::Skipped,
            State::Ok,
            State::Ok
        ]
    );
    assert!(
        e.verdict
            .ends_with("; kernel, mark not checked: no CAP_NET_ADMIN"),
        "{}",
        e.verdict
    );
    let cfg = cfg();
    let input = Input {
        cfg: &cfg,
        status: None,
        group: Some("vpn"),
        openwrt: false,
    };
    let found = lookup::Found {
        rows: vec![row("149.154.160.0/20")],
        truncated: false,
        ..Default::default()
    };
    let e = explain(&parse_address(A).unwrap(), &found, &input, &NoKernel).unwrap();
    assert_eq!(e.steps[0].state, State::Ok);
    assert!(e.steps[1..].iter().all(|s| s.state == State::Skipped));
    assert!(text(&e).contains("skipped  kernel  not checked: this build has no kernel reads"));
}

#[test]
fn bad_input() {
    assert!(parse_address("149.154.160.0/20")
        .unwrap_err()
        .0
        .contains("prefix"));
    assert!(parse_address("nope").is_err());
    let cfg = cfg();
    let found = lookup::Found::default();
    let q = parse_address(A).unwrap();
    for g in ["nope", "*"] {
        let input = Input {
            cfg: &cfg,
            status: None,
            group: Some(g),
            openwrt: false,
        };
        assert!(explain(&q, &found, &input, &NoKernel).is_err(), "{g}");
    }
}
