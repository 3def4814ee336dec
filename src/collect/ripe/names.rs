//! ASNs by name: RIPEstat's `as-overview` (an ASN's holder and whether it is
//! announced) and `searchcomplete` (the ASNs whose holder matches a text), on the
//! host and path prefix of `ripe.url` as the other data calls. `asn search` and
//! `GET /asn-search` make one `searchcomplete` and then one `as-overview` per
//! suggested ASN, [`PARALLEL`] at a time, so that eight candidates cost about two
//! round trips, not nine.
//!
//! An answer that is not the documented shape fails the search (an upstream
//! failure, exit 3 or 502): never an empty success that would read as "no such
//! company".

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::super::fetch::SourceError;
use super::super::fetcher::Request;
use super::super::upstream_json::{Next, ScanError, Scanner};
use super::{read_data, Head, RipeClient};

pub use crate::source::{check_search_text as check_text, parse_search_limit as parse_limit};
pub use crate::source::{DEFAULT_SEARCH_LIMIT as DEFAULT_LIMIT, MAX_SEARCH_LIMIT as MAX_LIMIT};
/// `as-overview` requests in flight at once.
pub const PARALLEL: usize = 4;
/// Largest answer of these calls: both are a few hundred bytes.
const BODY_LIMIT: u64 = 256 << 10;
/// Longest holder name kept, in bytes (RIPEstat's are under 100).
const MAX_HOLDER: usize = 200;

/// What `as-overview` says of an ASN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overview {
    /// `holder` (null for an ASN nobody holds).
    pub holder: Option<String>,
    /// `announced`.
    pub announced: bool,
}

/// One ASN a search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// `62041`.
    pub asn: String,
    /// The holder (`as-overview`'s, else `searchcomplete`'s description).
    pub holder: String,
    pub announced: bool,
}

/// The answer of `asn search --json` and `GET /asn-search` (the same bytes):
/// `{"query": ..., "asns": [{"asn", "holder", "announced", "groups"}]}`, `groups`
/// where each ASN is configured.
pub fn search_json(query: &str, found: &[Found], cfg: &crate::config::Config) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = crate::util::json::Writer::new(&mut out, false);
    w.begin_object();
    w.field("query", query);
    w.key("asns");
    w.begin_array();
    for f in found {
        w.begin_object();
        w.field("asn", &f.asn);
        w.field("holder", &f.holder);
        w.field("announced", &f.announced);
        w.field("groups", &cfg.groups_of(crate::source::Kind::Asn, &f.asn));
        w.end_object();
    }
    w.end_array();
    w.end_object();
    out.push(b'\n');
    out
}

/// The text of `asn search`: `AS62041<TAB>holder<TAB>announced|not announced` per
/// line. A holder's own tabs and line breaks become spaces, so one ASN stays one line.
pub fn search_text(found: &[Found]) -> String {
    let mut out = String::new();
    for f in found {
        let holder: String = f
            .holder
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let said = if f.announced {
            "announced"
        } else {
            "not announced"
        };
        out.push_str(&format!("AS{}\t{holder}\t{said}\n", f.asn));
    }
    out
}

/// Most names fetched in one run: the rest wait for the next (a first run with
/// hundreds of ASNs must not spend minutes on names).
const NAMES_PER_RUN: usize = 64;

/// Fetches the holder names of those of `asns` never fetched or older than a week,
/// and keeps them. Never fails the run: a name that cannot be fetched (or kept) is
/// logged and stays unknown until the next run tries again.
pub(crate) fn refresh(
    paths: &crate::config::Paths,
    cfg: &crate::config::Config,
    transport: &crate::collect::Transport,
    asns: &[String],
) {
    if asns.is_empty() {
        return;
    }
    let now = crate::util::unix_now();
    let due = match crate::db::open(paths).and_then(|db| db.names_due(asns, now)) {
        Ok(d) => d,
        Err(e) => return log::info!("holder names: {e}"),
    };
    if due.is_empty() {
        return;
    }
    let due = &due[..due.len().min(NAMES_PER_RUN)];
    let client = RipeClient::new(&cfg.ripe, transport);
    let got = client.overviews(due.iter().map(String::as_str).collect());
    let mut db = match crate::db::open(paths) {
        Ok(db) => db,
        Err(e) => return log::info!("holder names: {e}"),
    };
    for (asn, o) in due.iter().zip(got) {
        let kept = match o {
            Ok(o) => db.set_name(asn, o.holder.as_deref(), now),
            Err(e) => {
                log::info!("AS{asn}: holder name not fetched: {e}");
                continue;
            }
        };
        if let Err(e) = kept {
            log::info!("AS{asn}: holder name not kept: {e}");
        }
    }
}

/// The URL of data call `call` on the host and path prefix of `ripe_url`.
pub(crate) fn data_url(ripe_url: &str, call: &str) -> String {
    super::super::country::url(ripe_url).replace("country-resource-list", call)
}

impl RipeClient {
    /// `as-overview` of `asn`.
    pub fn overview(&self, asn: &str) -> Result<Overview, SourceError> {
        let asn = crate::source::normalize_asn(asn).map_err(SourceError::Invalid)?;
        let resource = format!("AS{asn}");
        let mut out = Overview {
            holder: None,
            announced: false,
        };
        let mut seen = false;
        self.call("as-overview", &[("resource", &resource)], &mut |sc| {
            overview_data(sc, &mut out, &mut seen)
        })?;
        Ok(out)
    }

    /// `searchcomplete`'s suggestions of the category `ASNs` for `text`: at most
    /// `limit` (ASN, description), in the upstream's order.
    pub fn suggest(&self, text: &str, limit: usize) -> Result<Vec<(String, String)>, SourceError> {
        let mut out = Vec::new();
        let n = limit.to_string();
        self.call(
            "searchcomplete",
            &[("resource", text), ("limit", &n)],
            &mut |sc| suggest_data(sc, &mut out, limit),
        )?;
        asns_of(out)
    }

    /// The ASNs whose holder matches `text`: the suggestions, each completed by its
    /// `as-overview` ([`PARALLEL`] at once), announced ones first, otherwise in the
    /// upstream's order. Any failed request fails the search.
    pub fn search(&self, text: &str, limit: usize) -> Result<Vec<Found>, SourceError> {
        let suggested = self.suggest(text, limit)?;
        let overviews = self.overviews(suggested.iter().map(|s| s.0.as_str()).collect());
        let mut found = Vec::with_capacity(suggested.len());
        for ((asn, description), o) in suggested.into_iter().zip(overviews) {
            let o = o?;
            found.push(Found {
                asn,
                holder: o.holder.unwrap_or(description),
                announced: o.announced,
            });
        }
        // Stable: the upstream's order within each half.
        crate::util::sort::sort_stable_by(&mut found, |a, b| b.announced.cmp(&a.announced));
        Ok(found)
    }

    /// `as-overview` of each of `asns`, in their order, [`PARALLEL`] requests at a
    /// time (each worker takes the next ASN when its request is done).
    pub fn overviews(&self, asns: Vec<&str>) -> Vec<Result<Overview, SourceError>> {
        let next = AtomicUsize::new(0);
        let results: Vec<Mutex<Option<Result<Overview, SourceError>>>> =
            asns.iter().map(|_| Mutex::new(None)).collect();
        let work = || loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(asn) = asns.get(i) else { break };
            let r = self.overview(asn);
            *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        };
        std::thread::scope(|s| {
            for _ in 1..PARALLEL.min(asns.len()) {
                // A small stack: the request and the scanner need a few KiB.
                let _ = std::thread::Builder::new()
                    .stack_size(128 << 10)
                    .spawn_scoped(s, work);
            }
            work();
        });
        results
            .into_iter()
            .map(|m| {
                let r = m.into_inner().unwrap_or_else(|e| e.into_inner());
                r.unwrap_or_else(|| Err(SourceError::transport("no answer")))
            })
            .collect()
    }

    /// One request to data call `call`, its `data` read by `data` (which says whether
    /// it held what the call is for).
    fn call(
        &self,
        call: &str,
        query: &[(&str, &str)],
        data: &mut dyn FnMut(&mut Scanner) -> Result<bool, ScanError>,
    ) -> Result<(), SourceError> {
        let url = data_url(&self.url, call);
        let mut q = query.to_vec();
        q.push(("sourceapp", &self.sourceapp));
        let rq = Request {
            url: &url,
            query: &q,
            accept: "application/json",
            limit: BODY_LIMIT,
        };
        self.fetcher.get(&rq, |answer| {
            let read = read_data(answer.body, data);
            judge_call(answer.status, read, call)
        })
    }
}

/// The outcome of an answer of `call` (HTTP `status`, read into `read`).
fn judge_call(status: u16, read: Result<Head, SourceError>, call: &str) -> Result<(), SourceError> {
    let head = super::check_head(status, read)?;
    if head.call.as_deref().is_some_and(|n| n != call) {
        return Err(SourceError::BadBody(format!(
            "the answer is of another data call than {call}"
        )));
    }
    match head.listed {
        true => Ok(()),
        false => Err(SourceError::BadBody(format!(
            "the {call} answer lacks its data"
        ))),
    }
}

/// A string value, cut to [`MAX_HOLDER`] bytes; anything else is a shape error.
fn text(sc: &mut Scanner, what: &str) -> Result<String, ScanError> {
    let s = sc
        .string()?
        .ok_or_else(|| ScanError::Shape(format!("{what} is too long")))?;
    let mut end = s.len().min(MAX_HOLDER);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Ok(s[..end].to_string())
}

/// `data` of `as-overview`: `holder` (a string or null) and `announced` (a boolean);
/// says whether `announced` was there.
fn overview_data(sc: &mut Scanner, out: &mut Overview, seen: &mut bool) -> Result<bool, ScanError> {
    sc.begin_object()?;
    while let Some(key) = sc.next_key()? {
        let k = [b"holder".as_slice(), b"announced"]
            .iter()
            .position(|k| *k == key.as_bytes());
        match k {
            Some(0) if sc.null()? => out.holder = None,
            Some(0) => out.holder = Some(text(sc, "data.holder")?),
            Some(_) if sc.peek()? == Next::Bool => {
                out.announced = sc.boolean()?;
                *seen = true;
            }
            Some(_) => return Err(sc.expected(Next::Bool)),
            None => sc.skip()?,
        }
    }
    Ok(*seen)
}

/// `data` of `searchcomplete`: `categories`, a list of `{"category": ...,
/// "suggestions": [{"value": "AS62041", "description": ...}]}`; the suggestions of
/// `ASNs` go to `out` (at most `limit`). Says whether `categories` was there.
fn suggest_data(
    sc: &mut Scanner,
    out: &mut Vec<(String, String)>,
    limit: usize,
) -> Result<bool, ScanError> {
    sc.begin_object()?;
    let mut listed = false;
    while let Some(key) = sc.next_key()? {
        if key != "categories" {
            sc.skip()?;
            continue;
        }
        listed = true;
        sc.begin_array()?;
        while sc.next_item()? {
            category(sc, out, limit)?;
        }
    }
    Ok(listed)
}

/// One category. Its name may come before or after its suggestions, so they are
/// read and then kept only for `ASNs`.
fn category(
    sc: &mut Scanner,
    out: &mut Vec<(String, String)>,
    limit: usize,
) -> Result<(), ScanError> {
    sc.begin_object()?;
    let (mut asns, mut these) = (false, Vec::new());
    while let Some(key) = sc.next_key()? {
        match key {
            "category" => asns = sc.string()? == Some("ASNs"),
            "suggestions" => {
                sc.begin_array()?;
                while sc.next_item()? {
                    let s = suggestion(sc)?;
                    if these.len() < limit {
                        these.push(s);
                    }
                }
            }
            _ => sc.skip()?,
        }
    }
    if asns {
        out.extend(these.into_iter().take(limit - out.len().min(limit)));
    }
    Ok(())
}

/// One suggestion: `value` and `description`. (Other categories' values are no
/// ASNs; they are checked only when kept.)
fn suggestion(sc: &mut Scanner) -> Result<(String, String), ScanError> {
    sc.begin_object()?;
    let (mut value, mut description) = (None, String::new());
    while let Some(key) = sc.next_key()? {
        let k = [b"value".as_slice(), b"description"]
            .iter()
            .position(|k| *k == key.as_bytes());
        match k {
            Some(0) => value = Some(text(sc, "value")?),
            Some(_) if sc.null()? => {}
            Some(_) => description = text(sc, "description")?,
            None => sc.skip()?,
        }
    }
    let value = value.ok_or_else(|| ScanError::Shape("a suggestion without value".into()))?;
    Ok((value, description))
}

/// The suggestions of `ASNs` as ASNs: a value that is not one is a broken answer.
fn asns_of(suggested: Vec<(String, String)>) -> Result<Vec<(String, String)>, SourceError> {
    suggested
        .into_iter()
        .map(|(v, d)| match crate::source::normalize_asn(&v) {
            Ok(a) => Ok((a, d)),
            Err(_) => Err(SourceError::BadBody(
                "a suggestion of category ASNs is not an ASN".into(),
            )),
        })
        .collect()
}

/// For `fuzz::names`: `data` as an answer of `as-overview` (first byte even) or of
/// `searchcomplete`, read and judged as a request's answer is.
#[cfg(fuzzing)]
pub(crate) fn fuzz_answer(data: &[u8]) {
    let Some((&first, mut body)) = data.split_first() else {
        return;
    };
    let limit = usize::from(first >> 1) % 12 + 1;
    if first % 2 == 0 {
        let mut out = Overview {
            holder: None,
            announced: false,
        };
        let mut seen = false;
        let read = read_data(&mut body, &mut |sc| overview_data(sc, &mut out, &mut seen));
        if judge_call(200, read, "as-overview").is_ok() {
            assert!(out.holder.as_ref().map_or(0, String::len) <= MAX_HOLDER);
        }
    } else {
        let mut out = Vec::new();
        let read = read_data(&mut body, &mut |sc| suggest_data(sc, &mut out, limit));
        if judge_call(200, read, "searchcomplete").is_ok() {
            assert!(out.len() <= limit);
            if let Ok(asns) = asns_of(out) {
                for (a, d) in &asns {
                    assert!(crate::source::normalize_asn(a).as_deref() == Ok(a.as_str()));
                    assert!(d.len() <= MAX_HOLDER);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
