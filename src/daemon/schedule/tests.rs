//! The rules of docs/cli.md, "The daemon", one test each, on a fake clock: the
//! tests play the shell, feeding [`Schedule`] the time and the jobs' results.

use std::path::PathBuf;

mod config_reload;
mod never_collected;
mod signals_and_status;
mod start_render;

use super::*;
use crate::collect::run::{RunError, RunReport, SourceReport};
use crate::collect::SourceError;
use crate::db::{MergeStats, StoreError};
use crate::status::Status;

/// The fake clock's start.
const T0: i64 = 1_800_000_000;

/// `asns` (digits) and `fqdns` (names) from `sources`, with `extra` JSON members.
fn config_json(sources: &[&str], extra: &str) -> String {
    let (asns, fqdns): (Vec<&str>, Vec<&str>) = sources
        .iter()
        .partition(|s| s.bytes().all(|b| b.is_ascii_digit()));
    let list = |v: Vec<&str>| {
        let q: Vec<String> = v.iter().map(|s| format!("\"{s}\"")).collect();
        q.join(",")
    };
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!(", {extra}")
    };
    format!(
        r#"{{"asns": [{}], "fqdns": [{}]{extra}}}"#,
        list(asns),
        list(fqdns)
    )
}

const HOURLY: &str = r#""schedule": {"interval_seconds": 3600, "retry_seconds": 60}"#;

fn source(name: &str) -> Source {
    let kind = if name.bytes().all(|b| b.is_ascii_digit()) {
        Kind::Asn
    } else {
        Kind::Fqdn
    };
    (kind, name.to_string())
}

fn ok(name: &str, added: usize) -> SourceReport {
    let (kind, source) = source(name);
    SourceReport {
        upstream: None,
        fetch: None,
        kind,
        source,
        fetched: added,
        skipped: 0,
        outcome: Ok(MergeStats {
            added,
            ..MergeStats::default()
        }),
    }
}

fn failed(name: &str, e: SourceError) -> SourceReport {
    let (kind, source) = source(name);
    SourceReport {
        upstream: None,
        fetch: None,
        kind,
        source,
        fetched: 0,
        skipped: 0,
        outcome: Err(e),
    }
}

fn down() -> SourceError {
    SourceError::Http { status: 503 }
}

fn report(sources: Vec<SourceReport>) -> Result<RunReport, RunError> {
    Ok(RunReport {
        started: "x".into(),
        finished: util::iso(T0),
        sources,
        swept: 0,
    })
}

fn storage_failed() -> Result<RunReport, RunError> {
    Err(RunError::Store(StoreError::Other("disk full".into())))
}

/// A daemon on a fake clock, and the shell's side of the conversation.
struct Sim {
    s: Schedule,
    now: i64,
    /// How many values the database holds, for the first schedule: when some, every
    /// configured source holds some, but those in `uncollected`.
    stored: u64,
    uncollected: Vec<Source>,
    /// How many snapshot jobs ran (the sim finishes them at once, none due).
    saves: usize,
}

impl Sim {
    fn new(status: Option<Status>) -> Sim {
        Sim {
            s: Schedule::new(T0, status, 42, PathBuf::from("/data/config.json")),
            now: T0,
            stored: 10,
            uncollected: Vec::new(),
            saves: 0,
        }
    }

    /// A daemon started with `config` and no `status.json`.
    fn start(config: &str) -> Sim {
        let mut sim = Sim::new(None);
        sim.config(config);
        sim
    }

    /// A daemon started with `config`, no `status.json` and an empty store (a fresh
    /// database, or one moved aside).
    fn start_empty(config: &str) -> Sim {
        let mut sim = Sim::new(None);
        sim.stored = 0;
        sim.config(config);
        sim
    }

    /// The start-up render from the stored values, if any outputs are configured,
    /// done; then the first tick's jobs.
    fn past_start_render(&mut self) -> Vec<Action> {
        let jobs = self.tick();
        if let [Action::Render(_)] = jobs[..] {
            assert_eq!(self.rendered(&[]), []);
            return self.tick();
        }
        jobs
    }

    fn read(&mut self, read: ConfigRead) -> Vec<Action> {
        let mut held = Vec::new();
        if let (ConfigRead::Text(t), true) = (&read, self.stored > 0) {
            // A source no longer configured holds values too.
            held.push((Kind::Asn, "64511".to_string()));
            if let Ok(l) = config::parse(t, std::path::Path::new("c.json")) {
                for kind in Kind::ALL {
                    let all = l.config.sources(kind).iter().map(|s| (kind, s.clone()));
                    held.extend(all.filter(|s| !self.uncollected.contains(s)));
                }
            }
        }
        self.s.config_read(self.now, read, &mut || Ok(held.clone()))
    }

    fn config(&mut self, text: &str) -> Vec<Action> {
        self.read(ConfigRead::Text(text.into()))
    }

    fn at(&mut self, t: i64) -> &mut Sim {
        self.now = T0 + t;
        self
    }

    /// The jobs started at the current time (status writes left out). A snapshot job
    /// is finished at once (none due), and counted.
    fn tick(&mut self) -> Vec<Action> {
        let jobs = jobs(self.s.tick(self.now));
        if jobs != [Action::Snapshot] {
            return jobs;
        }
        self.saves += 1;
        self.s.saved(self.now, "wal", None, false);
        self.tick()
    }

    fn collected(&mut self, result: Result<RunReport, RunError>) -> Vec<Action> {
        jobs(self.s.collected(self.now, result))
    }

    fn rendered(&mut self, failures: &[&str]) -> Vec<Action> {
        let f = failures.iter().map(|p| (p.to_string(), "exit 1".into()));
        jobs(self.s.rendered(self.now, f.collect()))
    }

    /// Ticks every second from now to `t`; the first job started, and when.
    fn next_job(&mut self, t: i64) -> Option<(i64, Vec<Action>)> {
        while self.now < T0 + t {
            self.now += 1;
            let jobs = self.tick();
            if !jobs.is_empty() {
                return Some((self.now - T0, jobs));
            }
        }
        None
    }

    /// Start-up done: the first full run collected `sources` and changed nothing, and
    /// the outputs (if any) rendered fine.
    fn settle(&mut self, sources: Vec<SourceReport>) {
        assert_eq!(self.past_start_render(), [Action::CollectAll]);
        if let [Action::Render(_)] = self.collected(report(sources))[..] {
            self.rendered(&[]);
        }
    }

    fn status(&self) -> &Status {
        self.s.status()
    }
}

fn jobs(actions: Vec<Action>) -> Vec<Action> {
    actions
        .into_iter()
        .filter(|a| *a != Action::WriteStatus)
        .collect()
}

fn only(names: &[&str]) -> Vec<Action> {
    vec![Action::CollectOnly(
        names.iter().map(|n| source(n)).collect(),
    )]
}

fn rendered_paths(actions: &[Action]) -> Vec<String> {
    match actions {
        [Action::Render(outputs)] => outputs.iter().map(OutputConfig::name).collect(),
        other => panic!("not a render: {other:?}"),
    }
}

fn last_success(ago: i64) -> Option<Status> {
    Some(Status {
        last_success: Some(util::iso(T0 - ago)),
        ..Status::default()
    })
}

const TWO_OUTPUTS: &str = r#""outputs": [{"path": "/out/a.txt"}, {"path": "/out/b.txt"}]"#;

fn hourly_with_outputs() -> String {
    format!("{HOURLY}, {TWO_OUTPUTS}")
}

#[test]
fn catch_up_at_start_when_last_success_is_older_than_the_interval() {
    let mut sim = Sim::new(last_success(7200));
    sim.config(&config_json(&["62041"], HOURLY));
    assert_eq!(sim.tick(), [Action::CollectAll]);
    assert_eq!(sim.status().last_run_started, Some(util::iso(T0)));
    assert_eq!(sim.status().pid, Some(42));
}

#[test]
fn no_catch_up_at_start_when_last_success_is_recent() {
    let mut sim = Sim::new(last_success(600));
    sim.config(&config_json(&["62041"], &hourly_with_outputs()));
    // The outputs are rendered once at start, nothing is collected.
    let first = sim.tick();
    assert_eq!(rendered_paths(&first), ["/out/a.txt", "/out/b.txt"]);
    sim.rendered(&[]);
    assert_eq!(sim.status().next_run, Some(util::iso(T0 + 3000)));
    assert_eq!(sim.next_job(3000), Some((3000, vec![Action::CollectAll])));
}

#[test]
fn catch_up_at_start_when_the_database_is_empty() {
    let mut sim = Sim::new(last_success(60));
    sim.stored = 0;
    sim.config(&config_json(&["62041"], HOURLY));
    assert_eq!(sim.tick(), [Action::CollectAll]);
}

#[test]
fn collects_every_interval_after() {
    let mut sim = Sim::start(&config_json(&["62041"], HOURLY));
    sim.settle(vec![ok("62041", 0)]);
    assert_eq!(sim.next_job(3600), Some((3600, vec![Action::CollectAll])));
    sim.collected(report(vec![ok("62041", 0)]));
    assert_eq!(sim.next_job(7200), Some((7200, vec![Action::CollectAll])));
    assert_eq!(sim.status().next_run, Some(util::iso(T0 + 10_800)));
}

#[test]
fn new_sources_collected_on_their_own_within_seconds() {
    let mut sim = Sim::start(&config_json(&["62041"], HOURLY));
    sim.settle(vec![ok("62041", 0)]);
    sim.at(100)
        .config(&config_json(&["62041", "64496", "example.com"], HOURLY));
    assert_eq!(sim.tick(), only(&["64496", "example.com"]));
    sim.collected(report(vec![ok("64496", 3), ok("example.com", 1)]));
    // The full-run rhythm is untouched.
    assert_eq!(sim.next_job(3600), Some((3600, vec![Action::CollectAll])));
}

#[test]
fn config_checked_every_2_seconds() {
    let sim = Sim::start(&config_json(&["62041"], HOURLY));
    assert!(!sim.s.config_check_due(T0 + 1));
    assert!(sim.s.config_check_due(T0 + CONFIG_CHECK));
}

#[test]
fn removed_sources_no_longer_fetched() {
    let mut sim = Sim::start(&config_json(&["62041", "64500"], HOURLY));
    sim.tick();
    sim.collected(report(vec![ok("62041", 0), failed("64500", down())]));
    // 64500 was to be retried, 64496 is new: both removed before their runs.
    sim.at(10).config(&config_json(&["62041", "64496"], HOURLY));
    sim.config(&config_json(&["62041"], HOURLY));
    assert_eq!(sim.next_job(3599), None);
}

#[test]
fn failed_sources_retried_after_retry_seconds_doubling_up_to_the_interval() {
    let mut sim = Sim::start(&config_json(&["62041", "64500"], HOURLY));
    sim.tick();
    sim.collected(report(vec![ok("62041", 0), failed("64500", down())]));
    let mut tries = Vec::new();
    while let Some((t, jobs)) = sim.next_job(3600) {
        if jobs == [Action::CollectAll] {
            tries.push(t);
            break;
        }
        assert_eq!(jobs, only(&["64500"]));
        tries.push(t);
        sim.collected(report(vec![failed(
            "64500",
            SourceError::Timeout { seconds: 30 },
        )]));
    }
    // 60, 120, 240, ... after each failure; the next delay would pass the full run.
    assert_eq!(tries, [60, 180, 420, 900, 1860, 3600]);
}

#[test]
fn permanent_failures_wait_for_the_next_full_run() {
    let mut sim = Sim::start(&config_json(
        &["62041", "64500", "64503", "64506", "nx.example"],
        HOURLY,
    ));
    sim.tick();
    sim.collected(report(vec![
        ok("62041", 0),
        failed("64500", down()),
        failed("64503", SourceError::Http { status: 400 }),
        failed("64506", SourceError::BadBody("no data.prefixes".into())),
        failed("nx.example", SourceError::NxDomain),
    ]));
    // Only the transient one is retried early...
    assert_eq!(sim.next_job(3600), Some((60, only(&["64500"]))));
    sim.collected(report(vec![ok("64500", 1)]));
    // ...the others wait for the full run, and are recorded meanwhile.
    assert_eq!(sim.next_job(3600), Some((3600, vec![Action::CollectAll])));
    let failures: Vec<&String> = sim.status().failures.keys().collect();
    assert_eq!(failures, ["AS64503", "AS64506", "nx.example"]);
}

#[test]
fn a_source_that_turns_permanent_leaves_the_retry_list() {
    let mut sim = Sim::start(&config_json(&["64500"], HOURLY));
    sim.tick();
    sim.collected(report(vec![failed("64500", down())]));
    assert_eq!(sim.next_job(3600), Some((60, only(&["64500"]))));
    sim.collected(report(vec![failed(
        "64500",
        SourceError::Http { status: 404 },
    )]));
    assert_eq!(sim.next_job(3600), Some((3600, vec![Action::CollectAll])));
}

#[test]
fn retry_list_kept_across_new_source_runs() {
    let mut sim = Sim::start(&config_json(&["62041", "64500"], HOURLY));
    sim.tick();
    sim.collected(report(vec![ok("62041", 0), failed("64500", down())]));
    sim.at(10)
        .config(&config_json(&["62041", "64500", "64496"], HOURLY));
    assert_eq!(sim.tick(), only(&["64496"]));
    sim.collected(report(vec![ok("64496", 2)]));
    assert_eq!(sim.next_job(3600), Some((60, only(&["64500"]))));
}

#[test]
fn retry_backoff_restarted_with_each_full_run() {
    let every_10_min = r#""schedule": {"interval_seconds": 600, "retry_seconds": 60}"#;
    let mut sim = Sim::start(&config_json(&["64500"], every_10_min));
    sim.tick();
    sim.collected(report(vec![failed("64500", down())]));
    for expected in [60, 180, 420] {
        assert_eq!(sim.next_job(600), Some((expected, only(&["64500"]))));
        sim.collected(report(vec![failed("64500", down())]));
    }
    assert_eq!(sim.next_job(600), Some((600, vec![Action::CollectAll])));
    sim.collected(report(vec![failed("64500", down())]));
    // 60 s again, not 480.
    assert_eq!(sim.next_job(1200), Some((660, only(&["64500"]))));
}

#[test]
fn whole_run_failures_back_off() {
    let mut sim = Sim::start(&config_json(&["62041"], HOURLY));
    sim.tick();
    sim.collected(storage_failed());
    assert!(sim
        .status()
        .last_error
        .as_ref()
        .unwrap()
        .contains("disk full"));
    let mut tries = Vec::new();
    for _ in 0..3 {
        let (t, jobs) = sim.next_job(3600).unwrap();
        assert_eq!(jobs, [Action::CollectAll]);
        tries.push(t);
        sim.collected(storage_failed());
    }
    assert_eq!(tries, [60, 180, 420]);
    // A run that works restarts the backoff and the rhythm.
    let (t, _) = sim.next_job(3600).unwrap();
    sim.collected(report(vec![ok("62041", 0)]));
    assert_eq!(
        sim.next_job(t + 3600),
        Some((t + 3600, vec![Action::CollectAll]))
    );
    sim.collected(storage_failed());
    assert_eq!(
        sim.next_job(t + 7200),
        Some((t + 3660, vec![Action::CollectAll]))
    );
}

#[test]
fn outputs_rendered_at_start_and_after_changes() {
    let mut sim = Sim::start(&config_json(&["62041"], &hourly_with_outputs()));
    // At start, from what is stored, before the first collection: a reboot with a
    // hanging upstream has its sets at once.
    assert_eq!(rendered_paths(&sim.tick()), ["/out/a.txt", "/out/b.txt"]);
    assert_eq!(sim.tick(), [], "the collection waits for the render");
    sim.rendered(&[]);
    assert_eq!(sim.tick(), [Action::CollectAll]);
    // A full run that changes nothing renders nothing...
    assert_eq!(sim.collected(report(vec![ok("62041", 0)])), []);
    assert_eq!(sim.next_job(3600), Some((3600, vec![Action::CollectAll])));
    assert_eq!(sim.collected(report(vec![ok("62041", 0)])), []);
    // ...one that does renders everything, as does a swept source.
    assert_eq!(sim.next_job(7200), Some((7200, vec![Action::CollectAll])));
    let r = sim.collected(report(vec![ok("62041", 5)]));
    assert_eq!(rendered_paths(&r).len(), 2);
    sim.rendered(&[]);
    assert_eq!(
        sim.next_job(10_800),
        Some((10_800, vec![Action::CollectAll]))
    );
    let mut swept = report(vec![]).unwrap();
    swept.swept = 3;
    assert_eq!(rendered_paths(&sim.collected(Ok(swept))).len(), 2);
}

#[test]
fn outputs_rendered_when_the_outputs_config_changes() {
    let mut sim = Sim::start(&config_json(&["62041"], &hourly_with_outputs()));
    sim.settle(vec![ok("62041", 0)]);
    let changed = format!(r#"{HOURLY}, "outputs": [{{"path": "/out/c.txt"}}]"#);
    sim.at(50).config(&config_json(&["62041"], &changed));
    assert_eq!(rendered_paths(&sim.tick()), ["/out/c.txt"]);
    sim.rendered(&[]);
    assert_eq!(sim.next_job(3599), None);
}

#[test]
fn failed_outputs_retried_alone_with_backoff() {
    let mut sim = Sim::start(&config_json(&["62041"], &hourly_with_outputs()));
    assert_eq!(rendered_paths(&sim.tick()).len(), 2);
    sim.rendered(&["/out/b.txt"]);
    assert_eq!(sim.tick(), [Action::CollectAll]);
    assert_eq!(sim.collected(report(vec![ok("62041", 0)])), []);
    assert!(sim.status().output_failures.contains_key("/out/b.txt"));
    let mut tries = Vec::new();
    for _ in 0..3 {
        let (t, jobs) = sim.next_job(3600).unwrap();
        assert_eq!(rendered_paths(&jobs), ["/out/b.txt"]);
        tries.push(t);
        sim.rendered(&["/out/b.txt"]);
    }
    assert_eq!(tries, [60, 180, 420]);
    let (_, jobs) = sim.next_job(3600).unwrap();
    assert_eq!(rendered_paths(&jobs), ["/out/b.txt"]);
    sim.rendered(&[]);
    assert!(sim.status().output_failures.is_empty());
    assert_eq!(sim.next_job(3599), None);
}

#[test]
fn nothing_rendered_after_a_run_that_failed_as_a_whole() {
    let mut sim = Sim::start_empty(&config_json(&["62041"], &hourly_with_outputs()));
    assert_eq!(sim.tick(), [Action::CollectAll]);
    // The render due at start is not done now...
    assert_eq!(sim.collected(storage_failed()), []);
    // ...nor on its own later: it waits for a collection that works.
    assert_eq!(sim.next_job(3600), Some((60, vec![Action::CollectAll])));
    assert_eq!(sim.collected(storage_failed()), []);
    // The run backs off to 120 s: no render alone meanwhile.
    assert_eq!(sim.next_job(3600), Some((180, vec![Action::CollectAll])));
    assert_eq!(
        rendered_paths(&sim.collected(report(vec![ok("62041", 0)]))).len(),
        2
    );
}

#[test]
fn partial_stores_rendered_by_the_next_collection() {
    let mut sim = Sim::start(&config_json(&["62041"], &hourly_with_outputs()));
    sim.settle(vec![ok("62041", 0)]);
    assert_eq!(sim.next_job(3600), Some((3600, vec![Action::CollectAll])));
    sim.collected(storage_failed());
    // The next collection (a new source's, here) changes nothing, and renders.
    sim.at(3610)
        .config(&config_json(&["62041", "64496"], &hourly_with_outputs()));
    assert_eq!(sim.tick(), only(&["64496"]));
    let r = sim.collected(report(vec![ok("64496", 0)]));
    assert_eq!(rendered_paths(&r).len(), 2);
}
