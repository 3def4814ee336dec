//! One daemon per data directory: its lock file (`.daemon.lock`), and finding the
//! process that holds it, the only one `collect-now` may signal.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::DaemonError;
use crate::config::Paths;
use crate::status;
use crate::util;

/// Held for the daemon's life: one daemon per data directory. Two would collect
/// twice, fight over `status.json`, and the first to stop would take the other's pid
/// out of it.
pub struct Claim(#[allow(dead_code)] fs::File);

fn lock_path(paths: &Paths) -> PathBuf {
    paths.data_dir.join(".daemon.lock")
}

fn lock_err(path: &Path) -> impl Fn(io::Error) -> DaemonError + '_ {
    move |source| DaemonError::Lock {
        path: path.to_path_buf(),
        source,
    }
}

/// Takes the data directory for this daemon (`.daemon.lock`, an `flock` that the
/// kernel releases when the process ends, however it ends).
pub fn claim(paths: &Paths) -> Result<Claim, DaemonError> {
    let path = lock_path(paths);
    fs::create_dir_all(&paths.data_dir).map_err(lock_err(&path))?;
    let f = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(lock_err(&path))?;
    if !util::try_lock_exclusive(&f).map_err(lock_err(&path))? {
        return Err(DaemonError::Running {
            dir: paths.data_dir.clone(),
            pid: recorded_pid(paths),
        });
    }
    Ok(Claim(f))
}

/// The pid `status.json` records for the daemon (not checked: see [`running_pid`]).
fn recorded_pid(paths: &Paths) -> Option<u32> {
    status::read(&paths.status())
        .ok()
        .flatten()
        .and_then(|s| s.pid)
}

/// Whether a daemon holds the lock of this data directory (a missing lock file: no).
fn lock_held(path: &Path) -> Result<bool, DaemonError> {
    let f = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(lock_err(path)(e)),
    };
    // Taking the lock means nobody holds it (it is released again when `f` closes).
    Ok(!util::try_lock_exclusive(&f).map_err(lock_err(path))?)
}

/// The pid of the daemon running on this data directory: its lock is held, and the
/// pid `status.json` names is a single process (never 0, -1 or a group, whatever the
/// file says) that has that lock file open. An error says why there is none.
pub fn running_pid(paths: &Paths) -> Result<libc::pid_t, DaemonError> {
    let path = lock_path(paths);
    if !lock_held(&path)? {
        return Err(DaemonError::NotRunning(paths.data_dir.clone()));
    }
    let pid = recorded_pid(paths).ok_or_else(|| DaemonError::NoPid(path.clone()))?;
    let not_holder = || DaemonError::NotHolder {
        pid,
        lock: path.clone(),
    };
    let single = single_process(pid).ok_or_else(not_holder)?;
    if !has_open(single, &path).map_err(lock_err(&path))? {
        return Err(not_holder());
    }
    Ok(single)
}

/// `pid` as the id of one process other than this one: kill(2) takes 0 as this
/// process group, -1 as every process and other negative values as a group.
pub fn single_process(pid: u32) -> Option<libc::pid_t> {
    let p = libc::pid_t::try_from(pid).ok()?;
    (p > 0 && pid != std::process::id()).then_some(p)
}

/// Whether process `pid` has the file at `path` open (one of its `/proc/PID/fd`
/// entries is the same file). Sharing the open lock file is holding the lock: an
/// `flock` belongs to the open file, and the daemon never passes it on.
fn has_open(pid: libc::pid_t, path: &Path) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let want = fs::metadata(path)?;
    let fds = match fs::read_dir(format!("/proc/{pid}/fd")) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false), // gone
        Err(e) => return Err(e),
    };
    for fd in fds {
        // An fd closed meanwhile, or a socket: not the lock.
        let Ok(m) = fs::metadata(fd?.path()) else {
            continue;
        };
        if m.dev() == want.dev() && m.ino() == want.ino() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `collect-now`: SIGUSR1 to the daemon of this data directory (see [`running_pid`]).
/// Returns its pid.
pub fn signal_collect(paths: &Paths) -> Result<libc::pid_t, DaemonError> {
    let pid = running_pid(paths)?;
    // SAFETY: kill(2) with the pid of one process, checked above to hold the lock.
    if unsafe { libc::kill(pid, libc::SIGUSR1) } != 0 {
        let source = io::Error::last_os_error();
        return Err(DaemonError::Signal { pid, source });
    }
    Ok(pid)
}

/// `run` refuses to collect beside the daemon of the same data directory (they would
/// collect twice and fight over `status.json`): an error naming its pid when one runs.
pub fn refuse_if_running(paths: &Paths) -> Result<(), DaemonError> {
    if !lock_held(&lock_path(paths))? {
        return Ok(());
    }
    Err(DaemonError::Collecting {
        dir: paths.data_dir.clone(),
        pid: running_pid(paths).ok(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_single_processes_are_signalled() {
        // 4294967295 would be -1 (every process) through `as`, 0 our own group.
        assert_eq!(single_process(u32::MAX), None);
        assert_eq!(single_process(0), None);
        assert_eq!(single_process(1 << 31), None);
        assert_eq!(single_process(std::process::id()), None);
        assert_eq!(single_process(1234), Some(1234));
    }

    #[test]
    fn lock_errors_keep_their_cause() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("not-a-dir");
        fs::write(&file, "").unwrap();
        let e = claim(&Paths::new(&file, None))
            .err()
            .expect("a file as data dir");
        assert!(matches!(e, DaemonError::Lock { .. }), "{e}");
        assert!(e.to_string().contains("not-a-dir"), "{e}");
        let cause = std::error::Error::source(&e).expect("the OS error is kept");
        assert!(cause.downcast_ref::<io::Error>().is_some());
    }

    #[test]
    fn a_process_holds_the_lock_only_with_the_file_open() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path(), None);
        assert!(matches!(
            running_pid(&paths),
            Err(DaemonError::NotRunning(_))
        ));
        let _claim = claim(&paths).unwrap();
        assert!(matches!(running_pid(&paths), Err(DaemonError::NoPid(_))));
        // A pid that is not ours (the claim is held by this process, which
        // `single_process` refuses): pid 1 does not have our lock file open.
        let st = status::Status {
            pid: Some(1),
            ..Default::default()
        };
        status::write(&paths.status(), &st).unwrap();
        let e = running_pid(&paths).unwrap_err();
        assert!(matches!(e, DaemonError::NotHolder { pid: 1, .. }), "{e}");
        assert!(e.to_string().contains("pid 1"), "{e}");
        assert!(matches!(
            refuse_if_running(&paths),
            Err(DaemonError::Collecting { pid: None, .. })
        ));
        let me = libc::pid_t::try_from(std::process::id()).unwrap();
        assert!(has_open(me, &lock_path(&paths)).unwrap());
    }
}
