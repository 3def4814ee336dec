//! Every method of the LuCI app's ucode rpcd plugin, called as rpcd would (the model of
//! luci_plugin.rs: the plugin's tables and the real binary); and, with `ucode` on PATH,
//! the plugin itself, which must answer the same.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::common::*;
use crate::luci_plugin::{plugin_path, Plugin, INVALID_ARGUMENT, METHOD_NOT_FOUND};
use crate::web::site;

/// A call that rpcd passes to the plugin: its answer.
fn call(dir: &Path, method: &str, args: Value) -> Value {
    let (code, answer) = Plugin::load().call(dir, method, &args);
    assert_eq!(code, 0, "{method} {args}: ubus code {code}");
    answer
}

#[test]
fn ucode_plugin_every_call() {
    let site = site(&["62041", "64500"], &[]);
    let dir = site.t.path();
    reads(dir);
    changes(&site.t);
    rpcd_refusals(dir);
}

/// status, lookup and explain.
fn reads(dir: &Path) {
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
    assert_eq!(bad["error"], "invalid address \"1.2.3.4; reboot\"", "{bad}");

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
        (json!({"group": "default"}), "missing address"),
    ] {
        let e = call(dir, "explain", input.clone());
        assert!(
            e["error"].as_str().unwrap_or("").contains(says),
            "{input}: {e}"
        );
    }
}

/// add, remove and collect.
fn changes(t: &TestDir) {
    let dir = t.path();
    let ok = json!({"result": true});
    assert_eq!(
        call(dir, "add", json!({"kind": "asn", "source": "AS64496"})),
        ok
    );
    let add = json!({"kind": "fqdn", "source": "Example.ORG", "group": "default"});
    assert_eq!(call(dir, "add", add), ok);
    let listed = t.run(&["asn", "list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("64496"));
    for (input, says) in [
        (json!({"kind": "asn", "source": "ASX"}), "invalid ASN"),
        (json!({"kind": "asn", "source": "--purge"}), "invalid asn"),
        (json!({"kind": "disk", "source": "x"}), "invalid kind"),
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

    let rm = json!({"kind": "fqdn", "source": "example.org"});
    assert_eq!(call(dir, "remove", rm), ok);
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
    let mut daemon = t.spawn(&["daemon"]);
    let up = eventually(Duration::from_secs(10), || {
        call(dir, "collect", json!({})) == ok
    });
    assert!(up, "{}", daemon.stderr());
}

/// What rpcd refuses before the plugin runs.
fn rpcd_refusals(dir: &Path) {
    let p = Plugin::load();
    assert_eq!(p.call(dir, "reboot", &json!({})).0, METHOD_NOT_FOUND);
    for (method, args) in [
        ("lookup", json!({"address": 1})),
        ("lookup", json!({"address": "1.2.3.4", "cmd": "x"})),
        (
            "remove",
            json!({"kind": "asn", "source": "1", "purge": "yes"}),
        ),
    ] {
        assert_eq!(
            p.call(dir, method, &args).0,
            INVALID_ARGUMENT,
            "{method} {args}"
        );
    }
    let session = json!({"address": "1.2.3.4", "ubus_rpc_session": "00"});
    assert_eq!(p.call(dir, "lookup", &session).0, 0);
}

#[test]
fn ucode_plugin_adds_to_and_removes_from_a_group() {
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

/// With `ucode` on PATH (it is in no Debian package; build it from jow-/ucode), the
/// plugin itself answers each call as the tables say.
#[test]
fn ucode_plugin_runs_under_ucode_where_installed() {
    let has_ucode = Command::new("ucode")
        .args(["-e", "print(1)"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_ucode {
        eprintln!("note: no ucode on PATH; the plugin's tables are checked without it");
        return;
    }
    // The same calls on two like data directories, one for ucode, one for the tables
    // (a copy: the same stored times).
    let site = site(&["62041", "64500"], &[]);
    let twin = TestDir::new();
    let (dir, twin_dir) = (site.t.path(), twin.path());
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), twin_dir.join(e.file_name())).unwrap();
        }
    }
    let h = Harness::new(dir);
    let p = Plugin::load();
    rpcd_types_are_the_tables(&h, &p);
    for (method, args) in [
        ("lookup", json!({"address": "149.154.167.99"})),
        ("lookup", json!({"address": "1.2.3.4; rm -rf /"})),
        ("lookup", json!({"address": "1.2.3.4\n; rm -rf /"})),
        ("lookup", json!({"address": "1".repeat(50)})),
        (
            "explain",
            json!({"address": "149.154.167.99", "group": "default"}),
        ),
        ("explain", json!({"group": "default"})),
        ("add", json!({"kind": "asn", "source": "--purge"})),
        (
            "add",
            json!({"kind": "asn", "source": "AS64496", "group": "default"}),
        ),
        ("add", json!({"kind": "asn", "source": "ASX"})),
        (
            "remove",
            json!({"kind": "asn", "source": "64496", "purge": true}),
        ),
        ("collect", json!({})),
    ] {
        let want = normal(&p.call(twin_dir, method, &args).1, twin_dir);
        let got = normal(&h.run(method, &args)["answer"], dir);
        assert_eq!(got, want, "{method} {args}");
    }
    let st = h.run("status", &json!({}))["answer"].clone();
    assert_eq!(
        st["overview"]["groups"][0]["sources"][0]["source"], "62041",
        "{st}"
    );
    uci_data_dir_is_checked(&h, &st);
}

/// The data directory UCI names (the LuCI app's grant may write it) reaches the CLI,
/// run as root, only when path-check.sh allows it; `status` is the answer without one.
fn uci_data_dir_is_checked(h: &Harness, status: &Value) {
    // path-check.sh with the site's directory as the package's data directory.
    let lib = crate::openwrt::path_check_in(h.h.path(), &h.h.path().join("etc"), h.dir);
    let dir = h.dir.to_str().unwrap();
    let env = |d: &str| {
        [
            ("RCC_UCI_DATA_DIR", d.to_string()),
            ("RCC_PATH_CHECK", lib.display().to_string()),
        ]
    };
    let st = h.run_env("status", &json!({}), &env(dir))["answer"].clone();
    assert_eq!(normal(&st, h.dir), normal(status, h.dir));
    let pwned = h.h.path().join("pwned");
    for bad in [
        "/etc".to_string(),
        format!("{dir}'; touch {}; '", pwned.display()),
    ] {
        let answer = h.run_env("status", &json!({}), &env(&bad))["answer"].clone();
        let why = answer["error"].as_str().unwrap_or_default();
        assert!(
            why.starts_with(&format!("option data_dir '{bad}' refused: ")),
            "{answer}"
        );
        assert!(!pwned.exists(), "{bad}");
    }
}

/// The argument types rpcd enforces (from each method's `args`): those of the tables.
fn rpcd_types_are_the_tables(h: &Harness, p: &Plugin) {
    for method in p.names() {
        let types = &h.run(&method, &json!({ "address": "x" }))["types"];
        let want: Map<String, Value> = p
            .args(&method)
            .into_iter()
            .map(|(a, k)| {
                (
                    a,
                    json!(if p.is_flag(k.as_str().unwrap()) {
                        json!(false)
                    } else {
                        json!("")
                    }),
                )
            })
            .collect();
        assert_eq!(types, &Value::Object(want), "{method}");
    }
}

/// The ucode harness: loads the plugin as rpcd does (its returned signature object),
/// calls one method with the JSON arguments given and prints the argument types rpcd
/// would enforce and the answer.
const HARNESS: &str = r#"
let sig = loadfile(ARGV[0])()['luci.ripe-cidr-collector'];
let m = sig[ARGV[1]];
print(sprintf('%J\n', { types: m.args, answer: m.call({ args: json(ARGV[2]) }) }));
"#;

/// The harness and a stub `uci` module (no UCI file: the CLI reads RIPE_DATA_DIR) in a
/// directory of their own, for the data directory `dir`.
struct Harness<'a> {
    h: tempfile::TempDir,
    dir: &'a Path,
}

impl<'a> Harness<'a> {
    fn new(dir: &'a Path) -> Harness<'a> {
        let h = tempfile::tempdir().unwrap();
        std::fs::write(h.path().join("harness.uc"), HARNESS).unwrap();
        // UCI's data_dir: RCC_UCI_DATA_DIR, unset by default.
        let stub = "export function cursor() { return { get: function(c, s, o) { \
            return o == 'data_dir' ? getenv('RCC_UCI_DATA_DIR') : null; } }; };\n";
        std::fs::write(h.path().join("uci.uc"), stub).unwrap();
        Harness { h, dir }
    }

    fn run(&self, method: &str, args: &Value) -> Value {
        self.run_env(method, args, &[])
    }

    /// [`Harness::run`] with more environment (`RCC_UCI_DATA_DIR`, `RCC_PATH_CHECK`).
    fn run_env(&self, method: &str, args: &Value, env: &[(&str, String)]) -> Value {
        let out = Command::new("ucode")
            .arg("-L")
            .arg(format!("{}/*.uc", self.h.path().display()))
            .arg(self.h.path().join("harness.uc"))
            .args([plugin_path().to_str().unwrap(), method, &args.to_string()])
            .env("RCC_PROG", bin())
            .env("RIPE_DATA_DIR", self.dir)
            .env_remove("RCC_UCI_DATA_DIR")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{method} {args}: {text}{err}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method}: {e}: {text}"))
    }
}

/// `v` with the data directory's path and the times replaced by placeholders.
fn normal(v: &Value, dir: &Path) -> Value {
    match v {
        Value::String(s) if s.len() == 20 && s.as_bytes()[10] == b'T' && s.ends_with('Z') => {
            json!("TIME")
        }
        Value::String(s) => json!(s.replace(dir.to_str().unwrap(), "DIR")),
        Value::Array(a) => Value::Array(a.iter().map(|x| normal(x, dir)).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, x)| (k.clone(), normal(x, dir))).collect())
        }
        other => other.clone(),
    }
}
