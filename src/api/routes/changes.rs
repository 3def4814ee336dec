//! `GET /changes?since=TS&type=all|cidr|fqdn`: values added and removed since a time,
//! oldest first (the bytes of `changes --json`).

use super::{word, Context, Reply};
use crate::api::error::ApiError;
use crate::api::query::parse_query;
use crate::db;
use crate::format::TypeFilter;
use crate::inspect::changes;
use crate::util;

/// The checked parameters: `since` (24 hours ago when absent) and `type`.
pub(super) fn changes_query(query: Option<&str>) -> Result<(String, TypeFilter), ApiError> {
    let mut since = None;
    let mut filter = TypeFilter::All;
    for (k, v) in parse_query(query, &["since", "type"])? {
        match k.as_str() {
            "since" => {
                since = Some(
                    changes::parse_since(&v)
                        .map_err(|e| ApiError::BadRequest(format!("invalid since: {e}")))?,
                )
            }
            _ => filter = word(&k, &v)?,
        }
    }
    let since = since.unwrap_or_else(|| changes::default_since(util::unix_now()));
    Ok((since, filter))
}

pub(super) fn changes(since: &str, filter: TypeFilter, ctx: &Context) -> Result<Reply, ApiError> {
    if !crate::inspect::ENABLED {
        return Err(ApiError::NotFound(crate::inspect::missing("/changes")));
    }
    let db = db::open(&ctx.paths)?;
    Ok(Reply::json(200, changes::render(&db, since, filter, true)?))
}
