//! One byte budget for every answer body over a few kilobytes (listings, `/lookup`,
//! `/changes`, `/status`), from before it is rendered until its last client has
//! read it or was closed.
//!
//! * A render first reserves its size, estimated from the database (rows times the
//!   bytes a row takes in its format), then holds the real size once rendered;
//!   large answers are rendered one at a time, so that only one render's working
//!   memory comes on top of the budget; small ones (at most [`SMALL_RENDER`]) one
//!   at a time beside them, so that a firewall's small set, a lookup, never waits
//!   behind a large listing being rendered.
//! * A request whose client has gone (closed, reset) while it waited is not rendered
//!   (`ClientGone`): the handler thread says which socket it serves
//!   ([`set_client`]), and the socket is looked at right before the render and
//!   while waiting for it.
//! * When the budget is full, the render waits, and the poll thread closes the
//!   connections whose answers have been unread longest (none read for
//!   [`EVICT_IDLE`]), until there is room: clients that stop reading cannot lock the
//!   others out (two unread 8 MiB listings made every firewall's pull a 503). Past
//!   [`WAIT`] without room: 503 with `Retry-After`.
//! * Bodies are shared: clients of the same listing of the same database state hold
//!   one body, counted once.

use std::cell::Cell;
use std::os::fd::RawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, TryLockError, Weak};
use std::time::{Duration, Instant};

use super::error::ApiError;

/// Most bytes of answer bodies held at once (12 MiB): with the server's own few
/// megabytes, the database connections' caches and one render, under 32 MiB.
pub const ANSWER_BUDGET: usize = 12 << 20;

/// Bodies up to this size are not counted (errors, source lists, health): a
/// connection holds at most one answer, and connections are capped.
pub const SMALL_ANSWER: usize = 4096;

/// A connection whose answer made no progress for this long may be closed to make
/// room for another client's answer.
pub const EVICT_IDLE: Duration = Duration::from_secs(1);

/// How long a render waits for room before its client gets 503.
pub const WAIT: Duration = Duration::from_secs(4);

/// Renders of at most this many bytes (estimated) have their own turn beside the
/// large ones: one small render's working memory comes on top of a large one's.
pub const SMALL_RENDER: usize = 2 << 20;

thread_local! {
    /// The socket of the client whose request this thread is answering.
    static CLIENT: Cell<Option<RawFd>> = const { Cell::new(None) };
}

/// Says which client's request this thread answers now (`None`: no socket, tests).
pub fn set_client(fd: Option<RawFd>) {
    CLIENT.with(|c| c.set(fd));
}

/// Whether the client of this thread's request has gone.
fn client_gone() -> bool {
    CLIENT.with(Cell::get).is_some_and(super::gone::gone)
}

/// A body held for clients; `listing` identifies a shareable one.
struct Held {
    body: Weak<Vec<u8>>,
    len: usize,
    listing: Option<(String, String)>,
}

#[derive(Default)]
struct State {
    held: Vec<Held>,
    /// Reserved by renders under way.
    pending: usize,
    /// Shared bodies kept for [`KEEP`] after they were rendered, for the next client
    /// of the same answer (a firewall pulling its set every few seconds, a flood of
    /// the same request): given up first when room is needed.
    recent: Vec<(Instant, Arc<Vec<u8>>)>,
}

/// How long a shared body is kept after it was rendered, read or not.
pub const KEEP: Duration = Duration::from_secs(10);

/// Shared bodies up to this size (an aggregated set, a small group's list) are kept
/// past [`KEEP`], [`KEEP_SMALL`] of them at most, the newest: a firewall pulling
/// every minute finds its listing made for the files as they are, which takes the
/// quick lane (`server.rs`) instead of waiting behind large renders.
pub const SMALL_KEPT: usize = 64 * 1024;

/// How many bodies of at most [`SMALL_KEPT`] are kept past [`KEEP`] (1 MiB).
pub const KEEP_SMALL: usize = 16;

impl State {
    fn forget_old(&mut self) {
        let old = |t: &Instant| t.elapsed() >= KEEP;
        self.recent
            .retain(|(t, b)| !old(t) || b.len() <= SMALL_KEPT);
        // The oldest come first.
        let mut extra = self.recent.iter().filter(|(t, _)| old(t)).count();
        self.recent.retain(|(t, _)| {
            let drop = extra > KEEP_SMALL && old(t);
            extra -= usize::from(drop);
            !drop
        });
    }

    fn in_use(&mut self) -> usize {
        self.held.retain(|h| h.body.strong_count() > 0);
        self.pending + self.held.iter().map(|h| h.len).sum::<usize>()
    }
}

/// The budget of one server.
#[derive(Default)]
pub struct Answers {
    state: Mutex<State>,
    /// Bytes a waiting render needs (0: nobody waits): the poll thread makes room.
    wanted: AtomicUsize,
    /// Wakes the poll thread when a render waits.
    wake: OnceLock<UnixStream>,
    /// One large render at a time.
    rendering: Mutex<()>,
    /// One small render at a time, beside the large one.
    small: Mutex<()>,
}

impl std::fmt::Debug for Answers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answers").finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks, but a poisoned count is still right.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Room reserved for a render; given back when dropped.
pub struct Reserved<'a> {
    answers: &'a Answers,
    n: usize,
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        lock(&self.answers.state).pending -= self.n;
    }
}

/// A shared body and its ETag.
pub type Listing = (Arc<Vec<u8>>, String);

impl Answers {
    /// Lets a waiting render wake the poll thread through `wake`.
    pub fn set_waker(&self, wake: UnixStream) {
        let _ = self.wake.set(wake);
    }

    /// The body held for the listing `key` (which names the database state), if a
    /// client still holds it.
    pub fn shared(&self, key: &str) -> Option<Listing> {
        let mut st = lock(&self.state);
        st.forget_old();
        st.held.iter().find_map(|h| match &h.listing {
            Some((k, tag)) if k == key => Some((h.body.upgrade()?, tag.clone())),
            _ => None,
        })
    }

    /// Bytes to free now for the render waiting for room (0: none waits).
    pub fn over(&self) -> usize {
        let want = self.wanted.load(Ordering::SeqCst);
        if want == 0 {
            return 0;
        }
        (lock(&self.state).in_use() + want).saturating_sub(ANSWER_BUDGET)
    }

    /// Runs `render` alone, with room for `estimate` bytes reserved (waiting for it
    /// up to [`WAIT`]), and holds its body in the budget: shared as `listing` when
    /// given (and found there when another client rendered it meanwhile).
    pub fn render(
        &self,
        estimate: usize,
        listing: Option<String>,
        render: impl FnOnce() -> Result<Vec<u8>, ApiError>,
    ) -> Result<Listing, ApiError> {
        let _alone = self.alone(estimate)?;
        if let Some(found) = listing.as_deref().and_then(|k| self.shared(k)) {
            return Ok(found);
        }
        let reserved = self.reserve(estimate)?;
        Ok(self.hold(reserved, render()?, listing))
    }

    /// Held while an answer of about `estimate` bytes is rendered: one large and
    /// one small at a time, as each takes memory in proportion to its size (and a
    /// router has few cores to run more on). `ClientGone` instead when the client
    /// leaves before its turn: nobody would read the answer.
    pub fn alone(&self, estimate: usize) -> Result<MutexGuard<'_, ()>, ApiError> {
        let turn = match estimate <= SMALL_RENDER {
            true => &self.small,
            false => &self.rendering,
        };
        loop {
            if client_gone() {
                return Err(ApiError::ClientGone);
            }
            match turn.try_lock() {
                Ok(g) => return Ok(g),
                Err(TryLockError::Poisoned(p)) => return Ok(p.into_inner()),
                // Looked at again soon: a waiting client may leave meanwhile.
                Err(TryLockError::WouldBlock) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }

    /// Holds `body`, rendered in the room `reserved`, in the budget while a client
    /// has it (and as the listing `listing`, to be shared); small ones only when
    /// shared.
    pub fn hold(
        &self,
        reserved: Option<Reserved<'_>>,
        body: Vec<u8>,
        listing: Option<String>,
    ) -> Listing {
        let body = Arc::new(body);
        let tag = super::headers::etag(&body);
        let mut st = lock(&self.state);
        // From reserved to held at once, so that no other render takes the room between.
        if let Some(r) = reserved {
            st.pending -= r.n;
            std::mem::forget(r);
        }
        if listing.is_some() {
            st.forget_old();
            st.recent.push((Instant::now(), body.clone()));
        }
        if body.len() > SMALL_ANSWER || listing.is_some() {
            st.held.push(Held {
                body: Arc::downgrade(&body),
                len: body.len(),
                listing: listing.map(|k| (k, tag.clone())),
            });
        }
        (body, tag)
    }

    /// Reserves room for a body of about `n` bytes (none for a small one), waiting up
    /// to [`WAIT`] while the poll thread closes the connections whose answers have
    /// been unread longest; 503 without room, and at once for a body larger than
    /// the whole budget (one unread RouterOS listing of 400,000 values took 77 MB).
    pub fn reserve(&self, n: usize) -> Result<Option<Reserved<'_>>, ApiError> {
        if n <= SMALL_ANSWER {
            return Ok(None);
        }
        if n > ANSWER_BUDGET {
            return Err(ApiError::TooLarge(n));
        }
        let until = Instant::now() + WAIT;
        loop {
            {
                let mut st = lock(&self.state);
                // Kept bodies no client holds go first, the oldest first.
                while st.in_use() + n > ANSWER_BUDGET && !st.recent.is_empty() {
                    st.recent.remove(0);
                }
                if st.in_use() + n <= ANSWER_BUDGET {
                    st.pending += n;
                    self.wanted.store(0, Ordering::SeqCst);
                    return Ok(Some(Reserved { answers: self, n }));
                }
            }
            if Instant::now() >= until {
                self.wanted.store(0, Ordering::SeqCst);
                return Err(ApiError::Busy);
            }
            self.wanted.store(n, Ordering::SeqCst);
            if let Some(w) = self.wake.get() {
                // A full pipe already holds a wake-up.
                let _ = std::io::Write::write(&mut &*w, &[1]);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Bytes a listing of `rows` stored rows takes at most, about, in `format`
/// (`details`: with sources and times), before anything is read: what decides a
/// render's turn (large or small), and the room of a details listing (141 bytes a
/// row measured). A plain listing reserves `format::size_bound` of its values once
/// read, close to the real size in every format.
pub fn listing_estimate(rows: u64, format: crate::format::Format, details: bool) -> usize {
    use crate::format::Format;
    let per_row = match (format, details) {
        (_, true) => 160,
        (Format::Text, _) => 20,
        (Format::Json, _) => 24,
        (Format::Nft, _) => 28,
        (Format::Ipset, _) => 40,
        (Format::Routeros, _) => 200,
        // The formats of other programs' configuration: a line of their syntax per
        // prefix, longer than RouterOS's at most.
        _ => 64,
    };
    (rows as usize).saturating_mul(per_row).saturating_add(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_count_until_their_last_holder_drops_them() {
        let a = Answers::default();
        let big = a.render(100_000, Some("k".into()), || Ok(vec![b'x'; 100_000]));
        let (big, tag) = big.unwrap();
        assert_eq!(lock(&a.state).in_use(), 100_000);
        // The same listing is shared, not rendered again.
        let again = a
            .render(100_000, Some("k".into()), || unreachable!())
            .unwrap();
        assert!(Arc::ptr_eq(&big, &again.0));
        assert_eq!(tag, again.1);
        drop((big, again));
        // Kept for the next client a while, then given up.
        assert_eq!(lock(&a.state).in_use(), 100_000);
        lock(&a.state).recent.clear();
        assert_eq!(lock(&a.state).in_use(), 0);
        // Small answers are not counted.
        let small = a.render(10, None, || Ok(vec![1; 10])).unwrap();
        assert_eq!(lock(&a.state).in_use(), 0);
        drop(small);
    }

    #[test]
    fn small_bodies_are_kept_past_keep_the_newest_16() {
        let a = Answers::default();
        let long_ago = Instant::now().checked_sub(KEEP * 2).unwrap();
        for i in 0..20 {
            let n = if i == 0 { SMALL_KEPT + 1 } else { 100 };
            let _ = a.render(n, Some(format!("k{i}")), || Ok(vec![b'x'; n]));
        }
        let mut st = lock(&a.state);
        st.recent.iter_mut().for_each(|(t, _)| *t = long_ago);
        st.forget_old();
        // The large one went; of the 19 small ones, the newest 16 stay.
        assert_eq!(st.recent.len(), KEEP_SMALL);
        assert!(st.recent.iter().all(|(_, b)| b.len() == 100));
        drop(st);
        assert!(a.shared("k19").is_some() && a.shared("k3").is_none());
    }

    #[test]
    fn a_full_budget_is_503_after_waiting_and_asks_for_room() {
        let a = Answers::default();
        let held = a
            .render(ANSWER_BUDGET, None, || Ok(vec![0; ANSWER_BUDGET - 10]))
            .unwrap();
        assert_eq!(a.over(), 0, "nobody waits");
        let started = Instant::now();
        let e = a
            .render(1 << 20, None, || Ok(vec![0; 1 << 20]))
            .unwrap_err();
        assert!(matches!(e, ApiError::Busy), "{e:?}");
        assert!(started.elapsed() >= WAIT);
        drop(held);
        assert!(a.render(1 << 20, None, || Ok(vec![0; 1 << 20])).is_ok());
    }
}
