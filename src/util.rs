//! Small shared helpers: UTC timestamps, atomic file writes, and JSON ([`json`]).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

pub mod json;
pub mod lean_libc;
pub mod map;
pub mod sort;
pub mod spell;

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Splits seconds since the epoch into (year, month, day, hour, minute, second), UTC.
fn civil(secs: i64) -> (i64, u32, u32, u32, u32, u32) {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's days-to-civil algorithm: exact for the proleptic Gregorian calendar.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        m,
        d,
        (rem / 3600) as u32,
        (rem % 3600 / 60) as u32,
        (rem % 60) as u32,
    )
}

/// Seconds since the epoch of a UTC calendar time (the inverse of `civil`).
pub fn unix_from_civil(y: i64, m: u32, d: u32, hh: u32, mm: u32, ss: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    days * 86_400 + i64::from(hh) * 3600 + i64::from(mm) * 60 + i64::from(ss)
}

/// `YYYY-MM-DDTHH:MM:SSZ` for the given Unix time: the form every stored and printed
/// timestamp has, so that string comparison orders them in time.
pub fn iso(secs: i64) -> String {
    let (y, mo, d, h, mi, s) = civil(secs);
    let Ok(year @ 0..=9999) = u32::try_from(y) else {
        return format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z");
    };
    // By hand: every stored time is printed through here (a lookup or a detailed
    // listing of 10,000 rows prints 20,000), and `format!` took most of its cost.
    let mut b = *b"0000-00-00T00:00:00Z";
    let mut put = |at: usize, n: u32, digits: usize| {
        let mut n = n;
        for i in (at..at + digits).rev() {
            b[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, year, 4);
    put(5, mo, 2);
    put(8, d, 2);
    put(11, h, 2);
    put(14, mi, 2);
    put(17, s, 2);
    String::from_utf8_lossy(&b).into_owned()
}

/// A length of time for people: `6 h`, `90 min`, `45 s` (the largest unit that
/// divides it), not `21600 s`.
pub fn duration(secs: u64) -> String {
    match secs {
        0 => "0 s".into(),
        s if s % 86_400 == 0 => format!("{} d", s / 86_400),
        s if s % 3_600 == 0 => format!("{} h", s / 3_600),
        s if s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

/// "value" or "values" for a count: never "1 values".
pub fn values(n: usize) -> &'static str {
    if n == 1 {
        "value"
    } else {
        "values"
    }
}

/// [`iso`] of the current time.
pub fn now_iso() -> String {
    iso(unix_now())
}

/// `YYYYMMDDTHHMMSSZ`, the suffix of moved-aside files (`*.migrated-<ts>`, `*.corrupt-<ts>`).
pub fn compact_ts(secs: i64) -> String {
    let (y, mo, d, h, mi, s) = civil(secs);
    format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
}

/// Parses the leading `YYYY-MM-DDTHH:MM:SS` of an ISO 8601 time (any fraction or zone
/// suffix is ignored, a zone is taken as UTC) into Unix seconds.
pub fn parse_iso(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || (b[10] != b'T' && b[10] != b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<u32>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    Some(unix_from_civil(i64::from(y), mo, d, h, mi, se))
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory is
/// written, flushed to disk and renamed over the target, so a reader (or a power cut)
/// sees either the old or the new content, never half of it.
///
/// When `path` is a symbolic link, the file it points to is replaced and the link
/// stays: on OpenWrt the data directory lives in RAM and `config.json` links to
/// flash, where changes must survive a reboot.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let resolved;
    let path = match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            resolved = fs::canonicalize(path)?;
            resolved.as_path()
        }
        _ => path,
    };
    let tmp = temp_sibling(path);
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        // Keep the permissions of the file being replaced (a config.json holding
        // api.token may be readable by root only).
        // Best effort: WASI, for one, cannot set permissions.
        let old = fs::metadata(path);
        if old.is_err() {
            own_like_dir(&f, path);
        }
        if let Ok(m) = old {
            let _ = f.set_permissions(m.permissions());
            // And its owner: root editing config.json of a daemon that runs as its
            // own user (OpenWrt) must not leave it a file that user cannot read.
            // Only root may give a file away; for anyone else this changes nothing.
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                let _ = std::os::unix::fs::fchown(&f, Some(m.uid()), Some(m.gid()));
            }
        }
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// `dir/.name.tmp-<pid>-<n>`: unique per process and call, hidden, on the same
/// filesystem as `path` (so the rename is atomic).
fn temp_sibling(path: &Path) -> PathBuf {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.tmp-{}-{n}", process_id()))
}

/// Reads a whole text file of at most `limit` bytes: `Ok(None)` when it is larger.
/// Reading stops after `limit + 1` bytes, so an oversized file costs no more memory
/// than the limit, whatever its size (or a size its metadata does not tell, as for a
/// pipe).
pub fn read_text_capped(path: &Path, limit: u64) -> io::Result<Option<String>> {
    use std::io::Read;
    let f = fs::File::open(path)?;
    let mut bytes = Vec::new();
    f.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Ok(None);
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()))
}

/// For each item, whether an equal item comes before it: the repeats of a list, found
/// in O(n log n) through a sort of positions rather than a hash set (no hash
/// table code on flash). `repeats(&["a", "b", "a"]) == [false, false, true]`.
pub fn repeats<T: Ord>(items: &[T]) -> Vec<bool> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    // Positions break ties: among equal items the first position comes first.
    crate::util::sort::sort_by(&mut order, |&a, &b| (&items[a], a) < (&items[b], b));
    let mut out = vec![false; items.len()];
    for w in order.windows(2) {
        if items[w[0]] == items[w[1]] {
            out[w[1]] = true;
        }
    }
    out
}

/// The process id; WASI has none (std panics there), so 0 stands in.
pub fn process_id() -> u32 {
    #[cfg(target_os = "wasi")]
    return 0;
    #[cfg(not(target_os = "wasi"))]
    return std::process::id();
}

/// Gives a file root just created to the owner of its directory, when that is another
/// user: the CLI or LuCI run as root, the OpenWrt daemon as its own user in a data
/// directory the init script gave it, and must still be able to open the lock, the
/// config and the database for writing. Only root may give files away; for anyone
/// else (or with a root-owned directory) nothing changes.
#[cfg(unix)]
pub fn own_like_dir(f: &fs::File, path: &Path) {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: no arguments, no side effects.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Ok(m) = fs::metadata(dir.unwrap_or(Path::new("."))) {
        if m.uid() != 0 {
            let _ = std::os::unix::fs::fchown(f, Some(m.uid()), Some(m.gid()));
        }
    }
}

/// No owners to give files to (WASI).
#[cfg(not(unix))]
pub fn own_like_dir(_: &fs::File, _: &Path) {}

/// Whether a process with id `pid` runs (`kill(pid, 0)`; `EPERM` says it does, as
/// another user's). Where this cannot be asked, every process runs.
pub fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(p) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // 0 and -1 would ask about groups.
        // SAFETY: signal 0 only checks that the process exists.
        p <= 0
            || unsafe { libc::kill(p, 0) } == 0
            || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Removes the files of `dir` named `prefix`, a process id and nothing or a SQLite
/// journal suffix, whose process no longer runs: what a process killed half-way
/// through a scratch database left behind.
pub fn remove_stale(dir: &Path, prefix: &str) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
            continue;
        };
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let Ok(pid) = rest[..digits].parse::<u32>() else {
            continue;
        };
        let ours = matches!(&rest[digits..], "" | "-wal" | "-shm" | "-journal");
        if ours && pid != process_id() && !process_alive(pid) {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// What the OS said, without Rust's " (os error N)" and lower-case, for a message
/// that goes on after a path: "permission denied", "is a directory".
pub fn io_reason(e: &io::Error) -> String {
    let s = e.to_string();
    let s = s.split(" (os error").next().unwrap_or(&s);
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_lowercase().chain(c).collect())
        .unwrap_or_default()
}

/// An exclusive `flock` on `f`, waiting for it (released when `f` is closed). Through
/// libc rather than `File::lock` so that Rust 1.85 (OpenWrt 23.05's feed) builds it.
#[cfg(unix)]
pub fn lock_exclusive(f: &fs::File) -> io::Result<()> {
    flock(f, libc::LOCK_EX)
}

/// [`lock_exclusive`] without waiting: `Ok(false)` when another holds the lock.
#[cfg(unix)]
pub fn try_lock_exclusive(f: &fs::File) -> io::Result<bool> {
    match flock(f, libc::LOCK_EX | libc::LOCK_NB) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(unix)]
fn flock(f: &fs::File, op: libc::c_int) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: flock only reads the descriptor, which `f` keeps open.
        if unsafe { libc::flock(f.as_raw_fd(), op) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Some platforms (WASI) have no file locks; a single writer is the norm there.
#[cfg(not(unix))]
pub fn lock_exclusive(_: &fs::File) -> io::Result<()> {
    Ok(())
}

/// Without file locks (WASI) every try succeeds.
#[cfg(not(unix))]
pub fn try_lock_exclusive(_: &fs::File) -> io::Result<bool> {
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_marks_every_later_equal_item() {
        assert_eq!(repeats::<u8>(&[]), Vec::<bool>::new());
        assert_eq!(repeats(&["a", "b", "a"]), [false, false, true]);
        assert_eq!(
            repeats(&[3, 1, 3, 3, 2, 1]),
            [false, false, true, true, false, true]
        );
        // Against the obvious quadratic answer, over pseudo-random lists.
        let mut x = 7u32;
        for n in 0..200 {
            let v: Vec<u32> = (0..n)
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    (x >> 16) % 13
                })
                .collect();
            let want: Vec<bool> = (0..v.len()).map(|i| v[..i].contains(&v[i])).collect();
            assert_eq!(repeats(&v), want, "{v:?}");
        }
    }

    #[test]
    fn iso_is_the_formatted_civil_time() {
        let formatted = |t: i64| {
            let (y, mo, d, h, mi, s) = civil(t);
            format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
        };
        let mut t = -62_200_000_000i64;
        while t < 260_000_000_000 {
            assert_eq!(iso(t), formatted(t), "{t}");
            t += 7_919_999_999 / 97;
        }
        for t in [
            -1,
            0,
            59,
            951_782_400,
            4_102_444_799,
            253_402_300_799,
            253_402_300_800,
        ] {
            assert_eq!(iso(t), formatted(t), "{t}");
        }
        assert_eq!(iso(253_402_300_799), "9999-12-31T23:59:59Z");
        assert_eq!(iso(253_402_300_800), "10000-01-01T00:00:00Z");
    }

    #[test]
    fn iso_round_trips() {
        assert_eq!(iso(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(compact_ts(1_700_000_000), "20231114T221320Z");
        for t in [0, 951_782_400, 1_700_000_000, 4_102_444_799] {
            assert_eq!(parse_iso(&iso(t)), Some(t));
        }
        assert_eq!(
            parse_iso("2026-10-02T08:30:00.123456"),
            parse_iso("2026-10-02T08:30:00Z")
        );
        assert_eq!(parse_iso("2026-13-02T08:30:00"), None);
        assert_eq!(parse_iso("yesterday"), None);
    }

    #[cfg(unix)]
    #[test]
    fn atomic_write_keeps_the_owner_when_root() {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: plain system call.
        if unsafe { libc::geteuid() } != 0 {
            let why = "only root can give a file away";
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
            eprintln!("skipped: {why}");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.json");
        fs::write(&p, "{}").unwrap();
        std::os::unix::fs::chown(&p, Some(3691), Some(3692)).unwrap();
        write_atomic(&p, b"{\"asns\": []}").unwrap();
        let m = fs::metadata(&p).unwrap();
        assert_eq!((m.uid(), m.gid()), (3691, 3692));
    }

    #[test]
    fn atomic_write_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.txt");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn atomic_write_keeps_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("flash.json");
        let link = dir.path().join("config.json");
        fs::write(&target, b"old").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&target).unwrap(), b"new");
    }

    #[cfg(unix)]
    #[test]
    fn atomic_write_keeps_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("secret.json");
        fs::write(&p, b"old").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
        write_atomic(&p, b"new").unwrap();
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
