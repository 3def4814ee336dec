//! The fetch history of each source in LuCI's status view (issue 28, item 5): what
//! `status --json` gives per source (its last 30 fetches) shown as the web page shows
//! it, the values of each answer in one line with a held one marked, and opened a row
//! per fetch; an upstream with markup shown as text, in English and in Russian.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::luci::{luci_server, open_view, Patch};
use crate::web::{browser, site, text};

/// What AS64500's history says: an applied answer of 100 values, then a held one of
/// 20 from an upstream whose name is markup (as a hostile or damaged database could
/// hold it); the held answer is also the source's `held`.
fn history_64500(upstream: &'static str) -> Patch {
    Arc::new(move |method, answer| {
        if method != "status" {
            return;
        }
        let held = json!({"time": "2026-09-21T14:13:20Z", "upstream": upstream, "values": 20,
            "stored": 100, "added": 0, "removed": 0, "state": "held",
            "since": "2026-09-21T14:13:20Z"});
        let applied = json!({"time": "2026-09-20T14:13:20Z", "upstream": "ripestat",
            "values": 100, "stored": 0, "added": 100, "removed": 0, "state": "applied"});
        for s in answer["overview"]["groups"][0]["sources"]
            .as_array_mut()
            .unwrap()
        {
            if s["source"] == "64500" {
                s["history"] = json!([applied, held]);
                s["held"] = held.clone();
            }
        }
    })
}

/// The text of every element `sel` matches, in order.
fn texts(b: &mut crate::browser::Browser, sel: &str) -> Value {
    b.eval(&format!(
        "[...document.querySelectorAll({})].map(e => e.textContent)",
        json!(sel)
    ))
}

#[test]
fn luci_status_shows_each_sources_fetch_history() {
    let Some(mut b) = browser() else { return };
    // AS62041 fetched once for real (4 values from the fake RIPEstat); AS64500 failed.
    let site = site(&["62041", "64500"], &[]);
    let img = "<img src=x onerror=window.pwned=1>";
    let server = luci_server(site.t.path().to_path_buf(), &[], Some(history_64500(img)));
    open_view(&mut b, server.addr, "ripe-cidr-collector/status", "en");
    let real = "tr[data-source=\"62041\"] .rcc-history";
    assert_eq!(text(&mut b, &format!("{real} summary")), "History: 4");
    let cells = texts(&mut b, &format!("{real} tr:last-child td"));
    let cells: Vec<&str> = cells
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(
        cells[1..],
        ["ripestat", "4", "+4", "-0", "applied"],
        "{cells:?}"
    );
    assert!(!cells[0].is_empty(), "the fetch's time");

    let held = "tr[data-source=\"64500\"] .rcc-history";
    assert_eq!(text(&mut b, &format!("{held} summary")), "History: 100 20!");
    assert_eq!(
        texts(&mut b, &format!("{held} summary .rcc-held-fetch")),
        json!(["20!"]),
        "only the held answer is marked"
    );
    let rows = texts(&mut b, &format!("{held} tr.rcc-held-fetch td"));
    assert_eq!(rows[1], img, "the upstream as text: {rows}");
    assert_eq!(rows[5], "held", "{rows}");
    // The sentence that explains a held source is still there beside it.
    assert!(text(&mut b, "tr[data-source=\"64500\"] .rcc-held").starts_with("Held since "));
    assert_eq!(b.eval("document.querySelectorAll('img').length"), 0);
    assert_eq!(b.eval("String(window.pwned)"), "undefined");
    // The status is drawn again every 30 s: a history opened stays open, no other.
    let opened =
        "[...document.querySelectorAll('details[open]')].map(d => d.closest('tr').dataset.source)";
    b.eval(&format!("document.querySelector('{held}').open = true"));
    b.eval("window.standin.polls[0]().then(() => true)");
    assert_eq!(b.eval(opened), json!(["64500"]));
    assert_eq!(b.errors, Vec::<String>::new());

    open_view(&mut b, server.addr, "ripe-cidr-collector/status", "ru");
    assert_eq!(text(&mut b, &format!("{held} summary")), "История: 100 20!");
    let rows = texts(&mut b, &format!("{held} tr.rcc-held-fetch td"));
    assert_eq!(rows[5], "удержан", "{rows}");
    assert_eq!(
        texts(&mut b, &format!("{held} th")),
        json!([
            "Время",
            "Вышестоящий источник",
            "Значения",
            "Добавлено",
            "Удалено",
            "Итог"
        ])
    );
    assert_eq!(b.errors, Vec::<String>::new());
}
