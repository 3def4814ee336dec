//! One load: what each of our sets holds is known first, and the batch then carries
//! only what differs (or, when that is not smaller, a flush and the whole list). A
//! set is read back from the kernel, or, in a process that keeps a
//! [`Memory`](super::Memory), taken from what it loaded while nobody else touched
//! it (see `memory`). Reading back also sees what someone else changed: an element
//! deleted or added behind our back is just part of the difference, so every load
//! repairs the set.

use std::io;

use super::diff::{self, Counts, Held, Side, Unit};
use super::memory::{Remembered, Set};
use super::msg::{self, elem_top, Batch, Elems};
use super::read::{self, SetInfo};
use super::sock::Socket;
use super::{budget, dns, transact, LoadError, LoadOptions, LoadStats};
use crate::format::{Family, Prepared};

/// What the load does to one of our sets.
enum Mode<'a> {
    /// Missing: created and filled. (A set of another type is refused by its NEWSET.)
    Fill,
    /// Flushed and filled: the difference would not be smaller.
    Flush,
    /// There with the other timeout flag: deleted and created again, filled.
    Recreate,
    /// Only the difference is sent: deletes, then adds (from the changes kept
    /// while counting, when there were few enough).
    Diff(Was<'a>, Counts, Option<Vec<Side>>),
}

/// The most changed units a difference keeps while counting (then written without
/// another pass over both lists): 256 KiB at most, for far more than a collection
/// usually changes.
const KEPT_CHANGES: usize = 4096;

/// What a set holds before the load: read back, or remembered.
enum Was<'a> {
    Read(Held),
    Loaded(&'a Prepared),
}

impl Was<'_> {
    /// Its units, through one iterator type (not boxed: each boxed type costs a
    /// table of every iterator method in the binary).
    fn units(&self, v6: bool, top: u128) -> impl Iterator<Item = Unit> + '_ {
        let (mut read, mut loaded) = match self {
            Was::Read(held) => (Some(held.units(top)), None),
            Was::Loaded(p) => (None, Some(diff::wanted(ranges(p, v6)))),
        };
        std::iter::from_fn(move || match (&mut read, &mut loaded) {
            (Some(r), _) => r.next(),
            (_, l) => l.as_mut()?.next(),
        })
    }
}

/// The ranges of `p`'s list of one family, as inclusive pairs of keys.
fn ranges(p: &Prepared, v6: bool) -> Box<dyn Iterator<Item = (u128, u128)> + '_> {
    match v6 {
        false => Box::new(p.v4.iter().map(|e| {
            let (a, b) = (e.net.network(), e.net.broadcast());
            (u128::from(u32::from(a)), u128::from(u32::from(b)))
        })),
        true => Box::new(
            p.v6.iter()
                .map(|e| (u128::from(e.net.network()), u128::from(e.net.broadcast()))),
        ),
    }
}

/// One of our sets: `<set>_v4` or `<set>_v6`.
struct Plan<'a> {
    name: String,
    v6: bool,
    p: &'a Prepared,
    mode: Mode<'a>,
}

impl<'a> Plan<'a> {
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
        ranges(self.p, self.v6)
    }

    /// Only the difference to `was`, unless that is not smaller than a refill.
    fn by_difference(&mut self, was: Was<'a>) {
        let top = self.top();
        let (c, changed) = diff::count_changes(
            diff::diff(was.units(self.v6, top), diff::wanted(self.ranges())),
            top,
            KEPT_CHANGES,
        );
        // The difference sends delete + add elements, a refill keep + add.
        self.mode = if c.delete <= c.keep {
            Mode::Diff(was, c, changed)
        } else {
            Mode::Flush
        };
    }

    /// The elements the set holds once loaded.
    fn count(&self) -> usize {
        if let Mode::Diff(_, c, _) = &self.mode {
            return c.keep + c.add;
        }
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

/// What a load starts from: what this process loaded (remembered), the set read
/// back, or nothing at all (a flush and the whole list, when reading back failed).
#[derive(Clone, Copy)]
enum Basis<'a> {
    Loaded(&'a Prepared),
    Read,
    Flush,
}

/// Decides how to load the set from `basis`.
fn plan<'a>(
    s: &Socket,
    table: &str,
    name: String,
    v6: bool,
    p: &'a Prepared,
    timeout: bool,
    basis: Basis<'a>,
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
    if let Basis::Loaded(list) = basis {
        plan.by_difference(Was::Loaded(list));
        return Ok(plan);
    }
    let info = read::set_info(s, table, &name).map_err(reading)?;
    match info.map(|i| compatible(&i, v6, timeout)) {
        None | Some(None) => {}
        Some(Some(false)) => plan.mode = Mode::Recreate,
        Some(Some(true)) if matches!(basis, Basis::Flush) => plan.mode = Mode::Flush,
        Some(Some(true)) => {
            let mut held = Held::default();
            read::elements(s, table, &name, &mut |k, end| held.push(k, end)).map_err(reading)?;
            held.order();
            plan.by_difference(Was::Read(held));
        }
    }
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
        Mode::Diff(was, _, changed) => {
            // With timeouts the units kept are sent too, so both lists are walked.
            let listed = changed.as_deref().filter(|_| timeout_ms.is_none());
            let sides = || -> Box<dyn Iterator<Item = Side> + '_> {
                match listed {
                    Some(l) => Box::new(l.iter().copied()),
                    None => Box::new(diff::diff(
                        was.units(plan.v6, top),
                        diff::wanted(plan.ranges()),
                    )),
                }
            };
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

/// [`super::load_with`]: with a [`Memory`](super::Memory), from what it remembers (when still true)
/// and remembering what was loaded; without, from the sets read back.
pub(super) fn run(
    table: &str,
    set: &str,
    p: &Prepared,
    o: &LoadOptions,
) -> Result<LoadStats, LoadError> {
    let timeout = o.timeout_seconds.filter(|_| budget::refreshes_in_place());
    let Some(memory) = o.memory else {
        return from_read(table, set, p, o, timeout);
    };
    let known = memory.take();
    let basis = Some(known.as_ref());
    let (stats, genid) = match attempt(table, set, p, o, timeout, basis, Basis::Read) {
        // A commit by anyone since (ERESTART), or what was remembered wrong after
        // all: once more from the sets read back, and nothing remembered.
        Err(LoadError::Kernel(..)) => return from_read(table, set, p, o, timeout),
        r => r?,
    };
    let Some(genid) = genid else {
        return Ok(stats);
    };
    let mut sets = known.map(|k| k.sets).unwrap_or_default();
    sets.retain(|s| !(s.table == table && s.set == set));
    sets.push(Set {
        table: table.to_string(),
        set: set.to_string(),
        family: o.family,
        timeout: timeout.is_some(),
        list: p.clone(),
    });
    // The kernel skips 0 when the generation wraps.
    let genid = genid.wrapping_add(1).max(1);
    memory.keep(Remembered { genid, sets });
    Ok(stats)
}

/// A load from the sets read back, unpinned. Someone else's commit between the
/// read and the batch (an element we delete that they deleted first, ENOENT), or
/// one that tears the dump, makes the kernel refuse the batch as a whole, so the
/// load is done again from a new read, and then as a flush and the whole list,
/// which depends on nothing read.
fn from_read(
    table: &str,
    set: &str,
    p: &Prepared,
    o: &LoadOptions,
    timeout: Option<u32>,
) -> Result<LoadStats, LoadError> {
    for _ in 0..2 {
        match attempt(table, set, p, o, timeout, None, Basis::Read) {
            Err(LoadError::Kernel(..)) => {}
            r => return r.map(|r| r.0),
        }
    }
    attempt(table, set, p, o, timeout, None, Basis::Flush).map(|r| r.0)
}

/// Our sets of `family` (both without one): whether IPv6, and the name.
fn names(set: &str, family: Option<Family>) -> impl Iterator<Item = (bool, String)> + '_ {
    [(false, Family::V4), (true, Family::V6)]
        .into_iter()
        .filter(move |(_, f)| family.is_none_or(|w| w == *f))
        .map(move |(v6, _)| (v6, format!("{set}_{}", if v6 { "v6" } else { "v4" })))
}

/// One load: plans each set, checks the memory budget, sends one batch. `memory`:
/// the load keeps a memory (`Some`), with what it remembers (if anything); then the
/// batch is pinned to the generation its plan is true at, which is returned.
fn attempt(
    table: &str,
    set: &str,
    p: &Prepared,
    o: &LoadOptions,
    timeout: Option<u32>,
    memory: Option<Option<&Remembered>>,
    basis: Basis,
) -> Result<(LoadStats, Option<u32>), LoadError> {
    let s = super::open_socket()?;
    let generation = |s: &Socket| {
        read::genid(s).map_err(|e| LoadError::Kernel("reading the ruleset's generation".into(), e))
    };
    let known = memory.flatten();
    let mut pin = match memory {
        None => None,
        Some(Some(k)) => Some(k.genid),
        Some(None) => Some(generation(&s)?),
    };
    let mut plans = Vec::new();
    for (v6, name) in names(set, o.family) {
        let was = known.and_then(|k| k.set(table, set, v6, timeout.is_some()));
        let basis = was.map_or(basis, Basis::Loaded);
        plans.push(plan(&s, table, name, v6, p, timeout.is_some(), basis)?);
    }
    // Sets read back are true at the generation before only if nothing was committed
    // while they were read.
    if known.is_none() && pin.is_some() && pin != Some(generation(&s)?) {
        pin = None;
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
    if let Some(g) = pin {
        batch.pin(g);
    }
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
        if let Mode::Diff(was, c, _) = &plan.mode {
            stats.kept += c.keep;
            stats.deleted += c.delete;
            stats.read_back |= matches!(was, Was::Read(_));
        }
        stats.by_difference |= matches!(plan.mode, Mode::Diff(..));
        names.resize(n, String::new());
        names.push(plan.name.clone());
    }
    (stats.v4, stats.v6) = (plans_len(&plans, false), plans_len(&plans, true));
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
    Ok((stats, pin))
}

/// The prefixes the plans load of one family.
fn plans_len(plans: &[Plan], v6: bool) -> usize {
    let p = plans.iter().find(|x| x.v6 == v6);
    p.map_or(0, |x| if v6 { x.p.v6.len() } else { x.p.v4.len() })
}
