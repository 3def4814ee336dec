//! The difference between what an interval set holds and what it should hold, on
//! whole units, so that every state the kernel checks in between is a valid set.
//!
//! The kernel keeps an interval as two elements: its start, and an end element (flag
//! `INTERVAL_END`) at the first key after it, unless it reaches the top. nft also puts
//! an end at 0 before a first range that starts later. A unit is one of:
//! `(k, 0, 0)`, a lone end element at `k`; `(lo, 1, hi)`, the range `lo..=hi`: its
//! start and, below the top, its end at `hi + 1`. Units sort by key, a lone end
//! before a range that starts on the same key.
//!
//! A unit that changed is deleted whole and added whole: changing only an end (as a
//! per-element difference would) can leave a start with no end between the two
//! messages, which the kernel refuses as an overlap. Units that are the same on both
//! sides are not sent at all.

/// One unit of an interval set (see the module's comment).
pub type Unit = (u128, u8, u128);

/// The elements the kernel holds, read back: starts and ends, each sorted.
#[derive(Debug, Default)]
pub struct Held {
    pub starts: Vec<u128>,
    pub ends: Vec<u128>,
}

impl Held {
    /// One element as the dump gives it.
    pub fn push(&mut self, key: u128, end: bool) {
        match end {
            true => self.ends.push(key),
            false => self.starts.push(key),
        }
    }

    /// Sorts both lists (the kernel's tree gives them highest first).
    pub fn order(&mut self) {
        for v in [&mut self.starts, &mut self.ends] {
            if v.windows(2).all(|w| w[0] >= w[1]) {
                v.reverse();
            } else {
                crate::util::sort::sort(v);
            }
        }
    }

    /// The units these elements make, in order: each start with the next end, if it
    /// comes before the next start. A start that another start follows (not a set
    /// nft or we would write) counts as a range to the top: it is one element too.
    pub fn units(&self, top: u128) -> impl Iterator<Item = Unit> + '_ {
        let (mut s, mut e) = (self.starts.iter().peekable(), self.ends.iter().peekable());
        let mut open: Option<u128> = None;
        std::iter::from_fn(move || loop {
            // An end before a start on the same key: it closes the range before.
            let take_end = match (s.peek(), e.peek()) {
                (None, None) => return open.take().map(|lo| (lo, 1, top)),
                (Some(a), Some(b)) => b <= a,
                (None, Some(_)) => true,
                (Some(_), None) => false,
            };
            if take_end {
                let k = *e.next().expect("peeked");
                return Some(match open.take() {
                    Some(lo) => (lo, 1, k - 1),
                    None => (k, 0, 0),
                });
            }
            let k = *s.next().expect("peeked");
            if let Some(lo) = open.replace(k) {
                return Some((lo, 1, top));
            }
        })
    }
}

/// The units of a set that holds the sorted, disjoint ranges `ranges`, as our full
/// load writes them (with the end at 0 before a first range that starts later).
pub fn wanted<'a>(
    ranges: impl Iterator<Item = (u128, u128)> + 'a,
) -> impl Iterator<Item = Unit> + 'a {
    // (Not a flat_map of each range's units: that took half of a load's time in
    // user space, which a load by difference of a few changes is mostly.)
    let mut ranges = ranges.peekable();
    let lead = ranges.peek().is_some_and(|r| r.0 != 0);
    let lead = lead.then_some((0, 0, 0));
    lead.into_iter().chain(ranges.map(|(lo, hi)| (lo, 1, hi)))
}

/// The elements `(key, end)` of a unit.
pub fn elements(u: Unit, top: u128) -> impl Iterator<Item = (u128, bool)> {
    let items = match u {
        (k, 0, _) => [(k, true), (0, false)],
        (lo, _, hi) => [(lo, false), (hi.wrapping_add(1), true)],
    };
    items.into_iter().take(size(u, top))
}

/// The number of elements of a unit.
pub fn size(u: Unit, top: u128) -> usize {
    if u.1 == 0 || u.2 == top {
        1
    } else {
        2
    }
}

/// Which side of the difference a unit is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// On both: the kernel's stays as it is.
    Keep(Unit),
    /// Held only: deleted.
    Delete(Unit),
    /// Wanted only: added.
    Add(Unit),
}

/// The difference of two sorted unit lists, in order.
pub fn diff<'a>(
    held: impl Iterator<Item = Unit> + 'a,
    wanted: impl Iterator<Item = Unit> + 'a,
) -> impl Iterator<Item = Side> + 'a {
    let (mut h, mut w) = (held.peekable(), wanted.peekable());
    std::iter::from_fn(move || match (h.peek().copied(), w.peek().copied()) {
        (None, None) => None,
        (Some(a), Some(b)) if a == b => {
            h.next();
            w.next();
            Some(Side::Keep(a))
        }
        (Some(a), b) if b.is_none_or(|b| a < b) => {
            h.next();
            Some(Side::Delete(a))
        }
        (_, b) => {
            w.next();
            b.map(Side::Add)
        }
    })
}

/// Elements a difference load deletes and adds, and those it leaves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub delete: usize,
    pub add: usize,
    pub keep: usize,
}

/// Counts the elements of each side of a difference.
#[cfg(test)]
pub fn count(sides: impl Iterator<Item = Side>, top: u128) -> Counts {
    count_changes(sides, top, 0).0
}

/// [`count`], keeping the changed sides (deletes and adds, in order) when there are
/// at most `cap` of them: the batch is then written from those, without two more
/// passes over both lists (which is most of what a small difference costs us).
pub fn count_changes(
    sides: impl Iterator<Item = Side>,
    top: u128,
    cap: usize,
) -> (Counts, Option<Vec<Side>>) {
    let mut c = Counts::default();
    let (mut changed, mut all) = (Vec::new(), true);
    for s in sides {
        match s {
            Side::Keep(u) => {
                c.keep += size(u, top);
                continue;
            }
            Side::Delete(u) => c.delete += size(u, top),
            Side::Add(u) => c.add += size(u, top),
        }
        all &= changed.len() < cap;
        if all {
            changed.push(s);
        }
    }
    (c, all.then_some(changed))
}

#[cfg(test)]
mod tests;
