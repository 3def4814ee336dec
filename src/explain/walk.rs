//! The walk itself: each step reads what it needs (the stored rows, the kernel),
//! says what it found, and on a broken link names the fix and ends the walk.

use std::net::IpAddr;

use super::{Explained, Input, Kernel, Route, Rule, State, Step};
use crate::config::{Mark, OutputConfig};
use crate::db::Row;
use crate::format::{dns_set_name, mark_chains, Family, Format};
use crate::inspect::lookup::{Found, Query};
use crate::inspect::Judge;

/// A set that may hold the address: table, set, filled by dnsmasq.
type SetRef = (String, String, bool);

/// The walk so far.
struct Walk<'a> {
    input: &'a Input<'a>,
    kernel: &'a dyn Kernel,
    addr: IpAddr,
    group: String,
    steps: Vec<Step>,
    /// What holds so far, for the verdict ("in set vpn_v4").
    ctx: String,
    /// The first broken link, in words ("no ip rule for mark 0x100").
    problem: Option<String>,
    /// Why steps were skipped.
    skipped: Option<String>,
}

impl Walk<'_> {
    fn step(&mut self, name: &'static str, state: State, found: Vec<String>, fix: Option<String>) {
        self.steps.push(Step {
            name,
            state,
            found,
            fix,
        });
    }

    fn ok(&mut self, name: &'static str, found: Vec<String>) {
        self.step(name, State::Ok, found, None);
    }

    /// A broken link: `problem` goes into the verdict, `fix` under the step.
    /// Always `false`, so that a step can `return self.broken(..)`.
    fn broken(&mut self, name: &'static str, problem: String, fix: String) -> bool {
        self.step(name, State::Broken, vec![problem.clone()], Some(fix));
        self.problem = Some(problem);
        false
    }

    fn skip(&mut self, name: &'static str, why: super::Skip) {
        self.step(
            name,
            State::Skipped,
            vec![format!("not checked: {}", why.0)],
            None,
        );
        self.skipped.get_or_insert(why.0);
    }

    fn fix_load(&self, out: Option<&OutputConfig>) -> String {
        let status = self.input.status;
        let failed = out.and_then(|o| status?.output_failures.get(&o.name()));
        match (failed, status.and_then(|s| s.last_run_finished.as_deref())) {
            (Some(e), _) => format!("the group's load output failed: {e}; see `status`"),
            (None, Some(t)) => format!(
                "the group's load output has not run since {t}: see `status` (`render --load-only` loads now)"
            ),
            (None, None) => "the group's load output has not run: start the daemon or run `render --load-only`".into(),
        }
    }
}

/// The fix for a group without a `load` output.
fn add_load(g: &str) -> String {
    format!("add {{\"load\": \"nft\", \"group\": \"{g}\"}} to the \"outputs\" of config.json")
}

/// The mark as `ip rule` writes it: `0x100`, `0x100/0xff00`.
fn mark_text(value: u32, mask: u32) -> String {
    if mask == u32::MAX {
        format!("{value:#x}")
    } else {
        format!("{value:#x}/{mask:#x}")
    }
}

/// A table's name as `ip` shows it.
fn table_text(t: u32) -> String {
    match t {
        253 => "default".into(),
        254 => "main".into(),
        255 => "local".into(),
        t => t.to_string(),
    }
}

/// The table a fix proposes when no rule names one: the mark's hex digits read as
/// a number when they are all decimal (0x100: table 100), else 100.
fn proposed_table(mark: u32) -> u32 {
    format!("{mark:x}")
        .parse::<u32>()
        .ok()
        .filter(|t| !matches!(t, 0 | 253..=255))
        .unwrap_or(100)
}

/// The sets of `group` for the family of `v6`, and its `load` output (the one that
/// keeps the mark chains).
fn group_sets<'c>(
    input: &'c Input<'_>,
    group: &str,
    v6: bool,
) -> (Vec<SetRef>, Option<&'c OutputConfig>) {
    let fam = if v6 { Family::V6 } else { Family::V4 };
    let mut sets = Vec::new();
    let mut load = None;
    for out in &input.cfg.outputs {
        let r = &out.render;
        let fills = out.load.is_some() || r.format == Format::Nft;
        if out.dnsmasq.is_some() || r.group != group || !fills || r.family.is_some_and(|f| f != fam)
        {
            continue;
        }
        sets.push((
            r.table.clone(),
            format!("{}_v{}", r.set, if v6 { 6 } else { 4 }),
            false,
        ));
        if out.dns_sets.is_some() {
            sets.push((r.table.clone(), dns_set_name(&r.set, fam), true));
        }
        if out.load.is_some() {
            load = load.or(Some(out));
        }
    }
    (sets, load)
}

/// Whether the selection of `group` names the row's source.
fn names(input: &Input<'_>, group: &str, r: &Row) -> bool {
    input
        .cfg
        .selection(group)
        .is_ok_and(|s| Judge::new(&s).names(r.kind, &r.source))
}

/// The exclusion of `group` that covers `addr`.
fn excluded_by(input: &Input<'_>, group: &str, addr: IpAddr) -> Option<ipnet::IpNet> {
    input
        .cfg
        .exclusions(group)
        .into_iter()
        .find(|p| p.contains(&addr))
}

/// The dnsmasq set of `sets` that holds `addr`, if any; skipped reads count as no.
fn dns_holder(k: &dyn Kernel, sets: &[SetRef], addr: IpAddr) -> Option<String> {
    sets.iter()
        .filter(|s| s.2)
        .find(|s| k.set_holds(&s.0, &s.1, addr) == Ok(Some(true)))
        .map(|s| format!("inet {} {}", s.0, s.1))
}

/// The group to follow: the one asked for, else the first that lists the address,
/// else the first whose sources hold it (an exclusion hides it there), else the first
/// whose dnsmasq set holds it, else `default`.
fn pick_group(input: &Input<'_>, rows: &[Row], addr: IpAddr, k: &dyn Kernel) -> String {
    if let Some(g) = input.group {
        return g.to_string();
    }
    let groups: Vec<&str> = input.cfg.groups.iter().map(|g| g.name.as_str()).collect();
    let holds = |g: &str| rows.iter().any(|r| names(input, g, r));
    let pick = groups
        .iter()
        .find(|g| holds(g) && excluded_by(input, g, addr).is_none())
        .or_else(|| groups.iter().find(|g| holds(g)))
        .or_else(|| {
            let v6 = addr.is_ipv6();
            groups
                .iter()
                .find(|g| dns_holder(k, &group_sets(input, g, v6).0, addr).is_some())
        });
    pick.map_or(crate::format::DEFAULT_GROUP, |g| g).to_string()
}

pub(super) fn walk(
    q: &Query,
    found: &Found,
    input: &Input<'_>,
    kernel: &dyn Kernel,
    lookup: Vec<u8>,
) -> Explained {
    let addr = q.net.addr();
    let group = pick_group(input, &found.rows, addr, kernel);
    let mut w = Walk {
        input,
        kernel,
        addr,
        group,
        steps: Vec::new(),
        ctx: String::new(),
        problem: None,
        skipped: None,
    };
    let (sets, load) = group_sets(input, &w.group, addr.is_ipv6());
    let _ = stored(&mut w, &found.rows, &sets)
        // (An address only dnsmasq added has its kernel step already.)
        && (w.steps.len() > 1 || sets_hold(&mut w, &sets, load))
        && marked(&mut w, load).is_some_and(|m| policy(&mut w, m));
    let verdict = match (&w.problem, &w.skipped) {
        (Some(p), _) if w.ctx.is_empty() => format!("{}: {p}", q.text()),
        (Some(p), _) => format!("{}: {}, but {p}", q.text(), w.ctx),
        (None, Some(why)) => {
            let skipped: Vec<&str> = w
                .steps
                .iter()
                .filter(|s| s.state == State::Skipped)
                .map(|s| s.name)
                .collect();
            format!(
                "{}: {}; {} not checked: {why}",
                q.text(),
                w.ctx,
                skipped.join(", ")
            )
        }
        (None, None) => format!("{}: {}", q.text(), w.ctx),
    };
    Explained {
        query: q.text(),
        group: w.group,
        steps: w.steps,
        verdict,
        lookup,
    }
}

/// Step 1. An address only dnsmasq added passes here, with step 2 done.
fn stored(w: &mut Walk<'_>, rows: &[Row], sets: &[SetRef]) -> bool {
    let g = w.group.clone();
    let mine: Vec<&Row> = rows.iter().filter(|r| names(w.input, &g, r)).collect();
    if let Some(p) = excluded_by(w.input, &g, w.addr).filter(|_| !mine.is_empty()) {
        return w.broken(
            "stored",
            format!("excluded from group {g} by {p}"),
            format!("remove {p} from the \"exclude\" of config.json (top level or group {g}) if it should be routed"),
        );
    }
    if mine.is_empty() {
        if let Some(set) = dns_holder(w.kernel, sets, w.addr) {
            let name = set.rsplit(' ').next().unwrap_or("").to_string();
            w.ok("stored", vec![format!("not stored: dnsmasq added it to set {name} (a host name of group {g} resolved to it)")]);
            w.ok("kernel", vec![format!("set {set} holds it")]);
            w.ctx = format!("in set {name}");
            return true;
        }
        let elsewhere = if rows.is_empty() {
            ""
        } else {
            " (other groups' sources hold it: see `lookup`)"
        };
        return w.broken(
            "stored",
            format!("not stored in group {g}{elsewhere}"),
            format!("add a source that holds it to group {g} (`asn add`, `fqdn add`, ... with --group {g})"),
        );
    }
    let cfg = w.input.cfg;
    let lines = mine
        .iter()
        .map(|r| {
            let mut src = crate::source::display(r.kind, &r.source);
            // The service that brought it: a user who routed "Telegram" sees why.
            let services = cfg.services_of(r.kind, &r.source);
            if !services.is_empty() {
                src = format!("{src} (service {})", services.join(", "));
            }
            format!(
                "{} from {src}, first seen {}, last seen {}",
                r.value, r.first_seen, r.last_seen
            )
        })
        .collect();
    w.ok("stored", lines);
    w.ctx = format!("stored in group {g}");
    true
}

/// Step 2: the sets of the group's outputs.
fn sets_hold(w: &mut Walk<'_>, sets: &[SetRef], load: Option<&OutputConfig>) -> bool {
    let g = w.group.clone();
    if sets.is_empty() {
        return w.broken(
            "kernel",
            format!("no output loads group {g}'s sets"),
            add_load(&g),
        );
    }
    let mut lines = Vec::new();
    for (table, set, _) in sets {
        match w.kernel.set_holds(table, set, w.addr) {
            Err(why) => {
                w.skip("kernel", why);
                return true;
            }
            Ok(Some(true)) => {
                w.ok("kernel", vec![format!("set inet {table} {set} holds it")]);
                w.ctx = format!("in set {set}");
                return true;
            }
            Ok(Some(false)) => lines.push(format!("set inet {table} {set} does not hold it")),
            Ok(None) => lines.push(format!("set inet {table} {set} does not exist")),
        }
    }
    let fix = w.fix_load(load);
    let problem = format!("not in set {}", sets[0].1);
    w.broken("kernel", problem, fix);
    if let Some(s) = w.steps.last_mut() {
        s.found = lines;
    }
    false
}

/// Step 3: the mark chains. The group's mark, when the walk goes on.
fn marked(w: &mut Walk<'_>, load: Option<&OutputConfig>) -> Option<Mark> {
    let g = w.group.clone();
    let Some(mark) = w.input.cfg.group(&g).and_then(|g| g.mark) else {
        w.broken(
            "mark",
            format!("group {g} has no mark"),
            format!("give group {g} a \"mark\" (e.g. \"0x100\") in config.json, for an ip rule to match"),
        );
        return None;
    };
    let shown = mark_text(mark.value, mark.mask);
    let Some(out) = load else {
        w.broken(
            "mark",
            format!("no load output keeps group {g}'s mark chain"),
            add_load(&g),
        );
        return None;
    };
    let table = &out.render.table;
    let mut packets = 0;
    for chain in mark_chains(&out.render.set) {
        match w.kernel.chain(table, &chain) {
            Err(why) => {
                w.skip("mark", why);
                return Some(mark);
            }
            Ok(None) => {
                let fix = w.fix_load(load);
                w.broken(
                    "mark",
                    format!("the mark chain inet {table} {chain} is missing"),
                    fix,
                );
                return None;
            }
            Ok(Some(rules)) => {
                let ours = rules
                    .iter()
                    .filter(|r| (r.value, r.mask) == (mark.value, mark.mask));
                let n: Vec<u64> = ours.map(|r| r.packets).collect();
                if n.is_empty() {
                    let fix = w.fix_load(load);
                    let problem = format!("chain {chain} does not set mark {shown}");
                    w.broken("mark", problem, fix);
                    return None;
                }
                packets += n.iter().sum::<u64>();
            }
        }
    }
    let [pre, post] = mark_chains(&out.render.set);
    w.ok(
        "mark",
        vec![format!(
            "chains {pre} and {post} set mark {shown}; {packets} packets marked so far"
        )],
    );
    Some(mark)
}

/// Steps 4 and 5: the rule for the mark, and the route it leads to.
fn policy(w: &mut Walk<'_>, mark: Mark) -> bool {
    let v6 = w.addr.is_ipv6();
    let op = w.input.openwrt;
    let want = mark_text(mark.value, mark.mask);
    let rule = match w.kernel.rule(v6, mark.value) {
        Err(why) => {
            w.skip("rule", why);
            None
        }
        Ok(None) => {
            let t = proposed_table(mark.value);
            let fix = super::render::rule_fix(op, v6, &want, t);
            return w.broken(
                "rule",
                format!("no ip rule for mark {:#x}", mark.value),
                fix,
            );
        }
        Ok(Some(r)) => {
            let (m, k) = r.fwmark;
            let line = format!(
                "ip rule {}: fwmark {} lookup table {}",
                r.priority,
                mark_text(m, k),
                table_text(r.table)
            );
            w.ok("rule", vec![line]);
            Some(r)
        }
    };
    route(w, mark, rule)
}

/// The broken route step of a group routed `via` an interface (its `"route"`): the
/// route in its table is missing because the interface is down or not there yet
/// (the kernel drops the routes of a link that goes down).
fn via_down(w: &mut Walk<'_>, table: u32) -> Option<bool> {
    let g = w.input.cfg.group(&w.group)?;
    let via = g.route.as_ref()?.via.clone();
    let fix = format!(
        "bring {via} up (or create it): the route via {via} in table {table} is made by the next load once it is (`render --load-only` loads now)"
    );
    Some(w.broken(
        "route",
        format!("{via} is down or does not exist (no route via it in table {table})"),
        fix,
    ))
}

fn route(w: &mut Walk<'_>, mark: Mark, rule: Option<Rule>) -> bool {
    let v6 = w.addr.is_ipv6();
    let op = w.input.openwrt;
    let table = rule.map_or(100, |r| r.table);
    let r: Route = match w.kernel.route(w.addr, mark.value) {
        Err(why) => {
            w.skip("route", why);
            return true;
        }
        Ok(Err(e)) => {
            if let Some(b) = via_down(w, table) {
                return b;
            }
            let fix = super::render::route_fix(op, v6, table);
            return w.broken(
                "route",
                format!("no route for it with mark {:#x} ({e})", mark.value),
                fix,
            );
        }
        Ok(Ok(r)) => r,
    };
    let (dev, up, carrier) = r
        .link
        .clone()
        .unwrap_or_else(|| ("a link that is gone".into(), false, false));
    if rule.is_some_and(|x| x.table != r.table) {
        if let Some(b) = via_down(w, table) {
            return b;
        }
        let fix = super::render::route_fix(op, v6, table);
        let p = format!(
            "table {} has no route for it (the kernel takes table {}'s, via {dev})",
            table_text(table),
            table_text(r.table)
        );
        return w.broken("route", p, fix);
    }
    if !up || !carrier {
        let fix = super::render::link_fix(op, &dev, up);
        let why = if up { " (no carrier)" } else { "" };
        return w.broken("route", format!("{dev} is down{why}"), fix);
    }
    let via = r.gateway.map(|g| format!("via {g} ")).unwrap_or_default();
    w.ok(
        "route",
        vec![format!(
            "{via}dev {dev} from table {}; {dev} is up",
            table_text(r.table)
        )],
    );
    w.ctx = format!(
        "routed via {dev} (group {}, mark {:#x}, table {})",
        w.group,
        mark.value,
        table_text(r.table)
    );
    true
}
