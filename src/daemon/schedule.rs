//! The daemon's decisions, without I/O: what to collect or render and when, what
//! `status.json` says, which configuration is in force.
//!
//! The shell feeds it the time (unix seconds) and events (the configuration file's
//! text, a job's results, a signal) and carries out the [`Action`]s it returns. It
//! reads no clock and touches no file, so every rule of the daemon can be tested on a
//! fake clock (see `tests.rs`). It does log, as the decisions are what the log is for.

use std::path::PathBuf;

use crate::config::{self, Config, OutputConfig};
use crate::source::{self, Kind};
use crate::status::Status;
use crate::util;

use super::backoff::Backoff;

mod config_read;
mod results;

/// A configured source: its kind and normalised name.
pub type Source = (Kind, String);

/// How often `config.json` is checked for changes, in seconds.
pub const CONFIG_CHECK: i64 = 2;
/// How often the heartbeat is written (the contract asks for at least every 60 s).
pub const HEARTBEAT: i64 = 30;
/// The retry delay and interval while no configuration says otherwise.
const RETRY_AFTER_FAILURE: i64 = 60;

/// What reading `config.json` gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigRead {
    /// Its text.
    Text(String),
    /// There is none (the message names the path).
    Missing(String),
    /// It could not be read (the message names the path).
    Failed(String),
}

/// What the shell is asked to do, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Write [`Schedule::status`] to `status.json`.
    WriteStatus,
    /// Collect every source of [`Schedule::config`] (a full run, which also sweeps);
    /// report with [`Schedule::collected`].
    CollectAll,
    /// Collect only these sources; report with [`Schedule::collected`].
    CollectOnly(Vec<Source>),
    /// Render these outputs; report with [`Schedule::rendered`].
    Render(Vec<OutputConfig>),
    /// A collection was stored: note the journal mode and write the snapshot if it is
    /// due (a copy of the database takes a moment, so it is a job like a run); report
    /// with [`Schedule::saved`].
    Snapshot,
}

/// Which outputs a render covers.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outputs {
    All,
    /// Only these outputs, by [`OutputConfig::name`] (retrying failed ones).
    Only(Vec<String>),
}

impl Outputs {
    fn union(self, other: Outputs) -> Outputs {
        match (self, other) {
            (Outputs::Only(mut a), Outputs::Only(b)) => {
                a.extend(b.into_iter().filter(|p| !a.contains(p)).collect::<Vec<_>>());
                Outputs::Only(a)
            }
            _ => Outputs::All,
        }
    }
}

/// The job the shell is running for us.
#[derive(Debug)]
enum Busy {
    /// A collection; `forced` is what is rendered afterwards even if nothing changed.
    Collecting { full: bool, forced: Option<Outputs> },
    /// Rendering the outputs at these paths.
    Rendering(Vec<String>),
    /// Writing the snapshot (if due) after a stored collection.
    Saving,
}

/// The scheduler's state.
#[derive(Debug)]
pub struct Schedule {
    /// `config.json`, for messages.
    config_path: PathBuf,
    /// The last good configuration; `None` until one could be read.
    cfg: Option<Config>,
    /// What the file held at the last check, so that only changes are acted on and
    /// errors are logged once (the text is compared, not the file's time: a copied
    /// file or a second-granular filesystem may keep the time).
    seen: Option<ConfigRead>,
    config_check_at: i64,
    status: Status,
    heartbeat_at: i64,
    /// When the next full run is due (`i64::MAX` until there is a configuration).
    next_run: i64,
    /// When the last full run started: the base of the schedule.
    last_full_start: Option<i64>,
    run_backoff: Backoff,
    /// Sources added to the configuration, collected on their own.
    pending: Vec<Source>,
    /// Sources that failed transiently, tried again at `retry_at`, so that a WAN that
    /// comes up late at boot does not leave the lists empty for a whole interval.
    retry: Vec<Source>,
    retry_at: Option<i64>,
    retry_backoff: Backoff,
    /// Outputs to render even if no data changes: at start, after the outputs'
    /// configuration changed, and to retry failed ones.
    render: Option<(i64, Outputs)>,
    render_backoff: Backoff,
    /// A run failed as a whole after storing part of its work: the next collection
    /// renders every output whatever it changes.
    render_next: bool,
    /// The start-up render goes before the first collection: the store holds values
    /// (a snapshot restored after a reboot), so the sets are loaded within seconds
    /// even when the upstream hangs for minutes.
    render_first: bool,
    /// A collection was stored since the last [`Action::Snapshot`].
    save: bool,
    busy: Option<Busy>,
    stopped: bool,
}

impl Schedule {
    /// A daemon starting at `now` with the `status.json` it found (or none) and its
    /// process id. The outputs are rendered once at start.
    pub fn new(now: i64, previous: Option<Status>, pid: u32, config_path: PathBuf) -> Schedule {
        let mut status = previous.unwrap_or_default();
        status.pid = Some(pid);
        status.next_run = None;
        Schedule {
            config_path,
            cfg: None,
            seen: None,
            config_check_at: now,
            status,
            heartbeat_at: now,
            next_run: i64::MAX,
            last_full_start: None,
            run_backoff: Backoff::default(),
            pending: Vec::new(),
            retry: Vec::new(),
            retry_at: None,
            retry_backoff: Backoff::default(),
            render: Some((now, Outputs::All)),
            render_backoff: Backoff::default(),
            render_next: false,
            render_first: false,
            save: false,
            busy: None,
            stopped: false,
        }
    }

    /// What `status.json` is to say.
    pub fn status(&self) -> &Status {
        &self.status
    }

    /// The [`Action::Snapshot`] job ended at `now`: the database uses `journal_mode`,
    /// and the snapshot was written at a time (`Some(Ok)`), failed (`Some(Err)`: the
    /// changes wait for the next one) or was not due (`None`); `unsaved` tells whether
    /// changes wait for it.
    pub fn saved(
        &mut self,
        now: i64,
        journal_mode: &str,
        snapshot: Option<Result<i64, String>>,
        unsaved: bool,
    ) -> Vec<Action> {
        if matches!(self.busy, Some(Busy::Saving)) {
            self.busy = None;
        }
        self.storage_done(now, journal_mode, snapshot, unsaved);
        vec![self.write(now)]
    }

    /// Records the journal mode and the snapshot written at stop (see [`Self::saved`]).
    pub fn storage_done(
        &mut self,
        now: i64,
        journal_mode: &str,
        snapshot: Option<Result<i64, String>>,
        unsaved: bool,
    ) {
        self.status.journal_mode = Some(journal_mode.to_string());
        match snapshot {
            Some(Ok(t)) => self.status.last_snapshot = Some(util::iso(t)),
            Some(Err(e)) => self.record_error(now, format!("snapshot: {e}")),
            None => {}
        }
        self.status.snapshot_pending = unsaved;
    }

    /// The snapshot file was last written at `time` (by this daemon or by the
    /// `snapshot` command: status.json tells the file's time, whoever wrote it).
    pub fn snapshot_file_written(&mut self, time: i64) {
        self.status.last_snapshot = Some(util::iso(time));
    }

    /// The configuration in force, once one could be read.
    pub fn config(&self) -> Option<&Config> {
        self.cfg.as_ref()
    }

    /// Whether `config.json` is to be read now (and given to [`Self::config_read`]).
    pub fn config_check_due(&self, now: i64) -> bool {
        !self.stopped && now >= self.config_check_at
    }

    /// The earliest time something is due without an event: the shell may sleep
    /// until then.
    pub fn wake_at(&self) -> i64 {
        let mut t = self.heartbeat_at.min(self.config_check_at);
        if self.busy.is_none() && self.cfg.is_some() {
            if !self.pending.is_empty() || self.save {
                return i64::MIN;
            }
            t = t.min(self.next_run);
            t = t.min(
                self.retry_at
                    .filter(|_| !self.retry.is_empty())
                    .unwrap_or(i64::MAX),
            );
            t = t.min(self.render.as_ref().map_or(i64::MAX, |r| r.0));
        }
        t
    }

    /// Another process changed the stored values (a purge): every output is rendered
    /// again as soon as no job runs.
    pub fn stored_changed(&mut self, now: i64) {
        if self.cfg.is_some() && !self.stopped {
            self.render_at(now, Outputs::All);
        }
    }

    /// SIGUSR1: collect every source now (the WAN just came up), or as soon as the
    /// job in progress ends. During a collection of every source, nothing more: a WAN
    /// down and up signals once each time it comes up (and a trigger may fire twice),
    /// and what that collection fails to fetch is retried early anyway.
    pub fn collect_now(&mut self, now: i64) {
        if self.cfg.is_none() {
            log::warn!("collection asked for, but there is no valid configuration");
            return;
        }
        if matches!(self.busy, Some(Busy::Collecting { full: true, .. })) {
            log::info!("collection asked for: already collecting every source");
            return;
        }
        log::info!("collection asked for: collecting every source now");
        self.next_run = self.next_run.min(now);
    }

    /// Time passes: starts the job that is due, if any, and keeps the heartbeat.
    pub fn tick(&mut self, now: i64) -> Vec<Action> {
        let mut actions = Vec::new();
        if self.stopped {
            return actions;
        }
        if self.busy.is_none() && self.cfg.is_some() {
            self.schedule(now, &mut actions);
        }
        if now >= self.heartbeat_at && !actions.iter().any(|a| matches!(a, Action::WriteStatus)) {
            actions.push(self.write(now));
        }
        actions
    }

    fn schedule(&mut self, now: i64, actions: &mut Vec<Action>) {
        if std::mem::take(&mut self.save) {
            // Before the next run, so that a snapshot due is never put off by runs.
            self.busy = Some(Busy::Saving);
            actions.push(Action::Snapshot);
            return;
        }
        let interval = self.interval();
        let render_due = self.render.as_ref().is_some_and(|r| now >= r.0);
        let mut forced = if render_due { self.render.take() } else { None }.map(|r| r.1);
        if std::mem::take(&mut self.render_first) {
            if let Some(which) = forced.take() {
                // Said only when there is something to load.
                if self.cfg.as_ref().is_some_and(|c| !c.outputs.is_empty()) {
                    log::info!("loading the outputs from the stored data before collecting");
                }
                self.render_now(which, actions);
                if self.busy.is_some() {
                    return; // the collection starts when the render is done
                }
            }
        }
        if now >= self.next_run {
            self.pending.clear();
            self.retry_at = None;
            self.next_run = now + interval;
            self.last_full_start = Some(now);
            self.start(now, None, forced, actions);
        } else if !self.pending.is_empty() {
            let only = std::mem::take(&mut self.pending);
            log::info!("collecting new sources: {}", names(&only));
            self.start(now, Some(only), forced, actions);
        } else if self.retry_at.is_some_and(|t| now >= t) && !self.retry.is_empty() {
            self.retry_at = None;
            let only = self.retry.clone();
            log::info!("trying again: {}", names(&only));
            self.start(now, Some(only), forced, actions);
        } else if let Some(which) = forced {
            self.render_now(which, actions);
        }
    }

    fn start(
        &mut self,
        now: i64,
        only: Option<Vec<Source>>,
        forced: Option<Outputs>,
        actions: &mut Vec<Action>,
    ) {
        let forced = match (forced, std::mem::take(&mut self.render_next)) {
            (f, true) => Some(f.map_or(Outputs::All, |f| f.union(Outputs::All))),
            (f, false) => f,
        };
        self.busy = Some(Busy::Collecting {
            full: only.is_none(),
            forced,
        });
        self.status.last_run_started = Some(util::iso(now));
        actions.push(self.write(now));
        actions.push(only.map_or(Action::CollectAll, Action::CollectOnly));
    }

    /// Asks the shell to render `which` outputs (nothing when none is configured).
    fn render_now(&mut self, which: Outputs, actions: &mut Vec<Action>) {
        let Some(cfg) = &self.cfg else { return };
        let outputs: Vec<OutputConfig> = match which {
            Outputs::All => cfg.outputs.clone(),
            Outputs::Only(paths) => cfg
                .outputs
                .iter()
                .filter(|o| paths.contains(&o.name()))
                .cloned()
                .collect(),
        };
        if outputs.is_empty() {
            return;
        }
        let paths = outputs.iter().map(OutputConfig::name);
        self.busy = Some(Busy::Rendering(paths.collect()));
        actions.push(Action::Render(outputs));
    }

    /// Asks for `which` outputs to be rendered at `t`, with what is asked already.
    fn render_at(&mut self, t: i64, which: Outputs) {
        self.render = Some(match self.render.take() {
            Some((d, w)) => (d.min(t), w.union(which)),
            None => (t, which),
        });
    }

    /// SIGTERM/SIGINT: nothing new starts; the status says the daemon is gone.
    /// Results of a job still arriving are recorded.
    pub fn stop(&mut self, now: i64) -> Vec<Action> {
        self.stopped = true;
        self.status.pid = None;
        self.status.next_run = None;
        vec![self.write(now)]
    }

    /// How soon a failure is first retried: `schedule.retry_seconds`, or the interval
    /// when that is shorter.
    fn retry_after(&self) -> i64 {
        self.cfg.as_ref().map_or(RETRY_AFTER_FAILURE, |c| {
            (c.schedule.retry_seconds as i64).min(c.schedule.interval_secs() as i64)
        })
    }

    /// The collection interval, in seconds.
    fn interval(&self) -> i64 {
        self.cfg
            .as_ref()
            .map_or(RETRY_AFTER_FAILURE, |c| c.schedule.interval_secs() as i64)
    }

    fn record_error(&mut self, now: i64, message: String) {
        log::error!("{message}");
        self.status.last_error = Some(format!("{}: {message}", util::iso(now)));
    }

    /// Stamps the heartbeat and asks for the status to be written.
    fn write(&mut self, now: i64) -> Action {
        if !self.stopped {
            self.status.next_run = Some(util::iso(self.next_run)).filter(|_| self.cfg.is_some());
        }
        self.status.heartbeat = Some(util::iso(now));
        self.heartbeat_at = now + HEARTBEAT;
        Action::WriteStatus
    }
}

/// Sources for a log line: `AS62041, example.com`.
fn names(sources: &[Source]) -> String {
    let shown: Vec<String> = sources
        .iter()
        .map(|(k, s)| source::display(*k, s))
        .collect();
    shown.join(", ")
}

#[cfg(test)]
mod tests;
