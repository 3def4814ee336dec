//! `luci-app-ripe-cidr-collector`: the rpcd plugin called as rpcd calls it (`list`,
//! and `call METHOD` with JSON on stdin) against the real binary, the ACL against
//! what the views call, and the views loaded in headless Chromium against a small
//! stand-in for the LuCI runtime (`openwrt/tests/luci/`) whose ubus calls run the
//! real plugin.

use std::collections::BTreeSet;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::browser::Browser;
use crate::common::*;
use crate::web::site;

const APP: &str = "openwrt/luci-app-ripe-cidr-collector";
const OBJECT: &str = "luci.ripe-cidr-collector";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn plugin() -> PathBuf {
    root().join(APP).join("root/usr/libexec/rpcd").join(OBJECT)
}

/// Runs the plugin as rpcd does, with the binary and data directory of `dir`.
fn rpcd(dir: &Path, args: &[&str], stdin: &str) -> Value {
    let mut child = Command::new(plugin())
        .args(args)
        .env("RCC_PROG", bin())
        .env("RIPE_DATA_DIR", dir)
        .env_remove("RIPE_DB")
        .env_remove("RIPE_SNAPSHOT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?} {stdin}: not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn call(dir: &Path, method: &str, input: Value) -> Value {
    rpcd(dir, &["call", method], &input.to_string())
}

/// The methods the ACL grants, read and write together.
fn granted() -> BTreeSet<String> {
    let path = root()
        .join(APP)
        .join("root/usr/share/rpcd/acl.d/luci-app-ripe-cidr-collector.json");
    let acl: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let app = &acl["luci-app-ripe-cidr-collector"];
    ["read", "write"]
        .iter()
        .flat_map(|k| app[*k]["ubus"][OBJECT].as_array().unwrap().clone())
        .map(|m| m.as_str().unwrap().to_string())
        .collect()
}

fn view_path(name: &str) -> PathBuf {
    root()
        .join(APP)
        .join("htdocs/luci-static/resources/view/ripe-cidr-collector")
        .join(format!("{name}.js"))
}

/// The ubus methods the views declare (`method: '...'`).
fn used_by_views() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for v in ["status", "sources", "settings"] {
        let src = std::fs::read_to_string(view_path(v)).unwrap();
        for piece in src.split("method: '").skip(1) {
            out.insert(piece.split('\'').next().unwrap().to_string());
        }
    }
    out
}

#[test]
fn acl_grants_exactly_what_the_views_call() {
    let t = TestDir::new();
    let list = rpcd(t.path(), &["list"], "");
    let listed: BTreeSet<String> = list.as_object().unwrap().keys().cloned().collect();
    assert_eq!(granted(), used_by_views());
    assert_eq!(listed, granted());
    // Menu and ACL name each other.
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
        assert!(view_path(v).is_file());
    }
}

#[test]
fn rpcd_plugin_every_call() {
    let site = site(&["62041", "64500"], &[]);
    let dir = site.t.path();
    let st = call(dir, "status", json!({}));
    let g = &st["overview"]["groups"][0];
    assert_eq!(g["sources"][0]["source"], "62041");
    assert_eq!(g["sources"][0]["values"], 4);
    assert!(
        g["sources"][1]["failure"].as_str().unwrap().contains("503"),
        "{st}"
    );

    let found = call(dir, "lookup", json!({"address": "149.154.167.99"}));
    assert_eq!(found["matches"][0]["source"], "62041", "{found}");
    let bad = call(dir, "lookup", json!({"address": "1.2.3.4; reboot"}));
    assert!(
        bad["error"].as_str().unwrap().contains("invalid address"),
        "{bad}"
    );

    // explain: a broken link is an answer (the CLI's exit 1 with its JSON), not an error.
    let e = call(dir, "explain", json!({"address": "149.154.167.99"}));
    assert_eq!(e["routed"], false, "{e}");
    assert_eq!(e["steps"][0]["state"], "ok", "{e}");
    assert_eq!(e["lookup"]["matches"][0]["source"], "62041", "{e}");
    let e = call(
        dir,
        "explain",
        json!({"address": "149.154.167.99", "group": "default"}),
    );
    assert_eq!(e["group"], "default", "{e}");
    for (input, says) in [
        (json!({"address": "149.154.160.0/20"}), "invalid address"),
        (
            json!({"address": "1.2.3.4", "group": "a b"}),
            "invalid group",
        ),
        (
            json!({"address": "1.2.3.4", "group": "nope"}),
            "unknown group",
        ),
    ] {
        let e = call(dir, "explain", input.clone());
        assert!(
            e["error"].as_str().unwrap_or("").contains(says),
            "{input}: {e}"
        );
    }

    let ok = json!({"result": true});
    assert_eq!(
        call(dir, "add", json!({"kind": "asn", "source": "AS64496"})),
        ok
    );
    assert_eq!(
        call(dir, "add", json!({"kind": "fqdn", "source": "Example.ORG"})),
        ok
    );
    let listed = site.t.run(&["asn", "list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("64496"));
    for (input, says) in [
        (json!({"kind": "asn", "source": "ASX"}), "invalid ASN"),
        (json!({"kind": "asn", "source": "--purge"}), "invalid asn"),
        (json!({"kind": "disk", "source": "x"}), "unknown kind"),
        (
            json!({"kind": "asn", "source": "1", "group": "A B"}),
            "invalid group",
        ),
    ] {
        let v = call(dir, "add", input.clone());
        let msg = v["error"].as_str().unwrap_or_default();
        assert!(msg.contains(says), "{input}: {v}");
        assert!(!msg.contains("Usage"), "{v}");
    }

    assert_eq!(
        call(
            dir,
            "remove",
            json!({"kind": "fqdn", "source": "example.org"})
        ),
        ok
    );
    let purged = call(
        dir,
        "remove",
        json!({"kind": "asn", "source": "62041", "purge": true}),
    );
    assert_eq!(purged, ok);
    let after = call(dir, "status", json!({}));
    assert_eq!(after["overview"]["counts"]["asn"], 0, "{after}");
    let gone = call(dir, "remove", json!({"kind": "asn", "source": "62041"}));
    assert!(gone["error"].is_string(), "{gone}");

    // collect: the daemon's SIGUSR1, an error while none runs.
    let none = call(dir, "collect", json!({}));
    assert!(
        none["error"].as_str().unwrap().contains("no daemon"),
        "{none}"
    );
    let mut daemon = site.t.spawn(&["daemon"]);
    let up = eventually(Duration::from_secs(10), || {
        call(dir, "collect", json!({})) == ok
    });
    assert!(up, "{}", daemon.stderr());
    let unknown = call(dir, "reboot", json!({}));
    assert!(unknown["error"]
        .as_str()
        .unwrap()
        .contains("unknown method"));
}

#[test]
fn rpcd_plugin_adds_to_and_removes_from_a_group() {
    let t = TestDir::new();
    t.config(&json!({"asns": ["62041"], "fqdns": [], "groups": {"video": {"asns": []}}}));
    let ok = json!({"result": true});
    let add = json!({"kind": "asn", "source": "AS2906", "group": "video"});
    assert_eq!(call(t.path(), "add", add), ok);
    let st = call(t.path(), "status", json!({}));
    let groups = &st["overview"]["groups"];
    assert_eq!(groups[1]["name"], "video");
    assert_eq!(groups[1]["sources"][0]["source"], "2906", "{st}");
    assert_eq!(groups[0]["sources"].as_array().unwrap().len(), 1, "{st}");
    let unknown = call(
        t.path(),
        "add",
        json!({"kind": "asn", "source": "1", "group": "nope"}),
    );
    assert!(
        unknown["error"].as_str().unwrap().contains("unknown group"),
        "{unknown}"
    );
    let rm = json!({"kind": "asn", "source": "2906", "group": "video"});
    assert_eq!(call(t.path(), "remove", rm), ok);
    let st = call(t.path(), "status", json!({}));
    assert_eq!(st["overview"]["groups"][1]["sources"], json!([]), "{st}");
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

/// What the stand-in talks to: its files, the views, the shipped UCI file, and
/// `/ubus`, which runs the real plugin for methods the ACL grants (403 otherwise).
fn luci_server(dir: PathBuf) -> FakeServer {
    let allowed = granted();
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
            "/uci/ripe-cidr-collector" => file(
                root().join("openwrt/ripe-cidr-collector/files/ripe-cidr-collector.config"),
                "text/plain",
            ),
            "/ubus" if param("object") == OBJECT && allowed.contains(&param("method")) => {
                let v = rpcd(&dir, &["call", &param("method")], &param("params"));
                Reply::json(200, v.to_string())
            }
            "/ubus" => Reply::json(403, "{}"),
            p => match p.strip_prefix("/view/ripe-cidr-collector/") {
                Some(v) if !v.contains('/') => {
                    file(view_path(v.trim_end_matches(".js")), "text/javascript")
                }
                _ => Reply::json(404, "{}"),
            },
        }
    })
}

fn open_view(b: &mut Browser, server: SocketAddr, view: &str) {
    // A query per view: a change of the fragment alone would not load the page again.
    b.goto(&format!(
        "http://{server}/?{view}#ripe-cidr-collector/{view}"
    ));
    assert!(
        b.wait_for("window.standinDone === true", Duration::from_secs(20)),
        "{view} did not render"
    );
    assert_eq!(b.errors, Vec::<String>::new(), "{view}");
}

fn text(b: &mut Browser, sel: &str) -> String {
    let v = b.eval(&format!(
        "(document.querySelector({}) || {{}}).textContent || ''",
        json!(sel)
    ));
    v.as_str().unwrap_or_default().to_string()
}

#[test]
fn luci_views_render_the_plugins_answers() {
    let Some(mut b) = Browser::start() else {
        cannot_run("chromium is not installed (apt-get install chromium)");
        return;
    };
    let site = site(&["62041", "64500"], &[]);
    let server = luci_server(site.t.path().to_path_buf());
    let addr = server.addr;

    open_view(&mut b, addr, "status");
    let facts = text(&mut b, "#rcc-facts");
    assert!(
        facts.contains("Stored values") && facts.contains("asn 4"),
        "{facts}"
    );
    let row = text(&mut b, "tr[data-source=\"62041\"]");
    assert!(row.contains("AS62041") && row.contains('4'), "{row}");
    assert!(text(&mut b, "tr[data-source=\"64500\"]").contains("503"));
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
    assert!(text(&mut b, ".rcc-broken").contains("Fix: add {\"load\""));
    assert_eq!(
        text(&mut b, ".rcc-verdict"),
        "149.154.167.99: stored in group default, but no output loads group default's sets"
    );

    open_view(&mut b, addr, "sources");
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

    open_view(&mut b, addr, "settings");
    let listen = b.eval("document.querySelector('[data-name=listen] input').value");
    assert_eq!(listen, "127.0.0.1:8080");
    let level = b.eval("document.querySelector('[data-name=log_level] select').value");
    assert_eq!(level, "info");
    assert_eq!(b.errors, Vec::<String>::new());
    settings_refuse_paths_the_init_script_refuses(&mut b);
}

/// The settings form's path validators (the view's `pathCheck`, set as each path
/// option's `validate`) refuse what the init script's path_ok refuses.
fn settings_refuse_paths_the_init_script_refuses(b: &mut Browser) {
    let cases = json!([
        ["dir", "/etc", false],
        ["dir", "/tmp", false],
        ["dir", "/tmp/x", false],
        ["dir", "/var/lib/ripe-cidr-collector", true],
        ["dir", "/mnt/usb/ripe-cidr", true],
        ["db", "/etc/shadow", false],
        ["db", "/tmp/passwd", false],
        ["db", "/tmp/a/../b.db", false],
        ["db", "/var/lib/ripe-cidr-collector/ripe.db", true],
        ["db", "/tmp/x.db", true],
        ["snapshot", "/etc/passwd", false],
        [
            "snapshot",
            "/etc/ripe-cidr-collector/ripe.db.snapshot",
            true
        ],
        ["snapshot", "/overlay/ripe.db.snapshot", true],
        ["nft", "/etc/passwd", false],
        ["nft", "/tmp/x.sh", false],
        ["nft", "/etc/ripe-cidr-mark.nft", true],
        ["nft", "/tmp/ripe-cidr.nft", true],
        ["dir", "/tmp/a ripe-cidr", false],
        ["db", "", true]
    ]);
    let got = b.eval(&format!(
        "fetch('/view/ripe-cidr-collector/settings.js').then(r => r.text()).then(src => {{
           const v = new Function('view', 'form', src)({{ extend: o => o }}, {{}});
           return {cases}.map(c => [c[0], c[1], v.pathCheck(c[0])('main', c[1]) === true]);
         }})"
    ));
    assert_eq!(got, cases);
}

/// Stored XSS through the LuCI app: LuCI's E() sets innerHTML for a bare string child,
/// and the stand-in does as LuCI does. A feed URL with markup stored by an earlier
/// version, failure texts with markup (as an earlier version copied answers into
/// status.json), and error texts echoing what was typed must show as text and run no
/// script in the admin's session.
#[test]
fn luci_views_show_markup_as_text() {
    let Some(mut b) = Browser::start() else {
        cannot_run("chromium is not installed (apt-get install chromium)");
        return;
    };
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
    let server = luci_server(dir.to_path_buf());
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

    open_view(&mut b, addr, "status");
    safe(&mut b, "status");
    assert!(text(&mut b, "tr[data-source=\"64500\"]").contains(&img(2)));
    let facts = text(&mut b, "#rcc-facts");
    for n in [3, 4, 5] {
        assert!(facts.contains(&img(n)), "{facts}");
    }
    // A lookup that finds the feed, and one whose error echoes what was typed.
    let typed = img(6);
    for (address, shows) in [("192.0.2.1", &feed), (typed.as_str(), &typed)] {
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
        safe(&mut b, address);
        let shown = text(&mut b, "#rcc-lookup-result");
        assert!(shown.contains(shows.as_str()), "{address}: {shown}");
    }

    // Adding a feed URL with markup: refused, the error naming it, shown as text.
    open_view(&mut b, addr, "sources");
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
