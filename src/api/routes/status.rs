//! `GET /status`: what the web page shows (the daemon's record, counts per group and
//! kind, every configured source with its values, `last_seen` and last failure). It
//! reports what it could read: a broken config or database is a line in `errors`,
//! with 200, because that is when someone opens the page.

use super::{Context, Reply};
use crate::api::body::json_line;
use crate::api::error::ApiError;
use crate::overview;

pub(super) fn status(ctx: &Context) -> Result<Reply, ApiError> {
    Ok(Reply::json(200, json_line(&overview::build(&ctx.paths))))
}
