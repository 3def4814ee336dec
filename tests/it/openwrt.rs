//! The OpenWrt package's shell parts, off-router: the procd init script against stub
//! procd/UCI functions (`openwrt/tests/init-test.sh`), the fw4 include under a stub
//! fw4 that holds its lock (`fw4-include-test.sh`), the .ipk and .apk that mkpkg.sh
//! makes (`apk-test.sh`), and shellcheck on every shell file of the repository. Each
//! says why it cannot run when a tool is missing (and fails under CI=true).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// path-check.sh, the package's path rules, copied into `dir` for a test of the
/// scripts that source it: its own directories moved to `conf` and `data`, and paths
/// under `dir` allowed besides /tmp, /var, ... (the only change made to it).
pub(crate) fn path_check_in(dir: &Path, conf: &Path, data: &Path) -> PathBuf {
    let lib = root().join("openwrt/ripe-cidr-collector/files/path-check.sh");
    let (mut out, mut moved) = (String::new(), 0);
    for line in std::fs::read_to_string(lib).unwrap().lines() {
        let line = if line.starts_with("RIPE_CIDR_CONF_DIR=") {
            format!("RIPE_CIDR_CONF_DIR={}", conf.display())
        } else if line.starts_with("RIPE_CIDR_DATA_DIR=") {
            format!("RIPE_CIDR_DATA_DIR={}", data.display())
        } else if let Some(roots) = line.strip_prefix("RIPE_CIDR_ROOTS=\"") {
            format!("RIPE_CIDR_ROOTS=\"{} {roots}", dir.display())
        } else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        moved += 1;
        out.push_str(&line);
        out.push('\n');
    }
    assert_eq!(
        moved, 3,
        "path-check.sh names its directories and roots elsewhere"
    );
    let path = dir.join("path-check.sh");
    std::fs::write(&path, out).unwrap();
    path
}

/// Whether `tool` can be started (it answers `--version` or `-c :`).
fn has(tool: &str, probe: &[&str]) -> bool {
    Command::new(tool)
        .args(probe)
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn init_script_against_stub_procd_and_uci() {
    if !has("sh", &["-c", ":"]) {
        return crate::common::cannot_run("no `sh` to run openwrt/tests/init-test.sh");
    }
    let out = Command::new("sh")
        .arg(root().join("openwrt/tests/init-test.sh"))
        .output()
        .expect("run sh");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("init-test: all passed"),
        "init-test.sh failed:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn fw4_include_against_stub_fw4_uci_and_nft() {
    if !has("sh", &["-c", ":"]) || !has("bash", &["-c", ":"]) || !has("flock", &["-V"]) {
        return crate::common::cannot_run(
            "openwrt/tests/fw4-include-test.sh needs sh, bash and flock (the stub fw4's lock)",
        );
    }
    let out = Command::new("sh")
        .arg(root().join("openwrt/tests/fw4-include-test.sh"))
        .output()
        .expect("run sh");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("fw4-include-test: all passed"),
        "fw4-include-test.sh failed:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn apk_layout_and_scripts_follow_package_pack_mk() {
    if !has("sh", &["-c", ":"]) || !has("tar", &["--version"]) || !has("sha256sum", &["--version"])
    {
        return crate::common::cannot_run("openwrt/tests/apk-test.sh needs sh, tar and sha256sum");
    }
    let out = Command::new("sh")
        .arg(root().join("openwrt/tests/apk-test.sh"))
        .output()
        .expect("run sh");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("apk-test: all passed"),
        "apk-test.sh failed:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// No script test writes outside its own temporary directory: run in a private mount
/// namespace with overlays on /etc, /var, /run, /tmp, /usr, ... and a product's files
/// in /var/lib/ripe-cidr-collector, the host's directories are byte-identical after
/// them (`openwrt/tests/host-test.sh`). A write lands in a tmpfs that goes with the
/// namespace, so the host is never touched, whatever the scripts do.
#[cfg(unix)]
#[test]
fn script_tests_leave_the_host_byte_identical() {
    // SAFETY: plain system call without arguments.
    if unsafe { libc::geteuid() } != 0 || !has("unshare", &["--version"]) {
        return crate::common::cannot_run(
            "openwrt/tests/host-test.sh needs root and unshare (a private mount namespace)",
        );
    }
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh"])
        .arg(root().join("openwrt/tests/host-test.sh"))
        .arg(scratch.path())
        .output()
        .expect("run unshare");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("host-test: all passed"),
        "host-test.sh failed:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The lines of a script that do something (no comments, no blank lines).
fn code_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim_end)
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .map(String::from)
        .collect()
}

/// The SDK's package (the Makefile's prerm and postinst) and mkpkg.sh's
/// (files/prerm.sh, files/postinst.sh) do the same things.
#[test]
fn makefile_prerm_and_postinst_are_the_files() {
    let mk = std::fs::read_to_string(root().join("openwrt/ripe-cidr-collector/Makefile")).unwrap();
    for script in ["prerm", "postinst"] {
        let body = mk
            .split(&format!("define Package/ripe-cidr-collector/{script}\n"))
            .nth(1)
            .and_then(|b| b.split("\nendef").next())
            .unwrap_or_else(|| panic!("{script} in the Makefile"))
            .replace("$$", "$");
        let path = format!("openwrt/ripe-cidr-collector/files/{script}.sh");
        let file = std::fs::read_to_string(root().join(path)).unwrap();
        assert_eq!(code_lines(&body), code_lines(&file), "{script}");
    }
}

/// mkpkg.sh installs every file the Makefile's Package/ripe-cidr-collector/install
/// does (path-check.sh, which the init script and the fw4 include source, among them).
#[test]
fn mkpkg_installs_what_the_makefile_installs() {
    let mk = std::fs::read_to_string(root().join("openwrt/ripe-cidr-collector/Makefile")).unwrap();
    let install = mk
        .split("define Package/ripe-cidr-collector/install\n")
        .nth(1)
        .and_then(|b| b.split("\nendef").next())
        .expect("the install section");
    let mkpkg = std::fs::read_to_string(root().join("openwrt/mkpkg.sh")).unwrap();
    let files: Vec<&str> = install
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("./files/"))
        .collect();
    assert!(files.contains(&"path-check.sh"), "{files:?}");
    for f in files {
        let named = format!("\"$files/{}\"", f.replace("ripe-cidr-collector", "$name"));
        assert!(
            mkpkg.contains(&named),
            "mkpkg.sh does not install {f} ({named})"
        );
    }
}

/// The shell files: `*.sh`, `.ci/run`, the init script, the uci-defaults script (and
/// any rpcd exec plugin, though the LuCI app's is ucode now).
fn shell_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if name != "target" && name != ".git" {
                shell_files(&p, out);
            }
        } else if name.ends_with(".sh")
            || name.ends_with(".init")
            || name.ends_with(".uci-defaults")
            || p.ends_with(".ci/run")
            || p.parent().is_some_and(|d| d.ends_with("usr/libexec/rpcd"))
        {
            out.push(p);
        }
    }
}

#[test]
fn shellcheck_clean() {
    if !has("shellcheck", &["--version"]) {
        return crate::common::cannot_run(
            "shellcheck is not installed (apt-get install shellcheck)",
        );
    }
    let mut files = Vec::new();
    shell_files(root(), &mut files);
    files.sort();
    assert!(files.len() >= 8, "shell files not found: {files:?}");
    let out = Command::new("shellcheck")
        .current_dir(root())
        .args(&files)
        .output()
        .expect("run shellcheck");
    assert!(
        out.status.success(),
        "shellcheck on {files:?}:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn mkpkg_builds_an_ipk_that_unpacks_to_the_package_tree() {
    if !has("sh", &["-c", ":"]) || !has("tar", &["--version"]) || !has("gzip", &["--version"]) {
        return crate::common::cannot_run("openwrt/mkpkg.sh needs sh, tar and gzip");
    }
    let dir = tempfile::tempdir().unwrap();
    // Any file does for packaging; the real one comes from cross/build.sh.
    let bin = dir.path().join("ripe-cidr-collector");
    std::fs::write(&bin, "#!/bin/sh\necho fake\n").unwrap();
    let dist = dir.path().join("dist");
    let out = Command::new("sh")
        .arg(root().join("openwrt/mkpkg.sh"))
        .args(["mipsel_24kc".as_ref(), bin.as_os_str(), dist.as_os_str()])
        .env("SOURCE_DATE_EPOCH", "0")
        .output()
        .expect("run mkpkg.sh");
    assert!(
        out.status.success(),
        "mkpkg.sh: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let version = format!("{}-r1", env!("CARGO_PKG_VERSION"));
    let ipk = dist.join(format!("ripe-cidr-collector_{version}_mipsel_24kc.ipk"));
    let unpack = dir.path().join("unpack");
    std::fs::create_dir(&unpack).unwrap();
    let tar = |args: &[&str]| {
        let o = Command::new("tar")
            .current_dir(&unpack)
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "tar {args:?}: {o:?}");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let outer = tar(&["-tzf", ipk.to_str().unwrap()]);
    assert_eq!(
        outer.lines().collect::<Vec<_>>(),
        ["./debian-binary", "./data.tar.gz", "./control.tar.gz"]
    );
    tar(&["-xzf", ipk.to_str().unwrap()]);
    let control = tar(&["-xzOf", "control.tar.gz", "./control"]);
    let version_line = format!("Version: {version}\n");
    for field in [
        "Package: ripe-cidr-collector\n",
        version_line.as_str(),
        "Architecture: mipsel_24kc\n",
        "Depends: ca-bundle, nftables, kmod-nft-core, firewall4, uclient-fetch\n",
        "Require-User: ripe-cidr=3691:ripe-cidr=3691\n",
        "License: MIT\n",
    ] {
        assert!(control.contains(field), "{field:?} not in\n{control}");
    }
    let conffiles = tar(&["-xzOf", "control.tar.gz", "./conffiles"]);
    assert_eq!(
        conffiles,
        "/etc/config/ripe-cidr-collector\n/etc/ripe-cidr-collector/config.json\n"
    );
    let data = tar(&["-tzf", "data.tar.gz"]);
    for path in [
        "./usr/bin/ripe-cidr-collector",
        "./etc/init.d/ripe-cidr-collector",
        "./etc/config/ripe-cidr-collector",
        "./etc/ripe-cidr-collector/config.json",
        "./etc/uci-defaults/90-ripe-cidr-collector",
        "./usr/share/ripe-cidr-collector/fw4-include.sh",
        "./usr/share/ripe-cidr-collector/path-check.sh",
        "./usr/share/ripe-cidr-collector/dnsmasq-drop-in.sh",
    ] {
        assert!(data.lines().any(|l| l == path), "{path} not in\n{data}");
    }
}

/// The shipped config.json is valid as it is, without warnings, and sends every
/// upstream request through uclient-fetch (the package has no TLS of its own), and
/// the uci-defaults migration adds the same command.
#[test]
fn shipped_config_json_fetches_through_uclient_fetch() {
    let files = root().join("openwrt/ripe-cidr-collector/files");
    let path = files.join("config.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let loaded = ripe_cidr_collector::config::parse(&text, &path).unwrap();
    assert_eq!(loaded.warnings, Vec::<String>::new());
    let cmd = loaded.config.fetch.command.expect("fetch.command");
    assert_eq!(cmd, ["uclient-fetch", "-T", "30", "-O", "-", "{url}"]);
    assert_eq!(loaded.config.outputs.len(), 1);
    let defaults = std::fs::read_to_string(files.join("ripe-cidr-collector.uci-defaults")).unwrap();
    assert!(
        defaults.contains(
            r#""fetch": { "command": ["uclient-fetch", "-T", "30", "-O", "-", "{url}"] }"#
        ),
        "uci-defaults adds another fetch.command"
    );
}

/// Issue 39 U1b: root runs `nft -f` on each `nft_file` and gives `data_dir` to the
/// daemon's user, so path-check.sh refuses what another local user could have put
/// there first: a file planted in a world-writable directory (as /tmp is), a file or
/// directory owned by another uid, or one that group or others may write. Root's own
/// file in a directory only root writes passes.
#[cfg(unix)]
#[test]
fn path_check_refuses_what_another_user_planted() {
    use std::os::unix::fs::{chown, PermissionsExt};
    // SAFETY: plain system call without arguments.
    if unsafe { libc::geteuid() } != 0 || !has("sh", &["-c", ":"]) {
        return crate::common::cannot_run("needs root (to plant files as another uid) and sh");
    }
    let t = crate::common::TestDir::new();
    let lib = path_check_in(t.path(), &t.file("etc"), &t.file("var-lib"));
    let why = |kind: &str, p: &Path| {
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!(
                ". '{}'; ripe_cidr_path_why {kind} '{}'",
                lib.display(),
                p.display()
            ))
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        String::from_utf8(o.stdout).unwrap()
    };
    let mode =
        |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    // /tmp: anyone may create a file there; uid 4242 did, before the daemon.
    let public = t.file("tmp");
    std::fs::create_dir(&public).unwrap();
    mode(&public, 0o1777);
    let planted = public.join("ripe-cidr.nft");
    std::fs::write(&planted, "flush ruleset\n").unwrap();
    chown(&planted, Some(4242), Some(4242)).unwrap();
    let w = why("nft", &planted);
    assert!(w.contains("its directory is writable by others"), "{w}");
    // Even root's own file there: the directory lets others replace it.
    chown(&planted, Some(0), Some(0)).unwrap();
    assert!(!why("nft", &planted).is_empty());
    // A private directory: another user's file, or one others may write, is refused.
    let private = t.file("private");
    std::fs::create_dir(&private).unwrap();
    mode(&private, 0o755);
    let file = private.join("ripe-cidr.nft");
    std::fs::write(&file, "").unwrap();
    mode(&file, 0o644);
    assert_eq!(why("nft", &file), "", "root's file in root's directory");
    chown(&file, Some(4242), None).unwrap();
    assert_eq!(why("nft", &file), "owned by 4242");
    chown(&file, Some(0), None).unwrap();
    mode(&file, 0o666);
    assert!(why("nft", &file).starts_with("writable by others"));
    // A data directory another user made first, or one others may write.
    let data = t.file("ripe-cidr-data");
    std::fs::create_dir(&data).unwrap();
    mode(&data, 0o755);
    assert_eq!(why("dir", &data), "");
    chown(&data, Some(4242), None).unwrap();
    assert_eq!(why("dir", &data), "owned by 4242");
    chown(&data, Some(0), None).unwrap();
    mode(&data, 0o777);
    assert!(why("dir", &data).starts_with("writable by others"));
}
