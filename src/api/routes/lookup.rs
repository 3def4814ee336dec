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

pub(super) fn lookup(q: &Query, ctx: &Context) -> Result<Reply, ApiError> {
    if !crate::inspect::ENABLED {
        return Err(ApiError::NotFound(crate::inspect::missing("/lookup")));
    }
    let cfg = ctx.config()?;
    let found = ctx.db.with(|db| lookup::find(db, q))?;
    Ok(Reply::json(200, lookup::render(q, &found, &cfg, true)))
}
