//! `cross/release.sh` end to end for x86_64, with the host build as its binary (`--bin`:
//! the musl targets and zig are not installed in CI, and the packaging is the same
//! for any binary): the three packages, `Packages` whose fields match the files,
//! `Packages.sig` verifying with the public key it writes (named by its fingerprint,
//! as `/etc/opkg/keys/` wants), `SHA256SUMS`; keys that are missing or unusable
//! refused before anything is built; and the LuCI packages' scripts doing what
//! luci.mk's do.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::luci_i18n::{app, po2lmo};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn has(tool: &str, probe: &[&str]) -> bool {
    Command::new(tool)
        .args(probe)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether the release's tools can be started (and, under CI=true, a failure if not).
fn tools() -> bool {
    let ok = ["signify-openbsd", "openssl", "rustc", "bash", "base64"]
        .iter()
        .all(|t| Command::new(t).arg("--version").output().is_ok());
    if !ok {
        crate::common::cannot_run(
            "cross/release.sh needs signify-openbsd, openssl, rustc, bash and base64 \
             (apt-get install signify-openbsd openssl)",
        );
    }
    ok
}

/// What the shell command `sh` prints for `input` on its stdin.
fn pipe(sh: &str, input: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut child = Command::new("sh")
        .args(["-c", sh])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{sh}: {out:?}");
    out.stdout
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {out:?}");
    out
}

/// A usign/signify key pair without a passphrase and an apk EC key, in `dir`.
fn keys(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let (sec, public, apk) = (
        dir.join("feed.sec"),
        dir.join("feed.pub"),
        dir.join("apk.pem"),
    );
    run(Command::new("signify-openbsd")
        .args(["-G", "-n", "-p"])
        .arg(&public)
        .arg("-s")
        .arg(&sec));
    run(Command::new("openssl")
        .args([
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
        ])
        .arg(&apk));
    (sec, public, apk)
}

/// The release for x86_64 into `out`, with the keys given (None: unset).
fn release(out: &Path, usign: Option<&Path>, apk: Option<&Path>) -> Output {
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("cross/release.sh"))
        .args(["--arch", "x86_64", "--bin"])
        .arg(format!("x86_64={}", crate::common::bin().display()))
        .arg("--out")
        .arg(out)
        .env("SOURCE_DATE_EPOCH", "0")
        .env_remove("RELEASE_USIGN_KEY")
        .env_remove("RELEASE_APK_KEY");
    if let Some(k) = usign {
        cmd.env("RELEASE_USIGN_KEY", k);
    }
    if let Some(k) = apk {
        cmd.env("RELEASE_APK_KEY", k);
    }
    cmd.output().unwrap()
}

/// The 16 hex digits usign names a key by: its 8-byte key number, after "Ed".
fn fingerprint(public: &Path) -> String {
    let text = std::fs::read_to_string(public).unwrap();
    let raw = pipe("base64 -d", text.lines().nth(1).unwrap().as_bytes());
    assert_eq!(&raw[..2], b"Ed");
    raw[2..10].iter().map(|b| format!("{b:02x}")).collect()
}

/// The paragraphs of a Packages file: field to value (continuation lines joined).
fn paragraphs(text: &str) -> Vec<BTreeMap<String, String>> {
    text.split("\n\n")
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let mut m = BTreeMap::new();
            let mut last = String::new();
            for line in p.lines() {
                if let Some(more) = line.strip_prefix(' ') {
                    m.entry(last.clone())
                        .and_modify(|v: &mut String| *v += &format!("\n{more}"));
                } else {
                    let (k, v) = line.split_once(": ").unwrap_or_else(|| panic!("{line:?}"));
                    assert!(
                        m.insert(k.to_string(), v.to_string()).is_none(),
                        "{k} twice"
                    );
                    last = k.to_string();
                }
            }
            m
        })
        .collect()
}

fn sha256(path: &Path) -> String {
    let out = run(Command::new("sha256sum").arg(path));
    String::from_utf8_lossy(&out.stdout)
        .split(' ')
        .next()
        .unwrap()
        .to_string()
}

/// A file of an .ipk: `part` is control.tar.gz or data.tar.gz.
fn ipk_file(ipk: &Path, part: &str, file: &str) -> Vec<u8> {
    let sh = format!(
        "tar -xzOf '{}' ./{part} | tar -xzOf - '{file}'",
        ipk.display()
    );
    run(Command::new("sh").args(["-c", &sh])).stdout
}

fn ipk_list(ipk: &Path) -> String {
    let sh = format!("tar -xzOf '{}' ./data.tar.gz | tar -tzf -", ipk.display());
    String::from_utf8(run(Command::new("sh").args(["-c", &sh])).stdout).unwrap()
}

#[test]
fn release_builds_a_signed_opkg_feed_for_x86_64() {
    if !tools() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (sec, public, apk) = keys(tmp.path());
    let out = tmp.path().join("out");
    let o = release(&out, Some(&sec), Some(&apk));
    let log = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{log}");
    if !has("apk", &["--version"]) {
        assert!(
            log.contains("no apk feed (packages.adb, .apk files): needs apk-tools 3"),
            "{log}"
        );
        assert!(
            !out.join("x86_64/packages.adb").exists(),
            "an index no apk signed"
        );
    }
    let version = format!("{}-r1", env!("CARGO_PKG_VERSION"));
    let feed = out.join("x86_64");
    let names = [
        format!("ripe-cidr-collector_{version}_x86_64.ipk"),
        format!("luci-app-ripe-cidr-collector_{version}_all.ipk"),
        format!("luci-i18n-ripe-cidr-collector-ru_{version}_all.ipk"),
    ];
    packages_match_the_files(&feed, &names, &version);
    signature_verifies(&out, &public, tmp.path());
    // The apk feed's public key is the private key's.
    let pem = std::fs::read(out.join("keys/ripe-cidr-collector.pem")).unwrap();
    let derived = run(Command::new("openssl")
        .args(["ec", "-pubout", "-in"])
        .arg(&apk))
    .stdout;
    assert_eq!(pem, derived, "ripe-cidr-collector.pem");
    sums_cover_the_feed(&feed);
    luci_packages_hold_the_plugin_and_the_catalog(&feed.join(&names[1]), &feed.join(&names[2]));
}

/// Packages: one paragraph per package, its fields as in the package's control file,
/// and Filename, Size and SHA256sum of the file beside it; Packages.gz the same.
fn packages_match_the_files(feed: &Path, names: &[String], version: &str) {
    let packages = std::fs::read_to_string(feed.join("Packages")).unwrap();
    let paras = paragraphs(&packages);
    let mut sorted = names.to_vec();
    sorted.sort();
    assert_eq!(paras.len(), sorted.len(), "{packages}");
    for (p, name) in paras.iter().zip(sorted) {
        let file = feed.join(&name);
        assert_eq!(p["Filename"], name);
        assert_eq!(
            p["Size"],
            std::fs::metadata(&file).unwrap().len().to_string()
        );
        assert_eq!(p["SHA256sum"], sha256(&file));
        assert_eq!(p["Version"], version);
        let control = String::from_utf8(ipk_file(&file, "control.tar.gz", "./control")).unwrap();
        let ctl = &paragraphs(&control)[0];
        for field in [
            "Package",
            "Version",
            "Depends",
            "Architecture",
            "Description",
        ] {
            assert_eq!(p.get(field), ctl.get(field), "{name}: {field}");
        }
        assert!(name.starts_with(&format!("{}_", p["Package"])), "{name}");
        assert!(
            name.ends_with(&format!("_{}.ipk", p["Architecture"])),
            "{name}"
        );
    }
    let by_name = |n: &str| paras.iter().find(|p| p["Package"] == n).unwrap();
    assert_eq!(by_name("ripe-cidr-collector")["Architecture"], "x86_64");
    let app = "libc, luci-base, rpcd-mod-ucode, ripe-cidr-collector";
    assert_eq!(by_name("luci-app-ripe-cidr-collector")["Depends"], app);
    let i18n = "libc, luci-app-ripe-cidr-collector";
    assert_eq!(by_name("luci-i18n-ripe-cidr-collector-ru")["Depends"], i18n);
    let unzipped = run(Command::new("gzip")
        .arg("-dc")
        .arg(feed.join("Packages.gz")))
    .stdout;
    assert_eq!(unzipped, packages.as_bytes(), "Packages.gz");
}

/// Packages.sig verifies with the key the release wrote, named as usign looks it up
/// (`usign -V -P /etc/opkg/keys`, as opkg runs it, where usign is installed), and a
/// changed Packages does not.
fn signature_verifies(out: &Path, public: &Path, tmp: &Path) {
    let feed = out.join("x86_64");
    let key = out.join("keys").join(fingerprint(public));
    assert_eq!(
        std::fs::read(&key).unwrap(),
        std::fs::read(out.join("keys/usign.pub")).unwrap()
    );
    let verify = |msg: &Path| {
        let mut v = Command::new("signify-openbsd");
        v.arg("-V").arg("-p").arg(&key).arg("-m").arg(msg);
        v.arg("-x").arg(feed.join("Packages.sig")).output().unwrap()
    };
    assert!(
        verify(&feed.join("Packages")).status.success(),
        "Packages.sig"
    );
    let packages = std::fs::read_to_string(feed.join("Packages")).unwrap();
    let tampered = tmp.join("Packages");
    std::fs::write(&tampered, packages.replace("Size: ", "Size: 1")).unwrap();
    assert!(
        !verify(&tampered).status.success(),
        "a changed Packages verifies"
    );
    if has("usign", &["-F", "-p", key.to_str().unwrap()]) {
        let mut v = Command::new("usign");
        v.arg("-V").arg("-P").arg(out.join("keys"));
        run(v
            .arg("-m")
            .arg(feed.join("Packages"))
            .arg("-x")
            .arg(feed.join("Packages.sig")));
    }
}

/// SHA256SUMS: every other file of the feed, each sum right.
fn sums_cover_the_feed(feed: &Path) {
    let sums = std::fs::read_to_string(feed.join("SHA256SUMS")).unwrap();
    let mut listed: Vec<&str> = sums
        .lines()
        .map(|l| l.split("  ").nth(1).unwrap())
        .collect();
    let mut files: Vec<String> = std::fs::read_dir(feed)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "SHA256SUMS")
        .collect();
    listed.sort();
    files.sort();
    assert_eq!(listed, files);
    run(Command::new("sha256sum")
        .args(["-c", "--quiet", "SHA256SUMS"])
        .current_dir(feed));
}

/// The LuCI app has the ucode plugin and no shell one; the translation the catalog
/// po2lmo makes of po/ru.
fn luci_packages_hold_the_plugin_and_the_catalog(app_ipk: &Path, i18n_ipk: &Path) {
    let files = ipk_list(app_ipk);
    assert!(
        files.contains("./usr/share/rpcd/ucode/luci.ripe-cidr-collector\n"),
        "{files}"
    );
    let include = "./www/luci-static/resources/view/status/include/70_ripe-cidr-collector.js\n";
    assert!(files.contains(include), "{files}");
    assert!(
        !files.contains("/usr/libexec/rpcd/"),
        "a shell plugin beside the ucode one: {files}"
    );
    let po = std::fs::read_to_string(app().join("po/ru/ripe-cidr-collector.po")).unwrap();
    let lmo = "./usr/lib/lua/luci/i18n/ripe-cidr-collector.ru.lmo";
    assert_eq!(
        ipk_file(i18n_ipk, "data.tar.gz", lmo),
        po2lmo::po_to_lmo(&po).unwrap()
    );
}

#[test]
fn release_refuses_missing_or_unusable_keys() {
    if !tools() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (sec, _, apk) = keys(tmp.path());
    // A key with a passphrase: its KDF rounds (bytes 4..8) not zero.
    let text = std::fs::read_to_string(&sec).unwrap();
    let mut raw = pipe("base64 -d", text.lines().nth(1).unwrap().as_bytes());
    raw[4..8].copy_from_slice(&42u32.to_be_bytes());
    let patched = String::from_utf8(pipe("base64 -w0", &raw)).unwrap();
    let locked = tmp.path().join("locked.sec");
    std::fs::write(&locked, format!("untrusted comment: locked\n{patched}\n")).unwrap();
    let missing = tmp.path().join("nope.sec");
    for (usign, apk_key, says) in [
        (None, Some(apk.as_path()), "RELEASE_USIGN_KEY is not set"),
        (Some(sec.as_path()), None, "RELEASE_APK_KEY is not set"),
        (
            Some(missing.as_path()),
            Some(apk.as_path()),
            "nope.sec: no such file",
        ),
        (
            Some(locked.as_path()),
            Some(apk.as_path()),
            "protected by a passphrase",
        ),
        (
            Some(apk.as_path()),
            Some(apk.as_path()),
            "not a usign/signify key",
        ),
        (
            Some(sec.as_path()),
            Some(sec.as_path()),
            "not an EC private key in PEM",
        ),
    ] {
        let out = tmp.path().join("out");
        let o = release(&out, usign, apk_key);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(says), "{says}: {err}");
        // Refused before anything was built or written.
        assert!(!out.exists(), "{says}: {} written", out.display());
    }
}

/// One version for opkg and apk alike (`0.3.0-r1`), the same in Cargo.toml and in
/// both feed Makefiles.
#[test]
fn feed_makefiles_have_the_crates_version() {
    for mk in ["ripe-cidr-collector", "luci-app-ripe-cidr-collector"] {
        let text =
            std::fs::read_to_string(root().join("openwrt").join(mk).join("Makefile")).unwrap();
        let v = text
            .lines()
            .find_map(|l| l.strip_prefix("PKG_VERSION:="))
            .unwrap();
        assert_eq!(v, env!("CARGO_PKG_VERSION"), "{mk}");
        let r = text
            .lines()
            .find_map(|l| l.strip_prefix("PKG_RELEASE:="))
            .unwrap();
        assert!(r.chars().all(|c| c.is_ascii_digit()), "{mk}: release {r}");
    }
}

/// After install or upgrade the LuCI app drops LuCI's caches and reloads rpcd, as
/// luci.mk's postinst does; the translation adds its language. Run on a private
/// /tmp (a mount namespace), with a stub killall.
#[cfg(unix)]
#[test]
fn luci_package_scripts_drop_the_caches_and_reload_rpcd() {
    // SAFETY: plain system call without arguments.
    if unsafe { libc::geteuid() } != 0
        || !has("unshare", &["--version"])
        || !has("rustc", &["--version"])
    {
        return crate::common::cannot_run("needs root, unshare (a private /tmp) and rustc");
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    let o = Command::new("sh")
        .arg(root().join("openwrt/mkpkg-luci.sh"))
        .arg(d)
        .env("SOURCE_DATE_EPOCH", "0")
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let version = format!("{}-r1", env!("CARGO_PKG_VERSION"));
    let script = ipk_file(
        &d.join(format!("luci-app-ripe-cidr-collector_{version}_all.ipk")),
        "control.tar.gz",
        "./postinst-pkg",
    );
    std::fs::write(d.join("postinst-pkg"), script).unwrap();
    stub_killall(d);
    // The test's directory may itself be under /tmp (a checkout there): it is bound to
    // /mnt first, which the private /tmp does not hide (both mounts are the namespace's).
    let sh = format!(
        "mount --bind {0} /mnt && mount -t tmpfs tmpfs /tmp \
         && touch /tmp/luci-indexcache /tmp/luci-indexcache.3f2a.json /tmp/keep \
         && mkdir /tmp/luci-modulecache && touch /tmp/luci-modulecache/x.js \
         && PATH=/mnt/bin:$PATH IPKG_INSTROOT= sh /mnt/postinst-pkg && ls -A /tmp",
        d.display()
    );
    let o = run(Command::new("unshare").args(["-m", "--propagation", "private", "sh", "-c", &sh]));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "keep\n",
        "what is left in /tmp"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("killall.log")).unwrap(),
        "-HUP rpcd\n"
    );
    // In an image being built (IPKG_INSTROOT set) nothing runs.
    std::fs::remove_file(d.join("killall.log")).unwrap();
    let quiet = format!(
        "PATH={0}/bin:$PATH IPKG_INSTROOT=/x sh {0}/postinst-pkg",
        d.display()
    );
    run(Command::new("sh").args(["-c", &quiet]));
    assert!(!d.join("killall.log").exists());
    let i18n = d.join(format!(
        "luci-i18n-ripe-cidr-collector-ru_{version}_all.ipk"
    ));
    translation_adds_its_language(&i18n);
}

/// A killall in `d/bin` that writes its arguments to `d/killall.log`.
fn stub_killall(d: &Path) {
    std::fs::create_dir(d.join("bin")).unwrap();
    // Beside its own bin/, wherever that is mounted.
    let script = "#!/bin/sh\necho \"$*\" >> \"${0%/bin/killall}/killall.log\"\n";
    std::fs::write(d.join("bin/killall"), script).unwrap();
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(d.join("bin/killall"), mode).unwrap();
}

/// The translation's uci-defaults script adds Russian to LuCI's languages, run by
/// default_postinst as base-files' functions.sh does today: every /etc/uci-defaults/
/// file of the package's list run and removed, then postinst-pkg (if any) sourced. No
/// script of the package may then look for the removed file ("can't open", issue 38).
fn translation_adds_its_language(i18n: &Path) {
    let name = "luci-i18n-ripe-cidr-collector-ru";
    let defaults = ipk_file(i18n, "data.tar.gz", &format!("./etc/uci-defaults/{name}"));
    let line = "uci set luci.languages.ru='Русский (Russian)'; uci commit luci\n";
    assert_eq!(String::from_utf8(defaults.clone()).unwrap(), line);
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    let etc = d.join("etc/uci-defaults");
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::write(etc.join(name), defaults).unwrap();
    let control = run(Command::new("tar")
        .args(["-xzOf"])
        .arg(i18n)
        .arg("./control.tar.gz"));
    let mut post = String::new();
    if pipe("tar -tzf -", &control.stdout)
        .windows(15)
        .any(|w| w == b"./postinst-pkg\n")
    {
        let body = pipe("tar -xzOf - ./postinst-pkg", &control.stdout);
        post = String::from_utf8(body)
            .unwrap()
            .replace("/etc/", &format!("{}/etc/", d.display()));
    }
    std::fs::write(d.join("postinst-pkg"), post).unwrap();
    std::fs::create_dir(d.join("bin")).unwrap();
    let uci = "#!/bin/sh\necho \"$*\" >> \"${0%/bin/uci}/uci.log\"\n";
    std::fs::write(d.join("bin/uci"), uci).unwrap();
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(d.join("bin/uci"), mode).unwrap();
    let sh = format!(
        "cd {0} && i={0}/etc/uci-defaults/{name} \
         && {{ ( [ -f \"$i\" ] && cd \"$(dirname $i)\" && . \"$i\" ) && rm -f \"$i\"; }} \
         && (. ./postinst-pkg)",
        d.display()
    );
    let path = format!("{}/bin:{}", d.display(), std::env::var("PATH").unwrap());
    let o = run(Command::new("sh")
        .args(["-c", &sh])
        .env("PATH", path)
        .env("IPKG_INSTROOT", ""));
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(d.join("uci.log")).unwrap(),
        "set luci.languages.ru=Русский (Russian)\ncommit luci\n"
    );
    assert!(!etc.join(name).exists());
}

/// Issue 38 item 16: the README's feed address is where the release workflow
/// publishes `cross/release.sh`'s output (GitHub Pages of the repository the packages
/// name), the files its install lines fetch are among those the workflow insists on,
/// and the README says first how to build the packages and that the feed exists only
/// once a release is tagged.
#[test]
fn readme_feed_is_what_the_release_workflow_publishes() {
    let read = |p: &str| std::fs::read_to_string(root().join(p)).unwrap();
    let (readme, workflow) = (read("README.md"), read(".github/workflows/release.yml"));
    let repo = read("openwrt/mkpkg-luci.sh")
        .lines()
        .find_map(|l| l.strip_prefix("url=\"https://github.com/"))
        .map(|r| r.trim_end_matches('"').to_string())
        .expect("the packages' URL");
    let (owner, name) = repo.split_once('/').unwrap();
    let pages = format!("https://{owner}.github.io/{name}/");
    let feed = readme.find(&pages).expect("the README's feed address");
    for wanted in [
        "tags: [\"v*\"]",
        "cross/release.sh --out site",
        "secrets.RELEASE_USIGN_KEY",
        "secrets.RELEASE_APK_KEY",
        "actions/upload-pages-artifact",
        "path: site",
        "actions/deploy-pages",
    ] {
        assert!(workflow.contains(wanted), "the workflow lacks {wanted:?}");
    }
    // What the install lines fetch below the address, the workflow checks is there.
    for file in [
        "keys/usign.pub",
        "keys/ripe-cidr-collector.pem",
        "/packages.adb",
    ] {
        assert!(
            readme[feed..].contains(file),
            "the README fetches no {file}"
        );
        let name = file.rsplit('/').next().unwrap();
        assert!(
            workflow.contains(name),
            "the workflow does not check {name}"
        );
    }
    let build = readme
        .find("cross/build.sh mipsel-unknown-linux-musl")
        .unwrap();
    assert!(
        build < feed,
        "the README names the feed before how to build it"
    );
    let said = readme[..feed].contains("exists only once a release has been");
    assert!(
        said,
        "the README does not say the feed needs a tagged release"
    );
}
