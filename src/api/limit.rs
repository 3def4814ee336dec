//! A counting semaphore: the connection cap and the limit on requests doing
//! database work at once.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

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

    /// Units in use.
    #[cfg(test)]
    pub fn in_use(&self) -> usize {
        *self.lock()
    }
}
