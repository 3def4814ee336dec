//! Making room in the answer budget (`answers.rs`) for a render that waits: the poll
//! thread closes the connections whose counted answers have been unread longest.

use std::time::Instant;

use super::answers::{EVICT_IDLE, SMALL_ANSWER};
use super::poller::{Poller, State};

impl Poller {
    /// While a render waits for room, closes connections writing a counted answer
    /// that made no progress for [`EVICT_IDLE`], the longest-unread first, until the
    /// render has its room (a body shared with others is freed with its last holder).
    pub(super) fn make_room(&mut self, now: Instant) {
        let answers = &self.shared.ctx.answers;
        if answers.over() == 0 {
            return;
        }
        let mut unread: Vec<(Instant, usize)> = (self.slots.iter().enumerate())
            .filter_map(|(i, s)| {
                let s = s.as_ref()?;
                let State::Write(out, _) = &s.state else {
                    return None;
                };
                let stalled = out.body.len() > SMALL_ANSWER && s.progress + EVICT_IDLE <= now;
                stalled.then_some((s.progress, i))
            })
            .collect();
        crate::util::sort::sort(&mut unread);
        for (_, i) in unread {
            log::debug!("api: closed a client that stopped reading, to make room");
            self.close(i);
            if self.shared.ctx.answers.over() == 0 {
                break;
            }
        }
    }
}
