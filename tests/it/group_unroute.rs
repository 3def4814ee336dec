//! `group unroute NAME` (issue 41): the route goes, the mark and the load output stay;
//! the same function as the API's `POST /groups` with `"via": null`.

use serde_json::{json, Value};

use crate::common::*;

#[test]
fn unroute_takes_the_route_away_and_keeps_the_mark() {
    let t = TestDir::new();
    t.config(&json!({}));
    let out = t.run(&["group", "add", "vpn", "--via", "rcc-none0"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = t.run(&["group", "unroute", "vpn"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cfg: Value =
        serde_json::from_slice(&std::fs::read(t.file("config.json")).unwrap()).unwrap();
    assert_eq!(cfg["groups"]["vpn"]["route"], Value::Null, "{cfg}");
    assert_eq!(cfg["groups"]["vpn"]["mark"], "0x100", "{cfg}");
    assert_eq!(
        cfg["outputs"],
        json!([{"load": "nft", "group": "vpn"}]),
        "{cfg}"
    );
    // Once more: nothing to do, still fine.
    assert!(t.run(&["group", "unroute", "vpn"]).status.success());
}

#[test]
fn unroute_refuses_what_it_cannot_do_naming_it() {
    let t = TestDir::new();
    t.config(&json!({}));
    for (args, says) in [
        (&["group", "unroute", "nope"][..], "nope"),
        (&["group", "unroute"][..], "needs the group's NAME"),
        (&["group", "unroute", "default"][..], "default"),
        (&["group", "unroute", "a", "b"][..], "\"b\""),
        (
            &["group", "unroute", "vpn", "--via", "wg0"][..],
            "--via goes with `group add`",
        ),
    ] {
        let out = t.run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
