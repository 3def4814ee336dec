//! The redirects a `fetch.command` followed, read from what it prints, so that a
//! public feed cannot make uclient-fetch fetch the router's own services and have
//! their list stored (issue 27, item 9), as it cannot with the built-in client.
//!
//! uclient-fetch (uclient-fetch.c, the OpenWrt package's default) follows up to 10
//! redirects (301, 302, 307) on its own, to any address, and has no option to
//! refuse one. Without `-q` it prints, after following one, `Redirected to PATH on
//! HOST` (the new URL's path, and its host without port, brackets or user). Its
//! `Connecting to ADDR:PORT` line comes only for the first connection (a redirect
//! reconnects in uclient_http_redirect, which prints nothing), so where a redirect
//! connected is not printed: HOST is judged instead, as the built-in client judges
//! where a redirect leads ([`internal`] on HOST itself or on the addresses it
//! resolves to, through the system resolver uclient-fetch uses too). The lines are
//! read as the error output streams, and judged after the program has exited and
//! before its answer is returned, so nothing of a refused answer is stored.
//!
//! PATH and HOST come from the server's `Location`: PATH may hold ` on `, and HOST
//! anything but `/`. So every text after a ` on ` that holds no `/` and may be a host
//! name (at most 253 bytes) is a candidate, and each is judged: an internal one
//! refuses the answer; when none resolves, where the program went is unknown, which
//! refuses it too. Lines the server slips in (a bare `\n` in its `Location`) can
//! only add candidates, never hide one.

use std::net::IpAddr;
use std::time::Instant;

use super::client::{addresses, internal, refused_internal};
use super::fetch::SourceError;
use super::url::Url;

/// How uclient-fetch's line after a followed redirect starts.
const SAID: &[u8] = b"Redirected to ";
/// The longest host name (and so candidate) that resolves.
const MAX_HOST: usize = 253;
/// What is kept of a redirect line's end: the longest host and the ` on ` before it.
const TAIL: usize = MAX_HOST + 4;
/// Redirect lines kept: uclient-fetch follows 10 (the server may slip in more).
const MAX_LINES: usize = 32;

/// The redirect lines of a program's error output.
#[derive(Debug, Default)]
pub(super) struct Followed {
    /// The current line: all of it while it may still be a redirect line, then its
    /// start and at least its last [`TAIL`] bytes.
    line: Vec<u8>,
    /// The current line is not a redirect line: the rest of it is skipped.
    other: bool,
    /// For each redirect line, the hosts it may name.
    hosts: Vec<Vec<String>>,
    /// More redirect lines than [`MAX_LINES`].
    too_many: bool,
}

impl Followed {
    /// Reads more of the error output.
    pub(super) fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                self.end_line();
            } else if !self.other {
                self.line.push(b);
                if self.line.len() <= SAID.len() {
                    self.other = !SAID.starts_with(&self.line);
                } else if self.line.len() > SAID.len() + 2 * TAIL {
                    // A long path: only the end can name the host.
                    let end = self.line.len() - TAIL;
                    self.line.drain(SAID.len()..end);
                }
            }
        }
    }

    /// The current line has ended.
    fn end_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        if std::mem::take(&mut self.other) || line.len() <= SAID.len() {
            return;
        }
        match self.hosts.len() < MAX_LINES {
            true => self.hosts.push(candidates(&line[SAID.len()..])),
            false => self.too_many = true,
        }
    }

    /// After the program exited: the refusal of its answer when it followed a
    /// redirect to an internal address and the configured `url` is not one itself
    /// (whose redirects may go anywhere, as with the built-in client).
    pub(super) fn check(
        &mut self,
        url: &str,
        deadline: Instant,
        seconds: u64,
    ) -> Result<(), SourceError> {
        self.end_line();
        if self.hosts.is_empty() && !self.too_many {
            return Ok(());
        }
        // A configured URL whose host cannot be looked up now counts as public.
        let own = Url::parse(url)
            .ok()
            .and_then(|u| addresses(&u.host, deadline, seconds).ok())
            .is_some_and(|ips| !ips.is_empty() && ips.into_iter().all(internal));
        if own {
            return Ok(());
        }
        if self.too_many {
            return Err(SourceError::Redirect(format!(
                "more than {MAX_LINES} redirects"
            )));
        }
        for hosts in &self.hosts {
            let mut resolved = false;
            // The shortest first: the host uclient-fetch named, unless the path
            // held ` on ` too.
            for host in hosts.iter().rev() {
                let ips: Vec<IpAddr> = addresses(host, deadline, seconds)?;
                if let Some(&ip) = ips.iter().find(|&&ip| internal(ip)) {
                    return Err(refused_internal(ip));
                }
                resolved |= !ips.is_empty();
            }
            if !resolved {
                return Err(SourceError::Redirect(
                    "to a host that does not resolve here".into(),
                ));
            }
        }
        Ok(())
    }
}

/// The hosts `said` (`PATH on HOST`, or the end of it) may name: each text after a
/// ` on ` that holds no `/` and is not longer than a host name.
fn candidates(said: &[u8]) -> Vec<String> {
    let said = String::from_utf8_lossy(said);
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = said[from..].find(" on ") {
        let host = &said[from + at + 4..];
        if !host.is_empty() && host.len() <= MAX_HOST && !host.contains('/') {
            found.push(host.to_string());
        }
        // ` on ` is ASCII: one byte on is a character boundary.
        from += at + 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn read(text: &str) -> Followed {
        let mut f = Followed::default();
        // In pieces, as a pipe may give it.
        for piece in text.as_bytes().chunks(7) {
            f.feed(piece);
        }
        f.end_line();
        f
    }

    fn check(url: &str, said: &str) -> Result<(), SourceError> {
        let deadline = Instant::now() + Duration::from_secs(10);
        read(said).check(url, deadline, 10)
    }

    #[test]
    fn redirect_lines_name_their_hosts() {
        let said = "Downloading 'http://a.example/x'\nConnecting to 192.0.2.1:80\n\
                    Redirected to /list on 192.0.2.7\nRedirected to /a on b/c on ::1\n\
                    Writing to stdout\nDownload completed (12 bytes)\n";
        let f = read(said);
        assert_eq!(f.hosts, [vec!["192.0.2.7"], vec!["::1"]]);
        // A long path keeps its end; ` on ` in the path's last part makes two.
        let long = format!("Redirected to /{} on feeds on 10.1.2.3\n", "x".repeat(5000));
        assert_eq!(read(&long).hosts, [vec!["feeds on 10.1.2.3", "10.1.2.3"]]);
        assert!(read("Redirected to\nRedirected  to / on ::1\n")
            .hosts
            .is_empty());
        let many = "Redirected to / on 192.0.2.7\n".repeat(MAX_LINES + 1);
        assert!(read(&many).too_many);
    }

    #[test]
    fn internal_targets_are_refused_unless_the_url_is_internal() {
        let public = "http://192.0.2.1:8080/feed.txt";
        assert_eq!(check(public, "Connecting to 192.0.2.1:8080\n"), Ok(()));
        assert_eq!(check(public, "Redirected to /x on 192.0.2.9\n"), Ok(()));
        for said in [
            "Redirected to /x on 127.0.0.1\n",
            "Redirected to /x on 192.0.2.9\nRedirected to /y on 10.0.0.1\n",
            "Redirected to /x on ::ffff:169.254.169.254\n",
            "Redirected to /x on localhost\n",
            // A path that pretends to end with a public host.
            "Redirected to /x on 192.0.2.9 on 127.0.0.1\n",
        ] {
            let e = check(public, said).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with("redirect refused: to an internal address ("),
                "{said}: {e}"
            );
            // The user's own URL on the router may lead anywhere.
            assert_eq!(check("http://127.0.0.1:9/x", said), Ok(()), "{said}");
            assert_eq!(check("http://[::1]:9/x", said), Ok(()), "{said}");
        }
    }
}
