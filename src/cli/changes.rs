//! `changes [--since TS] [--type T] [--json]`: the values added and removed since a
//! time, oldest first; `--json` prints the bytes of `GET /changes`.

use super::output::print;
use super::{CliError, Outcome};
use crate::config::Paths;
use crate::format::TypeFilter;
use crate::inspect::changes;
use crate::{db, util};

/// Runs `changes`; `since` was checked by the parser, `None` is 24 hours ago.
pub fn run(
    paths: &Paths,
    since: Option<&str>,
    filter: TypeFilter,
    json: bool,
) -> Result<Outcome, CliError> {
    let since = since.map_or_else(|| changes::default_since(util::unix_now()), String::from);
    let db = db::open(paths)?;
    let out = if json {
        changes::render_json(&db, &since, filter)?
    } else {
        changes::render_text(&db, &since, filter)?
    };
    print(&out)?;
    Ok(Outcome::Success)
}
