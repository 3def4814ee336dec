//! Two functions of the C library, defined here for a static musl build so that the
//! linker never takes musl's own (a symbol the program defines is not looked up in
//! `libc.a`). musl's `strftime` and `pthread_setname_np` are the only callers of its
//! `snprintf` in this binary, and with `snprintf` come `printf_core`, `vfprintf` and,
//! with `strftime`, the time-zone reader `do_tzset`: 19,224 bytes of code on mipsel,
//! 10,025 bytes of the `.ipk` (docs/size.md, "Sixth session").
//!
//! * `strftime` is called only by SQLite's `current_time`, `current_date` and
//!   `current_timestamp` (SQLITE_OMIT_DATETIME_FUNCS keeps those three, formatted with
//!   `strftime` from `gmtime_r`): [`format_tm`] writes the conversions they use and
//!   the few other numeric ones, and fails (returns 0, as a `strftime` whose result
//!   does not fit) on any other conversion, never writing a wrong text.
//! * `pthread_setname_np` is called by std for a named thread, on that thread:
//!   `prctl(PR_SET_NAME)`, as musl does for the calling thread. Another thread's name
//!   is not set (`ENOTSUP`), which std never asks for.
//!
//! Only where musl is linked statically (`crt-static`, as `cross/build.sh` builds for
//! the router). A dynamic build (the OpenWrt SDK's, against `libc.so`) would save
//! nothing by it and would interpose the shared library's functions: there and
//! elsewhere the C library's own.

/// The fields of a `struct tm` that [`format_tm`] reads: the year (`tm_year + 1900`),
/// the month 1-12, the day, the hour, the minute and the second.
pub type Civil = [i64; 6];

/// Writes `fmt` with `t` into `out` followed by a NUL, as `strftime` does; returns the
/// length without the NUL, or `None` when a conversion is not one of `%Y %m %d %H %M
/// %S %F %T %%` or the text and its NUL do not fit.
pub fn format_tm(out: &mut [u8], fmt: &[u8], t: &Civil) -> Option<usize> {
    let mut w = Out { buf: out, len: 0 };
    let mut bytes = fmt.iter();
    while let Some(&b) = bytes.next() {
        if b != b'%' {
            w.push(b)?;
            continue;
        }
        match bytes.next()? {
            b'Y' => w.number(t[0], 4)?,
            b'm' => w.number(t[1], 2)?,
            b'd' => w.number(t[2], 2)?,
            b'H' => w.number(t[3], 2)?,
            b'M' => w.number(t[4], 2)?,
            b'S' => w.number(t[5], 2)?,
            b'F' => format_parts(&mut w, t, [(0, 4, b'-'), (1, 2, b'-'), (2, 2, 0)])?,
            b'T' => format_parts(&mut w, t, [(3, 2, b':'), (4, 2, b':'), (5, 2, 0)])?,
            b'%' => w.push(b'%')?,
            _ => return None,
        }
    }
    let len = w.len;
    w.push(0)?;
    Some(len)
}

/// Three fields (index, width, the byte after it or 0) of `%F` or `%T`.
fn format_parts(w: &mut Out<'_>, t: &Civil, parts: [(usize, usize, u8); 3]) -> Option<()> {
    for (i, width, sep) in parts {
        w.number(t[i], width)?;
        if sep != 0 {
            w.push(sep)?;
        }
    }
    Some(())
}

/// A fixed buffer written from the start.
struct Out<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl Out<'_> {
    fn push(&mut self, b: u8) -> Option<()> {
        *self.buf.get_mut(self.len)? = b;
        self.len += 1;
        Some(())
    }

    /// `n` in decimal, zero-padded to `width` digits (a minus sign first).
    fn number(&mut self, n: i64, width: usize) -> Option<()> {
        if n < 0 {
            self.push(b'-')?;
        }
        let mut digits = [0u8; 20];
        let (mut v, mut k) = (n.unsigned_abs(), 0);
        while v > 0 || k < width {
            digits[k] = b'0' + (v % 10) as u8;
            (v, k) = (v / 10, k + 1);
        }
        digits[..k].iter().rev().try_for_each(|&d| self.push(d))
    }
}

#[cfg(all(
    target_os = "linux",
    target_env = "musl",
    target_feature = "crt-static"
))]
mod exported {
    use std::ffi::{c_char, c_int, CStr};

    /// `strftime(3)` for SQLite's three date functions; see the module's comment.
    ///
    /// # Safety
    /// As `strftime`: `s` has room for `max` bytes, `fmt` is a C string, `tm` valid.
    #[no_mangle]
    pub unsafe extern "C" fn strftime(
        s: *mut c_char,
        max: usize,
        fmt: *const c_char,
        tm: *const libc::tm,
    ) -> usize {
        if s.is_null() || fmt.is_null() || tm.is_null() || max == 0 {
            return 0;
        }
        // SAFETY: the caller's promises, as for the C library's `strftime`.
        let (out, fmt, tm) = unsafe {
            (
                std::slice::from_raw_parts_mut(s.cast::<u8>(), max),
                CStr::from_ptr(fmt).to_bytes(),
                &*tm,
            )
        };
        let t = [
            i64::from(tm.tm_year) + 1900,
            i64::from(tm.tm_mon) + 1,
            i64::from(tm.tm_mday),
            i64::from(tm.tm_hour),
            i64::from(tm.tm_min),
            i64::from(tm.tm_sec),
        ];
        // On failure the buffer holds an empty string, never an unterminated part
        // (SQLite reads it back as a C string whatever strftime returned).
        super::format_tm(out, fmt, &t).unwrap_or_else(|| {
            out[0] = 0;
            0
        })
    }

    /// `pthread_setname_np(3)` for the calling thread; see the module's comment.
    ///
    /// # Safety
    /// `name` is a C string.
    #[no_mangle]
    pub unsafe extern "C" fn pthread_setname_np(
        thread: libc::pthread_t,
        name: *const c_char,
    ) -> c_int {
        // SAFETY: pthread_self has no preconditions; `name` is a C string.
        unsafe {
            if libc::pthread_self() != thread {
                return libc::ENOTSUP;
            }
            if CStr::from_ptr(name).to_bytes().len() > 15 {
                return libc::ERANGE;
            }
            if libc::prctl(libc::PR_SET_NAME, name as libc::c_ulong, 0, 0, 0) != 0 {
                return std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EINVAL);
            }
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(fmt: &str, t: &Civil, room: usize) -> Option<String> {
        let mut buf = vec![0xAAu8; room];
        let n = format_tm(&mut buf, fmt.as_bytes(), t)?;
        assert_eq!(buf[n], 0, "NUL-terminated");
        Some(String::from_utf8(buf[..n].to_vec()).unwrap())
    }

    /// The three formats of SQLite's date functions (sqlite3.c, `currentTimeFunc`).
    #[test]
    fn sqlite_formats() {
        let t = [2026, 12, 6, 9, 5, 7];
        let at = |f| run(f, &t, 64);
        assert_eq!(at("%H:%M:%S").as_deref(), Some("09:05:07"));
        assert_eq!(at("%Y-%m-%d").as_deref(), Some("2026-12-06"));
        assert_eq!(
            at("%Y-%m-%d %H:%M:%S").as_deref(),
            Some("2026-12-06 09:05:07")
        );
        assert_eq!(
            at("%F %T 100%%").as_deref(),
            Some("2026-12-06 09:05:07 100%")
        );
    }

    #[test]
    fn years_are_padded_and_signed() {
        assert_eq!(run("%Y", &[7, 1, 1, 0, 0, 0], 8).as_deref(), Some("0007"));
        assert_eq!(
            run("%Y", &[12345, 1, 1, 0, 0, 0], 8).as_deref(),
            Some("12345")
        );
        assert_eq!(
            run("%Y", &[-44, 1, 1, 0, 0, 0], 8).as_deref(),
            Some("-0044")
        );
    }

    /// What `strftime` answers 0 for: no room for the text and its NUL. Any other
    /// conversion fails too rather than write a text the C library would not.
    #[test]
    fn no_room_or_unknown_conversion_is_none() {
        let t = [2026, 12, 6, 9, 5, 7];
        assert_eq!(run("%H:%M:%S", &t, 9).as_deref(), Some("09:05:07"));
        assert_eq!(run("%H:%M:%S", &t, 8), None);
        assert_eq!(run("", &t, 1).as_deref(), Some(""));
        assert_eq!(run("", &t, 0), None);
        for f in ["%a", "%b %e", "%Z", "%", "%Ex"] {
            assert_eq!(run(f, &t, 64), None, "{f}");
        }
    }
}
