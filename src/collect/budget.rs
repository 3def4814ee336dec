//! How many values the answers of a process hold at once (issue 38, item 15). A run
//! reads a few sources at a time; four answers of 250,000 prefixes read together held
//! 18 MB. Answers share [`SHARED`] values; past it, one answer (the first to need more)
//! may grow to its own limit while the others wait until it is stored and dropped:
//! the peak is that of one large answer, whatever the split of the sources.
//!
//! The answer that may grow is one [`Lease`]; while it is read, its thread's other
//! answers may grow too, so that a thread reading several at once (bgp.tools' table)
//! never waits for itself. The reader of that answer never waits, so some answer
//! always progresses. A wait ends after [`MAX_WAIT`] anyway: an answer held longer (by
//! a caller that keeps one while it reads another) costs memory, never a collection.

use std::sync::{Condvar, Mutex};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

/// Values the answers read at the same time share before one must wait.
const SHARED: usize = 32_768;
/// Values counted at a time.
pub(super) const CHUNK: usize = 4_096;
/// The longest wait.
const MAX_WAIT: Duration = Duration::from_secs(60);

/// What the answers of the process hold.
struct Held {
    /// Values counted.
    values: usize,
    /// Whether a lease may exceed [`SHARED`], and the thread reading it (until read).
    taken: bool,
    reader: Option<ThreadId>,
}

static HELD: Mutex<Held> = Mutex::new(Held {
    values: 0,
    taken: false,
    reader: None,
});
static FREED: Condvar = Condvar::new();

/// The values one answer counts in [`HELD`], given back when it is dropped.
#[derive(Debug, Default)]
pub(crate) struct Lease {
    counted: usize,
    /// Whether it is the one that may exceed [`SHARED`].
    big: bool,
}

impl Lease {
    /// Counts [`CHUNK`] more values, first waiting while they do not fit.
    pub(super) fn grow(&mut self) {
        let me = thread::current().id();
        let start = Instant::now();
        let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let fits = held.values + CHUNK <= SHARED || self.big || held.reader == Some(me);
            if fits || !held.taken || start.elapsed() >= MAX_WAIT {
                if !fits && !held.taken {
                    (held.taken, held.reader, self.big) = (true, Some(me), true);
                }
                held.values += CHUNK;
                self.counted += CHUNK;
                return;
            }
            let left = MAX_WAIT.saturating_sub(start.elapsed());
            held = FREED
                .wait_timeout(held, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// The answer is read: its thread's next answers count as any other's.
    pub(super) fn read(&self) {
        if self.big {
            HELD.lock().unwrap_or_else(|p| p.into_inner()).reader = None;
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.counted == 0 {
            return;
        }
        let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
        held.values -= self.counted.min(held.values);
        if self.big {
            (held.taken, held.reader) = (false, None);
        }
        drop(held);
        FREED.notify_all();
    }
}

/// glibc gives each fetching thread a heap of its own and keeps a freed large answer
/// in it (its mmap threshold grows with every large block freed): answers read one
/// after the other on four threads held four (20 MiB for four of 250,000, against
/// 13 with one heap). One heap, and blocks over 256 KiB mapped and given back when
/// freed, as `api` asks for its threads; musl (OpenWrt) does both already.
pub(crate) fn one_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
    }
}

/// A copy counts nothing: only the answer read holds the lease.
impl Clone for Lease {
    fn clone(&self) -> Lease {
        Lease::default()
    }
}

/// Leases never make two answers differ.
impl PartialEq for Lease {
    fn eq(&self, _: &Lease) -> bool {
        true
    }
}
impl Eq for Lease {}
