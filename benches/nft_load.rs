//! nftables load benchmark: one interval set of 100,000 IPv4 /24s (none adjacent),
//! loaded by our netlink loader and by `nft -f` of our `nft` script, in the same run,
//! inside a fresh network namespace (root). Each load runs in its own process and
//! prints its time and peak RSS: `nft`'s from wait4 (ru_maxrss, which also counts
//! this process's RSS at the exec: a few MiB), ours from its own VmHWM. Prints
//! figures; asserts nothing.
//!
//! Then the reload the dnsmasq output's design leaves us (docs/groups-and-routing.md):
//! the same 100,000-prefix group reloaded after 1,000 changes (500 prefixes gone, 500
//! new) while dnsmasq's own `ripe_dns_v4` set in the table holds 10,000 addresses
//! (20 of them added one at a time between the first two loads, as dnsmasq does),
//! by one process that keeps a memory of what it loaded (as the daemon does: the
//! loads by difference need not read the set back), beside the same difference by
//! a new process (which reads the set back) and by `nft -f`; the dns set keeps
//! every element (checked after each round).
//!
//! Last, the product path: the release binary's daemon with a `{"load": "nft"}`
//! output, loading the same 100,000 prefixes from its database at start, beside the
//! same daemon writing them as a `text` file (same database, interleaved, 3 rounds
//! each): the daemon's VmHWM once the output is done, from `/proc/PID/status`. With
//! `RIPE_BASELINE_BIN=FILE`, an earlier binary of the same schema loads the same
//! database in the same rounds.
//!
//! `cargo bench --bench nft_load` (as root, with `nft` installed).

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("skipped: nftables exist on Linux only");
}

#[cfg(target_os = "linux")]
mod linux {
    use std::process::Command;
    use std::time::Instant;

    use ripe_cidr_collector::format::{render, Collector, Format, RenderOptions};
    use ripe_cidr_collector::nftnl;

    const N: u32 = 100_000;
    const ROUNDS: usize = 3;
    /// Prefixes shifted out (and as many in) by the reload after changes.
    const SHIFT: u32 = 500;
    /// Addresses dnsmasq's set holds during that reload.
    const DNS: u32 = 10_000;
    /// Of those, the addresses dnsmasq adds one at a time between two of our loads.
    const ADDS: u32 = 20;

    fn dns_address(i: u32) -> String {
        format!("100.64.{}.{}", i >> 8, i & 255)
    }

    fn prefix(i: u32) -> String {
        let a = (1u32 << 24) + i * 512;
        format!("{}.{}.{}.0/24", a >> 24, (a >> 16) & 255, (a >> 8) & 255)
    }

    /// CPU seconds (user and system) of this process so far.
    fn cpu_secs() -> f64 {
        // SAFETY: an all-zero rusage is valid; getrusage fills it.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
        let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
        t(u.ru_utime) + t(u.ru_stime)
    }

    fn peak_kib() -> u64 {
        std::fs::read_to_string("/proc/self/status")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// The loader's process: values streamed into a Collector one at a time (as from
    /// the database), aggregated, loaded. Prints seconds and VmHWM.
    fn child(first: u32) {
        let before = peak_kib();
        let t = Instant::now();
        let mut c = Collector::new(None);
        for i in first..first + N {
            c.push(&prefix(i));
        }
        let p = c.finish(true);
        let prepared = t.elapsed();
        let after_prepare = peak_kib();
        let (t2, cpu) = (Instant::now(), cpu_secs());
        match nftnl::load("ripe_cidr", "ripe", &p, None) {
            Ok(s) => println!(
                "{:.3} {:.3} {} {} {} {} {} {:.3}",
                (prepared + t2.elapsed()).as_secs_f64(),
                t2.elapsed().as_secs_f64(),
                peak_kib(),
                before,
                s.bytes,
                after_prepare,
                s.elements,
                cpu_secs() - cpu
            ),
            Err(e) => println!("error {e}"),
        }
    }

    /// The daemon's way: beside dnsmasq's set (filled by `nft -f dns`), one process
    /// that keeps a memory of what it loaded loads the set (new), then, once dnsmasq
    /// added [`ADDS`] addresses one at a time (the memory watched after each, as the
    /// daemon's tick does), the 1,000 changes, back, nothing changed, and a change of
    /// one prefix (one out, one in: what the kernel costs per commit). Prints per
    /// load its seconds, bytes, elements and whether the set was read back.
    fn remembered(nft: &str, dns: &str) {
        let memory = nftnl::Memory::default();
        let done = Command::new(nft).arg("-f").arg(dns).status();
        assert!(done.is_ok_and(|s| s.success()), "nft -f {dns}");
        for (k, first) in [0, SHIFT, 0, 0, 1].into_iter().enumerate() {
            for i in (DNS - ADDS..DNS).filter(|_| k == 1) {
                let one = format!("{{ {} }}", dns_address(i));
                let added = Command::new(nft)
                    .args(["add", "element", "inet", "ripe_cidr", "ripe_dns_v4", &one])
                    .status();
                assert!(added.is_ok_and(|s| s.success()), "nft add element {one}");
                memory.watch();
            }
            let mut c = Collector::new(None);
            for i in first..first + N {
                c.push(&prefix(i));
            }
            let p = c.finish(true);
            let o = nftnl::LoadOptions {
                memory: Some(&memory),
                ..nftnl::LoadOptions::default()
            };
            let (t, cpu) = (Instant::now(), cpu_secs());
            match nftnl::load_with("ripe_cidr", "ripe", &p, &o) {
                Ok(s) => println!(
                    "{:.3} {} {} {:.3} {}",
                    t.elapsed().as_secs_f64(),
                    s.bytes,
                    s.elements,
                    cpu_secs() - cpu,
                    s.read_back
                ),
                Err(e) => println!("error {e}"),
            }
        }
    }

    /// Runs `cmd`, returning seconds, peak RSS in KiB and stdout. Waited for with
    /// wait4, for its rusage.
    #[allow(clippy::zombie_processes)]
    fn measure(cmd: &mut Command) -> (f64, i64, String) {
        let t = Instant::now();
        let child = cmd
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        let pid = child.id() as libc::pid_t;
        let mut out = child.stdout.unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut out, &mut text).unwrap();
        let mut status = 0;
        // SAFETY: an all-zero rusage is valid; we wait for our own child.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        (t.elapsed().as_secs_f64(), usage.ru_maxrss as i64, text)
    }

    pub fn main() {
        let args: Vec<String> = std::env::args().collect();
        if let Some(at) = args.iter().position(|a| a == "--child") {
            let first = args.get(at + 1).and_then(|a| a.parse().ok()).unwrap_or(0);
            return child(first);
        }
        if let [_, flag, nft, dns, ..] = &args[..] {
            if flag == "--remembered" {
                return remembered(nft, dns);
            }
        }
        let Some(nft) = ["/usr/sbin/nft", "/sbin/nft", "/usr/local/sbin/nft"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
        else {
            eprintln!("skipped: nft not found (apt-get install nftables)");
            return;
        };
        // SAFETY: plain system call; single-threaded here.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            eprintln!(
                "skipped: cannot create a network namespace (needs root): {}",
                std::io::Error::last_os_error()
            );
            return;
        }
        let values: Vec<String> = (0..N).map(prefix).collect();
        let opts = RenderOptions {
            format: Format::Nft,
            ..RenderOptions::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("ripe.nft");
        std::fs::write(&script, render(&values, &opts)).unwrap();
        drop(values);
        let exe = std::env::current_exe().unwrap();
        println!("{N} IPv4 /24s in one interval set, inside a new network namespace");
        println!("(peak RSS: nft's ru_maxrss, ours its own VmHWM; the largest of the rounds)");
        let delete = || {
            let _ = Command::new(nft)
                .args(["delete", "table", "inet", "ripe_cidr"])
                .stderr(std::process::Stdio::null())
                .status();
        };
        let nft_run = || {
            let (secs, kib, _) = measure(Command::new(nft).arg("-f").arg(&script));
            (secs, kib, String::new())
        };
        let ours = |first: u32| {
            let (secs, _, out) = measure(Command::new(&exe).arg("--child").arg(first.to_string()));
            let f: Vec<&str> = out.split_whitespace().collect();
            if f.len() != 8 {
                eprintln!("netlink load failed: {}", out.trim());
                std::process::exit(1);
            }
            let kib = f[2].parse().unwrap_or(0);
            // Load time, bytes, elements and CPU first (read by `after_changes`).
            let note = format!(
                "{} {} {} {} (batch {} bytes, {} elements; VmHWM {} KiB at start, {} KiB after aggregating)",
                f[1], f[4], f[6], f[7], f[4], f[6], f[3], f[5]
            );
            (secs, kib, note)
        };
        // [nft new, nft again, ours new, ours again] per round, interleaved so that
        // load from other processes on the machine hits both alike.
        let mut runs: Vec<[(f64, i64, String); 4]> = Vec::new();
        for _ in 0..ROUNDS {
            delete();
            let a = nft_run();
            let b = nft_run();
            delete();
            let c = ours(0);
            let d = ours(0);
            runs.push([a, b, c, d]);
        }
        let names = [
            "nft -f, new set",
            "nft -f, again (flush, add)",
            "netlink, new set",
            "netlink, again (no change)",
        ];
        let mut median = [0f64; 4];
        for (k, name) in names.iter().enumerate() {
            let mut secs: Vec<f64> = runs.iter().map(|r| r[k].0).collect();
            secs.sort_by(f64::total_cmp);
            median[k] = secs[secs.len() / 2];
            let kib = runs.iter().map(|r| r[k].1).max().unwrap_or(0);
            let note = runs[0][k].2.splitn(5, ' ').nth(4).unwrap_or("");
            println!(
                "{name:<28} {:>7.3} s  peak RSS {kib:>7} KiB  {note}",
                median[k]
            );
        }
        println!(
            "median of {ROUNDS}; time netlink / nft -f: {:.0}% new set, {:.0}% again",
            100.0 * median[2] / median[0],
            100.0 * median[3] / median[1]
        );
        after_changes(nft, dir.path(), &opts, &ours, &exe);
        daemon_peaks(nft);
    }

    /// The daemon's VmHWM once its one output (`output` in `config.json`) is done:
    /// started on the database in `dir`, killed after the output's log line.
    fn daemon_peak(
        bin: &std::path::Path,
        dir: &std::path::Path,
        output: &serde_json::Value,
    ) -> u64 {
        use std::io::BufRead;
        let config = serde_json::json!({ "outputs": [output] });
        std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
        let mut daemon = Command::new(bin)
            .env_remove("RIPE_DATA_DIR")
            .env_remove("RIPE_DB")
            .env_remove("RIPE_SNAPSHOT")
            .arg("--data-dir")
            .arg(dir)
            .arg("daemon")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = std::io::BufReader::new(daemon.stderr.take().unwrap());
        let mut log = String::new();
        for line in stderr.lines().map_while(Result::ok) {
            log.push_str(&line);
            log.push('\n');
            if line.contains("output ") {
                break;
            }
        }
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", daemon.id())).unwrap_or_default();
        let _ = daemon.kill();
        let _ = daemon.wait();
        if !log.contains("written") {
            eprintln!("the daemon's output failed:\n{log}");
            std::process::exit(1);
        }
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// The daemon loading the 100,000 prefixes from its database over netlink, beside
    /// the same daemon writing them as a `text` file, interleaved.
    fn daemon_peaks(nft: &str) {
        let dir = tempfile::tempdir().unwrap();
        let paths = ripe_cidr_collector::config::Paths::new(dir.path(), None);
        let values: Vec<String> = (0..N).map(prefix).collect();
        let now = ripe_cidr_collector::util::unix_now();
        ripe_cidr_collector::db::open(&paths)
            .unwrap()
            .merge_source(
                ripe_cidr_collector::source::Kind::Asn,
                "64500",
                &values,
                now,
                7,
            )
            .unwrap();
        drop(values);
        let text = serde_json::json!({
            "path": dir.path().join("ripe.txt"), "format": "text", "type": "cidr"
        });
        let load = serde_json::json!({ "load": "nft", "type": "cidr" });
        let ours = std::path::Path::new(env!("CARGO_BIN_EXE_ripe-cidr-collector"));
        let baseline = std::env::var_os("RIPE_BASELINE_BIN").map(std::path::PathBuf::from);
        let delete = || {
            let _ = Command::new(nft)
                .args(["delete", "table", "inet", "ripe_cidr"])
                .stderr(std::process::Stdio::null())
                .status();
        };
        let (mut as_text, mut loading, mut base) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            delete();
            as_text.push(daemon_peak(ours, dir.path(), &text));
            loading.push(daemon_peak(ours, dir.path(), &load));
            if let Some(b) = &baseline {
                delete();
                base.push(daemon_peak(b, dir.path(), &load));
            }
        }
        let show = |v: &[u64]| {
            let mut s = v.to_vec();
            s.sort_unstable();
            let list: Vec<String> = v.iter().map(u64::to_string).collect();
            format!(
                "median {:>6} KiB ({:.1} MiB; rounds {})",
                s[s.len() / 2],
                s[s.len() / 2] as f64 / 1024.0,
                list.join(", ")
            )
        };
        println!("daemon VmHWM, {N} prefixes in its database, one output at start, interleaved:");
        println!("  load over netlink  {}", show(&loading));
        println!("  text file          {}", show(&as_text));
        if let Some(b) = &baseline {
            println!("  load, {}  {}", b.display(), show(&base));
        }
    }

    /// The reload of the group after 1,000 changes, with dnsmasq's set beside it: by
    /// a process that remembers what it loaded (the daemon), by a new process (which
    /// reads the set back) and by `nft -f`; prints their rows and checks the dns set.
    fn after_changes(
        nft: &str,
        dir: &std::path::Path,
        opts: &RenderOptions,
        ours: &dyn Fn(u32) -> (f64, i64, String),
        exe: &std::path::Path,
    ) {
        let values: Vec<String> = (SHIFT..N + SHIFT).map(prefix).collect();
        let changed = dir.join("changed.nft");
        std::fs::write(&changed, render(&values, opts)).unwrap();
        drop(values);
        // dnsmasq's set as the dnsmasq output creates it, filled as dnsmasq would.
        let dns: Vec<String> = (0..DNS - ADDS).map(dns_address).collect();
        let dns_script = dir.join("dns.nft");
        std::fs::write(
            &dns_script,
            format!(
                "add table inet ripe_cidr\n\
                 add set inet ripe_cidr ripe_dns_v4 {{ type ipv4_addr; flags timeout; timeout 1d; }}\n\
                 add element inet ripe_cidr ripe_dns_v4 {{ {} }}\n",
                dns.join(", ")
            ),
        )
        .unwrap();
        let dns_count = || {
            let o = Command::new(nft)
                .args(["list", "set", "inet", "ripe_cidr", "ripe_dns_v4"])
                .output()
                .unwrap();
            String::from_utf8_lossy(&o.stdout)
                .matches("expires")
                .count() as u32
        };
        // Per round: the daemon's five loads (new set, the difference after 1,000
        // changes, the difference back, nothing changed, one out and one in), the
        // difference again by a new process, and nft -f of the change.
        let mut rows: Vec<[(f64, i64, String); 7]> = Vec::new();
        for _ in 0..ROUNDS {
            let _ = Command::new(nft)
                .args(["delete", "table", "inet", "ripe_cidr"])
                .stderr(std::process::Stdio::null())
                .status();
            let (_, kib, out) = measure(
                Command::new(exe)
                    .arg("--remembered")
                    .arg(nft)
                    .arg(&dns_script),
            );
            let lines: Vec<(f64, i64, String)> =
                out.lines().map(|l| (0.0, kib, l.to_string())).collect();
            if lines.len() != 5 || out.contains("error") {
                eprintln!("netlink loads failed: {out}");
                std::process::exit(1);
            }
            let fresh = ours(SHIFT);
            let (secs, kib, _) = measure(Command::new(nft).arg("-f").arg(&changed));
            assert_eq!(dns_count(), DNS, "dnsmasq's set lost elements in a reload");
            let [a, b, c, d, e]: [_; 5] = lines.try_into().unwrap();
            rows.push([a, b, c, d, e, fresh, (secs, kib, String::new())]);
        }
        println!(
            "reload after 1,000 changes ({SHIFT} out, {SHIFT} in), dnsmasq's set of {DNS} beside:"
        );
        // The load call's own seconds (the list's aggregation, the same in each, left
        // out), its bytes and elements: medians of the rounds.
        let field = |r: &(f64, i64, String), i: usize| -> f64 {
            r.2.split(' ')
                .nth(i)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0)
        };
        let median = |k: usize, i: usize| {
            let mut v: Vec<f64> = rows.iter().map(|r| field(&r[k], i)).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        for (k, name) in [
            "one process, full load (new)",
            "remembered, difference",
            "remembered, difference back",
            "remembered, nothing changed",
            "remembered, one out, one in",
            "new process, difference",
        ]
        .iter()
        .enumerate()
        {
            let how = match (k, rows[0][k].2.split(' ').nth(4)) {
                (0, _) => "created",
                (5, _) | (_, Some("true")) => "read back",
                _ => "remembered",
            };
            println!(
                "  {name:<28} load {:>6.3} s (CPU {:>6.3} s) {:>8} bytes {:>6} elements ({how})",
                median(k, 0),
                median(k, 3),
                median(k, 1),
                median(k, 2)
            );
        }
        let mut nft_secs: Vec<f64> = rows.iter().map(|r| r[6].0).collect();
        nft_secs.sort_by(f64::total_cmp);
        println!(
            "  nft -f, flush + add          {:>6.3} s (whole process)",
            nft_secs[nft_secs.len() / 2]
        );
        for (k, name) in [
            (1, "remembered"),
            (4, "one out, one in"),
            (5, "new process"),
        ] {
            println!(
                "  difference ({name}) / full load: {:.1}% of the time, {:.1}% of the CPU, {:.1}% of the bytes",
                100.0 * median(k, 0) / median(0, 0),
                100.0 * median(k, 3) / median(0, 3),
                100.0 * median(k, 1) / median(0, 1)
            );
        }
        println!("  dnsmasq's {DNS} elements kept by every reload");
    }
}
