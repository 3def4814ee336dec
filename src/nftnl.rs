//! The `load` output: fills the nftables sets of the `nft` format over netlink
//! (`NETLINK_NETFILTER`, the nf_tables batch API) instead of through `nft -f`, whose
//! memory grows with the set (about 150 MB for 100,000 prefixes).
//!
//! One batch is one atomic transaction: `inet <table>` and the interval sets
//! `<set>_v4` (`ipv4_addr`) / `<set>_v6` (`ipv6_addr`) are created if missing, and
//! get what changed since the kernel's contents were read back, or since the load a
//! daemon remembers (`load`, `memory`), or are flushed and filled when that is not
//! smaller. Nothing else in the table is touched
//! and the sets are deleted only to switch their timeouts, so rules that reference
//! them keep working. When any step fails the kernel discards the whole batch: the
//! previous contents stay.
//!
//! Memory: the batch is encoded once (about 40 bytes per IPv4 prefix) and sent in
//! one datagram, as the kernel requires.

mod budget;
#[cfg(any(test, fuzzing))]
pub(crate) mod decode;
mod diff;
mod dns;
mod load;
mod memory;
pub(crate) mod msg;
pub mod probe;
mod read;
#[cfg(feature = "routes")]
pub mod routes;
mod sock;

pub use budget::default_max as default_max_kernel_bytes;
pub use dns::ensure_dns_sets;
pub use memory::Memory;

use std::io;

use crate::config::Mark;
use crate::format::{Family, Prepared, RenderOptions};

use msg::{Batch, Step};

/// What a successful load did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadStats {
    /// IPv4 prefixes loaded.
    pub v4: usize,
    /// IPv6 prefixes loaded.
    pub v6: usize,
    /// Set elements sent (interval starts and ends).
    pub elements: usize,
    /// Bytes of the batch.
    pub bytes: usize,
    /// Whether a set was updated by difference (else created, or flushed and filled).
    pub by_difference: bool,
    /// Whether a set updated by difference was read back (not remembered).
    pub read_back: bool,
    /// Elements of the difference loads deleted, and left in place.
    pub deleted: usize,
    pub kept: usize,
    /// Elements the sets hold once loaded, and their estimated kernel memory (bytes).
    pub kernel_elements: usize,
    pub estimate: u64,
}

/// Why a load failed; the sets keep their previous contents.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// No `CAP_NET_ADMIN`.
    #[error("loading nftables sets needs CAP_NET_ADMIN: run as root, or use the nft format with a command")]
    Permission,
    /// The kernel has no nfnetlink or nf_tables.
    #[error("the kernel has no nf_tables ({0})")]
    NoNfTables(#[source] io::Error),
    /// The set exists with another key type or flags: `inet <table> <set>`.
    #[error("set {0} exists with another type, flags or timeout; delete it (nft delete set {0}) or choose another set name")]
    SetMismatch(String),
    /// The set must be created again (its timeout flag changes) but rules use it.
    #[error("set {0} has to be created again to switch its timeouts, but rules outside our mark chains use it; delete those rules (or the set) once")]
    InUse(String),
    /// The sets would take more kernel memory than `max_kernel_mib` allows.
    #[error("group {group}: {elements} set elements would take about {} MiB of kernel memory, over max_kernel_mib {} (the sets keep their previous contents)", estimate.div_ceil(1 << 20), max >> 20)]
    OverBudget {
        group: String,
        elements: usize,
        estimate: u64,
        max: u64,
    },
    /// The batch does not fit the socket's send buffer.
    #[error("the nftables batch of {0} bytes exceeds the socket send buffer (run as root, or raise net.core.wmem_max)")]
    TooLarge(usize),
    /// Any other refusal: what was being done and the kernel's error.
    #[error("{0}: {1}")]
    Kernel(String, #[source] io::Error),
    /// The values could not be read from the database (boxed: the error stays small).
    #[error("{0}")]
    Store(#[source] Box<crate::db::StoreError>),
}

impl From<crate::db::StoreError> for LoadError {
    fn from(e: crate::db::StoreError) -> Self {
        LoadError::Store(Box::new(e))
    }
}

/// Loads `p` into the sets of table `inet <table>`: `<set>_v4` and `<set>_v6`, or
/// only the one of `family`. The lists must be sorted and must not overlap (the
/// aggregated lists of [`Collector::finish`]); an empty list leaves its set existing
/// and empty. Names are used as given: validate them with [`RenderOptions::check`].
pub fn load(
    table: &str,
    set: &str,
    p: &Prepared,
    family: Option<Family>,
) -> Result<LoadStats, LoadError> {
    let o = LoadOptions {
        family,
        ..LoadOptions::default()
    };
    load_with(table, set, p, &o)
}

pub use crate::format::mark_chains;

/// How a load goes beyond the sets' contents (all off by default).
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadOptions<'a> {
    /// Only the set of this family.
    pub family: Option<Family>,
    /// The chains of [`mark_chains`], in the same transaction: traffic to the sets'
    /// addresses gets the mark (see `msg::chain`). Other chains are not touched.
    pub mark: Option<Mark>,
    /// The dns sets dnsmasq fills (`dns`), created if missing in the same
    /// transaction with this timeout (seconds), never flushed; the mark chains match
    /// them too.
    pub dns_timeout: Option<u32>,
    /// A kernel timeout (seconds) on every element, refreshed by each load.
    pub timeout_seconds: Option<u32>,
    /// Refuse a load whose sets would take more kernel memory than this (bytes).
    pub max_bytes: Option<u64>,
    /// The group loaded, to name it in a refusal.
    pub group: &'a str,
    /// What this process loaded before, so that the sets need not be read back.
    pub memory: Option<&'a Memory>,
}

/// [`load`] with `o`: each set is read back (or remembered, with a memory) and only
/// the difference is sent (see `load`).
pub fn load_with(
    table: &str,
    set: &str,
    p: &Prepared,
    o: &LoadOptions,
) -> Result<LoadStats, LoadError> {
    load::run(table, set, p, o)
}

/// Deletes what a removed group's `load` output made in `inet <table>`: its mark
/// chains (with their rules), then its sets and dns sets, each in a transaction of
/// its own, so that one that is not there (ENOENT) stops nothing. Returns what was
/// deleted; other tables, chains and sets are never touched.
pub fn forget_group(table: &str, set: &str) -> Result<Vec<String>, LoadError> {
    let s = open_socket()?;
    let mut gone = Vec::new();
    let sets = [Family::V4, Family::V6].map(|f| crate::format::dns_set_name(set, f));
    let objects = mark_chains(set)
        .into_iter()
        .map(|c| (true, c))
        .chain([format!("{set}_v4"), format!("{set}_v6")].map(|n| (false, n)))
        .chain(sets.map(|n| (false, n)));
    for (chain, name) in objects {
        let mut b = Batch::new(0, 1);
        match chain {
            true => b.del_chain(table, &name, 0),
            false => b.del_set(table, &name, 0),
        }
        let (bytes, acks) = b.finish();
        match transact(&s, bytes, &acks, table, std::slice::from_ref(&name)) {
            Ok(()) => gone.push(format!("inet {table} {name}")),
            Err(LoadError::Kernel(_, e)) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(gone)
}

/// Opens the netlink socket of a load.
fn open_socket() -> Result<sock::Socket, LoadError> {
    sock::Socket::open().map_err(|e| match e.raw_os_error() {
        Some(libc::EPROTONOSUPPORT | libc::EAFNOSUPPORT | libc::ENOENT) => LoadError::NoNfTables(e),
        Some(libc::EPERM) => LoadError::Permission,
        _ => LoadError::Kernel("opening a netfilter netlink socket".into(), e),
    })
}

/// The chains of [`mark_chains`], created if missing and emptied: first in the
/// batch, so that a set their rules use can be deleted and created again after.
fn prepare_chains(batch: &mut Batch, table: &str, set: &str) {
    let chains = mark_chains(set);
    for (i, (chain, hook, kind)) in [
        (&chains[0], msg::HOOK_PREROUTING, "filter"),
        (&chains[1], msg::HOOK_OUTPUT, "route"),
    ]
    .into_iter()
    .enumerate()
    {
        batch.base_chain(table, chain, hook, kind, i);
        batch.flush_chain(table, chain, i);
    }
}

/// The rules of the chains of [`mark_chains`]: one per family loaded, last in the
/// batch.
/// `dns`: the dns sets created in this batch (ids 3 and on), matched by rules of
/// their own, since one rule cannot look an address up in two sets.
fn mark_rules(
    batch: &mut Batch,
    table: &str,
    set: &str,
    families: [bool; 2],
    m: Mark,
    dns: &[String],
) {
    let names = [format!("{set}_v4"), format!("{set}_v6")];
    for (i, chain) in mark_chains(set).iter().enumerate() {
        for (f, v6) in [(0, false), (1, true)] {
            if families[f] {
                let rule = msg::MarkRule {
                    set: &names[f],
                    set_id: f as u32 + 1,
                    v6,
                };
                batch.mark_rule(table, chain, &rule, m.value, m.mask, i);
            }
        }
        for (k, name) in dns.iter().enumerate() {
            let rule = msg::MarkRule {
                set: name,
                set_id: 3 + k as u32,
                v6: name.ends_with("_v6"),
            };
            batch.mark_rule(table, chain, &rule, m.value, m.mask, i);
        }
    }
}

/// Sends one encoded batch and waits for the acknowledgement of each of its `acks`.
/// `names` are the sets the batch's steps number (`Step::Set(n)`: `names[n]`), to
/// name them in an error.
fn transact(
    s: &sock::Socket,
    bytes: Vec<u8>,
    acks: &[(u32, Step)],
    table: &str,
    names: &[String],
) -> Result<(), LoadError> {
    let name = |n: usize| format!("inet {table} {}", names.get(n).map_or("?", |s| s));
    s.send_buffer(bytes.len());
    s.send(&bytes).map_err(|e| match e.raw_os_error() {
        Some(libc::EMSGSIZE) => LoadError::TooLarge(bytes.len()),
        Some(libc::EPERM) => LoadError::Permission,
        _ => LoadError::Kernel("sending the nftables batch".into(), e),
    })?;
    drop(bytes);
    let mut pending = acks.len();
    let mut buf = [0u8; 4096];
    while pending > 0 {
        let n = s
            .recv(&mut buf)
            .map_err(|e| LoadError::Kernel("waiting for the kernel's acknowledgement".into(), e))?;
        for (seq, errno) in parse_acks(&buf[..n]) {
            if seq >= read::SEQ {
                continue;
            }
            let step = acks.iter().find(|a| a.0 == seq).map(|a| a.1);
            if errno == 0 {
                pending -= usize::from(step.is_some());
                continue;
            }
            let e = io::Error::from_raw_os_error(errno);
            return Err(match (step.unwrap_or(Step::Batch), errno) {
                (Step::Table, libc::EPERM) => {
                    LoadError::Kernel(format!("table inet {table} (owned by another process?)"), e)
                }
                (_, libc::EPERM) => LoadError::Permission,
                (Step::Batch, libc::EOPNOTSUPP | libc::EPROTONOSUPPORT) => LoadError::NoNfTables(e),
                (Step::Set(n), libc::EEXIST | libc::EOPNOTSUPP) => LoadError::SetMismatch(name(n)),
                (Step::Batch, _) => LoadError::Kernel("nftables batch".into(), e),
                (Step::Table, _) => LoadError::Kernel(format!("creating table inet {table}"), e),
                (Step::Set(n), _) => LoadError::Kernel(format!("creating set {}", name(n)), e),
                (Step::Flush(n), _) => LoadError::Kernel(format!("flushing set {}", name(n)), e),
                (Step::Elements(n), _) => {
                    LoadError::Kernel(format!("adding elements to set {}", name(n)), e)
                }
                (Step::Delete(n), _) => {
                    LoadError::Kernel(format!("deleting elements of set {}", name(n)), e)
                }
                (Step::Recreate(n), libc::EBUSY) => LoadError::InUse(name(n)),
                (Step::Recreate(n), _) => LoadError::Kernel(format!("deleting set {}", name(n)), e),
                (Step::Chain(n), _) => LoadError::Kernel(
                    format!("the mark chain {} of inet {table}", chain_name(names, n)),
                    e,
                ),
            });
        }
    }
    Ok(())
}

/// Mark chain `n` of the sets `names`.
fn chain_name(names: &[String], n: usize) -> String {
    let set = names.first().map_or("?", |s| s.trim_end_matches("_v4"));
    mark_chains(set)[n.min(1)].clone()
}

/// The acknowledgements (`NLMSG_ERROR`) in one datagram: the sequence number of the
/// message they answer and its errno (0: done).
pub(crate) fn parse_acks(mut data: &[u8]) -> Vec<(u32, i32)> {
    const NLMSG_ERROR: u16 = 2;
    let mut out = Vec::new();
    while data.len() >= 20 {
        let len = u32::from_ne_bytes([data[0], data[1], data[2], data[3]]) as usize;
        let kind = u16::from_ne_bytes([data[4], data[5]]);
        let seq = u32::from_ne_bytes([data[8], data[9], data[10], data[11]]);
        if len < 16 || len > data.len() && kind != NLMSG_ERROR {
            break;
        }
        if kind == NLMSG_ERROR {
            let err = i32::from_ne_bytes([data[16], data[17], data[18], data[19]]);
            out.push((seq, err.saturating_neg()));
        }
        // Messages are padded to 4 bytes; a truncated one ends the datagram.
        data = data.get((len + 3) & !3..).unwrap_or(&[]);
    }
    out
}

/// The `load` output: `prepared` (aggregated, see `listing::prepare`) loaded into the
/// table and sets of `opts` (its family, whatever `o` says), and logged.
pub fn load_logged(
    opts: &RenderOptions,
    prepared: &Prepared,
    o: &LoadOptions,
) -> Result<LoadStats, LoadError> {
    let o = LoadOptions {
        family: opts.family,
        ..*o
    };
    let stats = load_with(&opts.table, &opts.set, prepared, &o)?;
    let how = match stats.by_difference {
        true => format!(
            "by difference{}: {} kept, {} deleted, ",
            if stats.read_back { " (read back)" } else { "" },
            stats.kept,
            stats.deleted
        ),
        false => String::new(),
    };
    log::info!(
        "loaded {} IPv4 and {} IPv6 prefixes into table inet {} ({how}{} elements sent, {} bytes; \
         about {} KiB of kernel memory)",
        stats.v4,
        stats.v6,
        opts.table,
        stats.elements,
        stats.bytes,
        stats.estimate.div_ceil(1024)
    );
    Ok(stats)
}

#[cfg(test)]
mod tests;
