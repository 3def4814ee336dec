//! The LuCI sources view's "Route via" per group (issue 41): netifd's interfaces
//! (ubus `network.interface dump`, answered here as netifd answers it), the group's
//! route shown, and the change saved through the rpcd plugin (`group_route` /
//! `group_unroute`, the real CLI's `group add NAME --via IFACE` / `group unroute`).

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::*;
use crate::luci::{luci_server, open_view, text};
use crate::luci_plugin::{root, Plugin, APP};
use crate::web::{browser, site};

/// What netifd answers to `ubus call network.interface dump` (the keys LuCI's
/// network.js reads: `interface`, `up`, `available`, `l3_device`, the addresses), for
/// a router with a LAN, a WAN and a WireGuard interface that is down; permission
/// denied (6) unless the app's ACL grants it, as rpcd does.
pub(crate) fn netifd_dump(method: &str) -> Reply {
    let acl: Value = serde_json::from_slice(
        &std::fs::read(
            root()
                .join(APP)
                .join("root/usr/share/rpcd/acl.d/luci-app-ripe-cidr-collector.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let granted = acl["luci-app-ripe-cidr-collector"]["read"]["ubus"]["network.interface"]
        .as_array()
        .is_some_and(|m| m.contains(&json!(method)));
    if !granted || method != "dump" {
        return Reply::json(200, json!([6]).to_string());
    }
    let iface = |name: &str, up: bool, dev: &str, v4: Option<&str>| {
        json!({"interface": name, "up": up, "pending": false, "available": true,
               "autostart": true, "dynamic": false, "proto": if name == "wg0" { "wireguard" } else { "static" },
               "l3_device": if up { json!(dev) } else { Value::Null }, "device": dev,
               "ipv4-address": v4.map_or(json!([]), |a| json!([{"address": a, "mask": 24}])),
               "ipv6-address": [], "route": [], "dns-server": [], "data": {}})
    };
    let answer = json!({"interface": [
        iface("loopback", true, "lo", Some("127.0.0.1")),
        iface("lan", true, "br-lan", Some("192.168.1.1")),
        iface("wan", true, "eth1", Some("203.0.113.2")),
        iface("wg0", false, "wg0", None)
    ]});
    Reply::json(200, json!([0, answer]).to_string())
}

fn route_in_config(site: &crate::web::Site) -> Value {
    let cfg: Value =
        serde_json::from_slice(&std::fs::read(site.t.file("config.json")).unwrap()).unwrap();
    cfg["groups"]["vpn"]["route"].clone()
}

fn save(b: &mut crate::browser::Browser, via: &str) {
    b.eval(&format!(
        "{{ const box = document.querySelector('.rcc-route[data-group=\"vpn\"]');
           box.querySelector('select').value = {};
           box.querySelector('button').click(); true }}",
        json!(via)
    ));
}

#[test]
fn luci_routes_a_group_via_a_netifd_interface() {
    let Some(mut b) = browser() else { return };
    let site = site(&["62041"], &[]);
    let mut cfg: Value =
        serde_json::from_slice(&std::fs::read(site.t.file("config.json")).unwrap()).unwrap();
    cfg["asns"] = json!([]);
    cfg["groups"] = json!({"vpn": {"asns": ["62041"]}});
    site.t.config(&cfg);
    let server = luci_server(site.t.path().to_path_buf(), &[], None);
    open_view(&mut b, server.addr, "ripe-cidr-collector/sources", "en");
    let box_ = ".rcc-route[data-group=\"vpn\"]";
    assert!(b.wait_for(
        &format!("!!document.querySelector('{box_} select')"),
        Duration::from_secs(10)
    ));
    assert_eq!(
        b.eval("!!document.querySelector('.rcc-route[data-group=\"default\"]')"),
        json!(false)
    );
    let options = b.eval(&format!(
        "[...document.querySelectorAll('{box_} option')].map(o => o.value + '=' + o.textContent)"
    ));
    assert_eq!(
        options,
        json!(["=none", "lan=lan", "wan=wan", "wg0=wg0 (down)"])
    );
    let now = text(&mut b, &format!("{box_} .rcc-route-now"));
    assert_eq!(now, "Not routed: its traffic takes the main table");

    save(&mut b, "wg0");
    assert!(
        b.wait_for(
            &format!("((document.querySelector('{box_} .rcc-route-now') || {{}}).textContent || '').startsWith('Routed via wg0')"),
            Duration::from_secs(10)
        ),
        "{}",
        text(&mut b, "#rcc-sources")
    );
    let now = text(&mut b, &format!("{box_} .rcc-route-now"));
    assert_eq!(now, "Routed via wg0 (table 100) (down)");
    assert_eq!(route_in_config(&site)["via"], "wg0");
    assert_eq!(
        b.eval(&format!("document.querySelector('{box_} select').value")),
        json!("wg0")
    );

    save(&mut b, "");
    assert!(b.wait_for(
        &format!("((document.querySelector('{box_} .rcc-route-now') || {{}}).textContent || '').startsWith('Not routed')"),
        Duration::from_secs(10)
    ));
    assert_eq!(route_in_config(&site), Value::Null);
    assert_eq!(b.errors, Vec::<String>::new());

    open_view(&mut b, server.addr, "ripe-cidr-collector/sources", "ru");
    let shown = text(&mut b, box_);
    assert!(
        shown.contains("Маршрут через") && shown.contains("Не маршрутизируется"),
        "{shown}"
    );
}

/// The plugin refuses an interface name the CLI would read as an option, or a shell
/// word, before running anything, naming it.
#[test]
fn plugin_refuses_bad_interfaces() {
    let t = TestDir::new();
    let plugin = Plugin::load();
    for via in ["-rf", "a b", "wg0;reboot", "x".repeat(16).as_str()] {
        let (code, v) = plugin.call(
            t.path(),
            "group_route",
            &json!({"group": "vpn", "via": via}),
        );
        assert_eq!(code, 0, "{via}");
        let e = v["error"].as_str().unwrap_or_default();
        assert!(e.starts_with("invalid via"), "{via}: {v}");
    }
    assert!(
        !t.file("config.json").exists()
            || !std::fs::read_to_string(t.file("config.json"))
                .unwrap()
                .contains("\"route\"")
    );
}

/// A view's call to another ubus object than the plugin's (netifd's interfaces) is
/// granted by the app's ACL, read only: rpcd refuses what it does not name.
#[test]
fn foreign_ubus_calls_are_granted_read_only() {
    let acl: Value = serde_json::from_slice(
        &std::fs::read(
            root()
                .join(APP)
                .join("root/usr/share/rpcd/acl.d/luci-app-ripe-cidr-collector.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let app = &acl["luci-app-ripe-cidr-collector"];
    let src = std::fs::read_to_string(
        root()
            .join(APP)
            .join("htdocs/luci-static/resources/view/ripe-cidr-collector/sources.js"),
    )
    .unwrap();
    assert!(src.contains("object: 'network.interface',\n\tmethod: 'dump',"));
    assert_eq!(app["read"]["ubus"]["network.interface"], json!(["dump"]));
    assert!(app["write"]["ubus"].get("network.interface").is_none());
}
