//! The LuCI sources view's catalog (issue 40): per group, each service with its
//! title and what it brings, added and removed through the rpcd plugin (which runs
//! the real CLI here); a title written as markup in a catalog file is text (LuCI's
//! `E()` parses a bare string child as HTML: every text goes in an array).

use std::time::Duration;

use serde_json::{json, Value};

use crate::luci::{luci_server, open_view, text};
use crate::web::{browser, site};

#[test]
fn luci_lists_the_catalog_per_group_and_adds_a_service() {
    let Some(mut b) = browser() else { return };
    let site = site(&["62041"], &[]);
    let evil = "<img src=x onerror=window.pwned=1>";
    let catalog = json!({"services": [
        {"name": "chat", "title": evil, "about": "<b>about</b>",
         "asns": [{"asn": "64501", "holder": "X"}], "feeds": [], "domains": ["chat.example.test"],
         "sources": ["https://example.org/"], "reviewed": "2026-12-01"}
    ]});
    std::fs::write(site.t.file("services.json"), catalog.to_string()).unwrap();
    let server = luci_server(site.t.path().to_path_buf(), &[], None);
    open_view(&mut b, server.addr, "ripe-cidr-collector/sources", "en");
    let row = "#rcc-sources tr[data-service=\"chat\"]";
    let shown = text(&mut b, row);
    assert!(
        shown.contains(evil) && shown.contains("<b>about</b>"),
        "{shown}"
    );
    assert!(
        shown.contains("ASNs: 1, host names: 1") && shown.contains("Add"),
        "{shown}"
    );
    assert_eq!(
        b.eval("document.querySelectorAll('#rcc-sources img, #rcc-sources b').length"),
        json!(0)
    );
    b.eval(&format!(
        "document.querySelector('{row} button').click(); true"
    ));
    let added = "#rcc-sources tr[data-source=\"64501\"]";
    assert!(b.wait_for(
        &format!("!!document.querySelector('{added}')"),
        Duration::from_secs(10)
    ));
    assert!(text(&mut b, added).contains(&format!("from {evil}")));
    assert!(text(&mut b, row).contains("Remove"));
    let cfg: Value =
        serde_json::from_slice(&std::fs::read(site.t.file("config.json")).unwrap()).unwrap();
    assert_eq!(cfg["services"], json!(["chat"]));
    // And out again.
    b.eval(&format!(
        "document.querySelector('{row} button').click(); true"
    ));
    assert!(b.wait_for(
        &format!("!document.querySelector('{added}')"),
        Duration::from_secs(10)
    ));
    assert_eq!(b.eval("String(window.pwned)"), json!("undefined"));
    assert_eq!(b.errors, Vec::<String>::new());

    // In Russian: the catalog's column and the counts translated.
    open_view(&mut b, server.addr, "ripe-cidr-collector/sources", "ru");
    let shown = text(&mut b, "#rcc-sources .rcc-services");
    assert!(
        shown.contains("Сервисы") && shown.contains("имена хостов: 1"),
        "{shown}"
    );
}
