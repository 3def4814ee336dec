//! `--syslog`: log records to the system log with their own priority. On OpenWrt
//! procd files everything a service writes to stderr as `daemon.err`, so an INFO line
//! looked like an error in `logread`; written to `/dev/log` (logd, or any syslogd)
//! each record keeps its level. A few lines of our own instead of libc's `syslog(3)`
//! (varargs, global state) or a crate: one datagram per record, in the local
//! `<PRI>TAG[PID]: MESSAGE` form that logd and syslogd parse.

use std::io::Write;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where the system log listens.
pub const DEV_LOG: &str = "/dev/log";
/// syslog's `daemon` facility (3), shifted into the priority.
const FACILITY_DAEMON: u8 = 3 << 3;
/// The longest message sent: logd takes more, but a bounded datagram never fails for
/// its size (longer ones are cut at a character boundary).
const MAX_MESSAGE: usize = 2048;

/// Sends log records to a syslog socket; when that fails, to stderr (a record is
/// never lost silently because logd restarted).
pub struct Syslog {
    path: PathBuf,
    socket: Mutex<Option<UnixDatagram>>,
    level: log::LevelFilter,
    tag: String,
}

impl Syslog {
    /// A logger for `path` (normally [`DEV_LOG`]); `None` when nothing listens there.
    pub fn connect(path: &Path, level: log::LevelFilter) -> Option<Syslog> {
        let socket = open(path)?;
        Some(Syslog {
            path: path.to_path_buf(),
            socket: Mutex::new(Some(socket)),
            level,
            tag: format!("ripe-cidr-collector[{}]", std::process::id()),
        })
    }

    /// The datagram for one record.
    fn datagram(&self, level: log::Level, message: &str) -> Vec<u8> {
        let mut end = message.len().min(MAX_MESSAGE);
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        let pri = FACILITY_DAEMON + severity(level);
        format!("<{pri}>{}: {}", self.tag, &message[..end]).into_bytes()
    }
}

fn open(path: &Path) -> Option<UnixDatagram> {
    let s = UnixDatagram::unbound().ok()?;
    s.connect(path).ok()?;
    Some(s)
}

/// The syslog severity of a level: err 3, warning 4, info 6, debug 7.
fn severity(level: log::Level) -> u8 {
    match level {
        log::Level::Error => 3,
        log::Level::Warn => 4,
        log::Level::Info => 6,
        log::Level::Debug | log::Level::Trace => 7,
    }
}

impl log::Log for Syslog {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= self.level
    }

    fn log(&self, record: &log::Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let message = record.args().to_string();
        let datagram = self.datagram(record.level(), &message);
        let mut socket = self.socket.lock().unwrap_or_else(|e| e.into_inner());
        // One reconnect: logd may have been restarted since the last record.
        for _ in 0..2 {
            if socket.is_none() {
                *socket = open(&self.path);
            }
            match socket.as_ref().map(|s| s.send(&datagram)) {
                Some(Ok(_)) => return,
                _ => *socket = None,
            }
        }
        let _ = writeln!(std::io::stderr(), "{} {message}", record.level());
    }

    fn flush(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use log::Log;

    fn record(level: log::Level, text: &str, f: impl FnOnce(&log::Record)) {
        f(&log::Record::builder()
            .level(level)
            .args(format_args!("{text}"))
            .build());
    }

    #[test]
    fn each_level_keeps_its_priority() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let server = UnixDatagram::bind(&path).unwrap();
        let logger = Syslog::connect(&path, log::LevelFilter::Info).unwrap();
        let pid = std::process::id();
        let mut buf = [0u8; 4096];
        for (level, pri) in [
            (log::Level::Error, 27),
            (log::Level::Warn, 28),
            (log::Level::Info, 30),
        ] {
            record(level, "snapshot written", |r| logger.log(r));
            let n = server.recv(&mut buf).unwrap();
            assert_eq!(
                std::str::from_utf8(&buf[..n]).unwrap(),
                format!("<{pri}>ripe-cidr-collector[{pid}]: snapshot written")
            );
        }
        // Below the level: nothing sent.
        server.set_nonblocking(true).unwrap();
        record(log::Level::Debug, "detail", |r| logger.log(r));
        assert!(server.recv(&mut buf).is_err());
    }

    #[test]
    fn long_messages_are_cut_at_a_character_boundary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let _server = UnixDatagram::bind(&path).unwrap();
        let logger = Syslog::connect(&path, log::LevelFilter::Info).unwrap();
        let long = "é".repeat(MAX_MESSAGE);
        let d = logger.datagram(log::Level::Info, &long);
        let text = String::from_utf8(d).unwrap();
        assert!(text.len() <= MAX_MESSAGE + 40, "{}", text.len());
    }

    #[test]
    fn nothing_listening_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Syslog::connect(&dir.path().join("none"), log::LevelFilter::Info).is_none());
    }
}
