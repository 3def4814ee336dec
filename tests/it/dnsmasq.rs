//! The dnsmasq output against a real dnsmasq (Debian's `dnsmasq-base`) and, inside
//! a fresh network namespace (`unshare(CLONE_NEWNET)`, as `tests/it/netlink.rs`),
//! real nftables: dnsmasq adds the addresses it resolves to the dns sets our load
//! creates, and our reloads never lose them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use ripe_cidr_collector::format::{render_dnsmasq, DnsTarget, DnsmasqOptions, DNSMASQ_MAX_LINE};
use ripe_cidr_collector::source::Kind;
use serde_json::json;

use crate::common::{cannot_run, TestDir};
use crate::netlink::{find, loopback, namespace, Nft};

mod real;
use real::{packets, render, resolve, runs, send, start_dnsmasq, store};

/// `dnsmasq --test` of one file: Ok, or what dnsmasq said.
fn dnsmasq_test(dnsmasq: &Path, file: &Path) -> Result<(), String> {
    let o = Command::new(dnsmasq)
        .arg("--test")
        .arg(format!("--conf-file={}", file.display()))
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout);
    match o.status.success() && text.contains("syntax check OK") {
        true => Ok(()),
        false => Err(text),
    }
}

/// 200 names for two groups: 90 of their own each, 10 in both, and subdomains of
/// the other group's names; long enough that lines must be split.
fn two_groups() -> Vec<(DnsTarget, Vec<String>)> {
    let name =
        |g: &str, i: usize| format!("host-{i:03}.{g}.a-rather-long-domain-name-for-tests.example");
    let group = |g: &str, other: &str| {
        let mut v: Vec<String> = (0..90).map(|i| name(g, i)).collect();
        v.extend((0..10).map(|i| format!("shared-{i}.example")));
        v.extend((0..5).map(|i| format!("sub.{}", name(other, i))));
        v
    };
    let target = |set: &str| DnsTarget {
        table: "ripe_cidr".into(),
        set: set.into(),
    };
    vec![
        (target("video"), group("video", "music")),
        (target("music"), group("music", "video")),
    ]
}

/// `dnsmasq --test` accepts `file`, no line is over 1,023 characters, every one of
/// the 200 names of [`two_groups`] is in exactly one line, and the shared names and
/// the subdomains of the other group's names carry both groups' sets.
fn check_two_groups_file(dnsmasq: &Path, file: &Path) {
    dnsmasq_test(dnsmasq, file).unwrap();
    let text = std::fs::read_to_string(file).unwrap();
    let mut seen = std::collections::BTreeMap::new();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(
        lines.len() > 4,
        "long lists are split: {} lines",
        lines.len()
    );
    for line in &lines {
        assert!(line.len() <= DNSMASQ_MAX_LINE, "{} characters", line.len());
        let rest = line.split_once("=/").unwrap().1;
        let (names, sets) = rest.rsplit_once('/').unwrap();
        for n in names.split('/') {
            assert!(
                seen.insert(n.to_string(), sets.to_string()).is_none(),
                "{n} twice"
            );
        }
    }
    let groups = two_groups();
    let all: std::collections::BTreeSet<&String> = groups.iter().flat_map(|g| &g.1).collect();
    assert_eq!(all.len(), 200);
    let missing: Vec<_> = all.iter().filter(|n| !seen.contains_key(**n)).collect();
    assert_eq!(seen.len(), 200, "{missing:?}");
    let both = seen["shared-0.example"].clone();
    assert!(
        both.contains("video_dns_v4") && both.contains("music_dns_v6"),
        "{both}"
    );
    let sub = &seen["sub.host-000.music.a-rather-long-domain-name-for-tests.example"];
    assert_eq!(
        sub, &both,
        "a subdomain of a music name in video gets both groups' sets"
    );
}

#[test]
fn a_file_for_200_domains_in_two_groups_passes_dnsmasq_test() {
    let Some(dnsmasq) = find("dnsmasq") else {
        return cannot_run("`dnsmasq` not found (apt-get install dnsmasq-base)");
    };
    let dir = TestDir::new();
    for ipset in [false, true] {
        let opts = DnsmasqOptions {
            family: None,
            ipset,
        };
        let text = render_dnsmasq(&two_groups(), opts).unwrap();
        let file = dir.file(if ipset { "ipset.conf" } else { "nftset.conf" });
        std::fs::write(&file, &text).unwrap();
        check_two_groups_file(&dnsmasq, &file);
    }
}

/// The same 200 names as two groups of `config.json`, through `render` of one
/// dnsmasq output for every group (`"group": "*"`), which also creates each group's
/// dns sets.
#[test]
fn two_groups_of_config_json_in_one_file() {
    let Some(dnsmasq) = find("dnsmasq") else {
        return cannot_run("`dnsmasq` not found (apt-get install dnsmasq-base)");
    };
    let nft = match namespace() {
        Ok(nft) => Nft(nft),
        Err(why) => return cannot_run(&why),
    };
    let dir = TestDir::new();
    let file = dir.file("ripe.conf");
    let groups: serde_json::Map<String, serde_json::Value> = two_groups()
        .into_iter()
        .map(|(t, names)| (t.set, json!({ "fqdns": names })))
        .collect();
    dir.config(&json!({
        "groups": groups,
        "outputs": [{"dnsmasq": file, "group": "*"}],
    }));
    render(&dir);
    check_two_groups_file(&dnsmasq, &file);
    for set in ["video_dns_v4", "music_dns_v6", "ripe_dns_v4"] {
        nft.ok(&["list", "set", "inet", "ripe_cidr", set]);
    }
}

/// The whole path: config with a load and a dnsmasq output, `render` creating our
/// sets and the dns sets, a real dnsmasq (forwarding to a second one that has
/// `address=/video.example/203.0.113.7`) reading our file from its conf-dir and
/// adding the answer for `x.video.example` to the dns set, a rule counting packets
/// to both sets, and reloads with changed contents that keep dnsmasq's element.
#[test]
fn dnsmasq_fills_the_dns_sets_and_our_reloads_keep_them() {
    let Some(dnsmasq) = find("dnsmasq") else {
        return cannot_run("`dnsmasq` not found (apt-get install dnsmasq-base)");
    };
    let nft = match namespace() {
        Ok(nft) => Nft(nft),
        Err(why) => return cannot_run(&why),
    };
    if let Err(why) = loopback(&["198.51.100.0/24", "203.0.113.0/24"]) {
        return cannot_run(&why);
    }
    let dir = TestDir::new();
    let confdir: PathBuf = dir.file("dnsmasq.d");
    std::fs::create_dir(&confdir).unwrap();
    let drop_in = confdir.join("ripe-cidr-collector.conf");
    let ran = dir.file("restarts");
    let restart = format!("echo restart >> {}", ran.display());
    let config_with = |fqdns: &[&str], command: &str| {
        json!({
            "asns": ["64500"],
            "fqdns": fqdns,
            "outputs": [
                {"load": "nft", "type": "all"},
                {"dnsmasq": drop_in, "command": command},
            ],
        })
    };
    let config = |fqdns: &[&str]| config_with(fqdns, &restart);
    dir.config(&config(&["video.example"]));
    store(&dir, Kind::Asn, "64500", &["198.51.100.0/25"]);
    render(&dir);
    // Our load made our sets and dnsmasq's (which time out, and are not intervals).
    let dns_v4 = nft.ok(&["list", "set", "inet", "ripe_cidr", "ripe_dns_v4"]);
    assert!(
        dns_v4.contains("timeout 1d") && !dns_v4.contains("interval"),
        "{dns_v4}"
    );
    nft.ok(&["list", "set", "inet", "ripe_cidr", "ripe_dns_v6"]);
    assert!(nft
        .ok(&["list", "set", "inet", "ripe_cidr", "ripe_v4"])
        .contains("198.51.100.0/25"));
    let text = std::fs::read_to_string(&drop_in).unwrap();
    assert!(
        text.contains(
            "nftset=/video.example/4#inet#ripe_cidr#ripe_dns_v4,6#inet#ripe_cidr#ripe_dns_v6\n"
        ),
        "{text}"
    );
    assert_eq!(runs(&ran), 1, "the command ran once for the new file");
    render(&dir);
    assert_eq!(runs(&ran), 1, "an unchanged file runs no command");

    // The rules of docs/groups-and-routing.md (for the router's own traffic: the output hook), with
    // counters: one rule per set, since one rule cannot look an address up in two.
    nft.script(
        b"add chain inet ripe_cidr out { type filter hook output priority mangle; policy accept; }
add rule inet ripe_cidr out ip daddr @ripe_v4 counter meta mark set 0x100
add rule inet ripe_cidr out ip daddr @ripe_dns_v4 counter meta mark set 0x100
add rule inet ripe_cidr out ip6 daddr @ripe_v6 counter meta mark set 0x100
add rule inet ripe_cidr out ip6 daddr @ripe_dns_v6 counter meta mark set 0x100
",
    )
    .unwrap();
    let upstream = start_dnsmasq(
        &dnsmasq,
        5353,
        &["--address=/video.example/203.0.113.7".into()],
    );
    let router = start_dnsmasq(
        &dnsmasq,
        53,
        &[
            "--server=127.0.0.1#5353".into(),
            format!("--conf-dir={}", confdir.display()),
        ],
    );
    assert_eq!(resolve(53, "x.video.example"), [[203, 0, 113, 7]]);
    nft.ok(&[
        "get",
        "element",
        "inet",
        "ripe_cidr",
        "ripe_dns_v4",
        "{ 203.0.113.7 }",
    ]);
    send("203.0.113.7");
    send("198.51.100.1");
    assert_eq!(
        (packets(&nft, "ripe_dns_v4"), packets(&nft, "ripe_v4")),
        (1, 1)
    );

    // Our next reload, with other contents: our set is flushed and filled again,
    // dnsmasq's set keeps its element.
    store(
        &dir,
        Kind::Asn,
        "64500",
        &["198.51.100.0/25", "198.51.100.192/26"],
    );
    render(&dir);
    let ours = nft.ok(&["list", "set", "inet", "ripe_cidr", "ripe_v4"]);
    assert!(ours.contains("198.51.100.192/26"), "{ours}");
    nft.ok(&[
        "get",
        "element",
        "inet",
        "ripe_cidr",
        "ripe_dns_v4",
        "{ 203.0.113.7 }",
    ]);
    send("203.0.113.7");
    send("198.51.100.193");
    assert_eq!(
        (packets(&nft, "ripe_dns_v4"), packets(&nft, "ripe_v4")),
        (2, 2)
    );
    assert_eq!(runs(&ran), 1, "the names did not change: no restart");

    // A new name changes the file: written, command run, dnsmasq reads it.
    dir.config(&config(&["video.example", "music.example"]));
    render(&dir);
    assert_eq!(runs(&ran), 2);
    assert!(std::fs::read_to_string(&drop_in)
        .unwrap()
        .contains("/music.example/"));
    nft.ok(&[
        "get",
        "element",
        "inet",
        "ripe_cidr",
        "ripe_dns_v4",
        "{ 203.0.113.7 }",
    ]);
    drop((router, upstream));

    // A failed command is run again by the next render, though the names are the
    // same: the file it did not take is not left behind as "unchanged".
    dir.config(&config_with(
        &["video.example"],
        &format!("{restart}; exit 1"),
    ));
    for n in [3, 4] {
        let o = dir.cmd().arg("render").output().unwrap();
        assert!(!o.status.success());
        assert_eq!(runs(&ran), n);
        assert!(!drop_in.exists());
    }
    dir.config(&config(&["video.example"]));
    render(&dir);
    render(&dir);
    assert_eq!(runs(&ran), 5);
}

/// The dns sets are created once and then left alone: neither a second creation nor
/// our load's flush + add of our sets touches the elements dnsmasq added; a set of
/// that name of another kind is refused, not replaced.
#[test]
fn dns_sets_are_created_once_and_never_flushed() {
    use ripe_cidr_collector::format::prepare;
    use ripe_cidr_collector::nftnl;
    let nft = match namespace() {
        Ok(nft) => Nft(nft),
        Err(why) => return cannot_run(&why),
    };
    nftnl::ensure_dns_sets("ripe_cidr", "video", None, 3600).unwrap();
    let listed = nft.ok(&["list", "set", "inet", "ripe_cidr", "video_dns_v6"]);
    assert!(
        listed.contains("type ipv6_addr") && listed.contains("timeout 1h"),
        "{listed}"
    );
    nft.ok(&[
        "add",
        "element",
        "inet",
        "ripe_cidr",
        "video_dns_v4",
        "{ 192.0.2.7 }",
    ]);
    let values = vec!["198.51.100.0/24".to_string()];
    for _ in 0..2 {
        nftnl::ensure_dns_sets("ripe_cidr", "video", None, 3600).unwrap();
        nftnl::load("ripe_cidr", "video", &prepare(&values, None, true), None).unwrap();
    }
    nft.ok(&[
        "get",
        "element",
        "inet",
        "ripe_cidr",
        "video_dns_v4",
        "{ 192.0.2.7 }",
    ]);
    // Another timeout: accepted (kernels since 6.x take the new default timeout for
    // later elements, older ones keep the old); the elements stay either way.
    nftnl::ensure_dns_sets("ripe_cidr", "video", None, 60).unwrap();
    // A set of that name of another kind is refused, and left as it is.
    nft.ok(&[
        "add",
        "set",
        "inet",
        "ripe_cidr",
        "other_dns_v4",
        "{ type ipv4_addr; }",
    ]);
    nft.ok(&[
        "add",
        "element",
        "inet",
        "ripe_cidr",
        "other_dns_v4",
        "{ 192.0.2.8 }",
    ]);
    let e = nftnl::ensure_dns_sets("ripe_cidr", "other", None, 60).unwrap_err();
    assert!(
        e.to_string()
            .contains("set inet ripe_cidr other_dns_v4 exists with another type"),
        "{e}"
    );
    nft.ok(&[
        "get",
        "element",
        "inet",
        "ripe_cidr",
        "other_dns_v4",
        "{ 192.0.2.8 }",
    ]);
    nft.ok(&[
        "get",
        "element",
        "inet",
        "ripe_cidr",
        "video_dns_v4",
        "{ 192.0.2.7 }",
    ]);
}

/// The OpenWrt package's command for the dnsmasq output, against stubs
/// (`openwrt/tests/dnsmasq-drop-in-test.sh`).
#[test]
fn openwrt_drop_in_against_stub_uci_and_dnsmasq() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Ok(out) = Command::new("sh")
        .arg(root.join("openwrt/tests/dnsmasq-drop-in-test.sh"))
        .output()
    else {
        return cannot_run("no `sh` to run openwrt/tests/dnsmasq-drop-in-test.sh");
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("dnsmasq-drop-in-test: all passed"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The daemon writes the file at start and again when a host name is added to
/// `config.json` (a changed source list is a changed output), running the command
/// each time and only then.
#[test]
fn the_daemon_follows_the_host_names_of_config_json() {
    if let Err(why) = namespace() {
        return cannot_run(&why);
    }
    let dir = TestDir::new();
    let file = dir.file("ripe.conf");
    let ran = dir.file("restarts");
    dir.config(&json!({
        "fqdns": ["video.example"],
        // Collections find no resolver in here and fail: only config.json moves the
        // output.
        "outputs": [{"dnsmasq": file, "command": format!("echo restart >> {}", ran.display())}],
    }));
    let mut daemon = dir.spawn(&["daemon"]);
    let has = |name: &str| std::fs::read_to_string(&file).is_ok_and(|t| t.contains(name));
    assert!(
        crate::common::eventually(Duration::from_secs(15), || has("/video.example/")),
        "{}",
        daemon.stderr()
    );
    let added = dir.run(&["fqdn", "add", "music.example"]);
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    assert!(
        crate::common::eventually(Duration::from_secs(15), || has("/music.example/")),
        "{}",
        daemon.stderr()
    );
    // The command ran for each new content, once each.
    assert!(crate::common::eventually(Duration::from_secs(5), || runs(
        &ran
    ) == 2));
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(runs(&ran), 2, "{}", daemon.stderr());
}

/// A named group with a mark: its dnsmasq file names `video_dns_v4/_v6`, its load
/// creates them beside `video_v4/_v6` and its mark chains match all four, so what
/// dnsmasq adds is marked like what we collected, across reloads.
#[test]
fn a_groups_mark_covers_what_dnsmasq_adds() {
    let Some(dnsmasq) = find("dnsmasq") else {
        return cannot_run("`dnsmasq` not found (apt-get install dnsmasq-base)");
    };
    let nft = match namespace() {
        Ok(nft) => Nft(nft),
        Err(why) => return cannot_run(&why),
    };
    if let Err(why) = loopback(&["198.51.100.0/24", "203.0.113.0/24"]) {
        return cannot_run(&why);
    }
    let dir = TestDir::new();
    let confdir = dir.file("dnsmasq.d");
    std::fs::create_dir(&confdir).unwrap();
    dir.config(&json!({
        "groups": {"video": {"fqdns": ["video.example"], "mark": "0x100"}},
        "outputs": [
            {"load": "nft", "group": "video"},
            {"dnsmasq": confdir.join("ripe.conf"), "group": "video"},
        ],
    }));
    render(&dir);
    let text = std::fs::read_to_string(confdir.join("ripe.conf")).unwrap();
    assert!(
        text.contains(
            "nftset=/video.example/4#inet#ripe_cidr#video_dns_v4,6#inet#ripe_cidr#video_dns_v6\n"
        ),
        "{text}"
    );
    let chain = nft.ok(&["list", "chain", "inet", "ripe_cidr", "video_mark_out"]);
    for set in ["@video_v4", "@video_dns_v4", "@video_v6", "@video_dns_v6"] {
        assert!(chain.contains(set), "{set} in {chain}");
    }
    // What the mark chains marked, counted after them.
    nft.script(
        b"add chain inet ripe_cidr check { type filter hook output priority 0; policy accept; }
add rule inet ripe_cidr check meta mark 0x100 counter
",
    )
    .unwrap();
    let marked = || {
        let c = nft.ok(&["list", "chain", "inet", "ripe_cidr", "check"]);
        let n = c.split("counter packets ").nth(1).unwrap_or("");
        n.split_whitespace()
            .next()
            .unwrap_or("")
            .parse::<u64>()
            .unwrap()
    };
    let upstream = start_dnsmasq(
        &dnsmasq,
        5353,
        &["--address=/video.example/203.0.113.7".into()],
    );
    let router = start_dnsmasq(
        &dnsmasq,
        53,
        &[
            "--server=127.0.0.1#5353".into(),
            format!("--conf-dir={}", confdir.display()),
        ],
    );
    assert_eq!(resolve(53, "x.video.example"), [[203, 0, 113, 7]]);
    send("203.0.113.7");
    assert_eq!(marked(), 1);
    // A reload with new contents: our set refilled, the chains rebuilt, dnsmasq's
    // element kept and still marked.
    store(&dir, Kind::Fqdn, "video.example", &["198.51.100.5"]);
    render(&dir);
    assert!(nft
        .ok(&["list", "set", "inet", "ripe_cidr", "video_v4"])
        .contains("198.51.100.5"));
    send("203.0.113.7");
    send("198.51.100.5");
    send("198.51.100.6"); // in neither set
    assert_eq!(marked(), 3);
    drop((router, upstream));
}
