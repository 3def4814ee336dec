//! The snapshot: a copy of a database kept in RAM, on persistent storage (the model of
//! OpenWrt's nlbwmon). Flash is written once a day instead of at every run, and after
//! a reboot the lists are restored from the snapshot instead of being empty until the
//! first fetch succeeds, which may never happen if the WAN needs those routes.
//!
//! The snapshot is a plain SQLite database in rollback-journal mode (`sqlite3` reads
//! it), written by `VACUUM INTO` to a temporary file beside it, synced and renamed over
//! it: a crash at any moment leaves the old or the new snapshot.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Instant, UNIX_EPOCH};

use rusqlite::{Connection, ErrorCode, OpenFlags};

use super::StoreError;
use crate::config::{Config, Paths};
use crate::util;

/// `<dir>/.<name><suffix>`, beside `file` (so a rename is atomic).
fn sibling(file: &Path, suffix: &str) -> PathBuf {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "snapshot".into());
    file.with_file_name(format!(".{name}{suffix}"))
}

fn io_err(what: &Path, e: io::Error) -> StoreError {
    StoreError::io(what, e)
}

/// When the snapshot was last written (its modification time), if there is one.
pub fn last_written(paths: &Paths) -> Option<i64> {
    let m = fs::metadata(paths.snapshot.as_ref()?).ok()?;
    let t = m.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
    Some(t.as_secs() as i64)
}

/// Whether a snapshot is to be written now: a snapshot file is configured, something
/// changed since the last snapshot (`unsaved`), and the last snapshot is missing or
/// older than `storage.snapshot_interval_hours` (0: after every change). A snapshot
/// from the future (a router clock before NTP) counts as old.
pub fn due(paths: &Paths, cfg: &Config, unsaved: bool, now: i64) -> bool {
    if paths.snapshot.is_none() || !unsaved {
        return false;
    }
    let interval = i64::from(cfg.storage.snapshot_interval_hours) * 3600;
    match last_written(paths) {
        None => true,
        Some(t) => now < t || now - t >= interval,
    }
}

/// Whether the stored values changed since the last snapshot, by any process: the
/// database counts its changes (`meta.generation`, see the schema) and records the
/// count the last snapshot saved. False without a snapshot file, and when the database
/// cannot be read (the next open reports that).
pub fn pending(paths: &Paths) -> bool {
    if paths.snapshot.is_none() {
        return false;
    }
    match super::open(paths).and_then(|db| db.generation()) {
        Ok((now, saved)) => now != saved,
        Err(e) => {
            log::warn!("whether a snapshot is pending: {e}");
            false
        }
    }
}

/// Takes the writer's lock: an exclusive `flock` on the temporary file itself, checked
/// to still be the file at that name once held (a writer before may have renamed it
/// into place meanwhile).
fn lock_temp(tmp: &Path) -> Result<File, StoreError> {
    loop {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(tmp)
            .map_err(|e| io_err(tmp, e))?;
        crate::util::lock_exclusive(&f).map_err(|e| io_err(tmp, e))?;
        let held = f.metadata().map_err(|e| io_err(tmp, e))?;
        match fs::metadata(tmp) {
            Ok(now) if same_file(&now, &held) => return Ok(f),
            _ => continue,
        }
    }
}

/// Whether two metadata describe the same file (device and inode).
#[cfg(unix)]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.ino() == b.ino() && a.dev() == b.dev()
}

/// Without inodes (WASI: one process, no concurrent writer) every file is the same.
#[cfg(not(unix))]
fn same_file(_: &fs::Metadata, _: &fs::Metadata) -> bool {
    true
}

/// Writes the snapshot now: a consistent copy of the database (opened, and so created
/// or restored, as any command does). Returns the time it was written. Several writers
/// at once take turns.
pub fn write(paths: &Paths) -> Result<i64, StoreError> {
    let Some(file) = paths.snapshot.as_deref() else {
        return Err(StoreError::Other(
            "no snapshot file given (--snapshot FILE or $RIPE_SNAPSHOT)".into(),
        ));
    };
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
    }
    let started = Instant::now();
    let db = super::open(paths)?;
    let tmp = sibling(file, ".tmp");
    let lock = lock_temp(&tmp)?;
    // What a writer killed half-way left: VACUUM INTO wants an empty file, and its
    // journal would be "rolled back" into the new copy.
    lock.set_len(0).map_err(|e| io_err(&tmp, e))?;
    let mut journal = tmp.clone().into_os_string();
    journal.push("-journal");
    let _ = fs::remove_file(&journal);
    let target = tmp.to_string_lossy().into_owned();
    // Read first: a change after it stays pending (written again later), never lost.
    let (generation, _) = db.generation()?;
    db.run(|c| c.execute("VACUUM INTO ?1", [&target]))?;
    lock.sync_all().map_err(|e| io_err(&tmp, e))?;
    let size = lock.metadata().map(|m| m.len()).unwrap_or(0);
    fs::rename(&tmp, file).map_err(|e| io_err(file, e))?;
    // The rename itself must reach the disk before the old snapshot is gone for good.
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Err(e) = File::open(dir).and_then(|d| d.sync_all()) {
            log::warn!("{}: syncing the directory failed: {e}", dir.display());
        }
    }
    drop(lock);
    db.saved(generation)?;
    drop(db);
    log::info!(
        "snapshot written to {} ({size} bytes, {} ms)",
        file.display(),
        started.elapsed().as_millis() as u64
    );
    Ok(last_written(paths).unwrap_or_else(util::unix_now))
}

/// Whether `f` starts like an SQLite database.
fn has_magic(f: &Path) -> io::Result<bool> {
    let mut head = [0u8; 16];
    let mut file = File::open(f)?;
    match file.read_exact(&mut head) {
        Ok(()) => Ok(&head == b"SQLite format 3\0"),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// Copies the snapshot to `copy` through SQLite (`VACUUM INTO` reads every page, so
/// damage shows). `Ok(false)` for a file that is not a valid database, `Err` for
/// anything else (the file could not be read).
fn copy_checked(snap: &Path, copy: &Path) -> Result<bool, StoreError> {
    // SQLite takes an empty file for an empty database; a snapshot is never empty.
    if !has_magic(snap).map_err(|e| io_err(snap, e))? {
        return Ok(false);
    }
    remove_with_journals(copy);
    let run = || -> rusqlite::Result<()> {
        let c = Connection::open_with_flags(snap, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        c.execute("VACUUM INTO ?1", [copy.to_string_lossy()])?;
        Ok(())
    };
    match run() {
        Ok(()) => Ok(true),
        Err(e)
            if matches!(
                e.sqlite_error_code(),
                Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
            ) =>
        {
            Ok(false)
        }
        Err(e) => Err(e.into()),
    }
}

fn remove_with_journals(f: &Path) {
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let mut p = f.to_path_buf().into_os_string();
        p.push(suffix);
        let _ = fs::remove_file(p);
    }
}

/// At open: when the database file does not exist and the snapshot does, restores the
/// database from it (copied beside the database, read through, then put in place unless
/// another process was faster). A snapshot that is not a valid database is moved aside
/// as `<snapshot>.corrupt-<ts>` and the start goes on with an empty database. A
/// snapshot that cannot be read fails the open: an empty list must not replace it.
/// Returns whether it restored.
pub(crate) fn restore_if_missing(paths: &Paths) -> Result<bool, StoreError> {
    let Some(snap) = paths.snapshot.as_deref() else {
        return Ok(false);
    };
    let db = &paths.db;
    if fs::symlink_metadata(db).is_ok() || !snap.exists() {
        return Ok(false);
    }
    let tmp = sibling(db, &format!(".restore-{}", util::process_id()));
    let result = restore(snap, db, &tmp);
    remove_with_journals(&tmp);
    result
}

fn restore(snap: &Path, db: &Path, tmp: &Path) -> Result<bool, StoreError> {
    let started = Instant::now();
    if !copy_checked(snap, tmp)? {
        let ts = util::compact_ts(util::unix_now());
        let mut aside = snap.as_os_str().to_owned();
        aside.push(format!(".corrupt-{ts}"));
        match fs::rename(snap, &aside) {
            Ok(()) => log::error!(
                "{}: not a valid database; moved aside to {}; starting with an empty database",
                snap.display(),
                Path::new(&aside).display()
            ),
            Err(e) => log::error!(
                "{}: not a valid database, and moving it aside failed ({e}); starting \
                 with an empty database",
                snap.display()
            ),
        }
        return Ok(false);
    }
    // No-clobber: a process that restored (or created) the database meanwhile wins,
    // and its connections keep the file they opened.
    match fs::hard_link(tmp, db) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
        // Filesystems without hard links (FAT): a plain rename.
        Err(_) => fs::rename(tmp, db).map_err(|e| io_err(db, e))?,
    }
    log::info!(
        "restored the database {} from the snapshot {} ({} ms)",
        db.display(),
        snap.display(),
        started.elapsed().as_millis() as u64
    );
    Ok(true)
}

/// Whether changes are not in the snapshot yet, and writing it when due. The daemon
/// keeps one for its life; `run` starts one from `status.json`'s `snapshot_pending`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Saver {
    unsaved: bool,
}

impl Saver {
    /// A saver that knows whether changes are already waiting for a snapshot.
    pub fn new(unsaved: bool) -> Saver {
        Saver { unsaved }
    }

    /// Whether changes are not in the snapshot yet.
    pub fn unsaved(&self) -> bool {
        self.unsaved
    }

    /// After a run: notes whether it `changed` anything and writes the snapshot when
    /// [`due`]. `None` when nothing was written; else the time written or the error
    /// (the changes then stay unsaved, and the next run tries again).
    pub fn after_run(
        &mut self,
        paths: &Paths,
        cfg: &Config,
        changed: bool,
        now: i64,
    ) -> Option<Result<i64, StoreError>> {
        self.unsaved |= (changed && paths.snapshot.is_some()) || pending(paths);
        if !due(paths, cfg, self.unsaved, now) {
            return None;
        }
        Some(self.write(paths))
    }

    /// At stop (SIGTERM/SIGINT): writes the snapshot when changes are not in it yet,
    /// this process's or another's (a purge by the CLI or the API).
    pub fn at_stop(&mut self, paths: &Paths) -> Option<Result<i64, StoreError>> {
        let unsaved = (self.unsaved && paths.snapshot.is_some()) || pending(paths);
        unsaved.then(|| self.write(paths))
    }

    fn write(&mut self, paths: &Paths) -> Result<i64, StoreError> {
        let r = write(paths);
        if r.is_ok() {
            self.unsaved = false;
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_and_saver() {
        let dir = tempfile::tempdir().unwrap();
        let snap = dir.path().join("snap.db");
        let paths = Paths::new(dir.path(), None).with_snapshot(Some(snap.clone()));
        let mut cfg = Config::default();
        let now = util::unix_now();
        // No file configured, or nothing changed: never.
        assert!(!due(&Paths::new(dir.path(), None), &cfg, true, now));
        assert!(!due(&paths, &cfg, false, now));
        // No snapshot yet: at the first change.
        assert!(due(&paths, &cfg, true, now));
        let mut saver = Saver::default();
        assert!(saver.after_run(&paths, &cfg, false, now).is_none());
        let t = saver.after_run(&paths, &cfg, true, now).unwrap().unwrap();
        assert!(!saver.unsaved());
        assert!((t - now).abs() < 5);
        // Fresh: a change waits for the interval, or for the stop. (Asked at the time
        // written, not `now`: the write may have ended in a later second, and a
        // snapshot from the future counts as old.)
        assert!(saver.after_run(&paths, &cfg, true, t).is_none());
        assert!(saver.unsaved());
        assert!(due(&paths, &cfg, true, t + 24 * 3600));
        assert!(!due(&paths, &cfg, true, t + 23 * 3600));
        assert!(due(&paths, &cfg, true, t - 3600), "a clock that went back");
        cfg.storage.snapshot_interval_hours = 0;
        assert!(due(&paths, &cfg, true, t));
        assert!(saver.at_stop(&paths).unwrap().is_ok());
        assert!(saver.at_stop(&paths).is_none(), "nothing new since");
        // The snapshot restores a missing database.
        let db_path = dir.path().join("ram/ripe.db");
        let ram = Paths::new(dir.path(), Some(db_path.clone())).with_snapshot(Some(snap));
        assert!(!db_path.exists());
        super::super::open(&ram).unwrap();
        assert!(db_path.exists());
    }
}
