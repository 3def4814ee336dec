//! contrib/systemd: the daemon unit and the timer with its oneshot `run` unit pass
//! `systemd-analyze verify` (no error, no warning), and keep the hardening they promise.

use std::path::PathBuf;
use std::process::Command;

use crate::common::{bin, cannot_run, TestDir};

const UNITS: [&str; 3] = [
    "ripe-cidr-collector.service",
    "ripe-cidr-collector-run.service",
    "ripe-cidr-collector-run.timer",
];

fn unit(name: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("contrib/systemd");
    std::fs::read_to_string(dir.join(name)).unwrap()
}

#[test]
fn the_units_pass_systemd_analyze_verify() {
    let tool = "/usr/bin/systemd-analyze";
    if !std::path::Path::new(tool).exists() {
        return cannot_run("systemd-analyze (apt-get install systemd)");
    }
    let t = TestDir::new();
    // The binary where the units expect it is this build.
    let exe = bin().display().to_string();
    let mut files = Vec::new();
    for name in UNITS {
        let text = unit(name).replace("/usr/local/bin/ripe-cidr-collector", &exe);
        let path = t.file(name);
        std::fs::write(&path, text).unwrap();
        files.push(path);
    }
    let r = Command::new(tool)
        .args(["verify", "--man=no"])
        .args(&files)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success() && err.trim().is_empty(), "{err}");
    // The check fails for a broken unit, so the one above says something.
    std::fs::write(
        &files[0],
        unit(UNITS[0]).replace("Type=simple", "Type=simple\nNoSuchKey=1"),
    )
    .unwrap();
    let r = Command::new(tool)
        .args(["verify", "--man=no"])
        .args(&files)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&r.stderr).contains("NoSuchKey"),
        "{r:?}"
    );
}

#[test]
fn the_units_are_hardened() {
    for name in [
        "ripe-cidr-collector.service",
        "ripe-cidr-collector-run.service",
    ] {
        let text = unit(name);
        for line in [
            "DynamicUser=yes",
            "StateDirectory=ripe-cidr-collector",
            "ProtectSystem=strict",
            "NoNewPrivileges=yes",
            "CapabilityBoundingSet=\n",
            "AmbientCapabilities=\n",
        ] {
            assert!(text.contains(line), "{name} lacks {line:?}");
        }
        // CAP_NET_ADMIN only as the documented addition for a load output.
        for l in text.lines().filter(|l| l.contains("CAP_NET_ADMIN")) {
            assert!(l.starts_with('#'), "{name}: {l}");
        }
    }
    assert!(unit("ripe-cidr-collector.service").contains(" daemon "));
    assert!(unit("ripe-cidr-collector-run.service").contains("Type=oneshot"));
    assert!(unit("ripe-cidr-collector-run.timer").contains("Persistent=true"));
}
