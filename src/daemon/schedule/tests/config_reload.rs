//! The config as the daemon reads it: broken, missing or deleted at start and later,
//! and schedule changes.

use super::*;

#[test]
fn broken_config_at_start_collects_and_sweeps_nothing_until_fixed() {
    let mut sim = Sim::new(None);
    let mut asked = false;
    let actions = sim.s.config_read(
        T0,
        ConfigRead::Text(r#"{"asns": ["64496",], "ttl_days": 0}"#.into()),
        &mut || {
            asked = true;
            Ok(Vec::new())
        },
    );
    assert_eq!(actions, [Action::WriteStatus]);
    assert!(!asked, "no database needed yet");
    let error = sim.status().last_error.clone().unwrap();
    assert!(error.contains("/data/config.json"), "{error}");
    assert!(error.contains("nothing is collected"), "{error}");
    assert_eq!(sim.status().next_run, None);
    assert_eq!(sim.next_job(600), None, "nothing collected or swept");
    sim.s.collect_now(sim.now);
    assert_eq!(sim.tick(), []);
    sim.config(&config_json(&["62041"], HOURLY));
    assert_eq!(sim.tick(), [Action::CollectAll]);
}

#[test]
fn missing_config_at_start_is_the_empty_configuration() {
    let mut sim = Sim::new(None);
    sim.read(ConfigRead::Missing("/data/config.json: not found".into()));
    assert_eq!(sim.s.config().unwrap().asns, Vec::<String>::new());
    assert_eq!(sim.status().last_error, None);
    // Still missing at the next checks: still the empty configuration, no error.
    for _ in 0..3 {
        sim.now += CONFIG_CHECK;
        assert_eq!(
            sim.read(ConfigRead::Missing("/data/config.json: not found".into())),
            []
        );
    }
    assert_eq!(sim.status().last_error, None);
    // The first `asn add` creates it.
    sim.now += CONFIG_CHECK;
    sim.config(&config_json(&["62041"], HOURLY));
    assert_eq!(sim.s.config().unwrap().asns, ["62041"]);
    assert_eq!(sim.status().last_error, None);
}

#[test]
fn broken_or_deleted_config_later_keeps_the_last_good_one() {
    let text = config_json(&["62041"], HOURLY);
    let mut sim = Sim::start(&text);
    sim.settle(vec![ok("62041", 0)]);
    let good = sim.s.config().cloned();
    for bad in [
        ConfigRead::Text(r#"{"asns": ["#.into()),
        ConfigRead::Missing("/data/config.json: No such file or directory".into()),
        ConfigRead::Failed("/data/config.json: Permission denied".into()),
    ] {
        sim.now += 2;
        assert_eq!(sim.read(bad), [Action::WriteStatus]);
        let error = sim.status().last_error.clone().unwrap();
        assert!(error.contains("/data/config.json"), "{error}");
        assert!(
            error.contains("keeping the last good configuration"),
            "{error}"
        );
        assert_eq!(sim.s.config().cloned(), good);
    }
    // The same error again is not recorded twice.
    assert_eq!(
        sim.read(ConfigRead::Failed(
            "/data/config.json: Permission denied".into()
        )),
        []
    );
    // Back as it was: nothing is new, nothing to collect.
    sim.config(&text);
    assert_eq!(sim.next_job(3599), None);
}

#[test]
fn schedule_changes_keep_the_full_run_rhythm() {
    let mut sim = Sim::start(&config_json(&["62041"], HOURLY));
    sim.settle(vec![ok("62041", 0)]);
    let ten_min = r#""schedule": {"interval_seconds": 600}"#;
    sim.at(100).config(&config_json(&["62041"], ten_min));
    assert_eq!(sim.status().next_run, Some(util::iso(T0 + 600)));
    assert_eq!(sim.next_job(3600), Some((600, vec![Action::CollectAll])));
    sim.collected(report(vec![ok("62041", 0)]));
    assert_eq!(sim.next_job(3600), Some((1200, vec![Action::CollectAll])));
}

/// A changed catalog (`services.json`) with the same `config.json`: parsed again,
/// so that a service's new sources (or a broken catalog) take effect.
#[test]
fn a_changed_catalog_reads_the_same_config_again() {
    let mut sim = Sim::new(None);
    let text = config_json(&["62041"], HOURLY);
    sim.config(&text);
    sim.now += CONFIG_CHECK;
    assert_eq!(
        sim.read(ConfigRead::Text(text.clone())),
        [],
        "the same text: nothing"
    );
    sim.s.catalog_changed();
    sim.now += CONFIG_CHECK;
    assert_eq!(sim.read(ConfigRead::Text(text)), [Action::WriteStatus]);
}

#[test]
fn a_changed_upstream_setting_tries_the_failed_sources_again() {
    let mut sim = Sim::start(&config_json(&["62041", "64503", "nx.example"], HOURLY));
    sim.settle(vec![
        ok("62041", 0),
        failed("64503", SourceError::Http { status: 404 }),
        failed("nx.example", SourceError::NxDomain),
    ]);
    // A setting that fetches nothing differently changes nothing.
    let ttl = format!("{HOURLY}, \"ttl_days\": 3");
    sim.at(100)
        .config(&config_json(&["62041", "64503", "nx.example"], &ttl));
    assert_eq!(sim.next_job(200), None);
    // The resolver fixed: the failed sources (not the one that answered) are due now,
    // not at the next full run.
    let dns = format!("{ttl}, \"dns\": {{\"resolver\": \"doh\"}}");
    sim.at(300)
        .config(&config_json(&["62041", "64503", "nx.example"], &dns));
    assert_eq!(
        sim.next_job(400),
        Some((301, only(&["64503", "nx.example"])))
    );
    sim.collected(report(vec![
        ok("64503", 1),
        failed("nx.example", SourceError::NxDomain),
    ]));
    // `ripe.url` too.
    let ripe = format!("{dns}, \"ripe\": {{\"url\": \"http://127.0.0.1:1/x\"}}");
    sim.at(500)
        .config(&config_json(&["62041", "64503", "nx.example"], &ripe));
    assert_eq!(sim.next_job(600), Some((501, only(&["nx.example"]))));
}
