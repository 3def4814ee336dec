//! A source never collected (added while the daemon was stopped, or before a reboot)
//! is collected at start on its own, whatever the schedule says; one that failed
//! before waits for the schedule (or its retry) as every other does.

use super::*;

fn with(status: Option<Status>, uncollected: &[&str]) -> Sim {
    let mut sim = Sim::new(status);
    sim.uncollected = uncollected.iter().map(|n| source(n)).collect();
    sim
}

#[test]
fn a_source_never_collected_is_collected_at_start() {
    let mut sim = with(last_success(600), &["64500", "new.example"]);
    sim.config(&config_json(&["62041", "64500", "new.example"], HOURLY));
    assert_eq!(sim.tick(), only(&["64500", "new.example"]));
    sim.collected(report(vec![ok("64500", 3), ok("new.example", 1)]));
    // The full-run rhythm is untouched: due an interval after the last success.
    assert_eq!(sim.status().next_run, Some(util::iso(T0 + 3000)));
    assert_eq!(sim.next_job(3000), Some((3000, vec![Action::CollectAll])));
}

#[test]
fn with_outputs_the_start_render_goes_first() {
    let mut sim = with(last_success(600), &["64500"]);
    sim.config(&config_json(&["62041", "64500"], &hourly_with_outputs()));
    assert_eq!(rendered_paths(&sim.tick()).len(), 2);
    sim.at(1).rendered(&[]);
    assert_eq!(sim.tick(), only(&["64500"]));
}

#[test]
fn a_source_that_failed_before_waits_for_the_schedule() {
    let mut status = last_success(600).unwrap();
    status.failures.insert("AS64500".into(), "HTTP 404".into());
    let mut sim = with(Some(status), &["64500"]);
    sim.config(&config_json(&["62041", "64500"], HOURLY));
    assert_eq!(sim.next_job(2999), None);
}

#[test]
fn every_source_collected_before_means_nothing_at_start() {
    let mut sim = with(last_success(600), &[]);
    sim.config(&config_json(&["62041", "64500"], HOURLY));
    assert_eq!(sim.next_job(2999), None);
}
