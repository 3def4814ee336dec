//! Kernel sets updated by difference, with kernel timeouts and a memory budget
//! (SPEC "Kernel sets (version 0.3)"), against the real kernel: each test moves its
//! thread into a fresh network namespace, as `netlink` does, and checks with `nft`.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use ripe_cidr_collector::config::Mark;
use ripe_cidr_collector::format::prepare;
use ripe_cidr_collector::nftnl::{self, LoadError, LoadOptions, LoadStats};

use crate::common::{cannot_run, eventually, ripe_body, FakeServer, Proc, Reply, TestDir};
use crate::netlink::{loopback, namespace, Nft};

macro_rules! ns_or_skip {
    () => {
        match namespace() {
            Ok(nft) => Nft(nft),
            Err(why) => return cannot_run(&why),
        }
    };
}

fn load(values: &[String], o: &LoadOptions) -> Result<LoadStats, LoadError> {
    nftnl::load_with("ripe_cidr", "ripe", &prepare(values, None, true), o)
}

/// `n` IPv4 /24s from `10.<a>.0.0`, every other one, so that none merge.
fn blocks(a: u32, from: u32, n: u32) -> Vec<String> {
    (from..from + n)
        .map(|i| format!("10.{a}.{}.0/24", 2 * i))
        .collect()
}

fn list(nft: &Nft) -> String {
    nft.ok(&["list", "set", "inet", "ripe_cidr", "ripe_v4"])
}

const SEVEN_DAYS: u32 = 7 * 86_400;

#[test]
fn an_element_that_stays_is_never_deleted() {
    let nft = ns_or_skip!();
    let mut stable = blocks(1, 0, 50);
    stable.push("2001:db8:1::/48".into());
    let with = |i: u32| [stable.clone(), blocks(200, 5 * i, 5)].concat();
    load(&with(0), &LoadOptions::default()).unwrap();
    // Every element event of the namespace, from another netlink socket.
    let mut monitor = Command::new(&nft.0)
        .arg("monitor")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = monitor.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    std::thread::sleep(Duration::from_millis(500));
    let loads: Vec<_> = (1..=20)
        .map(|i| load(&with(i), &LoadOptions::default()))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let _ = monitor.kill();
    let _ = monitor.wait();
    let events = reader.join().unwrap();
    assert!(
        events.contains("add element inet ripe_cidr ripe_v4 { 10.200.40.0/24 }")
            && events.contains("delete element inet ripe_cidr ripe_v4 { 10.200.0.0/24 }"),
        "the monitor saw the loads: {events}"
    );
    for p in &stable {
        assert!(
            !events.contains(&format!("{{ {p} }}")),
            "{p} was touched:\n{events}"
        );
    }
    let now = list(&nft);
    assert!(
        stable[..50].iter().all(|p| now.contains(p.as_str())),
        "{now}"
    );
    for stats in loads {
        // 5 ranges out, 5 in: a start and an end each.
        let stats = stats.unwrap();
        assert!(stats.by_difference, "{stats:?}");
        assert_eq!((stats.elements, stats.deleted), (20, 10), "{stats:?}");
    }
}

#[test]
fn a_set_changed_behind_our_back_is_repaired_and_nothing_changed_sends_nothing() {
    let nft = ns_or_skip!();
    let values = blocks(1, 0, 20);
    load(&values, &LoadOptions::default()).unwrap();
    let want = list(&nft);
    let again = load(&values, &LoadOptions::default()).unwrap();
    assert_eq!(
        (again.elements, again.by_difference),
        (0, true),
        "{again:?}"
    );
    let el = |v: &str| format!("{{ {v} }}");
    nft.ok(&[
        "delete",
        "element",
        "inet",
        "ripe_cidr",
        "ripe_v4",
        &el(&values[3]),
    ]);
    nft.ok(&[
        "add",
        "element",
        "inet",
        "ripe_cidr",
        "ripe_v4",
        &el("192.0.2.0/24"),
    ]);
    assert_ne!(list(&nft), want);
    let stats = load(&values, &LoadOptions::default()).unwrap();
    // The missing range back, the extra one gone: two elements each.
    assert_eq!((stats.elements, stats.deleted), (4, 2), "{stats:?}");
    assert_eq!(list(&nft), want);
}

/// Two writers of one set, each reading it back (two `run`s, or a `run` beside
/// the daemon): an element one reads and means to delete, deleted by the other
/// before its batch, made the kernel refuse the whole batch (ENOENT), and the load
/// failed. Now it is done again from a new read, and at last as a flush and the
/// whole list.
#[test]
fn a_set_read_back_while_another_writer_changes_it_is_still_loaded() {
    let nft = ns_or_skip!();
    // /24s 512 addresses apart from 1.0.0.0, none adjacent: 60,000 elements.
    let spread = |from: u32| -> Vec<String> {
        (from..from + 30_000)
            .map(|i| {
                let a = (1u32 << 24) + i * 512;
                format!("{}.{}.{}.0/24", a >> 24, (a >> 16) & 255, (a >> 8) & 255)
            })
            .collect()
    };
    load(&spread(0), &LoadOptions::default()).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let other = {
        let stop = stop.clone();
        // A thread started here shares this thread's network namespace.
        std::thread::spawn(move || {
            let lists = [spread(0), spread(50)];
            let mut results = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let list = &lists[results.len() % 2];
                results.push(load(list, &LoadOptions::default()).map(|_| ()));
            }
            results
        })
    };
    let mut results = Vec::new();
    for i in 1..=6 {
        results.push(load(&spread(100 * i), &LoadOptions::default()).map(|_| ()));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let theirs = other.join().unwrap();
    assert!(theirs.len() > 2, "only {} loads beside ours", theirs.len());
    let failed: Vec<_> = results
        .iter()
        .chain(&theirs)
        .filter(|r| r.is_err())
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
    // Alone again: the list from prefix 700 (1.5.120.0/24); 699 (1.5.118.0/24) gone.
    load(&spread(700), &LoadOptions::default()).unwrap();
    let now = list(&nft);
    assert!(now.contains("1.5.120.0/24") && !now.contains("1.5.118.0/24"));
}

/// A process that keeps a memory (the daemon) loads by difference without reading
/// the set back, while nobody touches it: dnsmasq filling its own set in the same
/// table does not count; a change to ours behind our back does, and is repaired.
#[test]
fn a_remembered_set_is_not_read_back_until_someone_else_changes_it() {
    let nft = ns_or_skip!();
    let memory = nftnl::Memory::default();
    let o = LoadOptions {
        memory: Some(&memory),
        ..LoadOptions::default()
    };
    load(&blocks(1, 0, 20), &o).unwrap();
    nft.script(
        b"add set inet ripe_cidr ripe_dns_v4 { type ipv4_addr; flags timeout; timeout 1h; }
add element inet ripe_cidr ripe_dns_v4 { 100.64.0.1 }
",
    )
    .unwrap();
    let values = blocks(1, 1, 20);
    let shifted = load(&values, &o).unwrap();
    // One range out, one in: a start and an end each.
    assert!(shifted.by_difference && !shifted.read_back, "{shifted:?}");
    assert_eq!((shifted.elements, shifted.deleted), (4, 2), "{shifted:?}");
    let want = list(&nft);
    let el = |v: &str| format!("{{ {v} }}");
    nft.ok(&[
        "delete",
        "element",
        "inet",
        "ripe_cidr",
        "ripe_v4",
        &el(&values[3]),
    ]);
    nft.ok(&[
        "add",
        "element",
        "inet",
        "ripe_cidr",
        "ripe_v4",
        &el("192.0.2.0/24"),
    ]);
    let repaired = load(&values, &o).unwrap();
    assert!(repaired.read_back, "{repaired:?}");
    assert_eq!(
        (repaired.elements, repaired.deleted),
        (4, 2),
        "{repaired:?}"
    );
    assert_eq!(list(&nft), want);
    // Remembered again from that load on.
    let same = load(&values, &o).unwrap();
    assert!(!same.read_back && same.by_difference, "{same:?}");
    assert_eq!(same.elements, 0, "{same:?}");
    let dns = nft.ok(&["list", "set", "inet", "ripe_cidr", "ripe_dns_v4"]);
    assert!(dns.contains("100.64.0.1"), "{dns}");
}

/// A commit that the memory's events did not tell of (in life: one between reading
/// them and the batch; here the namespace changed under the memory) makes the
/// kernel refuse the batch pinned to the remembered generation, and the load is
/// done again from the set read back.
#[test]
fn a_commit_the_events_missed_makes_the_load_read_the_set_back() {
    let _first = ns_or_skip!();
    let memory = nftnl::Memory::default();
    let o = LoadOptions {
        memory: Some(&memory),
        ..LoadOptions::default()
    };
    let values = blocks(1, 0, 5);
    load(&values, &o).unwrap();
    // A namespace of its own: the same set plus one element, in three commits (so
    // at another generation than the first namespace's one commit).
    let nft = ns_or_skip!();
    nft.ok(&["add", "table", "inet", "ripe_cidr"]);
    nft.ok(&[
        "add",
        "set",
        "inet",
        "ripe_cidr",
        "ripe_v4",
        "{ type ipv4_addr; flags interval; }",
    ]);
    let all = format!("{{ {}, 192.0.2.0/24 }}", values.join(", "));
    nft.ok(&["add", "element", "inet", "ripe_cidr", "ripe_v4", &all]);
    let stats = load(&values, &o).unwrap();
    assert!(stats.read_back, "{stats:?}");
    assert_eq!((stats.elements, stats.deleted), (2, 2), "{stats:?}");
    let now = list(&nft);
    assert!(
        !now.contains("192.0.2.0") && now.contains("10.1.8.0/24"),
        "{now}"
    );
}

/// The daemon keeps what its `load` output loaded: after each collection the set
/// is updated by difference without being read back, until someone else changes it.
#[test]
fn the_daemon_remembers_what_it_loaded() {
    let nft = ns_or_skip!();
    if let Err(why) = loopback(&[]) {
        return cannot_run(&why);
    }
    // Public prefixes (collection keeps 10/8 out); each answer holds one more.
    let answers = std::sync::atomic::AtomicU32::new(4);
    let server = FakeServer::start(move |_| {
        let n = answers.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let prefixes: Vec<String> = (0..n).map(|i| format!("1.0.{}.0/24", 2 * i)).collect();
        Reply::json(200, ripe_body(&prefixes))
    });
    let dir = TestDir::new();
    dir.config(&serde_json::json!({
        "asns": ["AS64500"],
        "ripe": {"url": server.url("/data.json")},
        "outputs": [{"load": "nft", "type": "cidr"}],
    }));
    let mut daemon = dir.spawn(&["daemon"]);
    let collect = |pid: u32| {
        let kill = Command::new("kill")
            .args(["-USR1", &pid.to_string()])
            .status();
        assert!(kill.unwrap().success());
    };
    assert!(nth_load(&mut daemon, 1).contains("loaded 4 IPv4"));
    collect(daemon.pid());
    let second = nth_load(&mut daemon, 2);
    assert!(
        second.contains("by difference: 9 kept, 0 deleted"),
        "{second}"
    );
    nft.ok(&[
        "delete",
        "element",
        "inet",
        "ripe_cidr",
        "ripe_v4",
        "{ 1.0.2.0/24 }",
    ]);
    collect(daemon.pid());
    let third = nth_load(&mut daemon, 3);
    assert!(third.contains("by difference (read back):"), "{third}");
    assert!(list(&nft).contains("1.0.2.0/24"));
}

/// The `n`th "loaded" line of the daemon's log, once it is there.
fn nth_load(daemon: &mut Proc, n: usize) -> String {
    let seen = eventually(Duration::from_secs(20), || {
        daemon.stderr().matches("loaded ").count() >= n
    });
    let log = daemon.stderr();
    assert!(seen, "{log}");
    let mut loads = log.lines().filter(|l| l.contains("loaded "));
    loads.nth(n - 1).unwrap().to_string()
}

/// The `expires` of the first element listed, in milliseconds.
fn expires_ms(listing: &str) -> u64 {
    let text = listing.split("expires ").nth(1).expect("an expiry");
    let mut total = 0;
    let mut n = 0u64;
    let mut unit = String::new();
    for c in text.chars().take_while(|c| c.is_ascii_alphanumeric()) {
        if c.is_ascii_digit() {
            if !unit.is_empty() {
                total += n * unit_ms(&unit);
                (n, unit) = (0, String::new());
            }
            n = n * 10 + u64::from(c as u8 - b'0');
        } else {
            unit.push(c);
        }
    }
    total + n * unit_ms(&unit)
}

fn unit_ms(unit: &str) -> u64 {
    match unit {
        "d" => 86_400_000,
        "h" => 3_600_000,
        "m" => 60_000,
        "s" => 1000,
        _ => 1,
    }
}

#[test]
fn kernel_timeouts_are_set_and_refreshed_by_each_load() {
    let nft = ns_or_skip!();
    let values = blocks(1, 0, 3);
    let mark = Some(Mark {
        value: 7,
        mask: u32::MAX,
    });
    // Created without timeouts, with our mark chains using the sets.
    load(
        &values,
        &LoadOptions {
            mark,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    assert!(!list(&nft).contains("timeout"));
    let timed = LoadOptions {
        mark,
        timeout_seconds: Some(SEVEN_DAYS),
        ..LoadOptions::default()
    };
    // Switched: created again with the flag, in the same batch as the chains.
    load(&values, &timed).unwrap();
    let first = list(&nft);
    assert!(first.contains("flags interval,timeout"), "{first}");
    assert!(first.contains("10.1.0.0/24 timeout 7d expires"), "{first}");
    std::thread::sleep(Duration::from_millis(2100));
    let aged = expires_ms(&list(&nft));
    assert!(aged + 2000 <= expires_ms(&first), "{first}");
    let stats = load(&values, &timed).unwrap();
    let fresh = expires_ms(&list(&nft));
    assert!(fresh >= aged + 1500, "expires reset: {aged} -> {fresh}");
    assert_eq!((stats.deleted, stats.by_difference), (0, true), "{stats:?}");
    let rules = nft.ok(&["list", "chain", "inet", "ripe_cidr", "ripe_mark"]);
    assert!(rules.contains("ip daddr @ripe_v4"), "{rules}");
    // A rule of someone else's that uses the set: no switch back, and it says why.
    nft.script(
        b"add chain inet ripe_cidr mine
add rule inet ripe_cidr mine ip daddr @ripe_v4 counter
",
    )
    .unwrap();
    let e = load(
        &values,
        &LoadOptions {
            mark,
            ..LoadOptions::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("rules outside our mark chains use it"), "{e}");
    assert!(list(&nft).contains("flags interval,timeout"));
}

#[test]
fn a_load_over_max_kernel_mib_is_refused_and_the_set_kept() {
    let nft = ns_or_skip!();
    let small = blocks(1, 0, 10);
    load(&small, &LoadOptions::default()).unwrap();
    let before = list(&nft);
    let big = blocks(2, 0, 100);
    let capped = LoadOptions {
        group: "video",
        max_bytes: Some(10_000),
        ..LoadOptions::default()
    };
    let e = load(&big, &capped).unwrap_err().to_string();
    // 100 ranges: the end at 0, a start and an end each.
    assert!(
        e.starts_with("group video: 201 set elements would take about 1 MiB"),
        "{e}"
    );
    assert_eq!(list(&nft), before);
    let room = LoadOptions {
        max_bytes: Some(201 * 72),
        ..capped
    };
    assert_eq!(load(&big, &room).unwrap().kernel_elements, 201);
}

/// `run` with a `load` output records the group's elements and estimate in
/// `status.json`, and `status` shows them.
#[test]
fn status_shows_each_groups_elements_and_estimate() {
    let _nft = ns_or_skip!();
    if let Err(why) = loopback(&[]) {
        return cannot_run(&why);
    }
    // Public prefixes: collection keeps special ranges (10/8) out.
    let prefixes: Vec<String> = (0..4).map(|i| format!("1.0.{}.0/24", 2 * i)).collect();
    let body = ripe_body(&prefixes);
    let server = FakeServer::start(move |_| Reply::json(200, body.clone()));
    let dir = TestDir::new();
    dir.config(&serde_json::json!({
        "asns": ["AS64500"],
        "ripe": {"url": server.url("/data.json")},
        "outputs": [{"load": "nft", "type": "cidr", "timeout": true, "max_kernel_mib": 4}],
    }));
    let run = dir.cmd().arg("run").output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let status = std::fs::read_to_string(dir.path().join("status.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&status).unwrap();
    // The end at 0 and 4 ranges; 72 bytes each.
    assert_eq!(v["kernel_sets"]["default"]["elements"], 9, "{status}");
    assert_eq!(v["kernel_sets"]["default"]["estimate_bytes"], 9 * 72);
    let out = dir.cmd().arg("status").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("kernel sets:   group default: 9 elements, about 1 KiB of kernel memory"),
        "{text}"
    );
}
