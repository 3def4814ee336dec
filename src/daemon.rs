//! The daemon: collect on schedule, follow `config.json`, keep `status.json` fresh,
//! render the outputs, optionally serve the API, and survive its own errors.
//!
//! The main thread only keeps time: it watches the configuration, writes the
//! heartbeat and starts jobs (a collection run, then the outputs) on a worker thread,
//! so that a long run never delays the heartbeat or a signal. The job reports its
//! collection as soon as it is stored and its outputs when they are done. While a job
//! fetches, a stop request ends the daemon at once (nothing is written yet); while it
//! writes, the daemon waits for the commit.

use std::fs;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::cli::{display_source, CliError, Outcome};
use crate::collect::run::{self, RunError, RunReport, PHASE_FETCHING, PHASE_WRITING};
use crate::config::{self, Config, Kind, Paths};
use crate::status::{self, Status};
use crate::util;

/// How often the main loop wakes up.
const TICK: Duration = Duration::from_millis(200);
/// How often `config.json` is checked for changes.
const CONFIG_CHECK: Duration = Duration::from_secs(2);
/// How often the heartbeat is written (the contract asks for at least every 60 s).
const HEARTBEAT: Duration = Duration::from_secs(30);
/// After a run that failed as a whole (storage), failed sources or outputs, the
/// next try comes this soon (without a configuration to say otherwise).
const RETRY_AFTER_FAILURE: i64 = 60;
/// How long a stop waits for a job that is not committing (nothing to lose).
const STOP_GRACE: Duration = Duration::from_secs(3);
/// The job's phase while it renders the outputs (after its commit).
const PHASE_OUTPUTS: u8 = 3;

/// What a job collects.
#[derive(Debug, Clone)]
enum Collect {
    /// Every source.
    All,
    /// Only newly added sources.
    Only(Vec<(Kind, String)>),
    /// Nothing: only the outputs.
    Nothing,
}

/// What a job tells the main loop, in this order.
enum Msg {
    /// The collection is stored (or failed); `None` for an outputs-only job.
    Collected(bool, Option<Result<RunReport, RunError>>),
    /// The outputs were rendered: which ones, and the failures by path. Not sent
    /// when the job did not render.
    Rendered(Vec<String>, Vec<(String, String)>),
}

struct Job {
    handle: JoinHandle<()>,
    phase: Arc<AtomicU8>,
    /// Whether this job was asked to render the outputs whatever happens.
    forced_render: bool,
    rendered: bool,
}

/// A delay that starts at the retry time and doubles with every failure in a row,
/// up to the interval.
#[derive(Debug, Default)]
struct Backoff {
    step: u32,
}

impl Backoff {
    /// The next delay, in seconds.
    fn next(&mut self, first: i64, cap: i64) -> i64 {
        let delay = first.saturating_mul(1 << self.step.min(16)).min(cap);
        self.step = self.step.saturating_add(1);
        delay.max(1)
    }

    fn reset(&mut self) {
        self.step = 0;
    }
}

struct Daemon {
    paths: Paths,
    /// The last good configuration; `None` until one could be read.
    cfg: Option<Config>,
    /// What `config.json` held at the last check (its text, or why it could not be
    /// read), so that only changes are acted on and errors are logged once.
    seen: Option<Result<String, String>>,
    status: Status,
    next_run: i64,
    pending: Vec<(Kind, String)>,
    /// When the outputs are to be rendered even if nothing changed: at start, after
    /// the outputs' configuration changed, and to retry failed ones.
    render_due: Option<i64>,
    /// When only some outputs are due (retrying failed ones): their paths.
    render_only: Option<Vec<std::path::PathBuf>>,
    render_backoff: Backoff,
    /// A run failed as a whole after storing part of its work: the next collection
    /// renders the outputs whatever it changes.
    render_next: bool,
    /// When the last full run started: the base of the schedule.
    last_full_start: Option<i64>,
    run_backoff: Backoff,
    job: Option<Job>,
    /// Sources that failed in the last run, tried again at `retry_at` (after a minute,
    /// doubling up to the interval), so that a WAN that comes up late at boot does
    /// not leave the lists empty for a whole interval.
    retry: Vec<(Kind, String)>,
    retry_at: Option<i64>,
    retry_backoff: Backoff,
    messages: (Sender<Msg>, Receiver<Msg>),
    stop: Arc<AtomicBool>,
    last_heartbeat: Instant,
    last_config_check: Instant,
}

/// The `daemon` command. Returns when SIGTERM or SIGINT arrives.
pub fn run(paths: &Paths, listen: Option<SocketAddr>) -> Result<Outcome, CliError> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, stop.clone())
            .map_err(|e| CliError::Other(format!("cannot handle signals: {e}")))?;
    }
    // The API first: when its address is taken, fail before claiming status.json.
    #[cfg(feature = "api")]
    let _api = match listen {
        Some(addr) => {
            let server = crate::api::spawn(paths, addr).map_err(CliError::Other)?;
            log::info!("API listening on {}", server.addr());
            Some(server)
        }
        None => None,
    };
    #[cfg(not(feature = "api"))]
    if listen.is_some() {
        return Err(CliError::Other(
            "--listen is not available: this binary was built without the `api` feature".into(),
        ));
    }
    let mut d = Daemon::new(paths.clone(), stop);
    d.main_loop();
    Ok(Outcome::Success)
}

impl Daemon {
    fn new(paths: Paths, stop: Arc<AtomicBool>) -> Daemon {
        let previous = status::read(&paths.status()).unwrap_or_else(|e| {
            log::warn!("{e}; starting a new status file");
            None
        });
        let mut status = previous.unwrap_or_default();
        status.pid = Some(std::process::id());
        status.next_run = None;
        let mut d = Daemon {
            paths,
            cfg: None,
            seen: None,
            status,
            next_run: i64::MAX,
            pending: Vec::new(),
            render_due: Some(util::unix_now()),
            render_only: None,
            render_backoff: Backoff::default(),
            render_next: false,
            last_full_start: None,
            run_backoff: Backoff::default(),
            job: None,
            retry: Vec::new(),
            retry_at: None,
            retry_backoff: Backoff::default(),
            messages: mpsc::channel(),
            stop,
            last_heartbeat: Instant::now(),
            last_config_check: Instant::now(),
        };
        d.reload_config();
        if d.cfg.is_none() {
            log::warn!("nothing is collected or swept until the configuration is fixed");
        }
        d.write_status();
        log::info!("daemon started (pid {})", std::process::id());
        d
    }

    /// The first schedule, once a configuration is known: collect now when the last
    /// successful run is older than the interval, or when the database is missing or
    /// empty while sources are configured (a database kept in RAM after a reboot, or
    /// one moved aside), so that the lists come back as soon as possible.
    fn first_schedule(&mut self, cfg: &Config) {
        let now = util::unix_now();
        let interval = cfg.schedule.interval_secs() as i64;
        let last_ok = self
            .status
            .last_success
            .as_deref()
            .and_then(util::parse_iso);
        let has_sources = !cfg.asns.is_empty() || !cfg.fqdns.is_empty();
        let stored = match crate::db::open(&self.paths).and_then(|db| db.counts()) {
            Ok((a, f)) => a + f,
            Err(e) => {
                self.record_error(format!("database: {e}"));
                0
            }
        };
        let empty = has_sources && stored == 0;
        self.next_run = match last_ok {
            // (A last success "in the future", after the clock was set back, is due.)
            Some(t) if t <= now && now - t < interval && !empty => t + interval,
            _ => now,
        };
        self.status.next_run = Some(util::iso(self.next_run));
        log::info!(
            "collecting every {interval} s, next run {}",
            util::iso(self.next_run)
        );
    }

    /// How soon a failure is first retried: `schedule.retry_seconds` (a minute), or
    /// the interval when that is shorter.
    fn retry_after(&self) -> i64 {
        self.cfg.as_ref().map_or(RETRY_AFTER_FAILURE, |c| {
            (c.schedule.retry_seconds as i64).min(c.schedule.interval_secs() as i64)
        })
    }

    fn record_error(&mut self, message: String) {
        log::error!("{message}");
        self.status.last_error = Some(format!("{}: {message}", util::now_iso()));
    }

    fn write_status(&mut self) {
        self.status.heartbeat = Some(util::now_iso());
        if let Err(e) = status::write(&self.paths.status(), &self.status) {
            log::error!("{}: {e}", self.paths.status().display());
        }
        self.last_heartbeat = Instant::now();
    }

    /// Reads `config.json` when it changed (its text is compared, not its time: a
    /// second-granular filesystem or a copied file may keep the time). New sources are
    /// queued for a run of their own; changed outputs are rendered; a broken, missing
    /// or unreadable file keeps the last good configuration (at start a missing file is
    /// the empty configuration, a broken one stops everything until it is fixed).
    fn reload_config(&mut self) {
        let path = self.paths.config();
        let read = match fs::read_to_string(&path) {
            Ok(text) => Ok(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && self.cfg.is_none() => {
                Ok(String::new())
            }
            Err(e) => Err(format!("{}: {e}", path.display())),
        };
        if self.seen.as_ref() == Some(&read) {
            return;
        }
        let first = self.seen.is_none();
        self.seen = Some(read.clone());
        let parsed = read.and_then(|text| {
            config::parse(&text, &path)
                .map_err(|e| e.to_string())
                .map(|l| {
                    for w in &l.warnings {
                        log::warn!("{}: {w}", path.display());
                    }
                    l.config
                })
        });
        let new = match parsed {
            Ok(new) => new,
            Err(e) => {
                let what = if self.cfg.is_some() {
                    "keeping the last good configuration"
                } else {
                    "nothing is collected until it is fixed"
                };
                self.record_error(format!("{e}; {what}"));
                self.write_status();
                return;
            }
        };
        match self.cfg.take() {
            None => {
                if !first {
                    log::info!("{} is valid now", self.paths.config().display());
                }
                self.first_schedule(&new);
            }
            Some(old) => {
                log::info!("{} changed; reloaded", self.paths.config().display());
                for kind in Kind::ALL {
                    for s in new.sources(kind) {
                        let item = (kind, s.clone());
                        if !old.sources(kind).contains(s) && !self.pending.contains(&item) {
                            self.pending.push(item);
                        }
                    }
                }
                self.pending.retain(|(k, s)| new.sources(*k).contains(s));
                if new.schedule.interval_secs() != old.schedule.interval_secs() {
                    // Keep the rhythm: one new interval after the last full run.
                    let last = self.last_full_start.or_else(|| {
                        let t = self.status.last_success.as_deref()?;
                        util::parse_iso(t)
                    });
                    self.next_run = last.map_or(util::unix_now(), |t| {
                        t + new.schedule.interval_secs() as i64
                    });
                    self.status.next_run = Some(util::iso(self.next_run));
                }
                if new.outputs != old.outputs {
                    self.render_only = None;
                    self.render_backoff.reset();
                    self.render_at(util::unix_now());
                }
            }
        }
        self.cfg = Some(new);
    }

    /// Asks for the outputs to be rendered at `t` (or earlier, if already asked).
    fn render_at(&mut self, t: i64) {
        self.render_due = Some(self.render_due.map_or(t, |d| d.min(t)));
    }

    fn start(&mut self, cfg: &Config, what: Collect, force_render: bool) {
        let paths = self.paths.clone();
        let cfg = cfg.clone();
        let force_render = force_render || std::mem::take(&mut self.render_next);
        // What a forced render covers: only the outputs being retried, if that is
        // why; a run that changed the data renders them all.
        let forced_outputs: Vec<config::OutputConfig> = match self.render_only.take() {
            Some(paths) if force_render => cfg
                .outputs
                .iter()
                .filter(|o| paths.contains(&std::path::PathBuf::from(o.name())))
                .cloned()
                .collect(),
            _ => cfg.outputs.clone(),
        };
        if matches!(what, Collect::All) {
            self.last_full_start = Some(util::unix_now());
        }
        let stop = self.stop.clone();
        let phase = Arc::new(AtomicU8::new(0));
        let job_phase = phase.clone();
        let tx = self.messages.0.clone();
        if !matches!(what, Collect::Nothing) {
            self.status.last_run_started = Some(util::now_iso());
            self.write_status();
        }
        let handle = thread::spawn(move || {
            let full = matches!(what, Collect::All);
            let report = match &what {
                Collect::All => Some(run::collect(&paths, &cfg, None, &stop, &job_phase)),
                Collect::Only(only) => {
                    Some(run::collect(&paths, &cfg, Some(only), &stop, &job_phase))
                }
                Collect::Nothing => None,
            };
            // Never render after the run failed as a whole: the database may just have
            // been moved aside, and an empty fresh one must not flush the live sets.
            let outputs = match &report {
                Some(Ok(r)) if r.changed() => Some(&cfg.outputs),
                Some(Ok(_)) | None => force_render.then_some(&forced_outputs),
                Some(Err(_)) => None,
            };
            if let Some(Ok(r)) = &report {
                run::log_report(r);
            }
            let _ = tx.send(Msg::Collected(full, report));
            if let Some(outputs) = outputs.filter(|_| !stop.load(Ordering::SeqCst)) {
                job_phase.store(PHASE_OUTPUTS, Ordering::SeqCst);
                let failures = crate::outputs::render_all(&paths, outputs);
                let done = outputs.iter().map(|o| o.name()).collect();
                let _ = tx.send(Msg::Rendered(done, failures));
            }
        });
        self.job = Some(Job {
            handle,
            phase,
            forced_render: force_render,
            rendered: false,
        });
    }

    fn on_collected(&mut self, full: bool, report: Option<Result<RunReport, RunError>>) {
        let now = util::unix_now();
        match report {
            None | Some(Err(RunError::Stopped)) => {}
            Some(Ok(report)) => {
                self.status.last_run_finished = Some(report.finished.clone());
                if full {
                    self.status.failures.clear();
                    self.run_backoff.reset();
                }
                for s in &report.sources {
                    match &s.outcome {
                        Ok(_) => {
                            self.status.failures.remove(&s.name());
                        }
                        Err(e) => {
                            self.status.failures.insert(s.name(), e.clone());
                        }
                    }
                }
                self.plan_retry(&report, full);
                let failed: Vec<String> = report
                    .failures()
                    .map(|s| {
                        format!(
                            "{}: {}",
                            s.name(),
                            s.outcome.as_ref().err().map_or("", |e| e)
                        )
                    })
                    .collect();
                if failed.is_empty() {
                    if full {
                        self.status.last_success = Some(report.finished.clone());
                    }
                } else {
                    self.record_error(format!(
                        "{} source(s) failed: {}",
                        failed.len(),
                        failed.join("; ")
                    ));
                }
            }
            Some(Err(e)) => {
                self.status.last_run_finished = Some(util::iso(now));
                self.record_error(format!("collection failed: {e}"));
                // Part of the run may be stored: the next collection renders.
                self.render_next = true;
                let delay = self.run_backoff.next(self.retry_after(), self.interval());
                self.next_run = self.next_run.min(now + delay);
            }
        }
        self.status.next_run = Some(util::iso(self.next_run));
        self.write_status();
    }

    /// The collection interval, in seconds.
    fn interval(&self) -> i64 {
        self.cfg
            .as_ref()
            .map_or(RETRY_AFTER_FAILURE, |c| c.schedule.interval_secs() as i64)
    }

    /// Keeps the list of failed sources to try again early: a full run replaces it,
    /// other runs (new sources, retries) update it with their own results. The delay
    /// doubles while failures go on and starts over with each full run.
    fn plan_retry(&mut self, report: &RunReport, full: bool) {
        if full {
            self.retry.clear();
            self.retry_at = None;
        }
        for s in &report.sources {
            let item = (s.kind, s.source.clone());
            let known = self.retry.contains(&item);
            match (&s.outcome, known) {
                (Ok(_), true) => self.retry.retain(|x| x != &item),
                (Err(_), false) => self.retry.push(item),
                _ => {}
            }
        }
        if self.retry.is_empty() {
            self.retry_at = None;
            self.retry_backoff.reset();
            return;
        }
        if self.retry_at.is_some() {
            return; // already planned: keep that time
        }
        let at = util::unix_now() + self.retry_backoff.next(self.retry_after(), self.interval());
        if at < self.next_run {
            log::info!(
                "trying {} failed source(s) again at {}",
                self.retry.len(),
                util::iso(at)
            );
            self.retry_at = Some(at);
        }
    }

    fn on_rendered(&mut self, rendered: Vec<String>, failures: Vec<(String, String)>) {
        if let Some(job) = self.job.as_mut() {
            job.rendered = true;
        }
        // Outputs not rendered this time keep their earlier result.
        self.status
            .output_failures
            .retain(|path, _| !rendered.contains(path));
        self.status.output_failures.extend(failures.iter().cloned());
        let failed: Vec<std::path::PathBuf> = self
            .status
            .output_failures
            .keys()
            .map(std::path::PathBuf::from)
            .collect();
        if failures.is_empty() {
            self.render_backoff.reset();
        } else {
            let all: Vec<String> = failures.iter().map(|(p, e)| format!("{p}: {e}")).collect();
            self.record_error(format!("output failed: {}", all.join("; ")));
            // A firewall that was not ready (at boot, say) gets another chance soon,
            // whether or not the data changes meanwhile; only the failed outputs.
            let delay = self
                .render_backoff
                .next(self.retry_after(), self.interval());
            if self.render_due.is_none() {
                self.render_only = Some(failed);
            }
            self.render_at(util::unix_now() + delay);
        }
        self.write_status();
    }

    fn drain_messages(&mut self) {
        while let Ok(msg) = self.messages.1.try_recv() {
            match msg {
                Msg::Collected(full, report) => self.on_collected(full, report),
                Msg::Rendered(done, failures) => self.on_rendered(done, failures),
            }
        }
    }

    fn main_loop(&mut self) {
        loop {
            if self.stop.load(Ordering::SeqCst) {
                self.shutdown();
                return;
            }
            self.drain_messages();
            if self.job.as_ref().is_some_and(|j| j.handle.is_finished()) {
                self.drain_messages();
                let job = self.job.take().expect("checked above");
                if job.handle.join().is_err() {
                    self.record_error("collection job crashed".into());
                }
                if job.forced_render && !job.rendered {
                    // The run failed before it could render: try again with the next run.
                    let t = util::unix_now() + self.retry_after();
                    self.render_at(t);
                }
            }
            if self.last_config_check.elapsed() >= CONFIG_CHECK {
                self.last_config_check = Instant::now();
                self.reload_config();
            }
            if self.job.is_none() {
                if let Some(cfg) = self.cfg.clone() {
                    self.schedule(&cfg);
                }
            }
            if self.last_heartbeat.elapsed() >= HEARTBEAT {
                self.write_status();
            }
            thread::sleep(TICK);
        }
    }

    /// Starts the job that is due, if any.
    fn schedule(&mut self, cfg: &Config) {
        let now = util::unix_now();
        let render = self.render_due.is_some_and(|t| now >= t);
        if now >= self.next_run {
            self.pending.clear();
            self.retry_at = None;
            self.next_run = now + cfg.schedule.interval_secs() as i64;
            self.status.next_run = Some(util::iso(self.next_run));
            if render {
                self.render_due = None;
            }
            self.start(cfg, Collect::All, render);
        } else if !self.pending.is_empty() {
            let only = std::mem::take(&mut self.pending);
            log::info!(
                "collecting new sources: {}",
                only.iter()
                    .map(|(k, s)| display_source(*k, s))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if render {
                self.render_due = None;
            }
            self.start(cfg, Collect::Only(only), render);
        } else if self.retry_at.is_some_and(|t| now >= t) {
            self.retry_at = None;
            // Only those still configured.
            let only: Vec<(Kind, String)> = std::mem::take(&mut self.retry)
                .into_iter()
                .filter(|(k, s)| cfg.sources(*k).contains(s))
                .collect();
            if !only.is_empty() {
                if render {
                    self.render_due = None;
                }
                self.start(cfg, Collect::Only(only), render);
            }
        } else if render {
            self.render_due = None;
            self.start(cfg, Collect::Nothing, true);
        }
    }

    /// Leaves promptly: waits for a job only while it is committing (or briefly).
    fn shutdown(&mut self) {
        log::info!("stopping");
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
                            "abandoning the collection in progress; nothing of it was stored"
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
        self.drain_messages();
        // No pid: `status` tells a stopped daemon from a running one at once.
        self.status.pid = None;
        self.status.next_run = None;
        self.write_status();
    }
}
