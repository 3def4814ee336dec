//! A line for a person when a source's fetch takes long (a first run of big ASNs, a
//! slow feed): one "still fetching" line per source after [`SLOW`], never one per
//! value, so a long run is not silent until its end.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a fetch may take before it is mentioned.
pub const SLOW: Duration = Duration::from_secs(5);

/// The fetches in progress: name, start, and whether it was mentioned.
#[derive(Default)]
pub struct Watch {
    busy: Mutex<Vec<(String, Instant, bool)>>,
}

impl Watch {
    /// Runs `f` as the fetch of `name`.
    pub fn fetch<R>(&self, name: String, f: impl FnOnce() -> R) -> R {
        self.lock().push((name.clone(), Instant::now(), false));
        let r = f();
        self.lock().retain(|(n, _, _)| *n != name);
        r
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, Instant, bool)>> {
        self.busy.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Until `done`: logs each fetch once when it has taken [`SLOW`].
    pub fn report(&self, done: &AtomicBool) {
        while !done.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(200));
            for (name, since, told) in self.lock().iter_mut() {
                if !*told && since.elapsed() >= SLOW {
                    *told = true;
                    log::info!("{name}: still fetching after {} s", SLOW.as_secs());
                }
            }
        }
    }
}
