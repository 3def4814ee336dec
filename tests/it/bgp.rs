//! Groups handed to other routers over BGP through BIRD 2 (Debian's `bird2`): two BIRD
//! instances in two network namespaces joined by a veth. The route server (this
//! test's own namespace, `unshare -n`) loads the includes the product's `bird`
//! outputs write; the peer (a second namespace, held by a `sleep` started with
//! `unshare -n`) has two sessions with it, one per community it asked for, each into
//! its own table. Each BIRD is started by the test with its own control socket and
//! configuration in the test's directory, and killed by pid at the end.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ripe_cidr_collector::db;
use ripe_cidr_collector::source::Kind;
use serde_json::json;

use crate::common::{cannot_run, eventually, resource_of, ripe_body, FakeServer, Reply, TestDir};
use crate::netlink::find;

/// A process killed (by its pid) and reaped when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `ip ARGS` in the namespace of `pid` (this thread's when `None`).
fn ip(ns: Option<u32>, args: &[&str]) {
    let mut c = match ns {
        Some(pid) => {
            let mut c = Command::new("nsenter");
            c.args(["-t", &pid.to_string(), "-n", "ip"]);
            c
        }
        None => Command::new(find("ip").expect("ip (iproute2)")),
    };
    let o = c.args(args).output().unwrap();
    assert!(
        o.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// BIRD in the foreground (`-f`, so the child's pid is BIRD's) with `conf` and its
/// control socket `sock`, in the namespace of `ns` (this thread's when `None`).
fn bird(ns: Option<u32>, conf: &Path, sock: &Path) -> Killed {
    let mut c = match ns {
        Some(pid) => {
            let mut c = Command::new("nsenter");
            c.args(["-t", &pid.to_string(), "-n", "bird"]);
            c
        }
        None => Command::new("bird"),
    };
    let child = c
        .arg("-f")
        .arg("-c")
        .arg(conf)
        .arg("-s")
        .arg(sock)
        .arg("-P")
        .arg(sock.with_extension("pid"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let b = Killed(child);
    assert!(
        eventually(Duration::from_secs(20), || birdc(sock, &["show", "status"])
            .contains("Daemon is up")),
        "BIRD with {} did not come up",
        conf.display()
    );
    b
}

/// `birdc -s SOCK ARGS`: its output.
fn birdc(sock: &Path, args: &[&str]) -> String {
    let o = Command::new("birdc")
        .arg("-s")
        .arg(sock)
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The routes of `table` on the BIRD at `sock`: each prefix with its communities
/// (`(65000,100)`, `(65000, 1, 100)`), from `show route all`.
fn routes(sock: &Path, table: &str) -> Vec<(String, String)> {
    let all = birdc(sock, &["show", "route", "all", "table", table]);
    let mut out: Vec<(String, String)> = Vec::new();
    for line in all.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if !line.starts_with(char::is_whitespace) && first.contains('/') {
            out.push((first.to_string(), String::new()));
        } else if let (Some(c), Some(last)) = (line.trim().strip_prefix("BGP."), out.last_mut()) {
            if c.contains("community:") {
                last.1.push_str(c.split_once(": ").map_or("", |(_, v)| v));
            }
        }
    }
    out.sort();
    out
}

fn prefixes(r: &[(String, String)]) -> Vec<String> {
    r.iter().map(|(p, _)| p.clone()).collect()
}

/// The route server's side: one `protocol static` per group include, one `protocol
/// bgp` per peer exporting the group it asked for by community (what docs/bgp.md
/// gives).
fn server_conf(vpn: &Path, other: &Path) -> String {
    format!(
        r#"router id 10.99.0.1;
protocol device {{}}
protocol static vpn_v4 {{
  ipv4;
  include "{}";
}}
protocol static other_v4 {{
  ipv4;
  include "{}";
}}
template bgp peer {{
  local 10.99.0.1 as 65000;
  connect delay time 1;
  connect retry time 2;
}}
protocol bgp asks_vpn from peer {{
  neighbor 10.99.0.2 as 65001;
  ipv4 {{ import none; export where (65000,100) ~ bgp_community; export limit 200000; next hop self; }};
}}
protocol bgp asks_other from peer {{
  local 10.99.0.5 as 65000;
  neighbor 10.99.0.6 as 65002;
  ipv4 {{ import none; export where (65000,200) ~ bgp_community; export limit 200000; next hop self; }};
}}
"#,
        vpn.display(),
        other.display()
    )
}

/// The peer's side: a session per community it asked for, each into its own table
/// (each session between its own pair of addresses: BIRD tells incoming connections
/// apart by the neighbor's address).
const PEER_CONF: &str = r#"router id 10.99.0.2;
protocol device {}
ipv4 table t_vpn;
ipv4 table t_other;
protocol bgp rs_vpn {
  local 10.99.0.2 as 65001;
  neighbor 10.99.0.1 as 65000;
  connect delay time 1;
  connect retry time 2;
  ipv4 { table t_vpn; import all; export none; };
}
protocol bgp rs_other {
  local 10.99.0.6 as 65002;
  neighbor 10.99.0.5 as 65000;
  connect delay time 1;
  connect retry time 2;
  ipv4 { table t_other; import all; export none; };
}
"#;

/// What the fake RIPEstat answers: per ASN its prefixes, or a failure (500).
type Answers = Arc<Mutex<(Vec<String>, Vec<String>, bool)>>;

fn fake_ripe(answers: &Answers) -> FakeServer {
    let a = answers.clone();
    FakeServer::start(move |seen| {
        let (vpn, other, fail) = a.lock().unwrap().clone();
        if fail {
            return Reply::json(500, "{}");
        }
        match resource_of(&seen.url).as_deref() {
            Some("62041") => Reply::json(200, ripe_body(&vpn)),
            _ => Reply::json(200, ripe_body(&other)),
        }
    })
}

pub(crate) fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Everything the BGP test needs, or why it cannot run.
fn tools() -> Result<(), String> {
    if unsafe { libc::geteuid() } != 0 {
        return Err("needs root (network namespaces, veth)".into());
    }
    for (tool, pkg) in [
        ("bird", "bird2"),
        ("birdc", "bird2"),
        ("nsenter", "util-linux"),
    ] {
        if find(tool).is_none() {
            return Err(format!("{tool} not found (apt-get install {pkg})"));
        }
    }
    find("ip").ok_or("ip not found (apt-get install iproute2)")?;
    Ok(())
}

#[test]
fn peer_receives_its_group_over_bgp_and_nothing_is_withdrawn_on_failure() {
    if let Err(why) = tools() {
        return cannot_run(&why);
    }
    // SAFETY: plain system call; it only changes this thread's namespace.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return cannot_run("cannot create a network namespace");
    }
    ip(None, &["link", "set", "lo", "up"]);
    // The peer's namespace, held by a process of its own.
    let holder = Killed(
        Command::new("unshare")
            .args(["-n", "sleep", "600"])
            .spawn()
            .unwrap(),
    );
    let ns = holder.0.id();
    assert!(eventually(Duration::from_secs(10), || {
        let own = std::fs::read_link("/proc/thread-self/ns/net").ok();
        let its = std::fs::read_link(format!("/proc/{ns}/ns/net")).ok();
        its.is_some() && its != own
    }));
    let peer_ns = ns.to_string();
    ip(
        None,
        &[
            "link", "add", "ra", "type", "veth", "peer", "name", "rb", "netns", &peer_ns,
        ],
    );
    ip(None, &["addr", "add", "10.99.0.1/24", "dev", "ra"]);
    ip(None, &["addr", "add", "10.99.0.5/24", "dev", "ra"]);
    ip(None, &["link", "set", "ra", "up"]);
    for args in [
        &["link", "set", "lo", "up"][..],
        &["addr", "add", "10.99.0.2/24", "dev", "rb"],
        &["addr", "add", "10.99.0.6/24", "dev", "rb"],
        &["link", "set", "rb", "up"],
    ] {
        ip(Some(ns), args);
    }

    let vpn1 = strings(&[
        "149.154.160.0/20",
        "91.108.12.0/22",
        "91.108.4.0/22",
        "91.108.8.0/22",
    ]);
    let other = strings(&["198.38.96.0/19", "45.57.0.0/17"]);
    let answers: Answers = Arc::new(Mutex::new((vpn1.clone(), other.clone(), false)));
    let ripe = fake_ripe(&answers);
    let t = TestDir::new();
    let (server_sock, peer_sock) = (t.file("server.ctl"), t.file("peer.ctl"));
    let (vpn_inc, other_inc) = (t.file("vpn_v4.conf"), t.file("other_v4.conf"));
    let configure = format!("birdc -s {} configure", server_sock.display());
    t.config(&json!({
        "ripe": {"url": ripe.url("/data/announced-prefixes/data.json"), "retries": 0},
        "groups": {
            "vpn": {"asns": ["62041"], "bgp_community": "65000:100"},
            "other": {"asns": ["2906"], "bgp_community": "65000:200"}
        },
        "outputs": [
            {"format": "bird", "group": "vpn", "family": 4, "via": "blackhole",
             "path": vpn_inc, "command": configure},
            {"format": "bird", "group": "other", "family": 4, "via": "blackhole",
             "path": other_inc, "command": configure}
        ]
    }));
    // BIRD needs its includes before it starts: empty ones, as docker/bird does.
    for f in [&vpn_inc, &other_inc] {
        std::fs::write(f, "").unwrap();
    }
    let server_conf_path = t.file("server.conf");
    std::fs::write(&server_conf_path, server_conf(&vpn_inc, &other_inc)).unwrap();
    let peer_conf_path = t.file("peer.conf");
    std::fs::write(&peer_conf_path, PEER_CONF).unwrap();
    let _server = bird(None, &server_conf_path, &server_sock);
    let _peer = bird(Some(ns), &peer_conf_path, &peer_sock);

    let run = t.run(&["run"]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // The route server loaded the includes the product wrote.
    let loaded = routes(&server_sock, "master4");
    assert_eq!(loaded.len(), 6, "{loaded:?}");
    let ok = eventually(Duration::from_secs(60), || {
        routes(&peer_sock, "t_vpn").len() == 4
    });
    let got = routes(&peer_sock, "t_vpn");
    assert!(
        ok,
        "{got:?}\n{}",
        birdc(&peer_sock, &["show", "protocols", "all"])
    );
    assert_eq!(prefixes(&got), vpn1);
    assert!(got.iter().all(|(_, c)| c == "(65000,100)"), "{got:?}");
    // The peer that asked for the other community has the other group only.
    let ok = eventually(Duration::from_secs(60), || {
        routes(&peer_sock, "t_other").len() == 2
    });
    let got = routes(&peer_sock, "t_other");
    assert!(
        ok,
        "{got:?}\n{}\n{}",
        birdc(&peer_sock, &["show", "route", "all", "table", "t_other"]),
        birdc(&server_sock, &["show", "protocols", "all", "asks_other"])
    );
    assert_eq!(prefixes(&got), other, "{got:?}");
    assert!(got.iter().all(|(_, c)| c == "(65000,200)"), "{got:?}");

    // A change of the list (a prefix added; one the upstream no longer lists stays
    // for `ttl_days`) reaches the peer after the next run.
    let mut vpn2 = vpn1.clone();
    vpn2.push("95.161.64.0/20".into());
    answers.lock().unwrap().0 = vpn2.clone();
    let run = t.run(&["run"]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let ran = Instant::now();
    let ok = eventually(Duration::from_secs(60), || {
        prefixes(&routes(&peer_sock, "t_vpn")) == vpn2
    });
    assert!(
        ok,
        "{:?}\n{}\n{}\n{}",
        routes(&peer_sock, "t_vpn"),
        String::from_utf8_lossy(&run.stderr),
        std::fs::read_to_string(&vpn_inc).unwrap(),
        birdc(&server_sock, &["show", "route", "table", "master4"])
    );
    println!(
        "a change reached the peer {:?} after the run",
        ran.elapsed()
    );

    // A run whose upstream fails, and one whose answer the trust gate holds (one
    // prefix of five: a shrink of 80 %), withdraw nothing: the includes stay as they
    // were and the peer keeps every route.
    let before = std::fs::read(&vpn_inc).unwrap();
    answers.lock().unwrap().2 = true;
    let run = t.run(&["run"]);
    assert_eq!(
        run.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    *answers.lock().unwrap() = (strings(&["91.108.4.0/22"]), other.clone(), false);
    let run = t.run(&["run"]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(std::fs::read(&vpn_inc).unwrap(), before);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(prefixes(&routes(&peer_sock, "t_vpn")), vpn2);
    drop(ripe);
}

/// A database with nothing stored for the group (new, or emptied) never writes an
/// empty include over one that announces routes, and runs no command; a group
/// without sources gets its empty include.
#[test]
fn an_empty_database_never_writes_an_empty_include() {
    let t = TestDir::new();
    let (vpn_inc, none_inc, ran) = (t.file("vpn.conf"), t.file("none.conf"), t.file("ran"));
    let announced = "route 91.108.4.0/22 blackhole { bgp_community.add((65000,100)); };\n";
    std::fs::write(&vpn_inc, announced).unwrap();
    let touch = format!("touch {}", ran.display());
    t.config(&json!({
        "groups": {"vpn": {"asns": ["62041"], "bgp_community": "65000:100"}, "none": {}},
        "outputs": [
            {"format": "bird", "group": "vpn", "family": 4, "via": "blackhole",
             "path": vpn_inc, "command": touch},
            {"format": "bird", "group": "none", "family": 4, "via": "blackhole",
             "path": none_inc}
        ]
    }));
    let out = t.run(&["render"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no route is withdrawn"), "{err}");
    assert_eq!(std::fs::read_to_string(&vpn_inc).unwrap(), announced);
    assert!(!ran.exists());
    assert_eq!(std::fs::read_to_string(&none_inc).unwrap(), "");

    // Once values are stored, the include is written and the command runs; a render
    // of the same listing leaves the include alone and does not run it again.
    db::open(&t.paths())
        .unwrap()
        .merge_source(
            Kind::Asn,
            "62041",
            &strings(&["91.108.8.0/22"]),
            1_000_000,
            0,
        )
        .unwrap();
    assert!(t.run(&["render"]).status.success());
    let written = std::fs::read_to_string(&vpn_inc).unwrap();
    assert_eq!(
        written,
        "route 91.108.8.0/22 blackhole { bgp_community.add((65000,100)); };\n"
    );
    assert!(ran.exists());
    std::fs::remove_file(&ran).unwrap();
    assert!(t.run(&["render"]).status.success());
    assert!(
        !ran.exists(),
        "the command ran although the include did not change"
    );
}
