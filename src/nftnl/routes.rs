//! A group's route kept over rtnetlink: the policy rule `fwmark MARK/MASK lookup
//! TABLE` (IPv4 and IPv6) and a default route via the group's interface in TABLE.
//!
//! What the program made is told apart by a mark of its own, so that no foreign
//! rule or route is ever touched: its rules have a priority in [`PRIORITIES`], its
//! routes the protocol number [`RTPROT_OURS`]. A sync reads both back, adds what is
//! missing, leaves what is there and deletes its own that no group wants any more
//! (the plan is a pure function, [`plan`]).

use std::io;
use std::net::IpAddr;
use std::ops::RangeInclusive;

use super::msg::route::{
    FRA_FWMARK, FRA_FWMASK, FRA_PRIORITY, FRA_TABLE, FR_ACT_TO_TBL, RTA_GATEWAY, RTA_OIF, RTA_TABLE,
};
use super::msg::{Batch, RouteSpec, RuleSpec, RTPROT_OURS};
use super::read::{attr, attr_u32, exchange};
use crate::config::{Mark, Route};

const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;

/// The priorities of the program's rules: before `main` (32766) and the usual
/// priorities of pbr and mwan3 (1000-2000, 30000+), never used for foreign rules.
pub const PRIORITIES: RangeInclusive<u32> = 27000..=27999;

/// The priority of the rule of `table`: one per table, inside [`PRIORITIES`].
pub fn priority(table: u32) -> u32 {
    PRIORITIES.start() + table % 1000
}

/// One group's route, its table chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRoute {
    pub group: String,
    pub mark: Mark,
    pub route: Route,
    pub table: u32,
}

/// The routes of `cfg`'s groups whose table is chosen (a route made always has one:
/// the table is written into the file first).
pub fn wanted(cfg: &crate::config::Config) -> Vec<GroupRoute> {
    cfg.groups
        .iter()
        .filter_map(|g| {
            let route = g.route.clone()?;
            Some(GroupRoute {
                group: g.name.clone(),
                mark: g.mark?,
                table: route.table?,
                route,
            })
        })
        .collect()
}

/// What a sync found wrong with a group: the rule or route could not be written
/// (an error), or its interface is missing or down (a warning: it may come later).
#[derive(Debug, Default)]
pub struct Synced {
    /// Per group: why its rule or route is not in place.
    pub failed: Vec<(String, String)>,
    /// Per group: interfaces that are missing or down.
    pub warnings: Vec<(String, String)>,
}

/// The plan for one kind of object: what to delete, what to add.
pub fn plan<T: PartialEq + Clone>(ours: &[T], wanted: &[T]) -> (Vec<T>, Vec<T>) {
    let del = ours
        .iter()
        .filter(|o| !wanted.contains(o))
        .cloned()
        .collect();
    let mut add: Vec<T> = Vec::new();
    for w in wanted {
        if !ours.contains(w) && !add.contains(w) {
            add.push(w.clone());
        }
    }
    (del, add)
}

fn family_of(v6: bool) -> u8 {
    if v6 {
        AF_INET6
    } else {
        AF_INET
    }
}

/// The rules a set of group routes wants for one family.
pub fn wanted_rules(routes: &[GroupRoute], v6: bool) -> Vec<(String, RuleSpec)> {
    routes
        .iter()
        .filter(|g| g.route.carries(v6))
        .map(|g| {
            let spec = RuleSpec {
                family: family_of(v6),
                priority: priority(g.table),
                mark: g.mark.value,
                mask: g.mark.mask,
                table: g.table,
            };
            (g.group.clone(), spec)
        })
        .collect()
}

fn gateway_bytes(g: &IpAddr) -> Vec<u8> {
    match g {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// The index of interface `name`, 0 when there is none.
fn index_of(name: &str) -> u32 {
    let Ok(c) = std::ffi::CString::new(name) else {
        return 0;
    };
    // SAFETY: a NUL-terminated string that outlives the call.
    unsafe { libc::if_nametoindex(c.as_ptr()) }
}

/// The program's rules of one family in the kernel (priority in its range).
fn our_rules(family: u8) -> io::Result<Vec<RuleSpec>> {
    let mut b = Batch::request();
    b.dump_rules(family);
    let mut out = Vec::new();
    for r in exchange(libc::NETLINK_ROUTE, &b.into_bytes(), true)? {
        let (Some(hdr), Some(rest)) = (r.get(..12), r.get(12..)) else {
            continue;
        };
        let priority = attr_u32(rest, FRA_PRIORITY).unwrap_or(0);
        if hdr[7] != FR_ACT_TO_TBL || !PRIORITIES.contains(&priority) {
            continue;
        }
        let Some(mark) = attr_u32(rest, FRA_FWMARK) else {
            continue;
        };
        out.push(RuleSpec {
            family,
            priority,
            mark,
            mask: attr_u32(rest, FRA_FWMASK).unwrap_or(u32::MAX),
            table: attr_u32(rest, FRA_TABLE).unwrap_or(u32::from(hdr[4])),
        });
    }
    Ok(out)
}

/// Every route of one family: its table, protocol, prefix length, link and gateway.
fn routes(family: u8) -> io::Result<Vec<(u8, u8, RouteSpec)>> {
    let mut b = Batch::request();
    b.dump_routes(family);
    let mut out = Vec::new();
    for r in exchange(libc::NETLINK_ROUTE, &b.into_bytes(), true)? {
        let (Some(hdr), Some(rest)) = (r.get(..12), r.get(12..)) else {
            continue;
        };
        let spec = RouteSpec {
            family,
            table: attr_u32(rest, RTA_TABLE).unwrap_or(u32::from(hdr[4])),
            oif: attr_u32(rest, RTA_OIF).unwrap_or(0),
            gateway: attr(rest, RTA_GATEWAY).map(<[u8]>::to_vec),
        };
        out.push((hdr[5], hdr[1], spec));
    }
    Ok(out)
}

/// The tables any route of the kernel uses now (both families): those a new group
/// must not take.
pub fn tables_in_use() -> io::Result<Vec<u32>> {
    let mut t: Vec<u32> = Vec::new();
    for fam in [AF_INET, AF_INET6] {
        t.extend(routes(fam)?.into_iter().map(|r| r.2.table));
    }
    crate::util::sort::sort(&mut t);
    t.dedup();
    Ok(t)
}

/// Sends one write; EEXIST (an equal rule or route is there: left as it is) and,
/// for a delete, ENOENT/ESRCH (gone already) count as done.
fn write(add: bool, b: Batch) -> io::Result<()> {
    match exchange(libc::NETLINK_ROUTE, &b.into_bytes(), false) {
        Err(e) if add && e.raw_os_error() == Some(libc::EEXIST) => Ok(()),
        Err(e) if !add && matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ESRCH)) => Ok(()),
        r => r.map(drop),
    }
}

/// Brings the kernel's rules and routes to what `wanted` says, for both families.
/// Errors of reading the kernel fail every group; a write that fails fails its group
/// only.
pub fn sync(wanted: &[GroupRoute]) -> Synced {
    let mut s = Synced::default();
    // A table in foreign use is refused for both families alike.
    let refused = match refused(wanted) {
        Ok(r) => r,
        Err(e) => {
            let e = format!("reading the kernel's rules and routes: {e}");
            s.failed
                .extend(wanted.iter().map(|g| (g.group.clone(), e.clone())));
            return s;
        }
    };
    for g in wanted.iter().filter(|g| refused.contains(&g.group)) {
        s.failed.push((g.group.clone(), format!(
            "table {} holds routes the program did not make: give group {} another \"table\" in its \"route\"",
            g.table, g.group
        )));
    }
    let wanted: Vec<GroupRoute> = wanted
        .iter()
        .filter(|g| !refused.contains(&g.group))
        .cloned()
        .collect();
    for v6 in [false, true] {
        if let Err(e) = sync_family(&wanted, v6, &mut s) {
            let e = format!("reading the kernel's rules and routes: {e}");
            s.failed
                .extend(wanted.iter().map(|g| (g.group.clone(), e.clone())));
        }
    }
    s
}

/// The groups of `wanted` whose table holds routes the program did not make while
/// nothing of the program's is there yet: a table in someone else's use is refused.
fn foreign_tables(
    wanted: &[GroupRoute],
    all: &[(u8, u8, RouteSpec)],
    rules: &[RuleSpec],
) -> Vec<String> {
    wanted
        .iter()
        .filter(|g| {
            let t = g.table;
            let ours = rules.iter().any(|r| r.table == t)
                || all.iter().any(|r| r.0 == RTPROT_OURS && r.2.table == t);
            !ours && all.iter().any(|r| r.0 != RTPROT_OURS && r.2.table == t)
        })
        .map(|g| g.group.clone())
        .collect()
}

/// The groups whose table is in foreign use, in either family.
fn refused(wanted: &[GroupRoute]) -> io::Result<Vec<String>> {
    let (mut all, mut rules) = (Vec::new(), Vec::new());
    for fam in [AF_INET, AF_INET6] {
        all.extend(routes(fam)?);
        rules.extend(our_rules(fam)?);
    }
    Ok(foreign_tables(wanted, &all, &rules))
}

/// The group whose route uses `table` ("" for none: a removed group's).
fn group_of(wanted: &[GroupRoute], table: u32) -> String {
    wanted
        .iter()
        .find(|g| g.table == table)
        .map_or_else(String::new, |g| g.group.clone())
}

/// The rules of one family: the program's own brought to what `wanted` says.
fn sync_rules(wanted: &[GroupRoute], v6: bool, s: &mut Synced) -> io::Result<()> {
    let ip = if v6 { "ip -6" } else { "ip" };
    let existing = our_rules(family_of(v6))?;
    let want: Vec<RuleSpec> = wanted_rules(wanted, v6).into_iter().map(|r| r.1).collect();
    let (del, add) = plan(&existing, &want);
    for (is_add, r) in del
        .iter()
        .map(|r| (false, r))
        .chain(add.iter().map(|r| (true, r)))
    {
        let mut b = Batch::request();
        b.rule(is_add, r);
        if let Err(e) = write(is_add, b) {
            let what = if is_add { "add" } else { "del" };
            let msg = format!(
                "`{ip} rule {what} fwmark {:#x}/{:#x} table {} priority {}`: {e}",
                r.mark, r.mask, r.table, r.priority
            );
            s.failed.push((group_of(wanted, r.table), msg));
        }
    }
    Ok(())
}

/// Rules, then routes, of one family.
fn sync_family(wanted: &[GroupRoute], v6: bool, s: &mut Synced) -> io::Result<()> {
    sync_rules(wanted, v6, s)?;
    let family = family_of(v6);
    let ip = if v6 { "ip -6" } else { "ip" };
    let all = routes(family)?;
    let mut want = Vec::new();
    for g in wanted.iter().filter(|g| g.route.carries(v6)) {
        match index_of(&g.route.via) {
            0 => s.warnings.push((
                g.group.clone(),
                format!(
                    "interface {} does not exist (yet): no route in table {} until it does",
                    g.route.via, g.table
                ),
            )),
            oif => want.push(RouteSpec {
                family,
                table: g.table,
                oif,
                gateway: g.route.gateway.as_ref().map(gateway_bytes),
            }),
        }
    }
    let ours: Vec<RouteSpec> = all
        .into_iter()
        .filter(|(proto, dst_len, _)| *proto == RTPROT_OURS && *dst_len == 0)
        .map(|r| r.2)
        .collect();
    let (del, add) = plan(&ours, &want);
    for (is_add, r) in del
        .iter()
        .map(|r| (false, r))
        .chain(add.iter().map(|r| (true, r)))
    {
        let mut b = Batch::request();
        b.route(is_add, r);
        match write(is_add, b) {
            Ok(()) => {}
            Err(e) if is_add && matches!(e.raw_os_error(), Some(libc::ENETDOWN | libc::ENODEV)) => {
                let via = wanted
                    .iter()
                    .find(|g| g.table == r.table)
                    .map_or("", |g| g.route.via.as_str());
                s.warnings.push((
                    group_of(wanted, r.table),
                    format!(
                        "interface {via} is down: no {ip} route in table {} until it is up",
                        r.table
                    ),
                ));
            }
            Err(e) => {
                let what = if is_add { "add" } else { "del" };
                s.failed.push((
                    group_of(wanted, r.table),
                    format!(
                        "`{ip} route {what} default table {} proto {RTPROT_OURS}`: {e}",
                        r.table
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(name: &str, mark: u32, table: u32, gateway: Option<&str>) -> GroupRoute {
        GroupRoute {
            group: name.into(),
            mark: Mark {
                value: mark,
                mask: 0xff00,
            },
            route: Route {
                via: "wg0".into(),
                gateway: gateway.map(|a| a.parse().unwrap()),
                table: Some(table),
            },
            table,
        }
    }

    #[test]
    fn plan_adds_the_missing_keeps_the_present_and_deletes_what_left() {
        let (del, add) = plan(&[1, 2, 3], &[2, 3, 4, 4]);
        assert_eq!((del, add), (vec![1], vec![4]));
        let (del, add) = plan(&[1, 2], &[1, 2]);
        assert!(del.is_empty() && add.is_empty());
    }

    #[test]
    fn rules_per_family_in_our_priority_range() {
        let routes = [
            g("vpn", 0x100, 100, None),
            g("v4only", 0x200, 101, Some("192.0.2.1")),
        ];
        let v4 = wanted_rules(&routes, false);
        let v6 = wanted_rules(&routes, true);
        assert_eq!(v4.len(), 2);
        assert_eq!(v6.len(), 1, "an IPv4 gateway carries no IPv6");
        assert_eq!(
            v4[0].1,
            RuleSpec {
                family: 2,
                priority: 27100,
                mark: 0x100,
                mask: 0xff00,
                table: 100
            }
        );
        assert!(PRIORITIES.contains(&priority(u32::MAX)));
    }
}
