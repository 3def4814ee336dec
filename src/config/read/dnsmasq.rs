//! `outputs[]` entries with `"dnsmasq": PATH`: a dnsmasq config file of `nftset=`
//! (or `ipset=`) lines for a group's host names (see `format::dnsmasq`).

use crate::util::json::{Map, Value};

use super::{short, Reader};
use crate::config::{Config, ConfigError, DnsmasqOutput, LoadKind, OutputConfig};
use crate::format::{
    DnsTarget, Format, RenderOptions, TypeFilter, ALL_GROUPS, DEFAULT_GROUP, DEFAULT_SET,
};

/// The keys a dnsmasq output takes.
const KEYS: &[&str] = &[
    "dnsmasq",
    "group",
    "table",
    "set",
    "family",
    "ipset",
    "set_timeout_seconds",
    "command",
    "timeout_seconds",
];

/// Keys of listing outputs that mean nothing here: refused rather than ignored, so
/// that `{"dnsmasq": ..., "path": ...}` is not silently half done.
const LISTING_KEYS: &[&str] = &["path", "load", "format", "type", "aggregate"];

/// The longest `set_timeout_seconds`: a year.
const MAX_SET_TIMEOUT: u64 = 365 * 86_400;

/// Reads one dnsmasq output; its names are filled in by [`resolve`].
pub(super) fn output(
    r: &mut Reader<'_>,
    o: &Map,
    prefix: &str,
) -> Result<OutputConfig, ConfigError> {
    r.unknown(o, prefix, KEYS);
    if let Some(k) = LISTING_KEYS
        .iter()
        .find(|k| o.get(k).is_some_and(|v| !v.is_null()))
    {
        return Err(r.err(
            &format!("{prefix}{k}"),
            "not allowed with \"dnsmasq\": a dnsmasq output writes host names; use a separate output for the addresses",
        ));
    }
    let path = r
        .string(o, prefix, "dnsmasq")?
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| {
            r.err(
                &format!("{prefix}dnsmasq"),
                "expected the path of the file to write",
            )
        })?;
    let ipset = match o.get("ipset") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(v) => {
            return Err(r.err(
                &format!("{prefix}ipset"),
                format!("expected true or false, got {}", short(v)),
            ))
        }
    };
    let mut render = RenderOptions {
        format: Format::Nft,
        type_filter: TypeFilter::Fqdn,
        family: r.word(o, prefix, "family")?,
        ..RenderOptions::default()
    };
    if let Some(t) = r.string(o, prefix, "table")? {
        render.table = t;
    }
    let set = r.string(o, prefix, "set")?;
    let group = r
        .string(o, prefix, "group")?
        .unwrap_or_else(|| DEFAULT_GROUP.into());
    if group == ALL_GROUPS && set.is_some() {
        return Err(r.err(
            &format!("{prefix}set"),
            "not with \"group\": \"*\", which writes each group's names to that group's own sets",
        ));
    }
    if let Some(s) = &set {
        render.set = s.clone();
    }
    // A named group's sets are called after it, as for the other outputs.
    render.select_group(&group, set.is_some());
    render
        .check()
        .map_err(|e| r.err(&format!("{prefix}table/set"), e.0))?;
    let set_timeout_seconds = r
        .uint(o, prefix, "set_timeout_seconds", 1, MAX_SET_TIMEOUT)?
        .map_or(crate::format::DEFAULT_DNS_TIMEOUT_SECONDS, |n| n as u32);
    Ok(OutputConfig {
        path: None,
        load: None,
        render,
        command: r
            .string(o, prefix, "command")?
            .filter(|s| !s.trim().is_empty()),
        timeout_seconds: r.uint(o, prefix, "timeout_seconds", 1, 3600)?.unwrap_or(60),
        dnsmasq: Some(DnsmasqOutput {
            path: path.into(),
            group,
            ipset,
            set_timeout_seconds,
            targets: Vec::new(),
        }),
        dns_sets: None,
        kernel_timeout: None,
        max_kernel_mib: None,
        has_sources: false,
        routes: Vec::new(),
        selection: crate::config::Selection::default(),
        mark: None,
    })
}

/// Once the whole file is read: fills each dnsmasq output's names from its group's
/// sources, and tells each `load` output whose sets a dnsmasq output names to create
/// the dns sets too (so that rules which use them can be loaded beside its sets).
pub(super) fn resolve(r: &Reader<'_>, c: &mut Config) -> Result<(), ConfigError> {
    let mut named = Vec::new();
    for (i, out) in c.outputs.iter_mut().enumerate() {
        let Some(d) = out.dnsmasq.as_mut() else {
            continue;
        };
        if d.group != ALL_GROUPS && !c.groups.iter().any(|g| g.name == d.group) {
            let known: Vec<&str> = c.groups.iter().map(|g| g.name.as_str()).collect();
            return Err(r.err(
                &format!("outputs[{i}].group"),
                format!(
                    "unknown group {:?}: configured groups are {}",
                    d.group,
                    known.join(", ")
                ),
            ));
        }
        // `*`: every group, each to its own sets (the default group's are `ripe`).
        d.targets = c
            .groups
            .iter()
            .filter(|g| d.group == ALL_GROUPS || g.name == d.group)
            .map(|g| {
                let set = match d.group == ALL_GROUPS {
                    false => out.render.set.clone(),
                    true if g.name == DEFAULT_GROUP => DEFAULT_SET.to_string(),
                    true => g.name.clone(),
                };
                let target = DnsTarget {
                    table: out.render.table.clone(),
                    set,
                };
                (target, g.fqdns.clone())
            })
            .collect();
        if !d.ipset {
            named.extend(
                d.targets
                    .iter()
                    .map(|t| (t.0.clone(), d.set_timeout_seconds)),
            );
        }
    }
    for out in &mut c.outputs {
        if out.load != Some(LoadKind::Nft) {
            continue;
        }
        out.dns_sets = named
            .iter()
            .find(|(t, _)| t.table == out.render.table && t.set == out.render.set)
            .map(|n| n.1);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::parse;
    use crate::format::{DnsTarget, Family};

    fn config(outputs: &str) -> Result<crate::config::Config, String> {
        let text = format!(r#"{{"fqdns": ["video.example"], "outputs": {outputs}}}"#);
        parse(&text, Path::new("config.json"))
            .map(|l| l.config)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_dnsmasq_output_and_the_load_that_makes_its_sets() {
        let c = config(
            r#"[{"dnsmasq": "/tmp/d.conf", "command": "x", "family": 4},
                {"load": "nft"}, {"load": "nft", "set": "other"}]"#,
        )
        .unwrap();
        let d = c.outputs[0].dnsmasq.as_ref().unwrap();
        assert_eq!(d.path, Path::new("/tmp/d.conf"));
        assert_eq!((d.group.as_str(), d.ipset), ("default", false));
        assert_eq!(d.set_timeout_seconds, 86_400);
        let target = DnsTarget {
            table: "ripe_cidr".into(),
            set: "ripe".into(),
        };
        assert_eq!(d.targets, [(target, vec!["video.example".to_string()])]);
        assert_eq!(c.outputs[0].render.family, Some(Family::V4));
        assert_eq!(c.outputs[0].name(), "/tmp/d.conf");
        // The load of the same sets creates the dns sets; the other load does not.
        assert_eq!(c.outputs[1].dns_sets, Some(86_400));
        assert_eq!(c.outputs[2].dns_sets, None);
        // An ipset output's sets are not nftables sets.
        let c = config(r#"[{"dnsmasq": "/tmp/d.conf", "ipset": true}, {"load": "nft"}]"#).unwrap();
        assert_eq!(c.outputs[1].dns_sets, None);
    }

    #[test]
    fn groups_write_to_their_own_sets() {
        let text = r#"{"fqdns": ["a.example"],
            "groups": {"video": {"fqdns": ["v.example"]}, "music": {"fqdns": ["m.example"]}},
            "outputs": [{"dnsmasq": "/tmp/v.conf", "group": "video"},
                        {"dnsmasq": "/tmp/all.conf", "group": "*", "table": "t"},
                        {"load": "nft", "group": "music", "table": "t"},
                        {"load": "nft", "group": "video"}]}"#;
        let c = parse(text, Path::new("config.json")).unwrap().config;
        let target = |table: &str, set: &str| DnsTarget {
            table: table.into(),
            set: set.into(),
        };
        let names = |n: &str| vec![n.to_string()];
        let video = c.outputs[0].dnsmasq.as_ref().unwrap();
        assert_eq!(
            video.targets,
            [(target("ripe_cidr", "video"), names("v.example"))]
        );
        let all = c.outputs[1].dnsmasq.as_ref().unwrap();
        assert_eq!(
            all.targets,
            [
                (target("t", "ripe"), names("a.example")),
                (target("t", "music"), names("m.example")),
                (target("t", "video"), names("v.example")),
            ]
        );
        // Each load of a group whose dns sets a dnsmasq output names creates them.
        assert_eq!(
            (c.outputs[2].dns_sets, c.outputs[3].dns_sets),
            (Some(86_400), Some(86_400))
        );
    }

    #[test]
    fn bad_dnsmasq_outputs_are_named() {
        for (outputs, want) in [
            (
                r#"[{"dnsmasq": ""}]"#,
                "outputs[0].dnsmasq: expected the path",
            ),
            (
                r#"[{"dnsmasq": "/x", "path": "/y"}]"#,
                "outputs[0].path: not allowed with \"dnsmasq\"",
            ),
            (
                r#"[{"dnsmasq": "/x", "load": "nft"}]"#,
                "outputs[0].load: not allowed",
            ),
            (
                r#"[{"dnsmasq": "/x", "ipset": 1}]"#,
                "outputs[0].ipset: expected true or false",
            ),
            (
                r#"[{"dnsmasq": "/x", "set_timeout_seconds": 0}]"#,
                "outputs[0].set_timeout_seconds",
            ),
            (
                r#"[{"dnsmasq": "/x", "set": "bad name"}]"#,
                "invalid set name \"bad name\"",
            ),
            (
                r#"[{"dnsmasq": "/x", "group": "nope"}]"#,
                "outputs[0].group: unknown group \"nope\": configured groups are default",
            ),
            (
                r#"[{"dnsmasq": "/x", "group": "*", "set": "s"}]"#,
                "outputs[0].set: not with \"group\": \"*\"",
            ),
        ] {
            let e = config(outputs).unwrap_err();
            assert!(e.contains(want), "{outputs}: {e}");
        }
    }
}
