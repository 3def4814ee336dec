//! `explain ADDR [--group NAME]` and `GET /explain?ip=ADDR`: why an address is, or is
//! not, routed. Five steps, each with what it found, up to the first broken link and
//! its fix, then one verdict line:
//!
//! 1. stored: the values of the group's sources that hold it (`lookup`), and whether
//!    an exclusion hides it;
//! 2. kernel: whether the group's sets (the `load` output's, dnsmasq's `_dns` ones)
//!    hold it;
//! 3. mark: the group's mark chains, the mark they set and what they counted;
//! 4. rule: the `ip rule` for that mark and its table;
//! 5. route: the kernel's route for the address with the mark, and its link's state.
//!
//! The walk (`walk`) is a pure core over a [`Kernel`] that answers the reads; the
//! Linux one (`kernel`) asks over netlink (`nftnl::probe`), a build without it skips
//! the kernel steps and says why. One answer serves the CLI and the API, so that
//! `--json` prints the bytes `GET /explain` sends.

use std::net::IpAddr;

use crate::config::Config;
use crate::inspect::lookup::{self, Query};
use crate::inspect::BadInput;

#[cfg(all(feature = "collect", target_os = "linux"))]
mod kernel;
mod render;
#[cfg(test)]
mod tests;
mod walk;

pub use render::{json, text};

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// This link holds.
    Ok,
    /// This link is broken: the walk stops here.
    Broken,
    /// Not checked (no CAP_NET_ADMIN, a build without the kernel parts).
    Skipped,
}

/// One step of the walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// `stored`, `kernel`, `mark`, `rule` or `route`.
    pub name: &'static str,
    /// How it ended.
    pub state: State,
    /// What it found, one line each.
    pub found: Vec<String>,
    /// What repairs a broken link, one line.
    pub fix: Option<String>,
}

/// The whole answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explained {
    /// The address, canonical.
    pub query: String,
    /// The group followed.
    pub group: String,
    /// The steps walked, up to the first broken one.
    pub steps: Vec<Step>,
    /// The one line that sums it up.
    pub verdict: String,
    /// `GET /lookup`'s answer for the address (what step 1 is made of), JSON.
    pub lookup: Vec<u8>,
}

impl Explained {
    /// Whether every step holds: routed as configured (exit 0).
    pub fn routed(&self) -> bool {
        self.steps.iter().all(|s| s.state == State::Ok)
    }
}

/// The mark a chain rule sets, and what it counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marking {
    /// The mark value.
    pub value: u32,
    /// The bits it changes.
    pub mask: u32,
    /// Packets counted.
    pub packets: u64,
}

/// A policy rule for a mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// Its priority.
    pub priority: u32,
    /// The table it looks up.
    pub table: u32,
    /// Its fwmark and mask.
    pub fwmark: (u32, u32),
}

/// The kernel's route of a marked packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The table it came from.
    pub table: u32,
    /// Its gateway.
    pub gateway: Option<IpAddr>,
    /// Its link: name, administratively up, with carrier (`None`: no such link).
    pub link: Option<(String, bool, bool)>,
}

/// Why the kernel could not be asked: the step is skipped with this reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip(pub String);

/// The reads the walk needs from the kernel.
pub trait Kernel {
    /// Whether `inet <table> <set>` holds `addr`; `None`: no such set.
    fn set_holds(&self, table: &str, set: &str, addr: IpAddr) -> Result<Option<bool>, Skip>;
    /// The marks the rules of a chain set; `None`: no such chain.
    fn chain(&self, table: &str, chain: &str) -> Result<Option<Vec<Marking>>, Skip>;
    /// The first policy rule that sends a packet with `mark` to a table.
    fn rule(&self, v6: bool, mark: u32) -> Result<Option<Rule>, Skip>;
    /// The route of a packet to `addr` with `mark`; `Err` text: why there is none.
    fn route(&self, addr: IpAddr, mark: u32) -> Result<Result<Route, String>, Skip>;
}

/// The kernel of a build without the kernel parts: every read is skipped.
pub struct NoKernel;

impl Kernel for NoKernel {
    fn set_holds(&self, _: &str, _: &str, _: IpAddr) -> Result<Option<bool>, Skip> {
        Err(no_kernel())
    }
    fn chain(&self, _: &str, _: &str) -> Result<Option<Vec<Marking>>, Skip> {
        Err(no_kernel())
    }
    fn rule(&self, _: bool, _: u32) -> Result<Option<Rule>, Skip> {
        Err(no_kernel())
    }
    fn route(&self, _: IpAddr, _: u32) -> Result<Result<Route, String>, Skip> {
        Err(no_kernel())
    }
}

fn no_kernel() -> Skip {
    Skip("this build has no kernel reads (they need Linux and the `collect` feature)".into())
}

/// The kernel of this build: netlink on Linux with `collect`, else none.
pub fn system_kernel() -> Box<dyn Kernel> {
    #[cfg(all(feature = "collect", target_os = "linux"))]
    return Box::new(kernel::Netlink);
    #[cfg(not(all(feature = "collect", target_os = "linux")))]
    return Box::new(NoKernel);
}

/// Whether this is an OpenWrt system, whose fixes name netifd's `config rule` and
/// `config route` instead of `ip rule` and `ip route`: `/etc/openwrt_release` exists
/// (`$RIPE_OPENWRT_RELEASE` names another file, for tests).
pub fn on_openwrt() -> bool {
    let path =
        std::env::var_os("RIPE_OPENWRT_RELEASE").unwrap_or_else(|| "/etc/openwrt_release".into());
    std::path::Path::new(&path).is_file()
}

/// Parses the address of `explain` (an address, not a prefix).
pub fn parse_address(s: &str) -> Result<Query, BadInput> {
    let q = Query::parse(s)?;
    if !q.bare {
        return Err(BadInput(format!(
            "{:?} is a prefix; explain follows one address (e.g. 149.154.167.99)",
            q.text()
        )));
    }
    Ok(q)
}

/// What the walk is given besides the kernel.
pub struct Input<'a> {
    /// The configuration.
    pub cfg: &'a Config,
    /// The daemon's `status.json`, to say when the outputs last ran.
    pub status: Option<&'a crate::status::Status>,
    /// The group asked for (`None`: the first that lists the address).
    pub group: Option<&'a str>,
    /// OpenWrt's fixes.
    pub openwrt: bool,
}

/// Explains `q` from the stored rows `found` and the kernel.
pub fn explain(
    q: &Query,
    found: &lookup::Found,
    input: &Input<'_>,
    kernel: &dyn Kernel,
) -> Result<Explained, BadInput> {
    if let Some(g) = input.group {
        input
            .cfg
            .check_group(g)
            .map_err(|e| BadInput(e.to_string()))?;
        if g == crate::format::ALL_GROUPS {
            return Err(BadInput(
                "explain follows one group: name it, not '*'".into(),
            ));
        }
    }
    let mut lookup = lookup::render(q, found, input.cfg, true);
    lookup.pop(); // its newline
    Ok(walk::walk(q, found, input, kernel, lookup))
}
