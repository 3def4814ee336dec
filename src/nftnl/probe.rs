//! What `explain` reads from the kernel, over netlink only: whether a set holds an
//! address, what a mark chain sets and counted, the policy rule for a mark, the route
//! of a marked packet and the state of its link. Each function sends one request
//! (`msg::get`) and reads its answer (`read`); an object that does not exist is
//! `None` (ENOENT), other errors come back as the kernel's errno (EPERM without
//! CAP_NET_ADMIN, which nf_tables requires even to read; the rtnetlink reads need
//! none).

use std::io;
use std::net::IpAddr;

use super::msg::{read_mark_rule, Batch, MarkSet};
use super::read::{attr, attr_u32, exchange, ne_u32};

const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
const FRA_PRIORITY: u16 = 6;
const FRA_FWMARK: u16 = 10;
const FRA_TABLE: u16 = 15;
const FRA_FWMASK: u16 = 16;
const FR_ACT_TO_TBL: u8 = 1;
const FIB_RULE_INVERT: u32 = 0x2;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_TABLE: u16 = 15;
const IFLA_IFNAME: u16 = 3;
const IFF_UP: u32 = 0x1;
const IFF_LOWER_UP: u32 = 0x1_0000;

/// One request, its answer's payloads; ENOENT (no such table, set, chain or
/// element) is `None`.
fn ask(proto: libc::c_int, b: Batch, dump: bool) -> io::Result<Option<Vec<Vec<u8>>>> {
    match exchange(proto, &b.into_bytes(), dump) {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        r => r.map(Some),
    }
}

fn family(addr: &IpAddr) -> (u8, Vec<u8>) {
    match addr {
        IpAddr::V4(a) => (AF_INET, a.octets().to_vec()),
        IpAddr::V6(a) => (AF_INET6, a.octets().to_vec()),
    }
}

/// Whether set `inet <table> <set>` exists (its elements are not read).
pub fn set_exists(table: &str, set: &str) -> io::Result<bool> {
    let mut b = Batch::request();
    b.get_set(table, set);
    Ok(ask(libc::NETLINK_NETFILTER, b, false)?.is_some())
}

/// Whether set `inet <table> <set>` holds `addr` (in one of its intervals);
/// `None` when there is no such set.
pub fn set_holds(table: &str, set: &str, addr: IpAddr) -> io::Result<Option<bool>> {
    let mut b = Batch::request();
    b.get_set(table, set);
    if ask(libc::NETLINK_NETFILTER, b, false)?.is_none() {
        return Ok(None);
    }
    let mut b = Batch::request();
    b.get_element(table, set, &family(&addr).1);
    Ok(Some(ask(libc::NETLINK_NETFILTER, b, false)?.is_some()))
}

/// The marks the rules of chain `inet <table> <chain>` set, with their counters;
/// `None` when there is no such chain.
pub fn chain_marks(table: &str, chain: &str) -> io::Result<Option<Vec<MarkSet>>> {
    let mut b = Batch::request();
    b.get_chain(table, chain);
    if ask(libc::NETLINK_NETFILTER, b, false)?.is_none() {
        return Ok(None);
    }
    let mut b = Batch::request();
    b.dump_chain_rules(table, chain);
    let rules = ask(libc::NETLINK_NETFILTER, b, true)?.unwrap_or_default();
    // Each payload: nfgenmsg (4 bytes), then the rule's attributes.
    Ok(Some(
        rules
            .iter()
            .filter_map(|r| read_mark_rule(r.get(4..)?))
            .collect(),
    ))
}

/// A policy routing rule (`ip rule`) that sends marked packets to a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRule {
    /// Its priority (`ip rule` lists them in this order).
    pub priority: u32,
    /// The table it looks up.
    pub table: u32,
    /// The fwmark it matches.
    pub fwmark: u32,
    /// Its mask (all bits when the rule gives none).
    pub fwmask: u32,
}

/// The first rule (by priority) of the address family of `v6` that sends a packet
/// with mark `mark` to a table: its fwmark/mask matches and it is not inverted.
pub fn rule_for_mark(v6: bool, mark: u32) -> io::Result<Option<IpRule>> {
    let mut b = Batch::request();
    b.dump_rules(if v6 { AF_INET6 } else { AF_INET });
    let rules = ask(libc::NETLINK_ROUTE, b, true)?.unwrap_or_default();
    let mut best: Option<IpRule> = None;
    for r in &rules {
        // fib_rule_hdr: table at 4, action at 7, flags at 8..12.
        let (Some(hdr), Some(rest)) = (r.get(..12), r.get(12..)) else {
            continue;
        };
        if hdr[7] != FR_ACT_TO_TBL || ne_u32(&hdr[8..]).unwrap_or(0) & FIB_RULE_INVERT != 0 {
            continue;
        }
        let get = |k: u16| attr_u32(rest, k);
        let Some(fwmark) = get(FRA_FWMARK) else {
            continue;
        };
        let rule = IpRule {
            priority: get(FRA_PRIORITY).unwrap_or(0),
            table: get(FRA_TABLE).unwrap_or(u32::from(hdr[4])),
            fwmark,
            fwmask: get(FRA_FWMASK).unwrap_or(u32::MAX),
        };
        if mark & rule.fwmask == fwmark && best.is_none_or(|b| rule.priority < b.priority) {
            best = Some(rule);
        }
    }
    Ok(best)
}

/// The kernel's route for a packet (`ip route get ADDR mark M`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// The table it came from.
    pub table: u32,
    /// Its gateway, if any.
    pub gateway: Option<IpAddr>,
    /// The index of its output link.
    pub oif: u32,
}

/// The route of a packet to `addr` that carries mark `mark`; ENETUNREACH (and
/// the like) when there is none.
pub fn route(addr: IpAddr, mark: u32) -> io::Result<Route> {
    let (fam, bytes) = family(&addr);
    let mut b = Batch::request();
    b.get_route(fam, &bytes, mark);
    let answer = exchange(libc::NETLINK_ROUTE, &b.into_bytes(), false)?;
    let r = answer.first().map_or(&[][..], |r| &r[..]);
    let (Some(hdr), Some(rest)) = (r.get(..12), r.get(12..)) else {
        return Err(io::Error::other("short route answer"));
    };
    let get = |k: u16| attr(rest, k);
    let gateway = get(RTA_GATEWAY).and_then(|g| match g.len() {
        4 => <[u8; 4]>::try_from(g).ok().map(IpAddr::from),
        16 => <[u8; 16]>::try_from(g).ok().map(IpAddr::from),
        _ => None,
    });
    Ok(Route {
        table: get(RTA_TABLE).and_then(ne_u32).unwrap_or(u32::from(hdr[4])),
        gateway,
        oif: get(RTA_OIF).and_then(ne_u32).unwrap_or(0),
    })
}

/// A link's name and state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// `wg0`.
    pub name: String,
    /// Administratively up (`ip link set up`).
    pub up: bool,
    /// With carrier (`LOWER_UP`): a cable, a peer, a tunnel that works.
    pub carrier: bool,
}

/// The link with index `index`; `None` when there is none.
pub fn link(index: u32) -> io::Result<Option<Link>> {
    let mut b = Batch::request();
    b.get_link(index);
    let answer = match exchange(libc::NETLINK_ROUTE, &b.into_bytes(), false) {
        Err(e) if e.raw_os_error() == Some(libc::ENODEV) => return Ok(None),
        r => r?,
    };
    let r = answer.first().map_or(&[][..], |r| &r[..]);
    let flags = r.get(8..12).and_then(ne_u32).unwrap_or(0);
    let name = attr(r.get(16..).unwrap_or(&[]), IFLA_IFNAME)
        .map(|a| {
            String::from_utf8_lossy(a)
                .trim_end_matches('\0')
                .to_string()
        })
        .unwrap_or_else(|| format!("link {index}"));
    Ok(Some(Link {
        name,
        up: flags & IFF_UP != 0,
        carrier: flags & IFF_LOWER_UP != 0,
    }))
}
