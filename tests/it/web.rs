//! The built-in web page in headless Chromium, against the real binary (`serve`) after
//! a `run` against a fake RIPEstat and DoH on 127.0.0.1: what it shows, its add form,
//! its lookup, and that it logs no JS error. Also the screenshots in `docs/`
//! (`docs/screenshots.sh`).

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};

use crate::browser::Browser;
use crate::common::*;

/// A fake RIPEstat: AS62041 and AS64496 announce prefixes, AS64500 fails.
fn fake_ripe() -> FakeServer {
    FakeServer::start(|rq| match resource_of(&rq.url).as_deref() {
        Some("62041") => Reply::json(
            200,
            ripe_body(&[
                "91.108.4.0/22".into(),
                "91.108.8.0/22".into(),
                "149.154.160.0/20".into(),
                "2001:b28:f23d::/48".into(),
            ]),
        ),
        Some("64496") => Reply::json(200, ripe_body(&["198.51.100.0/24".into()])),
        Some("64500") => Reply::json(503, "busy"),
        _ => Reply::json(200, ripe_body(&[])),
    })
}

/// A fake DoH server: every name has one IPv4 address.
fn fake_doh() -> FakeServer {
    FakeServer::start(|rq| {
        let param = |k: &str| {
            rq.url
                .split(['?', '&'])
                .find_map(|kv| kv.strip_prefix(k))
                .unwrap_or("")
                .to_string()
        };
        let name = param("name=");
        let answer = if param("type=") == "A" {
            json!([{"name": name, "type": 1, "TTL": 60, "data": "203.0.113.7"}])
        } else {
            json!([])
        };
        Reply::json(200, json!({"Status": 0, "Answer": answer}).to_string())
    })
}

/// Upstreams kept alive while the test runs.
pub(crate) struct Site {
    _ripe: FakeServer,
    _doh: FakeServer,
    pub t: TestDir,
}

/// A data directory after one `run` (AS64500 failing), and its config.
pub(crate) fn site(asns: &[&str], fqdns: &[&str]) -> Site {
    let (ripe, doh) = (fake_ripe(), fake_doh());
    let t = TestDir::new();
    t.config(&json!({
        "asns": asns, "fqdns": fqdns,
        "ripe": {"url": ripe.url("/data/announced-prefixes/data.json"), "timeout_seconds": 2, "retries": 0},
        "dns": {"resolver": "doh", "doh_url": doh.url("/dns-query"), "timeout_seconds": 2}
    }));
    let out = t.run(&["run"]);
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Site {
        _ripe: ripe,
        _doh: doh,
        t,
    }
}

pub(crate) fn browser() -> Option<Browser> {
    let b = Browser::start();
    if b.is_none() {
        cannot_run("chromium is not installed (apt-get install chromium)");
    }
    b
}

pub(crate) fn text(b: &mut Browser, sel: &str) -> String {
    let v = b.eval(&format!(
        "(document.querySelector({}) || {{}}).textContent || ''",
        json!(sel)
    ));
    v.as_str().unwrap_or_default().to_string()
}

fn open_page(b: &mut Browser, addr: SocketAddr) {
    b.goto(&format!("http://{addr}/"));
    let loaded = b.wait_for(
        "!!document.querySelector('tr[data-source=\"62041\"]')",
        Duration::from_secs(20),
    );
    assert!(loaded, "no source rows: {}", text(b, "body"));
}

#[test]
fn page_shows_sources_adds_and_looks_up() {
    let Some(mut b) = browser() else { return };
    let site = site(&["62041", "64500"], &[]);
    let (_serve, addr) = site.t.spawn_listening(&["serve"]);
    open_page(&mut b, addr);

    // Sources with their stored values and the failure of the last run, and counts.
    let row = text(&mut b, "tr[data-source=\"62041\"]");
    assert!(
        row.contains("AS62041") && row.contains('4') && row.contains("ok"),
        "{row}"
    );
    let failed = text(&mut b, "tr[data-source=\"64500\"]");
    assert!(failed.contains("503"), "{failed}");
    let facts = text(&mut b, "#facts");
    assert!(
        facts.contains("Stored values") && facts.contains("ASN 4"),
        "{facts}"
    );
    assert!(facts.contains("Last success"), "{facts}");

    // Adding through the form (a same-origin POST, Origin header included).
    b.eval(
        "{ const f = document.querySelector('.add-form');
         f.kind.value = 'asn'; f.source.value = 'AS64496';
         const go = f.querySelector('button[type=submit]'); go.focus(); go.click(); true }",
    );
    let added = b.wait_for(
        "!!document.querySelector('tr[data-source=\"64496\"]')",
        Duration::from_secs(10),
    );
    assert!(added, "{}", text(&mut b, "#groups"));
    assert!(text(&mut b, "[data-msg]").contains("added"));
    let (status, body) = http_get(addr, "/asns");
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["asns"], json!(["62041", "64500", "64496"]));

    // Removing asks once more, then the source is gone from the page and the API.
    let remove = "document.querySelector('tr[data-source=\"64500\"] button.rm').click(); true";
    b.eval(remove);
    assert_eq!(
        b.eval("document.querySelector('tr[data-source=\"64500\"] button.rm').textContent"),
        "Sure?"
    );
    b.eval(remove);
    let removed = b.wait_for(
        "!document.querySelector('tr[data-source=\"64500\"]')",
        Duration::from_secs(10),
    );
    assert!(removed, "{}", text(&mut b, "#groups"));
    let (_, body) = http_get(addr, "/asns");
    assert!(!body.contains("64500"), "{body}");

    // Lookup of an address inside a stored prefix.
    b.eval(
        "document.querySelector('#ip').value = '149.154.167.99';
         document.querySelector('#lookup-form button').click(); true",
    );
    let found = b.wait_for(
        "!!document.querySelector('#lookup-result tr.match')",
        Duration::from_secs(10),
    );
    assert!(found, "{}", text(&mut b, "#lookup"));
    let m = text(&mut b, "#lookup-result");
    assert!(
        m.contains("149.154.160.0/20") && m.contains("AS62041"),
        "{m}"
    );
    // The same box walks the chain (`GET /explain`): stored holds (green), and with no
    // output loading the sets the kernel step is the broken link (red, with its fix).
    let steps = b.eval(
        "[...document.querySelectorAll('#explain-steps li')].map(l => l.className + ': ' + l.textContent).join('\\n')",
    );
    let steps = steps.as_str().unwrap_or_default().to_string();
    assert!(
        steps.starts_with("step ok: ✓ stored 149.154.160.0/20 from AS62041"),
        "{steps}"
    );
    assert!(
        steps.contains("\nstep broken: ✗ kernel no output loads group default's sets"),
        "{steps}"
    );
    assert!(
        steps.contains("fix: add {\"load\": \"nft\", \"group\": \"default\"}"),
        "{steps}"
    );
    let verdict = text(&mut b, "#lookup-msg");
    assert_eq!(
        verdict,
        "149.154.167.99: stored in group default, but no output loads group default's sets"
    );
    assert_eq!(
        b.eval("document.querySelector('#lookup-msg').className"),
        "msg bad"
    );

    // The changes of the run are listed.
    let changes = text(&mut b, "#changes-list");
    assert!(changes.contains("91.108.4.0/22"), "{changes}");

    // A phone's width: everything fits, nothing scrolls sideways.
    b.viewport(360, true);
    let wide = b.eval("document.documentElement.scrollWidth");
    assert!(
        wide.as_u64().unwrap() <= 360,
        "page is {wide} px wide at 360"
    );
    assert_eq!(b.errors, Vec::<String>::new());
}

#[test]
fn page_asks_for_the_token() {
    let Some(mut b) = browser() else { return };
    let site = site(&["62041"], &[]);
    let mut cfg: Value =
        serde_json::from_slice(&std::fs::read(site.t.file("config.json")).unwrap()).unwrap();
    cfg["api"] = json!({"token": "s3cret"});
    site.t.config(&cfg);
    let (_serve, addr) = site.t.spawn_listening(&["serve"]);
    open_page(&mut b, addr);
    let visible = "!document.querySelector('.add-form input[name=token]').hidden";
    assert_eq!(b.eval(visible), json!(true));
    b.eval(
        "{ const f = document.querySelector('.add-form');
         f.source.value = 'AS64496'; f.token.value = 's3cret';
         f.querySelector('button[type=submit]').click(); true }",
    );
    assert!(b.wait_for(
        "!!document.querySelector('tr[data-source=\"64496\"]')",
        Duration::from_secs(10)
    ));
    // A wrong token: the page says so, nothing changes.
    b.eval(
        "{ sessionStorage.clear(); const f = document.querySelector('.add-form');
         f.source.value = 'AS64497'; f.token.value = 'wrong';
         f.querySelector('button[type=submit]').click(); true }",
    );
    assert!(b.wait_for(
        "document.querySelector('[data-msg]').textContent.includes('token')",
        Duration::from_secs(10)
    ));
    let (_, body) = http_get(addr, "/asns");
    assert!(!body.contains("64497"), "{body}");
    // The 401 is the one error the browser logs.
    assert!(
        b.errors.len() == 1 && b.errors[0].contains("401"),
        "{:?}",
        b.errors
    );
}

#[test]
fn page_shows_each_group_and_adds_to_it() {
    let Some(mut b) = browser() else { return };
    let site = site(&["62041"], &[]);
    let mut cfg: Value =
        serde_json::from_slice(&std::fs::read(site.t.file("config.json")).unwrap()).unwrap();
    cfg["groups"] = json!({"video": {"asns": ["64500"]}});
    site.t.config(&cfg);
    let (_serve, addr) = site.t.spawn_listening(&["serve"]);
    open_page(&mut b, addr);
    let video = "section.group[data-group=\"video\"]";
    assert!(text(&mut b, video).contains("Group video"));
    assert!(text(&mut b, &format!("{video} tr[data-source=\"64500\"]")).contains("AS64500"));
    assert!(!text(&mut b, "section.group[data-group=\"default\"]").contains("AS64500"));
    b.eval(&format!(
        "{{ const f = document.querySelector('{video} .add-form');
           f.source.value = 'AS64496'; f.querySelector('button[type=submit]').click(); true }}"
    ));
    assert!(b.wait_for(
        &format!("!!document.querySelector('{video} tr[data-source=\"64496\"]')"),
        Duration::from_secs(10)
    ));
    let (_, body) = http_get(addr, "/asns?group=video");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["asns"], json!(["64500", "64496"]), "{body}");
    let (_, body) = http_get(addr, "/asns?group=default");
    assert!(!body.contains("64496"), "{body}");
    assert_eq!(b.errors, Vec::<String>::new());
}

/// A long feed URL wraps after its `/` and `.` (`<wbr>`, so the text is still the URL)
/// and the form is empty again after a successful add.
#[test]
fn page_wraps_feed_urls_and_clears_the_form() {
    let Some(mut b) = browser() else { return };
    let site = site(&["62041"], &[]);
    let (_serve, addr) = site.t.spawn_listening(&["serve"]);
    open_page(&mut b, addr);
    let url = "https://lists.example.org/very/long/path/to/a/list/of/prefixes.txt";
    b.eval(&format!(
        "{{ const f = document.querySelector('.add-form');
           f.kind.value = 'feed'; f.source.value = '{url}';
           f.querySelector('button[type=submit]').click(); true }}"
    ));
    let row = "tr[data-kind=\"feed\"] td.first";
    assert!(
        b.wait_for(
            &format!("!!document.querySelector('{row}')"),
            Duration::from_secs(10)
        ),
        "{}",
        text(&mut b, "#groups")
    );
    assert!(text(&mut b, row).ends_with(url), "{}", text(&mut b, row));
    let breaks = b.eval(&format!("document.querySelectorAll('{row} wbr').length"));
    assert_eq!(breaks, json!(13), "a break after each / and .");
    assert_eq!(
        b.eval("document.querySelector('.add-form').source.value"),
        ""
    );
    assert_eq!(b.errors, Vec::<String>::new());
}

#[test]
fn page_offers_each_groups_list_in_every_format() {
    let Some(mut b) = browser() else { return };
    let site = site(&["62041"], &[]);
    let mut cfg: Value =
        serde_json::from_slice(&std::fs::read(site.t.file("config.json")).unwrap()).unwrap();
    cfg["groups"] = json!({"video": {"asns": ["62041"]}});
    site.t.config(&cfg);
    let (_serve, addr) = site.t.spawn_listening(&["serve"]);
    open_page(&mut b, addr);
    let video = "section.group[data-group=\"video\"] .downloads";
    let formats = b.eval(&format!(
        "[...document.querySelectorAll('{video} select[aria-label=format] option')].map(o => o.value)"
    ));
    assert_eq!(
        formats,
        json!([
            "text",
            "json",
            "nft",
            "ipset",
            "routeros",
            "singbox",
            "mihomo",
            "mihomo-yaml",
            "wireguard",
            "bird",
            "keenetic",
            "openvpn"
        ])
    );
    // Choosing bird asks for the interface and the family, and the link carries them.
    let href = b.eval(&format!(
        "{{ const d = document.querySelector('{video}');
           const s = d.querySelector('select[aria-label=format]'); s.value = 'bird';
           s.dispatchEvent(new Event('change'));
           const v = d.querySelector('input[aria-label=via]'); v.value = 'wg0';
           v.dispatchEvent(new Event('input'));
           v.hidden ? 'hidden' : d.querySelector('a.dl').getAttribute('href') }}"
    ));
    let href = href.as_str().unwrap().to_string();
    assert_eq!(href, "/addresses?format=bird&group=video&via=wg0&family=4");
    let (status, body) = http_get(addr, &href);
    assert_eq!(status, 200, "{body}");
    assert!(
        body.starts_with("route ") && body.contains(" via \"wg0\";"),
        "{body}"
    );
    // The default group's link names no group.
    let def = b.eval(
        "document.querySelector('section.group[data-group=\"default\"] a.dl').getAttribute('href')",
    );
    assert_eq!(def, json!("/addresses?format=text"));
    assert_eq!(b.errors, Vec::<String>::new());
}

/// Regenerates `docs/screenshot-desktop.png` and `docs/screenshot-phone.png` when
/// `RCC_SCREENSHOTS` names the directory (`docs/screenshots.sh`).
#[test]
#[ignore = "writes the screenshots: docs/screenshots.sh"]
fn screenshots() {
    let dir = std::env::var("RCC_SCREENSHOTS").expect("RCC_SCREENSHOTS=<directory>");
    let Some(mut b) = browser() else { return };
    let site = site(&["62041", "64500"], &["telegram.org", "web.telegram.org"]);
    // A second group, collected by the daemon's first run below.
    let mut cfg: Value =
        serde_json::from_slice(&std::fs::read(site.t.file("config.json")).unwrap()).unwrap();
    cfg["groups"] = json!({"video": {"asns": ["64496"], "fqdns": ["video.example"]}});
    site.t.config(&cfg);
    // The daemon (after the first `run`): the page shows its heartbeat and next run.
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let _daemon = site.t.spawn(&["daemon", "--listen", &addr.to_string()]);
    assert!(wait_listening(addr, Duration::from_secs(10)));
    let ran = eventually(Duration::from_secs(20), || {
        http_get(addr, "/status").1.contains("\"next_run\":\"")
    });
    assert!(ran, "{}", http_get(addr, "/status").1);
    open_page(&mut b, addr);
    b.eval(
        "document.querySelector('#ip').value = '149.154.167.99';
         document.querySelector('#lookup-form button').click(); true",
    );
    b.wait_for(
        "!!document.querySelector('#lookup-result tr.match')",
        Duration::from_secs(10),
    );
    let desktop = b.screenshot(1100, false);
    std::fs::write(format!("{dir}/screenshot-desktop.png"), desktop).unwrap();
    let phone = b.screenshot(360, true);
    std::fs::write(format!("{dir}/screenshot-phone.png"), phone).unwrap();
    assert_eq!(b.errors, Vec::<String>::new());
}

/// The catalog per group (issue 40): a service's title, what it brings and a button
/// that routes it; a title written as markup in a catalog file is shown as text.
#[test]
fn page_lists_the_catalog_per_group_and_adds_a_service() {
    let Some(mut b) = browser() else { return };
    let site = site(&["62041"], &[]);
    let evil = "<img src=x onerror=window.__xss=1>";
    let catalog = json!({"services": [
        {"name": "chat", "title": evil, "about": "<b>bold</b>",
         "asns": [{"asn": "64501", "holder": "X"}], "feeds": [], "domains": ["chat.example.test"],
         "sources": ["https://example.org/"], "reviewed": "2026-12-01"},
        {"name": "video", "title": "Video", "asns": [{"asn": "64502", "holder": "Y"}],
         "feeds": [], "domains": [], "sources": ["https://example.org/"], "reviewed": "2026-12-01"}
    ]});
    std::fs::write(site.t.file("services.json"), catalog.to_string()).unwrap();
    let (_serve, addr) = site.t.spawn_listening(&["serve"]);
    open_page(&mut b, addr);
    let row = "section.group[data-group=\"default\"] tr[data-service=\"chat\"]";
    assert!(b.wait_for(
        &format!("!!document.querySelector('{row}')"),
        Duration::from_secs(10)
    ));
    let shown = text(&mut b, row);
    assert!(
        shown.contains(evil) && shown.contains("<b>bold</b>"),
        "{shown}"
    );
    assert!(shown.contains("1 ASN, 1 host name"), "{shown}");
    assert_eq!(
        b.eval("document.querySelectorAll('#groups img, #groups b b').length"),
        json!(0)
    );
    b.eval(&format!(
        "document.querySelector('{row} button').click(); true"
    ));
    let added = "section.group[data-group=\"default\"] tr[data-source=\"64501\"]";
    assert!(
        b.wait_for(
            &format!("!!document.querySelector('{added}')"),
            Duration::from_secs(10)
        ),
        "{}",
        text(&mut b, "body")
    );
    assert!(text(&mut b, added).contains(&format!("from {evil}")));
    assert!(text(&mut b, row).contains("Remove"));
    let (_, body) = http_get(addr, "/services");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["services"][0]["groups"], json!(["default"]), "{body}");
    assert_eq!(b.eval("window.__xss === undefined"), json!(true));
    assert_eq!(b.errors, Vec::<String>::new());
}

/// The changes of every group, not only `default`; an error older than the last
/// success is not shown as current; the last run's numbers say what they count.
#[test]
fn page_shows_every_groups_changes_and_a_past_error_as_past() {
    let Some(mut b) = browser() else { return };
    let site = site(&["62041", "64496"], &[]);
    let mut cfg: Value =
        serde_json::from_slice(&std::fs::read(site.t.file("config.json")).unwrap()).unwrap();
    cfg["asns"] = json!(["62041"]);
    cfg["groups"] = json!({"video": {"asns": ["64496"]}});
    site.t.config(&cfg);
    let status = site.t.file("status.json");
    let mut st: Value = serde_json::from_slice(&std::fs::read(&status).unwrap()).unwrap();
    assert!(st["last_success"].is_string(), "{st}");
    st["last_error"] = json!("2020-01-01T00:00:00Z: collection failed: an old problem");
    st["last_run_started"] = st["last_success"].clone();
    st["last_run_finished"] = st["last_success"].clone();
    st["last_run_added"] = json!(5);
    st["last_run_removed"] = json!(0);
    std::fs::write(&status, st.to_string()).unwrap();
    let (_serve, addr) = site.t.spawn_listening(&["serve"]);
    open_page(&mut b, addr);
    assert!(
        b.wait_for(
            "document.querySelector('#changes-list').textContent.includes('198.51.100.0/24')",
            Duration::from_secs(10)
        ),
        "AS64496 (group video) missing: {}",
        text(&mut b, "#changes-list")
    );
    let facts = text(&mut b, "#facts");
    assert!(facts.contains("5 values added, 0 removed"), "{facts}");
    assert!(facts.contains("an old problem"), "{facts}");
    let red =
        b.eval("[...document.querySelectorAll('#facts .bad')].map(e => e.textContent).join('|')");
    assert!(
        !red.as_str().unwrap_or_default().contains("old problem"),
        "{red}"
    );
    assert_eq!(b.errors, Vec::<String>::new());
}
