//! `GET /status`: what the web page shows (the daemon's record, counts per group and
//! kind, every configured source with its values, `last_seen` and last failure). It
//! reports what it could read: a broken config or database is a line in `errors`,
//! with 200, because that is when someone opens the page.

use super::{Context, Reply};
use crate::api::error::ApiError;
use crate::overview;

pub(super) fn status(ctx: &Context) -> Result<Reply, ApiError> {
    let mut body = overview::build(&ctx.db).to_json();
    body.push(b'\n');
    Ok(Reply::json(200, body))
}
