//! Names on the built-in page, in headless Chromium against the real binary: each
//! ASN's holder beside its number, and the search box (`GET /asn-search`) whose
//! "Use" fills in the add form. Holders come from a fake RIPEstat on 127.0.0.1 and
//! are text: a holder of `<img src=x onerror=...>` renders as those characters.

use std::time::Duration;

use serde_json::json;

use crate::common::*;
use crate::web::{browser, text};

const EVIL: &str = "<img src=x onerror=\"window.pwned=1\">";

fn fake_ripe() -> FakeServer {
    FakeServer::start(|rq| {
        let r = resource_of(&rq.url).unwrap_or_default();
        if rq.url.starts_with("/data/searchcomplete/") {
            let s = json!({"status": "ok", "data": {"categories": [{"category": "ASNs",
                "suggestions": [{"value": "AS64496", "description": EVIL}]}]}});
            Reply::json(200, s.to_string())
        } else if is_name_lookup(&rq.url) {
            let holder = if r == "62041" {
                "TELEGRAM - Telegram Messenger Inc"
            } else {
                EVIL
            };
            let o = json!({"status": "ok", "data": {"holder": holder, "announced": r == "62041"}});
            Reply::json(200, o.to_string())
        } else {
            Reply::json(200, ripe_body(&["91.108.4.0/22".into()]))
        }
    })
}

#[test]
fn page_shows_holders_and_its_search_fills_the_add_form() {
    let Some(mut b) = browser() else { return };
    let ripe = fake_ripe();
    let t = TestDir::new();
    t.config(&json!({
        "asns": ["62041"],
        "ripe": {"url": ripe.url("/data/announced-prefixes/data.json"), "timeout_seconds": 2, "retries": 0}
    }));
    assert_eq!(t.run(&["run"]).status.code(), Some(0));
    let (_serve, addr) = t.spawn_listening(&["serve"]);
    b.goto(&format!("http://{addr}/"));
    assert!(b.wait_for(
        "!!document.querySelector('tr[data-source=\"62041\"] .holder')",
        Duration::from_secs(20)
    ));
    let row = text(&mut b, "tr[data-source=\"62041\"] td.first");
    assert_eq!(row, "asnAS62041 TELEGRAM - Telegram Messenger Inc");

    b.eval(
        "{ document.querySelector('#search-q').value = 'evil';
         document.querySelector('#search-form button').click(); true }",
    );
    assert!(
        b.wait_for(
            "!!document.querySelector('#search-result tr[data-asn=\"64496\"]')",
            Duration::from_secs(20)
        ),
        "{}",
        text(&mut b, "#asn-search")
    );
    let found = text(&mut b, "#search-result tr");
    assert!(
        found.contains(EVIL) && found.contains("not announced"),
        "{found}"
    );
    assert_eq!(
        b.eval("document.querySelectorAll('#search-result img').length"),
        0
    );
    b.eval("document.querySelector('#search-result button').click(); true");
    assert_eq!(
        b.eval("document.querySelector('.add-form').source.value"),
        "AS64496"
    );
    assert_eq!(
        b.eval("document.querySelector('.add-form').kind.value"),
        "asn"
    );
    assert_eq!(b.eval("String(window.pwned)"), "undefined");
    assert_eq!(b.errors, Vec::<String>::new());
}
