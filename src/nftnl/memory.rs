//! What a long-running process (the daemon) loaded into its sets, so that a load by
//! difference need not read them back: the kernel's dump of a set walks it again
//! from the first element for each part of its answer (at most 32 KiB), so reading
//! a set back costs the square of its size (100,000 prefixes: 1.5-3 s here, several
//! times a full load).
//!
//! The memory is trusted only while nobody else changed the sets. A socket
//! subscribed to the ruleset's events (`NFNLGRP_NFTABLES`) is read at each tick of
//! the daemon and before a load: an event on a remembered set or its table, by
//! anyone, or events lost to a full buffer, forget everything, and the next load
//! reads the sets back. A load closes that socket first (so that the kernel does not
//! copy each of its elements to it) and pins its batch to the generation the memory
//! is true at (`NFNL_BATCH_GENID`): a commit by anyone since makes the kernel refuse
//! the batch, and the load is done again from the sets read back. After the commit
//! a new subscription and the generation show whether ours was the last commit;
//! only then is the new content remembered (a load that fails forgets it).

use std::sync::Mutex;

use super::read::{self, attr, be_u32, numbered, NFTA_GEN_ID};
use super::sock::Socket;
use crate::format::{Family, Prepared};

/// `NFNLGRP_NFTABLES`: the multicast group of the ruleset's events.
const NFNLGRP_NFTABLES: u32 = 7;
/// Event types (`NFT_MSG_*`, the low byte under the nf_tables subsystem's).
const DELTABLE: u16 = 2;
const NEWGEN: u16 = 15;
/// Events that change a set of a table: NEWSET, DELSET, NEWSETELEM, DELSETELEM.
const SET_EVENTS: [u16; 4] = [9, 11, 12, 14];

/// What the `load` outputs of this process put in the kernel (see the module).
#[derive(Default)]
pub struct Memory(Mutex<Option<Known>>);

impl std::fmt::Debug for Memory {
    // (Not derived: the remembered lists would be printed, and their code kept.)
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("Memory")
    }
}

struct Known {
    events: Socket,
    sets: Remembered,
}

/// The sets remembered, and the generation they are true at.
pub(super) struct Remembered {
    pub genid: u32,
    pub sets: Vec<Set>,
}

/// One remembered load: its table and sets (`<set>_v4`, `<set>_v6`, or the one of
/// `family`), whether their elements time out, and the lists they hold.
pub(super) struct Set {
    pub table: String,
    pub set: String,
    pub family: Option<Family>,
    pub timeout: bool,
    pub list: Prepared,
}

impl Set {
    /// Whether `name` is one of its sets.
    fn holds(&self, name: &[u8]) -> bool {
        let rest = name.strip_prefix(self.set.as_bytes());
        rest.is_some_and(|r| r == b"_v4" || r == b"_v6")
    }
}

impl Memory {
    /// Reads the events that arrived; call it often (a full buffer forgets all).
    pub fn watch(&self) {
        if let Ok(mut k) = self.0.try_lock() {
            if k.as_mut().is_some_and(|k| !k.untouched()) {
                *k = None;
            }
        }
    }

    /// What is remembered and still true, taken for a load (the events' socket
    /// closed).
    pub(super) fn take(&self) -> Option<Remembered> {
        let mut k = self.0.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        k.untouched().then_some(k.sets)
    }

    /// Remembers `sets` if no commit followed the generation they are true at (read
    /// once the new subscription stands).
    pub(super) fn keep(&self, sets: Remembered) {
        let events = Socket::open().and_then(|e| e.subscribe(NFNLGRP_NFTABLES).map(|()| e));
        let now = Socket::open().and_then(|s| read::genid(&s));
        let known = match (events, now) {
            (Ok(events), Ok(now)) if now == sets.genid => Some(Known { events, sets }),
            _ => None,
        };
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = known;
    }
}

impl Remembered {
    /// What the set of family `v6` of `table`/`set` holds, if remembered with the
    /// timeout flag `timeout`.
    pub fn set(&self, table: &str, set: &str, v6: bool, timeout: bool) -> Option<&Prepared> {
        let family = |f: Option<Family>| f.is_none_or(|f| (f == Family::V6) == v6);
        let s = self.sets.iter().find(|s| s.table == table && s.set == set);
        s.filter(|s| s.timeout == timeout && family(s.family))
            .map(|s| &s.list)
    }
}

impl Known {
    /// Reads the queued events: false when one touched a remembered set (or its
    /// table) or some were lost; NEWGEN moves the generation on.
    fn untouched(&mut self) -> bool {
        // Events come in parts of at most a page (NLMSG_GOODSIZE).
        let mut buf = [0u8; 16 << 10];
        loop {
            let n = match self.events.recv_now(&mut buf) {
                Ok(n) if n < buf.len() => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                // ENOBUFS (lost events), a truncated datagram, or the socket failing.
                _ => return false,
            };
            for (kind, _, body) in numbered(&buf[..n]) {
                let (subsys, msg) = (kind >> 8, kind & 0xff);
                let a = body.get(4..).unwrap_or(&[]);
                let text = |k| attr(a, k).map(|v| v.strip_suffix(&[0]).unwrap_or(v));
                if subsys != 10 {
                    continue;
                }
                if msg == NEWGEN {
                    self.sets.genid = attr(a, NFTA_GEN_ID).map_or(0, be_u32);
                } else if msg == DELTABLE || SET_EVENTS.contains(&msg) {
                    // The table's name is attribute 1 of each, a set's name 2.
                    let (table, name) = (text(1), text(2));
                    let hit = |s: &Set| {
                        table == Some(s.table.as_bytes())
                            && (msg == DELTABLE || name.is_some_and(|n| s.holds(n)))
                    };
                    if self.sets.sets.iter().any(hit) {
                        return false;
                    }
                }
            }
        }
    }
}
