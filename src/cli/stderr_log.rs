//! Log records on stderr as `LEVEL message`: the message names what it is about, and
//! the Rust module that logged it is no business of an administrator reading
//! `logread` (simple_logger printed `[ripe_cidr_collector::daemon::schedule]` on every
//! line). procd or the shell adds the time.

use std::io::Write;

/// Writes records at `level` and above to stderr, one line each.
pub struct StderrLog(pub log::LevelFilter);

impl log::Log for StderrLog {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= self.0
    }

    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            // One write per line, so that lines of two threads never interleave.
            let line = format!("{:<5} {}\n", record.level(), record.args());
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        }
    }

    fn flush(&self) {}
}

/// Installs [`StderrLog`] at `level` (once per process; later calls do nothing).
pub fn init(level: log::LevelFilter) {
    if log::set_boxed_logger(Box::new(StderrLog(level))).is_ok() {
        log::set_max_level(level);
    }
}
