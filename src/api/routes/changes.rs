//! `GET /changes?since=TS&type=all|cidr|fqdn`: values added and removed since a time,
//! oldest first (the bytes of `changes --json`).

use super::{word, Context, Reply};
use crate::api::error::ApiError;
use crate::api::query::parse_query;
use crate::format::TypeFilter;
use crate::inspect::changes;
use crate::util;

/// The checked parameters of `GET /changes`.
pub(super) struct ChangesQuery {
    /// 24 hours ago when absent.
    pub since: String,
    /// `type`.
    pub filter: TypeFilter,
    /// `group` (every source when absent).
    pub group: Option<String>,
}

/// The checked parameters: `since` (24 hours ago when absent), `type` and `group`.
pub(super) fn changes_query(query: Option<&str>) -> Result<ChangesQuery, ApiError> {
    let mut since = None;
    let mut filter = TypeFilter::All;
    let mut group = None;
    for (k, v) in parse_query(query, &["since", "type", "group"])? {
        match k.as_str() {
            "group" => group = Some(v),
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
    Ok(ChangesQuery {
        since,
        filter,
        group,
    })
}

pub(super) fn changes(q: &ChangesQuery, target: &str, ctx: &Context) -> Result<Reply, ApiError> {
    if !crate::inspect::ENABLED {
        return Err(ApiError::NotFound(crate::inspect::missing("/changes")));
    }
    // `default` unless another group (or `*`) is named, as for `/addresses`.
    let g = q.group.as_deref().unwrap_or(crate::format::DEFAULT_GROUP);
    let cfg = ctx.config()?;
    let prov = cfg.provenance();
    let selection = cfg
        .selection(g)
        .map_err(|e| ApiError::BadRequest(format!("group: {e}")))?;
    // At most `MAX_ROWS` rows of about 125 bytes: reserved before, held after.
    let estimate = crate::db::MAX_ROWS * 160;
    // The target names the query; the key adds config.json's state (the selection).
    let key = super::files::answer_key(ctx, target);
    let held = ctx.answers.render(estimate, key, || {
        let render =
            |db: &_| changes::render(db, &q.since, q.filter, Some(&selection), &prov, true);
        ctx.db.with(render).map_err(ApiError::from)
    })?;
    Ok(Reply::held(held))
}
