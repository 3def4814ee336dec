//! The `load` output against the real kernel: each test moves its own thread into a
//! fresh network namespace (`unshare(CLONE_NEWNET)`; what it starts inherits it), so
//! the host's firewall is never touched. `nft` (`apt-get install nftables`) is the
//! reference: after our netlink load, `nft list set` must show what it shows after
//! `nft -f` of the `nft` format's script.
//!
//! Each test prints why it skips (and passes) without root, namespaces or `nft`.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use ripe_cidr_collector::format::{prepare, render, Family, Format, RenderOptions};
use ripe_cidr_collector::nftnl;

use crate::common::{cannot_run, ripe_body, FakeServer, Reply, TestDir};

pub(crate) fn find(name: &str) -> Option<PathBuf> {
    ["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        .iter()
        .map(|d| PathBuf::from(d).join(name))
        .find(|p| p.is_file())
}

/// Moves this test's thread into a new network namespace and finds `nft`.
pub(crate) fn namespace() -> Result<PathBuf, String> {
    let nft = find("nft").ok_or("`nft` not found (apt-get install nftables)")?;
    // SAFETY: plain system call; it only changes this thread's namespace.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(format!(
            "cannot create a network namespace (needs root): {}",
            std::io::Error::last_os_error()
        ));
    }
    let probe = Command::new(&nft).args(["list", "tables"]).output();
    match probe {
        Ok(o) if o.status.success() => Ok(nft),
        Ok(o) => Err(format!(
            "nft does not work here: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("cannot run nft: {e}")),
    }
}

macro_rules! ns_or_skip {
    () => {
        match namespace() {
            Ok(nft) => Nft(nft),
            Err(why) => return $crate::common::cannot_run(&why),
        }
    };
}

/// `nft` in the test's namespace.
pub(crate) struct Nft(pub(crate) PathBuf);

impl Nft {
    pub(crate) fn run(&self, args: &[&str]) -> Result<String, String> {
        let o = Command::new(&self.0).args(args).output().unwrap();
        if o.status.success() {
            Ok(String::from_utf8_lossy(&o.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&o.stderr).into_owned())
        }
    }
    pub(crate) fn ok(&self, args: &[&str]) -> String {
        self.run(args)
            .unwrap_or_else(|e| panic!("nft {}: {e}", args.join(" ")))
    }
    /// `nft -f` of a script given on stdin.
    pub(crate) fn script(&self, script: &[u8]) -> Result<(), String> {
        use std::io::Write;
        let mut c = Command::new(&self.0)
            .args(["-f", "-"])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin.take().unwrap().write_all(script).unwrap();
        let o = c.wait_with_output().unwrap();
        if o.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&o.stderr).into_owned())
        }
    }
    fn list(&self, set: &str) -> String {
        self.ok(&["list", "set", "inet", "ripe_cidr", set])
    }
    fn both(&self) -> String {
        self.list("ripe_v4") + &self.list("ripe_v6")
    }
}

fn values(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn script(values: &[String], family: Option<Family>) -> Vec<u8> {
    let opts = RenderOptions {
        format: Format::Nft,
        family,
        ..RenderOptions::default()
    };
    render(values, &opts)
}

fn load(values: &[String], family: Option<Family>) -> Result<nftnl::LoadStats, nftnl::LoadError> {
    nftnl::load("ripe_cidr", "ripe", &prepare(values, family, true), family)
}

/// Loads `values` with `nft -f` and with netlink, from scratch each, and checks that
/// nft lists both the same; leaves our load in place. Returns the listing.
fn same_as_nft(nft: &Nft, values: &[String]) -> String {
    let _ = nft.run(&["delete", "table", "inet", "ripe_cidr"]);
    nft.script(&script(values, None)).unwrap();
    let want = nft.both();
    nft.ok(&["delete", "table", "inet", "ripe_cidr"]);
    load(values, None).unwrap();
    let got = nft.both();
    assert_eq!(got, want, "netlink load differs from nft -f for {values:?}");
    got
}

const FIXTURE: &[&str] = &[
    "91.108.4.0/22",
    "91.108.4.0/24",
    "91.108.8.0/22",
    "91.108.12.0/23",
    "149.154.160.0/20",
    "149.154.164.0/22",
    "93.184.216.34",
    "10.0.0.1/32",
    "10.0.0.2",
    "185.76.151.0/24",
    "2001:b28:f23d::/48",
    "2001:b28:f23f::/48",
    "2001:b28:f23d:f001::/64",
    "2001:67c:4e8::/48",
    "2a0a:f280::1",
];

#[test]
fn load_equals_nft_script_and_reload_replaces() {
    let nft = ns_or_skip!();
    let first = values(FIXTURE);
    let listing = same_as_nft(&nft, &first);
    assert!(listing.contains("91.108.4.0/22") && listing.contains("2001:b28:f23d::/48"));
    assert!(listing.contains("flags interval"));
    // A reload replaces the contents: only the new list is left.
    let second = values(&["198.51.100.0/24", "2001:db8::/32"]);
    let stats = load(&second, None).unwrap();
    assert_eq!((stats.v4, stats.v6), (1, 1));
    let after = nft.both();
    nft.ok(&["delete", "table", "inet", "ripe_cidr"]);
    nft.script(&script(&second, None)).unwrap();
    assert_eq!(after, nft.both());
    // nft -f over our sets and our load over nft's: both take the other's sets.
    load(&first, None).unwrap();
    nft.script(&script(&second, None)).unwrap();
    load(&first, None).unwrap();
    assert_eq!(nft.both(), listing);
}

#[test]
fn edges_of_the_address_space() {
    let nft = ns_or_skip!();
    for list in [
        &["0.0.0.0/0", "::/0"][..],
        &[
            "255.255.255.255/32",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128",
        ],
        &["0.0.0.0/32", "::/128", "255.255.255.0/24"],
        // Adjacent prefixes that do not merge, and a single host.
        &["10.0.1.0/24", "10.0.2.0/23", "10.0.4.0/24", "192.0.2.7"],
        &["2001:db8:1::/48", "2001:db8:2::/47", "2001:db8::7"],
        // One family empty: its set exists, empty.
        &["192.0.2.0/24"],
        &["2001:db8::/32"],
        &[],
    ] {
        let listing = same_as_nft(&nft, &values(list));
        assert_eq!(listing.matches("flags interval").count(), 2, "{listing}");
    }
}

#[test]
fn one_family_leaves_the_other_alone() {
    let nft = ns_or_skip!();
    load(&values(&["192.0.2.0/24", "2001:db8::/32"]), None).unwrap();
    let v6 = nft.list("ripe_v6");
    load(
        &values(&["198.51.100.0/24", "2001:db8:1::/48"]),
        Some(Family::V4),
    )
    .unwrap();
    assert_eq!(nft.list("ripe_v6"), v6);
    assert!(nft.list("ripe_v4").contains("198.51.100.0/24"));
}

#[test]
fn rules_and_foreign_objects_survive_reloads() {
    let nft = ns_or_skip!();
    load(&values(FIXTURE), None).unwrap();
    nft.script(
        b"add set inet ripe_cidr other { type ipv4_addr; elements = { 192.0.2.1 }; }
add chain inet ripe_cidr marker { type filter hook prerouting priority mangle; }
add rule inet ripe_cidr marker ip daddr @ripe_v4 meta mark set 1
add rule inet ripe_cidr marker ip6 daddr @ripe_v6 meta mark set 2
add chain inet ripe_cidr plain
add rule inet ripe_cidr plain ip saddr @other counter
",
    )
    .unwrap();
    let chains = |nft: &Nft| {
        ["marker", "plain"]
            .map(|c| nft.ok(&["-a", "list", "chain", "inet", "ripe_cidr", c]))
            .concat()
    };
    let before = (chains(&nft), nft.list("other"));
    assert!(before
        .0
        .contains("ip daddr @ripe_v4 meta mark set 0x00000001"));
    load(&values(&["198.51.100.0/24"]), None).unwrap();
    load(&values(&["203.0.113.0/24", "2001:db8::/32"]), None).unwrap();
    // Same rules with the same handles: the sets were flushed, not recreated.
    assert_eq!((chains(&nft), nft.list("other")), before);
    let v4 = nft.list("ripe_v4");
    assert!(
        v4.contains("203.0.113.0/24") && !v4.contains("198.51.100.0"),
        "{v4}"
    );
    // The rule still matches through the set: nft finds the element by its address.
    nft.ok(&[
        "get",
        "element",
        "inet",
        "ripe_cidr",
        "ripe_v4",
        "{ 203.0.113.9 }",
    ]);
}

/// Brings `lo` up in the test's namespace and routes `routes` over it.
pub(crate) fn loopback(routes: &[&str]) -> Result<(), String> {
    let ip = find("ip").ok_or("`ip` not found (apt-get install iproute2)")?;
    let mut cmds = vec![vec!["link", "set", "lo", "up"]];
    cmds.extend(routes.iter().map(|r| vec!["route", "add", r, "dev", "lo"]));
    for args in cmds {
        let ok = Command::new(&ip).args(&args).status();
        if !ok.is_ok_and(|s| s.success()) {
            return Err(format!("ip {} failed", args.join(" ")));
        }
    }
    Ok(())
}

#[test]
fn a_rule_keeps_matching_across_reloads() {
    let nft = ns_or_skip!();
    if let Err(why) = loopback(&["198.51.100.0/24", "203.0.113.0/24"]) {
        return cannot_run(&why);
    }
    load(&values(&["198.51.100.0/24"]), None).unwrap();
    nft.script(
        b"add chain inet ripe_cidr out { type filter hook output priority 0; }
add rule inet ripe_cidr out ip daddr @ripe_v4 counter
",
    )
    .unwrap();
    let send = |to: &str| {
        // The socket is made by this thread, so in its namespace.
        let s = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
        s.send_to(b"x", (to, 9)).unwrap();
    };
    let packets = || {
        let chain = nft.ok(&["list", "chain", "inet", "ripe_cidr", "out"]);
        let n = chain.split("counter packets ").nth(1).unwrap_or("");
        n.split_whitespace().next().unwrap_or("").to_string()
    };
    send("198.51.100.1");
    assert_eq!(packets(), "1");
    load(&values(&["203.0.113.0/24"]), None).unwrap();
    send("198.51.100.1"); // no longer listed
    send("203.0.113.9");
    assert_eq!(
        packets(),
        "2",
        "the rule matches the reloaded set's new contents"
    );
}

#[test]
fn a_set_of_another_type_is_refused_and_nothing_changes() {
    let nft = ns_or_skip!();
    nft.script(
        b"add table inet ripe_cidr
add set inet ripe_cidr ripe_v4 { type ipv4_addr; elements = { 192.0.2.1 }; }
",
    )
    .unwrap();
    let before = nft.ok(&["list", "table", "inet", "ripe_cidr"]);
    let e = load(&values(FIXTURE), None).unwrap_err().to_string();
    assert!(
        e.contains("set inet ripe_cidr ripe_v4 exists with another type, flags or timeout"),
        "{e}"
    );
    // The batch was discarded as a whole: not even ripe_v6 was created.
    assert_eq!(nft.ok(&["list", "table", "inet", "ripe_cidr"]), before);
}

/// A list of `n` IPv4 /24s, none adjacent, so that none merge.
fn many(n: u32) -> Vec<String> {
    (0..n)
        .map(|i| {
            let a = (1u32 << 24) + i * 512;
            format!("{}.{}.{}.0/24", a >> 24, (a >> 16) & 255, (a >> 8) & 255)
        })
        .collect()
}

/// The product path: a daemon whose `{"load": "nft"}` output loads 100,000 prefixes
/// from the database at start, in bounded memory (VmHWM from /proc, generous bound).
/// The database is filled first by `run` from a fake RIPEstat in the namespace.
#[test]
fn daemon_loads_100000_prefixes_in_bounded_memory() {
    let nft = ns_or_skip!();
    if let Err(why) = loopback(&[]) {
        return cannot_run(&why);
    }
    let prefixes = many(100_000);
    let body = ripe_body(&prefixes);
    let server = FakeServer::start(move |_| Reply::json(200, body.clone()));
    let dir = TestDir::new();
    dir.config(&serde_json::json!({
        "asns": ["AS64500"],
        "ripe": {"url": server.url("/data.json")},
    }));
    let run = dir.cmd().arg("run").output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    dir.config(&serde_json::json!({
        "outputs": [{"load": "nft", "type": "cidr"}],
    }));
    let mut daemon = dir
        .cmd()
        .arg("daemon")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = daemon.id();
    let stderr = std::io::BufReader::new(daemon.stderr.take().unwrap());
    let mut log = String::new();
    for line in std::io::BufRead::lines(stderr) {
        let line = line.unwrap();
        log.push_str(&line);
        log.push('\n');
        if line.contains("output ") || line.contains("loaded") {
            break;
        }
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let _ = daemon.kill();
    let _ = daemon.wait();
    assert!(
        log.contains("loaded 100000 IPv4 and 0 IPv6 prefixes"),
        "{log}"
    );
    let peak_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    eprintln!("daemon loading 100,000 prefixes: VmHWM {peak_kib} KiB");
    assert!(peak_kib < 32 * 1024, "peak RSS {peak_kib} KiB");
    // Spot checks instead of listing 100,000 elements through nft's memory.
    nft.ok(&[
        "get",
        "element",
        "inet",
        "ripe_cidr",
        "ripe_v4",
        "{ 1.0.0.1 }",
    ]);
    let last = prefixes.last().unwrap().replace(".0/24", ".255");
    nft.ok(&[
        "get",
        "element",
        "inet",
        "ripe_cidr",
        "ripe_v4",
        &format!("{{ {last} }}"),
    ]);
    assert!(nft
        .run(&[
            "get",
            "element",
            "inet",
            "ripe_cidr",
            "ripe_v4",
            "{ 1.0.1.1 }"
        ])
        .is_err());
}

/// Without CAP_NET_ADMIN the load fails with a clear message, not a crash.
#[test]
fn no_capability_is_a_clear_error() {
    let _nft = ns_or_skip!();
    // Capabilities are per thread: drop CAP_NET_ADMIN (12) from this one's effective
    // set, with capget/capset (version 3: two 32-bit words per set).
    let mut hdr = [0x2008_0522u32, 0];
    let mut data = [0u32; 6];
    // SAFETY: the kernel reads the header and reads or writes the six words.
    unsafe {
        assert_eq!(
            libc::syscall(libc::SYS_capget, hdr.as_mut_ptr(), data.as_mut_ptr()),
            0
        );
        data[0] &= !(1 << 12);
        assert_eq!(
            libc::syscall(libc::SYS_capset, hdr.as_mut_ptr(), data.as_ptr()),
            0
        );
    }
    let e = load(&values(FIXTURE), None).unwrap_err().to_string();
    assert!(e.contains("needs CAP_NET_ADMIN"), "{e}");
}
