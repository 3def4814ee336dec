//! `fetch.command`: an upstream request run by an outside program (`uclient-fetch`
//! on OpenWrt, whose TLS library and CA bundle the system keeps up to date), its
//! answer read from the program's standard output.
//!
//! Bounded like the built-in client: one deadline for the whole request, after which
//! the program's process group is killed, and whatever it started that still holds
//! its output (a `setsid` grandchild escapes the group); at most the caller's limit
//! of bytes read from its output (then it is killed too); the end of its error
//! output kept to classify a failure, and logged, never put in the failure text.
//! The answer is parsed as it streams, and only a program that exits with status 0
//! makes a successful source: a non-zero exit fails the source whatever it printed,
//! so stored values are never replaced by a partial answer. The failure is
//! classified from the exit status and the error output as the built-in client's
//! would be (an HTTP 404 is not retried early). The redirects it says it followed
//! (uclient-fetch) are judged as the built-in client's, before the answer is
//! returned (`followed`).

use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::fetch::{Cause, SourceError};
use super::followed::Followed;

/// Error output kept to classify a failure (its end: the error follows any progress).
const STDERR_KEPT: usize = 300;

/// The placeholder replaced by the URL (with its query).
pub(crate) const URL: &str = "{url}";
/// The placeholder replaced by the User-Agent.
pub(crate) const USER_AGENT: &str = "{user_agent}";

/// Runs `argv` for `url`, giving its output to `parse` as a reader that fails with
/// [`SourceError::Timeout`] at `deadline` and [`SourceError::TooLarge`] beyond
/// `limit` bytes.
pub(crate) fn run<T>(
    argv: &[String],
    url: &str,
    user_agent: &str,
    deadline: Instant,
    seconds: u64,
    limit: u64,
    parse: impl FnOnce(&mut dyn Read) -> Result<T, SourceError>,
) -> Result<T, SourceError> {
    // Only the parse is generic: the rest is compiled once, not for each `T`.
    let (mut child, mut out) = start(argv, url, user_agent, deadline, seconds, limit)?;
    let parsed = parse(&mut out);
    match out.end(&mut child, parsed.is_ok()) {
        Some(e) => Err(e),
        None => parsed,
    }
}

/// A failure of the program itself, which may be tried again.
fn fail(program: &str, message: String, cause: Option<Cause>) -> SourceError {
    SourceError::Command {
        program: program.to_string(),
        message,
        transient: true,
        cause,
    }
}

/// Starts `argv` for `url`, its output to be read through the [`Output`].
fn start(
    argv: &[String],
    url: &str,
    user_agent: &str,
    deadline: Instant,
    seconds: u64,
    limit: u64,
) -> Result<(Child, Output), SourceError> {
    let program = argv.first().cloned().unwrap_or_default();
    let args: Vec<String> = argv
        .iter()
        .skip(1)
        .map(|a| a.replace(URL, url).replace(USER_AGENT, user_agent))
        .collect();
    let mut child = Command::new(&program)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so that a timeout kills whatever it started too.
        .process_group(0)
        .spawn()
        .map_err(|e| {
            fail(
                &program,
                format!("cannot be started: {e}"),
                Some(Cause::new(e)),
            )
        })?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        kill_group(&mut child, &[]);
        return Err(fail(&program, "has no output pipes".into(), None));
    };
    // What the pipes are called in /proc, to find whoever else holds them.
    let pipes = [stdout.as_raw_fd(), stderr.as_raw_fd()]
        .iter()
        .filter_map(|fd| std::fs::read_link(format!("/proc/self/fd/{fd}")).ok())
        .collect();
    let out = Output {
        stdout,
        stderr: Some(stderr),
        deadline,
        seconds,
        limit,
        read: 0,
        eof: false,
        timed_out: false,
        errors: Vec::new(),
        followed: Followed::default(),
        url: url.to_string(),
        pipes,
        program,
    };
    Ok((child, out))
}

impl Output {
    /// After the parse (which succeeded when `parsed`): the request's error beyond
    /// the parse's own, if any. Nothing the program started outlives this.
    fn end(mut self, child: &mut Child, parsed: bool) -> Option<SourceError> {
        let seconds = self.seconds;
        // Stopped reading before the end (a bad or too large answer, a timeout):
        // nothing more is wanted from it.
        if self.timed_out || !self.eof {
            kill_group(child, &self.pipes);
            return match self.timed_out {
                true => Some(SourceError::Timeout { seconds }),
                false => {
                    parsed.then(|| fail(&self.program, "output not read to its end".into(), None))
                }
            };
        }
        let status = match self.wait(child) {
            Some(status) => status,
            None => return Some(SourceError::Timeout { seconds }),
        };
        if !status.success() {
            return Some(self.failed(status));
        }
        if !parsed {
            return None;
        }
        // Every line it printed, the redirects it followed among them, is judged.
        if !self.drain_rest() {
            return Some(SourceError::Timeout { seconds });
        }
        let (url, deadline) = (std::mem::take(&mut self.url), self.deadline);
        self.followed.check(&url, deadline, seconds).err()
    }

    /// The error of a program that exited with `status`, not 0: its exit status,
    /// classified by what it said. Its last error line goes to the log only
    /// (escaped), as RIPEstat's `messages` do: it may carry a server's text (busybox
    /// wget's "server returned error: HTTP/1.1 404 REASON", a redirect's target), and
    /// a failure text (in `status.json`, the API and LuCI) says what was wrong, never
    /// what an answer held.
    fn failed(self, status: ExitStatus) -> SourceError {
        let why = match (status.code(), status.signal()) {
            (Some(code), _) => format!("exited with status {code}"),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            _ => "failed".into(),
        };
        let last = self
            .errors
            .split(|&b| b == b'\n' || b == b'\r')
            .map(<[u8]>::trim_ascii)
            .rfind(|l| !l.is_empty());
        if let Some(line) = last {
            let line = String::from_utf8_lossy(line);
            log::warn!("fetch command {}: {why}, saying {line:?}", self.program);
        }
        let (kind, transient) = status.code().map_or((String::new(), true), |code| {
            classify(&self.program, code, &self.errors)
        });
        SourceError::Command {
            message: match kind.is_empty() {
                true => why,
                false => format!("{kind} ({why})"),
            },
            program: self.program,
            transient,
            cause: None,
        }
    }
}

/// What a failed program's exit status and error output say, in the built-in
/// client's terms (`""`: nothing known), and whether waiting may help: not for an
/// HTTP status other than 429 and 5xx, as with that client. uclient-fetch
/// (uclient-fetch.c), like wget: 4 for the network ("Connection error: Connection
/// failed", "... timed out", "Failed to send request: Operation not permitted" when
/// the name does not resolve or the connect fails at once, "SSL error: ..." before a
/// failed handshake), 5 for a certificate (also a router's clock not yet set), 8 for
/// an HTTP error ("HTTP error 404", not printed with `-q`). curl: 6 resolve, 7
/// connect, 22 an HTTP error with `-f` ("The requested URL returned error: 404"), 28
/// timeout, 35, 51, 53, 54, 58 to 60, 64, 66, 77, 80, 82, 83, 90, 91 TLS.
fn classify(program: &str, code: i32, errors: &[u8]) -> (String, bool) {
    let text = errors.to_ascii_lowercase();
    if let Some(status) = printed_status(&text) {
        let transient = SourceError::Http { status }.is_transient();
        return (format!("HTTP status {status}"), transient);
    }
    let has = |w: &[u8]| text.windows(w.len()).any(|x| x == w);
    let (http, tls, net) = (
        "HTTP error, status not printed",
        "TLS failed",
        "connection failed",
    );
    let kind = match program.rsplit_once('/').map_or(program, |(_, name)| name) {
        "curl" => match code {
            22 => http,
            6 => "cannot resolve the host name",
            28 => "timed out",
            35 | 51 | 53 | 54 | 58..=60 | 64 | 66 | 77 | 80 | 82 | 83 | 90 | 91 => tls,
            7 | 52 | 55 | 56 => net,
            _ => "",
        },
        "uclient-fetch" | "wget" => match code {
            8 => http,
            5 => tls,
            4 if has(b"timed out") => "timed out",
            4 if has(b"ssl") => tls,
            4 => net,
            _ => "",
        },
        _ => "",
    };
    (kind.into(), true)
}

/// The HTTP status printed after "error" on a line of `text` (in lower case):
/// "http error 404" (uclient-fetch), "returned error: 404" (curl -f), "error 404: not
/// found." (wget), "error: http/1.1 404 not found" (busybox wget).
fn printed_status(text: &[u8]) -> Option<u16> {
    (0..text.len())
        .filter(|&i| text[i..].starts_with(b"error"))
        .find_map(|i| {
            let rest = &text[i + 5..];
            let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            rest[..end.min(20)]
                .split(|b| !b.is_ascii_digit() && *b != b'.')
                .filter(|t| !t.is_empty())
                .take(2)
                // Not busybox's protocol version, `1.1`, also three bytes long.
                .find(|t| t.len() == 3 && t.iter().all(u8::is_ascii_digit))
                .and_then(|t| std::str::from_utf8(t).ok()?.parse().ok())
                .filter(|s| (100..600).contains(s))
        })
}

/// Kills the process group of `child` (still unreaped, so its id cannot have been
/// reused) and every other process holding one of `pipes`, then reaps the child.
fn kill_group(child: &mut Child, pipes: &[PathBuf]) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        if pid > 0 {
            // SAFETY: kill(2) with a negative pid signals only the group the child
            // leads; the child is not yet reaped, so the group id is still ours.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
    }
    kill_holders(pipes);
    let _ = child.kill();
    let _ = child.wait();
}

/// Kills every process that holds the writing end of one of `pipes` (our ends' names
/// in /proc): what the program started and moved out of its group (`setsid`) but
/// left holding its output, which no process group kill reaches. Only what the
/// program started can have that end; a child another thread is starting may hold
/// our reading end for a moment (until its exec), and is left alone.
fn kill_holders(pipes: &[PathBuf]) {
    let Some(procs) = std::fs::read_dir("/proc")
        .ok()
        .filter(|_| !pipes.is_empty())
    else {
        return;
    };
    for entry in procs.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        let writes = |fd: std::fs::DirEntry| {
            let info = entry.path().join("fdinfo").join(fd.file_name());
            std::fs::read_link(fd.path()).is_ok_and(|l| pipes.contains(&l))
                && std::fs::read_to_string(info).is_ok_and(|i| {
                    // The access mode is the last octal digit of the flags: 1 writes.
                    i.lines()
                        .find_map(|l| l.strip_prefix("flags:"))
                        .is_some_and(|f| f.trim().ends_with('1'))
                })
        };
        if fds.flatten().any(writes) {
            // SAFETY: kill(2) of one process, which holds the program's pipe.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// The program's output pipes while it runs.
struct Output {
    stdout: ChildStdout,
    /// `None` once it is closed.
    stderr: Option<ChildStderr>,
    deadline: Instant,
    seconds: u64,
    limit: u64,
    read: u64,
    /// Standard output has ended.
    eof: bool,
    timed_out: bool,
    /// The end of the error output.
    errors: Vec<u8>,
    /// The redirects it says it followed.
    followed: Followed,
    /// The URL it was given, for judging them.
    url: String,
    /// The pipes' names in /proc (`pipe:[N]`), for [`kill_holders`].
    pipes: Vec<PathBuf>,
    /// The program, for messages.
    program: String,
}

/// Wraps one of this module's errors for the `Read` interface.
fn wrap(e: SourceError) -> io::Error {
    io::Error::other(e)
}

impl Output {
    /// Waits until standard output (when `want_stdout`) or the error output has
    /// something, at most until the deadline, and at most `cap` when given (then
    /// neither may be ready): which of them are ready.
    fn poll(&mut self, want_stdout: bool, cap: Option<Duration>) -> io::Result<(bool, bool)> {
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                self.timed_out = true;
                return Err(wrap(SourceError::Timeout {
                    seconds: self.seconds,
                }));
            }
            let mut fds = [
                libc::pollfd {
                    fd: if want_stdout {
                        self.stdout.as_raw_fd()
                    } else {
                        -1
                    },
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: self.stderr.as_ref().map_or(-1, |e| e.as_raw_fd()),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            let wait = cap.map_or(left, |c| c.min(left));
            let ms = wait.as_millis().clamp(1, 60_000) as libc::c_int;
            // SAFETY: `fds` is a valid array of two pollfd for the call's duration;
            // negative descriptors are ignored by poll(2).
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            let ready = |f: &libc::pollfd| f.fd >= 0 && f.revents != 0;
            if n > 0 || cap.is_some() {
                return Ok((ready(&fds[0]), ready(&fds[1])));
            }
        }
    }

    /// Reads what the error output has, keeping its start.
    fn drain_stderr(&mut self) {
        let Some(err) = self.stderr.as_mut() else {
            return;
        };
        let mut buf = [0; 1024];
        match err.read(&mut buf) {
            Ok(0) | Err(_) => self.stderr = None,
            Ok(n) => {
                self.followed.feed(&buf[..n]);
                self.errors.extend_from_slice(&buf[..n]);
                let over = self.errors.len().saturating_sub(STDERR_KEPT);
                self.errors.drain(..over);
            }
        }
    }

    /// After the program exited (and whatever it started was killed): reads what is
    /// left in its error output. False if the deadline passed first.
    fn drain_rest(&mut self) -> bool {
        while self.stderr.is_some() {
            match self.poll(false, Some(Duration::ZERO)) {
                Ok((_, true)) => self.drain_stderr(),
                // Empty, and held open by something that survived: all it said is read.
                Ok((_, false)) => return true,
                Err(_) => return false,
            }
        }
        true
    }

    /// Waits for the program to exit after its output ended, at most until the
    /// deadline (then it is killed: `None`). Its process group is killed either way,
    /// so nothing it started outlives it.
    fn wait(&mut self, child: &mut Child) -> Option<ExitStatus> {
        loop {
            if let Some(status) = exited(child) {
                kill_group(child, &self.pipes);
                return Some(status);
            }
            let step = match self.stderr.is_some() {
                // Error output still open: read it while waiting, looking at the
                // exit often (something it started may keep the pipe open).
                true => self
                    .poll(false, Some(Duration::from_millis(20)))
                    .map(|(_, err)| err),
                false => {
                    std::thread::sleep(Duration::from_millis(5));
                    match Instant::now() >= self.deadline {
                        true => Err(io::ErrorKind::TimedOut.into()),
                        false => Ok(false),
                    }
                }
            };
            match step {
                Ok(true) => self.drain_stderr(),
                Ok(false) => {}
                Err(_) => {
                    kill_group(child, &self.pipes);
                    return None;
                }
            }
        }
    }
}

/// The exit status of `child` if it has exited, without reaping it (so that its
/// process group can still be killed safely).
fn exited(child: &Child) -> Option<ExitStatus> {
    let pid = libc::id_t::try_from(child.id()).ok()?;
    // SAFETY: an all-zero siginfo_t is a valid value to be filled in by waitid(2).
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid siginfo_t; WNOWAIT leaves the child waitable.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: waitid filled in `info` (si_pid 0 means not exited yet).
    if r != 0 || unsafe { info.si_pid() } == 0 {
        return None;
    }
    // SAFETY: for CLD_* codes si_status is the exit code or the signal.
    let status = unsafe { info.si_status() };
    Some(match info.si_code {
        libc::CLD_EXITED => ExitStatus::from_raw((status & 0xff) << 8),
        _ => ExitStatus::from_raw(status & 0x7f),
    })
}

impl Read for Output {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.eof || buf.is_empty() {
            return Ok(0);
        }
        loop {
            let (out, err) = self.poll(true, None)?;
            if err {
                self.drain_stderr();
            }
            if !out {
                continue;
            }
            // One more byte than allowed tells "exactly at the limit" from "over".
            let room = (self.limit + 1 - self.read).min(buf.len() as u64) as usize;
            let n = match self.stdout.read(&mut buf[..room]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => r?,
            };
            if n == 0 {
                self.eof = true;
                return Ok(0);
            }
            self.read += n as u64;
            if self.read > self.limit {
                return Err(wrap(SourceError::TooLarge { limit: self.limit }));
            }
            return Ok(n);
        }
    }
}

#[cfg(test)]
mod tests;
