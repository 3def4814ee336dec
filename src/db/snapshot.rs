//! The snapshot: a copy of a database kept in RAM, on persistent storage (the model of
//! OpenWrt's nlbwmon). Flash is written once a day instead of at every run, and after
//! a reboot the lists are restored from the snapshot instead of being empty until the
//! first fetch succeeds, which may never happen if the WAN needs those routes.
//!
//! The snapshot is the compact dump of `dump` (a few bytes per value), written to a
//! temporary file beside it, synced and renamed over it: a crash at any moment leaves
//! the old or the new snapshot. A restore builds the database from it (snapshots of
//! earlier versions, plain SQLite databases, are restored as well).

use std::fs::{self, File, OpenOptions};
use std::io;
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
    // One read transaction: the dump and the change count it holds agree.
    let (generation, bytes) = db.run(|c| {
        c.execute_batch("BEGIN")?;
        let read = (|| {
            let g: i64 =
                c.query_row("SELECT value FROM meta WHERE key = 'generation'", [], |r| {
                    r.get(0)
                })?;
            Ok((g, super::dump::write(c)?))
        })();
        let _ = c.execute_batch("COMMIT");
        read
    })?;
    {
        use std::io::Write;
        (&lock).write_all(&bytes).map_err(|e| io_err(&tmp, e))?;
    }
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

/// Builds the database `db` (which must not exist) from the snapshot `snap`: the
/// documented way to read a snapshot with standard tools (`sqlite3 db`) is the
/// program's own restore, `ripe-cidr-collector --db NEW.db --snapshot FILE status`,
/// which calls this. A snapshot that is not valid is [`StoreError::BadSnapshot`].
pub fn restore_into(snap: &Path, db: &Path) -> Result<(), StoreError> {
    match copy_checked(snap, db)? {
        Ok(()) => Ok(()),
        Err(why) => Err(StoreError::BadSnapshot {
            path: snap.to_path_buf(),
            why,
        }),
    }
}

/// Rebuilds a database at `copy` from a compact snapshot, writing no more than
/// [`super::room::Cap`] allows.
fn build_from_dump(bytes: &[u8], copy: &Path) -> Result<Result<(), String>, StoreError> {
    let dir = match copy.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut cap = super::room::Cap::new(bytes.len(), dir);
    let mut c = Connection::open(copy)?;
    cap.apply(&c)?;
    let tx = c.transaction()?;
    let built = (|| -> rusqlite::Result<Result<(), String>> {
        super::schema::create_empty(&tx)?;
        if let Err(why) = super::dump::read(bytes, &tx) {
            return Ok(Err(why));
        }
        tx.execute_batch(super::schema::INDEX)?;
        tx.pragma_update(None, "user_version", super::SCHEMA_VERSION)?;
        Ok(Ok(()))
    })();
    let failure = match &built {
        Ok(Ok(())) => None,
        Ok(Err(why)) => Some(why.clone()),
        Err(e) => Some(e.to_string()),
    };
    if let Some(judged) = failure.and_then(|f| cap.judge(&f, dir)) {
        return judged.map(Err);
    }
    if !matches!(built, Ok(Ok(()))) {
        return Ok(built?);
    }
    tx.commit()?;
    Ok(Ok(()))
}

/// The fuzz target of the snapshot reader: `data` as a whole file, and framed with a
/// valid checksum, read into an empty database of the current schema as a restore
/// does. What reads is written again and reads back to the same snapshot.
#[cfg(fuzzing)]
pub fn fuzz_read(data: &[u8]) {
    fn load(bytes: &[u8]) -> Option<Vec<u8>> {
        let mut c = Connection::open_in_memory().ok()?;
        let tx = c.transaction().ok()?;
        super::schema::create_empty(&tx).ok()?;
        super::dump::read(bytes, &tx).ok()?;
        super::dump::write(&tx).ok()
    }
    for bytes in [data.to_vec(), super::dump::framed(data)] {
        if let Some(again) = load(&bytes) {
            assert_eq!(load(&again).as_ref(), Some(&again));
        }
    }
}

/// Copies the snapshot to `copy`: a compact snapshot is read back into a new
/// database, one of an earlier version (a plain database) is copied through SQLite
/// (`VACUUM INTO` reads every page, so damage shows). `Ok(Err(why))` for a file that
/// is not a valid snapshot, `Err` for anything else (the file could not be read).
///
/// A plain one may be in WAL mode (header bytes 18 and 19 are 2): SQLite opening it
/// in place would make `-wal` and `-shm` beside it, on flash (and on JFFS2, without
/// shared memory, fail). So it is read from a rollback-journal copy beside `copy` (in
/// RAM) and is never opened where it lies; the result is a rollback-journal database,
/// as a compact snapshot's.
fn copy_checked(snap: &Path, copy: &Path) -> Result<Result<(), String>, StoreError> {
    remove_with_journals(copy);
    let bytes = fs::read(snap).map_err(|e| io_err(snap, e))?;
    if super::dump::is_dump(&bytes) {
        let built = build_from_dump(&bytes, copy);
        if !matches!(built, Ok(Ok(()))) {
            remove_with_journals(copy);
        }
        return built;
    }
    // SQLite takes an empty file for an empty database; a snapshot is never empty.
    if !bytes.starts_with(b"SQLite format 3\0") {
        return Ok(Err("neither a snapshot nor a database".into()));
    }
    let mut bytes = bytes;
    if bytes.get(18..20) == Some(&[2, 2]) {
        bytes[18..20].copy_from_slice(&[1, 1]);
    }
    let plain = sibling(copy, ".plain");
    fs::write(&plain, &bytes).map_err(|e| io_err(&plain, e))?;
    drop(bytes);
    let run = || -> rusqlite::Result<()> {
        let c = Connection::open_with_flags(&plain, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        c.execute("VACUUM INTO ?1", [copy.to_string_lossy()])?;
        Ok(())
    };
    let result = run();
    remove_with_journals(&plain);
    match result {
        Ok(()) => Ok(Ok(())),
        Err(e)
            if matches!(
                e.sqlite_error_code(),
                Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
            ) =>
        {
            Ok(Err(e.to_string()))
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
    let stem = sibling(db, ".restore-");
    // What a restore killed half-way left (the database is still missing then).
    if let (Some(dir), Some(prefix)) = (stem.parent(), stem.file_name()) {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        util::remove_stale(dir, &prefix.to_string_lossy());
    }
    let mut tmp = stem.into_os_string();
    tmp.push(util::process_id().to_string());
    let tmp = PathBuf::from(tmp);
    let result = restore(snap, db, &tmp);
    remove_with_journals(&tmp);
    result
}

fn restore(snap: &Path, db: &Path, tmp: &Path) -> Result<bool, StoreError> {
    let started = Instant::now();
    if let Err(why) = copy_checked(snap, tmp)? {
        log::error!("{}: {why}", snap.display());
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

#[cfg(test)]
mod round_trip {
    use super::*;
    use crate::source::Kind;

    fn everything(
        paths: &Paths,
    ) -> (
        Vec<super::super::Row>,
        Vec<super::super::ChangeRow>,
        (i64, i64),
    ) {
        let d = super::super::open(paths).unwrap();
        (
            d.all_rows().unwrap(),
            d.all_changes().unwrap(),
            d.generation().unwrap(),
        )
    }

    #[test]
    fn write_delete_restore_compare_every_row() {
        let dir = tempfile::tempdir().unwrap();
        let snap = dir.path().join("flash/ripe.snapshot");
        let paths = Paths::new(dir.path(), Some(dir.path().join("ram/ripe.db")))
            .with_snapshot(Some(snap.clone()));
        let t0 = util::unix_now() - 10 * 86_400;
        {
            let mut d = super::super::open(&paths).unwrap();
            let v4: Vec<String> = (0..3000)
                .map(|i| format!("10.{}.{}.0/24", i / 256, i % 256))
                .collect();
            let v6: Vec<String> = (0..500).map(|i| format!("2001:db8:{i:x}::/48")).collect();
            d.merge_source(Kind::Asn, "1", &v4, t0, 7).unwrap();
            d.merge_source(Kind::Asn, "2", &v6, t0 + 60, 7).unwrap();
            d.merge_source(
                Kind::Fqdn,
                "a.example",
                &["1.1.1.1".into(), "::1".into()],
                t0,
                7,
            )
            .unwrap();
            d.merge_source(Kind::Asn, "1", &v4[10..], t0 + 9 * 86_400, 7)
                .unwrap();
            d.purge_source(Kind::Asn, "2").unwrap();
            // What scripts store: legacy times, text values, a kind of the future (the
            // triggers of the views would write these; this SQLite lacks their date
            // functions).
            d.conn
                .execute_batch(
                    "INSERT INTO sources (kind, name) VALUES ('feed', 'x');
                     INSERT INTO entries VALUES ((SELECT max(id) FROM sources), '010.1.2.3',
                         '2026-09-01T00:00:00', 1790000000, 0);
                     INSERT INTO history VALUES ('2026-12-01 junk', 1, 1, 'x', 2, NULL);",
                )
                .unwrap();
        }
        let before = everything(&paths);
        assert!(before.1.len() > 3000, "{}", before.1.len());
        let t = write(&paths).unwrap();
        assert!(t > 0);
        let size = fs::metadata(&snap).unwrap().len();
        assert!(size < 3505 * 8, "{size} bytes for 3,505 values");
        let after_write = everything(&paths);
        assert!(!pending(&paths));
        fs::remove_file(&paths.db).unwrap();
        for s in ["-wal", "-shm"] {
            let _ = fs::remove_file(format!("{}{s}", paths.db.display()));
        }
        let restored = everything(&paths);
        assert_eq!(restored.0, before.0, "every row");
        assert_eq!(restored.1, before.1, "every change");
        assert_eq!(restored.2, after_write.2, "restored as saved");
        assert!(!pending(&paths));
    }

    #[test]
    fn a_snapshot_of_an_earlier_version_restores_and_a_bad_one_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let snap = dir.path().join("ripe.snapshot");
        {
            // Version 2 wrote a plain database.
            let c = Connection::open(&snap).unwrap();
            c.execute_batch(super::super::migrate::SCHEMA_V1).unwrap();
            c.execute_batch(super::super::history::SCHEMA_V2).unwrap();
            c.execute_batch(
                "INSERT INTO addresses VALUES ('asn', '1', '10.0.0.0/8', '2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z');
                 PRAGMA user_version = 2;",
            )
            .unwrap();
        }
        let paths = Paths::new(dir.path(), Some(dir.path().join("r/ripe.db")))
            .with_snapshot(Some(snap.clone()));
        let d = super::super::open(&paths).unwrap();
        assert_eq!(d.rows(Kind::Asn, "1").unwrap()[0].value, "10.0.0.0/8");
        drop(d);
        // A compact snapshot with one byte changed fails its checksum.
        write(&paths).unwrap();
        let mut bytes = fs::read(&snap).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 1;
        fs::write(&snap, &bytes).unwrap();
        let e = restore_into(&snap, &dir.path().join("x.db")).unwrap_err();
        assert!(e.to_string().contains("checksum"), "{e}");
        fs::remove_dir_all(dir.path().join("r")).unwrap();
        let d = super::super::open(&paths).unwrap();
        assert!(d.all_rows().unwrap().is_empty(), "started empty");
        assert!(!snap.exists(), "moved aside");
    }

    /// An earlier version's plain snapshot in WAL mode is restored as a rollback-journal
    /// database, and nothing is made beside the snapshot (on flash).
    #[test]
    fn a_wal_mode_snapshot_restores_as_rollback_journal_leaving_nothing_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let snap = dir.path().join("flash/ripe.snapshot");
        fs::create_dir_all(snap.parent().unwrap()).unwrap();
        {
            let c = Connection::open(&snap).unwrap();
            c.execute_batch(super::super::migrate::SCHEMA_V1).unwrap();
            c.execute_batch(
                "PRAGMA journal_mode = WAL;
                 INSERT INTO addresses VALUES ('asn', '1', '10.0.0.0/8', '2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z');
                 PRAGMA user_version = 1;",
            )
            .unwrap();
        }
        let head = fs::read(&snap).unwrap();
        assert_eq!(&head[18..20], &[2, 2], "the fixture is in WAL mode");
        let copy = dir.path().join("ram/copy.db");
        fs::create_dir_all(copy.parent().unwrap()).unwrap();
        restore_into(&snap, &copy).unwrap();
        assert_eq!(
            &fs::read(&copy).unwrap()[18..20],
            &[1, 1],
            "rollback journal"
        );
        let paths = Paths::new(dir.path(), Some(dir.path().join("ram/ripe.db")))
            .with_snapshot(Some(snap.clone()));
        let d = super::super::open(&paths).unwrap();
        assert_eq!(d.rows(Kind::Asn, "1").unwrap()[0].value, "10.0.0.0/8");
        drop(d);
        let beside: Vec<_> = fs::read_dir(snap.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(beside, ["ripe.snapshot"], "files beside the snapshot");
        assert_eq!(fs::read(&snap).unwrap(), head, "the snapshot is unchanged");
        let ram: Vec<_> = fs::read_dir(copy.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("plain"))
            .collect();
        assert!(ram.is_empty(), "{ram:?}");
    }
}
