//! The OpenWrt package's shell parts, off-router: the procd init script against stub
//! procd/UCI functions (`openwrt/tests/init-test.sh`), and shellcheck on every shell
//! file of the repository. Each skips with a message when its tool is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
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
        eprintln!("skipping: no `sh` to run openwrt/tests/init-test.sh");
        return;
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

/// The shell files: `*.sh`, `.ci/run`, the init script and the uci-defaults script.
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
        {
            out.push(p);
        }
    }
}

#[test]
fn shellcheck_clean() {
    if !has("shellcheck", &["--version"]) {
        eprintln!("skipping: shellcheck is not installed (apt-get install shellcheck)");
        return;
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
