//! Loads the `nft` and `ipset` outputs into the real tools, each test inside a fresh
//! network namespace so that the host's firewall is never touched.
//!
//! The unit tests in `src/format.rs` pin the exact bytes; these check what only the
//! real tools can tell: that the scripts load (twice: the daemon reloads them after
//! every change), that nft accepts the elements without `auto-merge` (no overlaps),
//! that reloading replaces the old content and that ipset's swap dance copes with a
//! growing list and a temporary set left over from an interrupted load.
//!
//! Each test prints why it skips (and passes) where `unshare`, `nft`, `ipset`, the
//! privileges for a network namespace or the kernel's ip_set support are missing.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::process::Command;

use ipnet::IpNet;
use ripe_cidr_collector::format::{
    prepare, render, Family, Format, RenderOptions, NFT_KEYWORDS, NFT_KEYWORDS_NEWER,
};

/// Where the tools live on the systems we test on; `/usr/sbin` is often missing from
/// a non-login PATH.
const EXTRA_PATH: &str = "/usr/local/sbin:/usr/sbin:/sbin";

fn search_path() -> String {
    match std::env::var("PATH") {
        Ok(p) if !p.is_empty() => format!("{p}:{EXTRA_PATH}"),
        _ => format!("/usr/local/bin:/usr/bin:/bin:{EXTRA_PATH}"),
    }
}

fn find_tool(name: &str) -> Option<PathBuf> {
    search_path()
        .split(':')
        .map(|dir| Path::new(dir).join(name))
        .find(|p| p.is_file())
}

/// A way to run a shell script in a fresh network namespace.
struct Namespace {
    /// `unshare` and its options.
    unshare: Vec<String>,
}

impl Namespace {
    /// Finds `unshare` and the tools, and checks that a namespace can be made: plain
    /// `-n` as root, else `-rn` (a user namespace) where unprivileged ones are allowed.
    fn new(tools: &[&str]) -> Result<Namespace, String> {
        let unshare = find_tool("unshare").ok_or("`unshare` not found")?;
        for tool in tools {
            find_tool(tool).ok_or(format!("`{tool}` not found"))?;
        }
        let mut why = Vec::new();
        for opts in [["-n"].as_slice(), ["-r", "-n"].as_slice()] {
            let mut unshare = vec![unshare.display().to_string()];
            unshare.extend(opts.iter().map(|s| s.to_string()));
            let ns = Namespace { unshare };
            match ns.run("true") {
                Ok(_) => return Ok(ns),
                Err(e) => why.push(format!("unshare {}: {}", opts.join(" "), e.trim())),
            }
        }
        Err(format!(
            "cannot create a network namespace (needs root or unprivileged user namespaces): {}",
            why.join("; ")
        ))
    }

    /// Runs `script` with `sh -c` in one new namespace; stdout on success, else the
    /// exit status and stderr.
    fn run(&self, script: &str) -> Result<String, String> {
        let out = Command::new(&self.unshare[0])
            .args(&self.unshare[1..])
            .args(["sh", "-c", script])
            .env("PATH", search_path())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.unshare[0]))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }
}

/// Skips the test with a printed reason (fails under `CI=true`: see `cannot_run`).
macro_rules! require {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(why) => return $crate::common::cannot_run(&why),
        }
    };
}

/// Deterministic pseudo-random numbers, so that failures reproduce.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 16
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A list shaped like a real one, only bigger: `n` ASN-like prefixes of both families
/// spread over a few regions so that many overlap and many are adjacent, plus
/// FQDN-like bare addresses, some inside those prefixes, and duplicates.
fn messy_list(seed: u64, n: usize) -> Vec<String> {
    let mut rng = Lcg(seed);
    let mut out = Vec::new();
    for _ in 0..n {
        // IPv4 in 10.0.0.0/8 and 100.64.0.0/10 so that prefixes collide often.
        let addr = if rng.below(2) == 0 {
            0x0a00_0000 | (rng.next() as u32 & 0x00ff_ffff)
        } else {
            0x6440_0000 | (rng.next() as u32 & 0x003f_ffff)
        };
        let len = 18 + rng.below(13) as u8; // /18 .. /30
        let net = IpNet::new(IpAddr::V4(Ipv4Addr::from(addr)), len)
            .expect("valid length")
            .trunc();
        out.push(net.to_string());
        match rng.below(8) {
            // An FQDN address inside the prefix just pushed.
            0 => out.push(Ipv4Addr::from(addr).to_string()),
            // The adjacent prefix of the same length.
            1 => {
                let size = 1u32 << (32 - len);
                let next = (addr & !(size - 1)).wrapping_add(size);
                out.push(format!("{}/{len}", Ipv4Addr::from(next)));
            }
            // A duplicate.
            2 => out.push(net.to_string()),
            _ => {}
        }
        if rng.below(4) == 0 {
            let addr = (0x2001_0db8_u128 << 96)
                | (u128::from(rng.next() as u32 & 0xffff) << 80)
                | u128::from(rng.next());
            let len = 36 + rng.below(29) as u8; // /36 .. /64
            let net = IpNet::new(IpAddr::V6(Ipv6Addr::from(addr)), len)
                .expect("valid length")
                .trunc();
            out.push(net.to_string());
            if rng.below(3) == 0 {
                out.push(Ipv6Addr::from(addr).to_string());
            }
        }
    }
    // Stray FQDN addresses anywhere, and the database's arbitrary order.
    for _ in 0..n / 10 {
        out.push(Ipv4Addr::from(rng.next() as u32).to_string());
    }
    for i in (1..out.len()).rev() {
        out.swap(i, rng.below(i as u64 + 1) as usize);
    }
    out
}

/// `[start, end]` of a network as integers (IPv4 mapped into the low 32 bits; the
/// families are never mixed in one comparison).
fn interval(net: IpNet) -> (u128, u128) {
    match net {
        IpNet::V4(n) => (
            u128::from(u32::from(n.network())),
            u128::from(u32::from(n.broadcast())),
        ),
        IpNet::V6(n) => (u128::from(n.network()), u128::from(n.broadcast())),
    }
}

/// Merges intervals into the disjoint, non-adjacent runs they cover: two lists of
/// networks cover the same addresses exactly when their runs are equal.
fn coverage(mut v: Vec<(u128, u128)>) -> Vec<(u128, u128)> {
    v.sort_unstable();
    let mut out: Vec<(u128, u128)> = Vec::new();
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1.saturating_add(1) => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Parses a value as the tools print it: prefix, bare address, or an `a-b` range.
fn parse_listed(word: &str) -> (u128, u128) {
    if let Some((a, b)) = word.split_once('-') {
        let a: IpAddr = a.parse().unwrap_or_else(|_| panic!("range start {word:?}"));
        let b: IpAddr = b.parse().unwrap_or_else(|_| panic!("range end {word:?}"));
        return (interval(IpNet::from(a)).0, interval(IpNet::from(b)).1);
    }
    interval(parse_net(word))
}

fn parse_net(word: &str) -> IpNet {
    if word.contains('/') {
        word.parse::<IpNet>()
            .unwrap_or_else(|_| panic!("bad prefix {word:?}"))
            .trunc()
    } else {
        IpNet::from(
            word.parse::<IpAddr>()
                .unwrap_or_else(|_| panic!("bad address {word:?}")),
        )
    }
}

/// The addresses of `values` of one family, computed independently of the renderer.
fn expected_coverage(values: &[String], v6: bool) -> Vec<(u128, u128)> {
    coverage(
        values
            .iter()
            .map(|v| parse_net(v))
            .filter(|n| matches!(n, IpNet::V6(_)) == v6)
            .map(interval)
            .collect(),
    )
}

/// Splits script output at `@@name` marker lines.
fn sections(out: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in out.lines() {
        if let Some(name) = line.strip_prefix("@@") {
            current = Some(name.to_string());
            map.insert(name.to_string(), String::new());
        } else if let Some(name) = &current {
            let s = map.get_mut(name).expect("section exists");
            s.push_str(line);
            s.push('\n');
        }
    }
    map
}

/// The elements of an `nft list set` output.
fn nft_elements(listing: &str) -> Vec<(u128, u128)> {
    let Some(start) = listing.find("elements = {") else {
        return Vec::new(); // an empty set lists no `elements` line
    };
    let rest = &listing[start + "elements = {".len()..];
    let end = rest.find('}').expect("closing brace of elements");
    rest[..end]
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .map(parse_listed)
        .collect()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write script");
    path.display().to_string()
}

fn options(format: Format, family: Option<Family>, aggregate: bool) -> RenderOptions {
    RenderOptions {
        format,
        family,
        aggregate,
        ..RenderOptions::default()
    }
}

#[test]
fn nft_script_loads_twice_and_replaces_content() {
    let ns = require!(Namespace::new(&["nft"]));
    // The kernel may lack nf_tables: probe in a namespace of its own.
    require!(ns
        .run("nft add table inet ripe_probe")
        .map_err(|e| format!("nft does not work here (kernel nf_tables support?): {e}")));
    let dir = tempfile::tempdir().expect("tempdir");

    // A: a few thousand overlapping, adjacent and duplicate values of both families.
    let a = messy_list(1, 3000);
    // B: other values, and supernets of some of A's elements, which would overlap
    // A's elements if the flush did not apply first in the same transaction.
    let mut b = messy_list(2, 500);
    b.extend(["10.0.0.0/9", "100.64.0.0/11", "2001:db8::/34"].map(String::from));
    // C: IPv4 only, rendered with a family filter: must leave B's IPv6 set alone.
    let c = vec!["192.0.2.0/24".to_string(), "192.0.2.7".to_string()];
    // D: the edge cases: /0 of both families, with addresses inside.
    let d: Vec<String> = ["0.0.0.0/0", "10.0.0.1", "::/0", "2001:db8::1"]
        .map(String::from)
        .to_vec();

    let files: Vec<String> = [
        ("a.nft", &a, None),
        ("b.nft", &b, None),
        ("c.nft", &c, Some(Family::V4)),
        ("d.nft", &d, None),
        ("e.nft", &Vec::new(), None),
    ]
    .iter()
    .map(|(name, values, family)| {
        write(
            dir.path(),
            name,
            &render(values, &options(Format::Nft, *family, false)),
        )
    })
    .collect();
    let [fa, fb, fc, fd, fe] = &files[..] else {
        unreachable!()
    };
    let list = "echo @@$1_4; nft list set inet ripe_cidr ripe_v4; \
                echo @@$1_6; nft list set inet ripe_cidr ripe_v6";
    let script = format!(
        "set -e\nlist() {{ {list}; }}\n\
         nft -f {fa}\nnft -f {fa}\nlist A\n\
         nft -f {fb}\nnft -f {fb}\nlist B\n\
         nft -f {fc}\nnft -f {fc}\nlist C\n\
         nft -f {fd}\nnft -f {fd}\nlist D\n\
         nft -f {fe}\nnft -f {fe}\nlist E\n"
    );
    let out = ns
        .run(&script)
        .unwrap_or_else(|e| panic!("nft load failed: {e}"));
    let got = sections(&out);

    let check = |name: &str, values: &[String], v6: bool| {
        let listing = &got[name];
        let elements = nft_elements(listing);
        let (got_runs, want_runs) = (coverage(elements.clone()), expected_coverage(values, v6));
        if got_runs != want_runs {
            let i = got_runs
                .iter()
                .zip(&want_runs)
                .position(|(g, w)| g != w)
                .unwrap_or(got_runs.len().min(want_runs.len()));
            panic!(
                "{name}: the set covers other addresses: {} runs, expected {}; first \
                 difference at run {i}: {:?} instead of {:?} (as integers)",
                got_runs.len(),
                want_runs.len(),
                got_runs.get(i),
                want_runs.get(i)
            );
        }
        // Exactly the aggregated elements the renderer wrote, none lost or merged.
        let p = prepare(values, None, true);
        let count = if v6 { p.v6.len() } else { p.v4.len() };
        assert_eq!(elements.len(), count, "{name}: element count");
    };
    check("A_4", &a, false);
    check("A_6", &a, true);
    let big = nft_elements(&got["A_4"]).len();
    assert!(big > 1000, "A is a big list, not {big} elements");
    check("B_4", &b, false);
    check("B_6", &b, true);
    check("C_4", &c, false);
    check("C_6", &b, true); // untouched by the IPv4-only script
    check("D_4", &d, false);
    check("D_6", &d, true);
    check("E_4", &[], false);
    check("E_6", &[], true);
}

/// The version of the `nft` found, from `nft --version` ("nftables v1.0.6 (...)").
fn nft_version(ns: &Namespace) -> Option<(u32, u32, u32)> {
    let out = ns.run("nft --version").ok()?;
    let v = out.split_whitespace().find_map(|w| w.strip_prefix('v'))?;
    let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
    Some((
        parts.next()??,
        parts.next()??,
        parts.next().flatten().unwrap_or(0),
    ))
}

#[test]
fn nft_keyword_tables_fail_and_unusual_names_load() {
    let ns = require!(Namespace::new(&["nft"]));
    require!(ns
        .run("nft add table inet ripe_probe")
        .map_err(|e| format!("nft does not work here (kernel nf_tables support?): {e}")));
    let dir = tempfile::tempdir().expect("tempdir");
    let values: Vec<String> = ["192.0.2.0/24", "198.51.100.7", "2001:db8::/32"]
        .map(String::from)
        .to_vec();
    let script = |table: &str, set: &str| {
        let opts = RenderOptions {
            table: table.into(),
            set: set.into(),
            ..options(Format::Nft, None, false)
        };
        (opts.check(), render(&values, &opts))
    };

    // Every word check_name refuses as a table name really breaks the script: the
    // renderer's output for it (written without the check) fails to load. The words
    // of newer releases only fail from nft 1.0.8 on.
    let newer = nft_version(&ns).is_some_and(|v| v >= (1, 0, 8));
    let mut refused: Vec<&str> = NFT_KEYWORDS.to_vec();
    if newer {
        refused.extend(NFT_KEYWORDS_NEWER);
    }
    let mut files = Vec::new();
    for (i, kw) in refused.iter().enumerate() {
        let (checked, bytes) = script(kw, "ripe");
        assert!(checked.is_err(), "{kw} passed the check");
        files.push((kw, write(dir.path(), &format!("kw{i}.nft"), &bytes)));
    }
    let loop_script: String = files
        .iter()
        .map(|(kw, f)| format!("nft -f {f} 2>/dev/null && echo 'loaded: {kw}'\n"))
        .collect();
    let out = ns
        .run(&format!("{loop_script}true\n"))
        .unwrap_or_else(|e| panic!("the keyword loop failed: {e}"));
    assert_eq!(out, "", "names refused although nft takes them");

    // Accepted names that look odd load (twice) and hold the elements: keywords in
    // other case or with more characters, keywords as set names (always suffixed),
    // the longest names.
    let long_table = format!("t{}", "-".repeat(63));
    let long_set = format!("S{}", "_".repeat(23));
    let names = [
        ("TABLE", "set"),
        ("Inet", "flush"),
        ("table1", "table"),
        ("ip6_nat", "elements"),
        ("a-b", "counter"),
        ("fw4", "vmap"),
        ("x", "ip"),
        (long_table.as_str(), long_set.as_str()),
    ];
    let mut load = String::from("set -e\n");
    for (i, (table, set)) in names.iter().enumerate() {
        let (checked, bytes) = script(table, set);
        assert_eq!(checked, Ok(()), "{table} {set}");
        let f = write(dir.path(), &format!("ok{i}.nft"), &bytes);
        load.push_str(&format!(
            "nft -f {f}\nnft -f {f}\necho @@{i}_4; nft list set inet {table} {set}_v4\n\
             echo @@{i}_6; nft list set inet {table} {set}_v6\n"
        ));
    }
    let out = ns
        .run(&load)
        .unwrap_or_else(|e| panic!("an accepted name does not load: {e}"));
    let got = sections(&out);
    for i in 0..names.len() {
        assert_eq!(
            nft_elements(&got[&format!("{i}_4")]).len(),
            2,
            "{:?}",
            names[i]
        );
        assert_eq!(
            nft_elements(&got[&format!("{i}_6")]).len(),
            1,
            "{:?}",
            names[i]
        );
    }
}

/// The members of an `ipset list` output.
fn ipset_members(listing: &str) -> BTreeSet<IpNet> {
    let Some((_, members)) = listing.split_once("Members:\n") else {
        panic!("no Members in {listing}")
    };
    members
        .lines()
        .take_while(|l| !l.is_empty() && !l.starts_with("Name:"))
        .map(|l| parse_net(l.split_whitespace().next().unwrap_or_default()))
        .collect()
}

fn ipset_header(listing: &str, key: &str) -> String {
    listing
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} in {listing}"))
        .trim()
        .to_string()
}

/// Asserts equal sets, printing only the differences (the sets are large).
fn assert_same(what: &str, got: &BTreeSet<IpNet>, want: &BTreeSet<IpNet>) {
    let missing: Vec<_> = want.difference(got).take(10).collect();
    let extra: Vec<_> = got.difference(want).take(10).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{what}: {} members, expected {}; missing (first 10) {missing:?}, unexpected {extra:?}",
        got.len(),
        want.len()
    );
}

/// The distinct networks of one family, as ipset should hold them without aggregation.
fn expected_members(values: &[String], v6: bool) -> BTreeSet<IpNet> {
    values
        .iter()
        .map(|v| parse_net(v))
        .filter(|n| matches!(n, IpNet::V6(_)) == v6)
        .collect()
}

#[test]
fn ipset_restore_loads_twice_grows_and_survives_leftovers() {
    let ns = require!(Namespace::new(&["ipset"]));
    // The kernel may lack ip_set / hash:net: probe in a namespace of its own.
    require!(ns
        .run("ipset create ripe_probe hash:net family inet && ipset destroy ripe_probe")
        .map_err(|e| format!("ipset does not work here (kernel ip_set support?): {e}")));
    let dir = tempfile::tempdir().expect("tempdir");

    // A: a few thousand overlapping values, not aggregated (hash:net takes overlaps).
    let a = messy_list(3, 3000);
    // B: grown past ipset's default maxelem of 65536: 70,000 distinct /32s.
    let mut b: Vec<String> = (0..70_000u32)
        .map(|i| Ipv4Addr::from(0x0b00_0000 + 2 * i).to_string())
        .collect();
    b.extend(["2001:db8::/32", "2001:db8::1"].map(String::from));
    // C: A aggregated, IPv6 only: must leave B's IPv4 set alone.
    let c = a.clone();

    let fa = write(
        dir.path(),
        "a.ipset",
        &render(&a, &options(Format::Ipset, None, false)),
    );
    let fb = write(
        dir.path(),
        "b.ipset",
        &render(&b, &options(Format::Ipset, None, false)),
    );
    let fc = write(
        dir.path(),
        "c.ipset",
        &render(&c, &options(Format::Ipset, Some(Family::V6), true)),
    );
    let script = format!(
        "set -e\n\
         ipset restore -f {fa}\nipset restore -f {fa}\n\
         echo @@A4; ipset list ripe_v4; echo @@A6; ipset list ripe_v6\n\
         # a temporary set left over by an interrupted load, with stale content\n\
         ipset create ripe_v4_new hash:net family inet maxelem 1048576\n\
         ipset add ripe_v4_new 198.51.100.0/24\n\
         ipset restore -f {fb}\n\
         echo @@B4first; ipset list ripe_v4\n\
         ipset restore -f {fb}\n\
         echo @@B4; ipset list ripe_v4; echo @@B6; ipset list ripe_v6\n\
         ipset restore -f {fc}\n\
         echo @@C4; ipset list -t ripe_v4; echo @@C6; ipset list ripe_v6\n\
         ipset restore -f {fa}\n\
         echo @@A4again; ipset list ripe_v4\n\
         echo @@names; ipset list -n\n"
    );
    let out = ns
        .run(&script)
        .unwrap_or_else(|e| panic!("ipset restore failed: {e}"));
    let got = sections(&out);

    assert_same(
        "A4",
        &ipset_members(&got["A4"]),
        &expected_members(&a, false),
    );
    assert_same(
        "A6",
        &ipset_members(&got["A6"]),
        &expected_members(&a, true),
    );
    assert!(expected_members(&a, false).len() > 2000, "A is a big list");
    // The leftover's stale entry must not have been swapped in.
    assert_same(
        "B4first",
        &ipset_members(&got["B4first"]),
        &expected_members(&b, false),
    );
    assert_eq!(ipset_header(&got["B4"], "Number of entries:"), "70000");
    assert_same(
        "B4",
        &ipset_members(&got["B4"]),
        &expected_members(&b, false),
    );
    assert_same(
        "B6",
        &ipset_members(&got["B6"]),
        &expected_members(&b, true),
    );
    assert_eq!(ipset_header(&got["C4"], "Number of entries:"), "70000");
    let c6: BTreeSet<IpNet> = prepare(&c, Some(Family::V6), true)
        .v6
        .iter()
        .map(|e| IpNet::V6(e.net))
        .collect();
    assert_same("C6", &ipset_members(&got["C6"]), &c6);
    assert_same(
        "A4again",
        &ipset_members(&got["A4again"]),
        &expected_members(&a, false),
    );
    let names: BTreeSet<&str> = got["names"].lines().collect();
    assert_eq!(
        names,
        BTreeSet::from(["ripe_v4", "ripe_v6"]),
        "temporaries destroyed"
    );
}

#[test]
fn ipset_restore_takes_zero_prefixes() {
    let ns = require!(Namespace::new(&["ipset"]));
    require!(ns
        .run("ipset create ripe_probe hash:net family inet && ipset destroy ripe_probe")
        .map_err(|e| format!("ipset does not work here (kernel ip_set support?): {e}")));
    let dir = tempfile::tempdir().expect("tempdir");
    let values: Vec<String> = ["0.0.0.0/0", "10.0.0.0/8", "::/0", "2001:db8::1"]
        .map(String::from)
        .to_vec();
    let f = write(
        dir.path(),
        "z.ipset",
        &render(&values, &options(Format::Ipset, None, false)),
    );
    let out = ns
        .run(&format!(
            "set -e\nipset restore -f {f}\nipset restore -f {f}\n\
             echo @@4; ipset list ripe_v4; echo @@6; ipset list ripe_v6\n\
             ipset test ripe_v4 203.0.113.9 && ipset test ripe_v6 2001:db8:ffff::9\n"
        ))
        .unwrap_or_else(|e| panic!("ipset restore failed: {e}"));
    let got = sections(&out);
    let halves = |v: &[&str]| v.iter().map(|s| parse_net(s)).collect::<BTreeSet<_>>();
    assert_eq!(
        ipset_members(&got["4"]),
        halves(&["0.0.0.0/1", "128.0.0.0/1"])
    );
    assert_eq!(ipset_members(&got["6"]), halves(&["::/1", "8000::/1"]));
}
