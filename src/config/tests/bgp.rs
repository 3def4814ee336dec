//! `bgp_community` of groups, and what their `bird` outputs take from them.
use super::*;
use std::path::Path;

fn p() -> &'static Path {
    Path::new("config.json")
}

#[test]
fn bgp_community_of_a_group_reaches_its_bird_outputs() {
    let text = r#"{"asns": [1], "bgp_community": "65000:1",
        "groups": {"vpn": {"asns": [2], "bgp_community": "65000:1:100"}, "none": {}},
        "outputs": [
          {"path": "/tmp/v4", "format": "bird", "group": "vpn", "family": 4, "via": "blackhole"},
          {"path": "/tmp/d4", "format": "bird", "family": 4, "via": "blackhole"},
          {"path": "/tmp/t", "format": "text", "group": "vpn"},
          {"path": "/tmp/n4", "format": "bird", "group": "none", "family": 4, "via": "blackhole"}]}"#;
    let c = parse(text, p()).unwrap().config;
    let vpn = c.group("vpn").unwrap().bgp_community;
    assert_eq!(vpn, Some("65000:1:100".parse().unwrap()));
    assert_eq!(c.outputs[0].render.community, vpn);
    assert_eq!(
        c.outputs[1].render.community,
        Some("65000:1".parse().unwrap())
    );
    // Only the bird format carries it; every other format is as before.
    assert_eq!(c.outputs[2].render.community, None);
    assert!(c.outputs[0].has_sources && !c.outputs[3].has_sources);
    for (bad, key) in [
        (
            r#"{"groups": {"vpn": {"bgp_community": "65000:65536"}}}"#,
            "groups.vpn.bgp_community",
        ),
        (r#"{"bgp_community": "70000:1"}"#, "bgp_community"),
        (
            r#"{"groups": {"vpn": {"bgp_community": "1:2:4294967296"}}}"#,
            "groups.vpn.bgp_community",
        ),
    ] {
        let e = parse(bad, p()).unwrap_err().to_string();
        assert!(
            e.contains(key) && e.contains("invalid BGP community"),
            "{bad}: {e}"
        );
    }
}
