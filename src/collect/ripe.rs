//! RIPEstat Data API client: the prefixes an autonomous system announces
//! (`announced-prefixes` data call).
//!
//! Only `status`, `status_code`, `messages` and `data.prefixes[].prefix` are read,
//! as the body streams (`json::Scanner`): each prefix is checked and kept in its
//! compact form as soon as it is read, and nothing else of the answer is held, so a
//! large or hostile answer costs no more memory than the values it yields.

use std::cell::Cell;
use std::io::Read;
use std::thread;
use std::time::Duration;

use ipnet::IpNet;

use super::fetch::{Fetched, Keep, SourceError};
use super::fetcher::{Fetcher, Request, Transport};
use super::upstream_json::{bad_body, Next, ScanError, Scanner};
use crate::config::{MinPrefix, RipeConfig};

/// Default cap on the size of an answer. The largest networks announce some ten
/// thousand prefixes, a few MiB of JSON; a cap keeps a broken or hostile server from
/// keeping a router busy (memory does not grow with it: the body is not kept).
pub const DEFAULT_BODY_LIMIT: u64 = 16 << 20;

/// Longest single wait between two attempts, whatever the backoff says.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Longest message of an error answer kept, in bytes.
const MAX_MESSAGE: usize = 300;

/// A RIPEstat client for one collection run.
#[derive(Debug)]
pub struct RipeClient {
    fetcher: Fetcher,
    pub(super) url: String,
    pub(super) sourceapp: String,
    min_peers_seeing: Option<u64>,
    /// Shorter prefixes are skipped as invalid.
    pub min_prefix: MinPrefix,
    /// Extra attempts after a 429, 5xx, transport error or timeout (2 means at most
    /// 3 requests).
    pub retries: u32,
    /// Wait before the first retry; doubled for each further one (1 s, 2 s, 4 s ...).
    pub backoff: Duration,
    /// Longest `Retry-After` that is waited for. When the server asks for a longer
    /// pause, this run gives up on the source instead of hammering it early: the
    /// next run comes soon enough and the stored prefixes stay until their TTL.
    pub max_retry_after: Duration,
    /// Largest answer accepted, in bytes.
    pub body_limit: u64,
    /// Data older than this before the answer's time fails (`trust.max_age_hours`).
    pub max_age_hours: u32,
}

impl RipeClient {
    /// A client with the settings of `cfg` reaching RIPEstat through `transport`,
    /// with a 1 s backoff, a 10 s `Retry-After` limit, a [`DEFAULT_BODY_LIMIT`] and
    /// the default `min_prefix`.
    pub fn new(cfg: &RipeConfig, transport: &Transport) -> RipeClient {
        RipeClient {
            fetcher: Fetcher::new(transport, Duration::from_secs(cfg.timeout_seconds)),
            url: cfg.url.clone(),
            sourceapp: cfg.sourceapp.clone(),
            min_peers_seeing: cfg.min_peers_seeing,
            min_prefix: MinPrefix::default(),
            retries: cfg.retries,
            backoff: Duration::from_secs(1),
            max_retry_after: Duration::from_secs(10),
            body_limit: DEFAULT_BODY_LIMIT,
            max_age_hours: 48,
        }
    }

    /// The prefixes announced by `asn` (`"62041"`; `"AS62041"` is accepted too),
    /// normalised (host bits cleared), sorted and without duplicates. Invalid
    /// prefixes, and those shorter than `min_prefix`, are logged, counted in
    /// [`Fetched::skipped`] and left out.
    pub fn fetch(&self, asn: &str) -> Result<Fetched, SourceError> {
        let asn = crate::source::normalize_asn(asn).map_err(SourceError::Invalid)?;
        self.retrying(&format!("AS{asn}"), || self.fetch_once(&asn))
    }

    /// The prefixes of country `cc` (`NL`; `nl` is accepted too): RIPEstat's
    /// `country-resource-list` at the host of `ripe.url`, its `a-b` ranges split into
    /// exact prefixes. Invalid values are skipped and counted as for ASNs.
    pub fn fetch_country(&self, cc: &str) -> Result<Fetched, SourceError> {
        let cc = crate::source::normalize_country(cc).map_err(SourceError::Invalid)?;
        let url = super::country::url(&self.url);
        let min = self.min_prefix;
        self.retrying(&format!("country {cc}"), || {
            let query = [
                ("resource", cc.as_str()),
                ("sourceapp", self.sourceapp.as_str()),
            ];
            let context = format!("country {cc}: skipped from RIPEstat");
            let what = ("data.resources", "country-resource-list");
            self.get_data(&url, &query, context, what, &mut |sc, keep| {
                super::country::data(sc, keep, min)
            })
        })
    }

    /// Runs `once` until it succeeds, fails for good or the retries are used up
    /// (`name` in the log lines).
    pub(super) fn retrying(
        &self,
        name: &str,
        once: impl Fn() -> Result<Fetched, (SourceError, Option<Duration>)>,
    ) -> Result<Fetched, SourceError> {
        let mut attempt = 0;
        loop {
            let (error, asked_wait) = match once() {
                Ok(fetched) => return Ok(fetched),
                Err(e) => e,
            };
            if attempt >= self.retries || !error.is_transient() {
                return Err(error);
            }
            let backoff = self
                .backoff
                .saturating_mul(1 << attempt.min(16))
                .min(MAX_BACKOFF);
            let wait = match asked_wait {
                Some(asked) if asked > self.max_retry_after => {
                    log::info!(
                        "{name}: {error}; RIPEstat asks to wait {} s, longer than this run \
                         waits, so giving up until the next run",
                        asked.as_secs()
                    );
                    return Err(error);
                }
                Some(asked) => asked.max(backoff),
                None => backoff,
            };
            attempt += 1;
            // Tenths by integer arithmetic: float formatting would link core's
            // float printer (about 15 KB) for this one line (docs/size.md).
            let tenths = wait.as_millis() / 100;
            log::info!(
                "{name}: {error}; retrying in {}.{} s (retry {attempt} of {})",
                tenths / 10,
                tenths % 10,
                self.retries
            );
            thread::sleep(wait);
        }
    }

    /// One request. On failure also returns the server's `Retry-After`, if any.
    fn fetch_once(&self, asn: &str) -> Result<Fetched, (SourceError, Option<Duration>)> {
        let resource = format!("AS{asn}");
        let min_peers = self.min_peers_seeing.map(|n| n.to_string());
        let mut query = vec![
            ("resource", resource.as_str()),
            ("sourceapp", self.sourceapp.as_str()),
        ];
        if let Some(n) = &min_peers {
            query.push(("min_peers_seeing", n.as_str()));
        }
        let min = self.min_prefix;
        let context = format!("AS{asn}: skipped from RIPEstat");
        self.get_data(
            &self.url,
            &query,
            context,
            ("data.prefixes", "announced-prefixes"),
            &mut |sc, keep| {
                data(sc, &mut |p| {
                    keep.push(p.map_err(String::from).and_then(|p| prefix(p, min)))
                })
            },
        )
    }

    /// One request to a RIPEstat data call at `url`, whose `data` is read by `data`
    /// into the values kept; `list` names them in errors (`data.prefixes`).
    pub(super) fn get_data(
        &self,
        url: &str,
        query: &[(&str, &str)],
        context: String,
        (list, call): (&str, &str),
        data: &mut dyn FnMut(&mut Scanner, &mut Keep) -> Result<bool, ScanError>,
    ) -> Result<Fetched, (SourceError, Option<Duration>)> {
        let rq = Request {
            url,
            query,
            accept: "application/json",
            limit: self.body_limit,
        };
        let wait = Cell::new(None);
        self.fetcher
            .get(&rq, |answer| {
                wait.set(answer.retry_after);
                let mut keep = Keep::new(context);
                let read = read_data(answer.body, &mut |sc| data(sc, &mut keep));
                judge(answer.status, read, keep, (list, call, self.max_age_hours))
            })
            .map_err(|e| (e, wait.get()))
    }
}

/// What an answer says besides its prefixes.
#[derive(Debug, Default)]
pub(super) struct Head {
    /// `status`: `ok`, or an error.
    status: Option<String>,
    /// `status_code`, when a number.
    status_code: Option<u16>,
    /// The text of `messages`, at most [`MAX_MESSAGE`] bytes.
    message: String,
    /// Whether `data.prefixes` (or the list the data call has) was there.
    pub(super) listed: bool,
    /// The envelope: `data_call_name`, `data_call_status`, `version`, `time`, and
    /// `data.latest_time` and `data.query_time`.
    call: Option<String>,
    call_status: Option<String>,
    version: Option<String>,
    time: Option<String>,
    latest_time: Option<String>,
    query_time: Option<String>,
}

/// The outcome of an answer with HTTP `status`, read into `read`, its prefixes in
/// `keep`; `list` names where they are (`data.prefixes`) when they are missing.
pub(super) fn judge(
    status: u16,
    read: Result<Head, SourceError>,
    keep: Keep,
    (list, call, max_age): (&str, &str, u32),
) -> Result<Fetched, SourceError> {
    let head = check_head(status, read)?;
    envelope::check(&head, call, max_age)?;
    match head.listed {
        true => Ok(keep.finish()),
        false => Err(SourceError::BadBody(format!(
            "no {list} list in the answer"
        ))),
    }
}

/// The head of an answer with HTTP `status`, unless the status or the answer's own
/// `status` says it was refused.
pub(super) fn check_head(
    status: u16,
    read: Result<Head, SourceError>,
) -> Result<Head, SourceError> {
    if !(200..300).contains(&status) {
        // RIPEstat explains a refused query in a JSON body (400 "The parameter
        // 'resource' is required."); that message is logged (see `refused`).
        return Err(match read {
            Ok(head) if head.status.as_deref().is_some_and(|s| s != "ok") => {
                refused(Some(status), &head.message)
            }
            _ => SourceError::Http { status },
        });
    }
    let head = read?;
    match head.status.as_deref() {
        Some("ok") | None => Ok(head),
        Some(_) => Err(refused(
            head.status_code.filter(|&c| c != 200),
            &head.message,
        )),
    }
}

/// RIPEstat's `"status": "error"`. Its `messages` go to the log only (escaped): the
/// failure text ends up in `status.json`, the web page and LuCI, and must not carry
/// what a server (or whatever a redirect reached) wrote.
fn refused(status: Option<u16>, said: &str) -> SourceError {
    log::warn!("RIPEstat refused a query, saying {said:?}");
    SourceError::Upstream {
        upstream: "RIPEstat",
        status,
        message: "the query was refused (its message is in the log)".into(),
    }
}

/// The prefix `s` as stored, if valid and not shorter than `min`.
pub(crate) fn prefix(s: &str, min: MinPrefix) -> Result<IpNet, String> {
    let net = crate::source::normalize_prefix(s)?
        .parse::<IpNet>()
        .map_err(|_| format!("invalid prefix {s:?}"))?;
    let (least, family) = match net {
        IpNet::V4(_) => (min.ipv4, "ipv4"),
        IpNet::V6(_) => (min.ipv6, "ipv6"),
    };
    if net.prefix_len() < least {
        return Err(format!(
            "prefix {net} is shorter than /{least} (min_prefix.{family})"
        ));
    }
    Ok(net)
}

/// What one prefix entry gave: the text, or why there is none.
type Item<'a> = Result<&'a str, &'static str>;

/// Reads a RIPEstat answer, handing each `data.prefixes[].prefix` to `sink` as it
/// comes.
#[cfg(any(test, fuzzing))]
fn read_answer(
    body: &mut dyn Read,
    sink: &mut dyn FnMut(Item<'_>) -> Result<(), SourceError>,
) -> Result<Head, SourceError> {
    read_data(body, &mut |sc| data(sc, sink))
}

/// Reads a RIPEstat answer of any data call: its status and messages here, its
/// `data` by `data` (which says whether it held the list the call is for).
pub(super) fn read_data(
    body: &mut dyn Read,
    data: &mut dyn FnMut(&mut Scanner) -> Result<bool, ScanError>,
) -> Result<Head, SourceError> {
    let mut sc = Scanner::new(body);
    let read = walk(&mut sc, data).and_then(|head| sc.end().map(|_| head));
    let mut head = read.map_err(|e| bad_body(e, "RIPEstat", sc.start()))?;
    head.latest_time = sc.latest_time.take();
    head.query_time = sc.query_time.take();
    Ok(head)
}

/// The keys of the answer that are read.
enum Key {
    Status,
    StatusCode,
    Messages,
    Data,
    Envelope(usize),
    Other,
}

/// Walks the top-level object.
fn walk(
    sc: &mut Scanner,
    data: &mut dyn FnMut(&mut Scanner) -> Result<bool, ScanError>,
) -> Result<Head, ScanError> {
    sc.begin_object()?;
    let mut head = Head::default();
    while let Some(key) = sc.next_key()? {
        let key = match key {
            "status" => Key::Status,
            "status_code" => Key::StatusCode,
            "messages" => Key::Messages,
            "data" => Key::Data,
            "data_call_name" => Key::Envelope(0),
            "data_call_status" => Key::Envelope(1),
            "version" => Key::Envelope(2),
            "time" => Key::Envelope(3),
            _ => Key::Other,
        };
        match key {
            Key::Status if sc.null()? => head.status = None,
            Key::Status => head.status = Some(sc.string()?.unwrap_or("(too long)").to_string()),
            Key::StatusCode if sc.peek()? == Next::Number => {
                head.status_code = sc.number()?.parse().ok();
            }
            Key::Messages => head.message = messages(sc)?,
            Key::Data => head.listed = data(sc)?,
            Key::Envelope(i) if sc.peek()? == Next::String => {
                let v = Some(sc.string()?.unwrap_or("(too long)").to_string());
                match i {
                    0 => head.call = v,
                    1 => head.call_status = v,
                    2 => head.version = v,
                    _ => head.time = v,
                }
            }
            Key::StatusCode | Key::Envelope(_) | Key::Other => sc.skip()?,
        }
    }
    Ok(head)
}

/// `data`: whether it has a `prefixes` list, whose entries go to `sink`.
fn data(
    sc: &mut Scanner,
    sink: &mut dyn FnMut(Item<'_>) -> Result<(), SourceError>,
) -> Result<bool, ScanError> {
    if sc.null()? {
        return Ok(false);
    }
    sc.begin_object()?;
    let mut listed = false;
    while let Some(key) = sc.next_key()? {
        if let t @ ("latest_time" | "query_time") = key {
            let latest = t == "latest_time";
            sc.note_time(latest)?;
            continue;
        }
        if key != "prefixes" || sc.null()? {
            sc.skip()?;
            continue;
        }
        sc.begin_array()?;
        listed = true;
        while sc.next_item()? {
            entry(sc, sink)?;
        }
    }
    Ok(listed)
}

/// One `data.prefixes[]` entry: an object whose `prefix` goes to `sink`; its
/// `timelines` and other keys are skipped. A missing or odd `prefix` is one invalid
/// value, not a failed answer.
fn entry(
    sc: &mut Scanner,
    sink: &mut dyn FnMut(Item<'_>) -> Result<(), SourceError>,
) -> Result<(), ScanError> {
    sc.begin_object()?;
    let mut seen = false;
    while let Some(key) = sc.next_key()? {
        if key != "prefix" || seen {
            sc.skip()?;
            continue;
        }
        seen = true;
        let item = match sc.peek()? {
            Next::String => sc.string()?.ok_or("prefix is too long"),
            _ => {
                sc.skip()?;
                Err("prefix is missing or not a string")
            }
        };
        sink(item).map_err(super::upstream_json::failed)?;
    }
    if !seen {
        sink(Err("prefix is missing or not a string")).map_err(super::upstream_json::failed)?;
    }
    Ok(())
}

/// The text of RIPEstat's `messages` (`[["error", "text"], ...]`): the error
/// messages, or all of them when none is marked as an error, at most
/// [`MAX_MESSAGE`] bytes.
fn messages(sc: &mut Scanner) -> Result<String, ScanError> {
    let (mut errors, mut others) = (Vec::new(), Vec::new());
    if sc.peek()? != Next::Array {
        sc.skip()?;
        return Ok(pick_message(errors, others));
    }
    sc.begin_array()?;
    while sc.next_item()? {
        match sc.peek()? {
            Next::String => {
                let text = sc.string()?.unwrap_or("(too long)").to_string();
                keep_text(&mut others, text);
            }
            Next::Array => {
                let (mut level, mut text, mut i) = (None, None, 0);
                sc.begin_array()?;
                while sc.next_item()? {
                    match (i, sc.peek()?) {
                        (0, Next::String) => level = sc.string()?.map(|l| l == "error"),
                        (1, Next::String) => text = sc.string()?.map(str::to_string),
                        _ => sc.skip()?,
                    }
                    i += 1;
                }
                if let Some(text) = text {
                    match level {
                        Some(true) => keep_text(&mut errors, text),
                        _ => keep_text(&mut others, text),
                    }
                }
            }
            _ => sc.skip()?,
        }
    }
    Ok(pick_message(errors, others))
}

/// Adds a message unless enough text is kept already.
fn keep_text(list: &mut Vec<String>, text: String) {
    if list.iter().map(|t| t.len() + 2).sum::<usize>() <= MAX_MESSAGE {
        list.push(text);
    }
}

/// The error messages, else the others, joined and cut to [`MAX_MESSAGE`] bytes.
fn pick_message(errors: Vec<String>, others: Vec<String>) -> String {
    let chosen = if errors.is_empty() { others } else { errors };
    let mut text = chosen.join("; ");
    if text.is_empty() {
        text = "no message given".into();
    }
    // Keep status.json and the log readable whatever the server sends.
    if text.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

/// The fuzz target's way in: `data` as a RIPEstat answer body, read as `fetch` reads
/// it, each prefix checked as it would be stored.
#[cfg(fuzzing)]
pub(crate) fn fuzz_answer(data: &[u8]) {
    let mut keep = Keep::new("fuzz".into());
    let mut sink = |item: Item<'_>| match item {
        Ok(text) => keep.push(prefix(text, MinPrefix::default())),
        Err(_) => Ok(()),
    };
    let _ = read_answer(&mut &data[..], &mut sink);
}

mod envelope;

pub mod names;

#[cfg(test)]
mod tests;
