//! A counting semaphore: the connection cap and the limit on requests doing
//! database work at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// A counting semaphore: the connection cap and the limit on active requests.
#[derive(Debug)]
pub struct Limit {
    max: usize,
    used: Mutex<usize>,
    freed: Condvar,
}

/// One unit of a [`Limit`], given back when dropped.
#[derive(Debug)]
pub struct Permit(Arc<Limit>);

impl Drop for Permit {
    fn drop(&mut self) {
        *self.0.lock() -= 1;
        self.0.freed.notify_one();
    }
}

impl Limit {
    /// A limit of `max` (at least 1).
    pub fn new(max: usize) -> Limit {
        Limit {
            max: max.max(1),
            used: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    // Nothing panics while holding the lock, but a poisoned count is still right.
    fn lock(&self) -> MutexGuard<'_, usize> {
        self.used.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for a unit.
    pub fn acquire(self: &Arc<Self>) -> Permit {
        let mut used = self.lock();
        while *used >= self.max {
            used = self
                .freed
                .wait(used)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *used += 1;
        Permit(self.clone())
    }

    /// Waits for a unit unless `stop` is set first.
    pub(super) fn acquire_unless(self: &Arc<Self>, stop: &AtomicBool) -> Option<Permit> {
        let mut used = self.lock();
        loop {
            if stop.load(Ordering::SeqCst) {
                return None;
            }
            if *used < self.max {
                *used += 1;
                return Some(Permit(self.clone()));
            }
            // The timeout only guards against a missed wake-up; frees notify.
            used = self
                .freed
                .wait_timeout(used, Duration::from_millis(100))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Units in use.
    pub fn in_use(&self) -> usize {
        *self.lock()
    }

    pub(super) fn wake_all(&self) {
        self.freed.notify_all();
    }
}
