//! `status.json`: the daemon's heartbeat and the outcome of its last run.

use crate::util::map::SortedMap;
use std::fs;
use std::io;
use std::path::Path;

use crate::util::json::{self, member, ToJson, Value, Writer};

/// What the daemon records about itself. Every field is optional so that a file from
/// another version, or a half-filled one, still reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
    pub failures: SortedMap<String, String>,
    /// The ASN upstream that last answered for each ASN (`AS62041` → `bgptools`).
    /// Left out of the file when empty.
    pub upstreams: SortedMap<String, String>,
    /// Output files that failed after the last run that rendered them, and why.
    pub output_failures: SortedMap<String, String>,
    /// Per group loaded into kernel sets (`load` outputs): the elements its sets
    /// hold and their estimated kernel memory, as of its last load. Left out of the
    /// file when empty.
    pub kernel_sets: SortedMap<String, KernelSet>,
    /// The journal mode the database used at the last run: `"wal"` or `"delete"`.
    pub journal_mode: Option<String>,
    /// When the snapshot (`--snapshot`) was last written.
    pub last_snapshot: Option<String>,
    /// Whether runs changed data that is not in the snapshot yet.
    pub snapshot_pending: bool,
}

/// A group's kernel sets (see [`Status::kernel_sets`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelSet {
    /// Set elements (an interval is a start and an end element).
    pub elements: u64,
    /// Estimated kernel memory, in bytes.
    pub estimate_bytes: u64,
}

impl ToJson for KernelSet {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.begin_object();
        w.field("elements", &self.elements);
        w.field("estimate_bytes", &self.estimate_bytes);
        w.end_object();
    }
}

impl KernelSet {
    fn map(key: &str, v: &Value) -> Result<SortedMap<String, KernelSet>, String> {
        let mut out = SortedMap::new();
        for (group, o) in v.as_object().into_iter().flatten() {
            let n = |f: &str| o.get(f).and_then(Value::as_u64).unwrap_or(0);
            if o.as_object().is_none() {
                return Err(format!("{key}.{group}: expected an object, got {o}"));
            }
            let set = KernelSet {
                elements: n("elements"),
                estimate_bytes: n("estimate_bytes"),
            };
            out.insert(group.clone(), set);
        }
        Ok(out)
    }
}

/// The fields in the order of the struct (the order of the file).
impl ToJson for Status {
    fn write_json(&self, w: &mut Writer<'_>) {
        w.begin_object();
        w.field("heartbeat", &self.heartbeat);
        w.field("pid", &self.pid);
        w.field("last_run_started", &self.last_run_started);
        w.field("last_run_finished", &self.last_run_finished);
        w.field("last_run_added", &self.last_run_added);
        w.field("last_run_removed", &self.last_run_removed);
        w.field("last_success", &self.last_success);
        w.field("last_error", &self.last_error);
        w.field("next_run", &self.next_run);
        w.field("failures", &self.failures);
        if !self.upstreams.is_empty() {
            w.field("upstreams", &self.upstreams);
        }
        w.field("output_failures", &self.output_failures);
        if !self.kernel_sets.is_empty() {
            w.field("kernel_sets", &self.kernel_sets);
        }
        w.field("journal_mode", &self.journal_mode);
        w.field("last_snapshot", &self.last_snapshot);
        w.field("snapshot_pending", &self.snapshot_pending);
        w.end_object();
    }
}

impl Status {
    /// Reads the fields it knows; others (from another version) are ignored, missing
    /// ones keep their default.
    pub(crate) fn from_json(v: &Value) -> Result<Status, String> {
        let o = v
            .as_object()
            .ok_or_else(|| format!("expected an object, got {v}"))?;
        let mut s = Status::default();
        for (k, v) in o {
            match k.as_str() {
                "heartbeat" => s.heartbeat = member::opt_string(k, v)?,
                "pid" => s.pid = member::opt_u32(k, v)?,
                "last_run_started" => s.last_run_started = member::opt_string(k, v)?,
                "last_run_finished" => s.last_run_finished = member::opt_string(k, v)?,
                "last_run_added" => s.last_run_added = member::opt_u32(k, v)?,
                "last_run_removed" => s.last_run_removed = member::opt_u32(k, v)?,
                "last_success" => s.last_success = member::opt_string(k, v)?,
                "last_error" => s.last_error = member::opt_string(k, v)?,
                "next_run" => s.next_run = member::opt_string(k, v)?,
                "failures" => s.failures = member::string_map(k, v)?,
                "upstreams" => s.upstreams = member::string_map(k, v)?,
                "output_failures" => s.output_failures = member::string_map(k, v)?,
                "kernel_sets" => s.kernel_sets = KernelSet::map(k, v)?,
                "journal_mode" => s.journal_mode = member::opt_string(k, v)?,
                "last_snapshot" => s.last_snapshot = member::opt_string(k, v)?,
                "snapshot_pending" => s.snapshot_pending = member::bool(k, v)?,
                _ => {}
            }
        }
        Ok(s)
    }
}

/// Reads `status.json`; `Ok(None)` when there is none.
pub fn read(path: &Path) -> Result<Option<Status>, String> {
    match fs::read(path) {
        Ok(bytes) => json::parse(bytes)
            .map_err(|e| e.to_string())
            .and_then(|v| Status::from_json(&v))
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Writes `status.json` atomically; on a full file system, over the old file: the
/// copy beside it finds no room, and the failure that filled the disk must still be
/// recorded (a torn file after a power cut then is a new status, nothing worse).
pub fn write(path: &Path, status: &Status) -> io::Result<()> {
    let mut text = json::to_vec_pretty(status);
    text.push(b'\n');
    match crate::util::write_atomic(path, &text) {
        Err(e) if e.kind() == io::ErrorKind::StorageFull && path.is_file() => {
            fs::write(path, &text)
        }
        other => other,
    }
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
        fs::write(&p, r#"{"pid": "7"}"#).unwrap();
        let e = read(&p).unwrap_err();
        assert!(
            e.ends_with("status.json: pid: expected a whole number up to 4294967295, got \"7\""),
            "{e}"
        );
    }

    #[test]
    fn written_as_serde_json_wrote_it() {
        let mut s = Status {
            heartbeat: Some("2026-01-01T00:00:00Z".into()),
            pid: Some(42),
            last_run_added: Some(3),
            snapshot_pending: true,
            ..Status::default()
        };
        s.failures.insert("AS1".into(), "timeout \"x\"".into());
        let text = json::to_string_pretty(&s);
        assert_eq!(
            text,
            "{\n  \"heartbeat\": \"2026-01-01T00:00:00Z\",\n  \"pid\": 42,\n  \
             \"last_run_started\": null,\n  \"last_run_finished\": null,\n  \
             \"last_run_added\": 3,\n  \"last_run_removed\": null,\n  \
             \"last_success\": null,\n  \"last_error\": null,\n  \"next_run\": null,\n  \
             \"failures\": {\n    \"AS1\": \"timeout \\\"x\\\"\"\n  },\n  \
             \"output_failures\": {},\n  \"journal_mode\": null,\n  \
             \"last_snapshot\": null,\n  \"snapshot_pending\": true\n}"
        );
        s.upstreams.insert("AS1".into(), "bgptools".into());
        let set = KernelSet {
            elements: 3,
            estimate_bytes: 216,
        };
        s.kernel_sets.insert("video".into(), set);
        let text = json::to_string_pretty(&s);
        assert!(
            text.contains("\"kernel_sets\": {\n    \"video\": {\n      \"elements\": 3,\n      \"estimate_bytes\": 216\n    }\n  },"),
            "{text}"
        );
        assert!(text.contains("\n  },\n  \"upstreams\": {\n    \"AS1\": \"bgptools\"\n  },\n  \"output_failures\""), "{text}");
        assert_eq!(Status::from_json(&json::parse(&text).unwrap()), Ok(s));
    }
}
