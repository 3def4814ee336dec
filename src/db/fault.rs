//! What a failed write of the database is, in words a person acts on: SQLite says
//! "database or disk is full" or "unable to open database file" and names no file;
//! the file system knows whether it is full, read-only or refusing us.

use std::io::Write;
use std::path::Path;

use rusqlite::ErrorCode;

/// Why writing `db` failed with `cause`, when the file system is to blame: "disk
/// full", or what the OS says when a file is written beside it ("read-only file
/// system", "permission denied", "no space left on device"). `None` for failures
/// of another kind (a constraint, a bug), and when the directory takes writes.
pub(super) fn write_failure(db: &Path, cause: &rusqlite::Error) -> Option<String> {
    let code = cause.sqlite_error_code()?;
    let probed = || {
        let dir = db.parent().filter(|d| !d.as_os_str().is_empty());
        probe(dir.unwrap_or(Path::new(".")))
    };
    match code {
        ErrorCode::DiskFull => Some("disk full".into()),
        ErrorCode::ReadOnly
        | ErrorCode::CannotOpen
        | ErrorCode::SystemIoFailure
        | ErrorCode::PermissionDenied => probed().map(|e| {
            let why = crate::util::io_reason(&e);
            match e.kind() {
                std::io::ErrorKind::StorageFull => format!("disk full ({why})"),
                _ => why,
            }
        }),
        _ => None,
    }
}

/// The error of writing a small file in `dir` (removed again), if any: what SQLite
/// met creating its journal or growing the database.
fn probe(dir: &Path) -> Option<std::io::Error> {
    crate::util::remove_stale(dir, PREFIX);
    let path = dir.join(format!("{PREFIX}{}", crate::util::process_id()));
    let result = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .and_then(|mut f| {
            // A block's worth: a full file system may still create an empty file.
            f.write_all(&[0; 4096])?;
            f.sync_all()
        });
    let _ = std::fs::remove_file(&path);
    result.err()
}

/// The probe file's name, before the process id.
const PREFIX: &str = ".ripe-writeprobe-";
