//! The start-up render: from the stored values before the first collection (a reboot
//! with the snapshot restored and a hanging upstream), after it for an empty store.

use super::*;

#[test]
fn an_empty_store_renders_after_the_first_collection() {
    // Nothing stored (a fresh database, or a corrupt one moved aside): rendering now
    // would flush the live sets, so the start render waits for the collection.
    let mut sim = Sim::start_empty(&config_json(&["62041"], &hourly_with_outputs()));
    assert_eq!(sim.tick(), [Action::CollectAll]);
    let r = sim.collected(report(vec![ok("62041", 0)]));
    assert_eq!(rendered_paths(&r), ["/out/a.txt", "/out/b.txt"]);
}

#[test]
fn the_start_render_from_the_store_does_not_wait_for_a_hanging_collection() {
    // A reboot: the snapshot restored, the last success a day old, the upstream hangs.
    let mut sim = Sim::new(last_success(86_400));
    sim.config(&config_json(&["62041"], &hourly_with_outputs()));
    assert_eq!(rendered_paths(&sim.tick()).len(), 2);
    sim.at(1).rendered(&[]);
    assert_eq!(sim.tick(), [Action::CollectAll]);
    // The collection hangs: nothing else is asked of the shell meanwhile.
    assert_eq!(sim.next_job(600), None);
    // Without outputs there is nothing to render: the collection starts at once.
    let mut sim = Sim::new(last_success(86_400));
    sim.config(&config_json(&["62041"], HOURLY));
    assert_eq!(sim.tick(), [Action::CollectAll]);
}

/// Issue 38, item 2: the elements of a `"timeout": true` load expire after
/// `ttl_days` unless loaded again; runs that change nothing load nothing, so the
/// output is loaded again halfway to the expiry (and again after that), alone.
#[test]
fn timeout_sets_are_loaded_again_before_they_expire() {
    let outputs =
        r#""ttl_days": 1, "outputs": [{"load": "nft", "timeout": true}, {"path": "/out/a.txt"}]"#;
    let mut sim = Sim::start(&config_json(&["62041"], &format!("{HOURLY}, {outputs}")));
    assert_eq!(rendered_paths(&sim.tick()).len(), 2);
    sim.rendered(&[]);
    let mut loads = Vec::new();
    while let Some((t, jobs)) = sim.next_job(86_400 + 3600) {
        match &jobs[..] {
            [Action::CollectAll] => {
                let r = sim.collected(report(vec![ok("62041", 0)]));
                assert_eq!(r, [], "a run that changed nothing renders nothing");
            }
            [Action::Render(_)] => {
                loads.push((t, rendered_paths(&jobs)));
                sim.rendered(&[]);
            }
            other => panic!("{other:?}"),
        }
    }
    let nft = vec!["nft load inet ripe_cidr ripe".to_string()];
    assert_eq!(loads, [(43_200, nft.clone()), (86_400, nft)]);
}
