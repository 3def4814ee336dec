//! `lookup ADDR|PREFIX [--json]`: which stored rows contain the address or overlap the
//! prefix; `--json` prints the bytes of `GET /lookup?ip=...`. Exit 1 when nothing is
//! stored for it, so that a script can test membership.

use super::output::print;
use super::{CliError, Outcome};
use crate::config::{self, Paths};
use crate::db;
use crate::inspect::lookup::{self, Query};

/// Runs `lookup`; a `query` that is no address or prefix is a usage error (exit 2).
pub fn run(paths: &Paths, query: &str, json: bool) -> Result<Outcome, CliError> {
    if !crate::inspect::ENABLED {
        return Err(CliError::Other(crate::inspect::missing("`lookup`")));
    }
    let q = Query::parse(query).map_err(|e| CliError::Usage(format!("lookup: {e}")))?;
    let cfg = config::load_logged(&paths.config())?;
    let found = lookup::find(&db::open_read(paths)?, &q)?;
    let (out, notes) = lookup::render_noted(&q, &found, &cfg, json);
    print(&out)?;
    super::output::notes(&notes);
    Ok(if found.rows.is_empty() {
        Outcome::NotFound
    } else {
        Outcome::Success
    })
}
