//! The page's "Route via" per group (issue 41): the group's route shown, chosen from
//! the host's interfaces (`GET /interfaces`), saved through `POST /groups`, and the
//! explain box naming the route of the address's group.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::*;
use crate::web::{browser, site, text};

fn groups(addr: std::net::SocketAddr) -> Value {
    let (_, body) = http_get(addr, "/groups");
    serde_json::from_str(&body).unwrap()
}

fn route_of(addr: std::net::SocketAddr, group: &str) -> Value {
    let g = groups(addr);
    let list = g["groups"].as_array().unwrap();
    list.iter().find(|x| x["name"] == group).unwrap()["route"].clone()
}

#[test]
fn page_routes_a_group_via_an_interface_and_explains_it() {
    let Some(mut b) = browser() else { return };
    let site = site(&["62041"], &[]);
    let mut cfg: Value =
        serde_json::from_slice(&std::fs::read(site.t.file("config.json")).unwrap()).unwrap();
    cfg["asns"] = json!([]);
    cfg["groups"] = json!({"vpn": {"asns": ["62041"]}});
    site.t.config(&cfg);
    let (_serve, addr) = site.t.spawn_listening(&["serve"]);
    // A VPN's interface that is not up yet: accepted, and shown as not there.
    let (code, body) = http_send(
        addr,
        "POST",
        "/groups",
        r#"{"group":"vpn","via":"rcc-gone0"}"#,
    );
    assert_eq!(code, 200, "{body}");
    b.goto(&format!("http://{addr}/"));
    let sel = "[data-route=\"vpn\"] select";
    assert!(
        b.wait_for(
            &format!("!!document.querySelector('{sel}')"),
            Duration::from_secs(20)
        ),
        "no Route via: {}",
        text(&mut b, "body")
    );
    let now = text(&mut b, "[data-route-now=\"vpn\"]");
    assert!(now.contains("routed via rcc-gone0 (table 100)"), "{now}");
    assert!(now.contains("rcc-gone0 does not exist"), "{now}");
    assert_eq!(
        b.eval(&format!("document.querySelector('{sel}').value")),
        json!("rcc-gone0")
    );
    // "none" first, then the host's interfaces (not lo), each by name.
    let options = b.eval(&format!(
        "[...document.querySelectorAll('{sel} option')].map(o => o.value)"
    ));
    let options: Vec<String> = serde_json::from_value(options).unwrap();
    assert_eq!(options[0], "", "{options:?}");
    assert!(!options.contains(&"lo".to_string()), "{options:?}");
    // The default group is never routed: no choice there.
    assert_eq!(
        b.eval("!!document.querySelector('[data-route=\"default\"]')"),
        json!(false)
    );

    // The explain box says where the address's group goes.
    b.eval(
        "{ document.querySelector('#ip').value = '149.154.167.99';
           document.querySelector('#lookup-form button[type=submit]').click(); true }",
    );
    assert!(
        b.wait_for(
            "document.querySelector('#explain-route').textContent.includes('rcc-gone0')",
            Duration::from_secs(10)
        ),
        "{}",
        text(&mut b, "#lookup")
    );
    let said = text(&mut b, "#explain-route");
    assert!(
        said.contains("Route of group vpn: routed via rcc-gone0"),
        "{said}"
    );

    // "none" takes the route away.
    b.eval(&format!(
        "{{ const s = document.querySelector('{sel}'); s.value = '';
           s.dispatchEvent(new Event('change'));
           document.querySelector('[data-route=\"vpn\"] button').click(); true }}"
    ));
    assert!(b.wait_for(
        "(document.querySelector('[data-route-now=\"vpn\"]') || {}).textContent === 'not routed: its traffic takes the main table'",
        Duration::from_secs(10)
    ), "{}", text(&mut b, "section.group[data-group=\"vpn\"]"));
    assert_eq!(route_of(addr, "vpn"), Value::Null);

    // An interface of the host, chosen from the list.
    if let Some(iface) = options.iter().find(|o| !o.is_empty() && *o != "rcc-gone0") {
        b.eval(&format!(
            "{{ const s = document.querySelector('{sel}'); s.value = {};
               s.dispatchEvent(new Event('change'));
               document.querySelector('[data-route=\"vpn\"] button').click(); true }}",
            json!(iface)
        ));
        assert!(b.wait_for(
            &format!("((document.querySelector('[data-route-now=\"vpn\"]') || {{}}).textContent || '').startsWith('routed via ' + {})", json!(iface)),
            Duration::from_secs(10)
        ), "{}", text(&mut b, "section.group[data-group=\"vpn\"]"));
        assert_eq!(route_of(addr, "vpn")["via"], json!(iface));
    }
    assert_eq!(b.errors, Vec::<String>::new());
}
