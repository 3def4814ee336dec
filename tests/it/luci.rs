//! `luci-app-ripe-cidr-collector` in headless Chromium: the views (and the Status ->
//! Overview include) loaded against a small stand-in for the LuCI runtime
//! (`openwrt/tests/luci/`) whose ubus calls are answered as rpcd and the ucode plugin
//! answer them (luci_plugin.rs: the plugin's own tables, the real binary), refused as
//! rpcd refuses what the ACL does not grant; in English and in Russian (the catalog
//! po2lmo makes, looked up by LuCI's hash), with no JS error.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::browser::Browser;
use crate::common::*;
use crate::luci_i18n::{russian, russian_tr, view_files};
use crate::luci_plugin::{granted, root, Plugin, APP, OBJECT};
use crate::web::site;

/// ubus: permission denied, what rpcd answers for a method the ACL does not grant.
const PERMISSION_DENIED: i64 = 6;

fn view_path(path: &str) -> PathBuf {
    root()
        .join(APP)
        .join("htdocs/luci-static/resources/view")
        .join(format!("{path}.js"))
}

#[test]
fn menu_and_acl_name_each_other() {
    let menu = std::fs::read_to_string(
        root()
            .join(APP)
            .join("root/usr/share/luci/menu.d/luci-app-ripe-cidr-collector.json"),
    )
    .unwrap();
    let menu: Value = serde_json::from_str(&menu).unwrap();
    let top = &menu["admin/services/ripe-cidr-collector"];
    assert_eq!(top["title"], "IP prefix lists");
    assert_eq!(
        top["depends"]["acl"],
        json!(["luci-app-ripe-cidr-collector"])
    );
    for v in ["status", "sources", "settings"] {
        let entry = &menu[format!("admin/services/ripe-cidr-collector/{v}")];
        assert_eq!(entry["action"]["path"], format!("ripe-cidr-collector/{v}"));
        assert!(view_path(&format!("ripe-cidr-collector/{v}")).is_file());
    }
}

/// Colours are the theme's variables (LuCI's bootstrap and its descendants define
/// them), with a fallback only inside `var()`.
#[test]
fn views_use_the_theme_colours() {
    for f in view_files() {
        let src = std::fs::read_to_string(&f).unwrap();
        for piece in src.split("color:").skip(1) {
            assert!(
                piece.starts_with("var(--"),
                "{}: color:{}",
                f.display(),
                &piece[..20]
            );
        }
    }
}

/// Percent-decodes a query parameter (the stand-in encodes with encodeURIComponent).
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn file(path: PathBuf, content_type: &str) -> Reply {
    let mut r = Reply::json(200, std::fs::read(path).unwrap());
    r.headers = vec![("Content-Type".into(), content_type.into())];
    r
}

/// Changes an answer of the plugin before the view gets it: (method, answer).
pub(crate) type Patch = Arc<dyn Fn(&str, &mut Value) + Send + Sync>;

/// What the stand-in talks to: its files, the views, the shipped UCI file, the
/// translations (`/tr`, Russian when the query says `lang=ru`), and `/ubus`, which
/// answers `[status, reply]` as rpcd and the plugin would for methods the ACL grants
/// and that `deny` does not name, and permission denied otherwise.
pub(crate) fn luci_server(
    dir: PathBuf,
    deny: &'static [&'static str],
    patch: Option<Patch>,
) -> FakeServer {
    let allowed = granted();
    let plugin = Plugin::load();
    let tr = russian_tr();
    FakeServer::start(move |rq| {
        let (path, query) = rq.url.split_once('?').unwrap_or((&rq.url, ""));
        let param = |k: &str| {
            query
                .split('&')
                .find_map(|kv| kv.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
                .map(decode)
                .unwrap_or_default()
        };
        let tests = root().join("openwrt/tests/luci");
        match path {
            "/" => file(tests.join("index.html"), "text/html"),
            "/standin.js" => file(tests.join("standin.js"), "text/javascript"),
            "/tr" if query.split('&').any(|kv| kv == "lang=ru") => Reply::json(200, tr.to_string()),
            "/tr" => Reply::json(200, "{}"),
            "/uci/ripe-cidr-collector" => file(
                root().join("openwrt/ripe-cidr-collector/files/ripe-cidr-collector.config"),
                "text/plain",
            ),
            "/ubus" if param("object") == "network.interface" => {
                crate::luci_routes::netifd_dump(&param("method"))
            }
            "/ubus" => {
                let method = param("method");
                let ok = param("object") == OBJECT
                    && allowed.contains(&method)
                    && !deny.contains(&method.as_str());
                if !ok {
                    return Reply::json(200, json!([PERMISSION_DENIED]).to_string());
                }
                let args: Value = serde_json::from_str(&param("params")).unwrap();
                let (code, mut answer) = plugin.call(&dir, &method, &args);
                if let Some(p) = &patch {
                    p(&method, &mut answer);
                }
                let reply = if code == 0 {
                    json!([0, answer])
                } else {
                    json!([code])
                };
                Reply::json(200, reply.to_string())
            }
            p => match p.strip_prefix("/view/") {
                Some(v) if !v.contains("..") && view_path(v.trim_end_matches(".js")).is_file() => {
                    file(view_path(v.trim_end_matches(".js")), "text/javascript")
                }
                _ => Reply::json(404, "{}"),
            },
        }
    })
}

/// Loads `path` (a view under view/), in Russian with `lang = "ru"`.
pub(crate) fn open_view(b: &mut Browser, server: SocketAddr, path: &str, lang: &str) {
    // A query per view: a change of the fragment alone would not load the page again.
    b.goto(&format!(
        "http://{server}/?{}&lang={lang}#{path}",
        path.replace('/', "_")
    ));
    assert!(
        b.wait_for("window.standinDone === true", Duration::from_secs(20)),
        "{path} did not render"
    );
    assert_eq!(b.errors, Vec::<String>::new(), "{path}");
}

pub(crate) fn text(b: &mut Browser, sel: &str) -> String {
    let v = b.eval(&format!(
        "(document.querySelector({}) || {{}}).textContent || ''",
        json!(sel)
    ));
    v.as_str().unwrap_or_default().to_string()
}

/// AS64500's answer held (what `status --json` says of a held source, trust.rs).
fn held_64500() -> Patch {
    Arc::new(|method, answer| {
        if method != "status" {
            return;
        }
        for s in answer["overview"]["groups"][0]["sources"]
            .as_array_mut()
            .unwrap()
        {
            if s["source"] == "64500" {
                s["held"] = json!({"time": "2026-09-21T14:13:20Z", "upstream": "ripestat",
                    "values": 20, "stored": 100, "added": 0, "removed": 80, "state": "held",
                    "since": "2026-09-21T14:13:20Z"});
            }
        }
    })
}

fn browser() -> Option<Browser> {
    let b = Browser::start();
    if b.is_none() {
        cannot_run("chromium is not installed (apt-get install chromium)");
    }
    b
}

#[test]
fn luci_views_render_the_plugins_answers() {
    let Some(mut b) = browser() else { return };
    let site = site(&["62041", "64500"], &[]);
    let server = luci_server(site.t.path().to_path_buf(), &[], Some(held_64500()));
    let addr = server.addr;

    open_view(&mut b, addr, "ripe-cidr-collector/status", "en");
    let facts = text(&mut b, "#rcc-facts");
    assert!(
        facts.contains("Stored values") && facts.contains("ASN: 4"),
        "{facts}"
    );
    let row = text(&mut b, "tr[data-source=\"62041\"]");
    assert!(row.contains("AS62041") && row.contains('4'), "{row}");
    let held = text(&mut b, "tr[data-source=\"64500\"] .rcc-held");
    assert!(
        held.starts_with("Held since ") && held.contains("shrank: it has 20 of 100 stored values"),
        "{held}"
    );
    b.eval("document.querySelector('#rcc-address').value = '149.154.167.99'; document.querySelector('#rcc-lookup').click(); true");
    assert!(b.wait_for(
        "!!document.querySelector('.rcc-match')",
        Duration::from_secs(10)
    ));
    assert!(text(&mut b, ".rcc-match").contains("AS62041"));
    // The box walks the chain: stored holds, the kernel step is the broken link.
    assert_eq!(
        b.eval("[...document.querySelectorAll('.rcc-step')].map(l => l.className).join(' ')"),
        "rcc-step rcc-ok rcc-step rcc-broken"
    );
    assert!(text(&mut b, ".rcc-broken").starts_with("kernel set: "));
    assert!(text(&mut b, ".rcc-broken").contains("Fix: add {\"load\""));
    assert_eq!(
        text(&mut b, ".rcc-verdict"),
        "149.154.167.99: stored in group default, but no output loads group default's sets"
    );

    open_view(&mut b, addr, "status/include/70_ripe-cidr-collector", "en");
    let overview = text(&mut b, "#view");
    for want in [
        "IP prefix lists",
        "no heartbeat recorded",
        "ASN: 4",
        "Held sources",
        "1, waiting",
    ] {
        assert!(overview.contains(want), "{want:?} not in {overview}");
    }
    assert_eq!(
        b.eval("document.querySelector('.rcc-overview a').getAttribute('href')"),
        "/cgi-bin/luci/admin/services/ripe-cidr-collector/status"
    );

    open_view(&mut b, addr, "ripe-cidr-collector/sources", "en");
    assert!(text(&mut b, "#rcc-sources").contains("AS64500"));
    b.eval(
        "{ const f = document.querySelector('.rcc-add'); f.querySelector('[name=source]').value = 'AS64496';
           f.querySelector('button').click(); true }",
    );
    assert!(b.wait_for(
        "!!document.querySelector('#rcc-sources tr[data-source=\"64496\"]')",
        Duration::from_secs(10)
    ));
    assert!(text(&mut b, "#notifications").contains("added"));
    let listed = site.t.run(&["asn", "list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("64496"));

    open_view(&mut b, addr, "ripe-cidr-collector/settings", "en");
    let listen = b.eval("document.querySelector('[data-name=listen] input').value");
    assert_eq!(listen, "127.0.0.1:8080");
    let level = b.eval("document.querySelector('[data-name=log_level] select').value");
    assert_eq!(level, "info");
    assert_eq!(b.errors, Vec::<String>::new());
    crate::luci_settings::settings_refuse_paths_the_init_script_refuses(&mut b);
    failed_calls_are_shown(&mut b);
}

/// Every view and the overview box in Russian: the catalog's translations shown, no
/// English string of the catalog left, the held sentence in Russian, no JS error.
#[test]
fn luci_views_in_russian() {
    let Some(mut b) = browser() else { return };
    let site = site(&["62041", "64500"], &[]);
    // The default group's sets loaded, as status.json says after a load.
    let held = held_64500();
    let patch: Patch = Arc::new(move |method, answer| {
        held(method, answer);
        if method == "status" {
            answer["overview"]["daemon"]["kernel_sets"] =
                json!({"default": {"elements": 12, "estimate_bytes": 4096}});
        }
    });
    let server = luci_server(site.t.path().to_path_buf(), &[], Some(patch));
    let ru = russian();
    for (path, shows) in [
        (
            "ripe-cidr-collector/status",
            &[
                "Списки IP-префиксов",
                "Служба",
                "Хранимые значения",
                "Проверить адрес",
                "Собрать сейчас",
                "Множества ядра, группа по умолчанию",
                "ASN: ",
            ][..],
        ),
        (
            "ripe-cidr-collector/sources",
            &[
                "Списки IP-префиксов: источники",
                "Источник",
                "Добавить",
                "Удалить",
            ][..],
        ),
        (
            "ripe-cidr-collector/settings",
            &[
                "Списки IP-префиксов: настройки",
                "Каталог данных",
                "Снимок во флеш-памяти",
                "сведения",
            ][..],
        ),
        (
            "status/include/70_ripe-cidr-collector",
            &[
                "Списки IP-префиксов",
                "Демон",
                "Удержанные источники",
                "Подробнее",
                "ASN: ",
            ][..],
        ),
    ] {
        open_view(&mut b, server.addr, path, "ru");
        let page = b.eval("document.getElementById('view').innerText + ' ' + [...document.querySelectorAll('#view option')].map(o => o.textContent).join(' ')");
        let page = page.as_str().unwrap();
        for want in shows {
            assert!(page.contains(want), "{path}: {want:?} not in {page}");
        }
        // The counts' kinds by their names, not the keys ("asn 15").
        for key in ["asn ", "fqdn ", "feed ", "country "] {
            assert!(!page.contains(key), "{path}: the key {key:?} in {page}");
        }
        for (id, s) in &ru {
            let english = id.contains(' ') && !id.contains('%') && id != s;
            assert!(
                !(english && page.contains(id.as_str())),
                "{path}: {id:?} left in English"
            );
        }
    }
    open_view(&mut b, server.addr, "ripe-cidr-collector/status", "ru");
    let held = text(&mut b, "tr[data-source=\"64500\"] .rcc-held");
    assert!(
        held.starts_with("Удержано с ")
            && held.contains("ответ сократился: в нём 20 из 100 хранимых значений"),
        "{held}"
    );
    assert!(held.ends_with("команда «confirm»."), "{held}");
    b.eval("document.querySelector('#rcc-address').value = '149.154.167.99'; document.querySelector('#rcc-lookup').click(); true");
    assert!(b.wait_for(
        "!!document.querySelector('.rcc-broken')",
        Duration::from_secs(10)
    ));
    let broken = text(&mut b, ".rcc-broken");
    assert!(
        broken.starts_with("множество ядра: ") && broken.contains("Исправление: "),
        "{broken}"
    );
    assert_eq!(b.errors, Vec::<String>::new());
}

/// `reject: true`: a call rpcd refuses (here: permission denied) is shown as an
/// error, in the page, the box and the sources page, never as an empty status.
fn failed_calls_are_shown(b: &mut Browser) {
    let site = site(&["62041"], &[]);
    let server = luci_server(site.t.path().to_path_buf(), &["status", "add"], None);
    let denied =
        "RPC call to luci.ripe-cidr-collector/status failed with ubus code 6: Permission denied";
    open_view(b, server.addr, "ripe-cidr-collector/status", "en");
    let shown = text(b, "#rcc-status");
    assert_eq!(shown, format!("Cannot read the status: {denied}"));
    open_view(
        b,
        server.addr,
        "status/include/70_ripe-cidr-collector",
        "en",
    );
    assert_eq!(
        text(b, ".rcc-overview"),
        format!("Cannot read the status: {denied}")
    );
    open_view(b, server.addr, "ripe-cidr-collector/sources", "en");
    let shown = text(b, "#rcc-sources");
    // Only the message: L.raise appended LuCI's stack ("  at handleCallReply ...").
    assert!(shown.contains(denied) && !shown.contains(" at "), "{shown}");
    assert_eq!(b.eval("document.querySelectorAll('.rcc-add').length"), 0);
}

/// Stored XSS through the LuCI app: LuCI's E() sets innerHTML for a bare string child,
/// and the stand-in does as LuCI does (and fails the view). A feed URL with markup
/// stored by an earlier version, failure texts with markup (as an earlier version
/// copied answers into status.json), and error texts echoing what was typed must show
/// as text and run no script in the admin's session.
#[test]
fn luci_views_show_markup_as_text() {
    let Some(mut b) = browser() else { return };
    let site = site(&["62041", "64500"], &[]);
    let dir = site.t.path();
    let img = |n: u32| format!("<img src=x onerror=window.pwned={n}>");
    let feed = format!("https://evil.example/{}", img(1));
    let mut db = ripe_cidr_collector::db::open(&site.t.paths()).unwrap();
    let value = vec!["192.0.2.0/24".to_string()];
    let now = ripe_cidr_collector::util::unix_now();
    db.merge_source(
        ripe_cidr_collector::source::Kind::Feed,
        &feed,
        &value,
        now,
        7,
    )
    .unwrap();
    let status = std::fs::read_to_string(site.t.file("status.json")).unwrap();
    let mut status: Value = serde_json::from_str(&status).unwrap();
    status["failures"]["AS64500"] = json!(img(2));
    status["last_error"] = json!(img(3));
    status["output_failures"] = json!({ img(4): img(5) });
    std::fs::write(site.t.file("status.json"), status.to_string()).unwrap();
    let server = luci_server(dir.to_path_buf(), &[], None);
    let addr = server.addr;
    let safe = |b: &mut Browser, what: &str| {
        assert_eq!(
            b.eval("String(window.pwned)"),
            "undefined",
            "{what}: a script ran"
        );
        assert_eq!(
            b.eval("document.querySelectorAll('img').length"),
            0,
            "{what}"
        );
    };

    open_view(&mut b, addr, "ripe-cidr-collector/status", "en");
    safe(&mut b, "status");
    assert!(text(&mut b, "tr[data-source=\"64500\"]").contains(&img(2)));
    let facts = text(&mut b, "#rcc-facts");
    for n in [3, 4, 5] {
        assert!(facts.contains(&img(n)), "{facts}");
    }
    open_view(&mut b, addr, "status/include/70_ripe-cidr-collector", "en");
    safe(&mut b, "overview");
    assert!(text(&mut b, ".rcc-overview").contains(&img(3)));
    open_view(&mut b, addr, "ripe-cidr-collector/status", "en");
    lookups_show_markup_as_text(&mut b, &feed, &img(6));

    // Adding a feed URL with markup: refused, the error naming it, shown as text.
    open_view(&mut b, addr, "ripe-cidr-collector/sources", "en");
    b.eval(&format!(
        "{{ const f = document.querySelector('.rcc-add');
           f.querySelector('[name=kind]').value = 'feed';
           f.querySelector('[name=source]').value = {};
           f.querySelector('button').click(); true }}",
        json!(format!("https://x.example/{}", img(7)))
    ));
    assert!(b.wait_for(
        "document.querySelector('#notifications').textContent !== ''",
        Duration::from_secs(10)
    ));
    safe(&mut b, "sources");
    let note = text(&mut b, "#notifications");
    assert!(
        note.contains(&img(7)) && note.contains("invalid feed"),
        "{note}"
    );
    assert_eq!(b.errors, Vec::<String>::new());
}

/// A lookup that finds the feed with markup in its URL, and one whose error echoes
/// what was typed: both shown as text.
fn lookups_show_markup_as_text(b: &mut Browser, feed: &str, typed: &str) {
    for (address, shows) in [("192.0.2.1", feed), (typed, typed)] {
        b.eval(&format!(
            "document.querySelector('#rcc-lookup-result').replaceChildren();
             document.querySelector('#rcc-address').value = {};
             document.querySelector('#rcc-lookup').click(); true",
            json!(address)
        ));
        assert!(b.wait_for(
            "document.querySelector('#rcc-lookup-result').textContent !== ''",
            Duration::from_secs(10)
        ));
        assert_eq!(
            b.eval("String(window.pwned)"),
            "undefined",
            "{address}: a script ran"
        );
        assert_eq!(
            b.eval("document.querySelectorAll('img').length"),
            0,
            "{address}"
        );
        let shown = text(b, "#rcc-lookup-result");
        assert!(shown.contains(shows), "{address}: {shown}");
    }
}
