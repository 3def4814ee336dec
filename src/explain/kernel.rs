//! The kernel reads of the walk over netlink (`nftnl::probe`). nf_tables wants
//! CAP_NET_ADMIN even to read: without it those steps are skipped, saying so; the
//! rtnetlink reads (rules, routes, links) need no privilege.

use std::io;
use std::net::IpAddr;

use super::{Kernel, Marking, Route, Rule, Skip};
use crate::nftnl::probe;

pub(super) struct Netlink;

fn skip(e: io::Error) -> Skip {
    Skip(match e.raw_os_error() {
        Some(libc::EPERM) => "reading nf_tables needs CAP_NET_ADMIN (run as root)".into(),
        Some(libc::EPROTONOSUPPORT | libc::EAFNOSUPPORT) => {
            format!("the kernel has no nf_tables ({e})")
        }
        _ => format!("the kernel did not answer: {e}"),
    })
}

impl Kernel for Netlink {
    fn set_holds(&self, table: &str, set: &str, addr: IpAddr) -> Result<Option<bool>, Skip> {
        probe::set_holds(table, set, addr).map_err(skip)
    }

    fn chain(&self, table: &str, chain: &str) -> Result<Option<Vec<Marking>>, Skip> {
        let rules = probe::chain_marks(table, chain).map_err(skip)?;
        Ok(rules.map(|v| {
            v.into_iter()
                .map(|m| Marking {
                    value: m.value,
                    mask: m.mask,
                    packets: m.packets.unwrap_or(0),
                })
                .collect()
        }))
    }

    fn rule(&self, v6: bool, mark: u32) -> Result<Option<Rule>, Skip> {
        let r = probe::rule_for_mark(v6, mark).map_err(skip)?;
        Ok(r.map(|r| Rule {
            priority: r.priority,
            table: r.table,
            fwmark: (r.fwmark, r.fwmask),
        }))
    }

    fn route(&self, addr: IpAddr, mark: u32) -> Result<Result<Route, String>, Skip> {
        let r = match probe::route(addr, mark) {
            Ok(r) => r,
            // No route (unreachable, prohibited): an answer, not a failure to ask.
            Err(e) if e.raw_os_error().is_some_and(|n| n != libc::EPERM) => {
                return Ok(Err(e.to_string()))
            }
            Err(e) => return Err(skip(e)),
        };
        let link = probe::link(r.oif).map_err(skip)?;
        Ok(Ok(Route {
            table: r.table,
            gateway: r.gateway,
            link: link.map(|l| (l.name, l.up, l.carrier)),
        }))
    }
}
