//! `GET /addresses`: the stored values in every output format, with an ETag; with
//! `details=1` (JSON only) each value with its sources and times.
//!
//! Memory: a listing is rendered once and its body shared by every client that
//! asks for the same listing of the same database state, however slowly they read
//! (32 clients of one listing hold one body, not 32); one listing is rendered at a
//! time; and the bodies kept for clients that have not read them are bounded by
//! [`ANSWER_BUDGET`] (beyond it: 503 with `Retry-After`).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use super::files::{file_key, FileKey};
use super::{word, Context, Reply, RequestInfo};
use crate::api::error::ApiError;
use crate::api::headers::{etag, none_match};
use crate::api::query::{parse_bool, parse_query};
use crate::format::{routeros_page, Format, RenderOptions};

/// The query parameters of `GET /addresses`.
pub(crate) const ADDRESS_PARAMS: &[&str] = &[
    "type",
    "format",
    "family",
    "aggregate",
    "table",
    "set",
    "details",
    "group",
    "via",
    "comment",
    "page",
];

/// The render options of a `GET /addresses` query (tests).
#[cfg(test)]
pub fn render_options(query: Option<&str>) -> Result<RenderOptions, ApiError> {
    listing_options(query).map(|(o, _, _)| o)
}

/// The render options of a `GET /addresses` query (the same names and values as the
/// options of `export`), whether `details` was asked for (checked against them), and
/// the RouterOS page asked for.
pub(super) fn listing_options(
    query: Option<&str>,
) -> Result<(RenderOptions, bool, Option<usize>), ApiError> {
    let mut o = RenderOptions::default();
    let mut details = false;
    let mut page = None;
    let mut group = None;
    let mut set_given = false;
    for (k, v) in parse_query(query, ADDRESS_PARAMS)? {
        match k.as_str() {
            "type" => o.type_filter = word(&k, &v)?,
            "format" => o.format = word(&k, &v)?,
            "family" => o.family = Some(word(&k, &v)?),
            "aggregate" => o.aggregate = parse_bool(&k, &v)?,
            "table" => o.table = v,
            "set" => {
                o.set = v;
                set_given = true;
            }
            "group" => group = Some(v),
            "details" => details = parse_bool(&k, &v)?,
            "via" => o.via = Some(v),
            "comment" => o.comment = Some(v),
            "page" => page = Some(parse_page(&v)?),
            // parse_query let only ADDRESS_PARAMS through.
            _ => {}
        }
    }
    if let Some(g) = group {
        o.select_group(&g, set_given);
    }
    o.check().map_err(|e| ApiError::BadRequest(e.0))?;
    if details && !crate::inspect::ENABLED {
        return Err(ApiError::NotFound(crate::inspect::missing("details=1")));
    }
    if details {
        crate::inspect::details::check(&o, "details=1").map_err(|e| ApiError::BadRequest(e.0))?;
    }
    if page.is_some() && (o.format != Format::Routeros || details) {
        return Err(ApiError::BadRequest(
            "page is for format=routeros (RouterOS's /tool fetch keeps 64 KiB)".into(),
        ));
    }
    Ok((o, details, page))
}

/// A page number: 1, 2, ...
fn parse_page(v: &str) -> Result<usize, ApiError> {
    v.parse::<usize>()
        .ok()
        .filter(|&n| n >= 1 && v.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| ApiError::BadRequest(format!("invalid page {v:?}: expected 1, 2, 3, ...")))
}

pub(super) fn addresses(
    opts: &RenderOptions,
    details: bool,
    page: Option<usize>,
    req: &RequestInfo,
    ctx: &Context,
) -> Result<Reply, ApiError> {
    let (mut body, mut tag) = listing(opts, details, ctx)?;
    let mut headers = Vec::new();
    if opts.format == Format::Routeros {
        let pages;
        ((body, tag), pages) = routeros(body, tag, page)?;
        headers.push(("X-Pages", pages.to_string()));
    }
    headers.insert(0, ("ETag", tag.clone()));
    let content_type = content_type(opts.format);
    if req
        .if_none_match
        .as_deref()
        .is_some_and(|h| none_match(h, &tag))
    {
        return Ok(Reply {
            status: 304,
            content_type,
            headers,
            length_without_body: Some(body.len()),
            body: Vec::new(),
            shared: None,
        });
    }
    Ok(Reply {
        status: 200,
        content_type,
        headers,
        body: Vec::new(),
        length_without_body: None,
        shared: Some(body),
    })
}

/// The number of pages of a RouterOS script, and the page asked for (with its own
/// ETag) in place of the whole script.
fn routeros(
    body: Arc<Vec<u8>>,
    tag: String,
    page: Option<usize>,
) -> Result<(Listing, usize), ApiError> {
    let pages = routeros_page(&body, 1).map_or(1, |p| p.pages);
    let Some(page) = page else {
        return Ok(((body, tag), pages));
    };
    let p = routeros_page(&body, page).ok_or_else(|| {
        ApiError::NotFound(format!("no page {page}: the script has {pages} page(s)"))
    })?;
    let tag = etag(&p.body);
    Ok(((Arc::new(p.body), tag), pages))
}

/// Most bytes of listing bodies kept for clients at once (16 MiB): past it, a
/// request for another listing gets 503 until clients have read theirs (or were
/// dropped as idle). Identical listings share one body and count once.
pub const ANSWER_BUDGET: usize = 16 << 20;

/// A rendered listing, kept while a client still has it to read.
struct Kept {
    /// The options it was rendered with.
    key: String,
    /// The database files it was read from, when they had settled (only then is it
    /// given to other clients).
    files: Option<FileKey>,
    body: Weak<Vec<u8>>,
    len: usize,
    tag: String,
}

/// Listings held by clients (dead entries are dropped on every look).
static KEPT: Mutex<Vec<Kept>> = Mutex::new(Vec::new());

/// Held while a listing is rendered: one at a time, as each takes memory in
/// proportion to the listing (and a router has few cores to run more on).
static RENDERING: Mutex<()> = Mutex::new(());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks, but a poisoned list is still right.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A listing's body and its ETag.
type Listing = (Arc<Vec<u8>>, String);

/// The kept listing for `key` read from `files`, and the bytes kept altogether.
fn kept(key: &str, files: Option<&FileKey>) -> (Option<Listing>, usize) {
    let mut kept = lock(&KEPT);
    kept.retain(|k| k.body.strong_count() > 0);
    let found = kept
        .iter()
        .filter(|k| k.key == key && files.is_some() && k.files.as_ref() == files)
        .find_map(|k| Some((k.body.upgrade()?, k.tag.clone())));
    (found, kept.iter().map(|k| k.len).sum())
}

/// The body and ETag of a listing: the one kept for the same listing of the same
/// database state, or a new one (rendered alone, within the budget).
fn listing(opts: &RenderOptions, details: bool, ctx: &Context) -> Result<Listing, ApiError> {
    // What the group holds is configuration, read for every request: a changed group
    // is a different listing of the same database.
    let cfg = ctx.config()?;
    let selection = cfg
        .selection(&opts.group)
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let key = format!("{opts:?} {selection:?} details={details}");
    let files = file_key(&ctx.paths.db).filter(FileKey::settled);
    if let (Some(found), _) = kept(&key, files.as_ref()) {
        return Ok(found);
    }
    let _alone = lock(&RENDERING);
    // Another client may have rendered the same listing meanwhile.
    let (found, in_flight) = kept(&key, files.as_ref());
    if let Some(found) = found {
        return Ok(found);
    }
    if in_flight >= ANSWER_BUDGET {
        return Err(ApiError::Busy);
    }
    let body = ctx.db.with(|db| {
        if details {
            crate::inspect::details::render(db, &selection, opts).map_err(ApiError::from)
        } else {
            crate::listing::render_selection(db, &selection, opts).map_err(ApiError::from)
        }
    })?;
    let tag = etag(&body);
    let body = Arc::new(body);
    lock(&KEPT).push(Kept {
        key,
        files,
        body: Arc::downgrade(&body),
        len: body.len(),
        tag: tag.clone(),
    });
    Ok((body, tag))
}

/// The HTTP `Content-Type` of a format.
fn content_type(format: Format) -> &'static str {
    if format.is_text() {
        "text/plain; charset=utf-8"
    } else {
        "application/json"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        assert_eq!(content_type(Format::Json), "application/json");
        assert_eq!(content_type(Format::Singbox), "application/json");
        for f in [
            Format::Text,
            Format::Nft,
            Format::Ipset,
            Format::Routeros,
            Format::Bird,
        ] {
            assert_eq!(content_type(f), "text/plain; charset=utf-8");
        }
    }
}
