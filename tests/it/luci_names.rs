//! Names in LuCI's Sources view, in headless Chromium against the stand-in runtime
//! (luci.rs): each ASN's holder beside its number (`status --json`'s `holder`), and
//! the search box (the plugin's `search`, the CLI's `asn search --json`) whose "Use"
//! fills in the add form. Holders are text nodes: `<img src=x onerror=...>` shows
//! as those characters. In Russian too.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::luci::{luci_server, open_view, text, Patch};
use crate::web::{browser, site};

const EVIL: &str = "<img src=x onerror=\"window.pwned=1\">";

/// AS62041's holder in the status; the search answered as `asn search --json`
/// answers (the fake RIPEstat of `site` has no searchcomplete).
fn names() -> Patch {
    Arc::new(|method, answer| match method {
        "status" => {
            for s in answer["overview"]["groups"][0]["sources"]
                .as_array_mut()
                .unwrap()
            {
                if s["source"] == "62041" {
                    s["holder"] = json!(EVIL);
                }
            }
        }
        "search" => {
            *answer = json!({"query": "telegram", "asns": [
                {"asn": "211157", "holder": EVIL, "announced": true, "groups": []},
                {"asn": "62014", "holder": "TELEGRAM", "announced": false, "groups": []}]});
        }
        _ => {}
    })
}

#[test]
fn luci_sources_show_holders_and_search_fills_the_add_form() {
    let Some(mut b) = browser() else { return };
    let site = site(&["62041", "64500"], &[]);
    let server = luci_server(site.t.path().to_path_buf(), &[], Some(names()));
    for lang in ["en", "ru"] {
        open_view(&mut b, server.addr, "ripe-cidr-collector/sources", lang);
        let row = text(&mut b, "tr[data-source=\"62041\"] .rcc-holder");
        assert_eq!(row, format!(" {EVIL}"));
        let unknown = text(&mut b, "tr[data-source=\"64500\"] .rcc-holder");
        let want = if lang == "ru" {
            "имя неизвестно"
        } else {
            "name unknown"
        };
        assert!(unknown.contains(want), "{unknown}");
        b.eval(
            "{ document.querySelector('#rcc-search-text').value = 'telegram';
               document.querySelector('#rcc-search-go').click(); true }",
        );
        assert!(b.wait_for(
            "document.querySelectorAll('.rcc-found').length === 2",
            Duration::from_secs(10)
        ));
        let found = text(&mut b, ".rcc-found[data-asn=\"211157\"]");
        assert!(found.contains(EVIL), "{found}");
        let said = if lang == "ru" {
            "не анонсируется"
        } else {
            "not announced"
        };
        assert!(text(&mut b, ".rcc-found[data-asn=\"62014\"]").contains(said));
        assert_eq!(
            b.eval("document.querySelectorAll('#rcc-sources img, #rcc-search img').length"),
            0
        );
        b.eval("document.querySelector('.rcc-found button').click(); true");
        assert_eq!(
            b.eval("document.querySelector('.rcc-add [name=source]').value"),
            "AS211157"
        );
        assert_eq!(b.eval("String(window.pwned)"), "undefined");
        assert_eq!(b.errors, Vec::<String>::new());
    }
}
