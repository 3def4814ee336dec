//! The OpenWrt package's scripts driving the real binary: the documented first use
//! (`asn add` before the first start), a reboot with a hanging upstream (the sets are
//! back within 5 s of the daemon's start), and the fw4 include against the real `nft`
//! (a loaded table is left alone; after `fw4 flush` the sets are loaded again).
//! Kernel parts run inside `unshare -n`.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{bin, cannot_run, eventually, ripe_body, FakeServer, Proc, Reply, TestDir};
use crate::openwrt::path_check_in;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn files() -> PathBuf {
    root().join("openwrt/ripe-cidr-collector/files")
}

fn find(name: &str) -> Option<PathBuf> {
    ["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        .iter()
        .map(|d| PathBuf::from(d).join(name))
        .find(|p| p.is_file())
}

/// Moves this test's thread (and what it starts later) into a new network namespace
/// with `lo` up; the path of `nft`.
pub(crate) fn namespace() -> Result<PathBuf, String> {
    let nft = find("nft").ok_or("`nft` not found (apt-get install nftables)")?;
    let ip = find("ip").ok_or("`ip` not found (apt-get install iproute2)")?;
    // SAFETY: plain system call; it only changes this thread's namespace.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(format!(
            "cannot create a network namespace (needs root): {}",
            std::io::Error::last_os_error()
        ));
    }
    let up = Command::new(ip).args(["link", "set", "lo", "up"]).status();
    if !up.is_ok_and(|s| s.success()) {
        return Err("ip link set lo up failed".into());
    }
    match Command::new(&nft).args(["list", "tables"]).output() {
        Ok(o) if o.status.success() => Ok(nft),
        Ok(o) => Err(format!(
            "nft does not work here: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("cannot run nft: {e}")),
    }
}

pub(crate) fn nft_list(nft: &Path, set: &str) -> String {
    let o = Command::new(nft)
        .args(["list", "set", "inet", "ripe_cidr", set])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The shipped config.json with the test's upstream and a file output instead of
/// RIPEstat, uclient-fetch and the netlink load (`load`: keep that too).
fn shipped_config(ripe_url: &str, out: &Path, load: bool) -> serde_json::Value {
    shipped_with(&[], ripe_url, out, load)
}

/// [`shipped_config`] with `asns` configured.
pub(crate) fn shipped_with(
    asns: &[&str],
    ripe_url: &str,
    out: &Path,
    load: bool,
) -> serde_json::Value {
    let text = fs::read_to_string(files().join("config.json")).unwrap();
    let mut cfg: serde_json::Value = serde_json::from_str(&text).unwrap();
    let obj = cfg.as_object_mut().unwrap();
    obj.remove("fetch");
    if !asns.is_empty() {
        obj.insert("asns".into(), serde_json::json!(asns));
    }
    obj.insert(
        "ripe".into(),
        serde_json::json!({"url": ripe_url, "timeout_seconds": 30, "retries": 0}),
    );
    let mut outputs = vec![serde_json::json!({"path": out, "format": "text"})];
    if load {
        outputs.push(serde_json::json!({"load": "nft", "type": "all"}));
    }
    obj.insert("outputs".into(), outputs.into());
    cfg
}

/// Runs init-script functions (`funcs`, space-separated) against the stub procd/UCI
/// functions of openwrt/tests/stubs.sh, with `/etc/ripe-cidr-collector` moved to
/// `conf`, the default data directory into `dir` and the test's binary as the
/// program; `uci` are the UCI_main_* settings. The stub log.
fn init(dir: &Path, conf: &Path, uci: &[(&str, String)], funcs: &str) -> String {
    let lib = path_check_in(dir, conf, &dir.join("var-lib"));
    let script = fs::read_to_string(files().join("ripe-cidr-collector.init")).unwrap();
    let script = script
        .replace(
            "PATH_CHECK=/usr/share/ripe-cidr-collector/path-check.sh",
            &format!("PATH_CHECK={}", lib.display()),
        )
        .replace(
            "PROG=/usr/bin/ripe-cidr-collector",
            &format!("PROG={}", bin().display()),
        )
        .replace("UJAIL=/sbin/ujail", "UJAIL=/nonexistent/ujail");
    assert!(script.contains(&format!("PATH_CHECK={}", lib.display())));
    let init = dir.join("init");
    fs::write(&init, script).unwrap();
    let log = dir.join("stub.log");
    fs::write(&log, "").unwrap();
    let stubs = root().join("openwrt/tests/stubs.sh");
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!(
            ". '{}'; . '{}'; for f in {funcs}; do $f; done",
            stubs.display(),
            init.display()
        ))
        .env("STUB_LOG", &log)
        .env("IPKG_INSTROOT", "");
    for (k, v) in uci {
        c.env(format!("UCI_main_{k}"), v);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "init: {out:?}");
    fs::read_to_string(&log).unwrap()
}

/// The daemon's command line from the stub log's `command ...` line.
fn command_line(log: &str) -> Vec<String> {
    let line = log
        .lines()
        .find_map(|l| l.strip_prefix("command "))
        .unwrap_or_else(|| panic!("no command in {log}"));
    line.split(' ').map(String::from).collect()
}

#[test]
fn first_use_asn_add_before_the_first_start_is_collected() {
    if find("sh").is_none() {
        return cannot_run("no sh for the init script");
    }
    let ripe = FakeServer::start(|_| Reply::json(200, ripe_body(&["192.0.2.0/24".into()])));
    let t = TestDir::new();
    let (conf, data) = (t.file("etc"), t.file("ripe-cidr-data"));
    let out = t.file("out.txt");
    // `opkg install`: the shipped config.json on flash, then the post-install's
    // `start` with the service not enabled yet.
    fs::create_dir_all(&conf).unwrap();
    let cfg = shipped_config(&ripe.url("/data.json"), &out, false);
    fs::write(conf.join("config.json"), cfg.to_string()).unwrap();
    let uci = |enabled: &str| {
        vec![
            ("enabled", enabled.to_string()),
            ("data_dir", data.display().to_string()),
            ("db", data.join("ripe.db").display().to_string()),
            (
                "snapshot",
                conf.join("ripe.db.snapshot").display().to_string(),
            ),
            ("listen", String::new()),
            ("syslog", "0".into()),
        ]
    };
    let log = init(t.path(), &conf, &uci("0"), "start_service");
    assert!(!log.contains("instance"), "{log}");
    // The quickstart: `ripe-cidr-collector asn add AS64496` (the CLI's default data
    // directory is the service's), then enable and start.
    let added = Command::new(bin())
        .args([
            "--data-dir".as_ref(),
            data.as_os_str(),
            "asn".as_ref(),
            "add".as_ref(),
        ])
        .arg("AS64496")
        .env_remove("RIPE_DATA_DIR")
        .output()
        .unwrap();
    assert!(added.status.success(), "{added:?}");
    let flash = fs::read_to_string(conf.join("config.json")).unwrap();
    assert!(
        flash.contains("64496"),
        "asn add missed the flash config: {flash}"
    );
    let log = init(t.path(), &conf, &uci("1"), "start_service");
    let args = command_line(&log);
    let daemon = Command::new(&args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut daemon = Proc::drained(daemon, None);
    let collected = eventually(Duration::from_secs(20), || {
        fs::read_to_string(&out).is_ok_and(|s| s.contains("192.0.2.0/24"))
    });
    let _ = daemon.0.kill();
    assert!(
        collected,
        "the first ASN was not collected: {}",
        daemon.stderr()
    );
    // Nothing was moved aside: there was never a second config.json.
    let kept_aside = fs::read_dir(&data)
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().contains(".local-"));
    assert!(!kept_aside, "a config.json was moved aside");
}

#[test]
fn reboot_with_a_hanging_upstream_loads_the_sets_within_5_s() {
    let ripe = FakeServer::start(|_| {
        Reply::json(
            200,
            ripe_body(&["192.0.2.0/24".into(), "2001:db8::/32".into()]),
        )
    });
    let t = TestDir::new();
    let (ram, flash) = (t.file("ram"), t.file("flash"));
    fs::create_dir_all(&flash).unwrap();
    let out = t.file("out.txt");
    let db = ram.join("ripe.db");
    let snap = flash.join("ripe.db.snapshot");
    let storage = |c: &mut Command| {
        c.arg("--db").arg(&db).arg("--snapshot").arg(&snap);
    };
    t.config(&shipped_with(
        &["64496"],
        &ripe.url("/data.json"),
        &out,
        false,
    ));
    let mut run = t.cmd();
    storage(&mut run);
    let o = run.arg("run").output().unwrap();
    assert!(o.status.success(), "{o:?}");
    assert!(
        snap.is_file(),
        "no snapshot written: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The reboot: RAM is gone (the database and, in the data directory, status.json
    // with the last success); the upstream now accepts connections and never answers.
    fs::remove_dir_all(&ram).unwrap();
    fs::remove_file(t.file("status.json")).unwrap();
    fs::remove_file(&out).unwrap();
    let nft = match namespace() {
        Ok(nft) => Some(nft),
        Err(why) => {
            cannot_run(&format!("{why}; checking the file output only"));
            None
        }
    };
    let hang = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/data.json", hang.local_addr().unwrap());
    t.config(&shipped_with(&["64496"], &url, &out, nft.is_some()));
    let mut daemon = t.cmd();
    storage(&mut daemon);
    let started = Instant::now();
    let child = daemon
        .arg("daemon")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut daemon = Proc::drained(child, None);
    let loaded = eventually(Duration::from_secs(10), || {
        fs::read_to_string(&out).is_ok_and(|s| s.contains("192.0.2.0/24"))
            && nft
                .as_ref()
                .is_none_or(|n| nft_list(n, "ripe_v6").contains("2001:db8::/32"))
    });
    let took = started.elapsed();
    let _ = daemon.0.kill();
    let log = daemon.stderr();
    assert!(loaded, "not loaded from the snapshot: {log}");
    // Well under a second normally; with the bug, after the upstream's 30 s timeout.
    assert!(
        took <= Duration::from_secs(5),
        "loaded {took:?} after the start (the collection hangs): {log}"
    );
    drop(hang);
}

/// A stub `uci` (openwrt/tests/stubs/uci.sh) and `logger` on a PATH of their own.
fn stub_path(dir: &Path) -> String {
    let stubs = dir.join("stubs");
    fs::create_dir_all(&stubs).unwrap();
    for t in ["uci", "logger"] {
        let link = stubs.join(t);
        if !link.exists() {
            std::os::unix::fs::symlink(root().join(format!("openwrt/tests/stubs/{t}.sh")), link)
                .unwrap();
        }
    }
    format!(
        "{}:{}",
        stubs.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn fw4_include_with_the_real_nft_leaves_a_loaded_table_alone() {
    if find("bash").is_none() {
        return cannot_run("no bash to source the include as fw4 does");
    }
    let nft = match namespace() {
        Ok(nft) => nft,
        Err(why) => return cannot_run(&why),
    };
    let t = TestDir::new();
    let calls = t.file("calls");
    let stub = t.file("ripe-cidr-collector");
    fs::write(
        &stub,
        format!("#!/bin/sh\necho \"$*\" >> '{}'\n", calls.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&stub, fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(t.file("ripe.db"), "").unwrap();
    let path = stub_path(t.path());
    let include = files().join("fw4-include.sh");
    let lib = path_check_in(t.path(), &t.file("etc"), t.path());
    let run_include = || {
        let st = Command::new("bash")
            .arg("-c")
            .arg(format!("exec 1000>&-; . '{}'", include.display()))
            .env("PATH", &path)
            .env("STUB_LOG", t.file("stub.log"))
            .env("RIPE_CIDR_BIN", &stub)
            .env("RIPE_CIDR_LIB", &lib)
            .env("UCI_main_enabled", "1")
            .env("UCI_main_data_dir", t.path())
            .env("UCI_main_db", t.file("ripe.db"))
            .status()
            .unwrap();
        assert!(st.success());
    };
    let script = b"add table inet ripe_cidr
add set inet ripe_cidr ripe_v4 { type ipv4_addr; flags interval; }
add element inet ripe_cidr ripe_v4 { 192.0.2.0/24, 198.51.100.0/24 }
add table inet fw4
add set inet fw4 other { type ipv4_addr; }
";
    let mut c = Command::new(&nft)
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut c.stdin.take().unwrap(), script).unwrap();
    assert!(c.wait().unwrap().success());
    // fw4 reload: our table is there with its sets.
    run_include();
    std::thread::sleep(Duration::from_millis(300));
    assert!(!calls.exists(), "a loaded table was loaded again");
    // fw4 flush: every table deleted.
    for table in ["ripe_cidr", "fw4"] {
        Command::new(&nft)
            .args(["delete", "table", "inet", table])
            .status()
            .unwrap();
    }
    run_include();
    assert!(
        eventually(Duration::from_secs(5), || fs::read_to_string(&calls)
            .is_ok_and(|s| s.contains("render --load-only"))),
        "the sets were not loaded again after the flush"
    );
    // A table left without sets counts as missing too.
    fs::remove_file(&calls).unwrap();
    Command::new(&nft)
        .args(["add", "table", "inet", "ripe_cidr"])
        .status()
        .unwrap();
    run_include();
    assert!(eventually(Duration::from_secs(5), || calls.exists()));
}

/// Runs the uci-defaults script with `/etc/ripe-cidr-collector` moved to `conf`, the
/// test's binary, and stub `uci`/`logger` (the UCI values `uci`); the stub log.
fn uci_defaults(dir: &Path, conf: &Path, uci: &[(&str, &str)]) -> String {
    let script = fs::read_to_string(files().join("ripe-cidr-collector.uci-defaults"))
        .unwrap()
        .replace("/etc/ripe-cidr-collector", &conf.display().to_string())
        .replace("/usr/bin/ripe-cidr-collector", &bin().display().to_string());
    let path = dir.join("uci-defaults");
    fs::write(&path, script).unwrap();
    let log = dir.join("uci-defaults.log");
    fs::write(&log, "").unwrap();
    let mut c = Command::new("sh");
    c.arg(&path)
        .env("PATH", stub_path(dir))
        .env("STUB_LOG", &log)
        .env_remove("RIPE_DATA_DIR");
    for (k, v) in uci {
        c.env(format!("UCI_main_{k}"), v);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "uci-defaults: {out:?}");
    fs::read_to_string(&log).unwrap()
}

#[test]
fn upgrade_adds_fetch_command_to_a_kept_config_json() {
    let t = TestDir::new();
    let conf = t.file("etc");
    fs::create_dir_all(&conf).unwrap();
    let cfg = conf.join("config.json");
    let fetch = serde_json::json!(["uclient-fetch", "-T", "30", "-O", "-", "{url}"]);
    // An edited config.json of an earlier version: sources and the old output.
    let old = r#"{
  "asns": ["62041"],
  "outputs": [ { "load": "nft", "path": "/tmp/ripe-cidr.nft", "format": "nft" } ]
}"#;
    fs::write(&cfg, old).unwrap();
    let log = uci_defaults(t.path(), &conf, &[("nft_file", "/tmp/ripe-cidr.nft")]);
    let now: serde_json::Value = serde_json::from_str(&fs::read_to_string(&cfg).unwrap()).unwrap();
    assert_eq!(now["fetch"]["command"], fetch, "{now}");
    assert_eq!(now["asns"], serde_json::json!(["62041"]));
    assert!(
        log.contains("uci delete ripe-cidr-collector.main.nft_file"),
        "{log}"
    );
    // An empty one, and one that says otherwise (kept as it is).
    fs::write(&cfg, "{ }\n").unwrap();
    uci_defaults(t.path(), &conf, &[]);
    let now: serde_json::Value = serde_json::from_str(&fs::read_to_string(&cfg).unwrap()).unwrap();
    assert_eq!(now["fetch"]["command"], fetch);
    let own = r#"{"fetch": {"command": ["curl", "-s", "{url}"]}}"#;
    fs::write(&cfg, own).unwrap();
    uci_defaults(t.path(), &conf, &[]);
    assert_eq!(fs::read_to_string(&cfg).unwrap(), own);
    // A file the program cannot read is left alone, and the log says what to add.
    fs::write(&cfg, "{ \"asns\": [").unwrap();
    let log = uci_defaults(t.path(), &conf, &[]);
    assert_eq!(fs::read_to_string(&cfg).unwrap(), "{ \"asns\": [");
    assert!(log.contains("has no fetch.command"), "{log}");
}

/// The command earlier versions added had `-q`, which hides the HTTP status (a 404
/// would be retried like a 503): the upgrade drops it, keeping the rest of the file.
#[test]
fn upgrade_drops_quiet_from_the_old_uclient_fetch_command() {
    let t = TestDir::new();
    let conf = t.file("etc");
    fs::create_dir_all(&conf).unwrap();
    let cfg = conf.join("config.json");
    let old = r#"{
  "asns": ["62041"],
  "fetch": { "command": ["uclient-fetch", "-q", "-T", "30", "-O", "-", "{url}"] }
}
"#;
    fs::write(&cfg, old).unwrap();
    uci_defaults(t.path(), &conf, &[]);
    let now = fs::read_to_string(&cfg).unwrap();
    assert_eq!(now, old.replace(r#""-q", "#, ""));
    // Another command with -q is the user's own: kept.
    let own = r#"{"fetch": {"command": ["uclient-fetch", "-q", "-O", "-", "{url}"]}}"#;
    fs::write(&cfg, own).unwrap();
    uci_defaults(t.path(), &conf, &[]);
    assert_eq!(fs::read_to_string(&cfg).unwrap(), own);
}

/// docs/openwrt.md's "your own chain" recipe, with the real binary and nft: the chain
/// file is the load output's command (so the daemon loads it after the sets at its
/// start, from the snapshot) and in `nft_file` (so the include loads it after
/// `fw4 flush`, once `render --load-only` made the table again).
#[test]
fn own_chain_recipe_survives_boot_and_fw4_flush() {
    if find("bash").is_none() {
        return cannot_run("no bash to source the include as fw4 does");
    }
    let t = TestDir::new();
    let chain = t.file("ripe-cidr-mark.nft");
    fs::write(
        &chain,
        "add chain inet ripe_cidr mark_listed { type filter hook prerouting priority mangle; policy accept; }
flush chain inet ripe_cidr mark_listed
add rule inet ripe_cidr mark_listed ip daddr @ripe_v4 meta mark set meta mark & 0xffffff00 | 0x10
",
    )
    .unwrap();
    let nft = match namespace() {
        Ok(nft) => nft,
        Err(why) => return cannot_run(&why),
    };
    // Started in the namespace, where the daemon will look for it.
    let ripe = FakeServer::start(|_| Reply::json(200, ripe_body(&["192.0.2.0/24".into()])));
    let mut cfg = shipped_with(
        &["64496"],
        &ripe.url("/data.json"),
        &t.file("out.txt"),
        true,
    );
    cfg["outputs"][1]["command"] = format!("{} -f {}", nft.display(), chain.display()).into();
    t.config(&cfg);
    let (db, snap) = (t.file("ram/ripe.db"), t.file("ripe.db.snapshot"));
    let o = t
        .cmd()
        .arg("--db")
        .arg(&db)
        .arg("--snapshot")
        .arg(&snap)
        .arg("run")
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    // The reboot: no table, no database in RAM, no status; the daemon starts.
    Command::new(&nft)
        .args(["delete", "table", "inet", "ripe_cidr"])
        .status()
        .unwrap();
    fs::remove_dir_all(t.file("ram")).unwrap();
    fs::remove_file(t.file("status.json")).unwrap();
    let child = t
        .cmd()
        .arg("--db")
        .arg(&db)
        .arg("--snapshot")
        .arg(&snap)
        .arg("daemon")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut daemon = Proc::drained(child, None);
    let marks = |nft: &Path| {
        let o = Command::new(nft)
            .args(["list", "chain", "inet", "ripe_cidr", "mark_listed"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).contains("@ripe_v4")
            && nft_list(nft, "ripe_v4").contains("192.0.2.0/24")
    };
    let booted = eventually(Duration::from_secs(10), || marks(&nft));
    // fw4 flush: every table deleted; fw4 start runs the include.
    Command::new(&nft)
        .args(["flush", "ruleset"])
        .status()
        .unwrap();
    let include = files().join("fw4-include.sh");
    let st = Command::new("bash")
        .arg("-c")
        .arg(format!("exec 1000>&-; . '{}'", include.display()))
        .env("PATH", stub_path(t.path()))
        .env("STUB_LOG", t.file("stub.log"))
        .env("RIPE_CIDR_BIN", bin())
        .env("UCI_main_enabled", "1")
        .env("UCI_main_data_dir", t.path())
        .env("UCI_main_db", &db)
        .env("UCI_main_nft_file", &chain)
        .env(
            "RIPE_CIDR_LIB",
            path_check_in(t.path(), &t.file("etc"), t.path()),
        )
        .status()
        .unwrap();
    let flushed = eventually(Duration::from_secs(10), || marks(&nft));
    let _ = daemon.0.kill();
    let log = daemon.stderr();
    assert!(booted, "no chain or sets after the start: {log}");
    assert!(st.success());
    assert!(flushed, "no chain or sets after fw4 flush: {log}");
}

/// The init script disabled (not run at boot), so the CLI wrote a config.json of its
/// own into the data directory: the next start adds its sources to the one on flash.
#[test]
fn a_config_json_written_before_the_link_gives_its_sources_to_the_flash_one() {
    let t = TestDir::new();
    let (conf, data) = (t.file("etc"), t.file("ripe-cidr-data"));
    fs::create_dir_all(&conf).unwrap();
    fs::copy(files().join("config.json"), conf.join("config.json")).unwrap();
    let cli = |args: &[&str]| {
        let o = Command::new(bin())
            .arg("--data-dir")
            .arg(&data)
            .args(args)
            .env_remove("RIPE_DATA_DIR")
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {o:?}");
    };
    cli(&["asn", "add", "AS64496"]);
    cli(&["fqdn", "add", "example.com"]);
    assert!(!data.join("config.json").is_symlink());
    let uci = vec![
        ("enabled", "0".to_string()),
        ("data_dir", data.display().to_string()),
    ];
    init(t.path(), &conf, &uci, "start_service");
    let flash: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(conf.join("config.json")).unwrap()).unwrap();
    assert_eq!(flash["asns"], serde_json::json!(["64496"]), "{flash}");
    assert_eq!(
        flash["fqdns"],
        serde_json::json!(["example.com"]),
        "{flash}"
    );
    // The shipped outputs and fetch.command are still there.
    assert_eq!(flash["outputs"][0]["load"], "nft", "{flash}");
    assert!(data.join("config.json").is_symlink());
}
