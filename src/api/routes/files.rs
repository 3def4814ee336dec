//! What identifies a file's content without reading it, for answers kept while the
//! files behind them stay as they were (`/health`'s counts and configuration
//! verdict, `/addresses` listings shared between clients).

use std::path::Path;
use std::time::{Duration, SystemTime};

/// Device, inode, size and modification time of a file.
pub(super) type Stat = (u64, u64, u64, SystemTime);

/// What identifies the database's content on disk without opening it: device, inode,
/// size and modification time of the main file and of the WAL (absent: `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FileKey {
    pub(super) main: Stat,
    pub(super) wal: Option<Stat>,
}

#[cfg(unix)]
pub(super) fn stat(path: &Path) -> Option<Stat> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.dev(), m.ino(), m.len(), m.modified().ok()?))
}

#[cfg(not(unix))]
pub(super) fn stat(_: &Path) -> Option<Stat> {
    None
}

pub(super) fn file_key(db: &Path) -> Option<FileKey> {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    Some(FileKey {
        main: stat(db)?,
        // An empty WAL (each connection creates one, the last one deletes it) holds
        // nothing: the same content as none, so open connections do not defeat the cache.
        wal: stat(Path::new(&wal)).filter(|w| w.2 > 0),
    })
}

/// How long the files must have been unchanged before counts taken from them are
/// kept: a write within the same tick of the file system's clock could leave the
/// modification time as it was, one a second later cannot.
pub(super) const QUIET: Duration = Duration::from_secs(1);

impl FileKey {
    /// Neither file has changed for [`QUIET`]: what was read from them now is what
    /// they hold, and any later write shows in the key.
    pub(super) fn settled(&self) -> bool {
        let quiet = |t: SystemTime| t.elapsed().is_ok_and(|d| d >= QUIET);
        quiet(self.main.3) && self.wal.as_ref().is_none_or(|w| quiet(w.3))
    }
}

/// `what` with the state of the database, `config.json` and `services.json`, to share an answer
/// between clients while neither changes; `None` while the database has not settled.
///
/// `what` is the request target (or another text that fully names the answer), and
/// the file states are written field by field: never through `Debug`, which the
/// router build shortens to the type's name (`-Zfmt-debug=shallow`, cross/build.sh),
/// so that every listing and every database state would share one key.
pub(super) fn answer_key(ctx: &super::Context, what: &str) -> Option<String> {
    let files = file_key(&ctx.paths.db).filter(FileKey::settled)?;
    let mut key = format!("{what} db ");
    push_stat(&mut key, Some(&files.main));
    key.push_str(" wal ");
    push_stat(&mut key, files.wal.as_ref());
    key.push_str(" config ");
    push_stat(&mut key, stat(&ctx.paths.config()).as_ref());
    // The catalog decides what a group's services bring.
    key.push_str(" catalog ");
    push_stat(
        &mut key,
        stat(&ctx.paths.data_dir.join("services.json")).as_ref(),
    );
    Some(key)
}

/// Appends a file's state as numbers (`-` for no file).
pub(super) fn push_stat(key: &mut String, s: Option<&Stat>) {
    use std::fmt::Write;
    match s {
        Some((dev, ino, len, mtime)) => {
            let t = mtime
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default();
            let _ = write!(
                key,
                "{dev}:{ino}:{len}:{}.{}",
                t.as_secs(),
                t.subsec_nanos()
            );
        }
        None => key.push('-'),
    }
}
