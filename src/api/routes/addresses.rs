//! `GET /addresses`: the stored values in every output format, with an ETag; with
//! `details=1` (JSON only) each value with its sources and times.

use super::{word, Context, Reply, RequestInfo};
use crate::api::error::ApiError;
use crate::api::headers::{etag, none_match};
use crate::api::query::{parse_bool, parse_query};
use crate::db;
use crate::format::{Format, RenderOptions};

/// The query parameters of `GET /addresses`.
const ADDRESS_PARAMS: &[&str] = &[
    "type",
    "format",
    "family",
    "aggregate",
    "table",
    "set",
    "details",
    "group",
];

/// The render options of a `GET /addresses` query (tests).
#[cfg(test)]
pub fn render_options(query: Option<&str>) -> Result<RenderOptions, ApiError> {
    listing_options(query).map(|(o, _)| o)
}

/// The render options of a `GET /addresses` query (the same names and values as the
/// options of `export`) and whether `details` was asked for (checked against them).
pub(super) fn listing_options(query: Option<&str>) -> Result<(RenderOptions, bool), ApiError> {
    let mut o = RenderOptions::default();
    let mut details = false;
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
    Ok((o, details))
}

pub(super) fn addresses(
    opts: &RenderOptions,
    details: bool,
    req: &RequestInfo,
    ctx: &Context,
) -> Result<Reply, ApiError> {
    let body = {
        let cfg = crate::listing::config_for(&ctx.paths, &opts.group)?;
        let selection = cfg
            .selection(&opts.group)
            .map_err(|e| ApiError::BadRequest(e.to_string()))?;
        let db = db::open(&ctx.paths)?;
        if details {
            crate::inspect::details::render(&db, &selection, opts)?
        } else {
            crate::listing::render_selection(&db, &selection, opts)?
        }
    };
    let tag = etag(&body);
    let content_type = content_type(opts.format);
    if req
        .if_none_match
        .as_deref()
        .is_some_and(|h| none_match(h, &tag))
    {
        return Ok(Reply {
            status: 304,
            content_type,
            headers: vec![("ETag", tag)],
            length_without_body: Some(body.len()),
            body: Vec::new(),
        });
    }
    Ok(Reply {
        status: 200,
        content_type,
        headers: vec![("ETag", tag)],
        body,
        length_without_body: None,
    })
}

/// The HTTP `Content-Type` of a format.
fn content_type(format: Format) -> &'static str {
    match format {
        Format::Json => "application/json",
        Format::Text | Format::Nft | Format::Ipset | Format::Routeros => {
            "text/plain; charset=utf-8"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        assert_eq!(content_type(Format::Json), "application/json");
        for f in [Format::Text, Format::Nft, Format::Ipset, Format::Routeros] {
            assert_eq!(content_type(f), "text/plain; charset=utf-8");
        }
    }
}
