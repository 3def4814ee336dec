//! The daemon's `outputs`: render the stored addresses to files and run a command
//! after each (e.g. `nft -f`), or load the nftables sets directly (`load`), so that
//! the firewall follows the list.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::config::{OutputConfig, Paths};
use crate::db;
use crate::status::KernelSet;

#[cfg(feature = "bgp")]
pub mod bird;
pub mod dnsmasq;
mod loaded;
#[cfg(feature = "routes")]
mod routes;
pub use loaded::loads_only;

/// Renders every output and runs its command. Returns the failures, keyed by path; a
/// failing output never stops the others.
pub fn render_all(paths: &Paths, outputs: &[OutputConfig]) -> Vec<(String, String)> {
    render_all_sets(paths, outputs, None).0
}

/// What the `load` outputs loaded, kept by the daemon from one load to the next.
#[cfg(target_os = "linux")]
pub use crate::nftnl::Memory;
#[cfg(not(target_os = "linux"))]
#[derive(Debug, Default)]
pub struct Memory;
#[cfg(not(target_os = "linux"))]
impl Memory {
    pub fn watch(&self) {}
}

/// The kernel sets a `load` output filled: its group, their elements and estimate.
pub type Loaded = (String, KernelSet);

/// [`render_all`], and what each `load` output that succeeded put in the kernel;
/// `memory` what they loaded before (see [`Memory`]).
pub fn render_all_sets(
    paths: &Paths,
    outputs: &[OutputConfig],
    memory: Option<&Memory>,
) -> (Vec<(String, String)>, Vec<Loaded>) {
    if outputs.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let _one_at_a_time = lock_outputs(paths);
    render_locked(paths, outputs, memory, false)
}

/// `render --load-only` (the firewall include): `outputs` (their [`loads_only`]),
/// unless the sets hold what they would load already (the daemon
/// loaded them while this waited for the lock; see `loaded`). The failures.
pub fn load_unless_current(paths: &Paths, outputs: &[OutputConfig]) -> Vec<(String, String)> {
    let _one_at_a_time = lock_outputs(paths);
    render_locked(paths, outputs, None, true).0
}

/// [`render_all_sets`] with the outputs' lock held; with `skip_current`, nothing when
/// the sets are current.
fn render_locked(
    paths: &Paths,
    outputs: &[OutputConfig],
    memory: Option<&Memory>,
    skip_current: bool,
) -> (Vec<(String, String)>, Vec<Loaded>) {
    let (mut failures, mut sets) = (Vec::new(), Vec::new());
    let db = match db::open_read(paths) {
        Ok(db) => db,
        Err(e) => {
            let all = outputs.iter().map(|o| (o.name(), e.to_string()));
            return (all.collect(), sets);
        }
    };
    // Never flush a firewall's sets with the empty list of a database just reset.
    let emptied = match crate::listing::check_not_emptied(paths, &db) {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    if let Err(e) = emptied {
        log::error!("outputs not written: {e}");
        let all = outputs.iter().map(|o| (o.name(), e.clone()));
        return (all.collect(), sets);
    }
    let record = db
        .generation()
        .ok()
        .and_then(|g| loaded::record(paths, g.0, outputs));
    if let Some(r) = &record {
        if skip_current && loaded::current(paths, r, outputs) {
            log::info!("the sets are loaded from the stored values already: nothing to load");
            // The routes are not in that record: a link that went down took its
            // routes with it, so they are kept whether or not the sets are current.
            #[cfg(feature = "routes")]
            for out in outputs.iter().filter(|o| o.load.is_some()) {
                if let Err(e) = routes::keep(paths, out) {
                    log::error!("output {}: {e}", out.name());
                    failures.push((out.name(), e));
                }
            }
            return (failures, sets);
        }
        loaded::forget(paths);
    }
    let mut loads_ok = true;
    for out in outputs {
        let name = out.name();
        match render_one(paths, &db, out, memory) {
            Ok(loaded) => {
                log::info!("output {name} written");
                sets.extend(loaded);
            }
            Err(e) => {
                log::error!("output {name}: {e}");
                loads_ok &= out.load.is_none();
                failures.push((name, e));
            }
        }
    }
    if let (Some(r), true) = (&record, loads_ok) {
        loaded::remember(paths, r);
    }
    (failures, sets)
}

/// One writer of the outputs at a time (`.outputs.lock` in the data directory): at
/// boot the firewall include's `render --load-only` and the daemon's first load would
/// otherwise fill the same sets at the same moment. Best effort: without the lock the
/// outputs are still written.
fn lock_outputs(paths: &Paths) -> Option<std::fs::File> {
    let path = paths.data_dir.join(".outputs.lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .or_else(|_| std::fs::File::open(&path))
        .ok()?;
    crate::util::own_like_dir(&f, &path);
    crate::util::lock_exclusive(&f).ok()?;
    Some(f)
}

fn render_one(
    paths: &Paths,
    db: &db::Db,
    out: &OutputConfig,
    memory: Option<&Memory>,
) -> Result<Option<Loaded>, String> {
    if let Some(d) = &out.dnsmasq {
        return dnsmasq::render(out, d)
            .map(|_| None)
            .map_err(|e| e.to_string());
    }
    let mut loaded = None;
    #[cfg(feature = "bgp")]
    if let (Some(path), crate::format::Format::Bird) = (&out.path, out.render.format) {
        if bird::write(db, out, path)? == bird::Written::Unchanged {
            return Ok(None);
        }
        if let Some(cmd) = &out.command {
            run_shell(cmd, Duration::from_secs(out.timeout_seconds))?;
        }
        bird::paid(path);
        return Ok(None);
    }
    if let Some(path) = &out.path {
        let bytes = crate::listing::render_selection(db, &out.selection, &out.render)
            .map_err(|e| e.to_string())?;
        crate::util::write_atomic(path, &bytes).map_err(|e| format!("writing: {e}"))?;
    }
    if let Some(crate::config::LoadKind::Nft) = out.load {
        #[cfg(target_os = "linux")]
        {
            // Aggregated as for the nft format: interval sets must not overlap.
            let opts = crate::format::RenderOptions {
                aggregate: true,
                ..out.render.clone()
            };
            let prepared =
                crate::listing::prepare(db, &out.selection, &opts).map_err(|e| e.to_string())?;
            // (Recorded as text in status.json's `output_failures`.)
            // With the dns sets a dnsmasq output fills: created if missing, never
            // flushed, matched by the mark chains too.
            let o = crate::nftnl::LoadOptions {
                family: out.render.family,
                mark: out.mark,
                dns_timeout: out.dns_sets,
                timeout_seconds: out.kernel_timeout,
                max_bytes: match out.max_kernel_mib {
                    Some(mib) => Some(mib << 20),
                    None => crate::nftnl::default_max_kernel_bytes(),
                },
                group: &out.render.group,
                memory,
            };
            let stats =
                crate::nftnl::load_logged(&out.render, &prepared, &o).map_err(|e| e.to_string())?;
            let set = KernelSet {
                elements: stats.kernel_elements as u64,
                estimate_bytes: stats.estimate,
            };
            loaded = Some((out.render.group.clone(), set));
            // The rules and routes next to the sets; a failure fails the output (and
            // is retried with it), the sets stay loaded.
            #[cfg(feature = "routes")]
            routes::keep(paths, out)?;
            #[cfg(not(feature = "routes"))]
            let _ = paths;
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (memory, paths);
            return Err("loading nftables sets needs Linux".into());
        }
    }
    match &out.command {
        Some(cmd) => run_shell(cmd, Duration::from_secs(out.timeout_seconds)).map(|()| loaded),
        None => Ok(loaded),
    }
}

/// The process group of the output command running now (0: none), so that a daemon
/// that stops does not leave it behind.
static RUNNING: AtomicU32 = AtomicU32::new(0);

/// Kills the output command running now, with what it started.
pub fn kill_running() {
    let pid = RUNNING.swap(0, Ordering::SeqCst);
    if pid != 0 {
        kill_group(pid);
    }
}

/// How long the last words of a command's stderr are awaited after it exited: a
/// command that leaves a background process holding the pipe must not block us.
const STDERR_GRACE: Duration = Duration::from_millis(500);

/// Runs `cmd` with `/bin/sh -c`, killing it after `limit`. Its stderr (the last line)
/// goes into the error message.
pub fn run_shell(cmd: &str, limit: Duration) -> Result<(), String> {
    let mut command = Command::new("/bin/sh");
    command.arg("-c").arg(cmd);
    // Its own process group, so that a timeout kills what the shell started too (a
    // hung `nft` would otherwise outlive the shell and keep our pipe open).
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("command {cmd:?} could not start: {e}"))?;
    RUNNING.store(child.id(), Ordering::SeqCst);
    // Read stderr on the side so a chatty command cannot block on a full pipe.
    let mut err = child.stderr.take();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(e) = err.as_mut() {
            let _ = e.take(64 * 1024).read_to_end(&mut buf);
        }
        let _ = tx.send(buf);
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() >= limit => {
                kill_group(child.id());
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                RUNNING.store(0, Ordering::SeqCst);
                return Err(format!("command {cmd:?}: {e}"));
            }
        }
    };
    RUNNING.store(0, Ordering::SeqCst);
    let stderr = rx.recv_timeout(STDERR_GRACE).unwrap_or_default();
    let last = String::from_utf8_lossy(&stderr)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| format!(": {}", l.trim()))
        .unwrap_or_default();
    match status {
        None => Err(format!(
            "command {cmd:?} killed after {} s",
            limit.as_secs()
        )),
        Some(s) if s.success() => Ok(()),
        Some(s) => Err(format!("command {cmd:?} failed ({s}){last}")),
    }
}

/// Kills the process group led by `pid`.
fn kill_group(pid: u32) {
    #[cfg(unix)]
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory
        // is involved.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands() {
        assert!(run_shell("true", Duration::from_secs(5)).is_ok());
        let e = run_shell("echo nope >&2; exit 3", Duration::from_secs(5)).unwrap_err();
        assert!(e.contains("exit status: 3") && e.ends_with(": nope"), "{e}");
        let t = Instant::now();
        let e = run_shell("sleep 10", Duration::from_millis(300)).unwrap_err();
        assert!(e.contains("killed"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(5));
        // A command that leaves a background process holding stderr does not block.
        let t = Instant::now();
        assert!(run_shell("sleep 10 & echo started", Duration::from_secs(5)).is_ok());
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}
