//! The daemon: collect on schedule, follow `config.json`, keep `status.json` fresh,
//! render the outputs, and survive its own errors.
//!
//! Every decision is made by [`schedule::Schedule`], which sees no clock and does no
//! I/O. This file is the shell around it: it reads the clock, the signals and
//! `config.json`, writes `status.json`, and runs the jobs the schedule asks for (a
//! collection, rendering the outputs, or writing the snapshot) on a worker thread, so
//! that a long job never delays the heartbeat or a signal. While a job fetches, a stop request ends the
//! daemon at once (nothing is written yet); while it writes, the daemon waits for the
//! commit.

mod backoff;
mod lock;
pub mod schedule;

pub use lock::{claim, refuse_if_running, running_pid, signal_collect, Claim};

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::collect::run::{self, RunError, RunReport, PHASE_FETCHING, PHASE_WRITING};
use crate::config::Paths;
use crate::db::snapshot::Saver;
use crate::db::{JournalMode, StoreError};
use crate::status;
use crate::util;

use schedule::{Action, ConfigRead, Schedule};

/// The longest the main loop sleeps: signals are flags, polled this often.
const TICK: Duration = Duration::from_millis(200);
/// The shortest sleep, so that a due time the schedule cannot act on yet never spins.
const MIN_SLEEP: Duration = Duration::from_millis(20);
/// How long a stop waits for a job that is not committing (nothing to lose).
const STOP_GRACE: Duration = Duration::from_secs(3);
/// The job's phase while it renders the outputs (after its commit).
const PHASE_OUTPUTS: u8 = 3;

/// Why the daemon could not run, or could not be found or signalled.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// The signal handlers could not be installed.
    #[error("cannot handle signals: {0}")]
    Signals(#[source] std::io::Error),
    /// Another daemon runs on the same data directory (its lock file is held).
    #[error("another daemon{} already runs on {}; stop it first", pid_note(*.pid), .dir.display())]
    Running {
        /// The data directory.
        dir: PathBuf,
        /// Its pid, as `status.json` records it.
        pid: Option<u32>,
    },
    /// `run` beside the daemon of the same data directory.
    #[error(
        "the daemon{} of {} is running and collects on its own; `collect-now` makes it collect now",
        pid_note(.pid.and_then(|p| u32::try_from(p).ok())),
        .dir.display()
    )]
    Collecting {
        /// The data directory.
        dir: PathBuf,
        /// The daemon's pid, when it could be told.
        pid: Option<libc::pid_t>,
    },
    /// No daemon holds the lock of this data directory.
    #[error("no daemon runs on {}", .0.display())]
    NotRunning(PathBuf),
    /// The lock (this file) is held, but `status.json` names no pid yet.
    #[error("a daemon holds {} but status.json has no pid yet; try again in a moment", .0.display())]
    NoPid(PathBuf),
    /// `status.json` names a pid that does not hold the lock: it is not signalled.
    #[error("status.json names pid {pid}, which does not hold {}; not signalling it", .lock.display())]
    NotHolder {
        /// The pid recorded.
        pid: u32,
        /// The lock file.
        lock: PathBuf,
    },
    /// The lock file could not be created, opened or locked.
    #[error("{}: {}", .path.display(), crate::util::io_reason(.source))]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// kill(2) failed.
    #[error("signalling the daemon (pid {pid}): {}", crate::util::io_reason(.source))]
    Signal {
        /// The daemon's pid.
        pid: libc::pid_t,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
}

/// " (pid N)", or nothing.
fn pid_note(pid: Option<u32>) -> String {
    pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
}

/// What a job reports, once, as its last act.
enum Msg {
    Collected(Result<RunReport, RunError>),
    Rendered(Vec<(String, String)>, Vec<crate::outputs::Loaded>),
    /// The snapshot job's saver, the journal mode, and the snapshot written (if due).
    Saved(Saver, JournalMode, Option<Result<i64, StoreError>>),
}

/// What a job does on its thread, given its phase to update.
type Work = Box<dyn FnOnce(&AtomicU8) -> Msg + Send>;

struct Job {
    handle: JoinHandle<()>,
    phase: Arc<AtomicU8>,
}

struct Shell {
    paths: Paths,
    core: Schedule,
    job: Option<Job>,
    messages: (Sender<Msg>, Receiver<Msg>),
    stop: Arc<AtomicBool>,
    collect_now: Arc<AtomicBool>,
    /// Changes not in the snapshot (`--snapshot`) yet, and writing it when due.
    saver: Saver,
    /// The store's change count when last looked at, and when that was: a change by
    /// another process (a purge by the CLI) re-renders the outputs and is snapshotted.
    generation: (Option<i64>, Instant),
    /// The connection that reads the change count, kept: opening one every second
    /// would parse the schema every second.
    store: crate::db::Pool,
    /// What the `load` outputs loaded, so that the next load need not read the
    /// kernel's sets back; watched at each tick.
    kernel: Arc<crate::outputs::Memory>,
    /// `services.json`'s time and size when last looked at: a changed catalog is a
    /// changed configuration even when `config.json`'s text is the same.
    catalog: Option<(std::time::SystemTime, u64)>,
}

/// The time and size of the catalog file in the data directory, if there is one.
fn catalog_stamp(paths: &Paths) -> Option<(std::time::SystemTime, u64)> {
    let m = fs::metadata(paths.data_dir.join("services.json")).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// Runs the daemon until SIGTERM or SIGINT arrives. SIGUSR1 collects every source
/// at once.
pub fn run(paths: &Paths) -> Result<(), DaemonError> {
    use signal_hook::consts::{SIGINT, SIGTERM, SIGUSR1};
    let stop = Arc::new(AtomicBool::new(false));
    let collect_now = Arc::new(AtomicBool::new(false));
    for (sig, flag) in [(SIGTERM, &stop), (SIGINT, &stop), (SIGUSR1, &collect_now)] {
        signal_hook::flag::register(sig, flag.clone()).map_err(DaemonError::Signals)?;
    }
    let previous = status::read(&paths.status()).unwrap_or_else(|e| {
        log::warn!("{e}; starting a new status file");
        None
    });
    let saver = Saver::new(previous.as_ref().is_some_and(|s| s.snapshot_pending));
    let core = Schedule::new(
        util::unix_now(),
        previous,
        std::process::id(),
        paths.config(),
    );
    let mut shell = Shell {
        paths: paths.clone(),
        core,
        job: None,
        messages: mpsc::channel(),
        stop,
        collect_now,
        saver,
        generation: (None, Instant::now()),
        store: crate::db::Pool::new(paths.clone(), 1),
        kernel: Arc::default(),
        catalog: catalog_stamp(paths),
    };
    log::info!("daemon started (pid {})", std::process::id());
    shell.main_loop();
    Ok(())
}

impl Shell {
    fn main_loop(&mut self) {
        loop {
            if self.stop.load(Ordering::SeqCst) {
                return self.shutdown();
            }
            let now = util::unix_now();
            if self.collect_now.swap(false, Ordering::SeqCst) {
                self.core.collect_now(now);
            }
            if self.core.config_check_due(now) {
                let stamp = catalog_stamp(&self.paths);
                if stamp != self.catalog {
                    self.catalog = stamp;
                    self.core.catalog_changed();
                }
                let read = self.read_config();
                let paths = &self.paths;
                let mut stored = || stored_values(paths);
                let actions = self.core.config_read(now, read, &mut stored);
                self.perform(actions);
            }
            self.reap();
            self.notice_store_changes(now);
            let actions = self.core.tick(now);
            self.perform(actions);
            // Sleep until something is due or the next poll of the signals and the
            // jobs' messages.
            let until = self.core.wake_at().saturating_sub(util::unix_now());
            thread::sleep(Duration::from_secs(until.max(0) as u64).clamp(MIN_SLEEP, TICK));
            self.kernel.watch();
            self.drain();
        }
    }

    /// `config.json` as it is now (the schedule compares and parses it).
    fn read_config(&self) -> ConfigRead {
        let path = self.paths.config();
        match fs::read_to_string(&path) {
            Ok(text) => ConfigRead::Text(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                ConfigRead::Missing(format!("{}: {e}", path.display()))
            }
            Err(e) => ConfigRead::Failed(format!("{}: {e}", path.display())),
        }
    }

    fn handle(&mut self, msg: Msg) {
        let now = util::unix_now();
        let actions = match msg {
            Msg::Collected(result) => {
                // What changed waits for the snapshot from now on, even if the daemon
                // stops before the snapshot job runs (the stop writes it then).
                let changed = result.as_ref().is_ok_and(|r| r.changed());
                if changed && self.paths.snapshot.is_some() {
                    self.saver = Saver::new(true);
                }
                // Its own changes (committed: the job has ended) are no news.
                self.generation.0 = self.store_generation();
                self.core.collected(now, result)
            }
            Msg::Rendered(failures, sets) => {
                self.core.kernel_sets(sets);
                self.core.rendered(now, failures)
            }
            Msg::Saved(saver, mode, written) => {
                self.saver = saver;
                let written = written.map(|r| r.map_err(|e| e.to_string()));
                self.core
                    .saved(now, mode.as_str(), written, saver.unsaved())
            }
        };
        self.perform(actions);
    }

    /// Once a second while no job of its own runs: whether another process changed
    /// the stored values (a purge); then the outputs are rendered again at once and
    /// the change waits for the snapshot.
    fn notice_store_changes(&mut self, now: i64) {
        if self.job.is_some() || self.generation.1.elapsed() < Duration::from_secs(1) {
            return;
        }
        self.generation.1 = Instant::now();
        let Some(current) = self.store_generation() else {
            return;
        };
        if self.generation.0.is_some_and(|g| g != current) {
            log::info!("the stored values were changed by another process: rendering the outputs");
            self.core.stored_changed(now);
            if self.paths.snapshot.is_some() {
                self.saver = Saver::new(true);
            }
        }
        self.generation.0 = Some(current);
    }

    fn store_generation(&self) -> Option<i64> {
        self.store.with(|d| d.generation()).ok().map(|g| g.0)
    }

    fn drain(&mut self) {
        while let Ok(msg) = self.messages.1.try_recv() {
            self.handle(msg);
        }
    }

    /// Joins a finished job; one that ended without reporting crashed.
    fn reap(&mut self) {
        if !self.job.as_ref().is_some_and(|j| j.handle.is_finished()) {
            return;
        }
        let job = self.job.take().expect("checked above");
        let crashed = job.handle.join().is_err();
        self.drain();
        if crashed {
            let actions = self.core.job_lost(util::unix_now());
            self.perform(actions);
        }
    }

    fn perform(&mut self, actions: Vec<Action>) {
        for action in actions {
            match action {
                Action::WriteStatus => {
                    // A `snapshot` command may have written the file meanwhile; the
                    // whole status is rewritten from memory, so take its time anew.
                    if let Some(t) = crate::db::snapshot::last_written(&self.paths) {
                        self.core.snapshot_file_written(t);
                    }
                    if let Err(e) = status::write(&self.paths.status(), self.core.status()) {
                        log::error!("{}: {e}", self.paths.status().display());
                    }
                }
                Action::CollectAll => self.collect(None),
                Action::CollectOnly(only) => self.collect(Some(only)),
                Action::Snapshot => self.save(),
                Action::Render(outputs) => {
                    let (paths, memory) = (self.paths.clone(), self.kernel.clone());
                    self.spawn(
                        PHASE_OUTPUTS,
                        Box::new(move |_| {
                            let (failed, sets) =
                                crate::outputs::render_all_sets(&paths, &outputs, Some(&memory));
                            Msg::Rendered(failed, sets)
                        }),
                    );
                }
            }
        }
    }

    /// Writes the snapshot when it is due, on the job's thread. Stopping waits for it
    /// (as for a commit): the stop would write the same snapshot anyway.
    fn save(&mut self) {
        let Some(cfg) = self.core.config().cloned() else {
            return;
        };
        let (paths, mut saver) = (self.paths.clone(), self.saver);
        self.spawn(
            PHASE_WRITING,
            Box::new(move |_| {
                let written = saver.after_run(&paths, &cfg, false, util::unix_now());
                Msg::Saved(saver, crate::db::journal_mode_for(&paths.db), written)
            }),
        );
    }

    fn collect(&mut self, only: Option<Vec<schedule::Source>>) {
        let Some(cfg) = self.core.config().cloned() else {
            return;
        };
        let (paths, stop) = (self.paths.clone(), self.stop.clone());
        self.spawn(
            run::PHASE_IDLE,
            Box::new(move |phase| {
                let report = run::collect(&paths, &cfg, only.as_deref(), &stop, phase);
                if let Ok(r) = &report {
                    run::log_report(r);
                }
                Msg::Collected(report)
            }),
        );
    }

    /// Runs `work` on a worker thread, which sends its result as its last act. (Boxed:
    /// one copy of the thread machinery in the binary, not one per kind of job.)
    fn spawn(&mut self, phase: u8, work: Work) {
        if self.stop.load(Ordering::SeqCst) {
            return; // stopping: the loop's next turn shuts down, start nothing new
        }
        // The previous job has sent its result already: it is ending.
        if let Some(old) = self.job.take() {
            let _ = old.handle.join();
        }
        let phase = Arc::new(AtomicU8::new(phase));
        let (job_phase, tx) = (phase.clone(), self.messages.0.clone());
        let handle = thread::spawn(move || {
            let _ = tx.send(work(&job_phase));
        });
        self.job = Some(Job { handle, phase });
    }

    /// Leaves promptly: waits for a job only while it is committing (or briefly).
    fn shutdown(&mut self) {
        log::info!("stopping");
        let last = self.core.stop(util::unix_now());
        if let Some(job) = self.job.take() {
            let start = Instant::now();
            loop {
                if job.handle.is_finished() {
                    let _ = job.handle.join();
                    break;
                }
                let phase = job.phase.load(Ordering::SeqCst);
                if phase != PHASE_WRITING && start.elapsed() >= STOP_GRACE {
                    match phase {
                        PHASE_FETCHING => log::info!(
                            "abandoning the collection in progress; the sources it stored so far stay"
                        ),
                        PHASE_OUTPUTS => {
                            log::info!("the collection is stored; stopping the output command");
                            crate::outputs::kill_running();
                        }
                        _ => {}
                    }
                    break;
                }
                thread::sleep(Duration::from_millis(20));
            }
        }
        // Results that arrived meanwhile are recorded; then the last status, without
        // a pid, so that `status` tells a stopped daemon from a running one at once.
        self.drain();
        // The lists must survive a reboot: what changed since the last snapshot is
        // written now (the job is done or abandoned, nothing else writes).
        if let Some(r) = self.saver.at_stop(&self.paths) {
            let r = r.map_err(|e| format!("at stop: {e}"));
            let mode = crate::db::journal_mode_for(&self.paths.db);
            let unsaved = self.saver.unsaved();
            self.core
                .storage_done(util::unix_now(), mode.as_str(), Some(r), unsaved);
        }
        self.perform(last);
    }
}

/// The sources that hold values, for the first schedule (an empty database is due,
/// and a configured source that holds none and never failed is collected at once).
fn stored_values(paths: &Paths) -> Result<Vec<schedule::Source>, String> {
    let db = crate::db::open(paths).map_err(|e| e.to_string())?;
    let mut all = Vec::new();
    for kind in crate::source::Kind::ALL {
        let held = db.sources(kind).map_err(|e| e.to_string())?;
        all.extend(held.into_iter().map(|s| (kind, s.source)));
    }
    Ok(all)
}
