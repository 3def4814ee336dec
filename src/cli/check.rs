//! `check`: reads `config.json` and prints the configuration in effect (groups with
//! their sources, exclusions, marks and set names; outputs; upstreams), writing
//! nothing; exit 1 naming every problem.

use std::fmt::Write;

use super::output::print;
use super::{CliError, Outcome};
use crate::config::{self, Config, Paths, Resolver};
use crate::format::{Format, DEFAULT_GROUP};
use crate::source::Kind;
use crate::sources::groups::mark_text;

/// Runs `check`.
pub fn run(paths: &Paths) -> Result<Outcome, CliError> {
    let path = paths.config();
    let checked = config::check(&path);
    if let Some(cfg) = &checked.config {
        print(describe(cfg).as_bytes())?;
    }
    if checked.problems.is_empty() {
        print(format!("{}: valid\n", path.display()).as_bytes())?;
        return Ok(Outcome::Success);
    }
    let n = checked.problems.len();
    let own = format!("{}: ", path.display());
    // The header names config.json only when a problem is its own: one of the
    // catalog (services.json) names its file on its line, and is not config.json's.
    let whose = match checked.problems.iter().any(|p| p.starts_with(&own)) {
        true => own.clone(),
        false => String::new(),
    };
    let mut text = format!("{whose}{n} problem{}:", if n == 1 { "" } else { "s" });
    for p in &checked.problems {
        // config.json is named once, above.
        let p = p.strip_prefix(&own).unwrap_or(p);
        let _ = write!(text, "\n  {p}");
    }
    Err(CliError::Other(text))
}

/// The base name of a group's sets: `ripe` for `default`, else the group's name.
fn sets(group: &str) -> String {
    let base = if group == DEFAULT_GROUP {
        "ripe"
    } else {
        group
    };
    format!("{base}_v4, {base}_v6")
}

/// The configuration in effect, as lines for a person.
fn describe(cfg: &Config) -> String {
    let mut out = String::from("groups:\n");
    for g in &cfg.groups {
        let _ = writeln!(out, "  {}:", g.name);
        if !g.services.is_empty() {
            let _ = writeln!(out, "    services: {}", g.services.join(", "));
        }
        for kind in Kind::ALL {
            let list = g.sources(kind);
            if !list.is_empty() {
                let shown: Vec<String> = list
                    .iter()
                    .map(|s| crate::source::display(kind, s))
                    .collect();
                let _ = writeln!(out, "    {}: {}", kind.key(), shown.join(", "));
            }
        }
        let excl: Vec<String> = cfg
            .exclusions(&g.name)
            .iter()
            .map(|n| n.to_string())
            .collect();
        let none = || "none".to_string();
        let _ = writeln!(
            out,
            "    exclude: {}\n    mark: {}\n    sets: {}",
            if excl.is_empty() {
                none()
            } else {
                excl.join(", ")
            },
            g.mark.map_or_else(none, mark_text),
            sets(&g.name)
        );
        if let Some(r) = &g.route {
            let gw = r
                .gateway
                .map_or_else(String::new, |a| format!(" gateway {a}"));
            let table = r
                .table
                .map_or_else(|| "chosen at the next load".into(), |t| t.to_string());
            let _ = writeln!(out, "    route: via {}{gw}, table {table}", r.via);
        }
    }
    out.push_str("outputs:\n");
    if cfg.outputs.is_empty() {
        out.push_str("  none\n");
    }
    for o in &cfg.outputs {
        let r = &o.render;
        let _ = write!(out, "  {}: ", o.name());
        if let Some(d) = &o.dnsmasq {
            let _ = write!(out, "dnsmasq, group {}", d.group);
        } else {
            let how = if o.load.is_some() {
                "load nft"
            } else {
                r.format.as_str()
            };
            let _ = write!(out, "{how}, group {}, type {}", r.group, r.type_filter);
            if o.load.is_some() || matches!(r.format, Format::Nft | Format::Ipset) {
                let _ = write!(
                    out,
                    ", table inet {}, sets {}_v4, {}_v6",
                    r.table, r.set, r.set
                );
            }
        }
        if let Some(m) = o.mark {
            let _ = write!(out, ", mark {}", mark_text(m));
        }
        if let Some(c) = &o.command {
            let _ = write!(out, ", command {c:?}");
        }
        out.push('\n');
    }
    let ups: Vec<&str> = cfg.upstreams.asn.iter().map(|u| u.as_str()).collect();
    let fetch = cfg
        .fetch
        .command
        .as_ref()
        .map_or_else(|| "built-in client".to_string(), |c| c.join(" "));
    let dns = match cfg.dns.resolver {
        Resolver::System => "system".to_string(),
        Resolver::Doh => format!("doh {}", cfg.dns.doh_url),
    };
    let _ = writeln!(
        out,
        "upstreams:\n  asn: {}\n  dns: {dns}\n  fetch: {fetch}\nschedule: every {}, ttl {} days, history {} days",
        ups.join(", "),
        crate::util::duration(cfg.schedule.interval_secs()),
        cfg.ttl_days,
        cfg.history_days
    );
    out
}
