//! What the kernel can be asked for: memory (an estimate from the element count,
//! checked before a load) and whether re-adding an element refreshes its timeout.

use std::sync::atomic::{AtomicBool, Ordering};

/// Kernel memory per element of our interval sets, in bytes: measured on 6.18
/// (x86_64) as slab growth per element, 70.6 without and 71.4 with timeouts, and
/// the same for hash sets (docs/performance.md, "Kernel memory of the sets").
pub const ELEMENT_BYTES: u64 = 72;

/// The estimated kernel memory of sets holding `elements` elements.
pub fn estimate(elements: usize) -> u64 {
    elements as u64 * ELEMENT_BYTES
}

/// A quarter of `MemTotal` in `/proc/meminfo` (`max_kernel_mib`'s default), in
/// bytes; `None` where it cannot be read.
pub fn default_max() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    mem_total_quarter(&text)
}

/// A quarter of `MemTotal:` of a `/proc/meminfo` text, in bytes.
pub fn mem_total_quarter(meminfo: &str) -> Option<u64> {
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024 / 4)
}

/// Whether the running kernel refreshes the expiry of an element added again with
/// a timeout and an expiration (6.12 and later); said once in the log when not.
pub fn refreshes_in_place() -> bool {
    static SAID: AtomicBool = AtomicBool::new(false);
    // SAFETY: uname fills the zeroed struct it is given.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    let release = match unsafe { libc::uname(&mut u) } {
        0 => u
            .release
            .iter()
            .map(|&c| c as u8)
            .take_while(|&c| c != 0)
            .collect(),
        _ => Vec::new(),
    };
    let release = String::from_utf8_lossy(&release);
    let ok = at_least(&release, (6, 12));
    if !ok && !SAID.swap(true, Ordering::Relaxed) {
        log::warn!(
            "kernel {release} does not refresh element timeouts in place (6.12 does): \
             \"timeout\" is ignored, the sets are loaded without timeouts"
        );
    }
    ok
}

/// Whether a kernel release such as `6.18.44-fc` is at least `major.minor`.
pub fn at_least(release: &str, want: (u32, u32)) -> bool {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let mut next = || parts.next().and_then(|p| p.parse::<u32>().ok());
    match (next(), next()) {
        (Some(major), Some(minor)) => (major, minor) >= want,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_releases() {
        assert!(at_least("6.12.0", (6, 12)));
        assert!(at_least("6.18.44-fc-v973", (6, 12)));
        assert!(at_least("7.0", (6, 12)));
        assert!(!at_least("6.6.73", (6, 12)));
        assert!(!at_least("5.15.0-generic", (6, 12)));
        assert!(!at_least("", (6, 12)));
    }

    #[test]
    fn quarter_of_mem_total() {
        let text = "MemFree:  10 kB\nMemTotal:        251904 kB\n";
        assert_eq!(mem_total_quarter(text), Some(251_904 * 256));
        assert_eq!(mem_total_quarter("MemFree: 1 kB\n"), None);
        assert_eq!(estimate(1000), 72_000);
    }
}
