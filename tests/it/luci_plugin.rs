//! The LuCI app's rpcd ucode plugin (`root/usr/share/rpcd/ucode/luci.ripe-cidr-collector`).
//! ucode is not packaged in Debian, so what rpcd and the plugin do with a call is done
//! here from the plugin's own tables (`VALUES`, `METHODS`, plain JSON in the file):
//! rpcd's checks of argument names and types, the plugin's patterns applied with the
//! POSIX `regcomp()` flags ucode's `regexp(pattern, 's')` uses, the CLI arguments its
//! `run` lists make, and the answer they give against the real binary. The LuCI
//! views' tests (`luci.rs`) answer their ubus calls the same way, and
//! `luci_plugin_run.rs` calls every method (with `ucode` on PATH, the plugin itself
//! too).

use std::collections::BTreeSet;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Map, Value};

use crate::common::*;

pub const APP: &str = "openwrt/luci-app-ripe-cidr-collector";
pub const OBJECT: &str = "luci.ripe-cidr-collector";
/// ubus status codes (libubus).
pub const INVALID_ARGUMENT: i64 = 2;
pub const METHOD_NOT_FOUND: i64 = 3;

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub fn plugin_path() -> PathBuf {
    root()
        .join(APP)
        .join("root/usr/share/rpcd/ucode")
        .join(OBJECT)
}

/// The object literal after `const NAME = ` up to the `};` that closes it.
fn table(src: &str, name: &str) -> Value {
    let start = src
        .find(&format!("const {name} = "))
        .unwrap_or_else(|| panic!("no const {name} in the plugin"));
    let body = &src[start + name.len() + 9..];
    let end = body
        .find("\n};")
        .unwrap_or_else(|| panic!("{name} not closed"));
    serde_json::from_str(&body[..end + 2])
        .unwrap_or_else(|e| panic!("{name} is not plain JSON: {e}"))
}

/// Whether `value` matches `pattern` as ucode's `regexp(pattern, flags)` compiles it:
/// POSIX extended, and line by line (REG_NEWLINE) unless the flags hold `s`.
pub fn posix_match(pattern: &str, value: &str, dot_all: bool) -> bool {
    let pat = CString::new(pattern).unwrap();
    let val = CString::new(value).unwrap();
    let mut flags = libc::REG_EXTENDED | libc::REG_NOSUB;
    if !dot_all {
        flags |= libc::REG_NEWLINE;
    }
    // SAFETY: regex_t is plain data that regcomp fills in; both strings are
    // NUL-terminated and outlive the calls; regfree releases what regcomp allocated.
    unsafe {
        let mut re: libc::regex_t = std::mem::zeroed();
        assert_eq!(
            libc::regcomp(&mut re, pat.as_ptr(), flags),
            0,
            "{pattern}: not a POSIX extended expression"
        );
        let hit = libc::regexec(&re, val.as_ptr(), 0, std::ptr::null_mut(), 0) == 0;
        libc::regfree(&mut re);
        hit
    }
}

fn given(v: Option<&Value>) -> bool {
    !matches!(v, None | Some(Value::Null) | Some(Value::Bool(false)))
        && v.and_then(Value::as_str) != Some("")
}

/// The plugin's tables, and whether it compiles the patterns with the `s` flag.
pub struct Plugin {
    pub values: Value,
    pub methods: Value,
    pub dot_all: bool,
}

impl Plugin {
    pub fn load() -> Plugin {
        let src = std::fs::read_to_string(plugin_path()).unwrap();
        let call = src
            .split("regexp(spec.pattern")
            .nth(1)
            .expect("the plugin compiles VALUES' patterns with regexp()");
        let flags = call[..call.find(')').unwrap()].trim_start_matches([',', ' ']);
        Plugin {
            values: table(&src, "VALUES"),
            methods: table(&src, "METHODS"),
            dot_all: flags.trim_matches('\'').contains('s'),
        }
    }

    pub fn names(&self) -> BTreeSet<String> {
        self.methods.as_object().unwrap().keys().cloned().collect()
    }

    /// The declared arguments of `method`: name to kind.
    pub fn args(&self, method: &str) -> Map<String, Value> {
        self.methods[method]["args"].as_object().unwrap().clone()
    }

    pub fn is_flag(&self, kind: &str) -> bool {
        self.values[kind]["type"] == "boolean"
    }

    /// rpcd's check before the plugin runs: only declared names (and the session
    /// LuCI adds), each of its declared type (a string, or a boolean for a flag).
    fn rpcd_refuses(&self, method: &str, args: &Map<String, Value>) -> bool {
        let declared = self.args(method);
        args.iter().any(|(name, v)| match declared.get(name) {
            None => name != "ubus_rpc_session" || !v.is_string(),
            Some(kind) if self.is_flag(kind.as_str().unwrap()) => !v.is_boolean(),
            Some(_) => !v.is_string(),
        })
    }

    /// The plugin's `refusal()`: why these arguments are refused, or None.
    pub fn refusal(&self, method: &str, args: &Map<String, Value>) -> Option<String> {
        for (name, kind) in self.args(method) {
            let spec = &self.values[kind.as_str().unwrap()];
            let v = match args.get(&name) {
                None | Some(Value::Null) => continue,
                Some(Value::String(s)) if s.is_empty() => continue,
                Some(v) => v,
            };
            if spec["type"] == "boolean" {
                if !v.is_boolean() {
                    return Some(format!("invalid {name}: not true or false"));
                }
                continue;
            }
            let Some(s) = v.as_str() else {
                return Some(format!("invalid {name}: not a string"));
            };
            let max = spec["max"].as_u64().unwrap() as usize;
            if s.len() > max {
                return Some(format!("invalid {name}: longer than {max} bytes"));
            }
            let pattern = spec["pattern"].as_str().unwrap();
            if s.contains('\0') || !posix_match(pattern, s, self.dot_all) {
                let label = match (name.as_str(), args.get("kind")) {
                    ("source", Some(Value::String(k))) => k.clone(),
                    _ => name.clone(),
                };
                return Some(format!("invalid {label} \"{s}\""));
            }
        }
        None
    }

    /// The plugin's `words()`: the CLI arguments of `run`; Err names a missing one,
    /// Ok(None) is a nested list left out.
    fn words(
        run: &Value,
        args: &Map<String, Value>,
        top: bool,
    ) -> Result<Option<Vec<String>>, String> {
        let mut out = Vec::new();
        for w in run.as_array().unwrap() {
            if w.is_array() {
                out.extend(Self::words(w, args, false)?.unwrap_or_default());
                continue;
            }
            let w = w.as_str().unwrap();
            let Some(name) = w.strip_prefix('{').and_then(|r| r.strip_suffix('}')) else {
                out.push(w.to_string());
                continue;
            };
            let v = args.get(name);
            if !given(v) {
                return if top {
                    Err(format!("missing {name}"))
                } else {
                    Ok(None)
                };
            }
            if let Some(s) = v.and_then(Value::as_str) {
                out.push(s.to_string());
            }
        }
        Ok(Some(out))
    }

    /// The CLI arguments `method` runs for `args` (after its checks passed).
    pub fn argv(&self, method: &str, args: &Map<String, Value>) -> Result<Vec<String>, String> {
        Self::words(&self.methods[method]["run"], args, true).map(Option::unwrap_or_default)
    }

    /// A ubus call as rpcd and the plugin answer it: (status code, answer), the
    /// binary run with the data directory `dir`.
    pub fn call(&self, dir: &Path, method: &str, args: &Value) -> (i64, Value) {
        self.call_env(dir, method, args, &[])
    }

    /// [`Plugin::call`] with more environment for the binary (as rpcd's own).
    pub fn call_env(
        &self,
        dir: &Path,
        method: &str,
        args: &Value,
        env: &[(&str, &Path)],
    ) -> (i64, Value) {
        if self.methods.get(method).is_none() {
            return (METHOD_NOT_FOUND, Value::Null);
        }
        let Some(args) = args.as_object() else {
            return (INVALID_ARGUMENT, Value::Null);
        };
        if self.rpcd_refuses(method, args) {
            return (INVALID_ARGUMENT, Value::Null);
        }
        if let Some(why) = self.refusal(method, args) {
            return (0, json!({ "error": why }));
        }
        let argv = match self.argv(method, args) {
            Ok(a) => a,
            Err(why) => return (0, json!({ "error": why })),
        };
        let out = Command::new(bin())
            .arg("-q")
            .args(&argv)
            .env("RIPE_DATA_DIR", dir)
            .env_remove("RIPE_DB")
            .env_remove("RIPE_SNAPSHOT")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        if self.methods[method]["answer"] == "json" {
            if let Ok(v @ Value::Object(_)) = serde_json::from_slice::<Value>(&out.stdout) {
                return (0, v);
            }
        } else if out.status.success() {
            return (0, json!({ "result": true }));
        }
        let err = String::from_utf8_lossy(&out.stderr);
        let first = match err.trim().lines().next() {
            Some(line) => line.to_string(),
            None => {
                let code = out.status.code().unwrap_or(-1);
                format!("{} {method} failed (exit status {code})", bin().display())
            }
        };
        (0, json!({ "error": first }))
    }
}

fn view_sources() -> Vec<String> {
    let views = root().join(APP).join("htdocs/luci-static/resources/view");
    let mut out = Vec::new();
    for dir in [
        views.join("ripe-cidr-collector"),
        views.join("status/include"),
    ] {
        for e in std::fs::read_dir(dir).unwrap() {
            out.push(std::fs::read_to_string(e.unwrap().path()).unwrap());
        }
    }
    out
}

/// Each `rpc.declare({...})` of the views: (method, params, the declaration's text).
pub fn declarations() -> Vec<(String, BTreeSet<String>, String)> {
    let mut out = Vec::new();
    for src in view_sources() {
        for piece in src.split("rpc.declare({").skip(1) {
            let decl = &piece[..piece.find("})").unwrap()];
            // The plugin's methods; other objects' (netifd's network.interface) are
            // checked against the ACL in luci_routes.rs.
            if !decl.contains(&format!("object: '{OBJECT}'")) {
                continue;
            }
            let quoted = |key: &str| {
                decl.split(&format!("{key}: ")).nth(1).map(|rest| {
                    let list = &rest[..rest.find(['\n', ']']).unwrap_or(rest.len())];
                    list.split('\'')
                        .skip(1)
                        .step_by(2)
                        .map(String::from)
                        .collect::<Vec<_>>()
                })
            };
            let method = quoted("method").unwrap()[0].clone();
            let params = quoted("params").unwrap_or_default().into_iter().collect();
            out.push((method, params, decl.to_string()));
        }
    }
    out
}

/// The methods the ACL grants, read and write together.
pub fn granted() -> BTreeSet<String> {
    let path = root()
        .join(APP)
        .join("root/usr/share/rpcd/acl.d/luci-app-ripe-cidr-collector.json");
    let acl: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let app = &acl["luci-app-ripe-cidr-collector"];
    for k in ["read", "write"] {
        let kinds: BTreeSet<&str> = app[k]
            .as_object()
            .unwrap()
            .keys()
            .map(|s| s.as_str())
            .collect();
        assert_eq!(
            kinds,
            BTreeSet::from(["ubus", "uci"]),
            "{k}: ubus methods and UCI only"
        );
    }
    ["read", "write"]
        .iter()
        .flat_map(|k| app[*k]["ubus"][OBJECT].as_array().unwrap().clone())
        .map(|m| m.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn ucode_plugin_methods_are_what_the_acl_grants_and_the_views_call() {
    let p = Plugin::load();
    let decls = declarations();
    let called: BTreeSet<String> = decls.iter().map(|d| d.0.clone()).collect();
    assert_eq!(p.names(), granted());
    assert_eq!(p.names(), called);
    for (method, params, decl) in &decls {
        let declared: BTreeSet<String> = p.args(method).keys().cloned().collect();
        assert!(
            params.is_subset(&declared),
            "{method}: {params:?} not in {declared:?}"
        );
        assert!(
            decl.contains("reject: true"),
            "{method} without reject: true:\n{decl}"
        );
    }
    for name in p.names() {
        let m = &p.methods[&name];
        assert!(
            ["json", "change"].contains(&m["answer"].as_str().unwrap()),
            "{name}"
        );
        let run = m["run"].to_string();
        for (arg, kind) in p.args(&name) {
            let kind = kind.as_str().unwrap();
            assert!(p.values.get(kind).is_some(), "{name}.{arg}: no kind {kind}");
            assert!(
                run.contains(&format!("\"{{{arg}}}\"")),
                "{name}.{arg} unused: {run}"
            );
            // A flag only ever decides whether an option is there.
            let top = m["run"]
                .as_array()
                .unwrap()
                .contains(&json!(format!("{{{arg}}}")));
            assert!(!(top && p.is_flag(kind)), "{name}.{arg}: a flag as a word");
        }
    }
    // The plugin applies the patterns to the whole value, and never runs a command
    // except through its one quoted popen().
    let src = std::fs::read_to_string(plugin_path()).unwrap();
    assert!(p.dot_all, "patterns without the 's' flag");
    assert_eq!(
        src.matches("popen(").count(),
        2,
        "one popen call (and its import)"
    );
    assert!(!src.contains("system("), "system() in the plugin");
    // No shell plugin beside it: two plugins for one ubus object break rpcd's reload.
    let exec = root().join(APP).join("root/usr/libexec/rpcd");
    assert!(!exec.exists(), "{} still exists", exec.display());
}

#[test]
fn ucode_plugin_refuses_injection_newlines_and_long_values() {
    let p = Plugin::load();
    let good = json!({
        "address": "2001:db8::1", "prefix": "149.154.160.0/20", "kind": "fqdn",
        "source": "https://example.com/list.txt?x=1&y=%20", "group": "video_2",
        "text": "telegram",
        "service": "telegram", "iface": "wg0"
    });
    for (kind, spec) in p.values.as_object().unwrap() {
        if spec["type"] == "boolean" {
            continue;
        }
        let pattern = spec["pattern"].as_str().unwrap();
        let max = spec["max"].as_u64().unwrap() as usize;
        let sample = good[kind].as_str().unwrap();
        assert!(
            posix_match(pattern, sample, true),
            "{kind}: {sample:?} refused"
        );
        // A method with an argument of this kind, and the answer to it holding `value`.
        let method = p
            .names()
            .into_iter()
            .find(|m| p.args(m).values().any(|k| k == kind));
        let method = method.unwrap();
        let name = p
            .args(&method)
            .into_iter()
            .find(|(_, k)| k == kind)
            .unwrap()
            .0;
        let refusal = |value: &str| {
            let mut args = Map::new();
            args.insert("kind".into(), json!("asn"));
            args.insert(name.clone(), json!(value));
            p.refusal(&method, &args)
        };
        for bad in [
            "; rm -rf /".to_string(),
            format!("{sample}; rm -rf /"),
            format!("{sample}\n; rm -rf /"),
            format!("{sample}\nx"),
            format!("$(reboot){sample}"),
            format!("`reboot`{sample}"),
            format!("{sample} x"),
            format!("{sample}'x"),
            format!("-{sample}"),
        ] {
            let why = refusal(&bad).unwrap_or_else(|| panic!("{method}.{name} = {bad:?} accepted"));
            assert!(why.starts_with("invalid "), "{bad:?}: {why}");
        }
        let long = sample.repeat(max / sample.len() + 1);
        let why = format!("invalid {name}: longer than {max} bytes");
        assert_eq!(refusal(&long), Some(why), "{kind}");
    }
    // Why the 's' flag: matched line by line, as ucode does without it, a second line
    // would ride along behind a good first one.
    let address = p.values["address"]["pattern"].as_str().unwrap();
    assert!(posix_match(address, "1.2.3.4\n; rm -rf /", false));
    assert!(!posix_match(address, "1.2.3.4\n; rm -rf /", true));
}

/// The plugin's `quoted()`: the shell word for `s`.
pub fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The shell line the plugin runs before the CLI for the UCI data directory `dir`:
/// its `DIR_CHECK`, the two `%s` filled as its `sprintf()` fills them, with
/// path-check.sh at `lib`.
pub fn dir_check_line(dir: &str, lib: &Path) -> String {
    let src = std::fs::read_to_string(plugin_path()).unwrap();
    let start = src
        .find("const DIR_CHECK = ")
        .expect("DIR_CHECK in the plugin")
        + 18;
    let end = start + src[start..].find(";\n").unwrap();
    let line: String = serde_json::from_str(&src[start..end]).expect("DIR_CHECK: a plain string");
    assert_eq!(line.matches('%').count(), 2, "{line}");
    line.replacen("%s", &quoted(dir), 1)
        .replacen("%s", &quoted(lib.to_str().unwrap()), 1)
}

/// The UCI data directory, which the LuCI app's grant may write, is given to the CLI
/// (run as root) only when path-check.sh, the init script's rules, allows it: the
/// plugin's check line, run by sh as popen() runs it, before the CLI.
#[test]
fn ucode_plugin_checks_the_uci_data_dir_with_the_init_scripts_rules() {
    let src = std::fs::read_to_string(plugin_path()).unwrap();
    assert!(
        src.contains("{ %s && %s; } 2>\"$e\"") && src.contains("sprintf(DIR_CHECK, quoted(dir)"),
        "the plugin no longer runs DIR_CHECK before the CLI"
    );
    let t = TestDir::new();
    let lib = crate::openwrt::path_check_in(t.path(), &t.file("etc"), &t.file("var-lib"));
    let pwned = t.file("pwned");
    let run = |dir: &str, lib: &Path| {
        let line = format!("{{ {} && echo ran; }} 2>&1", dir_check_line(dir, lib));
        let out = Command::new("sh").args(["-c", &line]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let good = t.file("ripe-cidr-data");
    assert_eq!(run(good.to_str().unwrap(), &lib), "ran");
    for (dir, why) in [
        ("/etc", "only under "),
        ("/tmp", "only under "),
        ("relative/ripe-cidr", "not an absolute path"),
        (
            &format!("{}/x", t.path().display()),
            "its name must contain ripe-cidr",
        ),
        (
            &format!("{}'; touch {}; '", good.display(), pwned.display()),
            "use an absolute path",
        ),
        (
            &format!("{}$(touch {})", good.display(), pwned.display()),
            "use an absolute path",
        ),
    ] {
        let said = run(dir, &lib);
        let want = format!("option data_dir '{dir}' refused: {why}");
        assert!(said.starts_with(&want), "{dir}: {said}");
        assert!(!said.contains("ran") && !pwned.exists(), "{dir}: {said}");
    }
    // A file there, or a link: refused as the init script refuses them.
    std::fs::write(t.file("ripe-cidr-file"), "").unwrap();
    let file = t.file("ripe-cidr-file");
    assert!(run(file.to_str().unwrap(), &lib).ends_with("refused: not a directory"));
    // An older main package without path-check.sh: refused as well.
    let said = run(good.to_str().unwrap(), &t.file("missing.sh"));
    assert!(
        said.contains("refused: cannot read ") && !said.contains("ran"),
        "{said}"
    );
}
