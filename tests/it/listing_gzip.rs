//! Listings gzip-compressed for clients that accept it (SPEC "Serving many routers"):
//! the same content, `Vary: Accept-Encoding`, an ETag of their own that `304`
//! answers; plain without the `gzip` feature (the router package). Against the real
//! binary over 127.0.0.1; decompressed by the real `gzip`.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::Duration;

use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;

use crate::common::*;

/// An answer: status, head (lowercase names) and body.
struct Answer {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

fn get(addr: SocketAddr, target: &str, headers: &str) -> Answer {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let req =
        format!("GET {target} HTTP/1.1\r\nHost: localhost\r\n{headers}Connection: close\r\n\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let all = read_until_end(&mut s);
    let end = (all.windows(4).position(|w| w == b"\r\n\r\n"))
        .unwrap_or_else(|| panic!("{target} {headers:?}: {:?}", String::from_utf8_lossy(&all)));
    let head = String::from_utf8_lossy(&all[..end]).into_owned();
    Answer {
        status: head[9..12].parse().unwrap(),
        head,
        body: all[end + 4..].to_vec(),
    }
}

fn gunzip(gz: &[u8]) -> Vec<u8> {
    let mut child = Command::new("gzip")
        .arg("-dc")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let gz = gz.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&gz).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success(), "gzip -dc failed");
    out.stdout
}

#[test]
fn listings_are_gzip_compressed_for_clients_that_take_it() {
    let t = TestDir::new();
    let values: Vec<String> = (0..20_000u32)
        .map(|i| format!("{}/32", std::net::Ipv4Addr::from(0x0a00_0000u32 + i * 2)))
        .collect();
    let mut d = db::open(&t.paths()).unwrap();
    let now = ripe_cidr_collector::util::unix_now();
    d.merge_source(Kind::Asn, "64500", &values, now, 7).unwrap();
    drop(d);
    std::thread::sleep(Duration::from_millis(1100));
    let (_p, a) = t.spawn_listening(&["serve"]);
    for target in [
        "/addresses",
        "/addresses?format=nft",
        "/addresses?format=routeros&page=2",
    ] {
        let plain = get(a, target, "");
        let gz = get(a, target, "Accept-Encoding: deflate, gzip\r\n");
        assert_eq!((plain.status, gz.status), (200, 200), "{target}");
        assert_eq!(plain.header("Vary"), Some("Accept-Encoding"), "{target}");
        assert_eq!(plain.header("Content-Encoding"), None, "{target}");
        let (plain_tag, gz_tag) = (plain.header("ETag").unwrap(), gz.header("ETag").unwrap());
        if !cfg!(feature = "gzip") {
            // The router build: plain for everyone.
            assert_eq!(
                (gz.header("Content-Encoding"), &gz.body),
                (None, &plain.body)
            );
            continue;
        }
        assert_eq!(gz.header("Content-Encoding"), Some("gzip"), "{target}");
        assert_eq!(gz.header("Vary"), Some("Accept-Encoding"), "{target}");
        assert_eq!(gunzip(&gz.body), plain.body, "{target}");
        assert!(
            gz.body.len() * 3 < plain.body.len(),
            "{target}: {} of {}",
            gz.body.len(),
            plain.body.len()
        );
        assert_ne!(plain_tag, gz_tag);
        assert_eq!(gz_tag, format!("{}-gz\"", plain_tag.trim_end_matches('"')));
        // Made once: a second client gets the same bytes and tag.
        let again = get(a, target, "Accept-Encoding: gzip\r\n");
        assert_eq!(
            (again.header("ETag"), &again.body),
            (Some(gz_tag), &gz.body)
        );
        // 304 with the compressed body's tag; the plain tag does not match it.
        let cond = format!("Accept-Encoding: gzip\r\nIf-None-Match: {gz_tag}\r\n");
        assert_eq!(get(a, target, &cond).status, 304, "{target}");
        let cond = format!("Accept-Encoding: gzip\r\nIf-None-Match: {plain_tag}\r\n");
        assert_eq!(get(a, target, &cond).status, 200, "{target}");
        // q=0 refuses gzip.
        let refused = get(a, target, "Accept-Encoding: gzip;q=0\r\n");
        assert_eq!(
            (refused.header("Content-Encoding"), &refused.body),
            (None, &plain.body)
        );
        eprintln!(
            "{target}: {} bytes plain, {} gzip",
            plain.body.len(),
            gz.body.len()
        );
    }
}
