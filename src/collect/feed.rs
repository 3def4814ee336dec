//! URL feeds: plain lists of addresses and prefixes (Spamhaus DROP, a service's
//! `ipv4.txt`). The first token of a line is its value; `#` and `;` start comments;
//! CRLF line ends and a UTF-8 byte order mark are accepted. Lines that are not an
//! address or prefix are skipped and counted, as RIPEstat's invalid values are.
//!
//! The body is read as it streams, one line at a time through a bounded buffer: a
//! feed costs the memory of the values it yields, whatever its size.

use crate::util::map::SortedMap;
use std::io::{BufRead, BufReader, Read};
use std::time::Duration;

use ipnet::IpNet;

use super::fetch::{Fetched, Keep, SourceError};
use super::fetcher::{from_io, Fetcher, Request, Transport, Validators};
use crate::config::{Config, MinPrefix};

/// Longest line read as a value; a longer one is skipped as invalid (a prefix with
/// a comment is far shorter).
pub const MAX_LINE: usize = 1024;

/// The read buffer: one `read` of the body at a time.
const READ_BUFFER: usize = 16 << 10;

/// Shortest time a feed download is given, whatever `ripe.timeout_seconds` says: a
/// feed of several MiB takes longer than one RIPEstat answer.
const MIN_TIMEOUT: Duration = Duration::from_secs(60);

/// Where [`read_lines`] hands each value, or why a line is not one.
pub type LineSink<'a> = dyn FnMut(Result<&str, String>) -> Result<(), SourceError> + 'a;

/// What one line of a feed holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line<'a> {
    /// Empty, or only a comment.
    Nothing,
    /// The value's text (the line's first token, comment cut off).
    Value(&'a str),
}

/// The value of one line (without its line end). A fuzz entry point: any input
/// gives an answer, never a panic.
///
/// ```
/// use ripe_cidr_collector::collect::feed::{parse_line, Line};
/// assert_eq!(parse_line("1.2.3.0/24 ; SBL123"), Line::Value("1.2.3.0/24"));
/// assert_eq!(parse_line("  # comment"), Line::Nothing);
/// ```
pub fn parse_line(line: &str) -> Line<'_> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let line = line.strip_prefix('\u{feff}').unwrap_or(line);
    let end = line.find(['#', ';']).unwrap_or(line.len());
    match line[..end].split_whitespace().next() {
        Some(token) => Line::Value(token),
        None => Line::Nothing,
    }
}

/// Reads a feed body line by line, handing each value (or why a line is not one) to
/// `sink`. Memory: the read buffer and one line of at most [`MAX_LINE`] bytes.
pub fn read_lines(body: &mut dyn Read, sink: &mut LineSink) -> Result<(), SourceError> {
    read_lines_as(body, parse_line, sink)
}

/// [`read_lines`] handing each line whole (its line end cut off): bgp.tools' JSON
/// lines, whose first token would be `{"CIDR":` when written with spaces.
pub fn read_whole_lines(body: &mut dyn Read, sink: &mut LineSink) -> Result<(), SourceError> {
    read_lines_as(body, whole_line, sink)
}

fn whole_line(line: &str) -> Line<'_> {
    Line::Value(line.strip_suffix('\r').unwrap_or(line))
}

/// How a line's text is read.
type LineParser = for<'a> fn(&'a str) -> Line<'a>;

fn read_lines_as(
    body: &mut dyn Read,
    parse: LineParser,
    sink: &mut LineSink,
) -> Result<(), SourceError> {
    let mut r = BufReader::with_capacity(READ_BUFFER, body);
    let mut line: Vec<u8> = Vec::with_capacity(256);
    let (mut too_long, mut number) = (false, 0usize);
    let mut first = true;
    loop {
        let buf = r.fill_buf().map_err(from_io)?;
        if buf.is_empty() {
            break;
        }
        let (part, newline) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], true),
            None => (buf, false),
        };
        if !too_long && line.len() + part.len() > MAX_LINE {
            too_long = true;
            line.clear();
        } else if !too_long {
            line.extend_from_slice(part);
        }
        let used = part.len() + usize::from(newline);
        r.consume(used);
        if newline {
            number += 1;
            not_a_list(&line, &mut first)?;
            one_line(&line, too_long, number, parse, sink)?;
            line.clear();
            too_long = false;
        }
    }
    if !line.is_empty() || too_long {
        not_a_list(&line, &mut first)?;
        one_line(&line, too_long, number + 1, parse, sink)?;
    }
    Ok(())
}

/// Fails on a first line (the first that is not blank; `first` says whether it is
/// still to come) that shows the body is no list at all: an HTML page (a mirror's
/// error page) or a gzip stream nobody asked for. Either would otherwise be a list of
/// invalid lines, stored as nothing.
fn not_a_list(line: &[u8], first: &mut bool) -> Result<(), SourceError> {
    let t = line
        .strip_prefix("\u{feff}".as_bytes())
        .unwrap_or(line)
        .trim_ascii_start();
    if !*first || t.is_empty() {
        return Ok(());
    }
    *first = false;
    let what = match t {
        [0x1f, 0x8b, ..] => "a gzip-compressed body, which was not asked for",
        [b'<', ..] => "an HTML page, not a list",
        _ => return Ok(()),
    };
    Err(SourceError::BadBody(what.into()))
}

/// An answer with lines but not one valid value is a failure, not an empty list:
/// a broken or hostile body (random bytes from a `fetch.command`) must not look like
/// a source that emptied.
pub(super) fn some_valid(f: Fetched) -> Result<Fetched, SourceError> {
    if f.values.is_empty() && f.skipped > 0 {
        return Err(SourceError::BadBody(format!(
            "no valid line: {} lines are not an address or prefix",
            f.skipped
        )));
    }
    Ok(f)
}

/// One line of [`read_lines`].
fn one_line(
    bytes: &[u8],
    too_long: bool,
    number: usize,
    parse: LineParser,
    sink: &mut LineSink,
) -> Result<(), SourceError> {
    if too_long {
        return sink(Err(format!(
            "line {number} is longer than {MAX_LINE} bytes"
        )));
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return sink(Err(format!("line {number} is not UTF-8")));
    };
    match parse(text) {
        Line::Nothing => Ok(()),
        Line::Value(v) => sink(Ok(v)),
    }
}

/// The values of a whole feed held in memory, as collection keeps them (invalid
/// lines counted, prefixes shorter than the default `min_prefix` skipped). A fuzz
/// entry point.
pub fn parse_feed(mut bytes: &[u8]) -> Result<Fetched, SourceError> {
    let mut keep = Keep::new("feed".into());
    read_lines(&mut bytes, &mut |v| {
        keep.push(value(v, MinPrefix::default()))
    })?;
    Ok(keep.finish())
}

/// The prefix of one feed value, if valid and not shorter than `min`.
fn value(v: Result<&str, String>, min: MinPrefix) -> Result<IpNet, String> {
    v.and_then(|s| super::ripe::prefix(s, min))
}

/// A feed client for one collection run.
#[derive(Debug)]
pub struct FeedClient {
    fetcher: Fetcher,
    /// A larger body fails the feed (`feed.max_bytes`).
    pub max_bytes: u64,
    /// Shorter prefixes are skipped as invalid.
    pub min_prefix: MinPrefix,
    /// The validators of the last answer of each feed whose values are stored: its
    /// requests are conditional.
    pub since: SortedMap<String, Validators>,
}

impl FeedClient {
    /// A client with the settings of `cfg`, reaching feeds through `transport`.
    pub fn new(cfg: &Config, transport: &Transport) -> FeedClient {
        let timeout = Duration::from_secs(cfg.ripe.timeout_seconds).max(MIN_TIMEOUT);
        FeedClient {
            fetcher: Fetcher::new(transport, timeout),
            max_bytes: cfg.upstreams.feed.max_bytes,
            min_prefix: cfg.min_prefix,
            since: SortedMap::new(),
        }
    }

    /// The values of the feed at `url`. A status other than 2xx, or a body over
    /// `max_bytes`, fails the feed: nothing of it is kept. A 304 to a conditional
    /// request is [`Fetched::not_modified`], with nothing read.
    pub fn fetch(&self, url: &str) -> Result<Fetched, SourceError> {
        let rq = Request {
            url,
            query: &[],
            accept: "text/plain, */*;q=0.5",
            limit: self.max_bytes,
        };
        let min = self.min_prefix;
        let since = self.since.get(url).cloned().unwrap_or_default();
        self.fetcher.get_if(&rq, &since, |answer| {
            if answer.status == 304 && !since.is_empty() {
                log::info!("{url}: not modified since the last answer; stored values seen again");
                let mut f = Fetched::new(Vec::new(), 0);
                f.not_modified = true;
                f.validators = Some(since.clone());
                return Ok(f);
            }
            if !(200..300).contains(&answer.status) {
                return Err(SourceError::Http {
                    status: answer.status,
                });
            }
            let mut keep = Keep::new(format!("{url}: skipped from the feed"));
            read_lines(answer.body, &mut |v| keep.push(value(v, min)))?;
            let mut f = some_valid(keep.finish())?;
            f.validators = Some(answer.validators).filter(|v| !v.is_empty());
            Ok(f)
        })
    }
}

#[cfg(test)]
mod tests;
