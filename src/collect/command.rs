//! `fetch.command`: an upstream request run by an outside program (`uclient-fetch`
//! on OpenWrt, whose TLS library and CA bundle the system keeps up to date), its
//! answer read from the program's standard output.
//!
//! Bounded like the built-in client: one deadline for the whole request, after which
//! the program's process group is killed; at most the caller's limit of bytes read
//! from its output (then it is killed too); its error output kept to a few hundred
//! bytes for the message. The answer is parsed as it streams, and only a program that
//! exits with status 0 makes a successful source: a non-zero exit fails the source
//! whatever it printed, so stored values are never replaced by a partial answer.

use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::fetch::{Cause, SourceError};

/// Error output kept for the message.
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
    let program = argv.first().cloned().unwrap_or_default();
    let fail = |message: String, cause: Option<Cause>| SourceError::Command {
        program: program.clone(),
        message,
        cause,
    };
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
        .map_err(|e| fail(format!("cannot be started: {e}"), Some(Cause::new(e))))?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        kill_group(&mut child);
        return Err(fail("has no output pipes".into(), None));
    };
    let mut out = Output {
        stdout,
        stderr: Some(stderr),
        deadline,
        seconds,
        limit,
        read: 0,
        eof: false,
        timed_out: false,
        errors: Vec::new(),
    };
    let parsed = parse(&mut out);
    // Stopped reading before the end (a bad or too large answer, a timeout): nothing
    // more is wanted from it.
    if out.timed_out || !out.eof {
        kill_group(&mut child);
        return match out.timed_out {
            true => Err(SourceError::Timeout { seconds }),
            false => parsed.and(Err(fail("output not read to its end".into(), None))),
        };
    }
    let status = match out.wait(&mut child) {
        Some(status) => status,
        None => return Err(SourceError::Timeout { seconds }),
    };
    if status.success() {
        return parsed;
    }
    let why = match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "failed".into(),
    };
    let said = super::fetch::snippet(&out.errors);
    Err(fail(
        match out.errors.is_empty() {
            true => why,
            false => format!("{why}: {said}"),
        },
        None,
    ))
}

/// Kills the process group of `child` (still unreaped, so its id cannot have been
/// reused), then reaps it.
fn kill_group(child: &mut Child) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        if pid > 0 {
            // SAFETY: kill(2) with a negative pid signals only the group the child
            // leads; the child is not yet reaped, so the group id is still ours.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
    }
    let _ = child.kill();
    let _ = child.wait();
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
    /// The start of the error output.
    errors: Vec<u8>,
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
                let keep = n.min(STDERR_KEPT.saturating_sub(self.errors.len()));
                self.errors.extend_from_slice(&buf[..keep]);
            }
        }
    }

    /// Waits for the program to exit after its output ended, at most until the
    /// deadline (then it is killed: `None`). Its process group is killed either way,
    /// so nothing it started outlives it.
    fn wait(&mut self, child: &mut Child) -> Option<ExitStatus> {
        loop {
            if let Some(status) = exited(child) {
                kill_group(child);
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
                    kill_group(child);
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
#[path = "command_tests.rs"]
mod tests;
