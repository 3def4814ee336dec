//! `healthcheck api | daemon`: a container health check that needs nothing but the
//! binary (the runtime image has no shell and no curl). Exit 0 healthy, 1 unhealthy
//! with the reason as one log line on stderr, 2 usage.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use super::{CliError, Outcome, UsageError};
use crate::config::{self, Paths};
use crate::{status, util};

/// Everything `healthcheck api` may take, connect, send and read included.
const API_TIMEOUT: Duration = Duration::from_secs(3);
/// More than a `/health` answer ever is: a bigger one is not ours.
const MAX_ANSWER: u64 = 16 * 1024;
/// The default `--max-age`: three heartbeats (written every 60 s at the latest).
pub const DEFAULT_MAX_AGE: u64 = 180;

/// What to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// `GET /health` answers 200 with `"status":"ok"`.
    Api {
        /// Ask here instead of `api.listen` from `config.json`.
        listen: Option<SocketAddr>,
    },
    /// `status.json` has a pid and a heartbeat at most `max_age` seconds old.
    Daemon {
        /// The oldest heartbeat still healthy, in seconds.
        max_age: u64,
    },
}

/// Builds the check from the words after `healthcheck` and the options given.
pub fn parse(
    rest: &[String],
    listen: Option<SocketAddr>,
    max_age: Option<u64>,
) -> Result<Check, UsageError> {
    let what = match rest {
        [w] => w.as_str(),
        [] => return Err(UsageError("`healthcheck` needs api or daemon".into())),
        [_, extra, ..] => {
            return Err(UsageError(format!(
                "unexpected argument {extra:?} after `healthcheck`"
            )))
        }
    };
    match what {
        "api" if max_age.is_some() => Err(UsageError(
            "--max-age goes with `healthcheck daemon`".into(),
        )),
        "api" => Ok(Check::Api { listen }),
        "daemon" if listen.is_some() => {
            Err(UsageError("--listen goes with `healthcheck api`".into()))
        }
        "daemon" => match max_age.unwrap_or(DEFAULT_MAX_AGE) {
            0 => Err(UsageError("--max-age: must be at least 1 second".into())),
            max_age => Ok(Check::Daemon { max_age }),
        },
        other => Err(UsageError(format!(
            "unknown healthcheck {other:?}: expected api or daemon"
        ))),
    }
}

/// Runs the check: `Ok` (and one line on stdout, kept by `docker inspect`) when
/// healthy, else the reason.
pub fn run(paths: &Paths, check: &Check) -> Result<Outcome, CliError> {
    let line = match check {
        Check::Api { listen } => {
            let addr = match listen {
                Some(a) => *a,
                None => config::load(&paths.config())?.config.api.listen,
            };
            api(addr)?
        }
        Check::Daemon { max_age } => daemon(paths, *max_age)?,
    };
    super::output::print(format!("healthy: {line}\n").as_bytes())?;
    Ok(Outcome::Success)
}

fn unhealthy(msg: String) -> CliError {
    CliError::Other(format!("unhealthy: {msg}"))
}

/// A server listening on every address is asked on the loopback address.
fn reachable(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::new(Ipv4Addr::LOCALHOST.into(), addr.port())
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::new(Ipv6Addr::LOCALHOST.into(), addr.port())
        }
        _ => addr,
    }
}

fn api(addr: SocketAddr) -> Result<String, CliError> {
    let addr = reachable(addr);
    let fail = |what: &str, e: std::io::Error| unhealthy(format!("API at {addr}: {what}: {e}"));
    let start = Instant::now();
    let mut conn =
        TcpStream::connect_timeout(&addr, API_TIMEOUT).map_err(|e| fail("connect", e))?;
    let request = format!("GET /health HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    conn.set_write_timeout(Some(API_TIMEOUT))
        .and_then(|_| conn.write_all(request.as_bytes()))
        .map_err(|e| fail("send", e))?;
    // The timeout is renewed before every read so that the whole answer, not each
    // piece of it, has to arrive in time.
    let mut answer = Vec::new();
    let mut buf = [0u8; 2048];
    loop {
        let left = API_TIMEOUT.saturating_sub(start.elapsed());
        if left.is_zero() {
            return Err(unhealthy(format!(
                "API at {addr}: no complete answer within {} s",
                API_TIMEOUT.as_secs()
            )));
        }
        conn.set_read_timeout(Some(left))
            .map_err(|e| fail("receive", e))?;
        match conn.read(&mut buf) {
            Ok(0) => break,
            Ok(n) if (answer.len() + n) as u64 > MAX_ANSWER => {
                return Err(unhealthy(format!(
                    "API at {addr}: answer longer than {MAX_ANSWER} bytes"
                )))
            }
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(fail("receive", e)),
        }
    }
    judge(&answer).map_err(|m| unhealthy(format!("API at {addr}: {m}")))?;
    Ok(format!("API at {addr} answered 200, status ok"))
}

/// Healthy when the HTTP answer is a 200 whose JSON body has `"status":"ok"`.
fn judge(answer: &[u8]) -> Result<(), String> {
    let head_end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("incomplete HTTP answer")?;
    let head = String::from_utf8_lossy(&answer[..head_end]);
    let status_line = head.lines().next().unwrap_or("");
    let code = status_line.split(' ').nth(1).unwrap_or("");
    if !status_line.starts_with("HTTP/") || code != "200" {
        return Err(format!("answered {:?}", status_line.trim()));
    }
    let body = crate::util::json::parse(&answer[head_end + 4..])
        .map_err(|e| format!("/health body is not JSON: {e}"))?;
    let status = body.get("status");
    if status.and_then(|s| s.as_str()) == Some("ok") {
        return Ok(());
    }
    // As JSON (`"degraded"`), or `missing`: never Rust's `Some(..)`.
    let other = status.map_or_else(|| "missing".to_string(), |s| s.to_string());
    match body.get("error").and_then(|e| e.as_str()) {
        Some(error) => Err(format!("/health status is {other}: {error}")),
        None => Err(format!("/health status is {other}, not \"ok\"")),
    }
}

fn daemon(paths: &Paths, max_age: u64) -> Result<String, CliError> {
    let path = paths.status();
    let shown = path.display();
    let st = status::read(&path)
        .map_err(unhealthy)?
        .ok_or_else(|| unhealthy(format!("{shown} does not exist (daemon not started yet?)")))?;
    let hb = st
        .heartbeat
        .ok_or_else(|| unhealthy(format!("{shown} has no heartbeat")))?;
    // The daemon takes its pid out when it stops.
    let pid = st
        .pid
        .ok_or_else(|| unhealthy(format!("daemon stopped (last heartbeat {hb})")))?;
    let t = util::parse_iso(&hb)
        .ok_or_else(|| unhealthy(format!("{shown}: unreadable heartbeat {hb:?}")))?;
    let age = util::unix_now() - t;
    if age > i64::try_from(max_age).unwrap_or(i64::MAX) {
        return Err(unhealthy(format!(
            "last heartbeat {hb} is {age} s old (more than {max_age} s; pid {pid})"
        )));
    }
    // A daemon alive on a broken config.json collects on the last good one (or
    // nothing): not healthy, as `/health` says `degraded` (contract, "HTTP API").
    config::load(&paths.config()).map_err(|e| {
        unhealthy(format!(
            "{e}; the daemon (pid {pid}) runs on the last good configuration, or on none"
        ))
    })?;
    Ok(format!("daemon pid {pid}, heartbeat {hb} ({age} s ago)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_checks() {
        let w = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let a: SocketAddr = "127.0.0.1:9".parse().unwrap();
        assert_eq!(
            parse(&w(&["api"]), Some(a), None).unwrap(),
            Check::Api { listen: Some(a) }
        );
        assert_eq!(
            parse(&w(&["daemon"]), None, None).unwrap(),
            Check::Daemon { max_age: 180 }
        );
        for (words, l, m) in [
            (&[][..], None, None),
            (&["web"][..], None, None),
            (&["api", "x"][..], None, None),
            (&["api"][..], None, Some(5)),
            (&["daemon"][..], Some(a), None),
            (&["daemon"][..], None, Some(0)),
        ] {
            assert!(parse(&w(words), l, m).is_err(), "{words:?}");
        }
    }

    #[test]
    fn judges_answers() {
        let ok = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"status\":\"ok\"}\n";
        assert_eq!(judge(ok), Ok(()));
        for bad in [
            &b"HTTP/1.1 503 Service Unavailable\r\n\r\n{\"status\":\"error\"}"[..],
            b"HTTP/1.1 200 OK\r\n\r\n{\"status\":\"error\"}",
            b"HTTP/1.1 200 OK\r\n\r\nnot json",
            b"HTTP/1.1 200 OK\r\n",
            b"SSH-2.0-OpenSSH\r\n\r\n",
        ] {
            assert!(judge(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let degraded =
            b"HTTP/1.1 200 OK\r\n\r\n{\"status\":\"degraded\",\"error\":\"config.json: x\"}";
        assert_eq!(
            judge(degraded),
            Err("/health status is \"degraded\": config.json: x".to_string())
        );
        assert_eq!(
            judge(b"HTTP/1.1 200 OK\r\n\r\n{}"),
            Err("/health status is missing, not \"ok\"".to_string())
        );
        assert_eq!(
            reachable("0.0.0.0:8080".parse().unwrap()),
            "127.0.0.1:8080".parse().unwrap()
        );
        assert_eq!(
            reachable("[::]:8080".parse().unwrap()),
            "[::1]:8080".parse().unwrap()
        );
    }
}
