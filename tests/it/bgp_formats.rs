//! The `bird` format's includes, its communities and the BIRD configurations of the
//! docs, parsed by the real BIRD 2 (`bird -p`); `community=` of the API. (The BGP
//! sessions themselves: `bgp.rs`.)

use std::path::{Path, PathBuf};
use std::process::Command;

use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;
use serde_json::json;

use crate::bgp::strings;
use crate::common::{cannot_run, TestDir};
use crate::netlink::find;

/// `bird -p` accepts every include the format writes: both families, through an
/// interface, a gateway and as blackholes, with a standard, a large or no community.
#[test]
fn bird_parses_every_include_with_communities() {
    if find("bird").is_none() {
        return cannot_run("bird (Debian bird2) is not installed");
    }
    let t = TestDir::new();
    let stored = strings(&[
        "91.108.4.0/22",
        "192.0.2.1",
        "2001:b28:f23d::/48",
        "2001:db8::1",
    ]);
    db::open(&t.paths())
        .unwrap()
        .merge_source(Kind::Asn, "62041", &stored, 1_000_000, 0)
        .unwrap();
    t.config(&json!({"groups": {"vpn": {"asns": ["62041"], "bgp_community": "65000:1:100"}}}));
    let mut checked = 0;
    for (family, channel, gateway) in [("4", "ipv4", "192.0.2.254"), ("6", "ipv6", "2001:db8::fe")]
    {
        for via in ["wg0", gateway, "blackhole"] {
            for community in [None, Some("65000:100"), Some("4200000000:7:4294967295")] {
                let mut args = vec!["export", "--group", "vpn", "--format", "bird"];
                args.extend(["--family", family, "--via", via]);
                if let Some(c) = community {
                    args.extend(["--community", c]);
                }
                let out = t.run(&args);
                assert!(
                    out.status.success(),
                    "{args:?}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let text = String::from_utf8(out.stdout).unwrap();
                // The group's own community unless a one-off was asked for.
                let want = match community {
                    None => "bgp_large_community.add((65000,1,100));".to_string(),
                    Some(c) => c
                        .parse::<ripe_cidr_collector::format::Community>()
                        .unwrap()
                        .bird_add(),
                };
                assert_eq!(text.lines().count(), 2, "{text}");
                assert!(text.lines().all(|l| l.contains(&want)), "{args:?}: {text}");
                check_with_bird(&t, channel, &text, checked);
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 18);
    // A bad community is refused naming it (usage: exit 2).
    let out = t.run(&[
        "export", "--group", "vpn", "--format", "bird", "--family", "4",
    ]);
    assert!(out.status.code() == Some(2)); // needs via
    let out = t.run(&[
        "export",
        "--group",
        "vpn",
        "--format",
        "bird",
        "--family",
        "4",
        "--via",
        "blackhole",
        "--community",
        "65000:70000",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"65000:70000\""));
}

fn check_with_bird(t: &TestDir, channel: &str, routes: &str, n: usize) {
    let inc: PathBuf = t.file(&format!("routes{n}.conf"));
    std::fs::write(&inc, routes).unwrap();
    let conf = t.file(&format!("bird{n}.conf"));
    std::fs::write(
        &conf,
        format!(
            "router id 192.0.2.1;\nprotocol device {{}}\nprotocol static {{\n  {channel};\n  include \"{}\";\n}}\n",
            inc.display()
        ),
    )
    .unwrap();
    let check = Command::new("bird")
        .arg("-p")
        .arg("-c")
        .arg(&conf)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "bird -p: {}\n{routes}",
        String::from_utf8_lossy(&check.stderr)
    );
}

/// `GET /addresses?format=bird` carries the group's community, `community=` a
/// one-off; a bad one is a 400 naming it.
#[cfg(feature = "api")]
#[test]
fn api_bird_listing_carries_the_community() {
    let t = TestDir::new();
    db::open(&t.paths())
        .unwrap()
        .merge_source(
            Kind::Asn,
            "62041",
            &strings(&["91.108.4.0/22"]),
            1_000_000,
            0,
        )
        .unwrap();
    t.config(&json!({"groups": {"vpn": {"asns": ["62041"], "bgp_community": "65000:100"}}}));
    let (_serve, addr) = t.spawn_listening(&["serve"]);
    let q = "/addresses?group=vpn&format=bird&family=4&via=blackhole";
    let (status, body) = crate::common::http_get(addr, q);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        "route 91.108.4.0/22 blackhole { bgp_community.add((65000,100)); };\n"
    );
    let (status, body) = crate::common::http_get(addr, &format!("{q}&community=65000:1:2"));
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("bgp_large_community.add((65000,1,2));"),
        "{body}"
    );
    for bad in ["65000:65536", "1:2:3:4", "x"] {
        let (status, body) = crate::common::http_get(addr, &format!("{q}&community={bad}"));
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(
            body.contains(&format!("\\\"{bad}\\\"")) || body.contains(bad),
            "{body}"
        );
    }
    let (status, body) =
        crate::common::http_get(addr, "/addresses?group=vpn&format=text&community=65000:1");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("community is for the bird format"), "{body}");
}

/// Every BIRD configuration docs/bgp.md and docker/bird give parses (`bird -p`), with
/// the includes it names present.
#[test]
fn bird_parses_the_configurations_of_the_docs() {
    if find("bird").is_none() {
        return cannot_run("bird (Debian bird2) is not installed");
    }
    let t = TestDir::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/bgp.md")).unwrap();
    let mut blocks: Vec<String> = Vec::new();
    let mut open: Option<Vec<&str>> = None;
    for line in doc.lines() {
        match (line.starts_with("```"), open.take()) {
            (true, None) => open = Some(Vec::new()),
            (true, Some(b)) => blocks.push(b.join("\n")),
            (false, Some(mut b)) => {
                b.push(line);
                open = Some(b);
            }
            (false, None) => {}
        }
    }
    let docker = std::fs::read_to_string(root.join("docker/bird/bird.conf")).unwrap();
    blocks.push(docker);
    let dir = t.path().display().to_string();
    let mut checked = 0;
    for (n, b) in blocks.iter().enumerate() {
        // Configurations, not the routers' CLI lines (`/routing ...`) nor JSON.
        if !b.contains("protocol ") || b.starts_with('/') || b.starts_with('{') {
            continue;
        }
        let b = b
            .replace("/etc/bird/groups/", &format!("{dir}/"))
            .replace("/bgp/", &format!("{dir}/"));
        for inc in b
            .lines()
            .filter_map(|l| l.trim().strip_prefix("include \""))
        {
            std::fs::write(inc.trim_end_matches("\";"), "").unwrap();
        }
        let head = match b.contains("router id") {
            true => String::new(),
            false => "router id 192.0.2.9;\nprotocol device {}\n".into(),
        };
        let conf = t.file(&format!("doc{n}.conf"));
        std::fs::write(&conf, format!("{head}{b}\n")).unwrap();
        let check = Command::new("bird")
            .arg("-p")
            .arg("-c")
            .arg(&conf)
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "bird -p: {}\n{b}",
            String::from_utf8_lossy(&check.stderr)
        );
        checked += 1;
    }
    // The route server, the Keenetic's and the Linux peer's BIRD, docker/bird.
    assert_eq!(checked, 4);
}
