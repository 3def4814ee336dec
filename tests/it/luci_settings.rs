//! The LuCI settings form's path options (`settings.js`), in the page that
//! `luci.rs` renders in headless Chromium: its validator accepts what the main
//! package's `path-check.sh` accepts, and each path option really carries it.

use serde_json::json;

use crate::browser::Browser;
use crate::luci::text;
use crate::luci_plugin::root;

/// The settings form's path validators (the view's `pathCheck`) accept what
/// path-check.sh's `ripe_cidr_path_rule` (the rules of the init script, the firewall
/// include and the rpcd plugin) accepts, and every path option of the rendered form
/// carries one: a refused value typed in is marked and stops the save.
pub(crate) fn settings_refuse_paths_the_init_script_refuses(b: &mut Browser) {
    let cases = json!([
        ["dir", "/etc", false],
        ["dir", "/tmp", false],
        ["dir", "/tmp/", false],
        ["dir", "/tmp/x", false],
        ["dir", "relative/ripe-cidr", false],
        ["dir", "/var/lib/ripe-cidr-collector", true],
        ["dir", "/etc/ripe-cidr-collector", true],
        ["dir", "/mnt/usb/ripe-cidr", true],
        ["dir", "/tmp/a ripe-cidr", false],
        ["dir", "/tmp/ripe-cidr/", false],
        ["db", "/etc/shadow", false],
        ["db", "/etc/shadow.db", false],
        ["db", "/tmp/passwd", false],
        ["db", "/tmp/a/../b.db", false],
        ["db", "/tmp//b.db", false],
        ["db", "/var/lib/ripe-cidr-collector/ripe.db", true],
        ["db", "/var/lib/ripe-cidr-collectorX/ripe.db", true],
        ["db", "/tmp/x.db", true],
        ["db", "/tmp/.db", true],
        ["db", "/tmp/x.DB", false],
        ["snapshot", "/etc/passwd", false],
        [
            "snapshot",
            "/etc/ripe-cidr-collector/ripe.db.snapshot",
            true
        ],
        ["snapshot", "/overlay/ripe.db.snapshot", true],
        ["snapshot", "/mnt/x.db", true],
        ["nft", "/etc/passwd", false],
        ["nft", "/etc/x.nft", false],
        ["nft", "/tmp/x.sh", false],
        ["nft", "/etc/ripe-cidr-mark.nft", true],
        ["nft", "/etc/ripe-cidr-collector/own.nft", true],
        ["nft", "/tmp/ripe-cidr.nft", true],
        ["nft", "/tmp/a.nft/", false]
    ]);
    let got = b.eval(&format!(
        "fetch('/view/ripe-cidr-collector/settings.js').then(r => r.text()).then(src => {{
           const v = new Function('view', 'form', src)({{ extend: o => o }}, {{}});
           return {cases}.map(c => [c[0], c[1], v.pathCheck(c[0])('main', c[1]) === true]);
         }})"
    ));
    assert_eq!(got, cases);
    let lib = root().join("openwrt/ripe-cidr-collector/files/path-check.sh");
    for c in cases.as_array().unwrap() {
        let (kind, path) = (c[0].as_str().unwrap(), c[1].as_str().unwrap());
        let out = std::process::Command::new("sh")
            .args(["-c", ". \"$1\"; ripe_cidr_path_rule \"$2\" \"$3\"", "sh"])
            .args([lib.to_str().unwrap(), kind, path])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            out.stdout.is_empty(),
            c[2] == true,
            "path-check.sh on {c}: {out:?}"
        );
    }
    settings_mark_refused_paths(b);
}

/// Each path option of the rendered settings form validates what is typed into it as
/// LuCI's widgets do (the stand-in's form, after ui.js and form.js): refused, the
/// input is marked with the reason and the Save button's `Map.save()` rejects.
fn settings_mark_refused_paths(b: &mut Browser) {
    for (name, bad, why, good) in [
        ("data_dir", "/etc", "Only under", "/tmp/ripe-cidr"),
        ("db", "/etc/shadow", "Only under", "/tmp/x.db"),
        (
            "snapshot",
            "/etc/passwd",
            "Only under",
            "/overlay/x.snapshot",
        ),
        ("nft_file", "/tmp/x.sh", "must end in .nft", "/tmp/x.nft"),
    ] {
        let typed = |b: &mut Browser, value: &str| {
            b.eval(&format!(
                "(() => {{ const v = document.querySelector('[data-name={name}]');
                   const i = v.querySelector('.add-item input') || v.querySelector('input');
                   i.value = {value}; i.dispatchEvent(new Event('blur'));
                   return window.standin.map.save().then(() => ['saved'], e => [
                     i.classList.contains('cbi-input-invalid'), i.getAttribute('data-tooltip'),
                     e.message]);
                 }})()",
                value = json!(value)
            ))
        };
        let refused = typed(b, bad);
        assert_eq!(refused[0], true, "{name}={bad}: not marked: {refused}");
        let tooltip = refused[1].as_str().unwrap_or_default();
        assert!(tooltip.contains(why), "{name}={bad}: {refused}");
        let title = text(b, &format!("[data-name={name}] .cbi-value-title"));
        let message = refused[2].as_str().unwrap_or_default();
        assert!(
            message.starts_with(&format!(
                "Option \"{title}\" contains an invalid input value. "
            )),
            "{name}={bad}: {refused}"
        );
        assert_eq!(typed(b, good), json!(["saved"]), "{name}={good}");
    }
}
