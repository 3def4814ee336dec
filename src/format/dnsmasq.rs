//! The `dnsmasq` output's file: `nftset=` (or `ipset=`) lines that make dnsmasq add
//! every address it resolves for a group's host names, and their subdomains, to that
//! group's dns sets (`<set>_dns_v4`, `<set>_dns_v6`). Pure: names in, text out.
//!
//! dnsmasq's rules shape the file:
//! * it honours only the first line that names a domain, so each domain is written
//!   once, with the sets of every group that names it;
//! * a line for a domain also covers its subdomains, and for a name the longest
//!   matching domain wins alone: the line of `x.video.example` must therefore also
//!   carry the sets of a group that lists `video.example`, and it is left out when
//!   the parent's line already says the same;
//! * it reads lines of at most 1,024 bytes, so long lines are split (each domain in
//!   exactly one of them).

use crate::util::map::SortedMap;
use std::fmt::Write as _;

use super::Family;

/// The longest line written, without its newline.
pub const DNSMASQ_MAX_LINE: usize = 1023;

/// The first line of every file: no timestamp, so that an unchanged list gives an
/// unchanged file (and no dnsmasq restart).
pub const DNSMASQ_HEADER: &str =
    "# Written by ripe-cidr-collector (the dnsmasq output); changes here are overwritten.\n";

/// The default timeout of the elements dnsmasq adds: a day, far above the TTLs of
/// the names it resolves. dnsmasq re-adding an address does not restart its timeout,
/// so an address in use leaves the set after this time until the next answer that
/// dnsmasq forwards for it adds it again.
pub const DEFAULT_DNS_TIMEOUT_SECONDS: u32 = 86_400;

/// Where the addresses of one group's names go: its nftables table and set base name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct DnsTarget {
    /// nftables table (`inet <table>`); not part of `ipset=` lines.
    pub table: String,
    /// Base set name: the lines name `<set>_dns_v4` and `<set>_dns_v6`.
    pub set: String,
}

/// How the lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DnsmasqOptions {
    /// One family's sets only, or both when `None`.
    pub family: Option<Family>,
    /// `ipset=` lines (fw3 routers with ipset) instead of `nftset=`.
    pub ipset: bool,
}

/// A domain whose line cannot be kept under [`DNSMASQ_MAX_LINE`] even alone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("domain {domain:?}: its dnsmasq line, with the sets of {groups} groups, is {len} characters long, over the {DNSMASQ_MAX_LINE} dnsmasq reads; name it in fewer groups")]
pub struct DnsmasqLineTooLong {
    /// The domain.
    pub domain: String,
    /// How many groups' sets its line names.
    pub groups: usize,
    /// The line's length.
    pub len: usize,
}

/// The name of the set dnsmasq fills for base set `set` and `family`.
pub fn dns_set_name(set: &str, family: Family) -> String {
    match family {
        Family::V4 => format!("{set}_dns_v4"),
        Family::V6 => format!("{set}_dns_v6"),
    }
}

/// The file for `groups`: each target with the (valid, lower-case) host names whose
/// addresses go to its sets. Deterministic: the same input gives the same bytes.
pub fn render_dnsmasq(
    groups: &[(DnsTarget, Vec<String>)],
    opts: DnsmasqOptions,
) -> Result<String, DnsmasqLineTooLong> {
    let mut targets: Vec<&DnsTarget> = groups.iter().map(|g| &g.0).collect();
    crate::util::sort::sort(&mut targets);
    targets.dedup();
    let index = |t: &DnsTarget| targets.iter().position(|x| *x == t).unwrap_or(0);
    // The sets of a name as the sorted indexes of their targets in `targets`.
    let mut own: SortedMap<&str, Vec<usize>> = SortedMap::new();
    for (target, names) in groups {
        let i = index(target);
        for name in names {
            let sets = own.get_or_insert_with(name.as_str(), Vec::new);
            if let Err(at) = sets.binary_search(&i) {
                sets.insert(at, i);
            }
        }
    }
    let mut lines: SortedMap<Vec<usize>, Vec<&str>> = SortedMap::new();
    for (name, sets) in &own {
        if let Some(all) = needs_line(name, sets, &own) {
            lines.get_or_insert_with(all, Vec::new).push(name);
        }
    }
    let mut out = String::from(DNSMASQ_HEADER);
    for (sets, names) in &lines {
        let spec = spec(sets.iter().map(|&i| targets[i]), opts);
        write_lines(&mut out, &spec, names, opts, sets.len())?;
    }
    Ok(out)
}

/// The sets a line for `name` must carry (its own and those of every listed parent
/// domain), or `None` when a listed parent's line says the same already. Sets are
/// sorted index lists, compared as `BTreeSet`s would be.
fn needs_line(name: &str, sets: &[usize], own: &SortedMap<&str, Vec<usize>>) -> Option<Vec<usize>> {
    // The nearest listed parent's line carries its own sets and those of its
    // parents, which are this name's parents too: the union over all parents.
    let mut parents: Option<Vec<usize>> = None;
    // Every parent domain: the suffixes after each dot.
    for (at, _) in name.match_indices('.') {
        if let Some(p) = own.get(&name[at + 1..]) {
            let all = parents.get_or_insert_with(Vec::new);
            all.extend_from_slice(p);
            crate::util::sort::sort(all);
            all.dedup();
        }
    }
    match parents {
        Some(p) if sets.iter().all(|i| p.binary_search(i).is_ok()) => None,
        Some(mut p) => {
            p.extend_from_slice(sets);
            crate::util::sort::sort(&mut p);
            p.dedup();
            Some(p)
        }
        None => Some(sets.to_vec()),
    }
}

/// The part after the domains: `4#inet#T#S_dns_v4,6#inet#T#S_dns_v6,...` (nftset)
/// or `S_dns_v4,S_dns_v6,...` (ipset).
fn spec<'a>(targets: impl Iterator<Item = &'a DnsTarget>, opts: DnsmasqOptions) -> String {
    let mut parts = Vec::new();
    for t in targets {
        for (fam, digit) in [(Family::V4, '4'), (Family::V6, '6')] {
            if opts.family.is_some_and(|f| f != fam) {
                continue;
            }
            let name = dns_set_name(&t.set, fam);
            parts.push(match opts.ipset {
                true => name,
                false => format!("{digit}#inet#{}#{name}", t.table),
            });
        }
    }
    parts.join(",")
}

/// Writes `names` in as few lines as fit [`DNSMASQ_MAX_LINE`], each ending in `spec`.
fn write_lines(
    out: &mut String,
    spec: &str,
    names: &[&str],
    opts: DnsmasqOptions,
    groups: usize,
) -> Result<(), DnsmasqLineTooLong> {
    let key = if opts.ipset { "ipset=" } else { "nftset=" };
    // `key` + `/name` per name + `/` + spec.
    let fixed = key.len() + 1 + spec.len();
    let mut line: Vec<&str> = Vec::new();
    let mut len = fixed;
    for name in names {
        let add = name.len() + 1;
        if fixed + add > DNSMASQ_MAX_LINE {
            return Err(DnsmasqLineTooLong {
                domain: (*name).to_string(),
                groups,
                len: fixed + add,
            });
        }
        if len + add > DNSMASQ_MAX_LINE {
            flush_line(out, key, &line, spec);
            line.clear();
            len = fixed;
        }
        line.push(name);
        len += add;
    }
    if !line.is_empty() {
        flush_line(out, key, &line, spec);
    }
    Ok(())
}

fn flush_line(out: &mut String, key: &str, names: &[&str], spec: &str) {
    out.push_str(key);
    for n in names {
        let _ = write!(out, "/{n}");
    }
    let _ = writeln!(out, "/{spec}");
}

#[cfg(test)]
mod tests;
