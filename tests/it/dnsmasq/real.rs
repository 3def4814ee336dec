//! What the dnsmasq tests share: a real dnsmasq in the foreground, a DNS query over
//! UDP, packets for the counters, the database and the `render` command.

use std::net::UdpSocket;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;

use crate::common::TestDir;
use crate::netlink::Nft;

/// A dnsmasq in the foreground, killed when dropped.
pub(super) struct Dnsmasq(Child);

impl Drop for Dnsmasq {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(super) fn start_dnsmasq(bin: &Path, port: u16, args: &[String]) -> Dnsmasq {
    let child = Command::new(bin)
        .args([
            "--keep-in-foreground",
            "--conf-file=/dev/null",
            "--no-resolv",
            "--no-hosts",
            "--listen-address=127.0.0.1",
            "--bind-interfaces",
            "--pid-file=",
            "--log-facility=-",
            "--log-queries",
        ])
        .arg(format!("--port={port}"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Dnsmasq(child)
}

/// A DNS query for the A record of `name`, as a resolver sends it.
pub(super) fn query(name: &str) -> Vec<u8> {
    let mut q = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    for label in name.split('.') {
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.extend_from_slice(&[0, 0, 1, 0, 1]);
    q
}

/// Asks the dnsmasq at 127.0.0.1:`port` for `name`'s A records until it answers
/// (it may still be starting); returns the addresses of the answer section.
pub(super) fn resolve(port: u16, name: &str) -> Vec<[u8; 4]> {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let q = query(name);
    let start = Instant::now();
    let mut buf = [0u8; 512];
    let n = loop {
        s.send_to(&q, ("127.0.0.1", port)).unwrap();
        if let Ok(n) = s.recv(&mut buf) {
            break n;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no answer for {name}"
        );
    };
    let r = &buf[..n];
    assert_eq!(r[3] & 0x0f, 0, "rcode of the answer for {name}");
    let answers = u16::from_be_bytes([r[6], r[7]]);
    // Skip the question (its name as sent, then type and class), then read each
    // answer: a compressed name pointer, type, class, TTL, length, data.
    let mut at = q.len();
    let mut out = Vec::new();
    for _ in 0..answers {
        let kind = u16::from_be_bytes([r[at + 2], r[at + 3]]);
        let len = u16::from_be_bytes([r[at + 10], r[at + 11]]) as usize;
        if kind == 1 && len == 4 {
            out.push([r[at + 12], r[at + 13], r[at + 14], r[at + 15]]);
        }
        at += 12 + len;
    }
    out
}

/// Sends a datagram to `to` (routed over `lo`), for the counters.
pub(super) fn send(to: &str) {
    let s = UdpSocket::bind("0.0.0.0:0").unwrap();
    s.send_to(b"x", (to, 9)).unwrap();
}

/// The packet count of the rule that mentions `set` in chain `out`.
pub(super) fn packets(nft: &Nft, set: &str) -> u64 {
    let chain = nft.ok(&["list", "chain", "inet", "ripe_cidr", "out"]);
    let line = chain
        .lines()
        .find(|l| l.contains(&format!("@{set} ")))
        .unwrap_or_else(|| panic!("no rule for {set} in {chain}"));
    let n = line.split("counter packets ").nth(1).unwrap_or("");
    n.split_whitespace().next().unwrap_or("").parse().unwrap()
}

pub(super) fn store(dir: &TestDir, kind: Kind, source: &str, values: &[&str]) {
    let values: Vec<String> = values.iter().map(|s| s.to_string()).collect();
    let mut d = db::open(&dir.paths()).unwrap();
    d.merge_source(
        kind,
        source,
        &values,
        ripe_cidr_collector::util::unix_now(),
        0,
    )
    .unwrap();
}

pub(super) fn render(dir: &TestDir) {
    let o = dir.cmd().arg("render").output().unwrap();
    assert!(
        o.status.success(),
        "render: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

pub(super) fn runs(file: &Path) -> usize {
    std::fs::read_to_string(file).map_or(0, |s| s.lines().count())
}
