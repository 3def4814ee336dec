//! The delay before trying a failure again.

/// A delay that starts at the retry time and doubles with every failure in a row, up
/// to the interval: a WAN or firewall that is late at boot gets tried again soon,
/// one that stays down is not hammered.
#[derive(Debug, Default)]
pub struct Backoff {
    step: u32,
}

impl Backoff {
    /// The next delay, in seconds (at least 1): `first`, then twice that, ... up to
    /// `cap`.
    pub fn next(&mut self, first: i64, cap: i64) -> i64 {
        let delay = first.saturating_mul(1 << self.step.min(16)).min(cap);
        self.step = self.step.saturating_add(1);
        delay.max(1)
    }

    /// Starts over at `first`.
    pub fn reset(&mut self) {
        self.step = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap_and_restarts() {
        let mut b = Backoff::default();
        let seen: Vec<i64> = (0..5).map(|_| b.next(60, 300)).collect();
        assert_eq!(seen, [60, 120, 240, 300, 300]);
        b.reset();
        assert_eq!(b.next(60, 300), 60);
        // A zero retry time still waits a second; many failures do not overflow.
        let mut b = Backoff::default();
        assert_eq!(b.next(0, 300), 1);
        for _ in 0..100 {
            b.next(i64::MAX / 2, 3600);
        }
        assert_eq!(b.next(i64::MAX / 2, 3600), 3600);
    }
}
