//! nftables load benchmark: one interval set of 100,000 IPv4 /24s (none adjacent),
//! loaded by our netlink loader and by `nft -f` of our `nft` script, in the same run,
//! inside a fresh network namespace (root). Each load runs in its own process and
//! prints its time and peak RSS: `nft`'s from wait4 (ru_maxrss, which also counts
//! this process's RSS at the exec: a few MiB), ours from its own VmHWM. Prints
//! figures; asserts nothing.
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

    fn prefix(i: u32) -> String {
        let a = (1u32 << 24) + i * 512;
        format!("{}.{}.{}.0/24", a >> 24, (a >> 16) & 255, (a >> 8) & 255)
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
    fn child() {
        let before = peak_kib();
        let t = Instant::now();
        let mut c = Collector::new(None);
        for i in 0..N {
            c.push(&prefix(i));
        }
        let p = c.finish(true);
        let prepared = t.elapsed();
        let after_prepare = peak_kib();
        let t2 = Instant::now();
        match nftnl::load("ripe_cidr", "ripe", &p, None) {
            Ok(s) => println!(
                "{:.3} {:.3} {} {} {} {}",
                (prepared + t2.elapsed()).as_secs_f64(),
                t2.elapsed().as_secs_f64(),
                peak_kib(),
                before,
                s.bytes,
                after_prepare
            ),
            Err(e) => println!("error {e}"),
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
        if std::env::args().any(|a| a == "--child") {
            return child();
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
        let ours = || {
            let (secs, _, out) = measure(Command::new(&exe).arg("--child"));
            let f: Vec<&str> = out.split_whitespace().collect();
            if f.len() != 6 {
                eprintln!("netlink load failed: {}", out.trim());
                std::process::exit(1);
            }
            let kib = f[2].parse().unwrap_or(0);
            let note = format!(
                "(batch {} bytes; VmHWM {} KiB at start, {} KiB after aggregating)",
                f[4], f[3], f[5]
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
            let c = ours();
            let d = ours();
            runs.push([a, b, c, d]);
        }
        let names = [
            "nft -f, new set",
            "nft -f, again (flush, add)",
            "netlink, new set",
            "netlink, again (flush, add)",
        ];
        let mut median = [0f64; 4];
        for (k, name) in names.iter().enumerate() {
            let mut secs: Vec<f64> = runs.iter().map(|r| r[k].0).collect();
            secs.sort_by(f64::total_cmp);
            median[k] = secs[secs.len() / 2];
            let kib = runs.iter().map(|r| r[k].1).max().unwrap_or(0);
            println!(
                "{name:<28} {:>7.3} s  peak RSS {kib:>7} KiB  {}",
                median[k], runs[0][k].2
            );
        }
        println!(
            "median of {ROUNDS}; time netlink / nft -f: {:.0}% new set, {:.0}% again",
            100.0 * median[2] / median[0],
            100.0 * median[3] / median[1]
        );
    }
}
