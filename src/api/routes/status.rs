//! `GET /status`: what the web page shows (the daemon's record, counts per group and
//! kind, every configured source with its values, `last_seen` and last failure). It
//! reports what it could read: a broken config or database is a line in `errors`,
//! with 200, because that is when someone opens the page.

use super::{Context, Reply};
use crate::api::error::ApiError;
use crate::overview;

pub(super) fn status(ctx: &Context) -> Result<Reply, ApiError> {
    // The answer lists every configured source: about 8 bytes for each byte of
    // `config.json` (7.6 MB for one of 1 MiB), reserved before it is built.
    let size = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len() as usize);
    let estimate = 8 * (size(&ctx.paths.config()) + size(&ctx.paths.status())) + 16 * 1024;
    // Shared while none of the files it is read from changes.
    let mut key = String::from("/status ");
    super::files::push_stat(&mut key, super::files::stat(&ctx.paths.status()).as_ref());
    key.push_str(" snapshot ");
    let snapshot = ctx.paths.snapshot.as_deref().and_then(super::files::stat);
    super::files::push_stat(&mut key, snapshot.as_ref());
    let key = super::files::answer_key(ctx, &key);
    let held = ctx.answers.render(estimate, key, || {
        let mut body = overview::build(&ctx.db).to_json();
        body.push(b'\n');
        Ok(body)
    })?;
    Ok(Reply::held(held))
}
