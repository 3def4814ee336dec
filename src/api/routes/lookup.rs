//! `GET /lookup?ip=ADDR|PREFIX`: the stored rows that contain the address or overlap
//! the prefix (the bytes of `lookup --json`).

use super::{Context, Reply};
use crate::api::error::ApiError;
use crate::api::query::parse_query;
use crate::inspect::lookup::{self, Query};

/// Checks the query before a permit is taken: `ip` is required and must parse.
pub(super) fn lookup_query(query: Option<&str>) -> Result<Query, ApiError> {
    let ip = parse_query(query, &["ip"])?
        .into_iter()
        .next()
        .map(|(_, v)| v);
    let Some(ip) = ip else {
        return Err(ApiError::BadRequest(
            "missing query parameter ip: an address or prefix, e.g. /lookup?ip=149.154.167.99"
                .into(),
        ));
    };
    Query::parse(&ip).map_err(|e| ApiError::BadRequest(format!("invalid ip: {e}")))
}

/// Bytes a row of the answer takes at most, about (145 measured for IPv4 prefixes).
const ROW_BYTES: usize = 200;

/// The largest answer, about: `MAX_ROWS` rows (a small render, beside a large one).
const MAX_BODY: usize = crate::db::MAX_ROWS * ROW_BYTES;

pub(super) fn lookup(q: &Query, target: &str, ctx: &Context) -> Result<Reply, ApiError> {
    if !crate::inspect::ENABLED {
        return Err(ApiError::NotFound(crate::inspect::missing("/lookup")));
    }
    let cfg = ctx.config()?;
    // Shared by the clients of the same lookup while the files stay as they were.
    let key = super::files::answer_key(ctx, target);
    if let Some(found) = key.as_deref().and_then(|k| ctx.answers.shared(k)) {
        return Ok(Reply::held(found));
    }
    // Alone: the rows found (up to `MAX_ROWS`) and their rendering, then the body
    // (1.5 MB at most) held within the answer budget.
    let _alone = ctx.answers.alone(MAX_BODY)?;
    if let Some(found) = key.as_deref().and_then(|k| ctx.answers.shared(k)) {
        return Ok(Reply::held(found));
    }
    let found = ctx.db.with(|db| lookup::find(db, q))?;
    let reserved = ctx.answers.reserve(found.rows.len() * ROW_BYTES)?;
    let body = lookup::render(q, &found, &cfg, true);
    drop(found);
    Ok(Reply::held(ctx.answers.hold(reserved, body, key)))
}
