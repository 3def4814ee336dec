//! `changes [--since TS] [--type T] [--json]`: the values added and removed since a
//! time, oldest first; `--json` prints the bytes of `GET /changes`.

use super::output::print;
use super::{CliError, Outcome};
use crate::config::Paths;
use crate::format::TypeFilter;
use crate::inspect::changes;
use crate::{db, util};

/// Runs `changes`; `since` (`None`: 24 hours ago) of another form than
/// `YYYY-MM-DDTHH:MM:SSZ` is a usage error (exit 2).
pub fn run(
    paths: &Paths,
    group: Option<&str>,
    since: Option<&str>,
    filter: TypeFilter,
    json: bool,
) -> Result<Outcome, CliError> {
    if !crate::inspect::ENABLED {
        return Err(CliError::Other(crate::inspect::missing("`changes`")));
    }
    let since = match since {
        Some(s) => changes::parse_since(s).map_err(|e| CliError::Usage(format!("--since: {e}")))?,
        None => changes::default_since(util::unix_now()),
    };
    // `default` unless another group (or `*`) is named, as for `export`.
    let g = group.unwrap_or(crate::format::DEFAULT_GROUP);
    let cfg = crate::config::load_logged(&paths.config())?;
    let selection = cfg
        .selection(g)
        .map_err(|e| CliError::Usage(format!("--group: {e}")))?;
    let db = db::open_read(paths)?;
    let (out, notes) = changes::render_noted(
        &db,
        &since,
        filter,
        Some(&selection),
        &cfg.provenance(),
        json,
    )?;
    print(&out)?;
    super::output::notes(&notes);
    Ok(Outcome::Success)
}
