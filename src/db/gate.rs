//! The gate's decision (`trust`): whether an answer shrank or grew too much to apply
//! at once, and when a held one is confirmed. Pure: the counts, the address space
//! ([`Space`]) and the time come in as arguments.

use std::net::IpAddr;

use ipnet::IpNet;

use super::codec::BARE;
use super::trust::{Fetch, CONFIRMED, HELD};

/// The settings of the gate (`trust`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    /// An answer dropping more than this percentage of the stored values (or all of
    /// them), or this much below the reference, is held; 100 turns the gate off.
    pub max_shrink_percent: u32,
    /// An answer covering more than this percentage more addresses is held.
    pub max_growth_percent: u32,
    /// Seconds after which the same held answer from the same upstream applies.
    pub confirm_after: i64,
    /// Seconds over which the largest applied answer is the reference.
    pub reference: i64,
}

impl Gate {
    /// No gate: every answer is applied.
    pub const OFF: Gate = Gate {
        max_shrink_percent: 100,
        max_growth_percent: u32::MAX,
        confirm_after: 0,
        reference: 0,
    };

    /// Whether counts `a` and `b` agree within the margin (the smaller is at least
    /// `100 - max_shrink_percent` percent of the larger).
    pub fn agree(&self, a: u64, b: u64) -> bool {
        let pct = u64::from(self.max_shrink_percent.min(100));
        a.min(b) * 100 >= (100 - pct) * a.max(b)
    }

    /// Why an answer is held, if it is: `"shrank"` or `"grew"`. `stored` values were
    /// there before, the answer has `answer` values, `contained` of them stored;
    /// `reference` is the largest answer applied lately; `widened` whether its
    /// address space grew past the limits ([`Space::widened_by`]).
    pub(super) fn judge(
        &self,
        (stored, contained, answer): (u64, u64, u64),
        reference: u64,
        widened: bool,
    ) -> Option<&'static str> {
        let pct = u64::from(self.max_shrink_percent);
        if pct >= 100 || stored == 0 {
            return None;
        }
        let dropped = contained == 0 || (stored - contained) * 100 > pct * stored;
        // Steps each under the limit add up: compare with the reference too.
        let drifted = answer * 100 < (100 - pct) * reference;
        // Replacing /24s by /8s drops every stored value, but it widens the list.
        if widened {
            Some("grew")
        } else if dropped || drifted {
            Some("shrank")
        } else {
            None
        }
    }

    /// Whether `answer` is the held (or hand-confirmed) answer `l` again: within the
    /// margin, held for the same reason, and not more than 1 % further that way (a drift in steps is held
    /// anew at each step, never confirmed by time).
    fn same(&self, why: &str, answer: u64, l: &Fetch) -> bool {
        let further = match why {
            "grew" => answer * 100 > l.answer * 101,
            _ => answer * 100 < l.answer * 99,
        };
        let reason = l.state != HELD || super::trust::held_word(l) == why;
        self.agree(answer, l.answer) && reason && !further
    }

    /// Decides a fetch: `(state, note, since)`. `why` the answer would be held
    /// ([`Gate::judge`]); `confirm` applies it whatever the counts (what confirmed
    /// it). The same answer again from the same upstream after `confirm_after`
    /// applies it, unless it is empty: time alone never empties a list.
    pub(super) fn decide(
        &self,
        last: Option<&Fetch>,
        why: Option<&'static str>,
        (answer, upstream): (u64, Option<&str>),
        now: i64,
        confirm: Option<&str>,
    ) -> (u8, Option<String>, Option<i64>) {
        if let Some(by) = confirm {
            return (CONFIRMED, Some(by.to_string()), None);
        }
        let Some(why) = why else {
            return (super::trust::APPLIED, None, None);
        };
        // A grown answer confirmed by hand was never stored: the same answer applies.
        let by_hand = |l: &&Fetch| l.state == CONFIRMED && l.note.as_deref() == Some("hand");
        if last
            .filter(by_hand)
            .is_some_and(|l| self.same(why, answer, l))
        {
            return (CONFIRMED, Some("hand".into()), None);
        }
        let held = |since| (HELD, Some(why.to_string()), Some(since));
        match last.filter(|l| l.state == HELD) {
            Some(l) if l.upstream.as_deref() == upstream && self.same(why, answer, l) => {
                let since = l.since.unwrap_or(l.time);
                if now - since >= self.confirm_after && answer > 0 {
                    (CONFIRMED, Some("time".into()), None)
                } else {
                    held(since)
                }
            }
            _ => held(now),
        }
    }
}

/// Values' address space: IPv4 as the size of their union (values come in key order,
/// by first address), IPv6 as a sum (text order is not address order; an overlap
/// only counts twice), and the shortest prefix length of each family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Space {
    pub(super) v4: u64,
    /// End (exclusive) of the IPv4 union so far.
    v4_end: u64,
    pub(super) v6: u128,
    /// Shortest prefix length, IPv4 then IPv6 (`u8::MAX`: none).
    pub(super) shortest: [u8; 2],
}

impl Default for Space {
    fn default() -> Space {
        Space {
            v4: 0,
            v4_end: 0,
            v6: 0,
            shortest: [u8::MAX; 2],
        }
    }
}

impl Space {
    /// Adds an IPv4 value in its stored code (first address << 6 | length), in order.
    pub(super) fn add_v4(&mut self, code: i64) {
        let len = (code & 63).min(BARE - 1) as u8;
        let start = (code >> 6) as u64;
        self.add_v4_range(start, len);
    }

    fn add_v4_range(&mut self, start: u64, len: u8) {
        let end = start + (1u64 << (32 - u32::from(len.min(32))));
        if end > self.v4_end {
            self.v4 += end - start.max(self.v4_end);
            self.v4_end = end;
        }
        self.shortest[0] = self.shortest[0].min(len);
    }

    /// Adds a value kept as text (IPv6; an address or a prefix).
    pub(super) fn add_text(&mut self, t: &str) {
        let net = match t.parse::<IpNet>() {
            Ok(n) => n,
            Err(_) => match t.parse::<IpAddr>() {
                Ok(a) => IpNet::from(a),
                Err(_) => return,
            },
        };
        match net {
            IpNet::V4(n) => self.add_v4_range(u64::from(u32::from(n.network())), n.prefix_len()),
            IpNet::V6(n) => {
                let len = n.prefix_len();
                let size = if len == 0 {
                    u128::MAX
                } else {
                    1u128 << (128 - u32::from(len))
                };
                self.v6 = self.v6.saturating_add(size);
                self.shortest[1] = self.shortest[1].min(len);
            }
        }
    }

    /// Whether `answer` widens `self` (the stored values): per family, more than
    /// `growth_percent` more addresses and at least a /16 of IPv4 (a /32 of IPv6) more;
    /// or `new_shortest` (the shortest prefix the answer adds) shorter than any stored
    /// and than /12 (IPv4) or /24 (IPv6).
    pub(super) fn widened_by(&self, answer: &Space, new_shortest: [u8; 2], growth: u32) -> bool {
        let factor = (100.0 + f64::from(growth)) / 100.0;
        let grew = |s: f64, a: f64, floor: f64| a > s * factor && a - s >= floor;
        grew(self.v4 as f64, answer.v4 as f64, 65_536.0)
            || grew(self.v6 as f64, answer.v6 as f64, 2f64.powi(96))
            || (0..2).any(|f| new_shortest[f] < self.shortest[f] && new_shortest[f] < [12, 24][f])
    }
}

#[cfg(test)]
mod tests {
    use super::super::trust::APPLIED;
    use super::*;

    const G: Gate = Gate {
        max_shrink_percent: 30,
        max_growth_percent: 100,
        confirm_after: 3600,
        reference: 7 * 86_400,
    };

    fn held(answer: u64, since: i64) -> Fetch {
        Fetch {
            time: since,
            upstream: Some("ripestat".into()),
            answer,
            stored: 100,
            added: 0,
            removed: 0,
            state: HELD,
            note: Some("shrank".into()),
            since: Some(since),
        }
    }

    /// `decide` of the answer `c` (stored, contained, answer) with no reference.
    fn d(last: Option<&Fetch>, c: (u64, u64, u64), now: i64) -> (u8, Option<String>, Option<i64>) {
        G.decide(
            last,
            G.judge(c, 0, false),
            (c.2, Some("ripestat")),
            now,
            None,
        )
    }

    #[test]
    fn the_gate_decides() {
        let up = Some("ripestat");
        let shrank = Some("shrank".to_string());
        assert_eq!(d(None, (0, 0, 0), 0).0, APPLIED, "nothing stored");
        assert_eq!(d(None, (100, 70, 70), 0).0, APPLIED, "30 % is the limit");
        assert_eq!(d(None, (100, 69, 69), 5), (HELD, shrank.clone(), Some(5)));
        assert_eq!(d(None, (100, 0, 0), 5).0, HELD, "empty");
        assert_eq!(d(None, (100, 0, 500), 5).0, HELD, "all replaced");
        let off = Gate::OFF;
        assert_eq!(off.judge((100, 0, 0), 1000, true), None);
        // The same answer again: held since the first time, applied after an hour.
        let h = held(20, 100);
        assert_eq!(
            d(Some(&h), (100, 20, 20), 200),
            (HELD, shrank.clone(), Some(100))
        );
        assert_eq!(d(Some(&h), (100, 20, 20), 3700).0, CONFIRMED);
        assert_eq!(d(Some(&h), (100, 20, 20), 3700).1.as_deref(), Some("time"));
        // Another answer, or another upstream: held anew.
        assert_eq!(
            d(Some(&h), (100, 50, 50), 3700),
            (HELD, shrank.clone(), Some(3700))
        );
        let why = Some("shrank");
        let other = G.decide(Some(&h), why, (20, Some("ipverse")), 3700, None);
        assert_eq!(other, (HELD, shrank, Some(3700)));
        let by = G.decide(Some(&h), why, (20, up), 200, Some("ipverse"));
        assert_eq!(by, (CONFIRMED, Some("ipverse".into()), None));
        assert!(G.agree(20, 20) && G.agree(20, 15) && !G.agree(20, 100) && G.agree(0, 0));
    }

    /// T3: an empty answer stays held however long it is given; a second upstream
    /// (or the user) applies it.
    #[test]
    fn time_alone_never_empties_a_list() {
        let h = held(0, 100);
        for now in [3700, 86_400 * 30] {
            assert_eq!(d(Some(&h), (100, 0, 0), now).0, HELD);
        }
        let by = G.decide(
            Some(&h),
            Some("shrank"),
            (0, Some("ripestat")),
            3700,
            Some("hand"),
        );
        assert_eq!(by.0, CONFIRMED);
    }

    /// T2: the reference holds what the last answer alone lets through.
    #[test]
    fn the_reference_holds_a_drift() {
        // 25 % below the last answer (applied), 44 % below the reference: held.
        assert_eq!(G.judge((75, 75, 75), 0, false), None);
        assert_eq!(G.judge((75, 56, 56), 100, false), Some("shrank"));
        assert_eq!(G.judge((75, 70, 70), 100, false), None);
    }

    /// T1: growth is held with the word "grew".
    #[test]
    fn growth_is_held() {
        assert_eq!(G.judge((100, 100, 317), 100, true), Some("grew"));
        let (state, note, _) = G.decide(None, Some("grew"), (317, Some("ripestat")), 0, None);
        assert_eq!((state, note.as_deref()), (HELD, Some("grew")));
        assert_eq!(G.judge((0, 0, 317), 0, true), None, "nothing stored yet");
    }

    fn space(values: &[&str]) -> Space {
        let mut s = Space::default();
        for v in values {
            match super::super::codec::v4_code(v) {
                Some(c) => s.add_v4(c),
                None => s.add_text(v),
            }
        }
        s
    }

    #[test]
    fn space_counts_the_union_of_ipv4() {
        let s = space(&["10.0.0.0/8", "10.1.0.0/16", "11.0.0.1", "11.0.0.2/31"]);
        assert_eq!(s.v4, (1 << 24) + 3);
        assert_eq!(s.shortest, [8, u8::MAX]);
        let s = space(&["2001:db8::/32", "2001:db8::1"]);
        assert_eq!(s.v6, (1u128 << 96) + 1);
        assert_eq!(s.shortest, [u8::MAX, 32]);
    }

    #[test]
    fn widened() {
        let stored = space(&["192.0.2.0/24", "198.51.100.0/24"]);
        let w = |a: &[&str], new: [u8; 2]| stored.widened_by(&space(a), new, 100);
        let none = [u8::MAX; 2];
        // Twice as much and a /16 more: the floor keeps small sources free to double.
        assert!(!w(
            &["192.0.2.0/24", "198.51.100.0/23", "203.0.113.0/24"],
            none
        ));
        assert!(!w(&["192.0.2.0/24", "203.0.0.0/16"], none));
        assert!(w(&["192.0.2.0/24", "203.0.0.0/15"], none));
        // A new /11 is shorter than /12 and than any stored; a /13 is not.
        assert!(w(&["192.0.2.0/24"], [11, u8::MAX]));
        assert!(!w(&["192.0.2.0/24"], [13, u8::MAX]));
        // A first IPv6 /32 where none was: more than a /32's worth is held.
        assert!(w(&["2001:db8::/31"], none));
        assert!(!w(&["2001:db8::/48"], none));
    }
}
