//! The daemon: collect on schedule, follow `config.json`, keep `status.json` fresh,
//! render the outputs, optionally serve the API, and survive its own errors.
//!
//! The main thread only keeps time: it watches the configuration, writes the
//! heartbeat and starts jobs (a collection run, then the outputs) on a worker thread,
//! so that a long run never delays the heartbeat or a signal. While a job fetches,
//! a stop request ends the daemon at once (nothing is written yet); while it writes,
//! the daemon waits for the commit.

use std::collections::BTreeMap;
use std::fs;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime};

use crate::cli::{display_source, CliError, Outcome};
use crate::collect::run::{self, RunError, RunReport, PHASE_WRITING};
use crate::config::{self, Config, Kind, Paths};
use crate::status::{self, Status};
use crate::util;

/// How often the main loop wakes up.
const TICK: Duration = Duration::from_millis(200);
/// How often `config.json` is checked for changes.
const CONFIG_CHECK: Duration = Duration::from_secs(2);
/// How often the heartbeat is written (the contract asks for at least every 60 s).
const HEARTBEAT: Duration = Duration::from_secs(30);
/// After a run that failed as a whole (storage), the next try comes this soon.
const RETRY_AFTER_FAILURE: i64 = 60;
/// How long a stop waits for a job that is still fetching (nothing to lose).
const STOP_GRACE: Duration = Duration::from_secs(3);

/// What a job does.
#[derive(Debug, Clone)]
enum JobKind {
    /// Every source, then the outputs when anything changed (or `render` is set).
    Full { render: bool },
    /// Only newly added sources.
    Partial(Vec<(Kind, String)>),
    /// Only the outputs (at start when no run is due).
    Render,
}

struct JobResult {
    kind: JobKind,
    report: Option<Result<RunReport, RunError>>,
    outputs: Option<Vec<(String, String)>>,
}

struct Job {
    handle: JoinHandle<JobResult>,
    phase: Arc<AtomicU8>,
}

/// The configuration file as last seen: its metadata (cheap to compare) and text.
#[derive(Default, PartialEq)]
struct Stamp {
    meta: Option<(SystemTime, u64)>,
    text: Option<String>,
}

fn stamp_meta(paths: &Paths) -> Option<(SystemTime, u64)> {
    let m = fs::metadata(paths.config()).ok()?;
    Some((m.modified().ok()?, m.len()))
}

struct Daemon {
    paths: Paths,
    cfg: Config,
    stamp: Stamp,
    status: Status,
    next_run: i64,
    pending: Vec<(Kind, String)>,
    render_at_start: bool,
    job: Option<Job>,
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
    let mut d = Daemon::new(paths.clone(), stop);
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
            cfg: Config::default(),
            stamp: Stamp::default(),
            status,
            next_run: 0,
            pending: Vec::new(),
            render_at_start: true,
            job: None,
            stop,
            last_heartbeat: Instant::now(),
            last_config_check: Instant::now(),
        };
        // A broken configuration at start: run on the empty one (nothing is collected
        // or swept) until the file is fixed, with the error in status.json.
        d.reload_config(true);
        // Catch up: collect now when the last successful run is older than the interval.
        let interval = d.cfg.schedule.interval_secs() as i64;
        let last_ok = d.status.last_success.as_deref().and_then(util::parse_iso);
        d.next_run = match last_ok {
            Some(t) if util::unix_now() - t < interval => t + interval,
            _ => util::unix_now(),
        };
        d.status.next_run = Some(util::iso(d.next_run));
        d.write_status();
        log::info!(
            "daemon started (pid {}), collecting every {} s, next run {}",
            std::process::id(),
            interval,
            util::iso(d.next_run)
        );
        d
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

    /// Reads `config.json` when it changed. New sources are queued for a run of their
    /// own; a broken file keeps the last good configuration.
    fn reload_config(&mut self, first: bool) {
        let meta = stamp_meta(&self.paths);
        if !first && meta == self.stamp.meta {
            return;
        }
        let text = fs::read_to_string(self.paths.config()).ok();
        self.stamp.meta = meta;
        if !first && text == self.stamp.text {
            return;
        }
        self.stamp.text = text;
        match config::load_logged(&self.paths.config()) {
            Ok(new) => {
                if !first {
                    log::info!("{} changed; reloaded", self.paths.config().display());
                    for kind in Kind::ALL {
                        for s in new.sources(kind) {
                            if !self.cfg.sources(kind).contains(s)
                                && !self.pending.contains(&(kind, s.clone()))
                            {
                                self.pending.push((kind, s.clone()));
                            }
                        }
                    }
                    self.pending.retain(|(k, s)| new.sources(*k).contains(s));
                    if new.schedule != self.cfg.schedule {
                        // Keep the rhythm: the next run is one new interval after the last start.
                        let last = self
                            .status
                            .last_run_started
                            .as_deref()
                            .and_then(util::parse_iso);
                        self.next_run = last.map_or(util::unix_now(), |t| {
                            t + new.schedule.interval_secs() as i64
                        });
                        self.status.next_run = Some(util::iso(self.next_run));
                    }
                }
                self.cfg = new;
            }
            Err(e) => {
                let what = if first {
                    "running with no sources until it is fixed"
                } else {
                    "keeping the last good configuration"
                };
                self.record_error(format!("{e}; {what}"));
                self.write_status();
            }
        }
    }

    fn start(&mut self, kind: JobKind) {
        let paths = self.paths.clone();
        let cfg = self.cfg.clone();
        let stop = self.stop.clone();
        let phase = Arc::new(AtomicU8::new(0));
        let job_phase = phase.clone();
        if !matches!(kind, JobKind::Render) {
            self.status.last_run_started = Some(util::now_iso());
            self.write_status();
        }
        let handle = thread::spawn(move || {
            let (report, render) = match &kind {
                JobKind::Full { render } => (
                    Some(run::collect(&paths, &cfg, None, &stop, &job_phase)),
                    *render,
                ),
                JobKind::Partial(only) => (
                    Some(run::collect(&paths, &cfg, Some(only), &stop, &job_phase)),
                    false,
                ),
                JobKind::Render => (None, true),
            };
            let changed = matches!(&report, Some(Ok(r)) if r.changed());
            let outputs =
                (render || changed).then(|| crate::outputs::render_all(&paths, &cfg.outputs));
            JobResult {
                kind,
                report,
                outputs,
            }
        });
        self.job = Some(Job { handle, phase });
    }

    fn finish(&mut self, result: JobResult) {
        let now = util::unix_now();
        match result.report {
            None => {}
            Some(Ok(report)) => {
                run::log_report(&report);
                self.status.last_run_finished = Some(report.finished.clone());
                let full = matches!(result.kind, JobKind::Full { .. });
                if full {
                    self.status.failures.clear();
                }
                for s in &report.sources {
                    let name = display_source(s.kind, &s.source);
                    match &s.outcome {
                        Ok(_) => {
                            self.status.failures.remove(&name);
                        }
                        Err(e) => {
                            self.status.failures.insert(name, e.clone());
                        }
                    }
                }
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
            Some(Err(RunError::Stopped)) => {}
            Some(Err(e)) => {
                self.status.last_run_finished = Some(util::iso(now));
                self.record_error(format!("collection failed: {e}"));
                self.next_run = self.next_run.min(now + RETRY_AFTER_FAILURE);
            }
        }
        if let Some(failures) = result.outputs {
            self.status.output_failures = failures.iter().cloned().collect::<BTreeMap<_, _>>();
            if !failures.is_empty() {
                let all: Vec<String> = failures.iter().map(|(p, e)| format!("{p}: {e}")).collect();
                self.record_error(format!("output failed: {}", all.join("; ")));
            }
        }
        self.status.next_run = Some(util::iso(self.next_run));
        self.write_status();
    }

    fn main_loop(&mut self) {
        loop {
            if self.stop.load(Ordering::SeqCst) {
                self.shutdown();
                return;
            }
            if self.job.as_ref().is_some_and(|j| j.handle.is_finished()) {
                let job = self.job.take().expect("checked above");
                match job.handle.join() {
                    Ok(result) => self.finish(result),
                    Err(_) => self.record_error("collection job crashed".into()),
                }
            }
            if self.last_config_check.elapsed() >= CONFIG_CHECK {
                self.last_config_check = Instant::now();
                self.reload_config(false);
            }
            if self.job.is_none() {
                let now = util::unix_now();
                if now >= self.next_run {
                    self.pending.clear();
                    self.next_run = now + self.cfg.schedule.interval_secs() as i64;
                    self.status.next_run = Some(util::iso(self.next_run));
                    let render = std::mem::take(&mut self.render_at_start);
                    self.start(JobKind::Full { render });
                } else if !self.pending.is_empty() {
                    let only = std::mem::take(&mut self.pending);
                    log::info!(
                        "collecting new sources: {}",
                        only.iter()
                            .map(|(k, s)| display_source(*k, s))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                    self.start(JobKind::Partial(only));
                } else if std::mem::take(&mut self.render_at_start) {
                    self.start(JobKind::Render);
                }
            }
            if self.last_heartbeat.elapsed() >= HEARTBEAT {
                self.write_status();
            }
            thread::sleep(TICK);
        }
    }

    /// Leaves promptly: waits for a job only while it is committing (or briefly).
    fn shutdown(&mut self) {
        log::info!("stopping");
        if let Some(job) = self.job.take() {
            let start = Instant::now();
            loop {
                if job.handle.is_finished() {
                    if let Ok(result) = job.handle.join() {
                        self.finish(result);
                    }
                    break;
                }
                let writing = job.phase.load(Ordering::SeqCst) == PHASE_WRITING;
                if !writing && start.elapsed() >= STOP_GRACE {
                    log::info!("abandoning the collection in progress; nothing of it was stored");
                    break;
                }
                thread::sleep(Duration::from_millis(20));
            }
        }
        self.status.next_run = None;
        self.write_status();
    }
}
