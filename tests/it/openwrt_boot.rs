//! The firewall include's `render --load-only` at boot, against the real `nft` inside
//! `unshare -n`: sets the daemon loaded from the current values are not loaded again.

use std::process::Command;

use crate::common::{cannot_run, ripe_body, FakeServer, Reply, TestDir};
use crate::openwrt_run::{namespace, nft_list, shipped_with};

/// Issue 38 item 3: at boot the firewall include's `render --load-only` can wait for
/// the outputs' lock while the daemon loads the sets, and then read all their
/// elements back for nothing. Finding the sets loaded from the stored values as they
/// are (the last full load's record, every set still in the kernel), it loads
/// nothing; after `fw4 flush` (the table deleted) or a change of the stored values it
/// loads them.
#[test]
fn render_load_only_skips_sets_loaded_from_the_current_values() {
    let nft = match namespace() {
        Ok(nft) => nft,
        Err(why) => return cannot_run(&why),
    };
    let ripe = FakeServer::start(|rq| {
        let p = match rq.url.contains("64497") {
            true => "198.51.100.0/24",
            false => "192.0.2.0/24",
        };
        Reply::json(200, ripe_body(&[p.into(), "2001:db8::/32".into()]))
    });
    let t = TestDir::new();
    let out = t.file("out.txt");
    t.config(&shipped_with(
        &["64496", "64497"],
        &ripe.url("/data.json"),
        &out,
        true,
    ));
    // The daemon's load (`run` renders the outputs as the daemon does).
    let run = || {
        let o = t.cmd().arg("run").output().unwrap();
        assert!(o.status.success(), "{o:?}");
    };
    run();
    assert!(nft_list(&nft, "ripe_v4").contains("192.0.2.0/24"));
    let load = || {
        let o = t.cmd().args(["render", "--load-only"]).output().unwrap();
        assert!(o.status.success(), "{o:?}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let log = load();
    assert!(
        log.contains("nothing to load") && !log.contains("prefixes into table"),
        "the loaded sets were loaded again: {log}"
    );
    // fw4 flush: the table is gone.
    let deleted = Command::new(&nft)
        .args(["delete", "table", "inet", "ripe_cidr"])
        .status()
        .unwrap();
    assert!(deleted.success());
    let log = load();
    assert!(log.contains("prefixes into table"), "{log}");
    assert!(nft_list(&nft, "ripe_v4").contains("192.0.2.0/24"));
    assert!(load().contains("nothing to load"));
    // The stored values change, the sets not loaded since (the CLI's purge).
    let o = t
        .cmd()
        .args(["asn", "remove", "64497", "--purge"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let log = load();
    assert!(log.contains("prefixes into table"), "{log}");
    assert!(!nft_list(&nft, "ripe_v4").contains("198.51.100.0/24"));
}
