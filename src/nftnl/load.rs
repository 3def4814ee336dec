//! One load: what each of our sets holds is read back from the kernel first, and the
//! batch then carries only what differs (or, when that is not smaller, a flush and
//! the whole list). Reading back, rather than remembering what we wrote, also sees
//! what someone else changed: an element deleted or added behind our back is just
//! part of the difference, so every load repairs the set (no full reload needed).

use std::io;

use super::diff::{self, Counts, Held, Side};
use super::msg::{self, elem_top, Batch, Elems};
use super::read::{self, SetInfo};
use super::sock::Socket;
use super::{budget, dns, transact, LoadError, LoadOptions, LoadStats};
use crate::format::{Family, Prepared};

/// What the load does to one of our sets.
enum Mode {
    /// Missing: created and filled. (A set of another type is refused by its NEWSET.)
    Fill,
    /// Flushed and filled: the difference would not be smaller.
    Flush,
    /// There with the other timeout flag: deleted and created again, filled.
    Recreate,
    /// Only the difference is sent: deletes, then adds.
    Diff(Held, Counts),
}

/// One of our sets: `<set>_v4` or `<set>_v6`.
struct Plan<'a> {
    name: String,
    v6: bool,
    p: &'a Prepared,
    mode: Mode,
}

impl Plan<'_> {
    fn key_len(&self) -> usize {
        if self.v6 {
            16
        } else {
            4
        }
    }

    fn top(&self) -> u128 {
        elem_top(self.key_len())
    }

    /// The set's ranges, as inclusive pairs of keys.
    fn ranges(&self) -> Box<dyn Iterator<Item = (u128, u128)> + '_> {
        match self.v6 {
            false => Box::new(self.p.v4.iter().map(|e| {
                let (a, b) = (e.net.network(), e.net.broadcast());
                (u128::from(u32::from(a)), u128::from(u32::from(b)))
            })),
            true => Box::new(
                self.p
                    .v6
                    .iter()
                    .map(|e| (u128::from(e.net.network()), u128::from(e.net.broadcast()))),
            ),
        }
    }

    /// The elements the set holds once loaded.
    fn count(&self) -> usize {
        let top = self.top();
        diff::wanted(self.ranges())
            .map(|u| diff::size(u, top))
            .sum()
    }
}

/// Whether the set as it is can be updated in place: interval flag and key as ours,
/// and the timeout flag as wanted (`Some(false)`: only that differs).
fn compatible(info: &SetInfo, v6: bool, timeout: bool) -> Option<bool> {
    let key = if v6 {
        (msg::TYPE_IP6ADDR, 16)
    } else {
        (msg::TYPE_IPADDR, 4)
    };
    let ours = info.flags & !msg::NFT_SET_TIMEOUT == msg::NFT_SET_INTERVAL
        && (info.key_type, info.key_len) == key;
    let same = (info.flags & msg::NFT_SET_TIMEOUT != 0) == timeout;
    ours.then_some(same)
}

/// Reads the set back and decides how to load it.
fn plan<'a>(
    s: &Socket,
    table: &str,
    name: String,
    v6: bool,
    p: &'a Prepared,
    timeout: bool,
) -> Result<Plan<'a>, LoadError> {
    let reading = |e: io::Error| match e.raw_os_error() {
        Some(libc::EPERM) => LoadError::Permission,
        _ => LoadError::Kernel(format!("reading set inet {table} {name}"), e),
    };
    let mut plan = Plan {
        name: name.clone(),
        v6,
        p,
        mode: Mode::Fill,
    };
    let info = read::set_info(s, table, &name).map_err(reading)?;
    plan.mode = match info.map(|i| compatible(&i, v6, timeout)) {
        None | Some(None) => Mode::Fill,
        Some(Some(false)) => Mode::Recreate,
        Some(Some(true)) => {
            let mut held = Held::default();
            read::elements(s, table, &name, &mut |k, end| held.push(k, end)).map_err(reading)?;
            held.sort();
            let top = plan.top();
            let c = diff::count(
                diff::diff(held.units(top), diff::wanted(plan.ranges())),
                top,
            );
            // The difference sends delete + add elements, a refill keep + add.
            if c.delete <= c.keep {
                Mode::Diff(held, c)
            } else {
                Mode::Flush
            }
        }
    };
    Ok(plan)
}

/// Adds the set's steps to the batch; returns the elements sent.
fn encode(batch: &mut Batch, table: &str, n: usize, plan: &Plan, timeout_ms: Option<u64>) -> usize {
    let key = if plan.v6 {
        (msg::TYPE_IP6ADDR, 16)
    } else {
        (msg::TYPE_IPADDR, 4)
    };
    let (name, kl, top) = (&plan.name, plan.key_len(), plan.top());
    if let Mode::Recreate = plan.mode {
        batch.del_set(table, name, n);
    }
    batch.set(table, name, key, n, timeout_ms.is_some());
    let add = Elems {
        delete: false,
        timeout_ms,
    };
    match &plan.mode {
        Mode::Fill | Mode::Recreate => {
            batch.elements_as(table, name, (kl, n), add, &mut plan.ranges())
        }
        Mode::Flush => {
            batch.flush(table, name, n);
            batch.elements_as(table, name, (kl, n), add, &mut plan.ranges())
        }
        Mode::Diff(held, _) => {
            let sides = || diff::diff(held.units(top), diff::wanted(plan.ranges()));
            let del = Elems {
                delete: true,
                timeout_ms: None,
            };
            let mut gone = sides()
                .filter_map(|s| match s {
                    Side::Delete(u) => Some(u),
                    _ => None,
                })
                .flat_map(|u| diff::elements(u, top));
            let mut sent = batch.raw_elements(table, name, (kl, n), del, &mut gone);
            // With timeouts every element is sent again: that refreshes its expiry.
            let mut new = sides()
                .filter_map(|s| match s {
                    Side::Add(u) => Some(u),
                    Side::Keep(u) => timeout_ms.map(|_| u),
                    Side::Delete(_) => None,
                })
                .flat_map(|u| diff::elements(u, top));
            sent += batch.raw_elements(table, name, (kl, n), add, &mut new);
            sent
        }
    }
}

/// [`super::load_with`]: plans each set, checks the memory budget, sends one batch.
pub(super) fn run(
    table: &str,
    set: &str,
    p: &Prepared,
    o: &LoadOptions,
) -> Result<LoadStats, LoadError> {
    let s = super::open_socket()?;
    let timeout = o.timeout_seconds.filter(|_| budget::refreshes_in_place());
    let mut plans = Vec::new();
    for (v6, fam) in [(false, Family::V4), (true, Family::V6)] {
        if o.family.is_some_and(|f| f != fam) {
            continue;
        }
        let name = format!("{set}_{}", if v6 { "v6" } else { "v4" });
        plans.push(plan(&s, table, name, v6, p, timeout.is_some())?);
    }
    let mut stats = LoadStats::default();
    stats.kernel_elements = plans.iter().map(Plan::count).sum();
    stats.estimate = budget::estimate(stats.kernel_elements);
    if let Some(max) = o.max_bytes.filter(|m| stats.estimate > *m) {
        return Err(LoadError::OverBudget {
            group: o.group.to_string(),
            elements: stats.kernel_elements,
            estimate: stats.estimate,
            max,
        });
    }
    let mut batch = Batch::new(2 * p.len() + 2, 1);
    batch.table(table);
    if o.mark.is_some() {
        super::prepare_chains(&mut batch, table, set);
    }
    let timeout_ms = timeout.map(|t| u64::from(t) * 1000);
    let mut names = Vec::new();
    for plan in &plans {
        // Sets keep their numbers (v4 0, v6 1) for the mark rules' set ids.
        let n = usize::from(plan.v6);
        stats.elements += encode(&mut batch, table, n, plan, timeout_ms);
        if let Mode::Diff(_, c) = &plan.mode {
            stats.kept += c.keep;
            stats.deleted += c.delete;
        }
        stats.by_difference |= matches!(plan.mode, Mode::Diff(..));
        names.resize(n, String::new());
        names.push(plan.name.clone());
    }
    stats.v4 = if o.family == Some(Family::V6) {
        0
    } else {
        p.v4.len()
    };
    stats.v6 = if o.family == Some(Family::V4) {
        0
    } else {
        p.v6.len()
    };
    names.resize(2, String::new());
    let dns_names = o
        .dns_timeout
        .map(|t| dns::add_dns_sets(&mut batch, table, set, o.family, t, 2))
        .unwrap_or_default();
    if let Some(m) = o.mark {
        let families = [o.family != Some(Family::V6), o.family != Some(Family::V4)];
        super::mark_rules(&mut batch, table, set, families, m, &dns_names);
    }
    let (bytes, acks) = batch.finish();
    stats.bytes = bytes.len();
    let all: Vec<String> = names.iter().chain(&dns_names).cloned().collect();
    transact(&s, bytes, &acks, table, &all)?;
    Ok(stats)
}
