//! The rules about signals, `status.json` and stopping.

use super::*;

#[test]
fn signal_collects_every_source_now() {
    let mut sim = Sim::start(&config_json(&["62041", "example.com"], HOURLY));
    sim.settle(vec![ok("62041", 0), ok("example.com", 0)]);
    sim.at(100);
    sim.s.collect_now(sim.now);
    assert_eq!(sim.tick(), [Action::CollectAll]);
    // A signal during that run (the WAN down and up again, a trigger firing twice):
    // no second run after it.
    sim.at(101);
    sim.s.collect_now(sim.now);
    assert_eq!(sim.tick(), []);
    sim.collected(report(vec![ok("62041", 0), ok("example.com", 0)]));
    assert_ne!(sim.tick(), [Action::CollectAll]);
    assert_eq!(sim.status().next_run, Some(util::iso(T0 + 100 + 3600)));
}

#[test]
fn status_written_every_30_seconds_and_after_each_run() {
    let mut sim = Sim::start(&config_json(&["62041"], HOURLY));
    assert_eq!(
        sim.s.tick(T0),
        [Action::WriteStatus, Action::CollectAll],
        "the run's start"
    );
    assert_eq!(
        sim.s.collected(T0 + 5, report(vec![ok("62041", 0)])),
        [Action::WriteStatus]
    );
    assert_eq!(
        sim.s.tick(T0 + 5),
        [Action::Snapshot],
        "the stored run's snapshot"
    );
    assert_eq!(
        sim.s.saved(T0 + 6, "wal", None, false),
        [Action::WriteStatus]
    );
    assert_eq!(sim.s.tick(T0 + 35), []);
    assert_eq!(sim.s.tick(T0 + 36), [Action::WriteStatus]);
    assert_eq!(sim.status().heartbeat, Some(util::iso(T0 + 36)));
    assert!(sim.s.wake_at() <= T0 + 66);
}

#[test]
fn snapshot_is_a_job_after_each_stored_run() {
    let mut sim = Sim::start(&config_json(&["62041"], HOURLY));
    assert_eq!(sim.s.tick(T0), [Action::WriteStatus, Action::CollectAll]);
    sim.s.collected(T0 + 5, report(vec![ok("62041", 3)]));
    // Due at once, and nothing else starts while it runs.
    assert_eq!(sim.s.wake_at(), i64::MIN);
    assert_eq!(sim.s.tick(T0 + 5), [Action::Snapshot]);
    sim.s.collect_now(T0 + 6);
    assert_eq!(sim.s.tick(T0 + 6), []);
    // Its result is recorded at the time the shell gives (no clock of its own).
    let failed = Some(Err("disk full".to_string()));
    sim.s.saved(T0 + 7, "delete", failed, true);
    let error = sim.status().last_error.clone().unwrap();
    assert_eq!(error, format!("{}: snapshot: disk full", util::iso(T0 + 7)));
    assert!(sim.status().snapshot_pending);
    assert_eq!(sim.status().journal_mode.as_deref(), Some("delete"));
    sim.s.saved(T0 + 8, "wal", Some(Ok(T0 + 8)), false);
    assert_eq!(sim.status().last_snapshot, Some(util::iso(T0 + 8)));
    assert!(!sim.status().snapshot_pending);
    // The run asked for meanwhile starts now; a run that failed as a whole stores
    // nothing to snapshot.
    assert_eq!(
        sim.s.tick(T0 + 9),
        [Action::WriteStatus, Action::CollectAll]
    );
    sim.s.collected(T0 + 10, storage_failed());
    assert_eq!(sim.s.tick(T0 + 10), []);
}

#[test]
fn stop_starts_no_snapshot_job() {
    let mut sim = Sim::start(&config_json(&["62041"], HOURLY));
    assert_eq!(sim.tick(), [Action::CollectAll]);
    sim.s.collected(sim.now, report(vec![ok("62041", 3)]));
    sim.s.stop(sim.now);
    // (The shell writes the snapshot at stop itself.)
    assert_eq!(sim.s.tick(sim.now), []);
}

#[test]
fn stop_starts_nothing_and_clears_the_pid() {
    let mut sim = Sim::start(&config_json(&["62041"], &hourly_with_outputs()));
    assert_eq!(sim.past_start_render(), [Action::CollectAll]);
    assert_eq!(sim.s.stop(sim.now), [Action::WriteStatus]);
    assert_eq!(sim.status().pid, None);
    assert_eq!(sim.status().next_run, None);
    // The run in progress is recorded, but nothing is rendered or started.
    assert_eq!(sim.collected(report(vec![ok("62041", 5)])), []);
    assert!(sim.status().last_success.is_some());
    assert_eq!(sim.status().next_run, None);
    assert_eq!(sim.next_job(7200), None);
}

#[test]
fn status_tells_what_the_last_run_added_and_removed() {
    let mut sim = Sim::start(&config_json(&["62041", "13335"], HOURLY));
    assert_eq!(sim.tick(), [Action::CollectAll]);
    let mut removing = ok("13335", 1);
    if let Ok(m) = &mut removing.outcome {
        m.removed = 4;
    }
    sim.s
        .collected(T0 + 5, report(vec![ok("62041", 2), removing]));
    assert_eq!(sim.status().last_run_added, Some(3));
    assert_eq!(sim.status().last_run_removed, Some(4));
}

#[test]
fn status_takes_the_snapshot_time_of_the_file() {
    let mut sim = Sim::start(&config_json(&["62041"], HOURLY));
    sim.s.snapshot_file_written(T0 - 60);
    assert_eq!(sim.status().last_snapshot, Some(util::iso(T0 - 60)));
}
