//! `status.json`: the daemon's heartbeat and the outcome of its last run.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// What the daemon records about itself. Every field is optional so that a file from
/// another version, or a half-filled one, still reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Status {
    /// Last time the daemon said it is alive (at least every 60 s).
    pub heartbeat: Option<String>,
    /// The daemon's process id.
    pub pid: Option<u32>,
    /// When the last collection run started.
    pub last_run_started: Option<String>,
    /// When the last collection run finished.
    pub last_run_finished: Option<String>,
    /// Values stored for the first time by the last run.
    pub last_run_added: Option<u32>,
    /// Values deleted by the last run (expired, and swept from removed sources).
    pub last_run_removed: Option<u32>,
    /// When a run last finished with every source collected.
    pub last_success: Option<String>,
    /// The last error (run, config, storage or output), with its time.
    pub last_error: Option<String>,
    /// When the next scheduled run is due.
    pub next_run: Option<String>,
    /// Failed sources of the last run (`AS62041`, `example.com`) and why.
    pub failures: BTreeMap<String, String>,
    /// The ASN upstream that last answered for each ASN (`AS62041` → `bgptools`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub upstreams: BTreeMap<String, String>,
    /// Output files that failed after the last run that rendered them, and why.
    pub output_failures: BTreeMap<String, String>,
    /// The journal mode the database used at the last run: `"wal"` or `"delete"`.
    pub journal_mode: Option<String>,
    /// When the snapshot (`--snapshot`) was last written.
    pub last_snapshot: Option<String>,
    /// Whether runs changed data that is not in the snapshot yet.
    pub snapshot_pending: bool,
}

/// Reads `status.json`; `Ok(None)` when there is none.
pub fn read(path: &Path) -> Result<Option<Status>, String> {
    match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Writes `status.json` atomically.
pub fn write(path: &Path, status: &Status) -> io::Result<()> {
    let mut text = serde_json::to_vec_pretty(status).map_err(io::Error::other)?;
    text.push(b'\n');
    crate::util::write_atomic(path, &text)
}

/// Reads `status.json` (a missing or unreadable one counts as empty), lets `change`
/// edit it and writes it back atomically.
pub fn update(path: &Path, change: impl FnOnce(&mut Status)) -> io::Result<()> {
    let mut st = read(path).ok().flatten().unwrap_or_default();
    change(&mut st);
    write(path, &st)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_tolerance() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("status.json");
        assert_eq!(read(&p).unwrap(), None);
        let mut s = Status {
            pid: Some(7),
            last_success: Some("2026-01-01T00:00:00Z".into()),
            ..Status::default()
        };
        s.failures.insert("AS1".into(), "timeout".into());
        write(&p, &s).unwrap();
        assert_eq!(read(&p).unwrap(), Some(s));
        fs::write(&p, r#"{"pid": 3, "future": 1}"#).unwrap();
        assert_eq!(read(&p).unwrap().unwrap().pid, Some(3));
        fs::write(&p, "{").unwrap();
        assert!(read(&p).unwrap_err().contains("status.json"));
    }
}
