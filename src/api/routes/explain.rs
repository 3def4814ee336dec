//! `GET /explain?ip=ADDR[&group=NAME]`: why the address is, or is not, routed (the
//! bytes of `explain --json`). Always 200 when the question was right: a broken link
//! is an answer (`"routed": false`), not an error.

use super::{Context, Reply};
use crate::api::error::ApiError;
use crate::api::query::parse_query;
use crate::config;
use crate::explain::{self, Input};
use crate::inspect::lookup::{self, Query};

/// The checked query: the address and the group.
pub(super) fn explain_query(query: Option<&str>) -> Result<(Query, Option<String>), ApiError> {
    let (mut ip, mut group) = (None, None);
    for (k, v) in parse_query(query, &["ip", "group"])? {
        if k == "ip" {
            ip = Some(v);
        } else {
            group = Some(v);
        }
    }
    let ip = ip.ok_or_else(|| {
        ApiError::BadRequest(
            "missing query parameter ip: an address, e.g. /explain?ip=149.154.167.99".into(),
        )
    })?;
    let q = explain::parse_address(&ip)
        .map_err(|e| ApiError::BadRequest(format!("invalid ip: {e}")))?;
    Ok((q, group))
}

pub(super) fn explain(q: &Query, group: Option<&str>, ctx: &Context) -> Result<Reply, ApiError> {
    if !crate::inspect::ENABLED {
        return Err(ApiError::NotFound(crate::inspect::missing("/explain")));
    }
    let cfg = config::load(&ctx.paths.config())?.config;
    let found = ctx.db.with(|db| lookup::find(db, q))?;
    let status = crate::status::read(&ctx.paths.status()).ok().flatten();
    let input = Input {
        cfg: &cfg,
        status: status.as_ref(),
        group,
        openwrt: explain::on_openwrt(),
    };
    let e = explain::explain(q, &found, &input, &*explain::system_kernel())
        .map_err(|e| ApiError::BadRequest(e.0))?;
    Ok(Reply::json(200, explain::json(&e)))
}
