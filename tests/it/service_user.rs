//! The OpenWrt layout's two users: root runs the CLI (and LuCI's rpcd plugin), the
//! daemon runs as its own user in a data directory that user owns. Whatever root
//! creates there (the config lock, config.json, the database) must stay usable by the
//! daemon: its API writes work after a root edit, and when they cannot, the 503 says
//! which file and why.

use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{
    bin, cannot_run, free_port, ripe_body, wait_listening, FakeServer, Proc, Reply, TestDir,
};

/// The service's user here: nobody, which every Linux has.
const UID: u32 = 65534;

/// `METHOD target` with a JSON body and `Connection: close`; the status and body.
fn send(addr: SocketAddr, method: &str, target: &str, body: &str) -> (u16, String) {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        c,
        "{method} {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = crate::common::read_retrying(&mut c, &mut buf) {
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
    }
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let status = raw.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = raw.split_once("\r\n\r\n").map(|(_, b)| b.to_string());
    (status, body.unwrap_or_default())
}

fn owner(p: &std::path::Path) -> u32 {
    fs::metadata(p).unwrap().uid()
}

#[test]
fn api_writes_work_after_root_created_the_files() {
    // SAFETY: no arguments.
    if unsafe { libc::geteuid() } != 0 || Command::new("setpriv").arg("--version").output().is_err()
    {
        return cannot_run("needs root and setpriv (util-linux) to run the daemon as nobody");
    }
    let ripe = FakeServer::start(|_| Reply::json(200, ripe_body(&["192.0.2.0/24".into()])));
    let t = TestDir::new();
    // The data directory belongs to the service's user (the init script's chown).
    std::os::unix::fs::chown(t.path(), Some(UID), Some(UID)).unwrap();
    // Root edits (making the lock and config.json) and collects (the database).
    let o = t.run(&["asn", "add", "AS64496"]);
    assert!(o.status.success(), "{o:?}");
    // The test's upstream, written in place (the file keeps its owner).
    t.config(&serde_json::json!({
        "asns": ["64496"],
        "ripe": {"url": ripe.url("/data.json"), "retries": 0},
    }));
    let o = t.run(&["run"]);
    assert!(o.status.success(), "{o:?}");
    let lock = t.file(".config.json.lock");
    for f in [&lock, &t.file("config.json"), &t.file("ripe.db")] {
        assert_eq!(owner(f), UID, "{} is not the service user's", f.display());
    }
    // The daemon's API as the service's user.
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let child = Command::new("setpriv")
        .args([
            &format!("--reuid={UID}"),
            &format!("--regid={UID}"),
            "--clear-groups",
        ])
        .arg(bin())
        .arg("--data-dir")
        .arg(t.path())
        .args(["serve", "--listen", &addr.to_string()])
        .env_remove("RIPE_DB")
        .env_remove("RIPE_SNAPSHOT")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut serve = Proc::drained(child, None);
    assert!(
        wait_listening(addr, Duration::from_secs(10)),
        "{}",
        serve.stderr()
    );
    let (code, body) = send(addr, "POST", "/asns", r#"{"asn":"AS64497"}"#);
    assert_eq!(code, 201, "{body}: {}", serve.stderr());
    // A purge writes the database root made.
    let (code, body) = send(addr, "DELETE", "/asns/AS64496?purge=true", "");
    assert_eq!(code, 200, "{body}: {}", serve.stderr());
    // A lock an earlier version left to root: readable, so it is taken read-only
    // (flock needs no write permission) ...
    std::os::unix::fs::chown(&lock, Some(0), Some(0)).unwrap();
    fs::set_permissions(&lock, fs::Permissions::from_mode(0o644)).unwrap();
    let (code, body) = send(addr, "POST", "/asns", r#"{"asn":"AS64498"}"#);
    assert_eq!(code, 201, "{body}: {}", serve.stderr());
    // ... and one the service's user cannot open at all is named in the 503.
    fs::set_permissions(&lock, fs::Permissions::from_mode(0o600)).unwrap();
    let (code, body) = send(addr, "POST", "/asns", r#"{"asn":"AS64499"}"#);
    let want = format!(
        "configuration unavailable: cannot open {}: permission denied",
        lock.display()
    );
    assert_eq!(code, 503, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"], want.as_str(), "{body}");
    let mut cfg = String::new();
    fs::File::open(t.file("config.json"))
        .unwrap()
        .read_to_string(&mut cfg)
        .unwrap();
    assert!(cfg.contains("64498") && !cfg.contains("64499"), "{cfg}");
}
