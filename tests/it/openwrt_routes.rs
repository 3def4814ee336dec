//! The OpenWrt package's netifd sections of the routed groups (issue 41): the init
//! script's `routes` (run at every start, and by `group add --via`/`group remove` in
//! the router build) against a uci that keeps /etc/config/network in a file
//! (`openwrt/tests/stubs/uci-network.sh`, which copies the real uci's `show`, `set`,
//! `delete` and `commit`) and a `reload_config` that logs (the real one asks procd to
//! reload the services whose configuration changed: netifd for `network`), with the
//! real binary's `group routes`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::TestDir;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

struct Router {
    t: TestDir,
    init: PathBuf,
}

impl Router {
    fn new() -> Router {
        let t = TestDir::new();
        let bin = t.file("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let stub = root().join("openwrt/tests/stubs/uci-network.sh");
        std::os::unix::fs::symlink(stub, bin.join("uci")).unwrap();
        let reload = "#!/bin/sh\necho reload_config >> \"$STUB_LOG\"\n";
        std::fs::write(bin.join("reload_config"), reload).unwrap();
        Command::new("chmod")
            .arg("+x")
            .arg(bin.join("reload_config"))
            .status()
            .unwrap();
        let check = crate::openwrt::path_check_in(t.path(), &t.file("etc"), t.path());
        let text = std::fs::read_to_string(
            root().join("openwrt/ripe-cidr-collector/files/ripe-cidr-collector.init"),
        )
        .unwrap();
        let text = text
            .replace(
                "PROG=/usr/bin/ripe-cidr-collector",
                &format!("PROG={}", crate::common::bin().display()),
            )
            .replace(
                "PATH_CHECK=/usr/share/ripe-cidr-collector/path-check.sh",
                &format!("PATH_CHECK={}", check.display()),
            );
        let init = t.file("init");
        std::fs::write(&init, text).unwrap();
        // A foreign interface and rule of the user's own, never touched.
        std::fs::write(
            t.file("network"),
            "network.lan=interface\nnetwork.lan.proto='static'\nnetwork.mine=rule\nnetwork.mine.mark='0x100'\n",
        )
        .unwrap();
        Router { t, init }
    }

    /// Runs the init script's `routes`; returns the stub log.
    fn routes(&self) -> String {
        let log = self.t.file("log");
        std::fs::write(&log, "").unwrap();
        let script = format!(
            ". {}; . {}; routes",
            root().join("openwrt/tests/stubs.sh").display(),
            self.init.display()
        );
        let path = format!(
            "{}:{}",
            self.t.file("bin").display(),
            std::env::var("PATH").unwrap()
        );
        let o = Command::new("sh")
            .args(["-c", &script])
            .env("PATH", path)
            .env("STUB_LOG", &log)
            .env("UCI_STORE", self.t.file("network"))
            .env("UCI_main_data_dir", self.t.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read_to_string(log).unwrap()
    }

    fn network(&self) -> String {
        std::fs::read_to_string(self.t.file("network")).unwrap()
    }
}

#[test]
fn netifd_sections_appear_change_and_go_with_the_group() {
    let r = Router::new();
    // A route without a table: `group routes` picks 100 and writes it.
    r.t.config(&serde_json::json!({"groups": {"vpn": {"asns": ["62041"],
        "mark": "0x100", "mark_mask": "0xff00", "route": {"via": "wg0"}}}}));
    let log = r.routes();
    assert!(log.contains("uci commit network\nreload_config\n"), "{log}");
    let want = "network.lan=interface\nnetwork.lan.proto='static'\nnetwork.mine=rule\nnetwork.mine.mark='0x100'\n\
        network.rcc_vpn_rule=rule\nnetwork.rcc_vpn_rule.mark='0x100/0xff00'\nnetwork.rcc_vpn_rule.lookup='100'\nnetwork.rcc_vpn_rule.priority='27100'\n\
        network.rcc_vpn_route=route\nnetwork.rcc_vpn_route.interface='wg0'\nnetwork.rcc_vpn_route.target='0.0.0.0/0'\nnetwork.rcc_vpn_route.table='100'\n\
        network.rcc_vpn_rule6=rule6\nnetwork.rcc_vpn_rule6.mark='0x100/0xff00'\nnetwork.rcc_vpn_rule6.lookup='100'\nnetwork.rcc_vpn_rule6.priority='27100'\n\
        network.rcc_vpn_route6=route6\nnetwork.rcc_vpn_route6.interface='wg0'\nnetwork.rcc_vpn_route6.target='::/0'\nnetwork.rcc_vpn_route6.table='100'\n";
    assert_eq!(r.network(), want);
    let cfg = std::fs::read_to_string(r.t.file("config.json")).unwrap();
    assert!(cfg.contains("\"table\": 100"), "{cfg}");
    // Again (every start, a reboot): nothing changes, netifd is not reloaded.
    let log = r.routes();
    assert!(
        !log.contains("commit") && !log.contains("reload_config"),
        "{log}"
    );
    assert_eq!(r.network(), want);

    // Changed: another interface and an IPv4 gateway (no IPv6 sections then).
    r.t.config(&serde_json::json!({"groups": {"vpn": {"asns": ["62041"],
        "mark": "0x100", "mark_mask": "0xff00",
        "route": {"via": "wan2", "gateway": "192.0.2.1", "table": 100}}}}));
    let log = r.routes();
    assert!(log.contains("reload_config"), "{log}");
    let net = r.network();
    assert!(
        net.contains("network.rcc_vpn_route.interface='wan2'\n"),
        "{net}"
    );
    assert!(
        net.contains("network.rcc_vpn_route.gateway='192.0.2.1'\n"),
        "{net}"
    );
    assert!(!net.contains("rule6") && !net.contains("route6"), "{net}");

    // The group gone: its sections go, the user's stay.
    r.t.config(&serde_json::json!({"groups": {}}));
    let log = r.routes();
    assert!(log.contains("reload_config"), "{log}");
    assert_eq!(
        r.network(),
        "network.lan=interface\nnetwork.lan.proto='static'\nnetwork.mine=rule\nnetwork.mine.mark='0x100'\n"
    );
}

/// What LuCI's "Route via" runs (`group add vpn --via wg0`, then "none": `group
/// unroute vpn`): netifd's sections follow each, and the group's mark stays.
#[test]
fn netifd_sections_follow_route_via_and_unroute() {
    let r = Router::new();
    r.t.config(&serde_json::json!({"groups": {"vpn": {"asns": ["62041"]}}}));
    let ok = |args: &[&str]| {
        let o = r.t.run(args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    ok(&["group", "add", "vpn", "--via", "wg0"]);
    r.routes();
    let net = r.network();
    assert!(
        net.contains("network.rcc_vpn_route.interface='wg0'\n"),
        "{net}"
    );
    ok(&["group", "unroute", "vpn"]);
    let log = r.routes();
    assert!(log.contains("reload_config"), "{log}");
    assert_eq!(
        r.network(),
        "network.lan=interface\nnetwork.lan.proto='static'\nnetwork.mine=rule\nnetwork.mine.mark='0x100'\n"
    );
    let cfg = std::fs::read_to_string(r.t.file("config.json")).unwrap();
    assert!(
        cfg.contains("\"mark\": \"0x100\"") && !cfg.contains("\"route\""),
        "{cfg}"
    );
}
