//! `GET /addresses`: the stored values in every output format, with an ETag; with
//! `details=1` (JSON only) each value with its sources and times.
//!
//! Memory: a listing is rendered once and its body shared by every client that
//! asks for the same listing of the same database state, however slowly they read
//! (32 clients of one listing hold one body, not 32), within the answer budget of
//! every answer (`api::answers`); a details listing has at most [`DETAILS_MAX`]
//! values.

use std::sync::Arc;

use super::{word, Context, Reply, RequestInfo};
use crate::api::answers::{listing_estimate, Listing};
use crate::api::error::ApiError;
use crate::api::headers::{etag, none_match};
use crate::api::query::{parse_bool, parse_query};
use crate::format::{routeros_page, size_bound, Format, RenderOptions};

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
    "community",
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
            "community" => o.community = Some(word(&k, &v)?),
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
    let mut headers = Vec::new();
    let (body, tag) = match (opts.format, page) {
        (Format::Routeros, _) => {
            let (listing, pages) = match listing(opts, details, &req.target, ctx) {
                // A script too large to hold whole: its page made alone.
                Err(ApiError::TooLarge(_)) if page.is_some() => {
                    page_alone(opts, page.unwrap_or(1), ctx)?
                }
                whole => routeros(whole?, page)?,
            };
            headers.push(("X-Pages", pages.to_string()));
            listing
        }
        _ => listing(opts, details, &req.target, ctx)?,
    };
    headers.push(("Vary", "Accept-Encoding".into()));
    let (body, tag) = encoded((body, tag), req, &mut headers, ctx)?;
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

/// The body gzip-compressed when the client accepts it (feature `gzip`), with its
/// own ETag (the plain one and `-gz`): made once per plain body, within the answer
/// budget, and shared like it (the key is the plain ETag, which names the content).
#[cfg(feature = "gzip")]
fn encoded(
    (body, tag): Listing,
    req: &RequestInfo,
    headers: &mut Vec<(&'static str, String)>,
    ctx: &Context,
) -> Result<Listing, ApiError> {
    let accepted = req
        .accept_encoding
        .as_deref()
        .is_some_and(super::page::accepts_gzip);
    // Below a few hundred bytes the frame costs more than it saves.
    if !accepted || body.len() < 512 {
        return Ok((body, tag));
    }
    // Lists of prefixes shrink to a fifth or less; the real size is held once made.
    let estimate = body.len() / 2 + 1024;
    let key = format!("gzip {tag}");
    let made = ctx.answers.render(estimate, Some(key), || {
        crate::api::gzip::gzip(&body).ok_or(ApiError::Busy)
    });
    let gz = match made {
        Ok((gz, _)) => gz,
        Err(ApiError::ClientGone) => return Err(ApiError::ClientGone),
        // No room in the budget, or no thread for the deflate: the plain body,
        // already made, rather than a 503.
        Err(_) => return Ok((body, tag)),
    };
    headers.push(("Content-Encoding", "gzip".into()));
    Ok((gz, format!("{}-gz\"", tag.trim_end_matches('"'))))
}

/// Without the `gzip` feature every answer is plain.
#[cfg(not(feature = "gzip"))]
fn encoded(
    listing: Listing,
    _: &RequestInfo,
    _: &mut Vec<(&'static str, String)>,
    _: &Context,
) -> Result<Listing, ApiError> {
    Ok(listing)
}

/// The number of pages of a RouterOS script, and the page asked for (with its own
/// ETag) in place of the whole script.
fn routeros((body, tag): Listing, page: Option<usize>) -> Result<(Listing, usize), ApiError> {
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

/// The body and ETag of a listing: the one held for the same listing of the same
/// database state (unchanged files), or a new one rendered within the answer budget.
/// `target` is the request's: with `page` left out, it names the listing (every page
/// of a RouterOS script is cut from the same one).
fn listing(
    opts: &RenderOptions,
    details: bool,
    target: &str,
    ctx: &Context,
) -> Result<Listing, ApiError> {
    // What the group holds is configuration, read for every request; the key names
    // the state of config.json as well as the database's.
    let cfg = ctx.config()?;
    let selection = cfg
        .selection(&opts.group)
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let mut with_group = opts.clone();
    cfg.bgp_defaults(&mut with_group);
    let opts = &with_group;
    let key = listing_key(target, ctx);
    if let Some(found) = key.as_deref().and_then(|k| ctx.answers.shared(k)) {
        return Ok(found);
    }
    ctx.db.with(|db| {
        let rows: u64 = (db.counts_by_kind()?.into_iter())
            .filter(|(k, _)| opts.type_filter.keeps(k.as_str()))
            .map(|(_, n)| n)
            .sum();
        let upper = listing_estimate(rows, opts.format, details);
        let _turn = ctx.answers.alone(upper)?;
        if let Some(found) = key.as_deref().and_then(|k| ctx.answers.shared(k)) {
            return Ok(found);
        }
        if details {
            // Capped: a details listing of 400,000 values would be 57 MB.
            let reserved = ctx.answers.reserve(upper.min(listing_estimate(
                DETAILS_MAX as u64,
                opts.format,
                true,
            )))?;
            let provenance = cfg.provenance();
            let body = crate::inspect::details::render(
                db,
                &selection,
                opts,
                Some(DETAILS_MAX),
                &provenance,
            )?;
            return Ok(ctx.answers.hold(reserved, body, key));
        }
        // The values first, then room for the body they make (refused when it
        // could never fit), then the body.
        let p = crate::listing::prepare(db, &selection, opts)?;
        let reserved = ctx.answers.reserve(size_bound(&p, opts))?;
        let body = crate::format::render_prepared(&p, opts);
        drop(p);
        Ok(ctx.answers.hold(reserved, body, key))
    })
}

/// Page `page` of a RouterOS script too large for the answer budget, made alone
/// (`format::routeros_page_of`): the values and one page in memory, never the
/// whole script. Not shared: a page is cheap to hold, and its count of pages comes
/// with it.
fn page_alone(
    opts: &RenderOptions,
    page: usize,
    ctx: &Context,
) -> Result<(Listing, usize), ApiError> {
    let cfg = ctx.config()?;
    let selection =
        (cfg.selection(&opts.group)).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let sides = (
        opts.family != Some(crate::format::Family::V6),
        opts.family != Some(crate::format::Family::V4),
    );
    // The turn of a large render: the values take memory as a whole listing would.
    let _turn = ctx.answers.alone(crate::api::answers::ANSWER_BUDGET)?;
    let reserved = ctx
        .answers
        .reserve(crate::format::ROUTEROS_PAGE_MAX + 1024)?;
    let p = ctx
        .db
        .with(|db| crate::listing::prepare(db, &selection, opts))?;
    let found = crate::format::routeros_page_of(&p, &opts.set, sides, page);
    drop(p);
    let found = found
        .ok_or_else(|| ApiError::NotFound(format!("no page {page}: the script has fewer pages")))?;
    Ok((ctx.answers.hold(reserved, found.body, None), found.pages))
}

/// The key a listing is shared under: the target without `page` (every page of a
/// RouterOS script is cut from the same listing) and the files' state; `None` while
/// the files have not settled.
fn listing_key(target: &str, ctx: &Context) -> Option<String> {
    let (path, query) = super::split_target(target);
    let kept: Vec<&str> = (query.unwrap_or("").split('&'))
        .filter(|p| !p.starts_with("page="))
        .collect();
    super::files::answer_key(ctx, &format!("{path}?{}", kept.join("&")))
}

/// Whether the listing of `target` is held, rendered for the files as they are.
pub(super) fn held(target: &str, ctx: &Context) -> bool {
    listing_key(target, ctx).is_some_and(|k| ctx.answers.shared(&k).is_some())
}

/// Most values of a `details=1` listing (about 7 MB, within the answer budget; one
/// of 400,000 values was a 57 MB body); past it the listing ends with
/// `"truncated":true`. `export --details` has no cap.
pub const DETAILS_MAX: usize = 50_000;

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
