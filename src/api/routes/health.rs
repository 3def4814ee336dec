//! `GET /health`: counts and the daemon's last times; 503 when storage fails.

use super::{Context, Reply};
use crate::api::body::{json_line, Counts, Health};
use crate::api::error::ApiError;
use crate::db;
use crate::status;

pub(super) fn health(ctx: &Context) -> Result<Reply, ApiError> {
    // status.json is the daemon's (rewritten at least every minute); a broken one
    // must not make the API look down, nor flood the log of a frequent monitor.
    let st = status::read(&ctx.paths.status())
        .unwrap_or_else(|e| {
            log::debug!("api: health: {e}");
            None
        })
        .unwrap_or_default();
    let counts = db::open(&ctx.paths)
        .and_then(|db| db.counts())
        .map(|(asn, fqdn)| Counts { asn, fqdn });
    let mut h = Health {
        status: "ok",
        counts: None,
        last_success: st.last_success,
        last_error: st.last_error,
        heartbeat: st.heartbeat,
        error: None,
    };
    match counts {
        Ok(counts) => {
            h.counts = Some(counts);
            Ok(Reply::json(200, json_line(&h)))
        }
        Err(error) => {
            h.status = "error";
            Err(ApiError::Unhealthy {
                error,
                health: Box::new(h),
            })
        }
    }
}
