//! The answer as text (the CLI) and JSON (the API and `--json`), and the fixes in
//! the words of the system: `ip rule` and `ip route`, or on OpenWrt netifd's
//! `config rule` and `config route` (which survive a reboot and `ifup`).

use super::{Explained, State};
use crate::inspect::{push_field, push_json};

/// The fix for a missing rule for mark `mark` (`0x100/0xff00`), to table `t`.
pub(super) fn rule_fix(openwrt: bool, v6: bool, mark: &str, t: u32) -> String {
    if openwrt {
        let six = if v6 { "6" } else { "" };
        format!(
            "add a netifd rule to /etc/config/network: `config rule{six}` with `option mark '{mark}'` and `option lookup '{t}'`, then `/etc/init.d/network reload`"
        )
    } else {
        let six = if v6 { " -6" } else { "" };
        format!("add `ip{six} rule add fwmark {mark} table {t}`")
    }
}

/// The fix for a table `t` without a route for the address.
pub(super) fn route_fix(openwrt: bool, v6: bool, t: u32) -> String {
    let (six, all) = if v6 { ("6", "::/0") } else { ("", "0.0.0.0/0") };
    if openwrt {
        format!(
            "add a netifd route to /etc/config/network: `config route{six}` with `option interface` (the tunnel's), `option target '{all}'` and `option table '{t}'`, then `/etc/init.d/network reload`"
        )
    } else {
        let six = if v6 { " -6" } else { "" };
        format!("add a route to table {t}, e.g. `ip{six} route add default dev IFACE table {t}` (IFACE: the tunnel)")
    }
}

/// The fix for a link that is down (`up`: administratively up, without carrier).
pub(super) fn link_fix(openwrt: bool, dev: &str, up: bool) -> String {
    match (up, openwrt) {
        (true, _) => format!("{dev} has no carrier: check its cable, peer or tunnel"),
        (false, true) => format!("bring {dev} up: `ifup` its netifd interface"),
        (false, false) => format!("bring {dev} up: `ip link set {dev} up`"),
    }
}

fn state(s: State) -> &'static str {
    match s {
        State::Ok => "ok",
        State::Broken => "broken",
        State::Skipped => "skipped",
    }
}

/// The text of `explain`: a head line, a line per step (and per further thing it
/// found, and its fix), the verdict.
pub fn text(e: &Explained) -> String {
    let mut out = format!("{} (group {}):\n", e.query, e.group);
    for s in &e.steps {
        for (i, line) in s.found.iter().enumerate() {
            let (st, name) = if i == 0 {
                (state(s.state), s.name)
            } else {
                ("", "")
            };
            out.push_str(&format!("  {st:<8} {name:<7} {line}\n"));
        }
        if let Some(f) = &s.fix {
            out.push_str(&format!("{:19}fix: {f}\n", ""));
        }
    }
    out.push_str(&e.verdict);
    out.push('\n');
    out
}

/// The JSON of `GET /explain` and `explain --json`:
/// `{"query":..,"group":..,"routed":..,"verdict":..,"steps":[{"step":..,"state":"ok",
/// "found":[..],"fix":..}],"lookup":{what GET /lookup answers}}` and a newline.
pub fn json(e: &Explained) -> Vec<u8> {
    let mut out = Vec::with_capacity(512 + e.lookup.len());
    out.push(b'{');
    push_field(&mut out, "query", &e.query);
    out.push(b',');
    push_field(&mut out, "group", &e.group);
    out.extend_from_slice(if e.routed() {
        b",\"routed\":true,"
    } else {
        b",\"routed\":false,"
    });
    push_field(&mut out, "verdict", &e.verdict);
    out.extend_from_slice(b",\"steps\":[");
    for (i, s) in e.steps.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'{');
        push_field(&mut out, "step", s.name);
        out.push(b',');
        push_field(&mut out, "state", state(s.state));
        out.extend_from_slice(b",\"found\":[");
        for (j, f) in s.found.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            push_json(&mut out, f);
        }
        out.push(b']');
        if let Some(f) = &s.fix {
            out.push(b',');
            push_field(&mut out, "fix", f);
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"],\"lookup\":");
    out.extend_from_slice(&e.lookup);
    out.extend_from_slice(b"}\n");
    out
}
