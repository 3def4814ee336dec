//! `export`: the stored addresses in one format, to standard output or atomically to
//! a file; the same bytes as `GET /addresses` with the same parameters (`--details`:
//! `details=1`).

use std::path::Path;

use super::output::print;
use super::{CliError, Outcome};
use crate::config::Paths;
use crate::format::RenderOptions;
use crate::{db, inspect, listing, util};

/// Runs `export`.
pub fn run(
    paths: &Paths,
    options: &RenderOptions,
    out: Option<&Path>,
    details: bool,
) -> Result<Outcome, CliError> {
    if details && !inspect::ENABLED {
        return Err(CliError::Other(inspect::missing("--details")));
    }
    // Every group needs the file, `default` and `*` too: without it, the exclusions and
    // what the groups hold are unknown, and a list must be right or refused.
    let cfg = crate::config::load_logged(&paths.config())?;
    let selection = cfg
        .selection(&options.group)
        .map_err(|e| CliError::Usage(format!("--group: {e}")))?;
    let mut with_group = options.clone();
    cfg.bgp_defaults(&mut with_group);
    let options = &with_group;
    let db = db::open_read(paths)?;
    listing::check_not_emptied(paths, &db)??;
    let bytes = if details {
        inspect::details::render(&db, &selection, options, None, &cfg.provenance())?
    } else {
        listing::render_selection(&db, &selection, options)?
    };
    match out {
        Some(path) => util::write_atomic(path, &bytes).map_err(|source| CliError::Io {
            what: path.display().to_string(),
            source,
        })?,
        None => print(&bytes)?,
    }
    Ok(Outcome::Success)
}
